package io.mrcache.core.micrometer;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.mrcache.core.CacheCounter;
import io.mrcache.core.MetricsSnapshot;
import io.mrcache.core.RegistrationCache;
import io.mrcache.core.TenantMetrics;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import java.util.function.ToLongFunction;
import org.jspecify.annotations.Nullable;

/**
 * Exports a {@link RegistrationCache}'s metrics to Micrometer, as Micrometer's {@code CaffeineCacheMetrics} does
 * for Caffeine: every {@link CacheCounter} as a function counter {@code mrcache.<counter>} (its meaning as the
 * description), gauges {@code mrcache.pinned.bytes}, {@code mrcache.regions} and {@code mrcache.quarantined}, the
 * registration latency as a function timer {@code mrcache.registration} with time gauges for its p99 and max,
 * all tagged {@code cache=<name>}. A cache that is a tenant of a shared {@link io.mrcache.core.PinnedMemoryLimit}
 * also gets {@code mrcache.tenant.*} gauges (pinned, guarantee and ceiling bytes) and counters (evictions
 * suffered and caused, admissions refused), tagged {@code tenant=<its name>} as well.
 *
 * <p>Meters read one snapshot, taken at most once per {@link #SNAPSHOT_NANOS} (a snapshot sums the regions' hit
 * cells under the cache's lock, so a scrape of every meter should not take it once per meter).
 */
public final class RegistrationCacheMetrics implements MeterBinder {
    /** How long one snapshot serves the meters. */
    public static final long SNAPSHOT_NANOS = TimeUnit.MILLISECONDS.toNanos(500);

    private final RegistrationCache cache;
    private final Iterable<Tag> tags;
    private volatile MetricsSnapshot snapshot;
    private volatile long snapshotAt;

    public RegistrationCacheMetrics(RegistrationCache cache, String name, Iterable<Tag> tags) {
        this.cache = cache;
        this.tags = Tags.concat(tags, "cache", name);
        this.snapshot = cache.metrics();
        this.snapshotAt = System.nanoTime();
    }

    /** Binds a cache's metrics to {@code registry} under the name {@code name}. */
    public static RegistrationCache monitor(MeterRegistry registry, RegistrationCache cache, String name) {
        new RegistrationCacheMetrics(cache, name, Tags.empty()).bindTo(registry);
        return cache;
    }

    private MetricsSnapshot current() {
        long now = System.nanoTime();
        if (now - snapshotAt > SNAPSHOT_NANOS) {
            snapshot = cache.metrics();
            snapshotAt = now;
        }
        return snapshot;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        for (CacheCounter c : CacheCounter.values()) {
            FunctionCounter.builder("mrcache." + c.name().toLowerCase(Locale.ROOT).replace('_', '.'), this,
                    m -> m.current().get(c)).description(c.meaning()).tags(tags).register(registry);
        }
        gauge(registry, "mrcache.pinned.bytes", "bytes pinned by registrations not yet deregistered", "bytes",
                m -> m.current().pinnedBytes());
        gauge(registry, "mrcache.regions", "registrations not yet deregistered", null, m -> m.current().regions());
        gauge(registry, "mrcache.quarantined", "registrations whose deregistration failed, awaiting a retry (keys"
                + " still live)", null, m -> m.current().quarantined());
        FunctionTimer.builder("mrcache.registration", this, m -> m.current().registrationNanos().count(),
                m -> m.current().registrationNanos().count() * m.current().registrationNanos().mean(),
                TimeUnit.NANOSECONDS).description("successful register calls").tags(tags).register(registry);
        TimeGauge.builder("mrcache.registration.p99", this, TimeUnit.NANOSECONDS,
                m -> m.current().registrationNanos().p99()).tags(tags).register(registry);
        TimeGauge.builder("mrcache.registration.max", this, TimeUnit.NANOSECONDS,
                m -> m.current().registrationNanos().max()).tags(tags).register(registry);
        TenantMetrics tenant = snapshot.tenant();
        if (tenant != null) {
            bindTenant(registry, Tags.concat(tags, "tenant", tenant.name()));
        }
    }

    /** A tenant of a shared limit: its holdings and what it suffered and caused, tagged with its name. */
    private void bindTenant(MeterRegistry registry, Iterable<Tag> tenantTags) {
        tenantGauge(registry, "mrcache.tenant.pinned.bytes", "bytes the tenant holds against the shared limit",
                TenantMetrics::pinnedBytes, tenantTags);
        tenantGauge(registry, "mrcache.tenant.guarantee.bytes", "bytes the tenant can always reach",
                TenantMetrics::guaranteeBytes, tenantTags);
        tenantGauge(registry, "mrcache.tenant.ceiling.bytes", "the most the tenant may pin",
                TenantMetrics::ceilingBytes, tenantTags);
        tenantCounter(registry, "mrcache.tenant.evictions.suffered", "its regions other tenants' requests evicted",
                TenantMetrics::evictionsSuffered, tenantTags);
        tenantCounter(registry, "mrcache.tenant.evictions.caused", "other tenants' regions its requests evicted",
                TenantMetrics::evictionsCaused, tenantTags);
        tenantCounter(registry, "mrcache.tenant.admissions.refused", "its registrations the shared limit refused",
                TenantMetrics::admissionsRefused, tenantTags);
    }

    private void tenantGauge(MeterRegistry registry, String name, String description,
            ToLongFunction<TenantMetrics> value, Iterable<Tag> tenantTags) {
        Gauge.builder(name, this, m -> tenantValue(m, value)).description(description).baseUnit("bytes")
                .tags(tenantTags).register(registry);
    }

    private void tenantCounter(MeterRegistry registry, String name, String description,
            ToLongFunction<TenantMetrics> value, Iterable<Tag> tenantTags) {
        FunctionCounter.builder(name, this, m -> tenantValue(m, value)).description(description).tags(tenantTags)
                .register(registry);
    }

    private static double tenantValue(RegistrationCacheMetrics m, ToLongFunction<TenantMetrics> value) {
        TenantMetrics t = m.current().tenant();
        return t == null ? Double.NaN : value.applyAsLong(t);
    }

    private void gauge(MeterRegistry registry, String name, String description, @Nullable String unit,
            ToDoubleFunction<RegistrationCacheMetrics> value) {
        Gauge.Builder<RegistrationCacheMetrics> b = Gauge.builder(name, this, value).description(description)
                .tags(tags);
        if (unit != null) {
            b.baseUnit(unit);
        }
        b.register(registry);
    }
}
