package io.mrcache.core;

import static io.mrcache.core.Access.LOCAL_WRITE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.IntPredicate;
import org.junit.jupiter.api.Test;

/**
 * Another thread's step run inside a window of this one, through {@link Region#raceWindowsForTest}: the
 * interleavings the race tests reach only by chance (a victim leased or invalidated after the policy picked it;
 * a region retired before it re-enters the policy; the last lease released while an acquire backs off).
 */
class RaceWindowsTest extends CacheTestSupport {
    static final long QUARANTINED = BASE + 16 * PAGE;

    /** What a test runs with windows installed. */
    interface Action<T> {
        T run() throws Exception;
    }

    /** Runs {@code action} with {@code windows} installed, and takes them out again whatever happens. */
    static <T> T within(Region.RaceWindows windows, Action<T> action) throws Exception {
        Region.raceWindowsForTest = windows;
        try {
            return action.run();
        } finally {
            Region.raceWindowsForTest = Region.RaceWindows.NONE;
        }
    }

    /** A cache with a budget of 2 regions, one of them taken by a quarantined registration (it still counts). */
    private RegistrationCache budgetOfTwoWithOneQuarantined() {
        RegistrationCache cache = RegistrationCache.builder(registrar).budget(new Budget(Long.MAX_VALUE, 2))
                .deregistrationRetry(DeregistrationRetry.MANUAL).build();
        registrar.deregisterFailures(r -> r.address() == QUARANTINED ? new RegistrationException("EBUSY", 16) : null);
        cache.acquire(QUARANTINED, PAGE, LOCAL_WRITE).close();
        cache.invalidate(QUARANTINED, PAGE); // fails: quarantined, counted against the budget
        registrar.deregisterFailures(r -> null);
        return cache;
    }

    /**
     * A budget of 2 regions, one taken by a quarantined registration (it still counts) and one by an idle
     * region at BASE; then a miss at BASE + 8 pages makes room, and {@code step} runs just before the evictor
     * marks the region at BASE.
     */
    private RegistrationCache missWhileTheVictimIs(Consumer<RegistrationCache> step) throws Exception {
        RegistrationCache cache = budgetOfTwoWithOneQuarantined();
        cache.acquire(BASE, PAGE, LOCAL_WRITE).close();
        within(new Region.RaceWindows() {
            @Override
            public void beforeMark(Region r) {
                if (r.start == BASE) {
                    step.accept(cache);
                }
            }
        }, () -> {
            cache.acquire(BASE + 8 * PAGE, PAGE, LOCAL_WRITE).close();
            return null;
        });
        return cache;
    }

    @Test
    void aVictimLeasedAfterThePolicyPickedItIsWithdrawnNotEvicted() throws Exception {
        Lease[] taken = new Lease[1];
        RegistrationCache cache = missWhileTheVictimIs(c -> taken[0] = c.acquire(BASE, PAGE, LOCAL_WRITE));
        assertEquals(1, cache.metrics().get(CacheCounter.EVICTIONS_WITHDRAWN), "counted as withdrawn");
        assertTrue(registrar.isLive(taken[0].registration()), "the lease kept its registration");
        // the budget still had to be met: the miss's own region went once it was released
        assertEquals(1, cache.metrics().get(CacheCounter.EVICTIONS));
        assertEquals(1, cache.metrics().get(CacheCounter.BUDGET_OVERRUNS), "over while every other one was leased");
        taken[0].close();
        cache.close();
    }

