package io.mrcache.core;

import static io.mrcache.core.Access.LOCAL_READ;
import static io.mrcache.core.Access.LOCAL_WRITE;
import static io.mrcache.core.Access.REMOTE_READ;
import static io.mrcache.core.Access.REMOTE_WRITE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.testing.RecordingRegistrar;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Each behaviour of the cache against the recording registrar, one test each: hits and misses, invalidation,
 * merging and access, eviction, ENOMEM, close, bad input, leaks. Long because it is a catalogue; the failure
 * paths live in {@link FailurePathTest}.
 */
class RegistrationCacheTest extends CacheTestSupport {

    RegistrationCache cache() {
        return RegistrationCache.builder(registrar).build();
    }

    // ---------------------------------------------------------------- hits and misses

    /** A key object the registrar attaches (as UCX's registrar attaches its packed remote key). */
    record Keys(long id) {
    }

    /**
     * The cache keeps a registration's fields, not the registrar's object: a lease must still give back every
     * field, the attachment itself (not a copy), and the registrar must get back a registration equal to the one
     * it made, attachment included, when the cache deregisters it.
     */
    @Test
    void aLeaseGivesBackEveryFieldAndTheAttachmentTheRegistrarMade() {
        List<Registration> made = new ArrayList<>();
        List<Registration> deregistered = new ArrayList<>();
        Registrar attaching = new ForwardingRegistrar(registrar) {
            @Override
            public Registration register(long address, long length, int access) {
                Registration r = super.register(address, length, access);
                Registration withKeys = new Registration(r.address(), r.length(), r.access(), r.lkey(), r.rkey(),
                        r.protectionDomain(), r.handle(), new Keys(r.handle()));
                made.add(withKeys);
                return withKeys;
            }

            @Override
            public void deregister(Registration registration) {
                deregistered.add(registration);
                super.deregister(registration);
            }
        };
        try (RegistrationCache cache = RegistrationCache.builder(attaching).build()) {
            try (Lease miss = cache.acquire(BASE, PAGE, LOCAL_WRITE | REMOTE_READ);
                    Lease hit = cache.acquire(BASE + 8, 64, LOCAL_WRITE | REMOTE_READ)) {
                Registration original = made.getFirst();
                assertEquals(original, miss.registration(), "every field, the attachment among them");
                assertEquals(original, hit.registration());
                assertEquals(original.rkey(), hit.rkey());
                assertEquals(original.lkey(), hit.lkey());
                assertSame(original.attachment(), hit.attachment(Keys.class), "the registrar's object itself");
                assertSame(original.attachment(), hit.registration().attachment(Keys.class));
                IllegalStateException wrong = assertThrows(IllegalStateException.class,
                        () -> hit.attachment(String.class));
                assertTrue(wrong.getMessage().contains(Keys.class.getName()) && wrong.getMessage().contains("String"),
                        wrong.getMessage());
            }
            cache.invalidate(BASE, PAGE);
            assertEquals(made, deregistered, "deregistered with what the registrar returned");
            assertSame(made.getFirst().attachment(), deregistered.getFirst().attachment());
        }
        registrar.assertBalanced();
    }

    @Test
    void missRegistersPageAlignedThenHitReusesIt() {
        try (RegistrationCache cache = cache()) {
            Lease a = cache.acquire(BASE + 100, 8000, LOCAL_WRITE);
            assertEquals(1, registrar.registerCount());
            Registration reg = a.registration();
            assertEquals(BASE, reg.address());
            assertEquals(2 * PAGE, reg.length());
            a.close();
            Lease b = cache.acquire(BASE + 200, 100, LOCAL_WRITE);
            assertEquals(reg, b.registration(), "the same registration (its handle and keys)");
            assertEquals(1, registrar.registerCount(), "a hit must not register");
            b.close();
            MetricsSnapshot m = cache.metrics();
            assertEquals(1, m.get(CacheCounter.HITS));
            assertEquals(1, m.get(CacheCounter.MISSES));
            assertEquals(2 * PAGE, m.pinnedBytes());
            assertEquals(1, m.registrationNanos().count());
        }
        registrar.assertBalanced();
    }

    @Test
    void aLeaseGivesItsRegistrationsKeysOnTheMissAndOnTheHit() {
        List<int[]> keys = new ArrayList<>(); // lease's lkey, registration's, lease's rkey, registration's
        try (RegistrationCache cache = cache()) {
            Lease miss = cache.acquire(BASE, PAGE, LOCAL_WRITE);
            Lease other = cache.acquire(BASE + 4 * PAGE, PAGE, LOCAL_WRITE);
            Lease hit = cache.acquire(BASE, PAGE, LOCAL_WRITE);
            for (Lease l : List.of(miss, other, hit)) {
                keys.add(new int[] {l.lkey(), l.registration().lkey(), l.rkey(), l.registration().rkey()});
                l.close(); // before asserting: a failed assertion must not leave close waiting on a lease
            }
        }
        for (int[] k : keys) {
            assertEquals(k[1], k[0], "lkey");
            assertEquals(k[3], k[2], "rkey");
        }
        assertNotEquals(keys.get(0)[0], keys.get(1)[0], "each registration has keys of its own");
        registrar.assertBalanced();
    }

