package io.mrcache.core;

import static io.mrcache.core.Access.LOCAL_READ;
import static io.mrcache.core.Access.LOCAL_WRITE;
import static io.mrcache.core.Access.REMOTE_WRITE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every way a registrar, the kernel or a caller can fail, and what the caller sees: the in-flight entry is
 * removed whatever {@code register} throws; a failed deregistration keeps its registration quarantined and
 * never completes a stage normally; a refused merge falls back to the request alone; addresses past user
 * space are refused; hit counts never wrap. One catalogue of every failure, hence its length.
 */
class FailurePathTest extends CacheTestSupport {
    static final int EBUSY = 16;
    /** A retry delay the fallback timer cannot reach while a test runs: the test's own clock decides. */
    private static final Duration HOUR = Duration.ofHours(1);

    RegistrationCache manualRetryCache() {
        return RegistrationCache.builder(registrar).deregistrationRetry(DeregistrationRetry.MANUAL).build();
    }

    // ---------------------------------------------------------------- 1. register throws anything

    static Stream<Supplier<Throwable>> registrarThrowables() {
        return Stream.of(() -> new RegistrationException("EFAULT from the driver", RegistrationException.EFAULT),
                () -> new IllegalStateException("driver bug"), () -> new OutOfMemoryError("simulated"),
                () -> new UnsatisfiedLinkError("ibv_reg_mr: symbol not found"));
    }

    @ParameterizedTest
    @MethodSource("registrarThrowables")
    void whateverRegisterThrowsFailsOwnerAndJoinersAlikeAndFreesTheEntry(Supplier<Throwable> make) throws Exception {
        Throwable thrown = make.get();
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        holdFirstRegister(entered, proceed);
        AtomicInteger calls = new AtomicInteger();
        registrar.registerThrows((a, l, x) -> calls.incrementAndGet() == 1 ? thrown : null);
        RegistrationCache cache = manualRetryCache();
        Future<Lease> owner = pool.submit(() -> cache.acquire(BASE, 4 * PAGE, LOCAL_WRITE));
        assertTrue(entered.await(5, TimeUnit.SECONDS));
        List<Future<Lease>> joiners = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            joiners.add(pool.submit(() -> cache.acquire(BASE + PAGE, PAGE, LOCAL_WRITE)));
        }
        waitFor(() -> cache.metrics().get(CacheCounter.SINGLE_FLIGHT_JOINS) == 2);
        CompletionStage<Void> invalidation = cache.invalidate(BASE, PAGE);
        assertFalse(invalidation.toCompletableFuture().isDone(), "waits for the in-flight registration");
        proceed.countDown();

        assertSame(thrown, failureOf(owner), "the owner sees exactly what the registrar threw");
        for (Future<Lease> j : joiners) {
            assertSame(thrown, failureOf(j), "a joiner sees the owner's exception itself, not a wrapper");
        }
        invalidation.toCompletableFuture().get(5, TimeUnit.SECONDS); // nothing was registered: completes
        assertEquals(1, cache.metrics().get(CacheCounter.REGISTRATION_FAILURES));