    @Test
    void aMakeRoomCalledWhileAnotherWalksIsLeftToTheWalkerWhoWalksAgain() throws Exception {
        boolean[] once = {false};
        RegistrationCache cache = missWhileTheVictimIs(c -> {
            if (!once[0]) { // a miss and its release inside the walk: both calls of makeRoom find it walking
                once[0] = true;
                c.acquire(BASE + 16 * PAGE, PAGE, LOCAL_WRITE).close();
            }
        });
        assertTrue(once[0]);
        assertEquals(0, cache.metrics().get(CacheCounter.BUDGET_OVERRUNS), "a call turned away reports no overrun");
        // one slot of the budget of 2 is the quarantined registration's, so one published region at most
        assertEquals(1, cache.regionCount(), "the walker walked again for the calls it turned away");
        cache.acquire(BASE + 24 * PAGE, PAGE, LOCAL_WRITE).close();
        assertEquals(1, cache.regionCount(), "and left no request behind: the next miss's own call walked");
        cache.close();
    }

    @Test
    void aHarvestWhoseWordChangedUnderItReadsItAgainAndCountsTheHitsOnce() throws Exception {
        Region r = new Region(new Registration(BASE, PAGE, LOCAL_WRITE, 1, 1, 0, 1), PAGE, 0);
        int own = Region.stripe();
        r.seedHitsForTest(Region.BASE_SLOT, Region.HARVEST_AT); // the maker's own word, at the threshold
        boolean[] once = {false};
        within(new Region.RaceWindows() {
            @Override
            public void beforeHarvestSwap(Region region) {
                if (!once[0]) { // another hit lands between the harvest's read and its swap
                    once[0] = true;
                    assertEquals(Region.BASE_SLOT, region.tryRetainHit(own));
                }
            }
        }, () -> {
            r.harvestForTest(Region.BASE_SLOT);
            return null;
        });
        assertTrue(once[0]);
        assertEquals(Region.HARVEST_AT + 1, r.hits(), "the hits moved out once, and the one that came between kept");
        assertEquals(1, r.hitHalfForTest(Region.BASE_SLOT), "the swap took the threshold off the word it read again");
        assertEquals(1, r.leases(), "the lease taken in between is still counted");
    }

    @Test
    void aVictimInvalidatedAfterThePolicyPickedItIsNotCountedAsWithdrawn() throws Exception {
        RegistrationCache cache = missWhileTheVictimIs(c -> c.invalidate(BASE, PAGE));
        assertEquals(0, cache.metrics().get(CacheCounter.EVICTIONS_WITHDRAWN), "gone, not withdrawn");
        assertEquals(0, cache.metrics().get(CacheCounter.EVICTIONS));
        assertEquals(2, cache.metrics().get(CacheCounter.INVALIDATED_REGIONS), "the quarantined one, then the victim");
        cache.close();
    }

    @Test
    void aRegionInvalidatedBeforeItReentersThePolicyLeavesItAgain() throws Exception {
        RegistrationCache cache = RegistrationCache.builder(registrar).budget(new Budget(Long.MAX_VALUE, 1)).build();
        Lease a = cache.acquire(BASE, PAGE, LOCAL_WRITE);
        Lease b = cache.acquire(BASE + 8 * PAGE, PAGE, LOCAL_WRITE); // over budget: the policy drops a leased one
        assertTrue(cache.metrics().get(CacheCounter.EVICTIONS_WITHDRAWN) > 0);
        within(new Region.RaceWindows() {
            @Override
            public void beforeReentry(Region r) {
                cache.invalidate(r.start, PAGE); // its free, between its release and its return to the policy
            }
        }, () -> {
            a.close();
            b.close();
            return null;
        });
        assertEquals(cache.metrics().get(CacheCounter.EVICTIONS_WITHDRAWN),
                cache.metrics().get(CacheCounter.INVALIDATED_REGIONS), "each dropped region was freed on its way back");
        assertEquals(cache.regionCount(), cache.policySizeForTest(), "the policy holds the published regions only");
        cache.close();
    }

