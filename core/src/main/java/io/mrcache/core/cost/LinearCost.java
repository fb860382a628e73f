package io.mrcache.core.cost;

import java.util.List;

/**
 * {@code t(n) = a + b * pages(n)} seconds, fitted by least squares from measurements.
 *
 * @param fixedSeconds   a: cost of a call regardless of size
 * @param perPageSeconds b: cost per page touched
 * @param pageSize       bytes per page
 * @param residualRms    root-mean-square residual of the fit, seconds (0 for a model given by hand)
 * @param minBytes       smallest size measured (0 when given by hand)
 * @param maxBytes       largest size measured (0 when given by hand)
 * @param samples        measurements fitted
 */
public record LinearCost(double fixedSeconds, double perPageSeconds, long pageSize, double residualRms, long minBytes,
        long maxBytes, int samples) {

    /** One measurement: a call on {@code bytes} took {@code seconds}. */
    public record Sample(long bytes, double seconds) {
    }

    public LinearCost {
        if (pageSize <= 0) {
            throw new IllegalArgumentException("page size must be > 0 (got " + pageSize + ")");
        }
    }

    public static LinearCost of(double fixedSeconds, double perPageSeconds, long pageSize) {
        return new LinearCost(fixedSeconds, perPageSeconds, pageSize, 0, 0, 0, 0);
    }

    public long pages(double bytes) {
        return (long) Math.ceil(bytes / pageSize);
    }

    public double seconds(double bytes) {
        return fixedSeconds + perPageSeconds * pages(bytes);
    }

    /**
     * Least squares over the median time of each size: one point per size, so that the outliers a busy
     * machine produces (a page reclaim, a preemption) do not drag the fit. The residual is over those medians.
     *
     * @throws IllegalArgumentException with fewer than two distinct sizes
     */
    public static LinearCost fitMedians(List<Sample> samples, long pageSize) {
        java.util.TreeMap<Long, List<Double>> bySize = new java.util.TreeMap<>();
        for (Sample s : samples) {
            bySize.computeIfAbsent(s.bytes(), k -> new java.util.ArrayList<>()).add(s.seconds());
        }
        List<Sample> medians = new java.util.ArrayList<>();
        for (var e : bySize.entrySet()) {
            List<Double> v = e.getValue();
            v.sort(null);
            int n = v.size();
            double median = n % 2 == 1 ? v.get(n / 2) : (v.get(n / 2 - 1) + v.get(n / 2)) / 2;
            medians.add(new Sample(e.getKey(), median));
        }
        LinearCost fit = fit(medians, pageSize);
        return new LinearCost(fit.fixedSeconds(), fit.perPageSeconds(), pageSize, fit.residualRms(),
                fit.minBytes(), fit.maxBytes(), samples.size());
    }

    /**
     * Ordinary least squares of seconds against pages.
     *
     * @throws IllegalArgumentException with fewer than two distinct sizes
     */
    public static LinearCost fit(List<Sample> samples, long pageSize) {
        int n = samples.size();
        double sx = 0;
        double sy = 0;
        long min = Long.MAX_VALUE;
        long max = 0;
        for (Sample s : samples) {
            double x = Math.ceil((double) s.bytes() / pageSize);
            sx += x;
            sy += s.seconds();
            min = Math.min(min, s.bytes());
            max = Math.max(max, s.bytes());
        }
        if (n < 2 || min == max) {
            throw new IllegalArgumentException("a fit needs measurements of at least two sizes (got " + n
                    + " samples, sizes " + min + ".." + max + ")");
        }
        double mx = sx / n;
        double my = sy / n;
        double sxx = 0;
        double sxy = 0;
        for (Sample s : samples) {
            double dx = Math.ceil((double) s.bytes() / pageSize) - mx;
            sxx += dx * dx;
            sxy += dx * (s.seconds() - my);
        }
        double b = sxy / sxx;
        double a = my - b * mx;
        double ss = 0;
        for (Sample s : samples) {
            double r = s.seconds() - (a + b * Math.ceil((double) s.bytes() / pageSize));
            ss += r * r;
        }
        return new LinearCost(a, b, pageSize, Math.sqrt(ss / n), min, max, n);
    }

    @Override
    public String toString() {
        String fit = samples == 0 ? "given" : String.format("fit of %d samples, %,d..%,d bytes, residual %.2f us rms of the per-size medians",
                samples, minBytes, maxBytes, residualRms * 1e6);
        return String.format("%.3f us + %.4f us/page (%s)", fixedSeconds * 1e6, perPageSeconds * 1e6, fit);
    }
}
