package io.mrcache.cli.bench;

import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.ForwardingRegistrar;
import io.mrcache.core.Lease;
import io.mrcache.core.PinnedMemoryLimit;
import io.mrcache.core.Registrar;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationCache;
import io.mrcache.core.RegistrationException;
import io.mrcache.core.RoomRule;
import io.mrcache.core.TenantShare;
import io.mrcache.verbs.sim.SimulatedHca;
import io.mrcache.verbs.sim.SimulatedRegistrar;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * Tenant A reuses a hot set (Zipf) that fits its guarantee while tenant B, on another thread, scans buffers
 * totalling ten times the pinned-memory limit; both write each buffer they acquire. A's hit ratio with B beside
 * it, under mrcache's shared limit and under what a user has today: one LRU shared by the tenants (Open MPI's
 * grdma) and separate per-cache budgets that together exceed the limit, where the registrar's ENOMEM decides
 * (UCX's and libfabric's per-cache caps). Every configuration runs on the simulated HCA (real {@code mlock}
 * pinning) with the limit as its memlock limit, each tenant in its own protection domain, and checks the HCA's
 * pinned bytes after every registration.
 */
public final class NoisyNeighbour {
    static final long MIB = 1 << 20;

    /**
     * The workload.
     *
     * @param limitBytes   the shared limit and the HCA's memlock limit
     * @param bufferBytes  every buffer's size
     * @param hotBuffers   A's hot set (Zipf with exponent 1 over these)
     * @param aGuarantee   A's guarantee in the shared-limit rows
     * @param scanBuffers  B's buffers, scanned in order, round and round
     * @param aUses        A's acquires per repeat; B runs until A is done
     */
    public record Setup(long limitBytes, int bufferBytes, int hotBuffers, long aGuarantee, int scanBuffers,
            long aUses) {
        /** 6 MiB (3/4 of the 8 MiB RLIMIT_MEMLOCK many distributions set) in 64 KiB buffers; A's 4 MiB hot set. */
        public static Setup standard(boolean quick) {
            int buffer = 64 * 1024;
            long limit = 6 * MIB;
            return new Setup(limit, buffer, 64, 4 * MIB, (int) (10 * limit / buffer), quick ? 60_000 : 200_000);
        }
    }

    /** A configuration: who shares what. */
    public enum Config {
        ALONE("A alone (its guarantee in the limit, no neighbour)"),
        SHARED_LIMIT("mrcache shared limit (A guaranteed its hot set)"),
        SHARED_LIMIT_REQUESTER_FIRST("  the same, rule REQUESTER_FIRST"),
        SHARED_LRU("one LRU shared by both tenants (Open MPI grdma)"),
        SEPARATE_BUDGETS("separate budgets, 3/4 of the limit each (UCX, libfabric)"),
        HALF_GUARANTEE("A guaranteed half its hot set, rule FURTHEST_ABOVE"),
        HALF_GUARANTEE_REQUESTER_FIRST("A guaranteed half its hot set, rule REQUESTER_FIRST");

        final String label;

        Config(String label) {
            this.label = label;
        }
    }

    /** One repeat of one configuration. */
    public record Sample(double aHitRatio, long aRefused, long bUses, double bUsesPerSecond, long bRefused,
            long registrations, long enomem, long peakPinned, long overLimit) {
    }

    private NoisyNeighbour() {
    }

    /** Every configuration, {@code repeats} times each, interleaved; progress to {@code progress}. */
    public static Map<Config, List<Sample>> run(Setup s, int repeats, Consumer<String> progress) {
        Map<Config, List<Sample>> out = new LinkedHashMap<>();
        for (Config c : Config.values()) {
            out.put(c, new ArrayList<>());
        }
        try (Arena arena = Arena.ofShared()) {
            MemorySegment hot = arena.allocate((long) s.hotBuffers() * s.bufferBytes(), 4096);
            MemorySegment scan = arena.allocate((long) s.scanBuffers() * s.bufferBytes(), 4096);
            for (int r = 1; r <= repeats; r++) {
                for (Config c : Config.values()) {
                    Sample sample = runOne(c, s, hot, scan, r);
                    out.get(c).add(sample);
                    progress.accept(String.format(Locale.ROOT, "noisy neighbour: repeat %d/%d %-32s A hit %.2f%%,"
                            + " B %,.0f uses/s, ENOMEM %d", r, repeats, c.name(), 100 * sample.aHitRatio(),
                            sample.bUsesPerSecond(), sample.enomem()));
                }
            }
        }
        return out;
    }