        Lease again = cache.acquire(BASE, PAGE, LOCAL_WRITE); // usable: registers again
        assertEquals(1, registrar.registerCount());
        again.close();
        cache.closeAsync().toCompletableFuture().get(5, TimeUnit.SECONDS);
        registrar.assertBalanced();
    }

    @Test
    void closeWaitingOnARegistrationThatThrowsAnErrorCompletes() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        registrar.duringRegister(() -> {
            entered.countDown();
            await(proceed);
            throw new OutOfMemoryError("simulated");
        });
        RegistrationCache cache = manualRetryCache();
        Future<Lease> owner = pool.submit(() -> cache.acquire(BASE, PAGE, LOCAL_WRITE));
        assertTrue(entered.await(5, TimeUnit.SECONDS));
        CompletionStage<Void> closing = cache.closeAsync();
        assertFalse(closing.toCompletableFuture().isDone());
        proceed.countDown();
        assertInstanceOf(OutOfMemoryError.class, failureOf(owner));
        closing.toCompletableFuture().get(5, TimeUnit.SECONDS);
        registrar.assertBalanced();
    }

    // ---------------------------------------------------------------- 2. deregister fails

    @Test
    void failedDeregistrationOfAPublishedRegionFailsTheStageAndIsQuarantinedUntilARetrySucceeds() throws Exception {
        try (RegistrationCache cache = manualRetryCache()) {
            Lease lease = cache.acquire(BASE, PAGE, LOCAL_WRITE);
            Registration reg = lease.registration();
            lease.close();
            registrar.deregisterFailures(r -> new RegistrationException("ibv_dereg_mr: EBUSY", EBUSY));

            CompletableFuture<Void> first = cache.invalidate(BASE, PAGE).toCompletableFuture();
            DeregistrationException e = stageFailure(first);
            assertTrue(registrar.isLive(reg), "the key is still live at the NIC");
            assertEquals(EBUSY, e.errno());
            assertEquals(List.of(reg), e.stillRegistered());
            assertMentions(e.getMessage(), "0x100000", "0x101000", "lkey=0x" + Integer.toHexString(reg.lkey()),
                    "errno 16");
            assertEquals(List.of(reg), cache.quarantined());
            assertEquals(1, cache.metrics().quarantined());
            assertEquals(1, cache.metrics().get(CacheCounter.DEREGISTRATION_FAILURES));

            // a later overlapping free sees it (no fast path past it) and waits for the next attempt
            CompletableFuture<Void> later = cache.invalidate(BASE + 100, 1).toCompletableFuture();
            assertFalse(later.isDone(), "a quarantined key is live: the stage must wait for a retry");
            assertEquals(1, cache.retryQuarantined(), "the registrar still refuses");
            stageFailure(later);

            CompletableFuture<Void> third = cache.invalidate(BASE, PAGE).toCompletableFuture();
            registrar.deregisterFailures(r -> null);
            assertEquals(0, cache.retryQuarantined());
            third.get(5, TimeUnit.SECONDS); // only now: the key is dead
            assertFalse(registrar.isLive(reg));
            assertEquals(List.of(), cache.quarantined());
            assertEquals(2, cache.metrics().get(CacheCounter.DEREGISTRATION_RETRIES));
            assertSame(cache.invalidate(BASE, PAGE), cache.invalidate(BASE, 1), "fast path again once it is gone");
        }
        registrar.assertBalanced();
    }

    @Test
    void failedDeferredDeregistrationOfARetiredLeasedRegionFailsTheStage() {
        RegistrationCache cache = manualRetryCache();
        Lease lease = cache.acquire(BASE, PAGE, LOCAL_WRITE);
        CompletableFuture<Void> stage = cache.invalidate(BASE, PAGE).toCompletableFuture();
        registrar.deregisterFailures(r -> new IllegalStateException("driver refused"));
        lease.close(); // the deferred deregistration fails on this thread; the release itself succeeds
        stageFailure(stage);
        assertEquals(1, cache.quarantined().size());
        registrar.deregisterFailures(r -> null);
        cache.close(); // close retries the quarantine once, successfully
        registrar.assertBalanced();
    }

    @Test
    void failedDeregistrationOfADoomedInFlightRegistrationFailsTheStage() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        holdFirstRegister(entered, proceed);
        RegistrationCache cache = manualRetryCache();
        Future<Lease> acquiring = pool.submit(() -> cache.acquire(BASE, PAGE, LOCAL_WRITE));
        assertTrue(entered.await(5, TimeUnit.SECONDS));
        CompletableFuture<Void> stage = cache.invalidate(BASE, PAGE).toCompletableFuture();
        registrar.deregisterFailures(r -> new RegistrationException("EBUSY", EBUSY));
        proceed.countDown();
        Lease lease = acquiring.get(5, TimeUnit.SECONDS); // the retry registers anew (and succeeds)
        DeregistrationException e = stageFailure(stage);
        Registration doomed = registrar.events().get(0).registration();
        assertEquals(List.of(doomed), e.stillRegistered());
        assertTrue(registrar.isLive(doomed));
        assertEquals(List.of(doomed), cache.quarantined());
        lease.close();
        registrar.deregisterFailures(r -> null);
        cache.close();
        registrar.assertBalanced();
    }

    @Test
    void closeReportsQuarantinedRegistrationsAndRetryStillWorksAfterClose() {
        RegistrationCache cache = manualRetryCache();
        Registration reg;
        try (Lease l = cache.acquire(BASE, PAGE, LOCAL_WRITE)) {
            reg = l.registration();
        }
        registrar.deregisterFailures(r -> new RegistrationException("EBUSY", EBUSY));
        DeregistrationException e = assertThrows(DeregistrationException.class, cache::close);
        assertMentions(e.getMessage(), "close", "lkey=0x" + Integer.toHexString(reg.lkey()));
        assertEquals(List.of(reg), cache.quarantined(), "not forgotten");
        assertTrue(registrar.isLive(reg));
        registrar.deregisterFailures(r -> null);
        assertEquals(0, cache.retryQuarantined());
        registrar.assertBalanced();
    }

    @Test
    void automaticRetryWithBackoffDeregistersOnceTheRegistrarRecovers() throws Exception {
        RegistrationCache cache = RegistrationCache.builder(registrar)
                .deregistrationRetry(DeregistrationRetry.backoff(Duration.ofMillis(1), Duration.ofMillis(8))).build();
        cache.acquire(BASE, PAGE, LOCAL_WRITE).close();
        AtomicInteger refusals = new AtomicInteger();
        registrar.deregisterFailures(r -> refusals.incrementAndGet() <= 3 ? new RegistrationException("EBUSY", EBUSY)
                : null);
        stageFailure(cache.invalidate(BASE, PAGE).toCompletableFuture());
        CompletableFuture<Void> later = cache.invalidate(BASE, PAGE).toCompletableFuture();
        waitFor(() -> registrar.deregisterCount() == 1); // the key is dead
        waitFor(() -> cache.quarantined().isEmpty());
        assertEquals(4, refusals.get(), "three refusals, then the retry that succeeded");
        assertEquals(3, cache.metrics().get(CacheCounter.DEREGISTRATION_RETRIES));
        try {
            later.get(5, TimeUnit.SECONDS);
        } catch (ExecutionException expected) {
            // it waited on an attempt that was still refused; what it must never do is complete normally
            // while the key was live, which the ledger below and the stage tests above check
        }
        cache.close();
        registrar.assertBalanced();
    }

    @Test
    void anIdleCachesRetriesRunOnTheRetryThreadNotOnASharedPool() throws Exception {
        // delays long enough that the failing call's own check for due retries cannot find this one due
        RegistrationCache cache = RegistrationCache.builder(registrar)
                .deregistrationRetry(DeregistrationRetry.backoff(Duration.ofMillis(50), Duration.ofMillis(100))).build();
        cache.acquire(BASE, PAGE, LOCAL_WRITE).close();
        List<String> attemptThreads = Collections.synchronizedList(new ArrayList<>());
        registrar.deregisterFailures(r -> {
            attemptThreads.add(Thread.currentThread().getName());
            return attemptThreads.size() <= 2 ? new RegistrationException("EBUSY", EBUSY) : null;
        });
        stageFailure(cache.invalidate(BASE, PAGE).toCompletableFuture());
        waitFor(() -> registrar.deregisterCount() == 1);
        assertEquals(3, attemptThreads.size(), "the first attempt, a refused retry, the retry that succeeded");
        // a blocking ibv_dereg_mr must not occupy the common pool, and one thread's wake-up per retry suffices
        assertTrue(attemptThreads.get(1).startsWith(RetryTimer.THREAD_NAME_PREFIX), "threads of the attempts: "
                + attemptThreads);
        assertEquals(attemptThreads.get(1), attemptThreads.get(2), "the cache's one retry thread, both times");
        cache.close();
        registrar.assertBalanced();
    }

    /** One cache's deregistration blocked in the registrar (a stuck device) must not hold up another cache's retry. */
    @Test
    void aCachesBlockedRetryDoesNotDelayAnotherCachesRetry() throws Exception {
        DeregistrationRetry fast = DeregistrationRetry.backoff(Duration.ofMillis(10), Duration.ofMillis(20));
        io.mrcache.core.testing.RecordingRegistrar stuckRegistrar = new io.mrcache.core.testing.RecordingRegistrar();
        CountDownLatch stuck = new CountDownLatch(1);
        CountDownLatch unstick = new CountDownLatch(1);
        AtomicInteger stuckAttempts = new AtomicInteger();
        stuckRegistrar.deregisterFailures(r -> {
            if (stuckAttempts.incrementAndGet() == 1) {
                return new RegistrationException("EBUSY", EBUSY);
            }
            stuck.countDown(); // the retry: hangs, as a driver call on a stuck device does
            await(unstick);
            return null;
        });
        RegistrationCache a = RegistrationCache.builder(stuckRegistrar).deregistrationRetry(fast).build();
        RegistrationCache b = RegistrationCache.builder(registrar).deregistrationRetry(fast).build();
        try {
            Lease onA = a.acquire(BASE, PAGE, LOCAL_WRITE);
            Registration stuckOne = onA.registration();
            onA.close();
            stageFailure(a.invalidate(BASE, PAGE).toCompletableFuture());
            assertTrue(stuck.await(5, TimeUnit.SECONDS), "cache A's retry is running, and blocked");

            b.acquire(BASE, PAGE, LOCAL_WRITE).close();
            AtomicInteger bAttempts = new AtomicInteger();
            registrar.deregisterFailures(r -> bAttempts.incrementAndGet() == 1 ? new RegistrationException("EBUSY", EBUSY)
                    : null);
            stageFailure(b.invalidate(BASE, PAGE).toCompletableFuture());
            CompletableFuture<Void> waiting = b.invalidate(BASE, PAGE).toCompletableFuture(); // waits for B's retry
            waiting.get(2, TimeUnit.SECONDS); // due after 10 ms; not after A's stuck call returns
            assertTrue(b.quarantined().isEmpty(), "B's retry deregistered it while A's was still blocked");
            assertTrue(stuckRegistrar.isLive(stuckOne), "A's deregistration is still blocked");
        } finally {
            unstick.countDown();
        }
        waitFor(() -> a.quarantined().isEmpty());
        a.close();
        b.close();
        stuckRegistrar.assertBalanced();
        registrar.assertBalanced();
    }

    @Test
    void aDueRetryRunsInTheThreadOfTheNextDeregistrationWithoutWaitingForTheTimer() {
        long[] now = {0};
        RegistrationCache cache = withRetryClock(() -> now[0], HOUR);
        Registration refused = registeredAndReleased(cache, 3).get(0);
        List<String> retryThreads = Collections.synchronizedList(new ArrayList<>());
        AtomicInteger attemptsOnRefused = new AtomicInteger();
        registrar.deregisterFailures(r -> {
            if (r.address() != BASE) {
                return null;
            }
            if (attemptsOnRefused.incrementAndGet() == 1) {
                return new RegistrationException("EBUSY", EBUSY);
            }
            retryThreads.add(Thread.currentThread().getName());
            return null;
        });
        stageFailure(cache.invalidate(BASE, PAGE).toCompletableFuture());
        cache.invalidate(BASE + 16 * PAGE, PAGE).toCompletableFuture().join();
        assertEquals(1, cache.quarantined().size(), "not due yet: another deregistration leaves it quarantined");
        assertEquals(1, attemptsOnRefused.get());

        now[0] += HOUR.toNanos(); // due now
        cache.invalidate(BASE + 32 * PAGE, PAGE).toCompletableFuture().join();
        assertEquals(List.of(Thread.currentThread().getName()), retryThreads,
                "the retry ran in the thread of the next deregistration, not on a timer");
        assertTrue(cache.quarantined().isEmpty());
        assertFalse(registrar.isLive(refused));
        assertEquals(1, cache.metrics().get(CacheCounter.DEREGISTRATION_RETRIES));
        cache.close();
        registrar.assertBalanced();
    }

    @Test
    void theRetryTimerRetriesEveryRegionAnIdleCacheQuarantined() throws Exception {
        RegistrationCache cache = RegistrationCache.builder(registrar)
                .deregistrationRetry(DeregistrationRetry.backoff(Duration.ofMillis(1), Duration.ofMillis(4))).build();
        List<Registration> regions = registeredAndReleased(cache, 3);
        AtomicInteger refusals = new AtomicInteger();
        registrar.deregisterFailures(r -> refusals.incrementAndGet() <= 5 ? new RegistrationException("EBUSY", EBUSY)
                : null); // each region's first attempt, and two of the retries: a second backoff round
        for (int i = 0; i < 3; i++) {
            stageFailure(cache.invalidate(BASE + i * 16 * PAGE, PAGE).toCompletableFuture());
        }
        waitFor(() -> regions.stream().noneMatch(registrar::isLive)); // retried until deregistered
        assertTrue(cache.quarantined().isEmpty());
        assertEquals(5, cache.metrics().get(CacheCounter.DEREGISTRATION_RETRIES), "three retries, then the two refused among them once more");
        cache.close();
        registrar.assertBalanced();
    }

    @Test
    void aTimerThatFiresBeforeTheRetryIsDueFiresAgainLater() throws Exception {
        AtomicLong now = new AtomicLong(); // the retries' clock stands still until the test moves it
        RegistrationCache cache = withRetryClock(now::get, Duration.ofMillis(1));
        Lease lease = cache.acquire(BASE, PAGE, LOCAL_WRITE);
        lease.close();
        AtomicInteger attempts = new AtomicInteger();
        registrar.deregisterFailures(r -> attempts.incrementAndGet() == 1 ? new RegistrationException("EBUSY", EBUSY)
                : null);
        stageFailure(cache.invalidate(BASE, PAGE).toCompletableFuture());
        Thread.sleep(40); // the timer (1 ms + the 10 ms grace) fires and finds nothing due by the retries' clock
        assertEquals(1, attempts.get(), "not due: no retry yet");
        int timers = cache.retryTimersScheduledForTest();
        assertTrue(timers >= 1 && timers <= 6, timers + " timers in 40 ms: each waits the delay and the grace");
        assertTrue(registrar.isLive(lease.registration()));
        now.addAndGet(Duration.ofMillis(2).toNanos());
        waitFor(() -> !registrar.isLive(lease.registration())); // a timer armed again retries it
        assertEquals(2, attempts.get());
        cache.close();
        registrar.assertBalanced();
    }

    @Test
    void oneTimerCoversRetriesThatFallDueTogether() throws Exception {
        AtomicLong now = new AtomicLong();
        RegistrationCache cache = withRetryClock(now::get, Duration.ofMillis(1));
        List<Registration> regions = registeredAndReleased(cache, 3);
        AtomicInteger attempts = new AtomicInteger();
        registrar.deregisterFailures(r -> attempts.incrementAndGet() <= 3 ? new RegistrationException("EBUSY", EBUSY)
                : null);
        for (int i = 0; i < 3; i++) { // all three at the same instant of the retries' clock
            stageFailure(cache.invalidate(BASE + i * 16 * PAGE, PAGE).toCompletableFuture());
        }
        assertEquals(1, cache.retryTimersScheduledForTest(), "three retries due at once, one timer");
        now.addAndGet(Duration.ofMillis(2).toNanos());
        waitFor(() -> regions.stream().noneMatch(registrar::isLive));
        cache.close();
        registrar.assertBalanced();
    }

    @Test
    void aRetryDueLaterStaysWithTheDeregistrationsThatFollow() {
        long[] now = {0};
        RegistrationCache cache = withRetryClock(() -> now[0], HOUR);
        List<Registration> regs = registeredAndReleased(cache, 4);
        AtomicInteger attempts = new AtomicInteger();
        registrar.deregisterFailures(r -> r.address() < BASE + 32 * PAGE && attempts.incrementAndGet() <= 2
                ? new RegistrationException("EBUSY", EBUSY) : null); // the first two regions' first attempts
        stageFailure(cache.invalidate(BASE, PAGE).toCompletableFuture());
        now[0] += Duration.ofMinutes(1).toNanos();
        stageFailure(cache.invalidate(BASE + 16 * PAGE, PAGE).toCompletableFuture()); // due a minute later

        now[0] = HOUR.toNanos(); // the first is due
        cache.invalidate(BASE + 32 * PAGE, PAGE).toCompletableFuture().join();
        assertFalse(registrar.isLive(regs.get(0)));
        assertTrue(registrar.isLive(regs.get(1)), "not due yet");
        now[0] += Duration.ofMinutes(1).toNanos(); // the second is due
        cache.invalidate(BASE + 48 * PAGE, PAGE).toCompletableFuture().join();
        assertFalse(registrar.isLive(regs.get(1)), "the next deregistration after it fell due retried it");
        assertEquals(2, cache.metrics().get(CacheCounter.DEREGISTRATION_RETRIES));
        cache.close();
        registrar.assertBalanced();
    }

    /** A cache whose retries fall due by {@code clock}, each {@code delay} after its failure. */
    private RegistrationCache withRetryClock(LongSupplier clock, Duration delay) {
        return RegistrationCache.builder(registrar).retryClock(clock)
                .deregistrationRetry(DeregistrationRetry.backoff(delay, delay)).build();
    }

    /** Registers and releases {@code n} one-page regions 16 pages apart from {@code BASE}. */
    private static List<Registration> registeredAndReleased(RegistrationCache cache, int n) {
        List<Registration> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Lease l = cache.acquire(BASE + i * 16 * PAGE, PAGE, LOCAL_WRITE);
            out.add(l.registration());
            l.close();
        }
        return out;
    }

    @Test
    void theBrokenVariantCompletesTheStageThoughTheKeyIsLive() {
        RegistrationCache cache = RegistrationCache.builder(registrar).deregistrationRetry(DeregistrationRetry.MANUAL)
                .faults(CacheFault.COMPLETE_AFTER_FAILED_DEREGISTRATION).build();
        Lease lease = cache.acquire(BASE, PAGE, LOCAL_WRITE);
        lease.close();
        registrar.deregisterFailures(r -> new RegistrationException("EBUSY", EBUSY));
        CompletableFuture<Void> stage = cache.invalidate(BASE, PAGE).toCompletableFuture();
        assertTrue(stage.isDone() && !stage.isCompletedExceptionally(), "the fault seam does what it says");
        assertTrue(registrar.isLive(lease.registration()), "so a test that checks the key catches it");
        registrar.deregisterFailures(r -> null);
        cache.close();
    }

    // ---------------------------------------------------------------- 3. widening refused

    @Test
    void aRefusedMergeFallsBackToTheRequestAloneAndLeavesTheOtherRegion() {
        try (RegistrationCache cache = manualRetryCache()) {
            Lease a = cache.acquire(BASE, 2 * PAGE, LOCAL_WRITE);
            Registration first = a.registration();
            a.close();
            // the first page changed protection since: any registration covering it is refused
            registrar.failures((addr, len, acc) -> addr <= BASE && addr + len > BASE ? RegistrationException.EFAULT : 0);
            Lease b = cache.acquire(BASE + PAGE + 10, 2 * PAGE, LOCAL_WRITE); // would merge into [BASE, BASE+4P)
            Registration reg = b.registration();
            assertEquals(BASE + PAGE, reg.address(), "the request's own page-aligned range");
            assertEquals(BASE + 4 * PAGE, reg.end());
            assertTrue(registrar.isLive(first), "the other region is left as it was");
            assertEquals(2, cache.regionCount());
            assertEquals(1, cache.metrics().get(CacheCounter.WIDENING_FALLBACKS));
            assertEquals(0, cache.metrics().get(CacheCounter.MERGES));
            b.close();
            try (Lease hit = cache.acquire(BASE, PAGE, LOCAL_WRITE)) {
                assertEquals(first, hit.registration(), "the untouched region still serves its range");
            }
        }
        registrar.assertBalanced();
    }

    @Test
    void aRefusedAccessUpgradeFallsBackToTheRequestsOwnRights() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar).mergePolicy(MergePolicy.NONE)
                .deregistrationRetry(DeregistrationRetry.MANUAL).build()) {
            Lease ro = cache.acquire(BASE, 2 * PAGE, LOCAL_READ);
            // the first page is read-only now: write rights over it are refused (EACCES)
            registrar.failures((addr, len, acc) -> addr <= BASE && addr + len > BASE
                    && (acc & LOCAL_WRITE) != 0 ? 13 : 0);
            Lease rw = cache.acquire(BASE + PAGE, PAGE, LOCAL_WRITE); // upgrade plan: [BASE, BASE+2P) read|write
            assertEquals(BASE + PAGE, rw.registration().address());
            assertEquals(LOCAL_WRITE, rw.registration().access(), "the request's own rights, not the union");
            assertTrue(registrar.isLive(ro.registration()), "the read-only region is left as it was");
            assertEquals(1, cache.metrics().get(CacheCounter.WIDENING_FALLBACKS));
            ro.close();
            rw.close();
        }
        registrar.assertBalanced();
    }

    @Test
    void whenTheRequestAloneIsRefusedTooTheAcquireFailsWithBothErrors() {
        try (RegistrationCache cache = manualRetryCache()) {
            cache.acquire(BASE, 2 * PAGE, LOCAL_WRITE).close();
            AtomicInteger calls = new AtomicInteger();
            registrar.failures((addr, len, acc) -> calls.incrementAndGet() == 1 ? RegistrationException.EFAULT
                    : RegistrationException.EINVAL);
            RegistrationException e = assertThrows(RegistrationException.class,
                    () -> cache.acquire(BASE + PAGE, 2 * PAGE, LOCAL_WRITE));
            assertEquals(RegistrationException.EINVAL, e.errno(), "the fallback's own failure");
            assertEquals(RegistrationException.EFAULT, ((RegistrationException) e.getSuppressed()[0]).errno());
            assertEquals(1, cache.regionCount(), "the cached region is untouched");
        }
        registrar.assertBalanced();
    }

    @Test
    void anUnwidenedRequestThatFailsIsNotRetried() {
        try (RegistrationCache cache = manualRetryCache()) {
            AtomicInteger calls = new AtomicInteger();
            registrar.failures((addr, len, acc) -> {
                calls.incrementAndGet();
                return RegistrationException.EFAULT;
            });
            assertThrows(RegistrationException.class, () -> cache.acquire(BASE, PAGE, REMOTE_WRITE | LOCAL_WRITE));
            assertEquals(1, calls.get(), "nothing to fall back to: one call");
            assertEquals(0, cache.metrics().get(CacheCounter.WIDENING_FALLBACKS));
        }
    }

    // ---------------------------------------------------------------- 4. address edges

    @Test
    void rangesPastTheTopOfUserSpaceAreRefusedWithTheValue() {
        try (RegistrationCache cache = manualRetryCache()) {
            long nearTop = Long.MAX_VALUE - 10;
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> cache.acquire(nearTop, 5, LOCAL_READ));
            assertMentions(e.getMessage(), "0x" + Long.toHexString(nearTop), "top of user-space");
            long limit = RegistrationCache.USER_SPACE_END;
            e = assertThrows(IllegalArgumentException.class, () -> cache.acquire(limit - 100, 200, LOCAL_READ));
            assertMentions(e.getMessage(), "0x" + Long.toHexString(limit + 100));
            assertThrows(IllegalArgumentException.class, () -> cache.invalidate(limit, 1));
            assertEquals(0, registrar.registerCount(), "refused before the registrar is called");
            try (Lease top = cache.acquire(limit - PAGE - 1, 1, LOCAL_READ)) { // the last page is fine
                assertTrue(top.registration().end() >= limit - PAGE, "the lease covers its request");
                assertTrue(top.registration().length() > 0);
            }
        }
        registrar.assertBalanced();
    }

    @Test
    void aRegistrationThatDoesNotCoverTheRequestIsDeregisteredAndTheAcquireFails() {
        Registrar shortChanging = new ForwardingRegistrar(registrar) {
            @Override
            public Registration register(long address, long length, int access) {
                return super.register(address, length - 1, access); // one byte short
            }
        };
        try (RegistrationCache cache = RegistrationCache.builder(shortChanging).build()) {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> cache.acquire(BASE, PAGE, LOCAL_READ));
            assertMentions(e.getMessage(), "must cover the range");
            assertEquals(0, cache.regionCount());
            assertEquals(1, registrar.deregisterCount(), "what it returned was deregistered, not leaked");
        }
        registrar.assertBalanced();
    }

    // ---------------------------------------------------------------- 5. exact metrics

    @Test
    void hitCountsDoNotWrapAtTwoToThe32() {
        int own = Region.stripe();
        int other = (own + 1) % Region.STRIPES; // a second thread's stripe: its leases go to a cell
        for (int stripe : new int[] {own, other}) {
            Region r = new Region(new Registration(BASE, PAGE, LOCAL_READ, 1, 1, 0, 1), PAGE, 0);
            int slot = stripe == own ? Region.BASE_SLOT : other;
            long seeded = (1L << 32) - 3; // the old cell wrapped here, into the lease count
            r.seedHitsForTest(slot, seeded);
            for (int i = 0; i < 10; i++) {
                assertEquals(slot, r.tryRetainHit(stripe), "the maker's stripe counts in the base word, others in cells");
                assertFalse(r.release(slot));
            }
            assertEquals(seeded + 10, r.hits());
            assertEquals(0, r.leases(), "the lease count is untouched by the hit count");

            Region fresh = new Region(new Registration(BASE, PAGE, LOCAL_READ, 1, 1, 0, 2), PAGE, 0);
            fresh.seedHitsForTest(slot, Region.HARVEST_AT - 2); // two below the harvest threshold
            for (int i = 0; i < 5; i++) {
                assertEquals(slot, fresh.tryRetainHit(stripe));
                // the add that reaches the threshold moves it out: the word's hit half is back to the hits past it
                assertEquals(i < 1 ? Region.HARVEST_AT - 1 + i : i - 1, fresh.hitHalfForTest(slot),
                        "hit half after hit " + (i + 1));
            }
            assertEquals(Region.HARVEST_AT - 2 + 5, fresh.hits(), "crossing the harvest threshold keeps the count exact");
            fresh.harvestForTest(slot); // a second thread that saw the threshold too: finds it harvested already
            assertEquals(3, fresh.hitHalfForTest(slot));
            assertEquals(Region.HARVEST_AT - 2 + 5, fresh.hits(), "harvested once, not twice");
            assertEquals(5, fresh.leases());
            assertFalse(fresh.retire(), "leased: not the retirer's to deregister");
        }
    }

    // ---------------------------------------------------------------- helpers

    private static Throwable failureOf(Future<?> f) throws InterruptedException {
        try {
            f.get(5, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError("still running: the in-flight entry was never completed", e);
        }
        throw new AssertionError("expected a failure");
    }

    private static DeregistrationException stageFailure(CompletableFuture<Void> stage) {
        CompletionException e = assertThrows(CompletionException.class, () -> stage.orTimeout(5, TimeUnit.SECONDS).join(),
                "a stage whose key is still live must not complete normally");
        return assertInstanceOf(DeregistrationException.class, e.getCause());
    }

    private static void assertMentions(String message, String... parts) {
        for (String p : parts) {
            assertTrue(message.contains(p), () -> "'" + p + "' missing from: " + message);
        }
    }
}
