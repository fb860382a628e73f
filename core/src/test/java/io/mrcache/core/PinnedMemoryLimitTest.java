package io.mrcache.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.testing.RecordingRegistrar;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Tenants sharing one pinned-memory limit (T1-T4 of {@link PinnedMemoryLimit}), each in its own domain. */
class PinnedMemoryLimitTest {
    static final long PAGE = 4096;
    static final long LIMIT = 16 * PAGE;
    static final long A_BASE = 0x100_0000;
    static final long B_BASE = 0x200_0000;
    static final long C_BASE = 0x300_0000;

    final RecordingRegistrar regA = new RecordingRegistrar(1, true);
    final RecordingRegistrar regB = new RecordingRegistrar(2, true);
    final RecordingRegistrar regC = new RecordingRegistrar(3, true);
    final List<RegistrationCache> caches = new ArrayList<>();
    /** The most the limit held at any register call (the registrar runs after the reservation). */
    final AtomicLong peakSeenByRegistrars = new AtomicLong();

    PinnedMemoryLimit limit = new PinnedMemoryLimit(LIMIT);

    @AfterEach
    void everyTenantBalances() {
        caches.forEach(RegistrationCache::close);
        for (RecordingRegistrar r : List.of(regA, regB, regC)) {
            assertTrue(r.violations().isEmpty(), () -> "ledger violations: " + r.violations());
            assertEquals(0, r.live().size(), "a registration outlived its closed cache");
        }
        assertEquals(0, limit.pinnedBytes(), "the limit still counts bytes after every cache closed");
        assertTrue(limit.tenants().isEmpty(), "closed tenants still listed: " + limit.tenants());
        assertTrue(peakSeenByRegistrars.get() <= LIMIT, "a register call ran while the tenants held "
                + peakSeenByRegistrars.get() + " bytes, over the limit of " + LIMIT);
    }

    RegistrationCache tenant(RecordingRegistrar registrar, TenantShare share) {
        registrar.duringRegister(() -> peakSeenByRegistrars.accumulateAndGet(limit.pinnedBytes(), Math::max));
        return tenant(registrar, share, b -> b);
    }

    /** A tenant cache built with {@code options} (a deregistration retry, a fault), closed after the test. */
    RegistrationCache tenant(RecordingRegistrar registrar, TenantShare share,
            UnaryOperator<RegistrationCache.Builder> options) {
        RegistrationCache c = options.apply(RegistrationCache.builder(registrar).tenant(limit, share)).build();
        caches.add(c);
        return c;
    }

    /** Registers {@code pages} one-page regions from {@code base} and releases them (idle, cached). */
    static void fillIdle(RegistrationCache c, long base, int pages) {
        for (int i = 0; i < pages; i++) {
            c.acquire(base + i * PAGE, PAGE, Access.LOCAL_WRITE).close();
        }
    }

    static List<Lease> fillLeased(RegistrationCache c, long base, int pages) {
        List<Lease> leases = new ArrayList<>();
        for (int i = 0; i < pages; i++) {
            leases.add(c.acquire(base + i * PAGE, PAGE, Access.LOCAL_WRITE));
        }
        return leases;
    }

    static TenantMetrics of(RegistrationCache c) {
        TenantMetrics t = c.metrics().tenant();
        assertTrue(t != null, "a tenant cache reports its tenant metrics");
        return t;
    }

    /**
     * A merge the registrar refuses falls back to the request's own, narrower range: the limit is charged what
     * was pinned, not the wider range reserved before the registrar ran (and gets it all back at close).
     */
    @Test
    void aRegistrationNarrowerThanItsReservationIsChargedWhatItPins() {
        RegistrationCache a = tenant(regA, TenantShare.guaranteed("A", 8 * PAGE));
        a.acquire(A_BASE, 2 * PAGE, Access.LOCAL_WRITE).close();
        regA.failures((addr, len, acc) -> addr <= A_BASE && addr + len > A_BASE ? RegistrationException.EFAULT : 0);
        try (Lease b = a.acquire(A_BASE + PAGE + 10, 2 * PAGE, Access.LOCAL_WRITE)) { // planned: [A, A+4P)
            assertEquals(A_BASE + PAGE, b.registration().address(), "fell back to the request's own pages");
        }
        assertEquals(5 * PAGE, a.pinnedBytes(), "2 pages, then 3");
        assertEquals(a.pinnedBytes(), limit.pinnedBytes(), "charged the 3 pages pinned, not the 4 reserved");
        assertEquals(5 * PAGE, of(a).pinnedBytes());
    }

