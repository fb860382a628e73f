package io.mrcache.core;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.jspecify.annotations.Nullable;

/**
 * A registration in flight: planned under the index lock, registered outside it, then published or
 * discarded under the lock again. Concurrent misses that it would serve wait for it (single flight).
 *
 * <p>Range, rights and superseded regions are read and written under the cache's lock; only the owner
 * changes them, by {@link #narrowTo} when the registrar refused the widened plan.
 */
final class PendingRegistration {
    long start;
    long end;
    int access;
    /** Live regions this registration replaces once published (merged or upgraded). */
    List<Region> supersedes;
    final boolean upgrade;
    /** Set under the index lock by an overlapping invalidation: the result must never be published (H4). */
    boolean doomed;
    /**
     * The published region, or null when discarded; exceptional when the registration failed. Made under the
     * cache's lock by the first joiner ({@link #outcomeForJoiner}), so a miss nobody joins makes none; the
     * owner reads it after it removed the entry from the pending list under the same lock, when no one can
     * find the entry to make it any more.
     */
    private @Nullable CompletableFuture<Region> outcome;
    /**
     * Completes when nothing this registration pinned is still registered unpublished: at once when it was
     * published or failed, when its deregistration succeeded when it was discarded, and exceptionally when
     * that deregistration failed (the keys are live, so a waiting invalidation must not report success). Made
     * under the lock by the first invalidation or close that waits for it ({@link #settledForWaiter}), as
     * {@link #outcome}.
     */
    private @Nullable CompletableFuture<Void> settled;

    /** The owner the registration is made for (owner-bound acquisition; held strongly while in flight), or null. */
    final @Nullable Object owner;

    PendingRegistration(long start, long end, int access, List<Region> supersedes, boolean upgrade) {
        this(start, end, access, supersedes, upgrade, null);
    }

    PendingRegistration(long start, long end, int access, List<Region> supersedes, boolean upgrade,
            @Nullable Object owner) {
        this.start = start;
        this.end = end;
        this.access = access;
        this.supersedes = supersedes;
        this.upgrade = upgrade;
        this.owner = owner;
    }

    boolean overlaps(long from, long to) {
        return start < to && end > from;
    }

    boolean serves(long from, long to, int requested, boolean widenRemote) {
        return serves(from, to, requested, widenRemote, null);
    }

    /** Whether the result will serve a request of {@code requester} (the same owner object, or both address-keyed). */
    boolean serves(long from, long to, int requested, boolean widenRemote, @Nullable Object requester) {
        return from >= start && to <= end && Region.grants(access, requested, widenRemote) && owner == requester;
    }

    /** Whether the plan is wider, in range or rights, than {@code [from, to)} with {@code rights}. */
    boolean widerThan(long from, long to, int rights) {
        return start != from || end != to || access != rights;
    }

    /** Falls back to the request's own range and rights, replacing nothing. Under the lock, by the owner. */
    void narrowTo(long from, long to, int rights) {
        start = from;
        end = to;
        access = rights;
        supersedes = List.of();
    }

    /** For a joiner, under the cache's lock while this entry is pending. */
    CompletableFuture<Region> outcomeForJoiner() {
        CompletableFuture<Region> o = outcome;
        if (o == null) {
            outcome = o = new CompletableFuture<>();
        }
        return o;
    }

    /** For an invalidation or close that must wait for this entry, under the cache's lock while it is pending. */
    CompletableFuture<Void> settledForWaiter() {
        CompletableFuture<Void> w = settled;
        if (w == null) {
            settled = w = new CompletableFuture<>();
        }
        return w;
    }

    // The owner's outcomes: called after the entry left the pending list under the cache's lock.

    void published(Region region) {
        if (settled != null) {
            settled.complete(null);
        }
        if (outcome != null) {
            outcome.complete(region);
        }
    }

    /** The result was discarded; {@code deregistration} is its first deregistration attempt. */
    void discarded(CompletableFuture<Void> deregistration) {
        if (outcome != null) {
            outcome.complete(null);
        }
        settleWhen(deregistration);
    }

    /**
     * The registration failed; {@code cleanup} completes when whatever it registered is deregistered (at once
     * when nothing was).
     */
    void failed(Throwable e, CompletableFuture<Void> cleanup) {
        if (outcome != null) {
            outcome.completeExceptionally(e);
        }
        settleWhen(cleanup);
    }

    private void settleWhen(CompletableFuture<Void> attempt) {
        CompletableFuture<Void> w = settled;
        if (w == null) {
            return;
        }
        attempt.whenComplete((v, x) -> {
            if (x == null) {
                w.complete(null);
            } else {
                w.completeExceptionally(x);
            }
        });
    }

    /**
     * Waits for the owner through {@code outcome} (from {@link #outcomeForJoiner}); null when the result was
     * discarded. Rethrows the owner's failure itself (the same exception object, not a wrapper), so every
     * joiner sees what the owner saw.
     */
    static @Nullable Region await(CompletableFuture<Region> outcome) {
        try {
            return outcome.join();
        } catch (CompletionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException re) {
                throw re;
            }
            if (cause instanceof Error er) {
                throw er;
            }
            throw e;
        }
    }
}
