package io.mrcache.core;

import java.lang.foreign.MemorySegment;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import org.jspecify.annotations.Nullable;

/**
 * An owned region's weak reference to its owner: an arena's {@link MemorySegment.Scope} (every segment of one arena
 * shares it) or a direct {@link ByteBuffer}. Enqueued on {@link OwnerReaper}'s queue when the GC finds the owner
 * unreachable, which is before the owner's memory is freed (the JDK frees it from a cleaner, which runs only after
 * the weak references to the owner were cleared); the reaper then retires the region through its cache.
 */
final class OwnerRef extends WeakReference<Object> {
    final RegistrationCache cache;
    /** The region holding this reference: set once, before the region is published. */
    private volatile @Nullable Region region;

    OwnerRef(Object owner, RegistrationCache cache) {
        super(owner, OwnerReaper.queue());
        this.cache = cache;
    }

    void bind(Region r) {
        region = r;
    }

    @Nullable Region region() {
        return region;
    }

    /**
     * Whether the owner still holds its memory: it was not collected, and its arena (for a buffer, the arena behind
     * it, if any) is not closed.
     */
    boolean ownerAlive() {
        return alive(get());
    }

    /** Whether {@code owner} (a scope or a direct buffer, or null once collected) still holds its memory. */
    static boolean alive(@Nullable Object owner) {
        if (owner instanceof MemorySegment.Scope scope) {
            return scope.isAlive();
        }
        if (owner instanceof ByteBuffer buffer) {
            try {
                return MemorySegment.ofBuffer(buffer).scope().isAlive();
            } catch (IllegalStateException closed) {
                return false;
            }
        }
        return owner != null;
    }
}
