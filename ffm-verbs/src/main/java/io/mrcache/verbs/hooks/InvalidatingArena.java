package io.mrcache.verbs.hooks;

import io.mrcache.core.RegistrationCache;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * An {@link Arena} whose {@link #close()} first invalidates the registration cache for every segment it
 * allocated and waits for the invalidations to complete (invariant I3), and only then frees the memory.
 * The free hook is bound to the buffers' lifetime: no libc patching, and no window in which freed memory
 * is still registered.
 *
 * <p>Close blocks while a lease on one of its segments is held (the memory is in use by the NIC); release
 * leases before closing the arena, or close it from another thread.
 */
public final class InvalidatingArena implements Arena {
    private final Arena delegate;
    private final RegistrationCache cache;
    private final List<MemorySegment> segments = new ArrayList<>(); // guarded by this

    public InvalidatingArena(Arena delegate, RegistrationCache cache) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
        this.cache = Objects.requireNonNull(cache, "cache");
    }

    /** A shared arena (any thread may allocate and close) bound to {@code cache}. */
    public static InvalidatingArena ofShared(RegistrationCache cache) {
        return new InvalidatingArena(Arena.ofShared(), cache);
    }

    /** A confined arena bound to {@code cache}. */
    public static InvalidatingArena ofConfined(RegistrationCache cache) {
        return new InvalidatingArena(Arena.ofConfined(), cache);
    }

    @Override
    public MemorySegment allocate(long byteSize, long byteAlignment) {
        MemorySegment segment = delegate.allocate(byteSize, byteAlignment);
        synchronized (this) {
            segments.add(segment);
        }
        return segment;
    }

    @Override
    public MemorySegment.Scope scope() {
        return delegate.scope();
    }

    /**
     * Invalidates every segment's range, waits until all overlapping registrations are deregistered, then
     * closes the underlying arena (which frees the memory).
     */
    @Override
    public void close() {
        List<CompletableFuture<Void>> waits = new ArrayList<>();
        synchronized (this) {
            for (MemorySegment s : segments) {
                if (s.byteSize() > 0) {
                    CompletionStage<Void> stage = cache.invalidate(s.address(), s.byteSize());
                    waits.add(stage.toCompletableFuture());
                }
            }
            segments.clear();
        }
        CompletableFuture.allOf(waits.toArray(CompletableFuture[]::new)).join();
        delegate.close();
    }
}