    @Test
    void twoBestEffortTenantsTogetherNeverPinMoreThanTheLimit() {
        RegistrationCache a = tenant(regA, TenantShare.bestEffort("A"));
        RegistrationCache b = tenant(regB, TenantShare.bestEffort("B"));
        fillIdle(a, A_BASE, 12);
        fillIdle(b, B_BASE, 12); // each alone fits; together they would pin 24 pages of 16
        assertTrue(limit.pinnedBytes() <= LIMIT);
        assertEquals(a.pinnedBytes() + b.pinnedBytes(), limit.pinnedBytes(), "the limit counts what the caches pin");
        assertEquals(regA.liveBytes() + regB.liveBytes(), limit.pinnedBytes(), "and what the registrars pin");
        assertTrue(of(a).evictionsSuffered() > 0, "B's growth took A's coldest regions: " + of(a));
        assertEquals(of(a).evictionsSuffered(), of(b).evictionsCaused());
    }

    @Test
    void aTenantReachesItsGuaranteeWhileTheOtherHoldsTheSharedPartLeased() {
        RegistrationCache a = tenant(regA, TenantShare.guaranteed("A", 8 * PAGE));
        RegistrationCache b = tenant(regB, TenantShare.bestEffort("B"));
        List<Lease> leases = fillLeased(b, B_BASE, 8); // the whole shared part, leased: nothing of it can go
        PinnedMemoryExhaustedException refused = assertThrows(PinnedMemoryExhaustedException.class,
                () -> b.acquire(B_BASE + 8 * PAGE, PAGE, Access.LOCAL_WRITE));
        assertTrue(refused.getMessage().contains("'A' holds 0 (guarantee 32,768"), refused.getMessage());
        List<Lease> mine = fillLeased(a, A_BASE, 8); // every page of its guarantee, at once
        assertEquals(8 * PAGE, a.pinnedBytes());
        assertEquals(0, of(b).evictionsSuffered());
        assertEquals(LIMIT, limit.pinnedBytes());
        leases.forEach(Lease::close);
        mine.forEach(Lease::close);
        assertEquals(1, of(b).admissionsRefused());
    }

    @Test
    void growthAboveAGuaranteeTakesTheSharedPartOnlyFromTenantsAboveTheirs() {
        RegistrationCache a = tenant(regA, TenantShare.guaranteed("A", 8 * PAGE));
        RegistrationCache b = tenant(regB, TenantShare.bestEffort("B"));
        fillIdle(a, A_BASE, 8); // A at its guarantee
        fillIdle(b, B_BASE, 8); // B fills the shared part
        fillIdle(b, B_BASE + 8 * PAGE, 8); // B scans on: only its own regions make room
        assertEquals(8 * PAGE, a.pinnedBytes(), "B's scan evicted A below its guarantee");
        assertEquals(0, of(a).evictionsSuffered());
        assertEquals(8 * PAGE, b.pinnedBytes());
        fillIdle(a, A_BASE + 8 * PAGE, 4); // A above its guarantee: the shared part is B's, and B gives
        assertEquals(12 * PAGE, a.pinnedBytes());
        assertEquals(4, of(b).evictionsSuffered());
        assertEquals(4, of(a).evictionsCaused());
    }

    @Test
    void theTenantFurthestAboveItsGuaranteeGivesFirst() {
        RegistrationCache a = tenant(regA, TenantShare.guaranteed("A", 2 * PAGE));
        RegistrationCache b = tenant(regB, TenantShare.guaranteed("B", 2 * PAGE));
        RegistrationCache c = tenant(regC, TenantShare.bestEffort("C"));
        fillIdle(a, A_BASE, 4); // 2 above
        fillIdle(b, B_BASE, 10); // 8 above
        fillIdle(c, C_BASE, 4); // needs 2 pages: B, furthest above, gives
        assertEquals(4 * PAGE, a.pinnedBytes());
        assertEquals(8 * PAGE, b.pinnedBytes());
        assertEquals(0, of(a).evictionsSuffered());
        assertEquals(2, of(b).evictionsSuffered());
    }

