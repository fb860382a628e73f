package io.mrcache.bench;

import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.RegistrationCache;
import java.util.Locale;

/**
 * What the eviction policy keeps: the hit ratio of a budgeted cache on skewed traces, one thread, no timing, with
 * every release recorded ({@code sampledAccessRecording(false)}) and sampled (the default). A diagnostic for changes to what
 * the policy is told, not a comparison with UCX: the
 * same trace gives the same ratio on every run (a fixed seed, 42 unless given).
 *
 * <p>Traces over {@code BUFFERS} buffers, 2 MiB apart, each acquired and released at once, under a budget of
 * {@code BUDGET} regions: {@code zipf}, ranks drawn with probability proportional to 1/rank^0.9; {@code
 * zipf+scan}, every other access a one-off buffer never seen again (a scan, which defeats LRU); {@code loop}, the
 * buffers in turn (a cyclic pattern larger than the budget).
 *
 * <p>Run as {@code java -cp benchmarks.jar io.mrcache.bench.PolicyHitRatio [BUFFERS] [BUDGET] [OPS] [SEED]}.
 */
public final class PolicyHitRatio {
    private static final long SPACING = 2L << 20;
    private static final long LENGTH = 64 * 1024;

    private PolicyHitRatio() {
    }

    public static void main(String[] args) {
        int buffers = args.length > 0 ? Integer.parseInt(args[0]) : 8192;
        int budget = args.length > 1 ? Integer.parseInt(args[1]) : 512;
        int ops = args.length > 2 ? Integer.parseInt(args[2]) : 2_000_000;
        long seed = args.length > 3 ? Long.parseLong(args[3]) : 42;
        double[] cdf = zipfCdf(buffers, 0.9);
        for (String trace : new String[] {"zipf", "zipf+scan", "loop"}) {
            System.out.printf(Locale.ROOT, "%-10s %,d buffers, budget %,d regions, %,d accesses, seed %d: hit ratio"
                    + " %.4f with every release recorded, %.4f sampled%n", trace, buffers, budget, ops, seed,
                    run(trace, cdf, budget, ops, seed, false), run(trace, cdf, budget, ops, seed, true));
        }
    }

    private static double run(String trace, double[] cdf, int budget, int ops, long seed, boolean sampled) {
        Workloads.SplitMix rnd = new Workloads.SplitMix(seed);
        long oneOff = cdf.length;
        try (RegistrationCache cache = RegistrationCache.builder(new Workloads.NoopRegistrar(0))
                .budget(new Budget(Long.MAX_VALUE, budget)).sampledAccessRecording(sampled).build()) {
            for (int i = 0; i < ops; i++) {
                long buffer = switch (trace) {
                    case "zipf" -> rank(cdf, rnd);
                    case "zipf+scan" -> (i & 1) == 0 ? rank(cdf, rnd) : oneOff++;
                    default -> i % cdf.length;
                };
                cache.acquire((buffer + 1) * SPACING, LENGTH, Access.LOCAL_WRITE).close();
            }
            return cache.metrics().hitRatio();
        }
    }

    private static double[] zipfCdf(int n, double exponent) {
        double[] cdf = new double[n];
        double sum = 0;
        for (int i = 0; i < n; i++) {
            sum += 1 / Math.pow(i + 1, exponent);
            cdf[i] = sum;
        }
        for (int i = 0; i < n; i++) {
            cdf[i] /= sum;
        }
        return cdf;
    }

    private static long rank(double[] cdf, Workloads.SplitMix rnd) {
        double u = (rnd.next() >>> 11) * 0x1.0p-53;
        int lo = 0;
        int hi = cdf.length - 1;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (cdf[mid] < u) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }
}
