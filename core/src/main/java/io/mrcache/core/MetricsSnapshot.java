package io.mrcache.core;

import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A point-in-time, immutable copy of a cache's metrics.
 *
 * @param counters            every {@link CacheCounter} and its count
 * @param pinnedBytes         bytes pinned by registrations not yet deregistered (page-aligned spans)
 * @param regions             registrations not yet deregistered
 * @param quarantined         registrations whose deregistration failed, waiting for a retry (keys still live)
 * @param registrationNanos   latency of successful register calls, in nanoseconds
 * @param registrationBytes   size of successful register calls, in bytes
 * @param tenant              the cache's account in a shared {@link PinnedMemoryLimit}, or null when it has none
 */
public record MetricsSnapshot(Map<CacheCounter, Long> counters, long pinnedBytes, long regions, long quarantined,
        Distribution registrationNanos, Distribution registrationBytes, @Nullable TenantMetrics tenant) {

    public MetricsSnapshot {
        counters = Collections.unmodifiableMap(new EnumMap<>(counters));
    }

    public long get(CacheCounter counter) {
        return counters.getOrDefault(counter, 0L);
    }

    /** Hits over hits plus misses, or 0 before any acquire. */
    public double hitRatio() {
        long hits = get(CacheCounter.HITS);
        long total = hits + get(CacheCounter.MISSES);
        return total == 0 ? 0 : (double) hits / total;
    }

    /** One line per counter and a latency summary, for humans. */
    public String format() {
        StringBuilder sb = new StringBuilder();
        for (CacheCounter c : CacheCounter.values()) {
            sb.append(String.format("  %-34s %,15d%n", c.label(), get(c)));
        }
        sb.append(String.format("  %-34s %,15d%n", "pinned bytes", pinnedBytes));
        sb.append(String.format("  %-34s %,15d%n", "regions", regions));
        sb.append(String.format("  %-34s %,15d%n", "quarantined registrations", quarantined));
        if (registrationNanos.count() > 0) {
            sb.append(String.format("  %-34s p50 %,.1f us  p99 %,.1f us  max %,.1f us%n", "registration latency",
                    registrationNanos.p50() / 1e3, registrationNanos.p99() / 1e3, registrationNanos.max() / 1e3));
        }
        if (tenant != null) {
            sb.append("  ").append(tenant.format()).append(System.lineSeparator());
        }
        return sb.toString();
    }
}
