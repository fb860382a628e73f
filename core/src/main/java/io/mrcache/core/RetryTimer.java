package io.mrcache.core;

import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One cache's thread for the automatic deregistration retries that no caller ran ({@link Deregistrar}: a due
 * retry runs in the next thread that deregisters; this is the fallback for an idle cache). A retry's attempt
 * runs on this thread itself, not handed on to a pool as {@code CompletableFuture.delayedExecutor} would (a
 * second wake-up, and a blocking {@code ibv_dereg_mr} in the common pool).
 *
 * <p>Each cache has its own: a deregistration that blocks (a stuck device, a hung driver call) delays only the
 * retries of its own cache, never another cache's frees. The thread is a daemon, started at the first timer
 * and gone after {@link #IDLE_SECONDS} without one, so a cache whose deregistrations never fail has none.
 */
final class RetryTimer {
    static final String THREAD_NAME_PREFIX = "mrcache-deregistration-retry-";
    /** How long the thread outlives its last timer. */
    static final long IDLE_SECONDS = 2;
    private static final AtomicInteger CACHES = new AtomicInteger();

    private final ScheduledThreadPoolExecutor timer;

    RetryTimer() {
        String name = THREAD_NAME_PREFIX + CACHES.incrementAndGet();
        timer = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        });
        timer.setKeepAliveTime(IDLE_SECONDS, TimeUnit.SECONDS);
        timer.allowCoreThreadTimeOut(true);
        timer.setRemoveOnCancelPolicy(true);
    }

    void schedule(Runnable retry, long delayNanos) {
        timer.schedule(retry, delayNanos, TimeUnit.NANOSECONDS);
    }
}