    @Test
    void aLeaseReportsTheRequestedRangeNotTheRegisteredOneAndWhetherItWasReleased() {
        try (RegistrationCache cache = cache()) {
            Lease l = cache.acquire(BASE + 100, 8000, LOCAL_WRITE);
            boolean releasedBefore = l.isReleased();
            String text = l.toString();
            l.close();
            assertEquals(BASE + 100, l.address());
            assertEquals(8000, l.length());
            assertEquals(2 * PAGE, l.registration().length(), "the registration is page-aligned, the lease is not");
            assertFalse(releasedBefore);
            assertTrue(l.isReleased());
            assertTrue(text.contains("0x" + Long.toHexString(BASE + 100)) && text.contains("+8000"), text);
        }
        registrar.assertBalanced();
    }

    @Test
    void hitRequiresCoveringRangeAndRights() {
        try (RegistrationCache cache = cache()) {
            cache.acquire(BASE, PAGE, LOCAL_READ).close();
            // wider range: miss, merged with the overlapping region
            Lease wide = cache.acquire(BASE, 2 * PAGE, LOCAL_READ);
            assertEquals(2, registrar.registerCount());
            assertEquals(2 * PAGE, wide.registration().length());
            wide.close();
            assertEquals(1, cache.regionCount(), "the narrower region was retired by the merge");
        }
        registrar.assertBalanced();
    }

