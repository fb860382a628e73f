package io.mrcache.core;

import io.mrcache.bench.Workloads;
import java.util.ArrayList;
import java.util.List;
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
import org.openjdk.jmh.annotations.Warmup;

/**
 * The index alone, without the cache around it: the scaling table's two operations (a miss's insertion and
 * its invalidation's removal past the last of N regions; a hit's lookup of a random one of them) on the
 * persistent B+-tree the cache uses ({@code tree}), the front table in front of it ({@code front}, lookups
 * only), and a radix page table with 16 or 64 slots per directory ({@code radix4}, {@code radix6};
 * {@link RadixPageTable}). Not a comparison row: it measures what a radix index could save before one is
 * built into the cache. Same regions and addresses as {@code CacheBenchmarks.scaleHit} and {@code scaleMiss}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 4, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-XX:+UseParallelGC", "-Xmx1g"})
public class IndexAlternativesBenchmarks {
    private static final int MISSES = 4096;

    @State(Scope.Thread)
    public static class Indexed {
        @Param({"64", "1024", "16384", "65536", "262144", "1048576"})
        int regions;
        @Param({"tree", "radix4", "radix6", "front"})
        String kind;
        RegionIndex tree = RegionIndex.EMPTY;
        RadixPageTable radix;
        FrontTable front;
        Region[] misses;
        int[] picks;
        long[] pickAddresses;
        long k;

        @Setup
        public void setup() {
            List<Region> cached = new ArrayList<>(regions);
            for (int i = 0; i < regions; i++) {
                cached.add(region(Workloads.regionAddress(i)));
            }
            switch (kind) {
                case "tree" -> tree = RegionIndex.EMPTY.withAll(cached);
                case "radix4", "radix6" -> {
                    radix = new RadixPageTable(kind.equals("radix4") ? 4 : 6);
                    cached.forEach(radix::insert);
                }
                case "front" -> {
                    front = new FrontTable();
                    front.fit(regions);
                    cached.forEach(r -> front.remember(r.start, r));
                }
                default -> throw new IllegalArgumentException("kind must be tree, radix4, radix6 or front: " + kind);
            }
            misses = new Region[MISSES];
            for (int i = 0; i < MISSES; i++) {
                misses[i] = region(Workloads.MISS_BASE + i * Workloads.STRIDE);
            }
            picks = Workloads.indices(42, 0, regions);
            pickAddresses = new long[picks.length];
            for (int i = 0; i < picks.length; i++) {
                pickAddresses[i] = Workloads.regionAddress(picks[i]);
            }
            // every kind must answer the lookups it is timed on, and the radix table must undo an insertion
            for (int i : new int[] {0, regions / 2, regions - 1}) {
                Region want = cached.get(i);
                if (lookUp(want.start, want.end) != want) {
                    throw new IllegalStateException(kind + " does not find region " + i + " of " + regions);
                }
            }
            if (radix != null) {
                radix.insert(misses[0]);
                radix.remove(misses[0]);
                if (radix.find(misses[0].start, misses[0].end, Access.LOCAL_WRITE, false) != null
                        || radix.size() != regions) {
                    throw new IllegalStateException(kind + " kept a removed region");
                }
            }
        }

        @org.jspecify.annotations.Nullable Region lookUp(long from, long to) {
            if (radix != null) {
                return radix.find(from, to, Access.LOCAL_WRITE, false);
            }
            if (front != null) {
                return front.find(from, to, Access.LOCAL_WRITE, false);
            }
            return tree.findServingUnchecked(from, to, Access.LOCAL_WRITE, false);
        }

        private static Region region(long address) {
            return new Region(new Registration(address, Workloads.REGION_BYTES, Access.LOCAL_WRITE, 1, 1, 0, address),
                    Workloads.REGION_BYTES, 0);
        }
    }

    /** A miss's insertion and its invalidation's removal, as the cache publishes them (the tree's copies kept). */
    @Benchmark
    public int insertAndRemove(Indexed s) {
        Region r = s.misses[(int) (s.k++ & (MISSES - 1))];
        if (s.radix != null) {
            s.radix.insert(r);
            s.radix.remove(r);
            return s.radix.size();
        }
        if (s.front != null) {
            throw new IllegalStateException("the front table is a hint: lookups only");
        }
        s.tree = s.tree.with(r, List.of()).with(null, List.of(r));
        return s.tree.size();
    }

    /** A hit's lookup of a random cached region (no lease taken). */
    @Benchmark
    public Object find(Indexed s) {
        long a = s.pickAddresses[(int) (s.k++ & (Workloads.SEQUENCE - 1))];
        return s.lookUp(a, a + Workloads.REGION_BYTES);
    }
}
