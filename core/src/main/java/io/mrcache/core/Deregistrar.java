package io.mrcache.core;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * Makes each deregistration attempt of a retired region, and keeps the ones that fail. Never throws: whatever
 * the registrar throws, the keys are still live, so the region stays where every overlapping invalidation
 * sees it (the cache's retiring index), enters the quarantine, the stages waiting on the attempt complete
 * exceptionally, and a retry falls due after the {@link DeregistrationRetry} delay (or is left to
 * {@link #retryQuarantined()}).
 *
 * <p>A due retry runs in the next thread that makes a deregistration attempt (it is already making registrar
 * calls), or else on this cache's {@link RetryTimer} thread at most {@link #FALLBACK_GRACE_NANOS} after it fell due.
 * Under load retries thus cost no wake-up at all, where a timer per failure cost one or two; a thread's
 * sleep and wake-up is the dearest thing a busy cache can do on a virtual machine.
 *
 * <p>It shares the cache's lock: a failed attempt swaps in the region's next outcome under it, so an
 * invalidation (which reads that outcome under the same lock) waits either for the failed attempt or for the
 * retry, never for neither.
 */
final class Deregistrar {
    /** How long after its due time an idle cache's retry may wait for the timer: 10 ms. */
    static final long FALLBACK_GRACE_NANOS = 10_000_000L;
    private static final long NONE_DUE = Long.MAX_VALUE;

    private final Registrar registrar;
    private final CacheMetrics metrics;
    private final DeregistrationRetry retry;
    private final int faults;
    private final ReentrantLock lock;
    /** Called after a successful attempt: unlinks the region from the retiring index (under the lock). */
    private final Consumer<Region> forget;
    private final LongSupplier clock;
    /** Regions whose deregistration failed and that no attempt is running for now, with their due times. */
    @GuardedBy("lock")
    private final List<Quarantined> quarantine = new ArrayList<>();
    /**
     * The earliest due time in the quarantine ({@link #NONE_DUE}: none, or manual retries). Written under the
     * lock, read without it by every deregistration.
     */
    private volatile long nextDue = NONE_DUE;
    /** When the pending fallback timer fires (clock time), or {@link #NONE_DUE} when none is pending. */
    @GuardedBy("lock")
    private long timerAt = NONE_DUE;
    /** This cache's own fallback timer thread (another cache's stuck deregistration cannot hold it up). */
    private final RetryTimer timer = new RetryTimer();
    /** Fallback timers scheduled (for tests: one covers many retries). */
    private final AtomicInteger timersScheduled = new AtomicInteger();

    private record Quarantined(Region region, long dueAt) {
    }

    Deregistrar(Registrar registrar, CacheMetrics metrics, DeregistrationRetry retry, int faults, ReentrantLock lock,
            LongSupplier clock, Consumer<Region> forget) {
        this.registrar = registrar;
        this.metrics = metrics;
        this.retry = retry;
        this.faults = faults;
        this.lock = lock;
        this.clock = clock;
        this.forget = forget;
    }

    /**
     * One deregistration attempt of a retired, unleased region whose claim the caller won (or that it took
     * out of the quarantine), then the retries that are due. Outside the lock, like every registrar call.
     *
     * @return what the registrar threw (the keys are still live and the region is quarantined), or null when
     *         the keys are dead: a caller that won the claim knows its own attempt's outcome without a future
     */
    @Nullable Throwable deregister(Region r) {
        Throwable failure = attempt(r);
        long due = nextDue;
        if (due != NONE_DUE && clock.getAsLong() - due >= 0) {
            retryDue();
        }
        return failure;
    }

    /**
     * {@link #deregister} for each region, outside the lock. An indexed loop, not
     * {@code forEach(this::deregister)}: no bound method reference or iterator on every miss.
     */
    void deregisterAll(List<Region> regions) {
        for (int i = 0; i < regions.size(); i++) {
            deregister(regions.get(i));
        }
    }

    private @Nullable Throwable attempt(Region r) {
        Throwable failure = null;
        try {
            registrar.deregister(r.registration());
        } catch (Throwable t) {
            failure = t;
        }
        if (failure == null) {
            metrics.deregistered(r.pinnedBytes());
            forget.accept(r);
            r.deregistered();
            return null;
        }
        metrics.increment(CacheCounter.DEREGISTRATION_FAILURES);
        @Nullable CompletableFuture<Void> failedAttempt; // null: nobody waited for this attempt
        long timerDelay = -1;
        lock.lock();
        try {
            failedAttempt = r.startRetry();
            long now = clock.getAsLong();
            long dueAt = now + retry.delayNanos(r.failedDeregistrations());
            quarantine.add(new Quarantined(r, dueAt));
            if (retry.automatic()) {
                nextDue = Math.min(nextDue, dueAt);
                timerDelay = armTimer(now, dueAt);
            }
        } finally {
            lock.unlock();
        }
        if (failedAttempt != null) {
            completeFailed(failedAttempt, r, failure);
        }
        if (timerDelay >= 0) {
            scheduleTimer(timerDelay);
        }
        return failure;
    }

    /**
     * The outcome of an attempt on {@code r} that threw {@code failure}, for a caller that made the attempt
     * itself and so asked for no outcome beforehand (an invalidation that won the claim).
     */
    CompletableFuture<Void> failedAttempt(Region r, Throwable failure) {
        CompletableFuture<Void> outcome = new CompletableFuture<>();
        completeFailed(outcome, r, failure);
        return outcome;
    }

    private void completeFailed(CompletableFuture<Void> outcome, Region r, Throwable failure) {
        if (CacheFault.COMPLETE_AFTER_FAILED_DEREGISTRATION.in(faults)) {
            outcome.complete(null);
        } else {
            outcome.completeExceptionally(DeregistrationException.of(r.registration(), failure));
        }
    }

    private void scheduleTimer(long delayNanos) {
        timersScheduled.incrementAndGet();
        timer.schedule(this::onTimer, delayNanos);
    }

    /**
     * Arms the fallback timer for a retry due at {@code dueAt} unless the pending one fires early enough;
     * returns its delay, or -1. One timer covers every retry that falls due up to a grace before it fires.
     */
    @GuardedBy("lock")
    private long armTimer(long now, long dueAt) {
        long fireAt = dueAt + FALLBACK_GRACE_NANOS;
        if (timerAt != NONE_DUE && timerAt - fireAt <= 0) {
            return -1;
        }
        timerAt = fireAt;
        return Math.max(0, fireAt - now);
    }

    private void onTimer() {
        lock.lock();
        try {
            timerAt = NONE_DUE;
        } finally {
            lock.unlock();
        }
        retryDue();
        long rearm = -1;
        lock.lock();
        try {
            if (nextDue != NONE_DUE) { // retries not due yet, or that failed again
                rearm = armTimer(clock.getAsLong(), nextDue);
            }
        } finally {
            lock.unlock();
        }
        if (rearm >= 0) {
            scheduleTimer(rearm);
        }
    }

    /**
     * Takes the quarantined regions that are due (each by one thread only) and makes one attempt for each.
     * Only automatic retries get here (manual ones never set {@link #nextDue}).
     */
    private void retryDue() {
        List<Region> due = new ArrayList<>(2);
        lock.lock();
        try {
            long now = clock.getAsLong();
            long earliest = NONE_DUE;
            for (var it = quarantine.iterator(); it.hasNext();) {
                Quarantined q = it.next();
                if (now - q.dueAt() >= 0) {
                    due.add(q.region());
                    it.remove();
                } else {
                    earliest = Math.min(earliest, q.dueAt());
                }
            }
            nextDue = earliest;
        } finally {
            lock.unlock();
        }
        for (Region r : due) {
            metrics.increment(CacheCounter.DEREGISTRATION_RETRIES);
            attempt(r);
        }
    }

    /** One more attempt now for every quarantined region; returns how many are still quarantined. */
    int retryQuarantined() {
        List<Region> batch;
        lock.lock();
        try {
            batch = quarantine.stream().map(Quarantined::region).toList();
            quarantine.clear();
            nextDue = NONE_DUE;
        } finally {
            lock.unlock();
        }
        for (Region r : batch) {
            metrics.increment(CacheCounter.DEREGISTRATION_RETRIES);
            attempt(r);
        }
        return quarantinedCount();
    }

    int timersScheduledForTest() {
        return timersScheduled.get();
    }

    List<Registration> quarantined() {
        lock.lock();
        try {
            return quarantine.stream().map(q -> q.region().registration()).toList();
        } finally {
            lock.unlock();
        }
    }

    int quarantinedCount() {
        lock.lock();
        try {
            return quarantine.size();
        } finally {
            lock.unlock();
        }
    }
}
