package io.mrcache.core;

import static io.mrcache.core.Access.LOCAL_READ;
import static io.mrcache.core.Access.LOCAL_WRITE;
import static io.mrcache.core.Access.REMOTE_READ;
import static io.mrcache.core.Access.REMOTE_WRITE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.testing.RecordingRegistrar;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;

/**
 * The boundaries of the small parts, one by one: ranges that touch but do not overlap, requests that end exactly
 * at a region's end, the last byte below the top of user space, and the metrics and messages each path keeps.
 * Written to kill the mutants PIT found surviving ({@code ./mrcache mutation}); a catalogue of small cases,
 * hence its length.
 */
class EdgesTest extends CacheTestSupport {

    static Region region(long start, long length, int access) {
        return new Region(new Registration(start, length, access, 1, 1, 7, start), PAGE, 0);
    }

    // ---------------------------------------------------------------- AddressRange

    @Test
    void addressRangeBoundaries() {
        assertThrows(IllegalArgumentException.class, () -> AddressRange.checkedEnd("t", BASE, 0));
        assertEquals(BASE + 1, AddressRange.checkedEnd("t", BASE, 1));
        assertEquals(1, AddressRange.checkedEnd("t", 0, 1), "address 0 is not negative");
        assertThrows(IllegalArgumentException.class, () -> AddressRange.checkedEnd("t", -1, 1));
        long top = AddressRange.USER_SPACE_END;
        assertEquals(top, AddressRange.checkedEnd("t", top - 10, 10), "ending exactly at the top is fine");
        assertThrows(IllegalArgumentException.class, () -> AddressRange.checkedEnd("t", top - 10, 11));
        IllegalArgumentException atMax = assertThrows(IllegalArgumentException.class,
                () -> AddressRange.checkedEnd("t", 10, Long.MAX_VALUE - 10));
        assertTrue(atMax.getMessage().contains("ends at 0x7fffffffffffffff"), "the largest end still formed: "
                + atMax.getMessage());
        IllegalArgumentException past = assertThrows(IllegalArgumentException.class,
                () -> AddressRange.checkedEnd("t", 10, Long.MAX_VALUE - 9));
        assertTrue(past.getMessage().contains("overflows"), past.getMessage());
        assertEquals(8192, AddressRange.alignUp(4097, 4096));
        assertEquals(4096, AddressRange.alignUp(4096, 4096));
        assertEquals(4096, AddressRange.alignDown(8191, 4096));
    }

    // ---------------------------------------------------------------- PendingRegistration and Region ranges

    @Test
    void pendingRangesTouchingAreNotOverlapping() {
        PendingRegistration p = new PendingRegistration(BASE, BASE + PAGE, LOCAL_WRITE, List.of(), false);
        assertFalse(p.overlaps(BASE + PAGE, BASE + 2 * PAGE), "[ ) ( ): touching");
        assertFalse(p.overlaps(BASE - PAGE, BASE), "( ) [ ): touching");
        assertTrue(p.overlaps(BASE + PAGE - 1, BASE + PAGE));
        assertTrue(p.overlaps(BASE - 1, BASE + 1));
        assertTrue(p.serves(BASE, BASE + PAGE, LOCAL_WRITE, false), "exactly its range");
        assertFalse(p.serves(BASE - 1, BASE + PAGE, LOCAL_WRITE, false));
        assertFalse(p.serves(BASE, BASE + PAGE + 1, LOCAL_WRITE, false));
        assertFalse(p.serves(BASE, BASE + PAGE, LOCAL_WRITE | REMOTE_WRITE, false), "lacks the right");
        assertTrue(p.widerThan(BASE, BASE + PAGE - 1, LOCAL_WRITE));
        assertTrue(p.widerThan(BASE + 1, BASE + PAGE, LOCAL_WRITE));
        assertTrue(p.widerThan(BASE, BASE + PAGE, LOCAL_READ));
        assertFalse(p.widerThan(BASE, BASE + PAGE, LOCAL_WRITE));
    }

    @Test
    void regionServesExactlyItsRangeWithItsRights() {
        Region r = region(BASE, PAGE, LOCAL_WRITE | LOCAL_READ);
        assertTrue(r.serves(BASE, BASE + PAGE, LOCAL_READ, false));
        assertFalse(r.serves(BASE - 1, BASE + PAGE, LOCAL_READ, false));
        assertFalse(r.serves(BASE, BASE + PAGE + 1, LOCAL_READ, false));
        assertFalse(r.serves(BASE, BASE + PAGE, REMOTE_READ, false));
        Region remote = region(BASE, PAGE, LOCAL_WRITE | REMOTE_READ | REMOTE_WRITE);
        assertFalse(remote.serves(BASE, BASE + PAGE, LOCAL_WRITE | REMOTE_READ, false), "I6: equal remote rights");
        assertTrue(remote.serves(BASE, BASE + PAGE, LOCAL_WRITE | REMOTE_READ, true), "unless widened");
        assertTrue(r.toString().contains("live"), r.toString());
        assertTrue(r.retire());
        assertTrue(r.toString().contains("retired"), r.toString());
        CompletableFuture<Void> waiter = r.deregistration();
        assertSame(waiter, r.deregistration(), "one outcome for every waiter of an attempt");
        assertFalse(waiter.isDone());
        r.deregistered();
        assertTrue(waiter.isDone() && !waiter.isCompletedExceptionally(), "the waiter learns the keys are dead");
        assertTrue(r.toString().contains("deregistered"), r.toString());
        assertTrue(r.isDeregistered());
        assertTrue(r.deregistration().isDone(), "a later waiter finds it done");
        Region failed = region(BASE, PAGE, LOCAL_WRITE);
        failed.retire();
        CompletableFuture<Void> waited = failed.deregistration();
        CompletableFuture<Void> attempt = failed.startRetry();
        assertSame(waited, attempt, "the failed attempt's outcome is the one its waiters hold");
        attempt.completeExceptionally(new IllegalStateException("refused"));
        assertFalse(failed.isDeregistered(), "a failed attempt is not a deregistration");
        assertFalse(failed.deregistration().isDone(), "the retry has an outcome of its own");
        assertEquals(1, failed.failedDeregistrations());
        assertFalse(failed.isLive());
        Region unwatched = region(BASE, PAGE, LOCAL_WRITE);
        unwatched.retire();
        assertNull(unwatched.startRetry(), "nobody waited: no outcome was made");
        unwatched.deregistered();
        assertTrue(unwatched.isDeregistered());
    }

    @Test
    void forcedRetirementOfTheBrokenVariantClaimsOnce() {
        Region r = region(BASE, PAGE, LOCAL_WRITE);
        assertTrue(r.tryRetain(0) >= 0);
        assertTrue(r.forceRetireForFault(), "the first forced retirement claims, lease or not");
        assertFalse(r.forceRetireForFault(), "and only the first");
        assertFalse(r.isLive());
    }

    @Test
    void aBackedOffHitOnARegionRetiredMeanwhileIsLeftToTheBackOff() {
        Region r = region(BASE, PAGE, LOCAL_WRITE);
        assertTrue(r.retire(), "idle: the retirer claims");
        assertEquals(Region.NOT_RETAINED, r.tryRetainHit(0), "retired and claimed: nothing for the acquire to do");
        Region leased = region(BASE, PAGE, LOCAL_WRITE);
        int slot = leased.tryRetainHit(1);
        assertTrue(slot >= 0);
        assertFalse(leased.retire());
        assertEquals(Region.NOT_RETAINED, leased.tryRetainHit(2), "still leased on stripe 1");
        assertTrue(leased.release(slot), "the last release claims the deregistration");
        assertEquals(1, leased.hits(), "the backed-off hits were not counted");
    }

    // ---------------------------------------------------------------- RegionIndex

