package io.mrcache.core;

import static io.mrcache.core.Access.LOCAL_WRITE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.testing.RecordingRegistrar;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The front table: sized to the cache, and never a way to a retired region. */
class FrontTableTest extends CacheTestSupport {
    private static final long CHUNK = 1L << FrontTable.GRAIN_SHIFT;

    @Test
    void sizeKeepsFourSlotsPerRegionWithinItsBounds() {
        assertEquals(FrontTable.MIN_SLOTS, FrontTable.sizeFor(0));
        assertEquals(FrontTable.MIN_SLOTS, FrontTable.sizeFor(FrontTable.MIN_SLOTS / 4));
        assertEquals(FrontTable.MIN_SLOTS * 2, FrontTable.sizeFor(FrontTable.MIN_SLOTS / 4 + 1));
        assertEquals(1 << 20, FrontTable.sizeFor(262_144));
        assertEquals(1 << 21, FrontTable.sizeFor(262_145));
        assertEquals(FrontTable.MAX_SLOTS, FrontTable.sizeFor(Integer.MAX_VALUE));
    }

    @Test
    void growsWithTheRegionsAndShrinksOnlyWhenFewAreLeft() {
        FrontTable t = new FrontTable();
        t.fit(10_000);
        assertEquals(1 << 16, t.length());
        t.fit(5_000); // half as many: kept (no churn on every free)
        assertEquals(1 << 16, t.length());
        t.fit(1_024); // a sixteenth of what it is sized for
        assertEquals(FrontTable.MIN_SLOTS, t.length());
    }

    @Test
    void aNewTableStartsEmptyAndFillsAgain() {
        FrontTable t = new FrontTable();
        Region r = EdgesTest.region(BASE, CHUNK, LOCAL_WRITE);
        t.remember(BASE, r);
        assertSame(r, t.find(BASE, BASE + CHUNK, LOCAL_WRITE, false));
        t.fit(100_000);
        assertNull(t.find(BASE, BASE + CHUNK, LOCAL_WRITE, false));
        t.remember(BASE, r);
        assertSame(r, t.find(BASE, BASE + CHUNK, LOCAL_WRITE, false));
    }