    @Test
    void underRequesterFirstTheAskingTenantGivesItsOwnFirst() {
        limit = new PinnedMemoryLimit(LIMIT, RoomRule.REQUESTER_FIRST);
        RegistrationCache a = tenant(regA, TenantShare.guaranteed("A", 2 * PAGE));
        RegistrationCache b = tenant(regB, TenantShare.bestEffort("B"));
        fillIdle(b, B_BASE, 8);
        fillIdle(a, A_BASE, 8); // fills the limit: 8 + 8
        fillIdle(a, A_BASE + 8 * PAGE, 2); // A is above its guarantee: it gives its own coldest first
        assertEquals(8 * PAGE, b.pinnedBytes());
        assertEquals(0, of(b).evictionsSuffered());
        assertEquals(8 * PAGE, a.pinnedBytes());
    }

    @Test
    void noRequestEvictsATenantBelowItsGuaranteeOrTakesALease() {
        RegistrationCache a = tenant(regA, TenantShare.guaranteed("A", 8 * PAGE));
        RegistrationCache b = tenant(regB, TenantShare.bestEffort("B"));
        fillIdle(a, A_BASE, 8); // A at its guarantee, idle
        List<Lease> leased = fillLeased(b, B_BASE, 8); // B holds the shared part, leased
        List<Registration> before = new ArrayList<>(regA.live());
        before.addAll(regB.live());
        PinnedMemoryExhaustedException e = assertThrows(PinnedMemoryExhaustedException.class,
                () -> b.acquire(B_BASE + 8 * PAGE, PAGE, Access.LOCAL_WRITE));
        for (Registration r : before) {
            assertTrue(regA.isLive(r) || regB.isLive(r), "a registration was taken to make room: " + r);
        }
        assertTrue(e.getMessage().contains("tenant 'B' cannot register 4,096 more bytes"), e.getMessage());
        assertTrue(e.getMessage().contains("'A' holds 32,768 (guarantee 32,768"), e.getMessage());
        assertTrue(e.getMessage().contains("'B' holds 32,768 (guarantee 0"), e.getMessage());
        leased.forEach(Lease::close);
        b.acquire(B_BASE + 8 * PAGE, PAGE, Access.LOCAL_WRITE).close(); // released: now B makes its own room
        assertEquals(8 * PAGE, a.pinnedBytes());
    }

    @Test
    void aRequestAboveItsTenantsCeilingFailsAtOnceAndEvictsNothing() {
        RegistrationCache a = tenant(regA, new TenantShare("A", 0, 4 * PAGE));
        RegistrationCache b = tenant(regB, TenantShare.bestEffort("B"));
        fillIdle(a, A_BASE, 2);
        fillIdle(b, B_BASE, 14); // the limit is full
        int registered = regA.registerCount() + regB.registerCount();
        TenantCeilingExceededException e = assertThrows(TenantCeilingExceededException.class,
                () -> a.acquire(A_BASE + 16 * PAGE, 5 * PAGE, Access.LOCAL_WRITE));
        assertEquals("A", e.tenant());
        assertEquals(RegistrationException.ENOMEM, e.errno());
        assertTrue(e.getMessage().contains("tenant 'A': a registration of 20,480 bytes exceeds the tenant's"
                + " ceiling of 16,384 bytes (it holds 8,192 pinned); nothing was evicted"), e.getMessage());
        assertEquals(registered, regA.registerCount() + regB.registerCount(), "the registrar was called");
        assertEquals(0, of(a).evictionsCaused() + of(a).evictionsSuffered() + of(b).evictionsSuffered());
        assertEquals(0, a.metrics().get(CacheCounter.EVICTIONS) + b.metrics().get(CacheCounter.EVICTIONS));
        assertEquals(1, of(a).admissionsRefused());
        assertEquals(LIMIT, limit.pinnedBytes());
    }

    @Test
    void aTenantAtItsCeilingMakesRoomFromItsOwnColdestRegions() {
        RegistrationCache a = tenant(regA, new TenantShare("A", 0, 4 * PAGE));
        AtomicLong mostHeld = new AtomicLong();
        regA.duringRegister(() -> mostHeld.accumulateAndGet(a.pinnedBytes(), Math::max));
        fillIdle(a, A_BASE, 10);
        assertTrue(mostHeld.get() <= 3 * PAGE, "a registration started while A held " + mostHeld.get()
                + " bytes: with the new page that passes its ceiling of " + 4 * PAGE);
        assertEquals(4 * PAGE, a.pinnedBytes());
        assertEquals(6, a.metrics().get(CacheCounter.EVICTIONS));
    }

