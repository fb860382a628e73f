package io.mrcache.core;

import java.util.EnumMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;

/** Live counters and histograms of one cache. Counters are striped (LongAdder), so hits do not contend. */
final class CacheMetrics {
    private static final CacheCounter[] COUNTERS = CacheCounter.values();

    private final LongAdder[] counters = new LongAdder[COUNTERS.length];
    final AtomicLong pinnedBytes = new AtomicLong();
    final AtomicLong regions = new AtomicLong();
    /** Nanoseconds per successful register call. */
    private final ConcurrentHistogram registrationNanos = new ConcurrentHistogram(3);
    /** Bytes per successful register call. */
    private final ConcurrentHistogram registrationBytes = new ConcurrentHistogram(3);

    CacheMetrics() {
        for (int i = 0; i < counters.length; i++) {
            counters[i] = new LongAdder();
        }
    }

    void increment(CacheCounter counter) {
        counters[counter.ordinal()].increment();
    }

    void add(CacheCounter counter, long n) {
        counters[counter.ordinal()].add(n);
    }

    void registered(long pinned, long nanos, long bytes) {
        increment(CacheCounter.REGISTRATIONS);
        pinnedBytes.addAndGet(pinned);
        regions.incrementAndGet();
        registrationNanos.recordValue(Math.max(0, nanos));
        registrationBytes.recordValue(Math.max(1, bytes));
    }

    void deregistered(long pinned) {
        increment(CacheCounter.DEREGISTRATIONS);
        pinnedBytes.addAndGet(-pinned);
        regions.decrementAndGet();
    }

    /**
     * @param liveHits    hits still counted in live regions' lease words
     * @param quarantined registrations whose deregistration failed and awaits a retry
     */
    MetricsSnapshot snapshot(long liveHits, long quarantined) {
        EnumMap<CacheCounter, Long> counts = new EnumMap<>(CacheCounter.class);
        for (CacheCounter c : COUNTERS) {
            counts.put(c, counters[c.ordinal()].sum());
        }
        counts.merge(CacheCounter.HITS, liveHits, Long::sum);
        return new MetricsSnapshot(counts, pinnedBytes.get(), regions.get(), quarantined,
                Distribution.of(copy(registrationNanos)), Distribution.of(copy(registrationBytes)));
    }

    private static Histogram copy(ConcurrentHistogram h) {
        synchronized (h) {
            return h.copy();
        }
    }
}
