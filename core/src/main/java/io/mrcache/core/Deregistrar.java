package io.mrcache.core;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * Makes each deregistration attempt of a retired region, and keeps the ones that fail. Never throws: whatever
 * the registrar throws, the keys are still live, so the region stays where every overlapping invalidation
 * sees it (the cache's retiring index), enters the quarantine, the stages waiting on the attempt complete
 * exceptionally, and a retry is scheduled ({@link DeregistrationRetry}) or left to
 * {@link #retryQuarantined()}.
 *
 * <p>It shares the cache's lock: a failed attempt swaps in the region's next outcome under it, so an
 * invalidation (which reads that outcome under the same lock) waits either for the failed attempt or for the
 * retry, never for neither.
 */
final class Deregistrar {
    private final Registrar registrar;
    private final CacheMetrics metrics;
    private final DeregistrationRetry retry;
    private final int faults;
    private final ReentrantLock lock;
    /** Called after a successful attempt: unlinks the region from the retiring index (under the lock). */
    private final Consumer<Region> forget;
    /** Regions whose deregistration failed and that no attempt is running for now. */
    @GuardedBy("lock")
    private final List<Region> quarantine = new ArrayList<>();

    Deregistrar(Registrar registrar, CacheMetrics metrics, DeregistrationRetry retry, int faults, ReentrantLock lock,
            Consumer<Region> forget) {
        this.registrar = registrar;
        this.metrics = metrics;
        this.retry = retry;
        this.faults = faults;
        this.lock = lock;
        this.forget = forget;
    }

    /**
     * One deregistration attempt of a retired, unleased region whose claim the caller won (or that it took
     * out of the quarantine). Outside the lock, like every registrar call.
     */
    void deregister(Region r) {
        Throwable failure = null;
        try {
            registrar.deregister(r.registration);
        } catch (Throwable t) {
            failure = t;
        }
        if (failure == null) {
            metrics.deregistered(r.pinnedBytes);
            forget.accept(r);
            r.deregistration().complete(null);
            return;
        }
        metrics.increment(CacheCounter.DEREGISTRATION_FAILURES);
        CompletableFuture<Void> failedAttempt;
        long retryDelay;
        lock.lock();
        try {
            failedAttempt = r.startRetry();
            retryDelay = retry.delayNanos(r.failedDeregistrations);
            quarantine.add(r);
        } finally {
            lock.unlock();
        }
        if (CacheFault.COMPLETE_AFTER_FAILED_DEREGISTRATION.in(faults)) {
            failedAttempt.complete(null);
        } else {
            failedAttempt.completeExceptionally(DeregistrationException.of(r.registration, failure));
        }
        if (retry.automatic()) {
            RetryTimer.schedule(() -> retryOne(r), retryDelay);
        }
    }

    private void retryOne(Region r) {
        boolean taken;
        lock.lock();
        try {
            taken = quarantine.remove(r); // a manual retry may have taken it first
        } finally {
            lock.unlock();
        }
        if (taken) {
            metrics.increment(CacheCounter.DEREGISTRATION_RETRIES);
            deregister(r);
        }
    }

    /** One more attempt now for every quarantined region; returns how many are still quarantined. */
    int retryQuarantined() {
        List<Region> batch;
        lock.lock();
        try {
            batch = new ArrayList<>(quarantine);
            quarantine.clear();
        } finally {
            lock.unlock();
        }
        for (Region r : batch) {
            metrics.increment(CacheCounter.DEREGISTRATION_RETRIES);
            deregister(r);
        }
        return quarantinedCount();
    }

    List<Registration> quarantined() {
        lock.lock();
        try {
            return quarantine.stream().map(r -> r.registration).toList();
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