    @Test
    void concurrentMissesOnTheSameRangeRegisterOnce() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        registrar.duringRegister(() -> {
            entered.countDown();
            await(proceed);
        });
        try (RegistrationCache cache = cache()) {
            Future<Lease> first = pool.submit(() -> cache.acquire(BASE, 64 * KB, LOCAL_WRITE));
            assertTrue(entered.await(5, TimeUnit.SECONDS));
            List<Future<Lease>> joiners = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                joiners.add(pool.submit(() -> cache.acquire(BASE + 4 * KB, 4 * KB, LOCAL_WRITE)));
            }
            waitFor(() -> cache.metrics().get(CacheCounter.SINGLE_FLIGHT_JOINS) == 3);
            assertEquals(1, cache.inFlightCount(), "one registration in flight, three joined to it");
            proceed.countDown();
            Lease lease = first.get(5, TimeUnit.SECONDS);
            for (Future<Lease> f : joiners) {
                Lease j = f.get(5, TimeUnit.SECONDS);
                assertEquals(lease.registration(), j.registration(), "the owner's registration");
                j.close();
            }
            lease.close();
            assertEquals(1, registrar.registerCount());
            assertEquals(0, cache.metrics().get(CacheCounter.HITS), "a joiner's lease comes from the join, not a hit");
            assertEquals(0, cache.inFlightCount());
            cache.invalidateAndWait(BASE, 64 * KB);
            assertEquals(1, cache.metrics().get(CacheCounter.DEREGISTRATIONS), "the deregistration is counted");
            assertEquals(1, cache.metrics().get(CacheCounter.MISSES));
        }
        registrar.assertBalanced();
    }

    @Test
    void registrationFailureCarriesErrnoAndLeavesCacheUsable() {
        registrar.failures((a, l, x) -> a == BASE ? RegistrationException.EFAULT : 0);
        try (RegistrationCache cache = cache()) {
            RegistrationException e = assertThrows(RegistrationException.class,
                    () -> cache.acquire(BASE, PAGE, LOCAL_READ));
            assertEquals(RegistrationException.EFAULT, e.errno());
            assertEquals(1, cache.metrics().get(CacheCounter.REGISTRATION_FAILURES));
            assertEquals(0, cache.regionCount());
            cache.acquire(BASE + PAGE, PAGE, LOCAL_READ).close();
        }
        registrar.assertBalanced();
    }

    // ---------------------------------------------------------------- invalidation

    @Test
    void invalidateUnlinksAndDeregistersIdleRegionsAtOnce() {
        try (RegistrationCache cache = cache()) {
            Lease a = cache.acquire(BASE, PAGE, LOCAL_WRITE);
            Registration old = a.registration();
            a.close();
            CompletionStage<Void> done = cache.invalidate(BASE, PAGE);
            assertTrue(done.toCompletableFuture().isDone());
            assertFalse(registrar.isLive(old));
            Lease b = cache.acquire(BASE, PAGE, LOCAL_WRITE);
            assertNotSame(old, b.registration(), "no stale hit after invalidate (I1)");
            b.close();
        }
        registrar.assertBalanced();
    }

    @Test
    void invalidateCompletesOnlyWhenTheLastLeaseIsReleased() {
        try (RegistrationCache cache = cache()) {
            Lease held = cache.acquire(BASE, PAGE, LOCAL_WRITE);
            CompletionStage<Void> done = cache.invalidate(BASE + 10, 1);
            assertFalse(done.toCompletableFuture().isDone(), "a leased region is not deregistered (I2)");
            assertTrue(registrar.isLive(held.registration()));
            assertEquals(0, cache.regionCount(), "but it is unlinked: new acquires miss");
            held.close();
            assertTrue(done.toCompletableFuture().isDone(), "the last release deregisters (I3)");
            assertFalse(registrar.isLive(held.registration()));
            assertEquals(1, cache.metrics().get(CacheCounter.DEFERRED_DEREGISTRATIONS));
        }
        registrar.assertBalanced();
    }

    @Test
    void invalidateWaitsForRetiredRegionsStillLeasedAfterAMerge() {
        try (RegistrationCache cache = cache()) {
            Lease small = cache.acquire(BASE, PAGE, LOCAL_WRITE);
            Lease merged = cache.acquire(BASE, 2 * PAGE, LOCAL_WRITE); // retires 'small', still leased
            merged.close();
            CompletionStage<Void> done = cache.invalidate(BASE, PAGE);
            assertFalse(done.toCompletableFuture().isDone(),
                    "the superseded but leased region still covers the range: not yet safe to reuse");
            small.close();
            assertTrue(done.toCompletableFuture().isDone());
        }
        registrar.assertBalanced();
    }

    @Test
    void invalidateIsIdempotentAndFastPathIsShared() {
        try (RegistrationCache cache = cache()) {
            CompletionStage<Void> nothing1 = cache.invalidate(BASE, PAGE);
            CompletionStage<Void> nothing2 = cache.invalidate(BASE + PAGE, 10 * PAGE);
            assertSame(nothing1, nothing2, "the empty fast path allocates nothing");
            cache.acquire(BASE, PAGE, LOCAL_READ).close();
            cache.invalidateAndWait(BASE, PAGE);
            cache.invalidateAndWait(BASE, PAGE);
            assertEquals(1, registrar.deregisterCount());
            assertEquals(1, cache.metrics().get(CacheCounter.INVALIDATIONS));
        }
        registrar.assertBalanced();
    }

    @Test
    void invalidateOfANeighbourLeavesARegionAlone() {
        try (RegistrationCache cache = cache()) {
            cache.acquire(BASE, PAGE, LOCAL_READ).close();
            cache.invalidateAndWait(BASE + PAGE, PAGE); // [ ] ( ): touching, not overlapping
            cache.invalidateAndWait(BASE - PAGE, PAGE); // ( ) [ ]
            assertEquals(1, cache.regionCount());
            cache.invalidateAndWait(BASE + PAGE - 1, 1); // [ (x) ]
            assertEquals(0, cache.regionCount());
        }
        registrar.assertBalanced();
    }

    @Test
    void registrationInFlightDuringAnOverlappingInvalidateIsNeverPublished() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        holdFirstRegister(entered, proceed);
        try (RegistrationCache cache = cache()) {
            Future<Lease> acquiring = pool.submit(() -> cache.acquire(BASE, PAGE, LOCAL_WRITE));
            assertTrue(entered.await(5, TimeUnit.SECONDS));
            CompletionStage<Void> done = cache.invalidate(BASE, PAGE); // the free happens mid-registration
            assertFalse(done.toCompletableFuture().isDone(), "the in-flight registration is not dead yet");
            proceed.countDown();
            Lease lease = acquiring.get(5, TimeUnit.SECONDS);
            done.toCompletableFuture().get(5, TimeUnit.SECONDS);
            assertEquals(2, registrar.registerCount(), "the doomed registration was retried");
            Registration first = registrar.events().get(0).registration();
            assertFalse(registrar.isLive(first), "the doomed registration was deregistered (H4)");
            assertNotSame(first, lease.registration());
            assertEquals(1, cache.metrics().get(CacheCounter.DISCARDED_IN_FLIGHT));
            lease.close();
        }
        registrar.assertBalanced();
    }

    @Test
    void aLaterInvalidationWaitsForTheDeregistrationOfADiscardedInFlightRegistration() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        holdFirstRegister(entered, proceed);
        CountDownLatch deregistering = new CountDownLatch(1);
        CountDownLatch finishDeregistration = new CountDownLatch(1);
        AtomicInteger deregistrations = new AtomicInteger();
        registrar.onDeregister(r -> {
            if (deregistrations.getAndIncrement() == 0) { // the discarded registration's: hold it
                deregistering.countDown();
                await(finishDeregistration);
            }
        });
        try (RegistrationCache cache = cache()) {
            Future<Lease> acquiring = pool.submit(() -> cache.acquire(BASE, PAGE, LOCAL_WRITE));
            assertTrue(entered.await(5, TimeUnit.SECONDS));
            CompletionStage<Void> first = cache.invalidate(BASE, PAGE); // dooms the registration in flight
            proceed.countDown();
            assertTrue(deregistering.await(5, TimeUnit.SECONDS), "the doomed registration is being deregistered");
            // no longer in flight and never published: only the retiring index still knows its keys are live
            CompletionStage<Void> later = cache.invalidate(BASE, PAGE);
            assertFalse(later.toCompletableFuture().isDone(),
                    "a free of the range while the discarded registration's keys are live must wait for them (I3)");
            assertFalse(first.toCompletableFuture().isDone());
            finishDeregistration.countDown();
            later.toCompletableFuture().get(5, TimeUnit.SECONDS);
            first.toCompletableFuture().get(5, TimeUnit.SECONDS);
            acquiring.get(5, TimeUnit.SECONDS).close();
        }
        registrar.assertBalanced();
    }

    // ---------------------------------------------------------------- merging and access

    @Test
    void overlappingLocalRegionsMergeWithTheUnionOfRights() {
        try (RegistrationCache cache = cache()) {
            cache.acquire(BASE, 2 * PAGE, LOCAL_READ).close();
            cache.acquire(BASE + 3 * PAGE, PAGE, LOCAL_READ).close();
            Lease m = cache.acquire(BASE + PAGE, 3 * PAGE, LOCAL_WRITE);
            Registration reg = m.registration();
            assertEquals(BASE, reg.address());
            assertEquals(4 * PAGE, reg.length());
            assertEquals(LOCAL_READ | LOCAL_WRITE, reg.access());
            m.close();
            assertEquals(1, cache.regionCount());
            assertEquals(1, cache.metrics().get(CacheCounter.MERGES));
            assertEquals(3, registrar.registerCount());
            assertEquals(2, registrar.deregisterCount(), "the two merged regions are gone");
        }
        registrar.assertBalanced();
    }

    @Test
    void adjacentRegionsMergeOnlyWhenAsked() {
        try (RegistrationCache plain = cache()) {
            plain.acquire(BASE, PAGE, LOCAL_READ).close();
            plain.acquire(BASE + PAGE, PAGE, LOCAL_READ).close();
            assertEquals(2, plain.regionCount());
        }
        try (RegistrationCache adjacent = RegistrationCache.builder(registrar)
                .mergePolicy(MergePolicy.OVERLAPPING_AND_ADJACENT).build()) {
            adjacent.acquire(BASE, PAGE, LOCAL_READ).close();
            Lease l = adjacent.acquire(BASE + PAGE, PAGE, LOCAL_READ);
            assertEquals(2 * PAGE, l.registration().length());
            l.close();
            assertEquals(1, adjacent.regionCount());
        }
        registrar.assertBalanced();
    }

    @Test
    void withoutMergingALocalRegionLackingRightsIsUpgradedToTheUnion() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar).mergePolicy(MergePolicy.NONE).build()) {
            cache.acquire(BASE, 4 * PAGE, LOCAL_READ).close();
            cache.acquire(BASE + 8 * PAGE, PAGE, LOCAL_READ).close();
            Lease up = cache.acquire(BASE + PAGE, PAGE, LOCAL_WRITE);
            assertEquals(BASE, up.registration().address());
            assertEquals(4 * PAGE, up.registration().length());
            assertEquals(LOCAL_READ | LOCAL_WRITE, up.access());
            up.close();
            assertEquals(2, cache.regionCount(), "the narrower region was retired, the far one kept");
            assertEquals(1, cache.metrics().get(CacheCounter.ACCESS_UPGRADES));
        }
        registrar.assertBalanced();
    }

    @Test
    void remoteRegionsAreExactNeverMergedAndServeOnlyEqualRemoteRights() {
        try (RegistrationCache cache = cache()) {
            Lease r = cache.acquire(BASE + 100, 1000, REMOTE_WRITE | LOCAL_WRITE);
            assertEquals(BASE + 100, r.registration().address(), "remote: exactly the requested bytes (I6)");
            assertEquals(1000, r.registration().length());
            r.close();
            Lease inside = cache.acquire(BASE + 200, 10, REMOTE_WRITE | LOCAL_WRITE);
            assertEquals(1, registrar.registerCount(), "a request inside with equal remote rights hits");
            inside.close();
            Lease fewer = cache.acquire(BASE + 200, 10, REMOTE_READ);
            assertEquals(2, registrar.registerCount(), "other remote rights: its own registration");
            assertEquals(REMOTE_READ, fewer.access());
            fewer.close();
            Lease local = cache.acquire(BASE + 200, 10, LOCAL_READ);
            assertFalse(Access.isRemote(local.access()), "a local request never gets an rkey-bearing region");
            local.close();
            Lease overlapping = cache.acquire(BASE + 500, 1000, REMOTE_WRITE | LOCAL_WRITE);
            assertEquals(BASE + 500, overlapping.registration().address(), "overlapping remote: not merged");
            assertEquals(1000, overlapping.registration().length());
            overlapping.close();
            assertEquals(4, cache.regionCount());
        }
        registrar.assertBalanced();
    }

    @Test
    void remoteRequestWithMoreRightsReplacesTheNarrowerRegionOfTheSameRange() {
        try (RegistrationCache cache = cache()) {
            cache.acquire(BASE, 1000, REMOTE_READ).close();
            Lease rw = cache.acquire(BASE, 1000, REMOTE_READ | REMOTE_WRITE | LOCAL_WRITE);
            assertEquals(BASE, rw.registration().address());
            assertEquals(1000, rw.registration().length());
            rw.close();
            assertEquals(1, cache.regionCount());
            assertEquals(1, cache.metrics().get(CacheCounter.ACCESS_UPGRADES));
        }
        registrar.assertBalanced();
    }

    @Test
    void remoteMergingIsAnExplicitOptIn() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar).allowRemoteMerging(true).build()) {
            cache.acquire(BASE, 1000, REMOTE_READ).close();
            Lease l = cache.acquire(BASE + 500, 1000, REMOTE_READ);
            assertEquals(BASE, l.registration().address());
            assertEquals(PAGE, l.registration().length(), "widened to pages and merged: documented exposure");
            l.close();
        }
        registrar.assertBalanced();
    }

    // ---------------------------------------------------------------- budget and eviction

    @Test
    void idleRegionsAreEvictedToStayWithinTheRegionBudget() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar).budget(new Budget(Long.MAX_VALUE, 4))
                .build()) {
            for (int i = 0; i < 10; i++) {
                cache.acquire(BASE + i * 2 * PAGE, PAGE, LOCAL_READ).close();
                assertTrue(cache.regionCount() <= 4, "regions " + cache.regionCount());
            }
            assertEquals(4, cache.regionCount());
            assertEquals(6, cache.metrics().get(CacheCounter.EVICTIONS));
            assertEquals(6, registrar.deregisterCount());
        }
        registrar.assertBalanced();
    }

    @Test
    void idleRegionsAreEvictedToStayWithinTheByteBudget() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar).budget(Budget.ofBytes(64 * KB))
                .build()) {
            for (int i = 0; i < 40; i++) {
                cache.acquire(BASE + i * 64 * KB, 16 * KB, LOCAL_READ).close();
                assertTrue(cache.pinnedBytes() <= 64 * KB, "pinned " + cache.pinnedBytes());
            }
            assertTrue(cache.metrics().get(CacheCounter.EVICTIONS) >= 36);
        }
        registrar.assertBalanced();
    }

    @Test
    void leasedRegionsAreNeverEvictedEvenOverBudget() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar).budget(new Budget(Long.MAX_VALUE, 2))
                .build()) {
            List<Lease> held = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                held.add(cache.acquire(BASE + i * 2 * PAGE, PAGE, LOCAL_READ));
            }
            assertEquals(5, cache.regionCount(), "all leased: over budget, nothing evicted");
            assertEquals(0, registrar.deregisterCount());
            assertTrue(cache.metrics().get(CacheCounter.BUDGET_OVERRUNS) >= 3);
            held.forEach(Lease::close);
            assertEquals(2, cache.regionCount(), "released: back within the budget");
        }
        registrar.assertBalanced();
    }

    @Test
    void frequentlyUsedRegionsSurviveScansThatDefeatLru() {
        assertHotRegionsSurviveScans(new Budget(Long.MAX_VALUE, 8));
    }

    @Test
    void underAByteBudgetTooFrequentlyUsedRegionsSurviveScans() {
        assertHotRegionsSurviveScans(Budget.ofBytes(8 * PAGE)); // 8 pages of single-page regions
    }

    /**
     * With the policy told of one release in four past a word's 64th hit (the default), the hot regions still
     * survive in a run ten times longer, where each hot buffer passes 64 hits early (500 uses each).
     */
    @Test
    void pastTheirSixtyFourthHitSampledHotRegionsStillSurviveScans() {
        steps = 6000;
        assertHotRegionsSurviveScans(new Budget(Long.MAX_VALUE, 8));
    }

    /** The same with every release recorded. */
    @Test
    void withEveryReleaseRecordedFrequentlyUsedRegionsSurviveScans() {
        sampled = false;
        assertHotRegionsSurviveScans(new Budget(Long.MAX_VALUE, 8));
    }

    /**
     * What the policy is told: region A's 65th hit (past 64, and not a multiple of four) is recorded only when
     * every release is. Both regions are in Caffeine's protected segment, ordered by their last recorded access,
     * so that hit decides whether A or B (hit once just before it) is the colder of the two.
     */
    @Test
    void aReleasePastTheSixtyFourthHitIsToldToThePolicyOnlyWhenEveryReleaseIsRecorded() {
        assertEquals(List.of(BASE + 2 * PAGE, BASE), hotPairOrder(false), "every release: A's 65th hit was told");
        assertEquals(List.of(BASE, BASE + 2 * PAGE), hotPairOrder(true), "sampled: A's 65th hit was not");
    }

    /** A (at BASE) and B, in the order the policy holds them after A's 65th hit, coldest first. */
    private List<Long> hotPairOrder(boolean sampledRecording) {
        long a = BASE;
        long b = BASE + 2 * PAGE;
        try (RegistrationCache cache = RegistrationCache.builder(registrar).budget(new Budget(Long.MAX_VALUE, 16))
                .sampledAccessRecording(sampledRecording).build()) {
            for (int i = 0; i < 8; i++) { // A, B and six others: the window holds one, the rest go to probation
                cache.acquire(BASE + i * 2 * PAGE, PAGE, LOCAL_READ).close();
            }
            cache.policyOrderForTest(); // applied: A and B are in probation
            cache.acquire(b, PAGE, LOCAL_READ).close(); // B's first hit promotes it to the protected segment
            for (int hit = 1; hit <= 64; hit++) { // A's first hit promotes it too; every one of these is recorded
                cache.acquire(a, PAGE, LOCAL_READ).close();
            }
            cache.acquire(b, PAGE, LOCAL_READ).close(); // B's second hit: B is now the protected segment's newest
            cache.acquire(a, PAGE, LOCAL_READ).close(); // A's 65th
            assertEquals(2 + 65, cache.metrics().get(CacheCounter.HITS));
            return cache.policyOrderForTest().stream().filter(s -> s == a || s == b).toList();
        }
    }

    /** How {@link #assertHotRegionsSurviveScans} builds its cache and how long it runs. */
    private boolean sampled = true;
    private int steps = 600;

    /**
     * 4 hot buffers, each reused every 12 steps, among one-off buffers. Between two uses of a hot buffer 15
     * distinct buffers are touched, more than the 8 cached: LRU would miss every hot reuse.
     */
    private void assertHotRegionsSurviveScans(Budget budget) {
        try (RegistrationCache cache = RegistrationCache.builder(registrar).budget(budget)
                .sampledAccessRecording(sampled).build()) {
            int hotHits = 0;
            int hotUses = 0;
            for (int step = 0; step < steps; step++) {
                cache.acquire(BASE + (100 + step) * 2 * PAGE, PAGE, LOCAL_READ).close();
                if (step % 3 == 0) {
                    long hot = BASE + (step / 3 % 4) * 2 * PAGE;
                    long hitsBefore = cache.metrics().get(CacheCounter.HITS);
                    cache.acquire(hot, PAGE, LOCAL_READ).close();
                    if (step >= steps / 2) {
                        hotUses++;
                        hotHits += (int) (cache.metrics().get(CacheCounter.HITS) - hitsBefore);
                    }
                }
                assertTrue(cache.regionCount() <= 8 && cache.pinnedBytes() <= 8 * PAGE);
            }
            assertTrue(hotHits >= 0.9 * hotUses, budget + ": hot hits " + hotHits + " of " + hotUses);
        }
        registrar.assertBalanced();
    }

    @Test
    void aByteBudgetWeighsAPartialPageAsAWholeOne() {
        // 64-byte alignment: each region pins 4,160 bytes, which the policy weighs as 2 pages, never as 1
        try (RegistrationCache cache = RegistrationCache.builder(registrar).alignment(64)
                .budget(Budget.ofBytes(3 * PAGE)).build()) {
            cache.acquire(BASE, PAGE + 64, LOCAL_READ).close();
            cache.acquire(BASE + 4 * PAGE, PAGE + 64, LOCAL_READ).close();
            assertEquals(1, cache.regionCount(), "2 + 2 pages of weight exceed the 3 the budget allows");
            assertEquals(1, cache.metrics().get(CacheCounter.EVICTIONS));
        }
        registrar.assertBalanced();
    }

    @Test
    void aQuarantinedRegionCountsAgainstTheBudgetAndExactlyOneIdleRegionMakesRoom() {
        for (Budget budget : new Budget[] {new Budget(Long.MAX_VALUE, 3), Budget.ofBytes(3 * PAGE)}) {
            RecordingRegistrar registrar = new RecordingRegistrar(); // one per budget: each run balances alone
            try (RegistrationCache cache = RegistrationCache.builder(registrar).budget(budget)
                    .deregistrationRetry(DeregistrationRetry.MANUAL).build()) {
                cache.acquire(BASE, PAGE, LOCAL_READ).close();
                registrar.deregisterFailures(r -> r.address() == BASE ? new RegistrationException("EBUSY", 16) : null);
                cache.invalidate(BASE, PAGE);
                assertEquals(1, cache.quarantined().size(), "its keys are live: it stays pinned and counted");
                cache.acquire(BASE + 2 * PAGE, PAGE, LOCAL_READ).close();
                cache.acquire(BASE + 4 * PAGE, PAGE, LOCAL_READ).close();
                try (Lease held = cache.acquire(BASE + 6 * PAGE, PAGE, LOCAL_READ)) { // 4 pinned, 2 of them idle
                    assertEquals(1, cache.metrics().get(CacheCounter.EVICTIONS), budget + ": one over, one evicted");
                    assertEquals(2, cache.regionCount());
                }
                registrar.deregisterFailures(r -> null);
                assertEquals(0, cache.retryQuarantined());
            }
            registrar.assertBalanced();
        }
    }

    @Test
    void evictIdleEvictsOnlyIdleRegions() {
        try (RegistrationCache cache = cache()) {
            Lease held = cache.acquire(BASE, PAGE, LOCAL_READ);
            cache.acquire(BASE + 2 * PAGE, PAGE, LOCAL_READ).close();
            assertEquals(1, cache.evictIdle());
            assertEquals(1, cache.regionCount());
            assertTrue(registrar.isLive(held.registration()));
            held.close();
        }
        registrar.assertBalanced();
    }

    @Test
    void enomemEvictsIdleRegionsAndRetriesOnce() {
        AtomicInteger failuresLeft = new AtomicInteger(1);
        registrar.failures((a, l, x) -> a == BASE + 10 * PAGE && failuresLeft.getAndDecrement() > 0
                ? RegistrationException.ENOMEM : 0);
        try (RegistrationCache cache = cache()) {
            cache.acquire(BASE, PAGE, LOCAL_READ).close();
            Lease l = cache.acquire(BASE + 10 * PAGE, PAGE, LOCAL_READ);
            l.close();
            assertEquals(1, cache.metrics().get(CacheCounter.ENOMEM_RECOVERIES));
            assertEquals(1, cache.metrics().get(CacheCounter.EVICTIONS), "the idle region made room");
        }
        registrar.assertBalanced();
    }

    @Test
    void persistentEnomemExplainsPinnedBytesBudgetAndMemlock() {
        registrar.setMemlockLimit(8L << 20);
        registrar.failures((a, l, x) -> a >= BASE + 10 * PAGE ? RegistrationException.ENOMEM : 0);
        try (RegistrationCache cache = RegistrationCache.builder(registrar).budget(Budget.ofBytes(64L << 20))
                .build()) {
            Lease held = cache.acquire(BASE, 3 * PAGE, LOCAL_READ);
            PinnedMemoryExhaustedException e = assertThrows(PinnedMemoryExhaustedException.class,
                    () -> cache.acquire(BASE + 10 * PAGE, PAGE, LOCAL_READ));
            assertEquals(RegistrationException.ENOMEM, e.errno());
            assertEquals(3 * PAGE, e.pinnedBytes());
            String m = e.getMessage();
            assertTrue(m.contains("12,288 bytes pinned"), m);
            assertTrue(m.contains("budget 67,108,864 bytes"), m);
            assertTrue(m.contains("RLIMIT_MEMLOCK is 8,388,608 bytes"), m);
            assertTrue(m.contains("ulimit -l"), m);
            held.close();
        }
        registrar.assertBalanced();
    }

    // ---------------------------------------------------------------- close

    @Test
    void closeDeregistersEverythingAndWaitsForLeases() {
        RegistrationCache cache = cache();
        cache.acquire(BASE, PAGE, LOCAL_READ).close();
        Lease held = cache.acquire(BASE + 4 * PAGE, PAGE, LOCAL_READ);
        CompletionStage<Void> closing = cache.closeAsync();
        assertFalse(closing.toCompletableFuture().isDone());
        assertEquals(1, registrar.deregisterCount());
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> cache.acquire(BASE, PAGE, LOCAL_READ));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
        assertTrue(e.getMessage().contains("0x100000"), e.getMessage());
        held.close();
        assertTrue(closing.toCompletableFuture().isDone());
        cache.close(); // idempotent
        registrar.assertBalanced();
    }

    @Test
    void closeDoomsInFlightRegistrations() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        registrar.duringRegister(() -> {
            entered.countDown();
            await(proceed);
        });
        RegistrationCache cache = cache();
        Future<Lease> acquiring = pool.submit(() -> cache.acquire(BASE, PAGE, LOCAL_READ));
        assertTrue(entered.await(5, TimeUnit.SECONDS));
        CompletionStage<Void> closing = cache.closeAsync();
        assertFalse(closing.toCompletableFuture().isDone());
        proceed.countDown();
        Exception e = assertThrows(Exception.class, () -> acquiring.get(5, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof IllegalStateException, String.valueOf(e.getCause()));
        closing.toCompletableFuture().get(5, TimeUnit.SECONDS);
        registrar.assertBalanced();
    }

    // ---------------------------------------------------------------- bad input

    @Test
    void badInputIsRejectedWithTheValueAndLeavesTheCacheUnchanged() {
        try (RegistrationCache cache = cache()) {
            cache.acquire(BASE, PAGE, LOCAL_READ).close();
            assertMessage(() -> cache.acquire(BASE, 0, LOCAL_READ), "length 0 must be > 0");
            assertMessage(() -> cache.acquire(BASE, -5, LOCAL_READ), "length -5 must be > 0");
            assertMessage(() -> cache.acquire(Long.MAX_VALUE - 10, 100, LOCAL_READ), "overflows");
            assertMessage(() -> cache.acquire(-4096, 100, LOCAL_READ), "address -4096");
            assertMessage(() -> cache.acquire(BASE, PAGE, 0), "access is empty (0)");
            assertMessage(() -> cache.acquire(BASE, PAGE, 0x100), "unknown bits 0x100");
            assertMessage(() -> cache.invalidate(BASE, 0), "length 0 must be > 0");
            assertMessage(() -> cache.invalidate(Long.MAX_VALUE, 2), "overflows");
            assertEquals(1, cache.regionCount());
            assertEquals(1, registrar.registerCount());
            assertEquals(0, registrar.deregisterCount());
            Lease l = cache.acquire(BASE, PAGE, LOCAL_READ);
            l.close();
            IllegalStateException twice = assertThrows(IllegalStateException.class, l::close);
            assertTrue(twice.getMessage().contains("already released"), twice.getMessage());
            cache.invalidateAndWait(BASE, PAGE);
            assertEquals(1, registrar.deregisterCount(), "the double release did not unbalance the count");
        }
        assertThrows(IllegalArgumentException.class, () -> RegistrationCache.builder(registrar).alignment(3000));
        assertThrows(IllegalArgumentException.class, () -> new Budget(0, 1));
        registrar.assertBalanced();
    }

    private static void assertMessage(Runnable call, String expected) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call::run);
        assertTrue(e.getMessage().contains(expected), () -> "'" + e.getMessage() + "' lacks '" + expected + "'");
    }

    // ---------------------------------------------------------------- leak detection

    @Test
    void leakedLeaseIsReportedWithItsAcquireStack() throws Exception {
        List<LeakReport> reports = new java.util.concurrent.CopyOnWriteArrayList<>();
        RegistrationCache cache = RegistrationCache.builder(registrar).leakDetection(true)
                .leakListener(reports::add).build();
        {
            leakOne(cache);
            cache.acquire(BASE + 8 * PAGE, PAGE, LOCAL_READ).close(); // released: never reported
            for (int i = 0; i < 50 && reports.isEmpty(); i++) {
                System.gc();
                Thread.sleep(20);
            }
            assertEquals(1, reports.size(), "exactly the leaked lease is reported");
            LeakReport r = reports.get(0);
            assertEquals(BASE, r.address());
            assertTrue(java.util.Arrays.stream(r.acquiredAt().getStackTrace())
                    .anyMatch(f -> f.getMethodName().equals("leakOne")), "the report carries the acquire stack");
            assertEquals(1, cache.metrics().get(CacheCounter.LEAKED_LEASES));
            CompletionStage<Void> closing = cache.closeAsync();
            assertFalse(closing.toCompletableFuture().isDone(),
                    "the leaked lease keeps its region registered, so close cannot complete");
        }
    }

    private static void leakOne(RegistrationCache cache) {
        cache.acquire(BASE, PAGE, LOCAL_READ);
    }
}