    /** Counts registrations and ENOMEMs, and checks what the HCA pins after every registration. */
    private static final class Checked extends ForwardingRegistrar {
        final SimulatedHca hca;
        final long limit;
        final AtomicLong registrations;
        final AtomicLong enomem;
        final AtomicLong peak;
        final AtomicLong overLimit;
        final AtomicLong mine = new AtomicLong();

        Checked(SimulatedHca hca, long limit, AtomicLong registrations, AtomicLong enomem, AtomicLong peak,
                AtomicLong overLimit) {
            super(SimulatedRegistrar.onNewDomain(hca));
            this.hca = hca;
            this.limit = limit;
            this.registrations = registrations;
            this.enomem = enomem;
            this.peak = peak;
            this.overLimit = overLimit;
        }

        @Override
        public Registration register(long address, long length, int access) {
            Registration r;
            try {
                r = super.register(address, length, access);
            } catch (RegistrationException e) {
                if (e.errno() == RegistrationException.ENOMEM) {
                    enomem.incrementAndGet();
                }
                throw e;
            }
            registrations.incrementAndGet();
            mine.incrementAndGet();
            long pinned = hca.pinnedBytes();
            peak.accumulateAndGet(pinned, Math::max);
            if (pinned > limit) {
                overLimit.incrementAndGet();
            }
            return r;
        }
    }

    /** One tenant's way to use a buffer. */
    private interface Use {
        void use(long address, long length, MemorySegment buffer, byte value);
    }