    /**
     * I5: Caffeine's own eviction picks leased region A while another thread's {@code evictIdle} has it marked
     * EVICTING; that evictor then withdraws (A is leased). A must re-enter the policy once idle, or no later walk
     * can ever evict it.
     */
    @Test
    void aRegionThePolicyDropsWhileAnotherEvictorHoldsItReentersThePolicyWhenIdle() throws Exception {
        RegistrationCache cache = dropWhileAnotherEvictorHoldsIt(RegistrationCache.builder(registrar));
        assertTrue(cache.metrics().get(CacheCounter.EVICTIONS_WITHDRAWN) >= 1, "Caffeine's drop counted as withdrawn");
        assertEquals(cache.regionCount(), cache.policySizeForTest(), "every idle published region is in the policy");
        assertTrue(cache.regionsForTest().stream().noneMatch(Region::isDroppedByPolicy),
                "a region put back into the policy still carries the dropped mark");
        Lease c = cache.acquire(BASE + 16 * PAGE, PAGE, LOCAL_WRITE);
        assertEquals(1, cache.regionCount(), "the idle regions made room for a new leased one");
        c.close();
        cache.close();
    }

    /** The same interleaving on the broken variant loses the region (the check above can fail). */
    @Test
    void withTheDropLostTheSameInterleavingLeavesAnIdleRegionNothingEvicts() throws Exception {
        RegistrationCache cache = dropWhileAnotherEvictorHoldsIt(
                RegistrationCache.builder(registrar).faults(CacheFault.LOSE_POLICY_DROPS));
        assertEquals(cache.regionCount() - 1, cache.policySizeForTest(), "one idle region outside the policy");
        Lease c = cache.acquire(BASE + 16 * PAGE, PAGE, LOCAL_WRITE);
        assertEquals(2, cache.regionCount(), "over a budget of one, for good");
        c.close();
        cache.close();
    }

    /**
     * I5: the policy dropped A while it was leased; {@code evictIdle} marks A, its sum finds the lease, and the lease
     * is released before the evictor takes its mark off, so the release finds A evicting, not idle. The evictor,
     * withdrawing, must put A back into the policy, or no walk can ever evict it.
     */
    @Test
    void aDroppedRegionReleasedWhileAnEvictorWithdrawsIsPutBackByTheEvictor() throws Exception {
        RegistrationCache cache = RegistrationCache.builder(registrar).budget(new Budget(Long.MAX_VALUE, 1)).build();
        Lease a = cache.acquire(BASE, PAGE, LOCAL_WRITE);
        Lease b = cache.acquire(BASE + 8 * PAGE, PAGE, LOCAL_WRITE); // over budget: Caffeine drops a leased one
        Region dropped = cache.regionsForTest().stream().filter(Region::isDroppedByPolicy).findFirst().orElseThrow();
        Lease held = dropped.start == BASE ? a : b;
        Lease other = held == a ? b : a;
        boolean[] once = {false};
        within(new Region.RaceWindows() {
            @Override
            public void afterLeasedSum(Region r) {
                if (r == dropped && !once[0]) {
                    once[0] = true;
                    held.close(); // its release finds the region evicting: it cannot put it back itself
                }
            }
        }, cache::evictIdle);
        assertTrue(once[0], "the window was reached");
        other.close();
        assertEveryIdleRegionIsInThePolicyAndTheBudgetOfOneHolds(cache);
    }

    /**
     * I5: Caffeine drops leased A; inside that drop the evictor's sum finds A's lease, and the lease is released
     * before the evictor takes its mark off (and before A is marked dropped), so the release neither finds A idle
     * nor finds the mark. Marking A, the policy must see it idle and put it back.
     */
    @Test
    void aRegionReleasedWhileThePolicyDropsItIsPutBackByTheDrop() throws Exception {
        RegistrationCache cache = RegistrationCache.builder(registrar).budget(new Budget(Long.MAX_VALUE, 1)).build();
        Lease a = cache.acquire(BASE, PAGE, LOCAL_WRITE);
        boolean[] once = {false};
        Lease b = within(new Region.RaceWindows() {
            @Override
            public void afterLeasedSum(Region r) {
                if (r.start == BASE && !once[0]) {
                    once[0] = true;
                    a.close();
                }
            }
        }, () -> cache.acquire(BASE + 8 * PAGE, PAGE, LOCAL_WRITE)); // over budget: Caffeine drops A
        assertTrue(once[0], "Caffeine chose A and the window was reached");
        assertTrue(cache.regionsForTest().stream().noneMatch(r -> r.isIdle() && r.isDroppedByPolicy()),
                "an idle region the policy dropped was not put back");
        b.close();
        assertEveryIdleRegionIsInThePolicyAndTheBudgetOfOneHolds(cache);
    }

