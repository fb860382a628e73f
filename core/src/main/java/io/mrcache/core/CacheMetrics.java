package io.mrcache.core;

import java.util.EnumMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.jspecify.annotations.Nullable;

/** Live counters and histograms of one cache. Counters are striped (LongAdder), so hits do not contend. */
final class CacheMetrics {
    private static final CacheCounter[] COUNTERS = CacheCounter.values();

    private final LongAdder[] counters = new LongAdder[COUNTERS.length];
    final AtomicLong pinnedBytes = new AtomicLong();
    /** The cache's account in a shared limit, told of every deregistration; set once, before the cache is shared. */
    @Nullable Tenant tenant;
    final AtomicLong regions = new AtomicLong();
    /**
     * The part of {@link #pinnedBytes} and {@link #regions} that registrations hold whose publication (or discard)
     * has not yet made room for them. The budget walk leaves those to their own registering thread, which walks
     * once it has settled ({@link EvictionPolicy#makeRoom}); without this, every release on another thread in
     * the window between a registration and its publication's eviction walked the policy for nothing.
     */
    private final AtomicLong unsettledBytes = new AtomicLong();
    private final AtomicLong unsettledRegions = new AtomicLong();
    /**
     * Nanoseconds per successful register call. Plain histograms, written and copied only under the cache's
     * lock, which a registration takes anyway to publish: a concurrent histogram would add three atomic
     * operations per record to every miss.
     */
    private final Histogram registrationNanos = new Histogram(3);
    /** Bytes per successful register call; as {@link #registrationNanos}. */
    private final Histogram registrationBytes = new Histogram(3);
    static final long FAST_NANOS = 1_000;
    static final int SAMPLE_EVERY = 64;
    /** Registrations since the last timed one (under the cache's lock). */
    private long untimedRegistrations;
    private volatile boolean fastRegistrations;
    private int registrationSequence;

    CacheMetrics() {
        for (int i = 0; i < counters.length; i++) {
            counters[i] = new LongAdder();
        }
    }

    /**
     * Counts that only code holding the cache's lock adds to (misses, registrations, merges and upgrades,
     * invalidations, deregistrations and the hits of deregistered regions as they leave): plain adds, ordered
     * by the lock, where a {@code LongAdder} would cost an atomic operation each on every miss.
     */
    private final long[] underLock = new long[COUNTERS.length];

    /** Under the cache's lock. */
    void countUnderLock(CacheCounter counter, long n) {
        underLock[counter.ordinal()] += n;
    }

    /** A copy of the counts kept under the lock, for {@link #snapshot}; under the cache's lock. */
    long[] copyUnderLock() {
        return underLock.clone();
    }

    void increment(CacheCounter counter) {
        counters[counter.ordinal()].increment();
    }

    void add(CacheCounter counter, long n) {
        counters[counter.ordinal()].add(n);
    }

    /** A registration succeeded in a cache without a budget: it pins. */
    void registered(long pinned) {
        pinnedBytes.addAndGet(pinned);
        regions.incrementAndGet();
    }

    /**
     * A registration succeeded in a cache with a budget: it pins, and is unsettled until {@link #settled}. The
     * unsettled part is added first, so that a reader of the counts that sees it pinned sees it unsettled too.
     */
    void registeredUnsettled(long pinned) {
        unsettledBytes.addAndGet(pinned);
        unsettledRegions.incrementAndGet();
        registered(pinned);
    }

    /** The registration of {@code pinned} bytes was published (its victims chosen) or discarded. */
    void settled(long pinned) {
        unsettledBytes.addAndGet(-pinned);
        unsettledRegions.decrementAndGet();
    }

    /**
     * Whether the settled registrations alone exceed {@code budget}. The counts are read before the unsettled
     * part: a registration that lands between the reads is then subtracted without being counted, and its own
     * thread reads the budget again once it has settled. The other order counted it as settled, and the walk
     * it set off found nothing to evict.
     */
    boolean settledExceed(Budget budget) {
        return settledExcessBytes(budget) > 0 || settledExcessRegions(budget) > 0;
    }

    /** Settled pinned bytes over the budget's bound; zero when within it. */
    long settledExcessBytes(Budget budget) {
        long pinned = pinnedBytes.get();
        long settled = pinned - unsettledBytes.get(); // negative while a registration lands between the reads
        // compared before subtracting: a negative count minus an unbounded Long.MAX_VALUE would wrap to an excess
        return settled > budget.maxPinnedBytes() ? settled - budget.maxPinnedBytes() : 0;
    }

    /** Settled regions over the budget's bound; zero when within it. */
    long settledExcessRegions(Budget budget) {
        long count = regions.get();
        long settled = count - unsettledRegions.get();
        return Math.max(0, settled - budget.maxRegions());
    }

    /**
     * Whether to read the clock around the next register call. Reading it costs two clock reads (about 35 ns
     * on this project's machines), a tenth of a miss when the registrar is as fast as a simulated one; so
     * while registrations take under {@link #FAST_NANOS}, one in {@link #SAMPLE_EVERY} is timed and stands
     * for the others in the histogram's count. A real {@code ibv_reg_mr} (microseconds) is timed every time.
     */
    boolean shouldTimeRegistration() {
        return !fastRegistrations || (++registrationSequence & (SAMPLE_EVERY - 1)) == 0; // a racy count is fine
    }

    /** Under the cache's lock; {@code nanos} is negative for a registration that was not timed. */
    void recordRegistration(long nanos, long bytes) {
        countUnderLock(CacheCounter.REGISTRATIONS, 1);
        registrationBytes.recordValue(Math.max(1, bytes));
        if (nanos < 0) {
            untimedRegistrations++;
            return;
        }
        registrationNanos.recordValueWithCount(nanos, untimedRegistrations + 1);
        untimedRegistrations = 0;
        fastRegistrations = nanos < FAST_NANOS;
    }

    /** Copies of the two histograms, for {@link #snapshot}; under the cache's lock. */
    Histogram[] copyHistograms() {
        return new Histogram[] {registrationNanos.copy(), registrationBytes.copy()};
    }

    /** Pinned bytes and regions at once; the count of deregistrations is kept under the lock as they leave. */
    void deregistered(long pinned) {
        pinnedBytes.addAndGet(-pinned);
        regions.decrementAndGet();
        Tenant t = tenant;
        if (t != null) {
            t.limit.released(t, pinned);
        }
    }

    /**
     * @param liveHits    hits still counted in live regions' lease words
     * @param quarantined registrations whose deregistration failed and awaits a retry
     */
    MetricsSnapshot snapshot(long liveHits, long quarantined, Histogram[] histograms, long[] countedUnderLock) {
        EnumMap<CacheCounter, Long> counts = new EnumMap<>(CacheCounter.class);
        for (CacheCounter c : COUNTERS) {
            counts.put(c, counters[c.ordinal()].sum() + countedUnderLock[c.ordinal()]);
        }
        counts.merge(CacheCounter.HITS, liveHits, Long::sum);
        Tenant t = tenant;
        return new MetricsSnapshot(counts, pinnedBytes.get(), regions.get(), quarantined,
                Distribution.of(histograms[0]), Distribution.of(histograms[1]), t == null ? null : t.limit.metrics(t));
    }
}
