package io.mrcache.core;

import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * One cache's thread for the automatic deregistration retries that no caller ran ({@link Deregistrar}: a due
 * retry runs in the next thread that deregisters; this is the fallback for an idle cache). A retry's attempt
 * runs on this thread itself, not handed on to a pool as {@code CompletableFuture.delayedExecutor} would (a
 * second wake-up, and a blocking {@code ibv_dereg_mr} in the common pool).
 *
 * <p>Each cache has its own: a deregistration that blocks (a stuck device, a hung driver call) delays only the
 * retries of its own cache, never another cache's frees. The thread is a daemon, started at the first timer
 * and gone after {@link #IDLE_SECONDS} without one, so a cache whose deregistrations never fail has none (nor the
 * executor: it is made at the first timer).
 */
final class RetryTimer {
    static final String THREAD_NAME_PREFIX = "mrcache-deregistration-retry-";
    /** How long the thread outlives its last timer. */
    static final long IDLE_SECONDS = 2;
    private static final AtomicInteger CACHES = new AtomicInteger();

    /** Made at the first timer: most caches never fail a deregistration and never need one. */
    private @Nullable ScheduledThreadPoolExecutor timer;

    synchronized void schedule(Runnable retry, long delayNanos) {
        ScheduledThreadPoolExecutor t = timer;
        if (t == null) {
            t = start();
            timer = t;
        }
        t.schedule(retry, delayNanos, TimeUnit.NANOSECONDS);
    }

    private static ScheduledThreadPoolExecutor start() {
        String name = THREAD_NAME_PREFIX + CACHES.incrementAndGet();
        ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
            Thread thread = new Thread(r, name);
            thread.setDaemon(true);
            return thread;
        });
        t.setKeepAliveTime(IDLE_SECONDS, TimeUnit.SECONDS);
        t.allowCoreThreadTimeOut(true);
        t.setRemoveOnCancelPolicy(true);
        return t;
    }
}
