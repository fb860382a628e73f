package io.mrcache.core;

import java.util.List;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;

/**
 * An immutable summary of a recorded distribution (registration latency or size): count, mean, extremes,
 * percentiles, and the recorded values with their counts (each value the floor of its bucket, within 0.1%).
 *
 * @param count   values recorded
 * @param mean    their mean
 * @param min     smallest (0 when none)
 * @param max     largest (0 when none)
 * @param p50     median
 * @param p90     90th percentile
 * @param p99     99th percentile
 * @param p999    99.9th percentile
 * @param buckets every recorded value and how often, ascending
 */
public record Distribution(long count, double mean, long min, long max, long p50, long p90, long p99, long p999,
        List<Bucket> buckets) {

    /** A recorded value (the floor of its bucket) and how many times it was recorded. */
    public record Bucket(long value, long count) {
    }

    public Distribution {
        buckets = List.copyOf(buckets);
    }

    /** The summary of {@code h} (a copy the caller owns). */
    static Distribution of(Histogram h) {
        if (h.getTotalCount() == 0) {
            return new Distribution(0, 0, 0, 0, 0, 0, 0, 0, List.of());
        }
        List<Bucket> buckets = new java.util.ArrayList<>();
        for (HistogramIterationValue v : h.recordedValues()) {
            buckets.add(new Bucket(h.lowestEquivalentValue(v.getValueIteratedTo()), v.getCountAtValueIteratedTo()));
        }
        return new Distribution(h.getTotalCount(), h.getMean(), h.getMinValue(), h.getMaxValue(),
                h.getValueAtPercentile(50), h.getValueAtPercentile(90), h.getValueAtPercentile(99),
                h.getValueAtPercentile(99.9), buckets);
    }
}
