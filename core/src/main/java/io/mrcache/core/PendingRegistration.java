package io.mrcache.core;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A registration in flight: planned under the index lock, registered outside it, then published or
 * discarded under the lock again. Concurrent misses that it would serve wait for it (single flight).
 */
final class PendingRegistration {
    final long start;
    final long end;
    final int access;
    /** Live regions this registration replaces once published (merged or upgraded). */
    final List<Region> supersedes;
    final boolean upgrade;
    /** Set under the index lock by an overlapping invalidation: the result must never be published (H4). */
    boolean doomed;
    /** The published region, or null when discarded; exceptional when the registration failed. */
    private final CompletableFuture<Region> outcome = new CompletableFuture<>();
    /** Completes when nothing this registration pinned is still registered unpublished. */
    final CompletableFuture<Void> settled = new CompletableFuture<>();

    PendingRegistration(long start, long end, int access, List<Region> supersedes, boolean upgrade) {
        this.start = start;
        this.end = end;
        this.access = access;
        this.supersedes = supersedes;
        this.upgrade = upgrade;
    }

    boolean overlaps(long from, long to) {
        return start < to && end > from;
    }

    boolean serves(long from, long to, int requested, boolean widenRemote) {
        return from >= start && to <= end && Region.grants(access, requested, widenRemote);
    }

    void published(Region region) {
        settled.complete(null);
        outcome.complete(region);
    }

    void discarded() {
        settled.complete(null);
        outcome.complete(null);
    }

    void failed(RuntimeException e) {
        settled.complete(null);
        outcome.completeExceptionally(e);
    }

    /** Waits for the owner; null when the result was discarded. Rethrows the owner's failure. */
    Region await() {
        try {
            return outcome.join();
        } catch (java.util.concurrent.CompletionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RegistrationException re) {
                throw new RegistrationException("a concurrent registration of the same range failed: "
                        + re.getMessage(), re.errno(), re);
            }
            throw e;
        }
    }
}