    /**
     * The broken variant {@link CacheFault#LOSE_POLICY_DROPS} loses only the drop of a region idle when marked: a
     * region dropped while leased (and live) is still counted and marked, so its release puts it back.
     */
    @Test
    void theLostDropVariantStillMarksARegionDroppedWhileLeased() throws Exception {
        RegistrationCache cache = RegistrationCache.builder(registrar).budget(new Budget(Long.MAX_VALUE, 1))
                .faults(CacheFault.LOSE_POLICY_DROPS).build();
        Lease a = cache.acquire(BASE, PAGE, LOCAL_WRITE);
        Lease b = cache.acquire(BASE + 8 * PAGE, PAGE, LOCAL_WRITE); // over budget: Caffeine drops a leased one
        assertEquals(1, cache.metrics().get(CacheCounter.EVICTIONS_WITHDRAWN), "the drop counted as withdrawn");
        assertEquals(1, cache.regionsForTest().stream().filter(Region::isDroppedByPolicy).count(), "and marked");
        a.close();
        b.close();
        assertEquals(cache.regionCount(), cache.policySizeForTest(), "the release put the dropped region back");
        cache.close();
    }

    /**
     * I5: a walk finds every region it could take leased (one slot of the budget of 2 is a quarantined
     * registration's); the last lease on the older region is released before the walk sets the overrun flag, so
     * that release does not walk. The walker must walk once more after setting the flag and evict it.
     */
    @Test
    void aReleaseBetweenAFailedWalkAndTheOverrunFlagIsCoveredByASecondWalk() throws Exception {
        RegistrationCache cache = budgetOfTwoWithOneQuarantined();
        Lease a = cache.acquire(BASE, PAGE, LOCAL_WRITE);
        boolean[] once = {false};
        Lease c = within(new Region.RaceWindows() {
            @Override
            public void beforeOverrunFlag() {
                if (!once[0]) {
                    once[0] = true;
                    a.close();
                }
            }
        }, () -> cache.acquire(BASE + 8 * PAGE, PAGE, LOCAL_WRITE));
        assertTrue(once[0], "the walk failed and the window was reached");
        assertEquals(1, cache.regionCount(), "the second walk evicted the region released in the window");
        assertEquals(1, cache.metrics().get(CacheCounter.EVICTIONS));
        assertEquals(0, cache.metrics().get(CacheCounter.BUDGET_OVERRUNS), "within budget when the miss returned");
        c.close();
        cache.close();
    }

    /** Every lease released: each idle region is in the policy, and a miss still makes room in a budget of one. */
    private static void assertEveryIdleRegionIsInThePolicyAndTheBudgetOfOneHolds(RegistrationCache cache) {
        assertEquals(cache.regionCount(), cache.policySizeForTest(), "every idle published region is in the policy");
        cache.acquire(BASE + 16 * PAGE, PAGE, LOCAL_WRITE).close();
        assertEquals(1, cache.regionCount(), "the idle regions made room: the budget holds again");
        cache.close();
    }