    @Test
    void indexLookupsAtTheBoundaries() {
        Region a = region(BASE, PAGE, LOCAL_WRITE);
        Region b = region(BASE + 2 * PAGE, PAGE, LOCAL_WRITE | LOCAL_READ);
        RegionIndex idx = RegionIndex.EMPTY.withAll(List.of(a, b));
        assertSame(a, idx.findServing(BASE, BASE + PAGE, LOCAL_WRITE, false));
        assertSame(a, idx.findServingUnchecked(BASE, BASE + PAGE, LOCAL_WRITE, false));
        assertNull(idx.findServing(BASE, BASE + PAGE + 1, LOCAL_WRITE, false));
        assertNull(idx.findServingUnchecked(BASE, BASE + PAGE + 1, LOCAL_WRITE, false));
        assertNull(idx.findServing(BASE - 1, BASE + PAGE, LOCAL_WRITE, false));
        assertNull(idx.findServingUnchecked(BASE + PAGE, BASE + 2 * PAGE, LOCAL_WRITE, false), "the gap");
        assertNull(idx.findServing(BASE, BASE + PAGE, LOCAL_READ, false), "a lacks the right");
        assertSame(b, idx.findServing(BASE + 2 * PAGE + 5, BASE + 3 * PAGE, LOCAL_READ, false));
        assertFalse(idx.overlapsAny(BASE + PAGE, BASE + 2 * PAGE), "between, touching both");
        assertTrue(idx.overlapsAny(BASE + PAGE - 1, BASE + PAGE));
        assertTrue(idx.overlapsAny(BASE + 2 * PAGE, BASE + 2 * PAGE + 1));
        assertFalse(idx.overlapsAny(BASE + 3 * PAGE, BASE + 4 * PAGE));
        assertEquals(List.of(), idx.overlapping(BASE + PAGE, BASE + 2 * PAGE));
        assertEquals(List.of(b, a), idx.overlapping(BASE, BASE + 3 * PAGE));
        a.retire();
        assertNull(idx.findServing(BASE, BASE + PAGE, LOCAL_WRITE, false), "a retired region is not served");
        assertSame(a, idx.findServingUnchecked(BASE, BASE + PAGE, LOCAL_WRITE, false), "unchecked leaves that to CAS");
        assertSame(idx, idx.with(null, List.of(region(BASE, PAGE, LOCAL_WRITE))), "removing an absent region");
        RegionIndex onlyB = idx.with(null, List.of(a));
        assertEquals(1, onlyB.size());
        assertTrue(onlyB.contains(b) && !onlyB.contains(a));
        assertFalse(onlyB.overlapsAny(BASE, BASE + PAGE), "the running maximum was rebuilt");
        assertTrue(idx.toString().contains("0x100000"), idx.toString());
        assertSame(RegionIndex.EMPTY, onlyB.with(null, List.of(b)));
    }

    @Test
    void aLongRegionBeforeShortOnesIsFoundThroughTheRunningMaximum() {
        Region longOne = region(BASE, 8 * PAGE, LOCAL_WRITE);
        Region shortOne = region(BASE + PAGE, PAGE, LOCAL_READ);
        RegionIndex idx = RegionIndex.EMPTY.withAll(List.of(shortOne, longOne));
        assertSame(longOne, idx.findServing(BASE + 4 * PAGE, BASE + 5 * PAGE, LOCAL_WRITE, false));
        assertSame(longOne, idx.findServingUnchecked(BASE + 4 * PAGE, BASE + 8 * PAGE, LOCAL_WRITE, false));
        assertNull(idx.findServingUnchecked(BASE + 4 * PAGE, BASE + 8 * PAGE + 1, LOCAL_WRITE, false));
        assertTrue(idx.overlapsAny(BASE + 8 * PAGE - 1, BASE + 9 * PAGE));
        assertFalse(idx.overlapsAny(BASE + 8 * PAGE, BASE + 9 * PAGE));
        assertEquals(List.of(longOne), idx.overlapping(BASE + 3 * PAGE, BASE + 4 * PAGE));
    }

    // ---------------------------------------------------------------- the budget's settled counts

    /**
     * A walk evicts for the settled registrations only: one another thread has registered but not yet published
     * (its victims not yet chosen) must not count as excess, or the walk evicts a region for it and then its own
     * publication evicts another. Exactly at the budget nothing exceeds it; one byte or one region over does.
     */
    @Test
    void theBudgetsExcessLeavesOutRegistrationsNotYetSettled() {
        CacheMetrics m = new CacheMetrics();
        Budget atFour = new Budget(4 * PAGE, 4);
        for (int i = 0; i < 4; i++) {
            m.registeredUnsettled(PAGE);
            m.settled(PAGE);
        }
        assertEquals(0, m.settledExcessBytes(atFour), "exactly at the budget");
        assertEquals(0, m.settledExcessRegions(atFour));
        assertFalse(m.settledExceed(atFour));
        m.registeredUnsettled(2 * PAGE); // another thread's, between its register call and its publication
        assertEquals(6 * PAGE, m.pinnedBytes.get(), "it pins already");
        assertEquals(0, m.settledExcessBytes(atFour), "not settled: not excess");
        assertEquals(0, m.settledExcessRegions(atFour));
        assertFalse(m.settledExceed(atFour));
        m.settled(2 * PAGE);
        assertEquals(2 * PAGE, m.settledExcessBytes(atFour));
        assertEquals(1, m.settledExcessRegions(atFour));
        assertTrue(m.settledExceed(atFour));
        assertFalse(m.settledExceed(new Budget(6 * PAGE, 5)), "exactly at a budget of 6 pages and 5 regions");
        assertEquals(1, m.settledExcessBytes(new Budget(6 * PAGE - 1, 5)));
        assertTrue(m.settledExceed(new Budget(6 * PAGE - 1, 5)), "one byte over");
        assertEquals(1, m.settledExcessRegions(new Budget(6 * PAGE, 4)));
        assertTrue(m.settledExceed(new Budget(6 * PAGE, 4)), "one region over");
    }

    @Test
    void aSettledCountBelowZeroIsNoExcessEvenAgainstUnboundedBytes() {
        // the unsettled part is read after the pinned count, so a reader can see more unsettled than pinned (a
        // registration lands between its reads): here, one counted unsettled and already deregistered
        CacheMetrics m = new CacheMetrics();
        m.registeredUnsettled(3 * PAGE);
        m.deregistered(3 * PAGE);
        Budget regionsOnly = new Budget(Long.MAX_VALUE, 4);
        assertEquals(0, m.settledExcessBytes(regionsOnly), "a negative count minus Long.MAX_VALUE must not wrap to an excess");
        assertEquals(0, m.settledExcessRegions(regionsOnly));
        assertEquals(0, m.settledExcessRegions(new Budget(PAGE, Integer.MAX_VALUE)));
        assertFalse(m.settledExceed(regionsOnly));
    }

    // ---------------------------------------------------------------- the cache's metrics, messages and getters