    /**
     * The room another tenant's request makes: each victim leaves the giver's index and its policy, counts as an
     * eviction there, and is deregistered.
     */
    @Test
    void aTenantThatGivesRoomUnlinksCountsAndForgetsEachVictim() {
        RegistrationCache a = tenant(regA, TenantShare.bestEffort("A"));
        RegistrationCache b = tenant(regB, TenantShare.bestEffort("B"));
        fillIdle(b, B_BASE, 16); // the whole limit, idle
        a.acquire(A_BASE, 2 * PAGE, Access.LOCAL_WRITE).close();
        assertEquals(2, of(b).evictionsSuffered());
        assertEquals(2, b.metrics().get(CacheCounter.EVICTIONS), "B's eviction counter");
        assertEquals(14, b.regionCount(), "the victims left B's index");
        assertEquals(14, b.policySizeForTest(), "and B's policy");
        assertEquals(14, regB.live().size(), "and were deregistered");
    }

    /**
     * A victim whose pinned bytes would take the room given past what its tenant may give (here: what it holds
     * above its guarantee) is never taken, even when it is the only idle one: the request is refused instead.
     */
    @Test
    void aVictimLargerThanWhatItsTenantMayGiveIsNeverTaken() {
        RegistrationCache a = tenant(regA, TenantShare.guaranteed("A", 13 * PAGE));
        RegistrationCache b = tenant(regB, TenantShare.guaranteed("B", 2 * PAGE));
        b.acquire(B_BASE, 2 * PAGE, Access.LOCAL_WRITE).close(); // idle, two pages
        try (Lease held = b.acquire(B_BASE + 4 * PAGE, PAGE, Access.LOCAL_WRITE)) { // leased, one page
            fillIdle(a, A_BASE, 13); // the limit is full; B is one page above its guarantee
            assertThrows(PinnedMemoryExhaustedException.class,
                    () -> a.acquire(A_BASE + 16 * PAGE, PAGE, Access.LOCAL_WRITE));
            assertEquals(0, of(b).evictionsSuffered(), "taking the two pages would put B below its guarantee");
            assertEquals(3 * PAGE, b.pinnedBytes());
            assertEquals(2, regB.live().size());
        }
    }

    /** A victim leased after the limit's eviction picked it (idle then) is withdrawn, not evicted (H5). */
    @Test
    void aVictimLeasedAfterTheLimitPickedItIsWithdrawn() throws Exception {
        RegistrationCache a = tenant(regA, TenantShare.bestEffort("A"));
        RegistrationCache b = tenant(regB, TenantShare.bestEffort("B"));
        fillIdle(b, B_BASE, 16);
        List<Lease> taken = new ArrayList<>();
        RaceWindowsTest.within(new Region.RaceWindows() {
            @Override
            public void beforeMark(Region r) {
                if (taken.isEmpty()) { // B's own thread takes the first victim back between the pick and the mark
                    taken.add(b.acquire(r.start, PAGE, Access.LOCAL_WRITE));
                }
            }
        }, () -> {
            a.acquire(A_BASE, PAGE, Access.LOCAL_WRITE).close();
            return null;
        });
        try {
            assertEquals(1, taken.size());
            assertEquals(1, b.metrics().get(CacheCounter.EVICTIONS_WITHDRAWN), "counted as withdrawn");
            assertTrue(regB.isLive(taken.getFirst().registration()), "the lease kept its registration");
            assertEquals(1, b.metrics().get(CacheCounter.EVICTIONS), "the limit asked again and B's next one went");
            assertEquals(15, b.regionCount());
            assertEquals(PAGE, a.pinnedBytes());
        } finally {
            taken.forEach(Lease::close);
        }
        assertEquals(15, b.policySizeForTest(), "the withdrawn victim stays in B's policy");
    }

    /** The broken variant: the limit's eviction takes a leased region (the injector's H5 check can fail). */
    @Test
    void withTheLimitEvictingLeasedRegionsALeasedRegionLosesItsRegistration() {
        RegistrationCache a = tenant(regA, TenantShare.bestEffort("A"));
        RegistrationCache b = tenant(regB, TenantShare.bestEffort("B"), o -> o.faults(CacheFault.LIMIT_EVICTS_LEASED));
        List<Lease> leased = fillLeased(b, B_BASE, 16);
        a.acquire(A_BASE, PAGE, Access.LOCAL_WRITE).close();
        long lost = leased.stream().filter(l -> !regB.isLive(l.registration())).count();
        assertEquals(1, lost, "one leased registration deregistered under its lease");
        assertEquals(15, b.regionCount());
        leased.forEach(Lease::close);
    }

