package io.mrcache.stress.injector;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.stress.injector.GcFreedInjector.Column;
import io.mrcache.stress.injector.GcFreedInjector.Report;
import org.junit.jupiter.api.Test;

/**
 * The injector's JVM-managed mode on one seed: buffers freed by the GC alone, no free hook. The naive cache and
 * mrcache's address-keyed API (a user who forgot that the GC frees) serve registrations made for dropped buffers;
 * owner-bound mrcache serves none and deregisters the collected owners' registrations; the broken variant that
 * skips the owner check is caught.
 */
class GcFreedInjectorTest {
    static final long BUFFERS = 12_000;
    static final long SEED = 0x5EED_6CL;

    @Test
    void theNaiveCacheAndTheAddressKeyedApiServeRegistrationsOfFreedBuffers() {
        Report naive = GcFreedInjector.run(Column.NAIVE, BUFFERS, SEED, null);
        Report keyed = GcFreedInjector.run(Column.ADDRESS_KEYED, BUFFERS, SEED, null);
        assertTrue(naive.reusedAddresses() > 0, "the allocator never reused an address: " + naive);
        assertTrue(naive.staleHits() > 0, "the naive cache was not caught: " + naive);
        assertTrue(keyed.staleHits() > 0, "the address-keyed API without a free hook was not caught: " + keyed);
    }

    @Test
    void ownerBoundMrcacheServesNoneAndDeregistersCollectedOwners() {
        Report owned = GcFreedInjector.run(Column.OWNER_BOUND, BUFFERS, SEED, null);
        assertEquals(0, owned.staleHits(), owned.toString());
        assertTrue(owned.reusedAddresses() > 0, "no address came back: the run proves nothing: " + owned);
        assertTrue(owned.ownersGone() > BUFFERS / 2, "collected owners' registrations not retired: " + owned);
        assertTrue(owned.deregistrations() > BUFFERS / 2, owned.toString());
        assertTrue(owned.delayMicros().length > 0, "no delay measured: " + owned);
    }

    @Test
    void theBrokenVariantThatSkipsTheOwnerCheckIsCaught() {
        Report broken = GcFreedInjector.run(Column.OWNER_CHECK_SKIPPED, BUFFERS, SEED, null);
        assertTrue(broken.staleHits() > 0, "the owner check's removal went unseen: " + broken);
    }
}