    @Test
    void invalidationMetricsCountUnlinkedRegionsAndDoomedRegistrations() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar).build()) {
            cache.acquire(BASE, PAGE, LOCAL_WRITE).close();
            cache.acquire(BASE + 2 * PAGE, PAGE, LOCAL_WRITE).close();
            cache.invalidateAndWait(BASE, 3 * PAGE);
            MetricsSnapshot m = cache.metrics();
            assertEquals(1, m.get(CacheCounter.INVALIDATIONS));
            assertEquals(2, m.get(CacheCounter.INVALIDATED_REGIONS));
            cache.invalidateAndWait(BASE, 3 * PAGE);
            assertEquals(1, cache.metrics().get(CacheCounter.INVALIDATIONS), "nothing left: not counted");
            assertEquals(0, cache.retiringCount());
            assertEquals(0, cache.inFlightCount());
            assertEquals(4096, cache.alignment());
            assertEquals(Budget.UNLIMITED, cache.budget());
            assertFalse(cache.isClosed());
            assertTrue(cache.toString().contains("regions=0"), cache.toString());
        }
        registrar.assertBalanced();
    }

    @Test
    void hitsOfARetiredButLeasedRegionAppearInTheMetrics() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar).build()) {
            cache.acquire(BASE, PAGE, LOCAL_WRITE).close();
            Lease held = cache.acquire(BASE, PAGE, LOCAL_WRITE); // a hit
            cache.invalidate(BASE, PAGE); // retired, still leased: its hits live in retiring
            assertEquals(1, cache.metrics().get(CacheCounter.HITS));
            assertEquals(1, cache.retiringCount());
            held.close();
            assertEquals(1, cache.metrics().get(CacheCounter.HITS), "harvested at deregistration");
            assertTrue(cache.registrations().isEmpty());
        }
    }

    @Test
    void registrationsListsWhatIsPublished() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar).build()) {
            Registration r;
            try (Lease l = cache.acquire(BASE, PAGE, LOCAL_WRITE)) {
                r = l.registration();
            }
            assertEquals(List.of(r), cache.registrations());
            cache.close();
            assertTrue(cache.isClosed());
        }
    }

    @Test
    void aCustomAlignmentWidensLocalRegions() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar).alignment(8192).build()) {
            try (Lease l = cache.acquire(BASE + 100, 10, LOCAL_WRITE)) {
                assertEquals(BASE, l.registration().address());
                assertEquals(8192, l.registration().length());
            }
            assertEquals(8192, cache.alignment());
        }
        assertThrows(IllegalArgumentException.class, () -> RegistrationCache.builder(registrar).alignment(0));
        assertThrows(IllegalArgumentException.class, () -> RegistrationCache.builder(registrar).alignment(-4096));
        assertThrows(IllegalArgumentException.class, () -> RegistrationCache.builder(registrar).alignment(Long.MIN_VALUE),
                "one bit set, but negative");
        assertThrows(IllegalArgumentException.class, () -> RegistrationCache.builder(registrar).alignment(3));
        assertNotNull(RegistrationCache.builder(registrar).alignment(1).clock(System::nanoTime)
                .withDeliberateBug(CacheFault.SKIP_UNLINK));
    }

    /**
     * The deliberately broken variant {@link CacheFault#EVICT_LEASED} (which the injector and the model checker
     * must catch) deregisters a region whose lease is held when the policy chooses it; the cache never does (H5).
     */
    @Test
    void onlyTheLeasedEvictionVariantDeregistersARegionWhoseLeaseIsHeld() {
        for (boolean broken : new boolean[] {false, true}) {
            RegistrationCache.Builder b = RegistrationCache.builder(registrar).budget(new Budget(Long.MAX_VALUE, 1));
            boolean deadWhileLeased;
            try (RegistrationCache cache = (broken ? b.withDeliberateBug(CacheFault.EVICT_LEASED) : b).build()) {
                try (Lease first = cache.acquire(BASE, PAGE, LOCAL_WRITE);
                        Lease second = cache.acquire(BASE + 8 * PAGE, PAGE, LOCAL_WRITE)) { // over a budget of one
                    deadWhileLeased = !registrar.isLive(first.registration())
                            || !registrar.isLive(second.registration());
                }
            }
            assertEquals(broken, deadWhileLeased, broken ? "the variant evicts a leased region"
                    : "a leased region stays registered over the budget");
        }
    }

    @Test
    void theExhaustionMessageNamesTheNumbers() {
        registrar.setMemlockLimit(65536);
        try (RegistrationCache cache = RegistrationCache.builder(registrar).budget(new Budget(1L << 20, 16)).build()) {
            Lease held = cache.acquire(BASE, 2 * PAGE, LOCAL_WRITE); // leased: eviction cannot free it
            registrar.failures((a, l, x) -> RegistrationException.ENOMEM);
            PinnedMemoryExhaustedException e = assertThrows(PinnedMemoryExhaustedException.class,
                    () -> cache.acquire(BASE + 4 * PAGE, PAGE, LOCAL_WRITE));
            assertTrue(e.getMessage().contains("registering 4,096 bytes at 0x104000"), e.getMessage());
            assertTrue(e.getMessage().contains("evicting 0 idle regions"), e.getMessage());
            assertTrue(e.getMessage().contains("8,192 bytes pinned in 1 regions"), e.getMessage());
            assertTrue(e.getMessage().contains("budget 1,048,576 bytes, 16 regions"), e.getMessage());
            assertTrue(e.getMessage().contains("RLIMIT_MEMLOCK is 65,536 bytes"), e.getMessage());
            assertEquals(8192, e.pinnedBytes());
            registrar.failures((a, l, x) -> 0);
            held.close();
        }
        try (RegistrationCache cache = RegistrationCache.builder(registrar).build()) {
            registrar.setMemlockLimit(-1);
            registrar.failures((a, l, x) -> RegistrationException.ENOMEM);
            PinnedMemoryExhaustedException e = assertThrows(PinnedMemoryExhaustedException.class,
                    () -> cache.acquire(BASE, PAGE, LOCAL_WRITE));
            assertTrue(e.getMessage().contains("budget unlimited bytes, unlimited regions"), e.getMessage());
            assertTrue(e.getMessage().contains("unknown to this registrar"), e.getMessage());
            registrar.failures((a, l, x) -> 0);
        }
    }

    @Test
    void aResultWithFewerRightsThanRequestedIsRefused() {
        Registrar lessRights = new ForwardingRegistrar(registrar) {
            @Override
            public Registration register(long address, long length, int access) {
                return super.register(address, length, LOCAL_READ); // drops the write right
            }
        };
        try (RegistrationCache cache = RegistrationCache.builder(lessRights).build()) {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> cache.acquire(BASE, PAGE, LOCAL_WRITE));
            assertTrue(e.getMessage().contains("must cover the range with the rights"), e.getMessage());
            assertEquals(1, cache.metrics().get(CacheCounter.REGISTRATION_FAILURES));
        }
        registrar.assertBalanced();
    }

    @Test
    void aStageThatFailsNamesOnlyTheRegistrationsStillLive() {
        Registration ok = new Registration(BASE, PAGE, LOCAL_WRITE, 1, 1, 7, 1);
        Registration bad = new Registration(BASE + PAGE, PAGE, LOCAL_WRITE, 2, 2, 7, 2);
        CompletableFuture<Void> done = CompletableFuture.completedFuture(null);
        CompletableFuture<Void> failed = new CompletableFuture<>();
        failed.completeExceptionally(DeregistrationException.of(bad, new RegistrationException("EBUSY", 16)));
        CompletableFuture<Void> stage = Stages.allDeregistered(() -> "invalidate [x)", List.of(done, failed))
                .toCompletableFuture();
        CompletionException e = assertThrows(CompletionException.class, stage::join);
        DeregistrationException de = (DeregistrationException) e.getCause();
        assertEquals(List.of(bad), de.stillRegistered());
        assertEquals(16, de.errno());
        assertTrue(de.getMessage().startsWith("invalidate [x) did not complete"), de.getMessage());
        assertSame(failed.exceptionNow(), de.getCause(), "the failure itself, not the CompletionException around it");
        assertSame(Stages.DONE, Stages.allDeregistered(() -> "nothing", List.of()));
        assertSame(Stages.DONE, Stages.allDeregistered(() -> "all ok", List.of(done)), "done already: no allocation");
        CompletableFuture<Void> running = new CompletableFuture<>();
        CompletableFuture<Void> waiting = Stages.allDeregistered(() -> "one running", List.of(done, running))
                .toCompletableFuture();
        assertFalse(waiting.isDone(), "waits for the running deregistration");
        running.complete(null);
        assertTrue(waiting.isDone() && !waiting.isCompletedExceptionally());
    }

    /** A clock the test moves by hand, counting its reads (a timed registration reads it twice). */
    private static final class HandClock implements LongSupplier {
        long now;
        int reads;

        @Override
        public long getAsLong() {
            reads++;
            return now;
        }
    }

    @Test
    void registrationLatencyComesFromTheClock() {
        long[] now = {0};
        try (RegistrationCache cache = RegistrationCache.builder(registrar).clock(() -> now[0]).build()) {
            registrar.duringRegister(() -> now[0] += 7_000);
            cache.acquire(BASE, PAGE, LOCAL_WRITE).close();
            assertEquals(7_000, cache.metrics().registrationNanos().max(), 10);
            assertEquals(PAGE, cache.metrics().registrationBytes().max(), 4);
        }
    }

    @Test
    void aRegistrationTheClockReadsAsTakingNoTimeIsRecordedAsTimed() {
        long[] now = {0};
        try (RegistrationCache cache = RegistrationCache.builder(registrar).clock(() -> now[0]).build()) {
            cache.acquire(BASE, PAGE, LOCAL_WRITE).close(); // a clock too coarse to see it: 0 ns, still a sample
            assertEquals(1, cache.metrics().registrationNanos().count(), "0 ns is a reading, not a registration left untimed");
            assertEquals(0, cache.metrics().registrationNanos().max());
        }
    }

    @Test
    void aRegistrationOfExactlyTheFastBoundIsNotFastSoTheNextIsTimedToo() {
        HandClock clock = new HandClock();
        try (RegistrationCache cache = RegistrationCache.builder(registrar).clock(clock).build()) {
            registrar.duringRegister(() -> clock.now += CacheMetrics.FAST_NANOS); // at the bound, not under it
            for (int i = 0; i < 3; i++) {
                cache.acquire(BASE + i * 8 * PAGE, PAGE, LOCAL_WRITE).close();
            }
            assertEquals(6, clock.reads, "each of the three was timed: two clock reads each");
        }
    }

    @Test
    void fastRegistrationsAreTimedOneInSixtyFourAndCountedInFull() {
        HandClock clock = new HandClock();
        try (RegistrationCache cache = RegistrationCache.builder(registrar).clock(clock).build()) {
            registrar.duringRegister(() -> clock.now += 10); // a registrar faster than a microsecond
            for (int i = 0; i < 129; i++) {
                cache.acquire(BASE + i * PAGE, PAGE, LOCAL_WRITE).close();
            }
            assertEquals(6, clock.reads, "the first, the 65th and the 129th registration were timed");
            assertEquals(129, cache.metrics().registrationNanos().count(), "each timed one stands for the others");
            assertEquals(129, cache.metrics().registrationBytes().count(), "sizes need no clock: all recorded");
            registrar.duringRegister(() -> clock.now += 5_000); // now a slow one: every registration is timed again
            for (int i = 0; i < 64; i++) { // the sampled one finds the registrar slow
                cache.acquire(BASE + (200 + i) * PAGE, PAGE, LOCAL_WRITE).close();
            }
            int before = clock.reads;
            cache.acquire(BASE + 300 * PAGE, PAGE, LOCAL_WRITE).close();
            cache.acquire(BASE + 301 * PAGE, PAGE, LOCAL_WRITE).close();
            assertEquals(before + 4, clock.reads);
            assertEquals(5_000, cache.metrics().registrationNanos().max(), 10);
        }
    }

    @Test
    void aStripeMoveDuringARegistrationKeepsTheOwnersLeaseOnTheStripeItsLeaseRecords() {
        RegistrationCache cache = RegistrationCache.builder(registrar).build();
        // the acquiring thread is moved to another lease cell between choosing its stripe and the new region
        registrar.duringRegister(LeaseStripes::contended);
        Lease l = cache.acquire(BASE, PAGE, LOCAL_WRITE);
        registrar.duringRegister(() -> { });
        l.close();
        cache.invalidate(BASE, PAGE);
        assertEquals(List.of(), registrar.live(), "the release balanced the lease: the region was idle");
        assertEquals(0, cache.retiringCount());
        cache.close(java.time.Duration.ofSeconds(5)); // a lease counted on the wrong cell would hold close
    }

    @Test
    void regionsLeavingTheIndexLeaveTheEvictionPolicy() {
        // one left behind would count against the policy's maximum and crowd out a live region
        RegistrationCache cache = RegistrationCache.builder(registrar).budget(new Budget(Long.MAX_VALUE, 16)).build();
        cache.acquire(BASE, PAGE, LOCAL_WRITE).close();
        cache.acquire(BASE + 8 * PAGE, PAGE, LOCAL_WRITE).close();
        assertEquals(2, cache.policySizeForTest());
        cache.invalidateAndWait(BASE + 8 * PAGE, PAGE);
        assertEquals(1, cache.policySizeForTest(), "the invalidated region left");
        cache.acquire(BASE + PAGE / 2, PAGE, LOCAL_WRITE).close(); // overlapping: one merged region supersedes it
        assertEquals(1, cache.metrics().get(CacheCounter.MERGES));
        assertEquals(1, cache.policySizeForTest(), "the superseded region left");
        cache.close();
        assertEquals(0, cache.policySizeForTest(), "close took the rest");
    }

    /** A cache bounded to {@code regions}, in an array a registrar's hook can reach before it exists. */
    private RegistrationCache[] boundedTo(int regions) {
        return new RegistrationCache[] {
            RegistrationCache.builder(registrar).budget(new Budget(Long.MAX_VALUE, regions)).build()};
    }

    /** Dooms the first registration of {@code cache}: an invalidation of {@code [from, from + length)} during it. */
    private void doomFirstRegistration(RegistrationCache[] cache, long from, long length) {
        int[] calls = {0};
        registrar.duringRegister(() -> {
            if (++calls[0] == 1) {
                cache[0].invalidate(from, length); // the free lands mid-registration: the entry is doomed
            }
        });
    }

    @Test
    void aPublicationDiscardedAfterThePolicyAdmittedItTakesItsRegionOutOfThePolicy() {
        // the policy learns of a region before the cache's lock; a discard under it must undo that, or the policy
        // would keep a retired region, counted against its maximum for good
        RegistrationCache[] cache = boundedTo(16);
        cache[0].acquire(BASE + 8 * PAGE, PAGE, LOCAL_WRITE).close();
        doomFirstRegistration(cache, BASE, PAGE);
        cache[0].acquire(BASE, PAGE, LOCAL_WRITE).close(); // discarded once, then registered again and published
        assertEquals(1, cache[0].metrics().get(CacheCounter.DISCARDED_IN_FLIGHT));
        assertEquals(2, cache[0].regionCount());
        assertEquals(2, cache[0].policySizeForTest(), "the discarded region left the policy");
        cache[0].close();
        registrar.assertBalanced();
    }

    @Test
    void aDiscardedMergeLeavesTheRegionsItWouldHaveSupersededInThePolicy() {
        // a merge's superseded regions leave the policy only once retired; were they taken out with the admission,
        // a discarded merge would leave them cached and never evicted
        RegistrationCache[] cache = boundedTo(16);
        cache[0].acquire(BASE, PAGE, LOCAL_WRITE).close();
        doomFirstRegistration(cache, BASE + PAGE, PAGE); // overlaps the merged range, not the region
        int[] calls = {0};
        registrar.failures((a, l, x) -> ++calls[0] == 2 ? RegistrationException.EINVAL : 0); // the retry fails
        assertThrows(RegistrationException.class, () -> cache[0].acquire(BASE + PAGE / 2, PAGE, LOCAL_WRITE));
        assertEquals(1, cache[0].metrics().get(CacheCounter.DISCARDED_IN_FLIGHT));
        assertEquals(0, cache[0].metrics().get(CacheCounter.MERGES));
        assertEquals(1, cache[0].regionCount(), "the region the merge would have superseded is still published");
        assertEquals(1, cache[0].policySizeForTest(), "and in the policy");
        cache[0].close();
        registrar.assertBalanced();
    }

    @Test
    void theVictimsOfADiscardedPublicationsAdmissionAreUnlinkedAndDeregistered() {
        // Caffeine may evict as the policy admits a region that is then discarded: its victims, retired and
        // claimed already, must still leave the index and be deregistered, or their keys would outlive them
        RegistrationCache[] cache = boundedTo(1);
        Lease held = cache[0].acquire(BASE + 8 * PAGE, PAGE, LOCAL_WRITE);
        Registration first = held.registration();
        held.close();
        cache[0].acquire(BASE + 8 * PAGE, PAGE, LOCAL_WRITE).close(); // two releases: more hits than the newcomer
        doomFirstRegistration(cache, BASE, PAGE);
        Lease lease = cache[0].acquire(BASE, PAGE, LOCAL_WRITE);
        assertEquals(1, cache[0].metrics().get(CacheCounter.DISCARDED_IN_FLIGHT));
        assertEquals(1, cache[0].metrics().get(CacheCounter.EVICTIONS), "the first region was the admission's victim");
        assertFalse(registrar.isLive(first), "the victim was deregistered");
        assertEquals(1, cache[0].regionCount(), "only the new region is published");
        assertEquals(List.of(lease.registration()), registrar.live());
        lease.close();
        cache[0].close();
        registrar.assertBalanced();
    }

    @Test
    void regionsTheWalkOrAnEnomemRecoveryEvictsLeaveTheEvictionPolicy() {
        // Caffeine bounds the bytes here; the cache's own walk keeps the region count, and an ENOMEM recovery
        // evicts whatever is idle: victims of either must leave the policy as Caffeine's own do
        RegistrationCache cache = RegistrationCache.builder(registrar).budget(new Budget(1L << 30, 2)).build();
        for (int i = 0; i < 3; i++) {
            cache.acquire(BASE + 8L * i * PAGE, PAGE, LOCAL_WRITE).close();
        }
        assertEquals(1, cache.metrics().get(CacheCounter.EVICTIONS));
        assertEquals(2, cache.regionCount());
        assertEquals(2, cache.policySizeForTest(), "the walk's victim left the policy");
        int[] calls = {0};
        registrar.failures((a, l, x) -> ++calls[0] == 1 ? RegistrationException.ENOMEM : 0);
        Lease lease = cache.acquire(BASE + 64 * PAGE, PAGE, LOCAL_WRITE); // evicts both idle regions, retries
        assertEquals(1, cache.metrics().get(CacheCounter.ENOMEM_RECOVERIES));
        assertEquals(1, cache.regionCount());
        assertEquals(1, cache.policySizeForTest(), "the recovery's victims left the policy");
        lease.close();
        cache.close();
    }

    @Test
    void countingTheRetiringRegionsLeavesTheLockFree() throws Exception {
        try (RegistrationCache cache = RegistrationCache.builder(registrar).build()) {
            assertEquals(0, cache.retiringCount());
            // another thread's miss needs the lock: it would wait forever if the count had kept it
            CompletableFuture.runAsync(() -> cache.acquire(BASE, PAGE, LOCAL_WRITE).close())
                    .get(10, java.util.concurrent.TimeUnit.SECONDS);
        }
    }

    /** Runs {@code work} with the calling thread's leases counted in {@code cell}. */
    static <T> T onCell(int cell, java.util.concurrent.Callable<T> work) throws Exception {
        long id = Thread.currentThread().threadId();
        while (LeaseStripes.of(id) != cell) {
            LeaseStripes.contended(id); // moves the thread to the next cell
        }
        return work.call();
    }

    @Test
    void aJoinerWhoseLeaseLandsInCellZeroKeepsIt() throws Exception {
        RegistrationCache cache = RegistrationCache.builder(registrar).build();
        java.util.concurrent.CountDownLatch entered = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch proceed = new java.util.concurrent.CountDownLatch(1);
        holdFirstRegister(entered, proceed);
        var owner = pool.submit(() -> onCell(1, () -> cache.acquire(BASE, PAGE, LOCAL_WRITE)));
        await(entered);
        var joiner = pool.submit(() -> onCell(0, () -> cache.acquire(BASE, PAGE, LOCAL_WRITE)));
        waitFor(() -> cache.metrics().get(CacheCounter.SINGLE_FLIGHT_JOINS) == 1);
        proceed.countDown();
        Lease joined = joiner.get(10, java.util.concurrent.TimeUnit.SECONDS);
        Lease first = owner.get(10, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(first.registration(), joined.registration(), "the owner's registration");
        assertEquals(0, cache.metrics().get(CacheCounter.HITS), "the joiner's lease in cell 0 counted once");
        joined.close();
        first.close();
        cache.close(java.time.Duration.ofSeconds(5)); // a lease taken in cell 0 and then dropped would hold close
    }

    @Test
    void aClosedCacheNamesTheRequestItRefuses() {
        RegistrationCache cache = RegistrationCache.builder(registrar).build();
        cache.close();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> cache.acquire(BASE, PAGE, LOCAL_WRITE));
        assertTrue(e.getMessage().startsWith("acquire(0x100000, 4096) on a closed RegistrationCache"), e.getMessage());
    }

    @Test
    void joinersOfARegistrationThatDoesNotCoverItsRequestFailToo() throws Exception {
        java.util.concurrent.CountDownLatch entered = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch proceed = new java.util.concurrent.CountDownLatch(1);
        holdFirstRegister(entered, proceed);
        Registrar shortChanging = new ForwardingRegistrar(registrar) {
            @Override
            public Registration register(long address, long length, int access) {
                return super.register(address, length - 1, access);
            }
        };
        try (RegistrationCache cache = RegistrationCache.builder(shortChanging).build()) {
            java.util.concurrent.Future<Lease> owner = pool.submit(() -> cache.acquire(BASE, PAGE, LOCAL_WRITE));
            assertTrue(entered.await(5, java.util.concurrent.TimeUnit.SECONDS));
            java.util.concurrent.Future<Lease> joiner = pool.submit(() -> cache.acquire(BASE, 100, LOCAL_WRITE));
            waitFor(() -> cache.metrics().get(CacheCounter.SINGLE_FLIGHT_JOINS) == 1);
            proceed.countDown();
            java.util.concurrent.ExecutionException o = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> owner.get(5, java.util.concurrent.TimeUnit.SECONDS));
            java.util.concurrent.ExecutionException j = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> joiner.get(5, java.util.concurrent.TimeUnit.SECONDS));
            assertSame(o.getCause(), j.getCause(), "the joiner sees the owner's exception");
        }
        registrar.assertBalanced();
    }

    @Test
    void invalidateAndWaitRethrowsAFailedDeregistration() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar)
                .deregistrationRetry(DeregistrationRetry.MANUAL).build()) {
            cache.acquire(BASE, PAGE, LOCAL_WRITE).close();
            registrar.deregisterFailures(r -> new RegistrationException("EBUSY", 16));
            DeregistrationException e = assertThrows(DeregistrationException.class,
                    () -> cache.invalidateAndWait(BASE, PAGE));
            assertEquals(16, e.errno());
            registrar.deregisterFailures(r -> null);
            assertEquals(0, cache.retryQuarantined());
        }
        registrar.assertBalanced();
    }

    @Test
    void anInvalidationThatOnlyDoomsAnInFlightRegistrationIsCounted() throws Exception {
        java.util.concurrent.CountDownLatch entered = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch proceed = new java.util.concurrent.CountDownLatch(1);
        holdFirstRegister(entered, proceed);
        try (RegistrationCache cache = RegistrationCache.builder(registrar).build()) {
            java.util.concurrent.Future<Lease> acquiring = pool.submit(() -> cache.acquire(BASE, PAGE, LOCAL_WRITE));
            assertTrue(entered.await(5, java.util.concurrent.TimeUnit.SECONDS));
            cache.invalidate(BASE, PAGE);
            MetricsSnapshot m = cache.metrics();
            assertEquals(1, m.get(CacheCounter.INVALIDATIONS), "a doomed registration counts");
            assertEquals(0, m.get(CacheCounter.INVALIDATED_REGIONS), "but no region was unlinked");
            cache.invalidate(BASE, PAGE);
            assertEquals(1, cache.metrics().get(CacheCounter.INVALIDATIONS), "doomed once, counted once");
            proceed.countDown();
            acquiring.get(5, java.util.concurrent.TimeUnit.SECONDS).close();
        }
        registrar.assertBalanced();
    }

    @Test
    void aByteBudgetEvictsJustEnough() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar).budget(Budget.ofBytes(4 * PAGE)).build()) {
            cache.acquire(BASE, 2 * PAGE, LOCAL_WRITE).close();
            cache.acquire(BASE + 4 * PAGE, 2 * PAGE, LOCAL_WRITE).close();
            assertEquals(0, cache.metrics().get(CacheCounter.EVICTIONS), "at the budget, not over it");
            cache.acquire(BASE + 8 * PAGE, PAGE, LOCAL_WRITE).close(); // 5 pages: one region must go
            long pinned = cache.pinnedBytes();
            assertTrue(pinned >= 3 * PAGE && pinned <= 4 * PAGE, "within the budget, not emptied: " + pinned);
            assertEquals(0, cache.metrics().get(CacheCounter.BUDGET_OVERRUNS), "eviction succeeded");
        }
        registrar.assertBalanced();
    }

    @Test
    void supersededRegionsLeaveThePolicySoTheyDoNotCountAgainstTheBudget() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar).budget(Budget.ofBytes(3 * PAGE)).build()) {
            cache.acquire(BASE, PAGE, LOCAL_WRITE).close();
            cache.acquire(BASE, 2 * PAGE, LOCAL_WRITE).close(); // merges, superseding the first
            cache.acquire(BASE + 5 * PAGE, PAGE, LOCAL_WRITE).close(); // 3 pages live: exactly the budget
            assertEquals(2, cache.regionCount());
            assertEquals(0, cache.metrics().get(CacheCounter.EVICTIONS));
        }
        registrar.assertBalanced();
    }

    @Test
    void aLeasedVictimIsWithdrawnAndEvictedOnceIdle() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar).budget(new Budget(Long.MAX_VALUE, 1))
                .build()) {
            Lease a = cache.acquire(BASE, PAGE, LOCAL_WRITE);
            Lease b = cache.acquire(BASE + 4 * PAGE, PAGE, LOCAL_WRITE); // over the budget of one: a is leased
            try { // released whatever the assertions say: close would wait for them
                assertTrue(cache.metrics().get(CacheCounter.EVICTIONS_WITHDRAWN) >= 1
                        || cache.metrics().get(CacheCounter.BUDGET_OVERRUNS) >= 1, cache.metrics().format());
                assertTrue(cache.metrics().get(CacheCounter.EVICTIONS_WITHDRAWN) >= 1, "the policy's choice was leased");
                assertEquals(2, cache.regionCount(), "leased regions are never evicted");
            } finally {
                b.close();
                a.close();
            }
            assertEquals(1, cache.regionCount(), "back within the budget once idle");
            assertEquals(1, cache.metrics().get(CacheCounter.EVICTIONS));
            try (Lease again = cache.acquire(BASE, PAGE, LOCAL_WRITE)) {
                assertEquals(BASE, again.registration().address());
            }
        }
        registrar.assertBalanced();
    }

    @Test
    void aCacheThatOwnsItsRegistrarClosesItLastAndNotWhileKeysAreLive() {
        RegistrationCache cache = RegistrationCache.builder(registrar).ownsRegistrar(true).build();
        Lease l = cache.acquire(BASE, PAGE, LOCAL_WRITE);
        CompletableFuture<Void> closing = cache.closeAsync().toCompletableFuture();
        assertFalse(registrar.isClosed(), "a lease is held: the registration is live");
        l.close();
        assertTrue(closing.isDone() && registrar.isClosed(), "closed after the last deregistration");
        assertTrue(registrar.violations().isEmpty(), registrar.violations().toString());

        RecordingRegistrar failing = new RecordingRegistrar();
        RegistrationCache refused = RegistrationCache.builder(failing).ownsRegistrar(true)
                .deregistrationRetry(DeregistrationRetry.MANUAL).build();
        refused.acquire(BASE, PAGE, LOCAL_WRITE).close();
        failing.deregisterFailures(r -> new RegistrationException("EBUSY", 16));
        assertThrows(DeregistrationException.class, refused::close);
        assertFalse(failing.isClosed(), "keys are live: the registrar stays open");
        failing.deregisterFailures(r -> null);
        assertEquals(0, refused.retryQuarantined());
        assertTrue(failing.isClosed(), "the retry deregistered everything: the owned registrar is closed now");
        assertTrue(failing.violations().isEmpty(), failing.violations().toString());
    }

    /** After a close that met a failed deregistration, the automatic retry that ends it closes the registrar. */
    @Test
    void anOwnedRegistrarIsClosedByTheAutomaticRetryThatEndsTheQuarantine() throws Exception {
        RecordingRegistrar failing = new RecordingRegistrar();
        RegistrationCache cache = RegistrationCache.builder(failing).ownsRegistrar(true)
                .deregistrationRetry(DeregistrationRetry.backoff(java.time.Duration.ofMillis(200),
                        java.time.Duration.ofMillis(400))).build(); // long enough that close's own retry comes first
        cache.acquire(BASE, PAGE, LOCAL_WRITE).close();
        java.util.concurrent.atomic.AtomicInteger attempts = new java.util.concurrent.atomic.AtomicInteger();
        CountDownLatch retryMayFinish = new CountDownLatch(1);
        failing.deregisterFailures(r -> {
            if (attempts.incrementAndGet() <= 2) {
                return new RegistrationException("EBUSY", 16);
            }
            await(retryMayFinish); // the automatic retry, on the cache's retry thread: held until checked below
            return null;
        });
        assertThrows(DeregistrationException.class, cache::close, "the first attempt and close's own retry fail");
        assertFalse(failing.isClosed(), "keys are live: the registrar stays open");
        retryMayFinish.countDown();
        waitFor(() -> cache.quarantined().isEmpty()); // the automatic retry succeeded
        waitFor(failing::isClosed);
        assertEquals(3, attempts.get());
        assertTrue(failing.violations().isEmpty(), failing.violations().toString());
    }

    /** An owned registrar whose close fails: close reports that failure, once everything is deregistered. */
    @Test
    void anOwnedRegistrarWhoseCloseFailsMakesCloseThrowThatFailure() {
        IllegalStateException boom = new IllegalStateException("ibv_close_device: EIO");
        java.util.concurrent.atomic.AtomicInteger closes = new java.util.concurrent.atomic.AtomicInteger();
        ForwardingRegistrar failing = new ForwardingRegistrar(registrar) {
            @Override
            public void close() {
                closes.incrementAndGet();
                throw boom;
            }
        };
        RegistrationCache cache = RegistrationCache.builder(failing).ownsRegistrar(true).build();
        cache.acquire(BASE, PAGE, LOCAL_WRITE).close();
        IllegalStateException seen = assertThrows(IllegalStateException.class, cache::close);
        assertSame(boom, seen, "the registrar's own exception reaches the caller");
        assertEquals(1, closes.get());
        registrar.assertBalanced(); // every registration was deregistered before the registrar was closed
        assertSame(boom, assertThrows(IllegalStateException.class, cache::close), "a second close reports it again");
        assertEquals(1, closes.get(), "the registrar is closed once");
    }

    /**
     * When the retry that ends a quarantine closes the owned registrar, close() has already returned: a failure
     * of the registrar's close has no caller left, so it is logged at WARNING with the registrar's exception.
     * A registrar that closes cleanly logs nothing.
     */
    @Test
    void anOwnedRegistrarWhoseCloseFailsAfterTheLastRetryIsLoggedWithItsException() {
        java.util.logging.Logger log = java.util.logging.Logger.getLogger(RegistrationCache.class.getName());
        List<java.util.logging.LogRecord> logged = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord record) {
                logged.add(record);
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        log.addHandler(capture);
        try {
            IllegalStateException boom = new IllegalStateException("ibv_close_device: EIO");
            for (boolean closeFails : new boolean[] {false, true}) {
                RecordingRegistrar recording = new RecordingRegistrar();
                Registrar owned = new ForwardingRegistrar(recording) {
                    @Override
                    public void close() {
                        recording.close();
                        if (closeFails) {
                            throw boom;
                        }
                    }
                };
                RegistrationCache cache = RegistrationCache.builder(owned).ownsRegistrar(true)
                        .deregistrationRetry(DeregistrationRetry.MANUAL).build();
                cache.acquire(BASE, PAGE, LOCAL_WRITE).close();
                recording.deregisterFailures(r -> new RegistrationException("EBUSY", 16));
                assertThrows(DeregistrationException.class, cache::close);
                recording.deregisterFailures(r -> null);
                assertEquals(0, cache.retryQuarantined());
                assertTrue(recording.isClosed(), "the retry deregistered everything: the registrar is closed");
            }
            assertEquals(1, logged.size(), "only the failing close is logged: " + logged);
            java.util.logging.LogRecord warning = logged.get(0);
            assertEquals(java.util.logging.Level.WARNING, warning.getLevel());
            assertSame(boom, warning.getThrown(), "the registrar's own exception is in the log");
            assertTrue(warning.getMessage().contains("after the last retried deregistration"), warning.getMessage());
        } finally {
            log.removeHandler(capture);
        }
    }

    /** A close with nothing to deregister closes the owned registrar outside the cache's lock. */
    @Test
    void anOwnedRegistrarsSlowCloseDoesNotBlockTheCachesLock() throws Exception {
        CountDownLatch inClose = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        ForwardingRegistrar slow = new ForwardingRegistrar(registrar) {
            @Override
            public void close() {
                inClose.countDown();
                await(finish); // a device context that takes seconds to close
                super.close();
            }
        };
        RegistrationCache cache = RegistrationCache.builder(slow).ownsRegistrar(true).build();
        cache.acquire(BASE, PAGE, LOCAL_WRITE).close();
        cache.invalidate(BASE, PAGE).toCompletableFuture().join(); // nothing left to deregister at close
        Future<?> closing = pool.submit(() -> cache.close());
        await(inClose);
        Future<MetricsSnapshot> metrics = pool.submit(cache::metrics);
        try {
            assertEquals(1, metrics.get(2, java.util.concurrent.TimeUnit.SECONDS).get(CacheCounter.REGISTRATIONS),
                    "metrics() answered while the registrar was closing");
        } finally {
            finish.countDown();
        }
        closing.get(5, java.util.concurrent.TimeUnit.SECONDS);
        assertTrue(registrar.isClosed());
    }

    @Test
    void closeWithATimeoutNamesTheLeasesStillHeldAndWhereTheyWereAcquired() {
        RegistrationCache cache = RegistrationCache.builder(registrar).leakDetection(LeakDetection.EVERY_LEASE)
                .build();
        Lease a = cache.acquire(BASE, PAGE, LOCAL_WRITE);
        Lease b = cache.acquire(BASE + 4 * PAGE, PAGE, LOCAL_WRITE | REMOTE_WRITE);
        LeasesStillHeldException e = assertThrows(LeasesStillHeldException.class,
                () -> cache.close(java.time.Duration.ofMillis(50)));
        assertEquals(2, e.regions());
        assertTrue(e.getMessage().contains("[0x100000, 0x101000) LOCAL_WRITE: 1 lease(s)"), e.getMessage());
        assertEquals(2, e.getSuppressed().length, "the acquire stacks");
        assertTrue(e.getSuppressed()[0].getStackTrace().length > 0);
        assertThrows(IllegalStateException.class, () -> cache.acquire(BASE, PAGE, LOCAL_WRITE), "closed to acquires");
        a.close();
        b.close();
        cache.close(java.time.Duration.ofSeconds(5)); // now it finishes
        registrar.assertBalanced();

        RegistrationCache untracked = RegistrationCache.builder(registrar).build();
        Lease c = untracked.acquire(BASE, PAGE, LOCAL_WRITE);
        LeasesStillHeldException plain = assertThrows(LeasesStillHeldException.class,
                () -> untracked.close(java.time.Duration.ofMillis(20)));
        assertTrue(plain.getMessage().contains("leakDetection(LeakDetection.EVERY_LEASE)"), plain.getMessage());
        c.close();
    }

    @Test
    void closeWithATimeoutListsOnlyLeasedRegionsAndPassesOnFailuresAndInterrupts() {
        RegistrationCache cache = RegistrationCache.builder(registrar).deregistrationRetry(DeregistrationRetry.MANUAL)
                .build();
        Lease held = cache.acquire(BASE, PAGE, LOCAL_WRITE);
        cache.acquire(BASE + 8 * PAGE, PAGE, LOCAL_WRITE).close();
        registrar.deregisterFailures(r -> r.address() == BASE + 8 * PAGE ? new RegistrationException("EBUSY", 16) : null);
        LeasesStillHeldException e = assertThrows(LeasesStillHeldException.class,
                () -> cache.close(java.time.Duration.ofMillis(20)));
        assertEquals(1, e.regions(), "the quarantined region holds no lease: " + e.getMessage());
        assertFalse(e.getMessage().contains("0x108000"), e.getMessage());

        Thread.currentThread().interrupt();
        IllegalStateException interrupted = assertThrows(IllegalStateException.class,
                () -> cache.close(java.time.Duration.ofSeconds(5)));
        assertTrue(interrupted.getMessage().contains("interrupted"), interrupted.getMessage());
        assertTrue(Thread.interrupted(), "the interrupt is kept for the caller");

        held.close(); // the close now ends, with the quarantined registration's failure
        DeregistrationException failed = assertThrows(DeregistrationException.class,
                () -> cache.close(java.time.Duration.ofSeconds(5)));
        assertEquals(16, failed.errno());
        registrar.deregisterFailures(r -> null);
        assertEquals(0, cache.retryQuarantined());
        registrar.assertBalanced();
    }

    /** No lease held, a registration in flight: the close's report names it, not leases that do not exist. */
    @Test
    void closeWithATimeoutNamesARegistrationInFlightNotLeases() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        holdFirstRegister(entered, proceed);
        RegistrationCache cache = RegistrationCache.builder(registrar).build();
        Future<?> miss = pool.submit(() -> cache.acquire(BASE, PAGE, LOCAL_WRITE));
        await(entered);
        CloseTimedOutException e = assertThrows(CloseTimedOutException.class,
                () -> cache.close(java.time.Duration.ofMillis(100)));
        assertFalse(e instanceof LeasesStillHeldException, "no lease is held: " + e.getMessage());
        assertEquals(List.of(), e.leasedRegions());
        assertEquals(List.of("[0x100000, 0x101000) LOCAL_WRITE"), e.inFlightRegistrations());
        assertTrue(e.getMessage().contains("no lease is held") && e.getMessage().contains("1 registration(s) in flight"
                + " [[0x100000, 0x101000) LOCAL_WRITE]"), e.getMessage());
        proceed.countDown();
        assertThrows(java.util.concurrent.ExecutionException.class, miss::get, "doomed by the close");
        cache.close(java.time.Duration.ofSeconds(5));
        registrar.assertBalanced();
    }

    /** No lease held, a deregistration blocked in the registrar: the report names it. */
    @Test
    void closeWithATimeoutNamesADeregistrationUnderWay() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        RegistrationCache cache = RegistrationCache.builder(registrar).build();
        cache.acquire(BASE, PAGE, LOCAL_WRITE).close();
        registrar.deregisterFailures(r -> {
            entered.countDown();
            await(proceed);
            return null;
        });
        Future<?> closing = pool.submit(() -> cache.close());
        await(entered);
        CloseTimedOutException e = assertThrows(CloseTimedOutException.class,
                () -> cache.close(java.time.Duration.ofMillis(50)));
        assertEquals(List.of("[0x100000, 0x101000) LOCAL_WRITE"), e.deregistrationsUnderWay(), e.getMessage());
        assertEquals(List.of(), e.inFlightRegistrations());
        assertTrue(e.getMessage().contains("1 deregistration(s) under way"), e.getMessage());
        proceed.countDown();
        closing.get(5, java.util.concurrent.TimeUnit.SECONDS);
        registrar.assertBalanced();
    }

    @Test
    void sampledLeakDetectionTracksAboutOneAcquireInTheInterval() {
        RegistrationCache cache = RegistrationCache.builder(registrar).leakDetection(LeakDetection.SAMPLED).build();
        List<Lease> held = new java.util.ArrayList<>();
        int n = LeakDetection.SAMPLE_INTERVAL * 40;
        for (int i = 0; i < n; i++) {
            held.add(cache.acquire(BASE, PAGE, LOCAL_WRITE));
        }
        LeasesStillHeldException e = assertThrows(LeasesStillHeldException.class,
                () -> cache.close(java.time.Duration.ofMillis(20)));
        int tracked = e.getSuppressed().length;
        assertTrue(tracked >= 10 && tracked <= 90, "about 40 of " + n + " tracked: " + tracked);
        held.forEach(Lease::close);
        cache.close();
        registrar.assertBalanced();
    }

    @Test
    void listingTheQuarantineLetsGoOfTheLock() throws Exception {
        try (RegistrationCache cache = RegistrationCache.builder(registrar)
                .deregistrationRetry(DeregistrationRetry.MANUAL).build()) {
            cache.acquire(BASE, PAGE, LOCAL_WRITE).close();
            registrar.deregisterFailures(r -> new RegistrationException("EBUSY", 16));
            cache.invalidate(BASE, PAGE);
            assertEquals(1, cache.quarantined().size());
            // another thread must get the cache's lock afterwards (metrics() takes it)
            java.util.concurrent.Future<MetricsSnapshot> other = pool.submit(cache::metrics);
            assertEquals(1, other.get(5, java.util.concurrent.TimeUnit.SECONDS).quarantined());
            registrar.deregisterFailures(r -> null);
            assertEquals(0, cache.retryQuarantined());
        }
        registrar.assertBalanced();
    }

    @Test
    void rightsStayWithTheirRegionsWhenTheIndexGrowsAndShrinksInTheMiddle() {
        Region a = region(BASE, PAGE, LOCAL_READ);
        Region c = region(BASE + 4 * PAGE, PAGE, LOCAL_WRITE);
        Region b = region(BASE + 2 * PAGE, PAGE, LOCAL_WRITE | LOCAL_READ | REMOTE_READ);
        RegionIndex idx = RegionIndex.EMPTY.withAll(List.of(a, c)).withAll(List.of(b)); // b lands in the middle
        assertSame(c, idx.findServingUnchecked(BASE + 4 * PAGE, BASE + 5 * PAGE, LOCAL_WRITE, false));
        assertNull(idx.findServingUnchecked(BASE + 4 * PAGE, BASE + 5 * PAGE, LOCAL_READ, false), "c has no read");
        assertSame(b, idx.findServingUnchecked(BASE + 2 * PAGE, BASE + 3 * PAGE, LOCAL_READ | REMOTE_READ, false));
        RegionIndex without = idx.with(null, List.of(a)); // removal at the front shifts b and c
        assertSame(b, without.findServingUnchecked(BASE + 2 * PAGE, BASE + 3 * PAGE, LOCAL_READ | REMOTE_READ,
                false));
        assertSame(c, without.findServingUnchecked(BASE + 4 * PAGE, BASE + 5 * PAGE, LOCAL_WRITE, false));
        assertNull(without.findServingUnchecked(BASE + 4 * PAGE, BASE + 5 * PAGE, LOCAL_READ, false));
    }

    @Test
    void overlapQueriesBehindALongerRegionStopAtTheRightPlace() {
        Region longOne = region(BASE, 4 * PAGE, LOCAL_WRITE);
        Region inner = region(BASE + PAGE, PAGE, LOCAL_WRITE);
        RegionIndex idx = RegionIndex.EMPTY.withAll(List.of(longOne, inner));
        assertEquals(List.of(longOne), idx.overlapping(BASE + 2 * PAGE, BASE + 3 * PAGE), "only the long one");
        assertEquals(List.of(), idx.overlapping(BASE + 4 * PAGE, BASE + 5 * PAGE), "touching the long one's end");
        assertFalse(idx.overlapsAny(BASE + 4 * PAGE, BASE + 5 * PAGE));
        assertTrue(idx.overlapsAny(BASE + 4 * PAGE - 1, BASE + 5 * PAGE));
        assertTrue(idx.overlapsAny(BASE + 2 * PAGE, BASE + 2 * PAGE + 1), "inside the long one only");
    }

    @Test
    void adjacentMergingReachesExactlyTheTouchingRegion() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar)
                .mergePolicy(MergePolicy.OVERLAPPING_AND_ADJACENT).build()) {
            cache.acquire(BASE, PAGE, LOCAL_WRITE).close(); // [0, P)
            cache.acquire(BASE + 3 * PAGE, PAGE, LOCAL_WRITE).close(); // [3P, 4P): one page away from [P, 2P)
            try (Lease l = cache.acquire(BASE + PAGE, PAGE, LOCAL_WRITE)) { // touches [0, P) only
                assertEquals(BASE, l.registration().address(), "merged with the touching region");
                assertEquals(2 * PAGE, l.registration().length(), "but not with the one a page away");
            }
        }
        registrar.assertBalanced();
    }

    @Test
    void adjacentMergingReachesARegionTouchingTheRequestsEndToo() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar)
                .mergePolicy(MergePolicy.OVERLAPPING_AND_ADJACENT).build()) {
            cache.acquire(BASE + PAGE, PAGE, LOCAL_WRITE).close(); // [P, 2P)
            try (Lease l = cache.acquire(BASE, PAGE, LOCAL_WRITE)) { // [0, P): touches it with its end
                assertEquals(BASE, l.registration().address());
                assertEquals(2 * PAGE, l.registration().length(), "merged with the region after it");
            }
            assertEquals(1, cache.regionCount());
            assertEquals(1, cache.metrics().get(CacheCounter.MERGES));
        }
        registrar.assertBalanced();
    }

    @Test
    void withoutMergingARegionOfExactlyTheRequestedRangeIsUpgradedInPlace() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar).mergePolicy(MergePolicy.NONE).build()) {
            cache.acquire(BASE, PAGE, LOCAL_READ).close();
            try (Lease up = cache.acquire(BASE, PAGE, LOCAL_WRITE)) { // same start, same end, one more right
                assertEquals(BASE, up.registration().address());
                assertEquals(PAGE, up.registration().length());
                assertEquals(LOCAL_READ | LOCAL_WRITE, up.access(), "the union of the rights");
            }
            assertEquals(1, cache.regionCount(), "the narrower region was superseded");
            assertEquals(1, cache.metrics().get(CacheCounter.ACCESS_UPGRADES));
        }
        registrar.assertBalanced();
    }

    @Test
    void aRequestEndingAtARegionsEndThatLacksARightIsAnUpgradeNotAMerge() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar).build()) {
            cache.acquire(BASE, 2 * PAGE, LOCAL_READ).close();
            try (Lease l = cache.acquire(BASE + PAGE, PAGE, LOCAL_WRITE)) { // ends exactly at the region's end
                assertEquals(BASE, l.registration().address());
                assertEquals(LOCAL_READ | LOCAL_WRITE, l.registration().access());
            }
            assertEquals(1, cache.metrics().get(CacheCounter.ACCESS_UPGRADES), "covered: an upgrade");
            assertEquals(0, cache.metrics().get(CacheCounter.MERGES));
        }
        registrar.assertBalanced();
    }

    @Test
    void aMemlockLimitOfZeroIsQuotedAndAZeroLengthResultIsRefused() {
        registrar.setMemlockLimit(0);
        try (RegistrationCache cache = RegistrationCache.builder(registrar).build()) {
            registrar.failures((a, l, x) -> RegistrationException.ENOMEM);
            PinnedMemoryExhaustedException e = assertThrows(PinnedMemoryExhaustedException.class,
                    () -> cache.acquire(BASE, PAGE, LOCAL_WRITE));
            assertTrue(e.getMessage().contains("RLIMIT_MEMLOCK is 0 bytes"), e.getMessage());
            registrar.failures((a, l, x) -> 0);
        }
        Registrar empty = new ForwardingRegistrar(registrar) {
            @Override
            public Registration register(long address, long length, int access) {
                Registration r = super.register(address, length, access);
                return new Registration(r.address(), 0, r.access(), r.lkey(), r.rkey(), r.protectionDomain(),
                        r.handle());
            }
        };
        try (RegistrationCache cache = RegistrationCache.builder(empty).build()) {
            // a zero-length registration at the right address cannot cover anything: refused, and deregistered
            assertThrows(IllegalStateException.class, () -> cache.acquire(BASE, 1, LOCAL_WRITE));
        }
        assertEquals(registrar.registerCount(), registrar.deregisterCount());
    }

    @Test
    void aJoinerWhoseOwnerFellBackToANarrowerRangeRegistersItsOwn() throws Exception {
        try (RegistrationCache cache = RegistrationCache.builder(registrar)
                .deregistrationRetry(DeregistrationRetry.MANUAL).build()) {
            cache.acquire(BASE, 2 * PAGE, LOCAL_WRITE).close(); // [0, 2P)
            java.util.concurrent.CountDownLatch entered = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch proceed = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();
            registrar.duringRegister(() -> {
                if (calls.getAndIncrement() == 1) { // the first register of the test: the merged plan
                    entered.countDown();
                    await(proceed);
                }
            });
            calls.set(1);
            // the merged plan [0, 4P) is refused; the fallback is the owner's own [2P, 4P)
            registrar.failures((a, l, x) -> a == BASE && l == 4 * PAGE ? RegistrationException.EFAULT : 0);
            java.util.concurrent.Future<Lease> owner = pool.submit(() -> cache.acquire(BASE + PAGE + 8, 3 * PAGE - 8,
                    LOCAL_WRITE));
            assertTrue(entered.await(5, java.util.concurrent.TimeUnit.SECONDS));
            // inside the merged plan, but neither inside [0, 2P) nor inside the owner's fallback [P, 4P)
            java.util.concurrent.Future<Lease> joiner = pool.submit(() -> cache.acquire(BASE + PAGE - 100, PAGE + 200,
                    LOCAL_WRITE));
            waitFor(() -> cache.metrics().get(CacheCounter.SINGLE_FLIGHT_JOINS) == 1);
            proceed.countDown();
            try (Lease o = owner.get(5, java.util.concurrent.TimeUnit.SECONDS);
                    Lease j = joiner.get(5, java.util.concurrent.TimeUnit.SECONDS)) {
                assertEquals(BASE + PAGE, o.registration().address(), "the owner's own range");
                assertTrue(j.registration().address() <= BASE + PAGE - 100
                        && j.registration().end() >= BASE + 2 * PAGE + 100,
                        "the joiner retried and got a registration covering its request: " + j.registration());
            }
        }
        registrar.assertBalanced();
    }

    @Test
    void aThreadWhoseCellIsContendedMovesToTheNextAndThreadsSpreadOverTheCells() throws InterruptedException {
        long id = 0x5EED_0001L;
        int before = LeaseStripes.of(id);
        LeaseStripes.contended(id);
        assertEquals((before + 1) & (LeaseStripes.STRIPES - 1), LeaseStripes.of(id), "the next cell, wrapping");
        java.util.Set<Integer> cells = new java.util.HashSet<>();
        for (long t = 1; t <= 256; t++) {
            int c = LeaseStripes.of(t);
            assertTrue(c >= 0 && c < LeaseStripes.STRIPES, "cell " + c);
            cells.add(c);
        }
        assertEquals(LeaseStripes.STRIPES, cells.size(), "256 thread ids use every cell");
        int[] seen = new int[2];
        for (int tries = 0; tries < 64 && seen[1] == 0; tries++) { // a thread whose cell is not 0
            Thread th = new Thread(() -> {
                int own = LeaseStripes.of(Thread.currentThread().threadId());
                if (own != 0) {
                    seen[0] = LeaseStripes.current() == own ? 1 : -1;
                    seen[1] = 1;
                }
            });
            th.start();
            th.join();
        }
        assertEquals(1, seen[0], "current() is the calling thread's own cell");
    }

    @Test
    void theFaultOnlyClaimsOfTheBrokenVariantsClaimOnlyIdleLiveRegions() {
        Region idle = region(BASE, PAGE, LOCAL_WRITE);
        assertTrue(idle.retireIdleWithoutMarkForFault(), "idle and live: claimed");
        assertFalse(idle.isLive());
        assertFalse(idle.retireIdleWithoutMarkForFault(), "retired already");
        Region leased = region(BASE, PAGE, LOCAL_WRITE);
        int slot = leased.tryRetain(0);
        assertTrue(slot >= 0);
        assertFalse(leased.retireIdleWithoutMarkForFault(), "leased: left alone");
        assertTrue(leased.isLive());
        assertFalse(leased.retireSummingFirstForFault(), "leased: retired, but the last release deregisters");
        assertFalse(leased.isLive());
        assertTrue(leased.release(slot), "and the release is the one that must deregister");
        Region other = region(BASE, PAGE, LOCAL_WRITE);
        assertTrue(other.retireSummingFirstForFault(), "idle: retired and claimed");
        assertFalse(other.isLive());
        assertFalse(other.retireSummingFirstForFault(), "claimed once");
    }

    @Test
    void registrationsThatDifferInAnyOneFieldHashApart() {
        int n = 4_096;
        java.util.List<java.util.function.LongFunction<Registration>> variations = java.util.List.of(
                i -> new Registration(BASE + i * PAGE, PAGE, LOCAL_WRITE, 1, 1, 7, 1),
                i -> new Registration(BASE, PAGE * (i + 1), LOCAL_WRITE, 1, 1, 7, 1),
                i -> new Registration(BASE, PAGE, LOCAL_WRITE, (int) i, 1, 7, 1),
                i -> new Registration(BASE, PAGE, LOCAL_WRITE, 1, (int) i, 7, 1),
                i -> new Registration(BASE, PAGE, LOCAL_WRITE, 1, 1, 7, i));
        for (var v : variations) {
            java.util.Set<Integer> hashes = new java.util.HashSet<>();
            java.util.Set<Integer> low = new java.util.HashSet<>();
            for (long i = 0; i < n; i++) {
                int h = new Region(v.apply(i), PAGE, 0).hashCode();
                hashes.add(h);
                low.add(h & 1023); // what a 1,024-bucket hash table uses
            }
            assertTrue(hashes.size() >= n - 2, "distinct hashes: " + hashes.size() + " of " + n);
            assertTrue(low.size() >= 1024 * 9 / 10, "low bits spread over " + low.size() + " of 1024 buckets");
        }
        java.util.Set<Integer> byAccess = new java.util.HashSet<>();
        for (int a : new int[] {LOCAL_READ, LOCAL_WRITE, LOCAL_WRITE | REMOTE_READ, LOCAL_WRITE | REMOTE_WRITE}) {
            byAccess.add(new Region(new Registration(BASE, PAGE, a, 1, 1, 7, 1), PAGE, 0).hashCode());
        }
        assertEquals(4, byAccess.size(), "rights alone tell registrations apart");
    }
}
