package io.mrcache.core;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The completion stages that {@code invalidate} and {@code close} return: one shared completed stage (the
 * free-hook fast path allocates nothing), the combination that completes exceptionally naming every
 * registration whose keys are still live, and the blocking wait that rethrows the cause.
 */
final class Stages {
    static final CompletableFuture<Void> DONE_FUTURE = CompletableFuture.completedFuture(null);
    static final CompletionStage<Void> DONE = DONE_FUTURE.minimalCompletionStage();

    private Stages() {
    }

    /**
     * A stage that completes when every wait has: normally when all deregistrations succeeded, else
     * exceptionally with a {@link DeregistrationException} that names {@code what} and every registration
     * whose keys are still live. Never normally while such a key is live (I3).
     */
    static CompletionStage<Void> allDeregistered(Supplier<String> what, List<CompletableFuture<Void>> waits) {
        if (allDoneNormally(waits)) {
            return DONE; // the common case: the invalidating thread deregistered them itself, just now
        }
        return CompletableFuture.allOf(waits.toArray(CompletableFuture[]::new)).handle((ok, failure) -> {
            if (failure == null) {
                return null;
            }
            List<Registration> live = new ArrayList<>();
            List<String> causes = new ArrayList<>();
            int errno = 0;
            for (CompletableFuture<Void> w : waits) {
                if (w.isCompletedExceptionally()) {
                    Throwable cause = w.exceptionNow();
                    if (cause instanceof DeregistrationException de) {
                        live.addAll(de.stillRegistered());
                        errno = errno == 0 ? de.errno() : errno;
                        causes.add(String.valueOf(de.getCause()));
                    } else {
                        causes.add(String.valueOf(cause));
                    }
                }
            }
            Throwable cause = failure instanceof CompletionException ce && ce.getCause() != null ? ce.getCause()
                    : failure;
            throw new DeregistrationException(what.get() + " did not complete: the deregistration of " + live
                    + " failed (errno " + errno + ": " + String.join("; ", causes) + "), so their keys are still"
                    + " live at the NIC. Do not reuse this memory; the cache keeps them quarantined and retries"
                    + " (see retryQuarantined()).", errno, live, cause);
        });
    }

    private static boolean allDoneNormally(List<CompletableFuture<Void>> waits) {
        for (CompletableFuture<Void> w : waits) {
            if (!w.isDone() || w.isCompletedExceptionally()) {
                return false;
            }
        }
        return true;
    }

    /** Completes {@code target} normally when {@code failure} is null, else exceptionally with its cause. */
    static void completeLike(CompletableFuture<Void> target, @Nullable Throwable failure) {
        if (failure == null) {
            target.complete(null);
        } else {
            target.completeExceptionally(failure instanceof CompletionException ce && ce.getCause() != null
                    ? ce.getCause() : failure);
        }
    }

    /** Waits for {@code stage}; rethrows a runtime cause as it is. */
    static void await(CompletionStage<Void> stage) {
        try {
            stage.toCompletableFuture().join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw e;
        }
    }
}
