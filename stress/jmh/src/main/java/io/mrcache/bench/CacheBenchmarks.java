package io.mrcache.bench;

import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.Lease;
import io.mrcache.core.RegistrationCache;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.GroupThreads;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.ThreadParams;

/**
 * W1..W6 against mrcache with a registrar that registers nothing (the UCX harness does the same), so the
 * numbers are the cache's own cost. Names match the rows of {@code ./mrcache bench --vs-ucx}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-XX:+UseParallelGC", "-Xmx1g"})
public class CacheBenchmarks {

    /** 1024 cached 64 KiB regions. */
    @State(Scope.Benchmark)
    public static class Cached {
        RegistrationCache cache;

        @Setup
        public void setup() {
            cache = RegistrationCache.builder(new Workloads.NoopRegistrar(0)).build();
            for (int i = 0; i < Workloads.REGIONS; i++) {
                cache.acquire(Workloads.regionAddress(i), Workloads.REGION_BYTES, Access.LOCAL_WRITE).close();
            }
        }

        @TearDown
        public void tearDown() {
            cache.close();
        }
    }

    /** Each thread's position in its own sequence; the disjoint variant gives each thread half the regions. */
    @State(Scope.Thread)
    public static class Cursor {
        int[] shared;
        int[] disjoint;
        long[][] sub;
        int i;

        @Setup
        public void setup(ThreadParams t) {
            shared = Workloads.indices(42 + t.getThreadIndex(), 0, Workloads.REGIONS);
            int half = Workloads.REGIONS / Math.max(1, t.getThreadCount());
            disjoint = Workloads.indices(42 + t.getThreadIndex(), t.getThreadIndex() * half, half);
            sub = Workloads.subRanges(7 + t.getThreadIndex());
        }
    }

    /** Acquire, read the lkey (as the UCX side reads its region's), release. */
    static int use(RegistrationCache cache, long address, long length) {
        Lease l = cache.acquire(address, length, Access.LOCAL_WRITE);
        int lkey = l.lkey();
        l.close();
        return lkey;
    }

    private static int hit(RegistrationCache cache, int region) {
        return use(cache, Workloads.regionAddress(region), Workloads.REGION_BYTES);
    }

    /** No cache call: the baseline of the allocation figure (what JMH's own loop allocates per operation). */
    @Benchmark
    @Threads(1)
    public int w0Baseline(Cursor k) {
        return k.shared[k.i++ & (Workloads.SEQUENCE - 1)];
    }

    @Benchmark
    @Threads(1)
    public int w1HitExact1t(Cached c, Cursor k) {
        return hit(c.cache, k.shared[k.i++ & (Workloads.SEQUENCE - 1)]);
    }

    @Benchmark
    @Threads(2)
    public int w1HitExact2tShared(Cached c, Cursor k) {
        return hit(c.cache, k.shared[k.i++ & (Workloads.SEQUENCE - 1)]);
    }

    /**
     * W1 shared with two threads that start on the same lease cell ({@code mrcache.stripes.collide}): measures
     * the move that separates threads whose ids collide.
     */
    @Benchmark
    @Threads(2)
    @Fork(value = 1, jvmArgsAppend = {"-XX:+UseParallelGC", "-Xmx1g", "-Dmrcache.stripes.collide=true"})
    public int w1HitExact2tCollide(Cached c, Cursor k) {
        return hit(c.cache, k.shared[k.i++ & (Workloads.SEQUENCE - 1)]);
    }

    @Benchmark
    @Threads(2)
    public int w1HitExact2tDisjoint(Cached c, Cursor k) {
        return hit(c.cache, k.disjoint[k.i++ & (Workloads.SEQUENCE - 1)]);
    }

    @Benchmark
    @Threads(1)
    public int w2HitSubRange(Cached c, Cursor k) {
        long[] r = k.sub[k.i++ & (Workloads.SEQUENCE - 1)];
        return use(c.cache, r[0], r[1]);
    }

    /** W3: every acquire misses: acquire, release, invalidate (the free). */
    @State(Scope.Thread)
    public static class Missing {
        RegistrationCache cache;
        long[] sizes;
        long k;

        @Setup
        public void setup() {
            cache = RegistrationCache.builder(new Workloads.NoopRegistrar(0)).build();
            Workloads.SplitMix rnd = new Workloads.SplitMix(11);
            sizes = new long[Workloads.SEQUENCE];
            for (int i = 0; i < sizes.length; i++) {
                sizes[i] = Workloads.randomSize(rnd);
            }
        }

        @TearDown
        public void tearDown() {
            cache.close();
        }
    }

    /** Acquire, read the lkey, release, invalidate (the free): as the UCX side's get, put, invalidate. */
    private static int missAndFree(RegistrationCache cache, long address, long length) {
        int lkey = use(cache, address, length);
        cache.invalidate(address, length);
        return lkey;
    }

    @Benchmark
    @Threads(1)
    public int w3Miss64k(Missing m) {
        return missAndFree(m.cache, Workloads.MISS_BASE + (m.k++ & 4095) * Workloads.STRIDE, Workloads.REGION_BYTES);
    }

    @Benchmark
    @Threads(1)
    public int w3MissRandom(Missing m) {
        long n = m.k++;
        return missAndFree(m.cache, Workloads.MISS_BASE + (n & 4095) * (2L << 20),
                m.sizes[(int) (n & (Workloads.SEQUENCE - 1))]);
    }

    /** W4: 90% hits on 256 hot regions, 10% misses on a stream of cold ones, budget 512 regions. */
    @State(Scope.Benchmark)
    public static class Mixed {
        RegistrationCache cache;
        long[] hotSize = new long[Workloads.MIXED_HOT];

        /** Whether the cache samples what it tells its policy (the builder's option; W4 keeps the default). */
        boolean sampled() {
            return true;
        }

        @Setup
        public void setup() {
            cache = RegistrationCache.builder(new Workloads.NoopRegistrar(0))
                    .budget(new Budget(Long.MAX_VALUE, Workloads.MIXED_BUDGET)).sampledAccessRecording(sampled())
                    .build();
            Workloads.SplitMix rnd = new Workloads.SplitMix(13);
            for (int i = 0; i < hotSize.length; i++) {
                hotSize[i] = Workloads.randomSize(rnd);
                cache.acquire(Workloads.mixedHotAddress(i), hotSize[i], Access.LOCAL_WRITE).close();
            }
        }

        /** Shows that the 512-region limit held, as the UCX harness does ("# " lines are the runner's notes). */
        @TearDown
        public void tearDown() {
            System.out.println("# w4 live regions at the end: " + cache.regionCount() + " (limit "
                    + Workloads.MIXED_BUDGET + ")");
            cache.close();
        }
    }

    /** Each thread's own cold stream, which never repeats within a run. */
    @State(Scope.Thread)
    public static class MixedCursor {
        Workloads.SplitMix rnd;
        long coldBase;
        long cold;

        @Setup
        public void setup(ThreadParams t) {
            rnd = new Workloads.SplitMix(17 + t.getThreadIndex());
            coldBase = Workloads.mixedColdBase(t.getThreadIndex());
        }
    }

    private static int mixed(Mixed m, MixedCursor c) {
        long r = c.rnd.next();
        if (!Workloads.mixedIsMiss(r)) {
            int i = Workloads.mixedHotIndex(r);
            return use(m.cache, Workloads.mixedHotAddress(i), m.hotSize[i]);
        }
        if (c.cold == Workloads.COLD_PER_THREAD) {
            throw new IllegalStateException("W4's cold stream ran out: shorten the run");
        }
        return use(m.cache, Workloads.mixedColdAddress(c.coldBase + c.cold++), Workloads.mixedColdLength(r));
    }

    @Benchmark
    @Threads(1)
    public int w4Mixed1t(Mixed m, MixedCursor c) {
        return mixed(m, c);
    }

    @Benchmark
    @Threads(2)
    public int w4Mixed2t(Mixed m, MixedCursor c) {
        return mixed(m, c);
    }

    /**
     * W4 with every release recorded ({@code sampledAccessRecording(false)}): not a comparison row; what the
     * default's sampling buys, side by side.
     */
    @State(Scope.Benchmark)
    public static class ExactMixed extends Mixed {
        @Override
        boolean sampled() {
            return false;
        }
    }

    @Benchmark
    @Threads(1)
    public int w4Mixed1tExact(ExactMixed m, MixedCursor c) {
        return mixed(m, c);
    }

    @Benchmark
    @Threads(2)
    public int w4Mixed2tExact(ExactMixed m, MixedCursor c) {
        return mixed(m, c);
    }

    /**
     * W4's work on two threads that share nothing: each has a cache of its own. Not a comparison row: the floor
     * that this machine's two cores give two threads, against which {@link #w4Mixed2t}'s sharing is measured.
     */
    @State(Scope.Thread)
    public static class OwnMixed extends Mixed {
    }

    @Benchmark
    @Threads(2)
    public int w4Mixed2tOwnCache(OwnMixed m, MixedCursor c) {
        return mixed(m, c);
    }

    /** The scaling table: a cache holding {@code regions} 64 KiB regions. */
    @State(Scope.Benchmark)
    public static class Scaled {
        @Param({"64", "1024", "16384", "65536", "262144", "1048576"})
        int regions;
        RegistrationCache cache;
        int[] picks;
        long k;

        @Setup
        public void setup() {
            cache = RegistrationCache.builder(new Workloads.NoopRegistrar(0)).build();
            for (int i = 0; i < regions; i++) {
                cache.acquire(Workloads.regionAddress(i), Workloads.REGION_BYTES, Access.LOCAL_WRITE).close();
            }
            picks = Workloads.indices(42, 0, regions);
        }

        @TearDown
        public void tearDown() {
            cache.close();
        }
    }

    @Benchmark
    @Threads(1)
    public int scaleHit(Scaled s) {
        return hit(s.cache, s.picks[(int) (s.k++ & (Workloads.SEQUENCE - 1))]);
    }

    @Benchmark
    @Threads(1)
    public int scaleMiss(Scaled s) {
        return missAndFree(s.cache, Workloads.MISS_BASE + (s.k++ & 4095) * Workloads.STRIDE, Workloads.REGION_BYTES);
    }

    /** W5: the free hook on a range nothing is registered in. */
    @Benchmark
    @Threads(1)
    public Object w5InvalidateEmpty(Cached c, Cursor k) {
        return c.cache.invalidate(Workloads.EMPTY_BASE + (k.i++ & 1023) * Workloads.STRIDE, Workloads.REGION_BYTES);
    }

    /** W6: hit latency on one thread while another keeps missing against a 20 us registrar. */
    @State(Scope.Group)
    public static class Contended {
        RegistrationCache cache;
        long k;

        @Setup(Level.Trial)
        public void setup() {
            cache = RegistrationCache.builder(new Workloads.NoopRegistrar(20_000)).build();
            for (int i = 0; i < Workloads.REGIONS; i++) {
                cache.acquire(Workloads.regionAddress(i), Workloads.REGION_BYTES, Access.LOCAL_WRITE).close();
            }
        }

        @TearDown
        public void tearDown() {
            cache.close();
        }
    }

    @Benchmark
    @Group("w6")
    @GroupThreads(1)
    @BenchmarkMode(Mode.SampleTime)
    public int w6Hit(Contended s, Cursor k) {
        return hit(s.cache, k.shared[k.i++ & (Workloads.SEQUENCE - 1)]);
    }

    @Benchmark
    @Group("w6")
    @GroupThreads(1)
    @BenchmarkMode(Mode.SampleTime)
    public int w6Miss(Contended s) {
        return missAndFree(s.cache, Workloads.MISS_BASE + (s.k++ & 4095) * Workloads.STRIDE, Workloads.REGION_BYTES);
    }

    /** N idle 64 KiB regions, made again before every free (the free empties the cache). */
    @State(Scope.Thread)
    public static class ManyIdle {
        @Param({"100000"})
        int idleRegions;
        RegistrationCache cache;

        @Setup(Level.Invocation)
        public void setup() {
            cache = RegistrationCache.builder(new Workloads.NoopRegistrar(0)).build();
            for (int i = 0; i < idleRegions; i++) {
                cache.acquire(Workloads.regionAddress(i), Workloads.REGION_BYTES, Access.LOCAL_WRITE).close();
            }
        }

        @TearDown(Level.Invocation)
        public void tearDown() {
            cache.close();
        }
    }

    /**
     * One free of a range that holds every region of {@link ManyIdle} (an arena's chunk unmapped): the
     * invalidation and the deregistrations it makes itself. Not a row of the bench; it guards the free's cost
     * in the number of regions, which must stay linear (one version scanned a list per region under the lock).
     */
    @Benchmark
    @BenchmarkMode(Mode.SingleShotTime)
    @OutputTimeUnit(TimeUnit.MILLISECONDS)
    @Warmup(iterations = 3)
    @Measurement(iterations = 5)
    public int freeOfManyIdleRegions(ManyIdle m) {
        m.cache.invalidateAndWait(Workloads.BASE, Workloads.regionAddress(m.idleRegions) - Workloads.BASE);
        return m.cache.regionCount();
    }
}