    private static Sample runOne(Config c, Setup s, MemorySegment hot, MemorySegment scan, int repeat) {
        SimulatedHca hca = new SimulatedHca().memlockLimit(s.limitBytes());
        AtomicLong registrations = new AtomicLong();
        AtomicLong enomem = new AtomicLong();
        AtomicLong peak = new AtomicLong();
        AtomicLong overLimit = new AtomicLong();
        Checked regA = new Checked(hca, s.limitBytes(), registrations, enomem, peak, overLimit);
        Checked regB = new Checked(hca, s.limitBytes(), registrations, enomem, peak, overLimit);
        List<AutoCloseable> closers = new ArrayList<>();
        Use a;
        Use b = null;
        switch (c) {
            case SHARED_LRU -> {
                SharedLru lru = new SharedLru(s.limitBytes());
                closers.add(lru);
                a = (addr, len, buf, v) -> {
                    SharedLru.Entry e = lru.acquire(0, regA, addr, len);
                    buf.fill(v);
                    lru.release(e);
                };
                b = (addr, len, buf, v) -> {
                    SharedLru.Entry e = lru.acquire(1, regB, addr, len);
                    buf.fill(v);
                    lru.release(e);
                };
            }
            case SEPARATE_BUDGETS -> {
                Budget each = Budget.ofBytes(s.limitBytes() * 3 / 4);
                a = cacheUse(RegistrationCache.builder(regA).budget(each).build(), closers);
                b = cacheUse(RegistrationCache.builder(regB).budget(each).build(), closers);
            }
            default -> {
                RoomRule rule = c == Config.SHARED_LIMIT_REQUESTER_FIRST || c == Config.HALF_GUARANTEE_REQUESTER_FIRST
                        ? RoomRule.REQUESTER_FIRST : RoomRule.FURTHEST_ABOVE_GUARANTEE;
                PinnedMemoryLimit limit = new PinnedMemoryLimit(s.limitBytes(), rule);
                long guarantee = c == Config.HALF_GUARANTEE || c == Config.HALF_GUARANTEE_REQUESTER_FIRST
                        ? s.aGuarantee() / 2 : s.aGuarantee();
                a = cacheUse(RegistrationCache.builder(regA).tenant(limit, TenantShare.guaranteed("A", guarantee))
                        .build(), closers);
                if (c != Config.ALONE) {
                    b = cacheUse(RegistrationCache.builder(regB).tenant(limit, TenantShare.bestEffort("B")).build(),
                            closers);
                }
            }
        }
        AtomicBoolean aDone = new AtomicBoolean();
        AtomicLong bUses = new AtomicLong();
        AtomicLong bRefused = new AtomicLong();
        long[] bNanos = new long[1];
        Thread bThread = null;
        if (b != null) {
            Use bUse = b;
            bThread = Thread.ofPlatform().name("tenant-B").start(() -> {
                long started = System.nanoTime();
                for (long i = 0; !aDone.get(); i++) {
                    long off = (i % s.scanBuffers()) * s.bufferBytes();
                    try {
                        bUse.use(scan.address() + off, s.bufferBytes(), scan.asSlice(off, s.bufferBytes()), (byte) i);
                        bUses.incrementAndGet();
                    } catch (RegistrationException e) {
                        bRefused.incrementAndGet();
                    }
                }
                bNanos[0] = System.nanoTime() - started;
            });
        }
        long aRefused = 0;
        double[] zipf = zipf(s.hotBuffers());
        SplittableRandom rnd = new SplittableRandom(repeat);
        try {
            for (long i = 0; i < s.aUses(); i++) {
                long off = (long) pick(zipf, rnd.nextDouble()) * s.bufferBytes();
                try {
                    a.use(hot.address() + off, s.bufferBytes(), hot.asSlice(off, s.bufferBytes()), (byte) i);
                } catch (RegistrationException e) {
                    aRefused++;
                }
            }
        } finally {
            aDone.set(true);
            if (bThread != null) {
                try {
                    bThread.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            for (AutoCloseable closer : closers) {
                try {
                    closer.close();
                } catch (Exception e) {
                    throw new IllegalStateException("closing " + c + ": " + e, e);
                }
            }
        }
        double aHit = 1 - (double) (regA.mine.get() + aRefused) / s.aUses();
        double bRate = bNanos[0] == 0 ? 0 : bUses.get() * 1e9 / bNanos[0];
        return new Sample(aHit, aRefused, bUses.get(), bRate, bRefused.get(), registrations.get(), enomem.get(),
                peak.get(), overLimit.get());
    }

    private static Use cacheUse(RegistrationCache cache, List<AutoCloseable> closers) {
        closers.add(cache);
        return (addr, len, buf, v) -> {
            try (Lease l = cache.acquire(addr, len, Access.LOCAL_WRITE)) {
                buf.fill(v);
            }
        };
    }

    private static double[] zipf(int n) {
        double[] cdf = new double[n];
        double sum = 0;
        for (int i = 0; i < n; i++) {
            sum += 1.0 / (i + 1);
            cdf[i] = sum;
        }
        for (int i = 0; i < n; i++) {
            cdf[i] /= sum;
        }
        return cdf;
    }

    private static int pick(double[] cdf, double x) {
        int lo = 0;
        int hi = cdf.length - 1;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (cdf[mid] < x) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    // ------------------------------------------------------------------ report

    /** Whether each goal holds for a configuration, judged on its medians. */
    public record Goals(double keptShare, boolean keptMet, double bRate, boolean bRuns, long registrations,
            long peakPinned, long enomem, long overLimit, boolean withinLimit) {
        public boolean allMet() {
            return keptMet && bRuns && withinLimit;
        }
    }

    public static Goals goals(Setup s, Map<Config, List<Sample>> results, Config c) {
        double alone = median(results.get(Config.ALONE), Sample::aHitRatio);
        List<Sample> v = results.get(c);
        double kept = median(v, Sample::aHitRatio) / alone;
        double bRate = median(v, Sample::bUsesPerSecond);
        long regs = v.stream().mapToLong(Sample::registrations).sum();
        long peak = v.stream().mapToLong(Sample::peakPinned).max().orElse(0);
        long enomem = v.stream().mapToLong(Sample::enomem).sum();
        long over = v.stream().mapToLong(Sample::overLimit).sum();
        return new Goals(kept, kept >= 0.95, bRate, bRate > 0, regs, peak, enomem, over,
                over == 0 && enomem == 0 && peak <= s.limitBytes());
    }

    static double median(List<Sample> v, java.util.function.ToDoubleFunction<Sample> f) {
        return Series.median(v.stream().map(f::applyAsDouble).toList());
    }

    private static String stats(List<Sample> v, java.util.function.ToDoubleFunction<Sample> f, double scale,
            String format) {
        List<Double> x = new ArrayList<>(v.stream().map(sm -> f.applyAsDouble(sm) * scale).toList());
        x.sort(null);
        return String.format(Locale.ROOT, format + "/" + format + "/" + format, x.getFirst(), Series.median(x),
                x.getLast());
    }

    /** The table, each goal with met or not. */
    public static String table(Setup s, Map<Config, List<Sample>> results, int repeats) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "Noisy neighbour: limit %,d bytes (3/4 of an 8 MiB RLIMIT_MEMLOCK), %d KiB"
                + " buffers, each written after its acquire; A: Zipf(1) over %d buffers (%,d bytes), %,d uses;"
                + " B: scans %d buffers (%,d bytes, %dx the limit) until A is done. Simulated HCA (real mlock),"
                + " memlock limit = the limit, one protection domain per tenant. min/median/max of %d repeats.%n%n",
                s.limitBytes(), s.bufferBytes() / 1024, s.hotBuffers(), (long) s.hotBuffers() * s.bufferBytes(),
                s.aUses(), s.scanBuffers(), (long) s.scanBuffers() * s.bufferBytes(),
                (long) s.scanBuffers() * s.bufferBytes() / s.limitBytes(), repeats));
        sb.append(String.format(Locale.ROOT, "%-58s %-20s %-9s %-9s %-24s %-9s %-8s %-12s %s%n", "configuration",
                "A hit %", "of alone", "A refused", "B uses/s", "B refused", "ENOMEM", "peak/limit", "goals"));
        for (Config c : Config.values()) {
            List<Sample> v = results.get(c);
            Goals g = goals(s, results, c);
            boolean alone = c == Config.ALONE;
            sb.append(String.format(Locale.ROOT, "%-58s %-20s %-9s %-9d %-24s %-9d %-8d %-12s %s%n", c.label,
                    stats(v, Sample::aHitRatio, 100, "%.2f"), alone ? "-" : String.format(Locale.ROOT, "%.1f%%",
                            100 * g.keptShare()),
                    v.stream().mapToLong(Sample::aRefused).sum(),
                    alone ? "-" : stats(v, Sample::bUsesPerSecond, 1, "%.0f"),
                    v.stream().mapToLong(Sample::bRefused).sum(), g.enomem(),
                    String.format(Locale.ROOT, "%.2f", (double) g.peakPinned() / s.limitBytes()),
                    alone ? "-" : g.allMet() ? "all met" : missed(g)));
        }
        Goals g = goals(s, results, Config.SHARED_LIMIT);
        sb.append(String.format(Locale.ROOT, "%nGoals for the mrcache shared limit (default rule):%n"
                + "  A keeps >= 95%% of its hit ratio alone: %s (%.1f%%)%n"
                + "  B still runs: %s (%,.0f uses/s, median)%n"
                + "  pinned bytes never over the limit, checked after each of %,d registrations: %s (peak %,d of"
                + " %,d bytes, %d ENOMEM, %d over)%n",
                met(g.keptMet()), 100 * g.keptShare(), met(g.bRuns()), g.bRate(), g.registrations(),
                met(g.withinLimit()), g.peakPinned(), s.limitBytes(), g.enomem(), g.overLimit()));
        return sb.toString();
    }