    /**
     * A budget of one region; A is leased; a thread's {@code evictIdle} marks A, and before it sums A's leases
     * an acquire of B makes Caffeine drop A; then the evictor withdraws and every lease is released.
     */
    private RegistrationCache dropWhileAnotherEvictorHoldsIt(RegistrationCache.Builder builder) throws Exception {
        RegistrationCache cache = builder.budget(new Budget(Long.MAX_VALUE, 1)).build();
        Lease a = cache.acquire(BASE, PAGE, LOCAL_WRITE);
        Region regionA = cache.regionsForTest().getFirst();
        CountDownLatch marked = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        Lease[] b = new Lease[1];
        within(new Region.RaceWindows() {
            @Override
            public void afterMark(Region r) {
                if (Thread.currentThread().getName().equals("evictor")) {
                    marked.countDown();
                    await(proceed);
                }
            }
        }, () -> {
            Thread evictor = new Thread(cache::evictIdle, "evictor");
            evictor.start();
            await(marked);
            b[0] = cache.acquire(BASE + 8 * PAGE, PAGE, LOCAL_WRITE); // over budget: Caffeine drops A
            proceed.countDown();
            evictor.join();
            return null;
        });
        assertTrue(regionA.isLive(), "leased: neither evictor took it");
        a.close();
        b[0].close();
        assertEquals(1, cache.regionCount(), "one idle region left after the releases");
        return cache;
    }

    @Test
    void anAcquireBackingOffFromARetiredRegionAfterItsLastHolderLeftDeregistersIt() throws Exception {
        RegistrationCache cache = RegistrationCache.builder(registrar).build();
        Lease held = cache.acquire(BASE, PAGE, LOCAL_WRITE); // the front table remembers its region
        CompletableFuture<Void> freed = cache.invalidate(BASE, PAGE).toCompletableFuture();
        assertFalse(freed.isDone(), "retired; the held lease defers its deregistration");
        // the lock-free acquire below finds the retired region in the front table, counts its lease, sees RETIRED;
        // before it takes the lease back, the holder releases: not the last (the acquire's lease still counts),
        // so the acquire's back-off is, and must deregister
        Lease again = within(onBackOff(r -> held.close()), () -> cache.acquire(BASE, PAGE, LOCAL_WRITE));
        assertFalse(registrar.isLive(held.registration()), "the back-off deregistered the retired registration");
        assertTrue(freed.isDone() && !freed.isCompletedExceptionally(), "and the free's stage completed");
        assertTrue(registrar.isLive(again.registration()), "the acquire registered anew");
        assertEquals(1, cache.metrics().get(CacheCounter.DEFERRED_DEREGISTRATIONS));
        again.close();
        cache.close();
    }

    static Region.RaceWindows onBackOff(Consumer<Region> step) {
        return new Region.RaceWindows() {
            @Override
            public void beforeBackOff(Region r) {
                step.accept(r);
            }
        };
    }

    /** The cache's one region at BASE, marked as an evictor does before its sum; then an acquire of it. */
    private Lease acquireWhileAnEvictorHasMarkedTheRegion(RegistrationCache cache, Consumer<Region> eachBackOff)
            throws Exception {
        cache.acquire(BASE, PAGE, LOCAL_WRITE).close();
        cache.regionsForTest().get(0).beginEvictionForTest();
        return within(onBackOff(eachBackOff), () -> cache.acquire(BASE, PAGE, LOCAL_WRITE));
    }

    @Test
    void aHitUnderTheLockWhoseLeaseLandsInCellZeroIsServed() throws Exception {
        // the same interleaving from a thread whose lease stripe is 0: its lease's slot is 0, still a lease
        RegistrationCache cache = RegistrationCache.builder(registrar).build();
        onThread(stripe -> stripe != 0, () -> {
            cache.acquire(BASE, PAGE, LOCAL_WRITE).close(); // the region's own word is this thread's
            cache.regionsForTest().get(0).beginEvictionForTest();
            return null;
        });
        int[] backOffs = {0};
        Lease l = onThread(stripe -> stripe == 0, () -> within(onBackOff(r -> {
            if (++backOffs[0] == 2) {
                r.endEvictionForTest();
            }
        }), () -> cache.acquire(BASE, PAGE, LOCAL_WRITE)));
        assertEquals(1, registrar.registerCount(), "served by the region, found again under the lock");
        assertEquals(1, cache.metrics().get(CacheCounter.HITS));
        l.close();
        cache.close();
    }

