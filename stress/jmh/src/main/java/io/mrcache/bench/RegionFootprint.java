package io.mrcache.bench;

import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.RegistrationCache;
import java.lang.management.ManagementFactory;
import java.lang.ref.Reference;
import java.util.List;
import java.util.Locale;
import javax.management.JMException;
import javax.management.ObjectName;

/**
 * Heap bytes per cached region: the bytes of every live object, before and after a cache takes {@code N}
 * 64 KiB regions of the scaling table, divided by {@code N}. Everything the cache keeps per region counts (the
 * region, the index, the front table, the policy's entry when there is a budget). The UCX harness measures
 * its side the same way, from malloc's statistics ({@code ucx_rcache_bench --footprint N}).
 *
 * <p>Live bytes are the total of the JVM's class histogram ({@code GC.class_histogram}, which collects first),
 * not the heap's used bytes after {@code System.gc()}: the Parallel collector's full collection leaves the dead
 * objects of a dense prefix of the old generation in place and counts them as used (12 bytes per region at
 * 262,144 regions here, none of them the cache's). And a cache of {@value #WARM_UP} regions is built and
 * closed first, in each configuration, so that what the JVM loads once (the cache's classes, the flight
 * recorder's event metadata, about 1.5 MB) is not charged to the regions.
 *
 * <p>Run as {@code java -cp benchmarks.jar io.mrcache.bench.RegionFootprint N...}. Prints one line per
 * configuration: {@code footprint <config> <N> <bytes per region>}; with {@code --used}, the heap's used bytes
 * after {@code System.gc()} with no warm-up (this tool's measure until round 3), for comparison.
 */
public final class RegionFootprint {
    private RegionFootprint() {
    }

    /** Regions of the cache built and closed before the first measurement of each configuration. */
    static final int WARM_UP = 4096;

    public static void main(String[] args) {
        boolean used = List.of(args).contains("--used");
        if (!used) {
            measure(WARM_UP, Budget.UNLIMITED, false);
            measure(WARM_UP, new Budget(Long.MAX_VALUE, WARM_UP), false);
        }
        for (String a : args) {
            if (a.equals("--used")) {
                continue;
            }
            int n = Integer.parseInt(a);
            report("unbounded", n, measure(n, Budget.UNLIMITED, used));
            report("budget", n, measure(n, new Budget(Long.MAX_VALUE, n), used));
        }
    }

    private static void report(String config, int n, double perRegion) {
        System.out.printf(Locale.ROOT, "footprint %s %d %.1f%n", config, n, perRegion);
    }

    /** Bytes per region of a cache holding {@code n} regions, under {@code budget}. */
    static double measure(int n, Budget budget, boolean used) {
        Workloads.NoopRegistrar registrar = new Workloads.NoopRegistrar(0);
        long before = used ? usedHeap() : liveBytes();
        RegistrationCache cache = RegistrationCache.builder(registrar).budget(budget).build();
        for (int i = 0; i < n; i++) {
            cache.acquire(Workloads.regionAddress(i), Workloads.REGION_BYTES, Access.LOCAL_WRITE).close();
        }
        if (cache.regionCount() != n) {
            throw new IllegalStateException("the cache holds " + cache.regionCount() + " regions, not " + n);
        }
        long after = used ? usedHeap() : liveBytes();
        Reference.reachabilityFence(cache);
        cache.close();
        return (after - before) / (double) n;
    }

    /** The total of the class histogram of live objects (the JVM collects before it counts). */
    private static long liveBytes() {
        try {
            String histogram = (String) ManagementFactory.getPlatformMBeanServer().invoke(
                    new ObjectName("com.sun.management:type=DiagnosticCommand"), "gcClassHistogram",
                    new Object[] {new String[0]}, new String[] {String[].class.getName()});
            for (String line : histogram.split("\n")) {
                String[] c = line.trim().split("\\s+");
                if (c.length == 3 && c[0].equals("Total")) {
                    return Long.parseLong(c[2]);
                }
            }
            throw new IllegalStateException("no Total line in the class histogram:\n" + histogram);
        } catch (JMException e) {
            throw new IllegalStateException("cannot read the class histogram (GC.class_histogram): " + e, e);
        }
    }

    private static long usedHeap() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