    @Test
    void everyRegionOfALargeCacheHasItsOwnSlots() {
        FrontTable t = new FrontTable();
        int n = 100_000;
        t.fit(n);
        List<Region> regions = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Region r = EdgesTest.region(BASE + i * 2 * CHUNK, CHUNK, LOCAL_WRITE);
            regions.add(r);
            t.remember(r.start, r);
        }
        int found = 0;
        for (Region r : regions) {
            if (t.find(r.start, r.end, LOCAL_WRITE, false) == r) {
                found++;
            }
        }
        // two ways and four slots per region: only three or more starts hashed to one pair can lose one
        assertTrue(found > n * 95 / 100, found + " of " + n + " regions still answered by the table");
    }

    @Test
    void theCacheGrowsItsTableWithItsIndexAndShrinksItAfterTheFrees() {
        RecordingRegistrar reg = new RecordingRegistrar();
        RegistrationCache cache = RegistrationCache.builder(reg).build();
        int n = 5_000;
        for (int i = 0; i < n; i++) {
            cache.acquire(BASE + i * 2 * CHUNK, CHUNK, LOCAL_WRITE).close();
        }
        assertEquals(FrontTable.sizeFor(n), cache.frontTableLengthForTest());
        assertTrue(cache.frontTableLengthForTest() >= 4 * n);
        cache.invalidate(BASE, n * 2 * CHUNK).toCompletableFuture().join();
        assertEquals(FrontTable.MIN_SLOTS, cache.frontTableLengthForTest());
        // the table's hints never outlive the index: a free then a reuse registers again
        try (Lease l = cache.acquire(BASE, CHUNK, LOCAL_WRITE)) {
            assertEquals(n + 1, reg.registerCount());
            assertEquals(n, reg.deregisterCount());
            assertEquals(BASE, l.registration().address());
        }
        cache.close();
    }

    @Test
    void aPairHoldsTheLastTwoLiveRegionsOfItsChunkAndServesOnlyWhatTheyCover() {
        FrontTable t = new FrontTable();
        Region older = EdgesTest.region(BASE, CHUNK, LOCAL_WRITE);
        Region newer = EdgesTest.region(BASE, CHUNK / 2, LOCAL_WRITE);
        t.remember(BASE, older);
        t.remember(BASE, newer);
        t.remember(BASE, newer); // already first: nothing moves
        assertSame(newer, t.find(BASE, BASE + CHUNK / 2, LOCAL_WRITE, false), "the first way, its exact range");
        assertSame(older, t.find(BASE, BASE + CHUNK, LOCAL_WRITE, false), "the second way, its exact range");
        assertSame(older, t.find(BASE + CHUNK / 2, BASE + CHUNK, LOCAL_WRITE, false));
        assertNull(t.find(BASE, BASE + CHUNK + 1, LOCAL_WRITE, false), "past both regions' ends");
        assertNull(t.find(BASE - 1, BASE + 1, LOCAL_WRITE, false), "before both starts");
        assertNull(t.find(BASE, BASE + 1, Access.REMOTE_READ, false), "rights neither grants");

        Region third = EdgesTest.region(BASE, CHUNK / 4, LOCAL_WRITE);
        newer.retire();
        t.remember(BASE, third); // a retired first way is dropped, not moved to the second
        assertSame(third, t.find(BASE, BASE + CHUNK / 4, LOCAL_WRITE, false));
        assertSame(older, t.find(BASE, BASE + CHUNK, LOCAL_WRITE, false), "the second way kept the older live one");
    }

    @Test
    void theTableShrinksAtASixteenthAndNeverChurnsAtItsSmallestSize() {
        FrontTable t = new FrontTable();
        t.fit(10_000); // 1 << 16 slots
        t.fit(1_025); // just above a sixteenth of four slots per region
        assertEquals(1 << 16, t.length());
        t.fit(1_024);
        assertEquals(FrontTable.MIN_SLOTS, t.length());
        Region r = EdgesTest.region(BASE, CHUNK, LOCAL_WRITE);
        t.remember(BASE, r);
        t.fit(0); // already as small as it gets: the same table, its hints kept
        t.fit(FrontTable.MIN_SLOTS / FrontTable.SLOTS_PER_REGION);
        assertSame(r, t.find(BASE, BASE + CHUNK, LOCAL_WRITE, false));
        t.fit(FrontTable.MIN_SLOTS / FrontTable.SLOTS_PER_REGION + 1);
        assertEquals(FrontTable.MIN_SLOTS * 2, t.length());
        assertEquals(FrontTable.MAX_SLOTS, FrontTable.sizeFor(FrontTable.MAX_SLOTS / FrontTable.SLOTS_PER_REGION));
        assertEquals(FrontTable.MAX_SLOTS, FrontTable.sizeFor(FrontTable.MAX_SLOTS / FrontTable.SLOTS_PER_REGION + 1));
        assertEquals(FrontTable.MAX_SLOTS / 2, FrontTable.sizeFor(FrontTable.MAX_SLOTS / FrontTable.SLOTS_PER_REGION / 2));
    }

    /** The index's answer becomes the hint for the next request; a request the index cannot serve leaves it. */
    @Test
    void aRegionFoundInTheIndexIsRememberedAndARequestItCannotServeLeavesTheHint() {
        RegionTables tables = new RegionTables(new CacheMetrics(), 0, false);
        Region r = new Region(new Registration(BASE, PAGE, LOCAL_WRITE, 1, 2, 0, 0), PAGE, 0);
        tables.lock.lock();
        try {
            assertTrue(tables.publish(r, List.of(), List.of()).isEmpty(), "nothing superseded");
        } finally {
            tables.lock.unlock();
        }
        assertNull(tables.hint(BASE, BASE + PAGE, LOCAL_WRITE, null), "nothing remembered yet");
        assertSame(r, tables.findPublished(BASE, BASE + PAGE, LOCAL_WRITE, null));
        assertSame(r, tables.hint(BASE, BASE + PAGE, LOCAL_WRITE, null), "remembered: the next request skips the index");
        assertNull(tables.findPublished(BASE, BASE + 2 * PAGE, LOCAL_WRITE, null), "nothing published serves that");
        assertSame(r, tables.hint(BASE, BASE + PAGE, LOCAL_WRITE, null), "a request the index could not serve keeps the hint");
    }
}
