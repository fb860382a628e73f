package io.mrcache.core;

import io.mrcache.core.testing.RecordingRegistrar;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Runs one random operation sequence against a real {@link RegistrationCache} (over a
 * {@link RecordingRegistrar}) and checks, after every step, invariants I1 to I8 and the ledger (I4) against
 * a simple reference model: an invalidation log, the leases the model holds, and the registrar's ledger, in
 * which a failed deregistration stays live until a retry succeeds.
 *
 * <p>A sequence's registrar may fail as real drivers do ({@link Failure}): register throwing any kind of
 * throwable, ENOMEM, read-only pages that refuse widened (merged or upgraded) registrations, and deregister
 * failing. The cache retries quarantined deregistrations only when the sequence says so ({@code retry}).
 *
 * <p>Long because the reference model, the failing registrar and the checks of every invariant belong
 * together: splitting them would scatter one argument over several files.
 *
 * <p>A sequence is generated from a seed, so the seed replays it; a failing sequence is shrunk by removing
 * operations while it still fails.
 */
final class CacheModelChecker {
    static final long PAGE = 4096;
    static final long BASE = 0x40_0000;
    static final int SPACE_PAGES = 12;
    static final int[] ACCESSES = {Access.LOCAL_READ, Access.LOCAL_WRITE, Access.LOCAL_READ | Access.LOCAL_WRITE,
        Access.REMOTE_READ, Access.REMOTE_WRITE | Access.LOCAL_WRITE,
        Access.REMOTE_READ | Access.REMOTE_WRITE | Access.LOCAL_WRITE};

    enum Kind {
        ACQUIRE, RELEASE, INVALIDATE, EVICT, CLOSE, BAD_INPUT, RETRY
    }

    /** How a sequence's registrar fails. */
    enum Failure {
        /** 10% of register calls throw a RegistrationException, an IllegalStateException or an Error. */
        REGISTER_THROWS,
        /** 10% of register calls fail with ENOMEM (the cache evicts and retries once). */
        ENOMEM,
        /** Two pages are read-only: a registration with write rights over them fails with EFAULT. */
        READ_ONLY_PAGES,
        /** 25% of deregister calls fail (EBUSY, a runtime exception or an Error); the key stays live. */
        DEREGISTER_FAILS
    }

    /** One step; {@code pick} chooses among held leases, so a step stays meaningful when others are removed. */
    record Op(Kind kind, long address, long length, int access, int pick) {
        @Override
        public String toString() {
            return switch (kind) {
                case ACQUIRE -> String.format("acquire(0x%x, %d, %s)", address, length, Access.describe(access));
                case RELEASE -> "release(held #" + pick + ")";
                case INVALIDATE -> String.format("invalidate(0x%x, %d)", address, length);
                case EVICT -> "evictIdle()";
                case CLOSE -> "closeAsync()";
                case BAD_INPUT -> String.format("acquire(0x%x, %d, %s) [bad input]", address, length,
                        Access.describe(access));
                case RETRY -> "retryQuarantined()";
            };
        }
    }

    /** How a sequence's cache and registrar are configured. */
    record Config(Budget budget, MergePolicy merge, Set<Failure> failures, long failureSeed) {
    }

    static Config config(Random rnd) {
        Budget budget = switch (rnd.nextInt(4)) {
            case 0 -> Budget.UNLIMITED;
            case 1 -> new Budget(Long.MAX_VALUE, 1 + rnd.nextInt(4));
            case 2 -> Budget.ofBytes((2 + rnd.nextInt(6)) * PAGE);
            default -> new Budget((3 + rnd.nextInt(6)) * PAGE, 2 + rnd.nextInt(3));
        };
        MergePolicy merge = MergePolicy.values()[rnd.nextInt(MergePolicy.values().length)];
        Set<Failure> failures = java.util.EnumSet.noneOf(Failure.class);
        if (rnd.nextBoolean()) { // half the sequences run on a failing registrar
            for (Failure f : Failure.values()) {
                if (rnd.nextInt(3) == 0) {
                    failures.add(f);
                }
            }
        }
        return new Config(budget, merge, failures, rnd.nextLong());
    }

