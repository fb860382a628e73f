package io.mrcache.core.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.mrcache.core.Access;
import io.mrcache.core.CacheCounter;
import io.mrcache.core.PinnedMemoryLimit;
import io.mrcache.core.RegistrationCache;
import io.mrcache.core.TenantShare;
import io.mrcache.core.testing.RecordingRegistrar;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class RegistrationCacheMetricsTest {

    @Test
    void countersGaugesAndTheRegistrationTimerMatchTheSnapshot() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        RecordingRegistrar registrar = new RecordingRegistrar();
        try (RegistrationCache cache = RegistrationCacheMetrics.monitor(registry,
                RegistrationCache.builder(registrar).build(), "transport-a")) {
            cache.acquire(0x10_0000, 8192, Access.LOCAL_WRITE).close();
            cache.acquire(0x10_0000, 100, Access.LOCAL_WRITE).close(); // a hit
            Thread.sleep(TimeUnit.NANOSECONDS.toMillis(RegistrationCacheMetrics.SNAPSHOT_NANOS) + 50);
            FunctionCounter hits = registry.get("mrcache.hits").tag("cache", "transport-a").functionCounter();
            assertEquals(1, hits.count());
            assertEquals(1, registry.get("mrcache.misses").functionCounter().count());
            assertEquals(CacheCounter.HITS.meaning(), hits.getId().getDescription());
            Gauge pinned = registry.get("mrcache.pinned.bytes").gauge();
            assertEquals(8192, pinned.value());
            assertEquals(1, registry.get("mrcache.regions").gauge().value());
            assertEquals(0, registry.get("mrcache.quarantined").gauge().value());
            FunctionTimer reg = registry.get("mrcache.registration").functionTimer();
            assertEquals(1, reg.count());
            assertTrue(reg.totalTime(TimeUnit.NANOSECONDS) > 0);
            assertEquals(CacheCounter.values().length + 6, registry.getMeters().size(), "one meter per counter and"
                    + " 3 gauges, the timer and 2 time gauges");
        }
    }

    @Test
    void aTenantGetsItsOwnMetersTaggedWithItsName() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        PinnedMemoryLimit limit = new PinnedMemoryLimit(4 * 4096);
        try (RegistrationCache a = RegistrationCacheMetrics.monitor(registry, RegistrationCache.builder(
                new RecordingRegistrar(1, true)).tenant(limit, TenantShare.guaranteed("alpha", 4096)).build(), "a");
                RegistrationCache b = RegistrationCacheMetrics.monitor(registry, RegistrationCache.builder(
                        new RecordingRegistrar(2, true)).tenant(limit, TenantShare.bestEffort("beta")).build(), "b")) {
            for (int i = 0; i < 3; i++) {
                a.acquire(0x10_0000 + i * 4096L, 4096, Access.LOCAL_WRITE).close();
            }
            b.acquire(0x20_0000, 2 * 4096, Access.LOCAL_WRITE).close(); // alpha gives 1 page above its guarantee
            Thread.sleep(TimeUnit.NANOSECONDS.toMillis(RegistrationCacheMetrics.SNAPSHOT_NANOS) + 50);
            assertEquals(2 * 4096, registry.get("mrcache.tenant.pinned.bytes").tag("tenant", "alpha").gauge().value());
            assertEquals(4096, registry.get("mrcache.tenant.guarantee.bytes").tag("tenant", "alpha").gauge().value());
            assertEquals(4 * 4096, registry.get("mrcache.tenant.ceiling.bytes").tag("tenant", "beta").gauge().value());
            assertEquals(1, registry.get("mrcache.tenant.evictions.suffered").tag("tenant", "alpha")
                    .functionCounter().count());
            assertEquals(1, registry.get("mrcache.tenant.evictions.caused").tag("tenant", "beta").tag("cache", "b")
                    .functionCounter().count());
            assertEquals(0, registry.get("mrcache.tenant.admissions.refused").tag("tenant", "beta")
                    .functionCounter().count());
        }
    }
}
