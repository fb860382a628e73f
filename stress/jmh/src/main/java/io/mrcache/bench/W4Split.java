package io.mrcache.bench;

import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.CacheCounter;
import io.mrcache.core.Lease;
import io.mrcache.core.RegistrationCache;
import java.util.Locale;

/**
 * W4's loop outside JMH, each operation timed on its own, so that a run says where two threads' time goes: the
 * mean time of a hit and of a cold miss on each thread, and the part of the hits' time spent in hits over 1 us.
 * The same workload as {@code CacheBenchmarks.w4Mixed*} (256 hot regions, 10% misses on each thread's own cold
 * stream, a budget of 512 regions); with {@code --all-hits} every operation is a hit on the hot set. The two
 * clock reads around each operation add about 40 ns to every figure. A diagnostic, not a comparison row: JMH
 * and the UCX harness make those.
 *
 * <p>Run as {@code java -cp benchmarks.jar io.mrcache.bench.W4Split THREADS [ROUNDS] [MILLIS] [--all-hits]}.
 * Each round builds a new cache; the JIT's state carries over, so read the last rounds.
 */
public final class W4Split {
    private W4Split() {
    }

    public static void main(String[] args) throws InterruptedException {
        int threads = Integer.parseInt(args[0]);
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 8;
        long millis = args.length > 2 ? Long.parseLong(args[2]) : 1000;
        boolean allHits = args.length > 3 && args[3].equals("--all-hits");
        for (int round = 0; round < rounds; round++) {
            round(round, threads, millis, allHits);
        }
    }

    /** Each thread's counts and times in one round. */
    private static final class Tally {
        long ops;
        long hits;
        long hitNanos;
        long slowHitNanos;
        long misses;
        long missNanos;
    }

    private static void round(int round, int threads, long millis, boolean allHits) throws InterruptedException {
        RegistrationCache cache = RegistrationCache.builder(new Workloads.NoopRegistrar(0))
                .budget(new Budget(Long.MAX_VALUE, Workloads.MIXED_BUDGET)).build();
        Workloads.SplitMix sizes = new Workloads.SplitMix(13);
        long[] hotSize = new long[Workloads.MIXED_HOT];
        for (int i = 0; i < hotSize.length; i++) {
            hotSize[i] = Workloads.randomSize(sizes);
            cache.acquire(Workloads.mixedHotAddress(i), hotSize[i], Access.LOCAL_WRITE).close();
        }
        Tally[] tallies = new Tally[threads];
        Thread[] workers = new Thread[threads];
        long deadline = System.nanoTime() + millis * 1_000_000L;
        for (int t = 0; t < threads; t++) {
            Tally tally = tallies[t] = new Tally();
            long coldBase = Workloads.mixedColdBase(t);
            Workloads.SplitMix rnd = new Workloads.SplitMix(17 + t);
            workers[t] = new Thread(() -> run(cache, hotSize, rnd, coldBase, deadline, allHits, tally), "w4-" + t);
        }
        long started = System.nanoTime();
        for (Thread w : workers) {
            w.start();
        }
        for (Thread w : workers) {
            w.join();
        }
        long elapsed = System.nanoTime() - started;
        Tally all = new Tally();
        StringBuilder perThread = new StringBuilder();
        for (Tally t : tallies) {
            all.ops += t.ops;
            all.hits += t.hits;
            all.hitNanos += t.hitNanos;
            all.slowHitNanos += t.slowHitNanos;
            all.misses += t.misses;
            all.missNanos += t.missNanos;
            perThread.append(String.format(Locale.ROOT, " %.0f", (double) t.hitNanos / Math.max(1, t.hits)));
        }
        System.out.printf(Locale.ROOT, "round %d, %d threads: %.0f ns per op per thread; hit %.0f ns (per thread:%s),"
                        + " %.0f%% of it in hits over 1 us; cold miss %.0f ns; cache misses %,d for %,d cold;"
                        + " evictions withdrawn %,d%n",
                round, threads, (double) elapsed * threads / all.ops, (double) all.hitNanos / Math.max(1, all.hits),
                perThread, 100.0 * all.slowHitNanos / Math.max(1, all.hitNanos),
                (double) all.missNanos / Math.max(1, all.misses), cache.metrics().get(CacheCounter.MISSES)
                        - Workloads.MIXED_HOT, all.misses, cache.metrics().get(CacheCounter.EVICTIONS_WITHDRAWN));
        cache.close();
    }

    private static void run(RegistrationCache cache, long[] hotSize, Workloads.SplitMix rnd, long coldBase,
            long deadline, boolean allHits, Tally tally) {
        long cold = 0;
        long sink = 0;
        while ((tally.ops & 1023) != 0 || System.nanoTime() < deadline) {
            long r = rnd.next();
            boolean miss = !allHits && Workloads.mixedIsMiss(r);
            long address;
            long length;
            if (miss) {
                address = Workloads.mixedColdAddress(coldBase + cold++);
                length = Workloads.mixedColdLength(r);
            } else {
                int i = Workloads.mixedHotIndex(r);
                address = Workloads.mixedHotAddress(i);
                length = hotSize[i];
            }
            long t0 = System.nanoTime();
            try (Lease lease = cache.acquire(address, length, Access.LOCAL_WRITE)) {
                sink += lease.lkey();
            }
            long took = System.nanoTime() - t0;
            if (miss) {
                tally.misses++;
                tally.missNanos += took;
            } else {
                tally.hits++;
                tally.hitNanos += took;
                tally.slowHitNanos += took > 1000 ? took : 0;
            }
            tally.ops++;
        }
        if (sink == 42) {
            tally.ops++; // keeps the keys read
        }
    }
}
