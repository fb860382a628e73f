package io.mrcache.core.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.mrcache.core.Access;
import io.mrcache.core.CacheCounter;
import io.mrcache.core.RegistrationCache;
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
}