    static List<Op> ops(Random rnd, int count) {
        List<Op> ops = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int k = rnd.nextInt(100);
            long address = BASE + rnd.nextInt(SPACE_PAGES) * PAGE + (rnd.nextBoolean() ? 0 : rnd.nextInt((int) PAGE));
            long length = rnd.nextBoolean() ? (1 + rnd.nextInt(3)) * PAGE : 1 + rnd.nextInt((int) (3 * PAGE));
            Kind kind;
            if (k < 45) {
                kind = Kind.ACQUIRE;
            } else if (k < 75) {
                kind = Kind.RELEASE;
            } else if (k < 90) {
                kind = Kind.INVALIDATE;
            } else if (k < 93) {
                kind = Kind.EVICT;
            } else if (k < 95) {
                kind = Kind.RETRY;
            } else if (k < 98) {
                kind = Kind.BAD_INPUT;
            } else {
                kind = Kind.CLOSE;
            }
            if (kind == Kind.BAD_INPUT) {
                length = -rnd.nextInt(3); // 0 or negative
            }
            ops.add(new Op(kind, address, length, ACCESSES[rnd.nextInt(ACCESSES.length)], rnd.nextInt(1 << 20)));
        }
        return ops;
    }

    /** Runs the sequence; returns null when every check held, else what failed. */
    static String run(Config config, List<Op> ops, CacheFault... faults) {
        return run(config, ops, null, faults);
    }

    /** {@link #run}, adding the cache's final counters to {@code coverage} (when not null). */
    static String run(Config config, List<Op> ops, Map<CacheCounter, Long> coverage,
            CacheFault... faults) {
        Execution execution = new Execution(config, faults);
        try {
            execution.run(ops);
            return null;
        } catch (AssertionError | RuntimeException e) {
            return e.toString();
        } finally {
            if (coverage != null) {
                execution.cache.metrics().counters().forEach((c, n) -> coverage.merge(c, n, Long::sum));
            }
        }
    }

    /** Removes operations one at a time while the sequence still fails; returns the shortest found. */
    static List<Op> shrink(Config config, List<Op> failing, CacheFault... faults) {
        List<Op> current = new ArrayList<>(failing);
        boolean progress = true;
        while (progress) {
            progress = false;
            for (int i = current.size() - 1; i >= 0; i--) {
                List<Op> candidate = new ArrayList<>(current);
                candidate.remove(i);
                if (run(config, candidate, faults) != null) {
                    current = candidate;
                    progress = true;
                }
            }
        }
        return current;
    }

    /** One run: the cache, the registrar, and the reference model. */
    private static final class Execution {
        private final Config config;
        private final RecordingRegistrar registrar = new RecordingRegistrar(7, false);
        private final RegistrationCache cache;
        private final List<Lease> held = new ArrayList<>();
        /** Invalidation log: [from, to) and the sequence number it got. */
        private final List<long[]> invalidations = new ArrayList<>();
        /** For each registration (by handle): how many invalidations had begun when it was registered. */
        private final Map<Long, Integer> registeredAtSeq = new HashMap<>();
        /** Remote requests made: "address/length/access". */
        private final Set<String> remoteRequests = new HashSet<>();
        /** Invalidation stages not yet seen complete, with the registrations they must wait for. */
        private final List<Awaited> awaited = new ArrayList<>();
        private boolean closed;
        private CompletionStage<Void> closing;
        /** Everything the registrar was made to throw from register, by identity. */
        private final List<Throwable> injected = new ArrayList<>();
        /** Handles of registrations whose deregistration failed at least once. */
        private final Set<Long> failedDeregistrations = new HashSet<>();
        private final Random failureRandom;
        private final Set<Long> readOnlyPages = new HashSet<>();
        private boolean failing = true;

        private record Awaited(String what, CompletionStage<Void> stage, List<Registration> mustDie) {
        }

        Execution(Config config, CacheFault... faults) {
            this.config = config;
            this.cache = RegistrationCache.builder(registrar).budget(config.budget()).mergePolicy(config.merge())
                    .deregistrationRetry(DeregistrationRetry.MANUAL).faults(faults).build();
            this.failureRandom = new Random(config.failureSeed());
            installFailures(config.failures());
            registrar.onDeregister(reg -> {
                for (Lease l : held) {
                    check(!l.registration().equals(reg), "I2: deregister of " + reg + " while a lease on it is held");
                }
            });
            registrar.duringRegister(() -> { });
        }

        private void installFailures(Set<Failure> failures) {
            if (failures.contains(Failure.READ_ONLY_PAGES)) {
                readOnlyPages.add(BASE + failureRandom.nextInt(SPACE_PAGES) * PAGE);
                readOnlyPages.add(BASE + failureRandom.nextInt(SPACE_PAGES) * PAGE);
            }
            registrar.registerThrows((address, length, access) -> {
                if (!failing || !failures.contains(Failure.REGISTER_THROWS) || failureRandom.nextInt(10) != 0) {
                    return null;
                }
                Throwable t = switch (failureRandom.nextInt(4)) {
                    case 0 -> new RegistrationException("injected EFAULT", RegistrationException.EFAULT);
                    case 1 -> new IllegalStateException("injected driver bug");
                    case 2 -> new OutOfMemoryError("injected");
                    default -> new UnsatisfiedLinkError("injected");
                };
                injected.add(t);
                return t;
            });
            registrar.failures((address, length, access) -> {
                if (!failing) {
                    return 0;
                }
                if (failures.contains(Failure.ENOMEM) && failureRandom.nextInt(10) == 0) {
                    return RegistrationException.ENOMEM;
                }
                if ((access & (Access.LOCAL_WRITE | Access.REMOTE_WRITE)) != 0) {
                    for (long page : readOnlyPages) {
                        if (address < page + PAGE && address + length > page) {
                            return RegistrationException.EFAULT;
                        }
                    }
                }
                return 0;
            });
            registrar.deregisterFailures(reg -> {
                if (!failing || !failures.contains(Failure.DEREGISTER_FAILS) || failureRandom.nextInt(4) != 0) {
                    return null;
                }
                failedDeregistrations.add(reg.handle());
                return switch (failureRandom.nextInt(3)) {
                    case 0 -> new RegistrationException("injected EBUSY", 16);
                    case 1 -> new IllegalStateException("injected dereg failure");
                    default -> new InternalError("injected");
                };
            });
        }

        void run(List<Op> ops) {
            for (Op op : ops) {
                step(op);
                checkAll(op);
            }
            // wind down: release everything, close, retry what is quarantined: the ledger must balance (I4)
            while (!held.isEmpty()) {
                held.remove(held.size() - 1).close();
            }
            CompletionStage<Void> done = cache.closeAsync();
            checkAll(null);
            check(done.toCompletableFuture().isDone(), "I4: close did not complete after every lease was released");
            failing = false;
            check(cache.retryQuarantined() == 0, "a retry on a healthy registrar left registrations quarantined");
            checkAll(null);
            registrar.assertBalanced();
            check(cache.pinnedBytes() == 0, "I4: pinned bytes " + cache.pinnedBytes() + " after close");
            check(cache.retiringCount() == 0, "retired regions left in the retiring index: " + cache.retiringCount());
        }

        private void step(Op op) {
            switch (op.kind()) {
                case ACQUIRE -> acquire(op);
                case RELEASE -> {
                    if (!held.isEmpty()) {
                        held.remove(op.pick() % held.size()).close();
                    }
                }
                case INVALIDATE -> {
                    long from = op.address();
                    long to = from + op.length();
                    invalidations.add(new long[] {from, to});
                    List<Registration> mustDie = new ArrayList<>();
                    for (Registration r : registrar.live()) {
                        if (r.address() < to && r.end() > from) {
                            mustDie.add(r);
                        }
                    }
                    awaited.add(new Awaited(op.toString(), cache.invalidate(from, op.length()), mustDie));
                }
                case EVICT -> cache.evictIdle();
                case RETRY -> {
                    int before = cache.quarantined().size();
                    int after = cache.retryQuarantined();
                    check(after <= before, "a retry grew the quarantine from " + before + " to " + after);
                }
                case CLOSE -> {
                    closing = cache.closeAsync();
                    List<Registration> all = registrar.live();
                    awaited.add(new Awaited(op.toString(), closing, all));
                    closed = true;
                }
                case BAD_INPUT -> {
                    int registered = registrar.registerCount();
                    int regions = cache.regionCount();
                    try {
                        cache.acquire(op.address(), op.length(), op.access());
                        throw new AssertionError("bad input accepted: " + op);
                    } catch (IllegalArgumentException expected) {
                        check(registrar.registerCount() == registered && cache.regionCount() == regions,
                                "bad input changed the cache: " + op);
                    }
                }
            }
        }

        private void acquire(Op op) {
            int registeredBefore = registrar.registerCount();
            Lease lease;
            try {
                lease = cache.acquire(op.address(), op.length(), op.access());
            } catch (Throwable e) {
                checkAcquireFailure(op, e);
                return;
            }
            check(!closed, "acquire succeeded on a closed cache");
            if (Access.isRemote(op.access())) {
                remoteRequests.add(op.address() + "/" + op.length() + "/" + op.access());
            }
            for (Registration r : registrar.live()) {
                registeredAtSeq.putIfAbsent(r.handle(), invalidations.size());
            }
            // newly registered this step: registered after every invalidation so far
            check(registrar.registerCount() - registeredBefore <= 1, "more than one registration for one miss");
            Registration reg = lease.registration();
            held.add(lease);
            check(reg.protectionDomain() == registrar.protectionDomain(), "I7: lease of another protection domain "
                    + reg);
            // I1: no invalidation logged after the registration may overlap it
            check(registrar.isLive(reg), "I1/I2: lease on a deregistered registration " + reg);
            int seq = registeredAtSeq.get(reg.handle());
            for (int i = seq; i < invalidations.size(); i++) {
                long[] inv = invalidations.get(i);
                check(!(reg.address() < inv[1] && reg.end() > inv[0]),
                        "I1: stale hit " + reg + " overlaps invalidation #" + i + " made after it was registered");
            }
            // I6: covers the request with the rights; remote exposure exactly as requested
            long end = op.address() + op.length();
            check(reg.address() <= op.address() && reg.end() >= end, "I6: " + reg + " does not cover " + op);
            check(Access.includes(reg.access(), op.access()), "I6: " + reg + " lacks rights of " + op);
            if (Access.isRemote(op.access()) || Access.isRemote(reg.access())) {
                check((reg.access() & Access.REMOTE_MASK) == (op.access() & Access.REMOTE_MASK),
                        "I6: remote rights of " + reg + " differ from " + op);
                check(remoteRequests.contains(reg.address() + "/" + reg.length() + "/" + reg.access()),
                        "I6: remote " + reg + " is not exactly one request's range and rights");
            }
        }

        /** What a failed acquire may throw: what the registrar was made to throw, or I8's explained ENOMEM. */
        private void checkAcquireFailure(Op op, Throwable e) {
            check(cache.inFlightCount() == 0, "a failed acquire left a registration in flight: " + e);
            if (e instanceof IllegalStateException && closed && String.valueOf(e.getMessage()).contains("closed")) {
                return;
            }
            if (e instanceof PinnedMemoryExhaustedException pe) { // I8: explained, after evicting every idle region
                check(pe.getMessage().contains("pinned") && pe.getMessage().contains("RLIMIT_MEMLOCK"),
                        "I8: ENOMEM message lacks pinned bytes or RLIMIT_MEMLOCK: " + pe.getMessage());
                List<Registration> quarantined = cache.quarantined();
                for (Registration r : registrar.live()) {
                    check(quarantined.contains(r) || held.stream().anyMatch(l -> l.registration().equals(r)),
                            "I8: idle " + r + " was not evicted before giving up on ENOMEM");
                }
                return;
            }
            for (Throwable t : injected) {
                if (t == e || (e.getSuppressed().length > 0 && e.getSuppressed()[0] == t)) {
                    return; // the registrar's own exception reaches the caller unwrapped
                }
            }
            if (e instanceof RegistrationException re && (re.errno() == RegistrationException.EFAULT
                    || re.errno() == RegistrationException.ENOMEM)) {
                return; // a read-only page or ENOMEM on the request's own range
            }
            throw new AssertionError("acquire threw what no registrar failure explains, after " + op + ": " + e, e);
        }

        private void checkAll(Op after) {
            String where = after == null ? "at the end" : "after " + after;
            check(cache.inFlightCount() == 0, "a registration left in flight " + where);
            // I3: a stage that completed normally means every registration it covered is dead; one that
            // completed exceptionally names registrations whose deregistration failed; one still open waits
            // only for something live
            for (var it = awaited.iterator(); it.hasNext();) {
                Awaited a = it.next();
                boolean allDead = a.mustDie().stream().noneMatch(registrar::isLive);
                CompletableFuture<Void> stage = a.stage().toCompletableFuture();
                boolean done = stage.isDone();
                if (stage.isCompletedExceptionally()) {
                    Throwable cause = stage.exceptionNow();
                    check(cause instanceof DeregistrationException de && !de.stillRegistered().isEmpty()
                            && de.stillRegistered().stream().allMatch(r -> failedDeregistrations.contains(r.handle())),
                            "I3: " + a.what() + " failed without naming a failed deregistration: " + cause);
                    it.remove();
                    continue;
                }
                check(!done || allDead, "I3: " + a.what() + " completed while an overlapping registration lives, "
                        + where);
                check(!allDead || done, "I3: " + a.what() + " did not complete though all it covered is dead, "
                        + where);
                if (done) {
                    it.remove();
                }
            }
            // ledger: the cache's accounting matches the registrar's
            long pinned = 0;
            List<Registration> live = registrar.live();
            for (Registration r : live) {
                pinned += alignUp(r.end()) - (r.address() & -PAGE);
            }
            check(cache.pinnedBytes() == pinned, "ledger: cache pins " + cache.pinnedBytes() + ", registrar "
                    + pinned + ", " + where);
            check(registrar.violations().isEmpty(), "ledger: " + registrar.violations());
            // I5: over budget only while every registration is leased (or quarantined: its deregistration failed)
            Budget b = config.budget();
            List<Registration> quarantined = cache.quarantined();
            for (Registration q : quarantined) {
                check(registrar.isLive(q), "a quarantined registration is not live at the registrar: " + q);
            }
            if (b.exceededBy(pinned, live.size())) {
                for (Registration r : live) {
                    check(quarantined.contains(r) || held.stream().anyMatch(l -> l.registration().equals(r)),
                            "I5: over budget (" + pinned + " bytes, " + live.size() + " regions) with idle " + r
                                    + " not evicted, " + where);
                }
            }
        }

        private static long alignUp(long a) {
            return (a + PAGE - 1) & -PAGE;
        }

        private static void check(boolean ok, String message) {
            if (!ok) {
                throw new AssertionError(message);
            }
        }
    }
}
