package io.mrcache.bench;

import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.RegistrationCache;
import java.lang.management.ManagementFactory;
import java.lang.ref.Reference;
import java.util.Locale;

/**
 * Heap bytes per cached region: the live heap after a full collection, before and after a cache takes
 * {@code N} 64 KiB regions of the scaling table, divided by {@code N}. Everything the cache keeps per
 * region counts (the region and its registration, the index, the front table, the policy's entry when
 * there is a budget); the registrar's own {@link io.mrcache.core.Registration} objects are the ones the
 * cache keeps. The UCX harness measures its side the same way, from malloc's statistics
 * ({@code ucx_rcache_bench --footprint N}).
 *
 * <p>Run as {@code java -cp benchmarks.jar io.mrcache.bench.RegionFootprint N...}, with a collector whose
 * {@code System.gc()} is a full, compacting collection (the default G1, or Parallel). Prints one line per
 * configuration: {@code footprint <config> <N> <bytes per region>}.
 */
public final class RegionFootprint {
    private RegionFootprint() {
    }

    public static void main(String[] args) {
        for (String a : args) {
            int n = Integer.parseInt(a);
            report("unbounded", n, measure(n, Budget.UNLIMITED));
            report("budget", n, measure(n, new Budget(Long.MAX_VALUE, n)));
        }
    }

    private static void report(String config, int n, double perRegion) {
        System.out.printf(Locale.ROOT, "footprint %s %d %.1f%n", config, n, perRegion);
    }

    /** Bytes per region of a cache holding {@code n} regions, under {@code budget}. */
    static double measure(int n, Budget budget) {
        Workloads.NoopRegistrar registrar = new Workloads.NoopRegistrar(0);
        long before = liveHeap();
        RegistrationCache cache = RegistrationCache.builder(registrar).budget(budget).build();
        for (int i = 0; i < n; i++) {
            cache.acquire(Workloads.regionAddress(i), Workloads.REGION_BYTES, Access.LOCAL_WRITE).close();
        }
        if (cache.regionCount() != n) {
            throw new IllegalStateException("the cache holds " + cache.regionCount() + " regions, not " + n);
        }
        long after = liveHeap();
        Reference.reachabilityFence(cache);
        cache.close();
        return (after - before) / (double) n;
    }

    private static long liveHeap() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
