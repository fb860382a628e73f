package io.mrcache.core;

import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The one daemon thread, shared by every cache, that runs the automatic deregistration retries no caller ran
 * ({@link Deregistrar}: a due retry runs in the next thread that deregisters; this is the fallback for an idle
 * cache). A retry's attempt runs on this thread itself, not handed on to a pool as
 * {@code CompletableFuture.delayedExecutor} would (a second wake-up, and a blocking {@code ibv_dereg_mr} in the
 * common pool). A registrar whose deregistration blocks therefore delays the other retries due here; none is
 * lost.
 */
final class RetryTimer {
    private static final ScheduledThreadPoolExecutor TIMER = start();

    private RetryTimer() {
    }

    private static ScheduledThreadPoolExecutor start() {
        ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "mrcache-deregistration-retry");
            t.setDaemon(true);
            return t;
        });
        timer.setRemoveOnCancelPolicy(true);
        return timer;
    }

    static void schedule(Runnable retry, long delayNanos) {
        TIMER.schedule(retry, delayNanos, TimeUnit.NANOSECONDS);
    }
}