    @Test
    void guaranteesBeyondTheLimitAndRepeatedNamesAreRefusedAtBuild() {
        tenant(regA, TenantShare.guaranteed("A", 12 * PAGE));
        IllegalArgumentException over = assertThrows(IllegalArgumentException.class,
                () -> RegistrationCache.builder(regB).tenant(limit, TenantShare.guaranteed("B", 5 * PAGE)).build());
        assertTrue(over.getMessage().contains("tenant 'B' asks a guarantee of 20,480 bytes, but the limit of 65,536"
                + " bytes has 16,384 left that no tenant is guaranteed ('A' holds 0 (guarantee 49,152"),
                over.getMessage());
        IllegalArgumentException twice = assertThrows(IllegalArgumentException.class,
                () -> RegistrationCache.builder(regB).tenant(limit, TenantShare.bestEffort("A")).build());
        assertTrue(twice.getMessage().contains("a tenant named 'A' already draws from this limit"),
                twice.getMessage());
        assertEquals(1, limit.tenants().size(), "a refused cache left a tenant behind");
        assertThrows(IllegalArgumentException.class, () -> new TenantShare("C", 8 * PAGE, 4 * PAGE));
        assertThrows(IllegalArgumentException.class, () -> new TenantShare(" ", 0, PAGE));
        assertThrows(IllegalArgumentException.class, () -> new PinnedMemoryLimit(0));
    }

    @Test
    void aClosingCacheReturnsItsGuaranteeAtOnceAndItsBytesAsTheyAreDeregistered() {
        RegistrationCache a = tenant(regA, TenantShare.guaranteed("A", 12 * PAGE));
        Lease held = a.acquire(A_BASE, 2 * PAGE, Access.LOCAL_WRITE);
        fillIdle(a, A_BASE + 4 * PAGE, 2);
        CompletableFuture<Void> closed = a.closeAsync().toCompletableFuture();
        assertEquals(2 * PAGE, limit.pinnedBytes(), "the leased region is still pinned");
        assertFalse(closed.isDone());
        RegistrationCache b = tenant(regB, TenantShare.guaranteed("B", 12 * PAGE)); // A's guarantee came back
        fillIdle(b, B_BASE, 12);
        assertEquals(List.of("A", "B"), limit.tenants().stream().map(TenantMetrics::name).toList());
        held.close();
        assertTrue(closed.isDone());
        assertEquals(List.of("B"), limit.tenants().stream().map(TenantMetrics::name).toList());
        assertEquals(12 * PAGE, limit.pinnedBytes());
        RegistrationCache again = tenant(regC, TenantShare.bestEffort("A")); // the name is free again
        fillIdle(again, C_BASE, 1);
    }

    @Test
    void quarantinedRegistrationsCountAgainstTheirTenantUntilARetrySucceeds() {
        RegistrationCache a = tenant(regA, TenantShare.bestEffort("A"), o -> o.deregistrationRetry(DeregistrationRetry.MANUAL));
        fillIdle(a, A_BASE, 2);
        regA.deregisterFailures(r -> new RegistrationException("ibv_dereg_mr: EBUSY", 16));
        assertThrows(Exception.class, () -> a.invalidateAndWait(A_BASE, PAGE));
        assertEquals(2 * PAGE, limit.pinnedBytes(), "a quarantined registration still pins its pages");
        assertEquals(2 * PAGE, of(a).pinnedBytes());
        regA.deregisterFailures(r -> null);
        assertEquals(0, a.retryQuarantined());
        assertEquals(PAGE, limit.pinnedBytes());
    }

    @Test
    void aVictimWhoseDeregistrationFailsStillCountsAndTheRequestIsRefused() {
        RegistrationCache a = tenant(regA, TenantShare.bestEffort("A"));
        RegistrationCache b = tenant(regB, TenantShare.bestEffort("B"), o -> o.deregistrationRetry(DeregistrationRetry.MANUAL));
        fillIdle(b, B_BASE, 16); // the whole limit, idle
        regB.deregisterFailures(r -> new RegistrationException("ibv_dereg_mr: EBUSY", 16));
        PinnedMemoryExhaustedException e = assertThrows(PinnedMemoryExhaustedException.class,
                () -> a.acquire(A_BASE, PAGE, Access.LOCAL_WRITE));
        assertTrue(e.getMessage().contains("'B' holds 65,536"), e.getMessage());
        assertEquals(LIMIT, limit.pinnedBytes(), "a registration whose deregistration failed is still pinned");
        assertEquals(16, regB.live().size(), "a live key was forgotten");
        assertEquals(2, b.quarantined().size(), "room making went on after two evictions that gave nothing back");
        assertEquals(0, regA.registerCount(), "A registered past the limit");
        regB.deregisterFailures(r -> null);
        assertEquals(0, b.retryQuarantined());
        a.acquire(A_BASE, PAGE, Access.LOCAL_WRITE).close(); // the retry gave the room back
        assertEquals(PAGE, a.pinnedBytes());
    }

