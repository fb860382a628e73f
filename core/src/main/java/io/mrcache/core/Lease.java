package io.mrcache.core;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A hold on a cached registration covering the requested range with at least the requested rights. While
 * it is open the registration is not deregistered (invariant I2); {@link #close()} releases it, once.
 *
 * <p>Use it with try-with-resources around the work requests that use its keys.
 */
public final class Lease implements AutoCloseable {
    private static final VarHandle RELEASED;

    static {
        try {
            RELEASED = MethodHandles.lookup().findVarHandle(Lease.class, "released", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final RegistrationCache cache;
    final Region region;
    private final long address;
    private final long length;
    /** Non-null only with leak detection on. */
    private final LeakDetector.Tracker tracker;
    @SuppressWarnings("unused") // accessed through RELEASED
    private volatile int released;

    Lease(RegistrationCache cache, Region region, long address, long length, LeakDetector.Tracker tracker) {
        this.cache = cache;
        this.region = region;
        this.address = address;
        this.length = length;
        this.tracker = tracker;
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
        return region.registration.lkey();
    }

    public int rkey() {
        return region.registration.rkey();
    }

    /** Rights the underlying registration grants (a superset of those requested). */
    public int access() {
        return region.access;
    }

    /** The registration behind this lease (its range covers the requested one). */
    public Registration registration() {
        return region.registration;
    }

    public boolean isReleased() {
        return (int) RELEASED.getVolatile(this) != 0;
    }

    /**
     * Releases the lease. After the last lease of an invalidated region is released, the region is
     * deregistered on this thread (deferred deregistration).
     *
     * @throws IllegalStateException if the lease was already released
     */
    @Override
    public void close() {
        if (!RELEASED.compareAndSet(this, 0, 1)) {
            throw new IllegalStateException("lease on [0x" + Long.toHexString(address) + ", +" + length
                    + ") was already released: release each lease exactly once");
        }
        if (tracker != null) {
            tracker.released();
        }
        cache.release(region);
    }

    @Override
    public String toString() {
        return "Lease[0x" + Long.toHexString(address) + "+" + length + " on " + region + "]";
    }
}
