package io.mrcache.core;

import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The one daemon thread, shared by every cache, that runs automatic deregistration retries when they fall due.
 * A retry's attempt runs on this thread itself: one wake-up per retry. (Handing it on to a pool, as
 * {@code CompletableFuture.delayedExecutor} does, costs a second wake-up and a pool thread's spinning; under a
 * steady rate of failing deregistrations that was measurable CPU taken from the threads doing the work.)
 * A registrar whose deregistration blocks therefore delays the other retries that are due; none is lost.
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