    @Test
    void aFailedRegistrationGivesItsReservationBack() {
        RegistrationCache a = tenant(regA, TenantShare.bestEffort("A"));
        regA.failures((addr, len, acc) -> RegistrationException.EFAULT);
        assertThrows(RegistrationException.class, () -> a.acquire(A_BASE, PAGE, Access.LOCAL_WRITE));
        regA.registerThrows((addr, len, acc) -> new OutOfMemoryError("simulated"));
        regA.failures((addr, len, acc) -> 0);
        assertThrows(OutOfMemoryError.class, () -> a.acquire(A_BASE, PAGE, Access.LOCAL_WRITE));
        assertEquals(0, limit.pinnedBytes());
        assertEquals(0, of(a).pinnedBytes());
    }

    @Test
    void anEnomemFromTheRegistrarNamesWhatEachTenantHolds() {
        RegistrationCache a = tenant(regA, TenantShare.bestEffort("A"));
        RegistrationCache b = tenant(regB, TenantShare.bestEffort("B"));
        fillIdle(b, B_BASE, 3);
        regA.failures((addr, len, acc) -> RegistrationException.ENOMEM);
        PinnedMemoryExhaustedException e = assertThrows(PinnedMemoryExhaustedException.class,
                () -> a.acquire(A_BASE, PAGE, Access.LOCAL_WRITE));
        // A holds the page it reserved for the registration that failed
        assertTrue(e.getMessage().contains("the shared pinned-memory limit: limit 65,536 bytes, 16,384 pinned: 'A'"
                + " holds 4,096 (guarantee 0, ceiling 65,536); 'B' holds 12,288"), e.getMessage());
    }

    @Test
    void theSnapshotReportsTheTenant() {
        RegistrationCache a = tenant(regA, new TenantShare("A", 4 * PAGE, 8 * PAGE));
        fillIdle(a, A_BASE, 3);
        MetricsSnapshot m = a.metrics();
        assertEquals(new TenantMetrics("A", 3 * PAGE, 4 * PAGE, 8 * PAGE, 0, 0, 0), m.tenant());
        assertTrue(m.format().contains("tenant A"), m.format());
        RegistrationCache plain = RegistrationCache.builder(regC).build();
        caches.add(plain);
        assertEquals(null, plain.metrics().tenant());
    }

    /** Two tenants on two threads: at every register call the limit, the ceilings and the guarantees hold. */
    @Test
    void concurrentTenantsKeepTheLimitAndTheGuarantee() throws Exception {
        RegistrationCache a = tenant(regA, new TenantShare("A", 6 * PAGE, 12 * PAGE));
        RegistrationCache b = tenant(regB, TenantShare.bestEffort("B"));
        AtomicReference<String> broken = new AtomicReference<>();
        Runnable check = () -> {
            for (TenantMetrics t : limit.tenants()) {
                if (t.pinnedBytes() > t.ceilingBytes()) {
                    broken.compareAndSet(null, "over its ceiling: " + t);
                }
            }
        };
        regA.duringRegister(() -> { peakSeenByRegistrars.accumulateAndGet(limit.pinnedBytes(), Math::max); check.run(); });
        regB.duringRegister(() -> { peakSeenByRegistrars.accumulateAndGet(limit.pinnedBytes(), Math::max); check.run(); });
        AtomicLong aRefused = new AtomicLong();
        // A never invalidates, so it never holds more than its 6 pages: it stays within its guarantee
        Thread ta = new Thread(() -> churn(a, A_BASE, 6, 1, false, aRefused));
        Thread tb = new Thread(() -> churn(b, B_BASE, 64, 2, true, new AtomicLong()));
        ta.start();
        tb.start();
        ta.join();
        tb.join();
        assertEquals(null, broken.get());
        assertEquals(0, aRefused.get(), "A, within its guarantee, was refused");
        assertEquals(0, of(a).evictionsSuffered(), "B's churn evicted A, which never left its guarantee");
        assertEquals(a.pinnedBytes() + b.pinnedBytes(), limit.pinnedBytes());
    }

    // ------------------------------------------------------------------ the limit's edges (T1 to T4)

