package io.mrcache.core;

import org.jspecify.annotations.Nullable;

/**
 * A hold on a cached registration covering the requested range with at least the requested rights. While
 * it is open the registration is not deregistered (invariant I2); {@link #close()} releases it, once.
 *
 * <p>Use it with try-with-resources around the work requests that use its keys. A lease belongs to one
 * thread at a time: hand it over with a happens-before edge, and do not close it from two threads at once
 * (a second close from the same thread, or after a hand-over, is detected and rejected). The release flag
 * is a plain field so that a lease kept local to one method can be scalar-replaced: a hit then allocates
 * nothing.
 */
public final class Lease implements AutoCloseable {
    private final RegistrationCache cache;
    final Region region;
    /** The lease cell this lease was counted in (the acquiring thread's). */
    /** The lease word of the region this lease is counted in ({@link Region#tryRetain}'s result). */
    private final int slot;
    private final long address;
    private final long length;
    /** Non-null only with leak detection on. */
    private final LeakDetector.@Nullable Tracker tracker;
    /**
     * The owner of an owner-bound lease (a scope or a direct buffer), held strongly so that the GC frees no memory
     * under a lease; null for an address-keyed one.
     */
    private final @Nullable Object owner;
    private boolean released;

    Lease(RegistrationCache cache, Region region, int slot, long address, long length,
            LeakDetector.@Nullable Tracker tracker, @Nullable Object owner) {
        this.cache = cache;
        this.region = region;
        this.slot = slot;
        this.address = address;
        this.length = length;
        this.tracker = tracker;
        this.owner = owner;
    }

    /** The requested start address. */
    public long address() {
        return address;
    }

    /** The requested length. */
    public long length() {
        return length;
    }

    public int lkey() {
        return region.lkey;
    }

    public int rkey() {
        return region.rkey;
    }

    /** Rights the underlying registration grants (a superset of those requested). */
    public int access() {
        return region.access;
    }

    /**
     * The registration behind this lease (its range covers the requested one): a record equal to the one the
     * registrar returned, made on each call (the cache keeps its fields, not the object). For a key on every
     * work request read {@link #lkey()}, {@link #rkey()} or {@link #attachment(Class)}, which allocate nothing.
     */
    public Registration registration() {
        return region.registration();
    }

    /**
     * The registrar's attachment as a {@code type} (UCX's packed remote key, say), read from the region without
     * making a {@link Registration}: what {@code registration().attachment(type)} returns.
     *
     * @throws IllegalStateException when the registrar attached nothing, or something else
     */
    public <T> T attachment(Class<T> type) {
        Object a = region.attachment;
        if (type.isInstance(a)) {
            return type.cast(a);
        }
        throw region.registration().notA(type);
    }

    public boolean isReleased() {
        return released;
    }

    /**
     * Releases the lease. After the last lease of an invalidated region is released, the region is
     * deregistered on this thread (deferred deregistration).
     *
     * @throws IllegalStateException if the lease was already released
     */
    @Override
    public void close() {
        if (released) {
            throw new IllegalStateException("lease on [0x" + Long.toHexString(address) + ", +" + length
                    + ") was already released: release each lease exactly once");
        }
        released = true;
        if (tracker != null) {
            tracker.released();
        }
        cache.release(region, slot);
        if (owner == region) { // never: a real use of the owner, which keeps it (and its memory) reachable until
            throw new AssertionError(); // here, also where the JIT scalar-replaced the lease
        }
    }

    @Override
    public String toString() {
        return "Lease[0x" + Long.toHexString(address) + "+" + length + " on " + region + "]";
    }
}