    private static String missed(Goals g) {
        List<String> m = new ArrayList<>();
        if (!g.keptMet()) {
            m.add("A < 95%");
        }
        if (!g.bRuns()) {
            m.add("B stalled");
        }
        if (!g.withinLimit()) {
            m.add("ENOMEM/over limit");
        }
        return "missed: " + String.join(", ", m);
    }

    private static String met(boolean met) {
        return met ? "met" : "NOT met";
    }

    /** The results as maps and lists, for JSON. */
    public static Map<String, Object> json(Setup s, Map<Config, List<Sample>> results) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("limitBytes", s.limitBytes());
        out.put("bufferBytes", s.bufferBytes());
        out.put("hotBuffers", s.hotBuffers());
        out.put("aGuaranteeBytes", s.aGuarantee());
        out.put("scanBuffers", s.scanBuffers());
        out.put("aUses", s.aUses());
        List<Object> rows = new ArrayList<>();
        for (Config c : Config.values()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("config", c.name());
            row.put("label", c.label.strip());
            List<Object> samples = new ArrayList<>();
            for (Sample x : results.get(c)) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("aHitRatio", x.aHitRatio());
                m.put("aRefused", x.aRefused());
                m.put("bUses", x.bUses());
                m.put("bUsesPerSecond", x.bUsesPerSecond());
                m.put("bRefused", x.bRefused());
                m.put("registrations", x.registrations());
                m.put("enomem", x.enomem());
                m.put("peakPinnedBytes", x.peakPinned());
                m.put("overLimit", x.overLimit());
                samples.add(m);
            }
            row.put("samples", samples);
            if (c != Config.ALONE) {
                Goals g = goals(s, results, c);
                row.put("aKeptShare", g.keptShare());
                row.put("goalAKeeps95", g.keptMet());
                row.put("goalBRuns", g.bRuns());
                row.put("goalWithinLimit", g.withinLimit());
            }
            rows.add(row);
        }
        out.put("rows", rows);
        return out;
    }
}
