package io.mrcache.bench;

import io.mrcache.core.Budget;
import io.mrcache.core.RegistrationCache;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
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

/**
 * A prototype measured, not a design the library offers: W4 ({@code CacheBenchmarks.w4Mixed*}: 256 hot regions,
 * one miss in ten on each thread's own cold stream, 512 regions in all) over {@code parts} caches, each with that
 * share of the budget, every request routed by a hash of its buffer's 2 MiB chunk. It asks how much of two
 * threads' cost per operation a cache split into partitions (each with its own index, locks and policy) would
 * take away; {@code parts=1} is W4 itself. docs/PERFORMANCE.md has the side-by-side numbers and why the library
 * keeps one budget for the whole cache.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 6, time = 1)
@Measurement(iterations = 4, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-XX:+UseParallelGC", "-Xmx1g"})
public class W4PartitionsBenchmarks {

    /** The partitions and the hot buffers' sizes (the same as W4's). */
    @State(Scope.Benchmark)
    public static class Partitions {
        @Param({"1", "2", "4"})
        int parts;
        RegistrationCache[] caches;
        final long[] hotSize = new long[Workloads.MIXED_HOT];

        @Setup
        public void setup() {
            if (Integer.bitCount(parts) != 1 || Workloads.MIXED_BUDGET % parts != 0) {
                throw new IllegalArgumentException("parts=" + parts + ": give a power of two that divides "
                        + Workloads.MIXED_BUDGET);
            }
            caches = new RegistrationCache[parts];
            for (int i = 0; i < parts; i++) {
                caches[i] = RegistrationCache.builder(new Workloads.NoopRegistrar(0))
                        .budget(new Budget(Long.MAX_VALUE, Workloads.MIXED_BUDGET / parts)).build();
            }
            Workloads.SplitMix rnd = new Workloads.SplitMix(13);
            for (int i = 0; i < hotSize.length; i++) {
                hotSize[i] = Workloads.randomSize(rnd);
                long address = Workloads.mixedHotAddress(i);
                CacheBenchmarks.use(caches[route(address)], address, hotSize[i]);
            }
        }

        /** The partition of the buffer at {@code address}: its 2 MiB chunk, hashed. */
        int route(long address) {
            return (int) (((address >>> 21) * 0x9E3779B97F4A7C15L) >>> 32) & (parts - 1);
        }

        /** Shows that the partitions together kept to W4's budget ("# " lines are the runner's notes). */
        @TearDown
        public void tearDown() {
            int live = 0;
            for (RegistrationCache c : caches) {
                live += c.regionCount();
                c.close();
            }
            System.out.println("# w4 partitions: " + parts + ", live regions at the end: " + live + " (limit "
                    + Workloads.MIXED_BUDGET + ")");
        }
    }

    private static int mixed(Partitions p, CacheBenchmarks.MixedCursor c) {
        long r = c.rnd.next();
        long address;
        long length;
        if (!Workloads.mixedIsMiss(r)) {
            int i = Workloads.mixedHotIndex(r);
            address = Workloads.mixedHotAddress(i);
            length = p.hotSize[i];
        } else {
            if (c.cold == Workloads.COLD_PER_THREAD) {
                throw new IllegalStateException("W4's cold stream ran out: shorten the run");
            }
            address = Workloads.mixedColdAddress(c.coldBase + c.cold++);
            length = Workloads.mixedColdLength(r);
        }
        return CacheBenchmarks.use(p.caches[p.route(address)], address, length);
    }

    @Benchmark
    @Threads(1)
    public int w4Partitioned1t(Partitions p, CacheBenchmarks.MixedCursor c) {
        return mixed(p, c);
    }

    @Benchmark
    @Threads(2)
    public int w4Partitioned2t(Partitions p, CacheBenchmarks.MixedCursor c) {
        return mixed(p, c);
    }
}