    /** Runs {@code action} on a new thread whose lease stripe passes {@code wanted}; its result. */
    private static <T> T onThread(IntPredicate wanted, Action<T> action) throws Exception {
        AtomicReference<Object> out = new AtomicReference<>();
        for (;;) {
            Thread t = new Thread(() -> {
                try {
                    out.set(action.run());
                } catch (Throwable e) {
                    out.set(e);
                }
            });
            if (!wanted.test(LeaseStripes.of(t.threadId()))) {
                continue; // never started: try the next thread id
            }
            t.start();
            t.join();
            if (out.get() instanceof Throwable e) {
                throw new AssertionError(e);
            }
            @SuppressWarnings("unchecked")
            T result = (T) out.get();
            return result;
        }
    }

    @Test
    void anAcquireWhoseLockFreeTriesMetAnEvictionThatThenGaveUpHitsUnderTheLock() throws Exception {
        RegistrationCache cache = RegistrationCache.builder(registrar).build();
        int[] backOffs = {0};
        Lease l = acquireWhileAnEvictorHasMarkedTheRegion(cache, r -> {
            if (++backOffs[0] == 2) { // the front table's try, then the index's: the evictor's sum saw this lease
                r.endEvictionForTest();
            }
        });
        assertEquals(2, backOffs[0]);
        assertEquals(1, registrar.registerCount(), "served by the region, found again under the lock");
        assertEquals(1, cache.metrics().get(CacheCounter.HITS));
        l.close();
        cache.close();
    }

    @Test
    void anAcquireThatMeetsAnEvictionOnEveryTryRegistersAnew() throws Exception {
        RegistrationCache cache = RegistrationCache.builder(registrar).build();
        int[] backOffs = {0};
        Lease l = acquireWhileAnEvictorHasMarkedTheRegion(cache, r -> backOffs[0]++);
        assertEquals(2, backOffs[0], "front table, index; under the lock the lookup passes a region being evicted");
        assertEquals(2, registrar.registerCount());
        assertTrue(registrar.isLive(l.registration()));
        l.close();
        cache.close();
    }

