package io.mrcache.verbs.hooks;

import com.google.errorprone.annotations.MustBeClosed;
import io.mrcache.core.DeregistrationException;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationCache;
import io.mrcache.core.RegistrationException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * An {@link Arena} whose {@link #close()} first invalidates the registration cache for every segment it
 * allocated and waits for the invalidations to complete (invariant I3), and only then frees the memory.
 * The free hook is bound to the buffers' lifetime: no libc patching, and no window in which freed memory
 * is still registered.
 *
 * <p>Close blocks while a lease on one of its segments is held (the memory is in use by the NIC); release
 * leases before closing the arena, or close it from another thread.
 *
 * <p>A close racing an allocation (a shared arena): an allocation that began before the close is waited for
 * and invalidated with the others; one that begins once the close has begun is refused with an
 * {@link IllegalStateException}, since the close would free it. If the close fails (a deregistration failed),
 * the arena stays open and allocates again. Acquiring a lease on one of its segments once its close has begun
 * is, as any use of an arena's memory during its close, the caller's use after free.
 */
public final class InvalidatingArena implements Arena {
    private final Arena delegate;
    private final RegistrationCache cache;
    private final List<MemorySegment> segments = new ArrayList<>(); // guarded by this
    /** Allocations under way in the delegate (guarded by this): a close waits for them to be listed. */
    private int allocating;
    /** A close has begun (guarded by this): allocations are refused until it fails, for good once it succeeds. */
    private boolean closing;
    private final Object closeLock = new Object();
    private volatile boolean closed; // written under closeLock

    public InvalidatingArena(Arena delegate, RegistrationCache cache) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
        this.cache = Objects.requireNonNull(cache, "cache");
    }

    /** A shared arena (any thread may allocate and close) bound to {@code cache}. */
    @MustBeClosed
    @SuppressWarnings("MustBeClosedChecker") // the new arena is handed to the InvalidatingArena, whose close closes it
    public static InvalidatingArena ofShared(RegistrationCache cache) {
        return new InvalidatingArena(Arena.ofShared(), cache);
    }

    /** A confined arena bound to {@code cache}. */
    @MustBeClosed
    @SuppressWarnings("MustBeClosedChecker") // the new arena is handed to the InvalidatingArena, whose close closes it
    public static InvalidatingArena ofConfined(RegistrationCache cache) {
        return new InvalidatingArena(Arena.ofConfined(), cache);
    }

    /**
     * @throws IllegalStateException when the arena's close has begun (the memory would be freed by it)
     */
    @Override
    public MemorySegment allocate(long byteSize, long byteAlignment) {
        synchronized (this) {
            if (closing) {
                throw new IllegalStateException("InvalidatingArena.allocate(" + byteSize + ", " + byteAlignment
                        + ") refused: the arena is " + (closed ? "closed" : "closing") + ", and its close"
                        + " frees everything it allocated; allocate from another arena");
            }
            allocating++;
        }
        MemorySegment segment = null;
        try {
            segment = delegate.allocate(byteSize, byteAlignment);
            return segment;
        } finally {
            synchronized (this) {
                if (segment != null) {
                    segments.add(segment);
                }
                if (--allocating == 0) {
                    notifyAll(); // a close may be waiting for this allocation to be listed
                }
            }
        }
    }

    @Override
    public MemorySegment.Scope scope() {
        return delegate.scope();
    }

    /**
     * Invalidates every segment's range, waits until all overlapping registrations are deregistered, then
     * closes the underlying arena (which frees the memory).
     *
     * <p>If a deregistration failed, a key still covers the memory: the arena then frees nothing, stays open
     * (its segments stay valid) and throws; a later {@code close()} tries again (the cache retries the
     * quarantined deregistration once more first) and frees the memory only when every invalidation
     * completed normally.
     *
     * @throws DeregistrationException when a registration covering a segment could not be deregistered;
     *                                 nothing was freed
     */
    @Override
    public void close() {
        synchronized (closeLock) {
            if (closed) {
                delegate.close(); // the arena's own "already closed" error
                return;
            }
            List<MemorySegment> toFree = beginClose();
            List<CompletableFuture<Void>> waits = new ArrayList<>();
            for (MemorySegment s : toFree) {
                if (s.byteSize() > 0) {
                    waits.add(cache.invalidate(s.address(), s.byteSize()).toCompletableFuture());
                }
            }
            if (waits.stream().anyMatch(w -> !w.isDone()) && !cache.quarantined().isEmpty()) {
                cache.retryQuarantined(); // one more attempt for keys whose deregistration failed before
            }
            List<Registration> live = new ArrayList<>();
            Throwable first = null;
            for (CompletableFuture<Void> w : waits) {
                try {
                    w.join();
                } catch (CompletionException e) {
                    first = first == null ? e.getCause() : first;
                    if (e.getCause() instanceof DeregistrationException de) {
                        live.addAll(de.stillRegistered());
                    }
                }
            }
            if (first != null) {
                synchronized (this) {
                    closing = false; // the arena stays open: it may allocate again
                }
                throw new DeregistrationException("InvalidatingArena.close: " + live.size() + " registration(s) "
                        + live + " covering its " + toFree.size() + " segment(s) could not be deregistered, so"
                        + " their keys are still live; the memory was NOT freed and the arena stays open. Call"
                        + " close() again once the cache's retry succeeds (RegistrationCache.quarantined() lists"
                        + " them).", first instanceof RegistrationException re ? re.errno() : 0, live, first);
            }
            synchronized (this) {
                segments.clear();
            }
            closed = true;
            delegate.close();
        }
    }

    /** Refuses new allocations, waits for those under way to be listed, and returns every segment. */
    private synchronized List<MemorySegment> beginClose() {
        closing = true;
        boolean interrupted = false;
        while (allocating > 0) {
            try {
                wait();
            } catch (InterruptedException e) {
                interrupted = true; // an allocation finishes soon: listing it matters more than the interrupt
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return List.copyOf(segments);
    }
}
