package io.mrcache.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The region's lifecycle over striped lease cells: leases, hits, retirement, eviction, the single claim. */
class RegionStateTest {
    static final Registration REG = new Registration(4096, 4096, Access.LOCAL_READ, 1, 1, 0, 1);

    @Test
    void aRegionComputesItsPinnedBytesFromItsRangeAndTheAlignmentAndRefusesOneThatIsNotAPowerOfTwo() {
        Registration odd = new Registration(4096 + 100, 8000, Access.LOCAL_READ, 1, 1, 0, 1);
        assertEquals(2 * 4096, new Region(odd, 4096, 0).pinnedBytes(), "[0x1064, 0x2fa4): pages 1 and 2, whole");
        assertEquals(65536, new Region(odd, 65536, 0).pinnedBytes(), "one 64 KiB unit");
        assertEquals(8000, new Region(odd, 1, 0).pinnedBytes(), "byte alignment: the range itself");
        for (long bad : new long[] {0, -4096, 3, 4097}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Region(odd, bad, 0));
            assertTrue(e.getMessage().contains(Long.toString(bad)), e.getMessage());
        }
    }

    @Test
    void hitsAreCountedInTheCellsAndDoNotDisturbLifecycleDecisions() {
        Region r = new Region(REG, 4096, 0);
        for (int i = 0; i < 5; i++) {
            int slot = r.tryRetainHit(i % Region.STRIPES);
            assertTrue(slot >= 0);
            assertFalse(r.release(slot), "live: nothing to deregister");
        }
        assertEquals(5, r.hits());
        assertTrue(r.isIdle());
        assertTrue(r.tryRetireIdle(), "idle: the evictor wins the deregistration");
        assertEquals(Region.NOT_RETAINED, r.tryRetainHit(0));
        assertEquals(5, r.hits());
        assertFalse(r.retire(), "already claimed: a later retirer does not deregister again");
    }

    @Test
    void stripesAreSizedToTheMachineAndMoveWhenContended() throws Exception {
        int cpus = Runtime.getRuntime().availableProcessors();
        assertTrue(Region.STRIPES >= Math.min(16, Math.max(4, cpus)) && Region.STRIPES <= 16
                && Integer.bitCount(Region.STRIPES) == 1, "stripes " + Region.STRIPES + " for " + cpus + " cpus");
        // two threads whose ids collide on a stripe (ids are given at construction: make threads until two do)
        // hammer one region until contention has moved them apart (two that move at the same moment collide
        // again, so give them up to ten seconds), and never lose a lease or a hit
        Region r = new Region(REG, 4096, 0);
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.atomic.AtomicLong done = new java.util.concurrent.atomic.AtomicLong();
        Runnable hammer = () -> {
            long n = 0;
            while (!stop.get()) {
                for (int i = 0; i < 10_000; i++, n++) {
                    int slot = r.tryRetainHit(Region.stripe());
                    assertTrue(slot >= 0);
                    r.release(slot);
                }
            }
            done.addAndGet(n);
        };
        Thread a = new Thread(hammer);
        Thread b = new Thread(hammer);
        while (LeaseStripes.of(a.threadId()) != LeaseStripes.of(b.threadId())
                || LeaseStripes.slotOf(a.threadId()) == LeaseStripes.slotOf(b.threadId())) { // see LeaseStripes
            b = new Thread(hammer);
        }
        assertEquals(LeaseStripes.of(a.threadId()), LeaseStripes.of(b.threadId()), "they start on one cell");
        a.start();
        b.start();
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (LeaseStripes.of(a.threadId()) == LeaseStripes.of(b.threadId()) && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        Thread.sleep(20); // and they stay apart while they keep going
        stop.set(true);
        a.join();
        b.join();
        assertTrue(LeaseStripes.of(a.threadId()) != LeaseStripes.of(b.threadId()),
                "contention moved one of them to another cell");
        assertEquals(done.get(), r.hits(), "no lease or hit lost while moving");
        assertTrue(r.isIdle());
    }

    @Test
    void aContendedThreadMovesToTheNextStripe() {
        long id = 12_345;
        int before = LeaseStripes.of(id);
        LeaseStripes.contended(id);
        assertEquals((before + 1) & (Region.STRIPES - 1), LeaseStripes.of(id));
    }

    @Test
    void leasesOnDifferentStripesKeepARetiredRegionUntilTheLastRelease() {
        Region r = new Region(REG, 4096, 0, 0); // made by a thread on stripe 0
        assertEquals(Region.BASE_SLOT, r.tryRetainHit(0), "the maker's stripe counts in the base word");
        assertEquals(3, r.tryRetainHit(3), "another stripe makes the cells and counts in its own");
        assertEquals(0, r.tryRetainHit(0), "once the cells exist, the maker's new leases go to its cell too");
        assertFalse(r.retire(), "leased: not the retirer's to deregister");
        assertFalse(r.tryRetireIdle());
        assertFalse(r.release(3), "two leases left");
        assertFalse(r.release(Region.BASE_SLOT), "one lease left");
        assertTrue(r.release(0), "the last release of a retired region deregisters");
    }

    @Test
    void evictionOfALeasedRegionBacksOutAndLetsAcquiresIn() {
        Region r = new Region(REG, 4096, 0);
        int first = r.tryRetainHit(1);
        assertTrue(first >= 0);
        assertFalse(r.tryRetireIdle(), "never evict a leased region (H5)");
        assertTrue(r.isLive(), "the failed eviction cleared its mark");
        int second = r.tryRetainHit(2);
        assertTrue(second >= 0);
        assertFalse(r.release(first));
        assertFalse(r.release(second));
        assertTrue(r.isIdle());
    }

    @Test
    void anAcquireThatMeetsAnEvictionInProgressBacksOffAndNeverClaimsTheDeregistration() {
        Region r = new Region(REG, 4096, 0);
        r.beginEvictionForTest(); // an evictor between its mark and its sum
        for (int stripe : new int[] {Region.stripe(), (Region.stripe() + 1) % Region.STRIPES}) {
            assertEquals(Region.NOT_RETAINED, r.tryRetainHit(stripe), "evicting: no lease, and not ours to deregister");
            assertEquals(0, r.leases(), "the backed-off add was undone");
        }
        assertTrue(r.retire(), "nobody claimed it while it was evicting: the retirer deregisters it once");
    }

    @Test
    void theCreatorsLeaseIsInTheBaseWord() {
        Region r = new Region(REG, 4096, 1);
        assertEquals(1, r.leases());
        assertFalse(r.retire());
        assertTrue(r.release(Region.BASE_SLOT));
    }

    /**
     * The policy hears of every release until the lease word has counted {@value Region#FULL_RECORD_HITS} hits,
     * then of one in {@value Region#ACCESS_SAMPLE}, in the base word and in a cell alike.
     */
    @Test
    void everyReleaseIsRecordedUntilTheWordHasCounted64HitsThenOneInFour() {
        Region r = new Region(REG, 4096, 1);
        assertTrue(r.recordsRelease(Region.BASE_SLOT), "a lease that was not a hit");
        for (int slot : new int[] {Region.BASE_SLOT, 3}) {
            for (long hits = 1; hits <= Region.FULL_RECORD_HITS; hits++) {
                r.seedHitsForTest(slot, hits);
                assertTrue(r.recordsRelease(slot), "slot " + slot + ", hits " + hits);
            }
            long[] sampled = {65, 66, 67, 68, 69, 72, 1001, 1004, Region.HARVEST_AT - 1, Region.HARVEST_AT};
            boolean[] recorded = {false, false, false, true, false, true, false, true, false, true};
            for (int i = 0; i < sampled.length; i++) {
                r.seedHitsForTest(slot, sampled[i]);
                assertEquals(recorded[i], r.recordsRelease(slot), "slot " + slot + ", hits " + sampled[i]);
            }
        }
    }

    @Test
    void hitsAreHarvestedAtDeregistration() {
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

    /** Runs {@code step} as another thread's, in the evictor's window after its sum and before its claim. */
    private static boolean retireIdleWithAfterSum(Region r, java.util.function.Consumer<Region> step)
            throws Exception {
        return RaceWindowsTest.within(new Region.RaceWindows() {
            @Override
            public void afterSum(Region x) {
                step.accept(x);
            }
        }, r::tryRetireIdle);
    }

    @Test
    void anAcquireBetweenTheEvictorsSumAndItsClaimBacksOff() throws Exception {
        Region r = new Region(REG, 4096, 0);
        int[] slot = {0};
        // the evictor's mark keeps it out; without the mark it would hold a lease on a region the evictor then
        // retires and deregisters (H5)
        assertTrue(retireIdleWithAfterSum(r, x -> slot[0] = x.tryRetain(0)));
        assertEquals(Region.NOT_RETAINED, slot[0], "the acquire backed off");
        assertFalse(r.retire(), "the evictor holds the one claim");
    }

    @Test
    void anInvalidationBetweenTheEvictorsSumAndItsClaimTakesTheDeregistrationAlone() throws Exception {
        Region r = new Region(REG, 4096, 0);
        boolean[] invalidationClaimed = {false};
        assertFalse(retireIdleWithAfterSum(r, x -> invalidationClaimed[0] = x.retire()),
                "the invalidation retired it first: the evictor leaves it to the invalidation");
        assertTrue(invalidationClaimed[0], "the invalidation found it idle and deregisters it: one claim");
    }
}
