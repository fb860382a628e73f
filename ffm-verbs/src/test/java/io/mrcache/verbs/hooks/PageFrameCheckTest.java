package io.mrcache.verbs.hooks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.Access;
import io.mrcache.core.Lease;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationCache;
import io.mrcache.verbs.internal.Libc;
import io.mrcache.verbs.sim.SimulatedHca;
import io.mrcache.verbs.sim.SimulatedRegistrar;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The page-frame check on real memory: unmapping and mapping again at the same address gives new pages. */
class PageFrameCheckTest {
    static final long LENGTH = 4 * 4096;

    @Test
    void aRemapTheCacheNeverHeardOfIsCaughtOnHitAndReRegistered() {
        try (PageFrameCheck check = PageFrameCheck.open()) {
            // this test runs as root here; without CAP_SYS_ADMIN the check must say it is off instead
            assertTrue(check.enabled() || !"root".equals(System.getProperty("user.name")),
                    "root can read page frame numbers");
            if (!check.enabled()) {
                assertEquals(0, Arrays.stream(check.frames(0x10000, 4096)).sum(), "off: every frame reads as 0");
                return;
            }
            SimulatedHca hca = new SimulatedHca();
            PageFrameCheck.RecordingFrames frames = new PageFrameCheck.RecordingFrames(
                    SimulatedRegistrar.onNewDomain(hca), check);
            RegistrationCache cache = RegistrationCache.builder(frames).build();
            PageFrameCheck.Guard guard = new PageFrameCheck.Guard(cache, frames);
            long address = Libc.mmapAnonymous(LENGTH);
            MemorySegment.ofAddress(address).reinterpret(LENGTH).fill((byte) 1);
            long[] before = check.frames(address, LENGTH);
            Registration first;
            try (Lease l = guard.acquire(address, LENGTH, Access.LOCAL_WRITE)) {
                first = l.registration();
            }
            try (Lease hit = guard.acquire(address, LENGTH, Access.LOCAL_WRITE)) {
                assertEquals(first, hit.registration(), "same pages: an ordinary hit");
            }
            assertEquals(0, guard.remapsCaught());

            Libc.munmap(address, LENGTH); // a free the cache never hears of
            assertEquals(address, Libc.mmapAnonymousAt(address, LENGTH));
            MemorySegment.ofAddress(address).reinterpret(LENGTH).fill((byte) 2);
            long[] after = check.frames(address, LENGTH);
            assertNotEquals(Arrays.toString(before), Arrays.toString(after), "new pages behind the same addresses");

            try (Lease fresh = guard.acquire(address, LENGTH, Access.LOCAL_WRITE)) {
                assertNotEquals(first, fresh.registration(), "the stale registration is not served");
                assertEquals(1, guard.remapsCaught());
                assertTrue(hca.isAlive(fresh.lkey()));
            }
            assertTrue(!hca.isAlive(first.lkey()), "the stale registration was invalidated and deregistered");
            cache.close();
            Libc.munmap(address, LENGTH);
        }
    }

    @Test
    void largeRangesAreSampledFirstLastAndBetween() {
        try (PageFrameCheck check = PageFrameCheck.open()) {
            long pages = 64;
            long address = Libc.mmapAnonymous(pages * 4096);
            MemorySegment.ofAddress(address).reinterpret(pages * 4096).fill((byte) 1);
            long[] f = check.frames(address, pages * 4096);
            assertEquals(PageFrameCheck.SAMPLED_PAGES, f.length);
            if (check.enabled()) {
                assertTrue(Arrays.stream(f).allMatch(x -> x != 0), "touched pages are present: " + Arrays.toString(f));
            }
            Libc.munmap(address, pages * 4096);
        }
    }
}