    /** T3: a merge that would pass the tenant's ceiling falls back to the request alone, which fits. */
    @Test
    void aMergeThatWouldPassTheCeilingFallsBackToTheRequestAlone() {
        RegistrationCache a = tenant(regA, new TenantShare("A", 0, 3 * PAGE));
        a.acquire(A_BASE, 2 * PAGE, Access.LOCAL_WRITE).close(); // idle [A, A+2P)
        try (Lease l = a.acquire(A_BASE + PAGE, 3 * PAGE, Access.LOCAL_WRITE)) { // a merge would pin 4 pages
            assertEquals(A_BASE + PAGE, l.registration().address(), "the request's own range");
            assertEquals(3 * PAGE, l.registration().length());
        }
        assertEquals(1, a.metrics().get(CacheCounter.WIDENING_FALLBACKS));
        assertTrue(limit.pinnedBytes() <= 3 * PAGE, "over the ceiling: " + limit.pinnedBytes());
        assertEquals(0, of(a).admissionsRefused());
    }

    /** The same for a budget without a tenant: a merge no budget can hold is never planned past it. */
    @Test
    void aMergeThatWouldPassTheBudgetFallsBackToTheRequestAlone() {
        try (RegistrationCache c = RegistrationCache.builder(regC).budget(Budget.ofBytes(3 * PAGE)).build()) {
            c.acquire(C_BASE, 2 * PAGE, Access.LOCAL_WRITE).close();
            try (Lease l = c.acquire(C_BASE + PAGE, 3 * PAGE, Access.LOCAL_WRITE)) {
                assertEquals(C_BASE + PAGE, l.registration().address());
                assertEquals(3 * PAGE, c.pinnedBytes(), "the idle region made room; nothing over the budget");
            }
            assertEquals(0, c.metrics().get(CacheCounter.BUDGET_OVERRUNS));
            assertEquals(1, c.metrics().get(CacheCounter.WIDENING_FALLBACKS));
        }
    }

    /** T1: below a page of alignment, reservations are still whole pages, as the registrar pins them. */
    @Test
    void anAlignmentBelowAPageStillReservesWholePages() {
        limit = new PinnedMemoryLimit(2 * PAGE);
        RegistrationCache a = tenant(regA, TenantShare.bestEffort("A"), o -> o.alignment(512));
        List<Lease> held = new ArrayList<>();
        try {
            held.add(a.acquire(A_BASE, 64, Access.LOCAL_WRITE));
            held.add(a.acquire(A_BASE + PAGE, 64, Access.LOCAL_WRITE));
            assertEquals(2 * PAGE, limit.pinnedBytes(), "two pages pinned, two pages counted");
            assertThrows(PinnedMemoryExhaustedException.class,
                    () -> held.add(a.acquire(A_BASE + 2 * PAGE, 64, Access.LOCAL_WRITE)),
                    "a third page would pass the limit of two");
            assertEquals(2, regA.live().size());
            assertEquals(2 * PAGE, a.pinnedBytes());
            assertEquals(0, limit.overruns());
        } finally {
            held.forEach(Lease::close);
        }
    }

    /**
     * T2: a tenant that joins while another holds the whole limit leased is admitted, and its first request waits
     * for the other's leases to end rather than failing.
     */
    @Test
    void aLateJoinersGuaranteeIsMetAsTheOthersLeasesEnd() throws Exception {
        RegistrationCache b = tenant(regB, TenantShare.bestEffort("B"));
        List<Lease> leases = fillLeased(b, B_BASE, 16);
        RegistrationCache a = tenant(regA, TenantShare.guaranteed("A", 8 * PAGE));
        try {
            CompletableFuture<Lease> first = onNewThread(() -> a.acquire(A_BASE, PAGE, Access.LOCAL_WRITE));
            Thread.sleep(50);
            assertFalse(first.isDone(), "within its guarantee it waits for room, it is not refused: " + first);
            leases.removeFirst().close(); // one of B's regions is idle now: the limit takes it for A
            first.get(5, java.util.concurrent.TimeUnit.SECONDS).close();
            assertEquals(PAGE, a.pinnedBytes());
            assertEquals(1, of(b).evictionsSuffered());
        } finally {
            leases.forEach(Lease::close);
        }
    }

