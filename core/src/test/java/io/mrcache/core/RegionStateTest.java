package io.mrcache.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The region's state word: leases, hit counter and retired bit never disturb each other. */
class RegionStateTest {
    static final Registration REG = new Registration(4096, 4096, Access.LOCAL_READ, 1, 1, 0, 1);

    @Test
    void hitsAreCountedInTheLeaseWordAndDoNotDisturbLifecycleDecisions() {
        Region r = new Region(REG, 4096, 0);
        for (int i = 0; i < 5; i++) {
            assertEquals(Region.RETAINED, r.tryRetainHit());
            assertEquals(0, r.releaseLease(), "idle again: the counter is masked out");
        }
        assertEquals(5, r.hits());
        assertTrue(r.isIdle());
        assertTrue(r.tryRetireIdle(), "idle with a non-zero hit counter is still idle");
        assertEquals(Region.NOT_RETAINED, r.tryRetainHit());
        assertEquals(5, r.hits());
    }

    @Test
    void retireWithLeasesLeavesTheLastReleaseToDeregister() {
        Region r = new Region(REG, 4096, 0);
        r.tryRetainHit();
        r.tryRetainHit();
        assertFalse(r.retire(), "leased: not the retirer's to deregister");
        assertEquals(1, r.releaseLease() & Region.LEASE_MASK);
        assertEquals(Region.RETIRED_BIT, r.releaseLease(), "the last release of a retired region deregisters");
    }

    @Test
    void theHitCounterWrapsWithoutTouchingTheRetiredBit() {
        Region r = new Region(REG, 4096, Region.HIT_MASK); // counter at its maximum, no lease
        assertEquals(Region.RETAINED_COUNTER_WRAPPED, r.tryRetainHit());
        assertEquals(0, r.hits());
        assertEquals(1, r.leases());
        assertTrue(r.isLive());
        assertEquals(0, r.releaseLease());
    }

    @Test
    void aWrappedCounterIsAddedToTheCacheTotal() {
        io.mrcache.core.testing.RecordingRegistrar registrar = new io.mrcache.core.testing.RecordingRegistrar();
        try (RegistrationCache cache = RegistrationCache.builder(registrar).build()) {
            cache.acquire(4096, 4096, Access.LOCAL_READ).close();
            cache.acquire(4096, 4096, Access.LOCAL_READ).close();
            assertEquals(1, cache.metrics().get(CacheCounter.HITS));
            cache.invalidateAndWait(4096, 4096);
            assertEquals(1, cache.metrics().get(CacheCounter.HITS), "harvested at deregistration, not lost");
            assertEquals(0, cache.retiringCount());
        }
    }
}