    @Test
    void aJoinerBackingOffFromARegionFreedRightAfterItsPublicationDeregistersItWhenLast() throws Exception {
        RegistrationCache cache = RegistrationCache.builder(registrar).build();
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        holdFirstRegister(entered, proceed);
        Future<Lease> owner = pool.submit(() -> cache.acquire(BASE, PAGE, LOCAL_WRITE));
        await(entered);
        Future<Lease> joiner = pool.submit(() -> cache.acquire(BASE, PAGE, LOCAL_WRITE));
        waitFor(() -> cache.metrics().get(CacheCounter.SINGLE_FLIGHT_JOINS) == 1);
        CompletableFuture<CompletableFuture<Void>> freed = new CompletableFuture<>();
        Lease joined = within(new Region.RaceWindows() {
            @Override
            public void beforeJoinerLease(Region r) { // the range is freed while the owner still holds its lease
                freed.complete(cache.invalidate(BASE, PAGE).toCompletableFuture());
            }

            @Override
            public void beforeBackOff(Region r) { // the owner releases while the joiner's lease still counts
                try {
                    owner.get(10, TimeUnit.SECONDS).close();
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            }
        }, () -> {
            proceed.countDown();
            return joiner.get(10, TimeUnit.SECONDS);
        });
        Registration first = owner.get().registration();
        assertFalse(registrar.isLive(first), "the joiner's back-off was the last lease: it deregistered");
        assertTrue(freed.get().isDone() && !freed.get().isCompletedExceptionally(), "the free's stage completed");
        assertTrue(registrar.isLive(joined.registration()) && !joined.registration().equals(first), "joined, then anew");
        joined.close();
        cache.close();
    }

    /**
     * A publication's victims are the publisher's to unlink, in its own index copy: a release on another thread
     * while the policy chooses them (the release drains the regions evicted elsewhere) finds none. When that
     * release could take them, it unlinked them in an index copy of its own (one more copy and one more hold of
     * the cache's lock), and while the publication still wrote to the policy under the cache's lock, it waited
     * for that lock, the publisher found the cache one region over its budget and walked for another victim: two
     * evictions where one was needed.
     */
    @Test
    void aReleaseOnAnotherThreadWhileAPublicationChoosesItsVictimLeavesItToThePublisher() throws Exception {
        int budget = 64;
        RegistrationCache cache = RegistrationCache.builder(registrar).budget(new Budget(Long.MAX_VALUE, budget))
                .build();
        for (int i = 0; i < budget; i++) {
            cache.acquire(BASE + i * 8 * PAGE, PAGE, LOCAL_WRITE).close();
        }
        Lease held = cache.acquire(BASE, PAGE, LOCAL_WRITE);
        AtomicReference<Region> victim = new AtomicReference<>();
        AtomicReference<Thread> releaser = new AtomicReference<>();
        boolean[] releaseDoneInWindow = {false};
        boolean[] victimIndexedAfterRelease = {false};
        within(new Region.RaceWindows() {
            @Override
            public void afterVictimChosen(Region r) {
                if (victim.compareAndSet(null, r)) {
                    Thread t = new Thread(held::close, "releaser");
                    releaser.set(t);
                    t.start();
                    // done at once, unless it took the victim and parks on the lock this thread holds
                    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                    while (t.isAlive() && t.getState() != Thread.State.WAITING && System.nanoTime() < until) {
                        Thread.onSpinWait();
                    }
                    releaseDoneInWindow[0] = !t.isAlive();
                    victimIndexedAfterRelease[0] = cache.registrations().stream().anyMatch(g -> g.address() == r.start);
                }
            }
        }, () -> {
            cache.acquire(BASE + budget * 8 * PAGE, PAGE, LOCAL_WRITE).close();
            return null;
        });
        releaser.get().join();
        assertTrue(victim.get() != null && victim.get().start != BASE, "the policy chose an idle victim: " + victim);
        assertTrue(releaseDoneInWindow[0], "the release found none of the publication's victims to unlink: it did"
                + " not wait for the publisher's lock");
        assertTrue(victimIndexedAfterRelease[0], "the release left the victim to the publisher");
        assertEquals(1, cache.metrics().get(CacheCounter.EVICTIONS), "one region over the budget, one eviction");
        assertEquals(budget, cache.regionCount(), "the budget is full, not one short");
        assertFalse(cache.registrations().stream().anyMatch(g -> g.address() == victim.get().start),
                "the victim left the index");
        cache.close();
    }

    /**
     * A release runs the policy's maintenance (its buffer of recorded reads filled) and stops inside it, holding
     * Caffeine's eviction lock, {@code before} or after the maintenance ran; meanwhile a miss on another thread
     * writes its region to the policy, whose own maintenance cannot run. The miss must not publish until its
     * write's victims are chosen: it runs the maintenance itself once the lock is free, so it waits, with the
     * cache still at its budget, until the release goes on. Returns the victim chosen, the cache and the miss's
     * registration.
     */
    private record MaintenanceRace(Region victim, RegistrationCache cache, Registration missed) {
    }

    private MaintenanceRace missWhileAReleaseHoldsThePolicysMaintenance(boolean before) throws Exception {
        int budget = 64;
        RegistrationCache cache = RegistrationCache.builder(registrar).budget(new Budget(Long.MAX_VALUE, budget))
                .build();
        for (int i = 0; i < budget; i++) {
            cache.acquire(BASE + i * 8 * PAGE, PAGE, LOCAL_WRITE).close();
        }
        CountDownLatch stopped = new CountDownLatch(1);
        CountDownLatch go = new CountDownLatch(1);
        AtomicReference<Thread> releaser = new AtomicReference<>();
        AtomicReference<Region> victim = new AtomicReference<>();
        AtomicBoolean once = new AtomicBoolean();
        AtomicBoolean released = new AtomicBoolean();
        AtomicReference<Lease> missLease = new AtomicReference<>();
        return within(new Region.RaceWindows() {
            @Override
            public void inPolicyMaintenance(boolean ran) {
                if (ran != before && Thread.currentThread() == releaser.get() && once.compareAndSet(false, true)) {
                    stopped.countDown();
                    await(go);
                }
            }

            @Override
            public void afterVictimChosen(Region r) {
                victim.compareAndSet(null, r);
            }
        }, () -> {
            Thread hits = new Thread(() -> { // hits on one region until a release's read drain runs maintenance
                for (int i = 0; i < 1_000_000 && !released.get(); i++) {
                    cache.acquire(BASE, PAGE, LOCAL_WRITE).close();
                }
            }, "releaser");
            releaser.set(hits);
            hits.start();
            await(stopped);
            Thread miss = new Thread(() -> missLease.set(cache.acquire(BASE + budget * 8 * PAGE, PAGE, LOCAL_WRITE)),
                    "miss");
            miss.start();
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (miss.isAlive() && miss.getState() != Thread.State.WAITING && System.nanoTime() < until) {
                Thread.onSpinWait();
            }
            boolean waited = miss.isAlive();
            int published = cache.regionCount();
            released.set(true);
            go.countDown();
            miss.join();
            hits.join();
            Lease lease = missLease.get();
            Registration missed = lease.registration();
            lease.close();
            assertTrue(waited, "the miss waited for the lock the release held");
            assertEquals(budget, published, "and had not published before its write's victim was chosen");
            assertTrue(victim.get() != null, "a victim was chosen for the miss's write");
            return new MaintenanceRace(victim.get(), cache, missed);
        });
    }

    @Test
    void aMissWhoseWriteCouldNotRunTheMaintenanceRunsItOnceFreeAndPublishesWithItsVictimGone() throws Exception {
        MaintenanceRace race = missWhileAReleaseHoldsThePolicysMaintenance(false);
        RegistrationCache cache = race.cache();
        Region victim = race.victim();
        assertEquals(1, cache.metrics().get(CacheCounter.EVICTIONS), "one region over the budget, one eviction");
        assertEquals(64, cache.regionCount());
        assertTrue(cache.registrations().contains(race.missed()), "the miss's region is published");
        assertFalse(cache.registrations().contains(victim.registration()), "the victim left the index");
        assertFalse(registrar.isLive(victim.registration()), "and was deregistered");
        cache.close();
    }

    @Test
    void aVictimChosenByAReleasesMaintenanceIsHandedOnUnlinkedAndDeregistered() throws Exception {
        MaintenanceRace race = missWhileAReleaseHoldsThePolicysMaintenance(true);
        RegistrationCache cache = race.cache();
        Region victim = race.victim(); // chosen by the release's maintenance
        waitFor(() -> !registrar.isLive(victim.registration()));
        assertFalse(cache.registrations().contains(victim.registration()), "the victim left the index");
        assertTrue(cache.registrations().contains(race.missed()), "the miss's region is published");
        // the miss may read the budget before the release has deregistered the victim and evict one more
        long evictions = cache.metrics().get(CacheCounter.EVICTIONS);
        assertTrue(evictions == 1 || evictions == 2, "evictions: " + evictions);
        assertEquals(64 + 1 - evictions, cache.regionCount());
        cache.close();
    }
}