    /** T2's wait is bounded: with every lease kept, the request is refused after the limit's room wait. */
    @Test
    void aLateJoinersRequestIsRefusedAfterTheRoomWaitWhenNoLeaseEnds() {
        limit = new PinnedMemoryLimit(LIMIT, RoomRule.FURTHEST_ABOVE_GUARANTEE, java.time.Duration.ofMillis(200));
        RegistrationCache b = tenant(regB, TenantShare.bestEffort("B"));
        List<Lease> leases = fillLeased(b, B_BASE, 16);
        RegistrationCache a = tenant(regA, TenantShare.guaranteed("A", 8 * PAGE));
        try {
            long started = System.nanoTime();
            PinnedMemoryExhaustedException e = assertThrows(PinnedMemoryExhaustedException.class,
                    () -> a.acquire(A_BASE, PAGE, Access.LOCAL_WRITE));
            long waitedMillis = (System.nanoTime() - started) / 1_000_000;
            assertTrue(waitedMillis >= 200, "refused after " + waitedMillis + " ms, before its room wait of 200");
            assertTrue(e.getMessage().contains("after waiting") && e.getMessage().contains("'B' holds 65,536"),
                    e.getMessage());
            assertEquals(0, regA.registerCount());
        } finally {
            leases.forEach(Lease::close);
        }
    }

    @Test
    void refusalsGroupDigitsAsAnEnglishLocaleDoes() {
        for (long v : new long[] {0, 7, 999, 1000, -1000, 65_536, 1_048_576, -999_999, Long.MAX_VALUE, Long.MIN_VALUE}) {
            assertEquals(String.format(java.util.Locale.ENGLISH, "%,d", v), PinnedMemoryLimit.grouped(v));
        }
    }

    @Test
    void aNegativeRoomWaitIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new PinnedMemoryLimit(LIMIT, RoomRule.FURTHEST_ABOVE_GUARANTEE, java.time.Duration.ofMillis(-1)));
        assertTrue(e.getMessage().contains("roomWait PT-0.001S"), e.getMessage());
        assertEquals(PinnedMemoryLimit.DEFAULT_ROOM_WAIT, new PinnedMemoryLimit(LIMIT).roomWait());
    }

    /** T4: the bytes of a tenant that is closing come back; a request waits for them instead of being refused. */
    @Test
    void aRequestWaitsForTheBytesOfAClosingTenant() throws Exception {
        RegistrationCache b = tenant(regB, TenantShare.bestEffort("B"));
        fillIdle(b, B_BASE, 16);
        RegistrationCache a = tenant(regA, TenantShare.bestEffort("A"));
        java.util.concurrent.CountDownLatch deregistering = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch proceed = new java.util.concurrent.CountDownLatch(1);
        regB.onDeregister(r -> {
            deregistering.countDown();
            try {
                proceed.await(5, java.util.concurrent.TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        CompletableFuture<Boolean> closing = onNewThread(() -> {
            b.close();
            return true;
        });
        assertTrue(deregistering.await(5, java.util.concurrent.TimeUnit.SECONDS));
        CompletableFuture<Lease> request = onNewThread(() -> a.acquire(A_BASE, PAGE, Access.LOCAL_WRITE));
        Thread.sleep(50);
        assertFalse(request.isDone(), "refused while the closing tenant's bytes were coming back: " + request);
        proceed.countDown();
        request.get(5, java.util.concurrent.TimeUnit.SECONDS).close();
        closing.get(5, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(0, of(a).admissionsRefused());
        assertEquals(PAGE, limit.pinnedBytes());
    }

    /** Runs {@code work} on a thread of its own (the common pool may have a single worker on two cores). */
    static <T> CompletableFuture<T> onNewThread(java.util.function.Supplier<T> work) {
        CompletableFuture<T> result = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> {
            try {
                result.complete(work.get());
            } catch (Throwable t) {
                result.completeExceptionally(t);
            }
        });
        return result;
    }

    private static void churn(RegistrationCache c, long base, int pages, long seed, boolean invalidates,
            AtomicLong refused) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<Lease> held = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
            long page = rnd.nextInt(pages);
            try {
                held.add(c.acquire(base + page * PAGE, PAGE, Access.LOCAL_WRITE));
            } catch (PinnedMemoryExhaustedException e) {
                refused.incrementAndGet();
            }
            if (held.size() > 2 || rnd.nextInt(4) == 0) {
                if (!held.isEmpty()) {
                    held.remove(rnd.nextInt(held.size())).close();
                }
            }
            if (invalidates && rnd.nextInt(16) == 0) {
                c.invalidate(base + rnd.nextInt(pages) * PAGE, PAGE);
            }
        }
        held.forEach(Lease::close);
    }
}
