package io.mrcache.core;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;

/**
 * One cached registration and its lifecycle.
 *
 * <pre>
 *   LIVE ──retire()/tryRetireIdle()──▶ RETIRED ──last lease released──▶ DEREGISTERED
 *    │  leases come and go                 no new lease; old ones drain        keys dead at the NIC
 * </pre>
 *
 * <p>The whole state is one word: the lease count in bits 0-30, the count of hits served (mod 2^31) in bits
 * 31-61, and {@link #RETIRED_BIT}. A lease is taken by a compare-and-set that fails once the bit is set, so
 * "retired" and "leased" can never both be decided without seeing each other; the same compare-and-set
 * counts the hit, so a hit pays no second atomic for the cache's hit counter. Whoever moves the word to exactly {@code RETIRED_BIT} (no leases) owns
 * the single deregistration: the retirer when the region was idle, otherwise the last releaser
 * (invariant I2: deregistered once, and only when unreachable and unleased).
 */
final class Region {
    static final long RETIRED_BIT = 1L << 62;
    static final long LEASE_MASK = (1L << 31) - 1;
    static final long HIT_ONE = 1L << 31;
    static final long HIT_MASK = LEASE_MASK << 31;
    /** The lease count and the retired bit: what the lifecycle decisions look at. */
    static final long LIFE_MASK = LEASE_MASK | RETIRED_BIT;
    /** Hits a counter holds before it wraps; the caller adds them to the cache's total when it does. */
    static final long HITS_PER_WRAP = 1L << 31;

    /** {@link #tryRetainHit} results. */
    static final int NOT_RETAINED = 0;
    static final int RETAINED = 1;
    static final int RETAINED_COUNTER_WRAPPED = 2;

    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Region.class, "state", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final Registration registration;
    /** Range and rights this region serves (the registered range). */
    final long start;
    final long end;
    final int access;
    /** Bytes the registrar pinned: the page-aligned span. */
    final long pinnedBytes;
    /** Completes when the registration is deregistered (exceptionally if deregister failed). */
    final CompletableFuture<Void> deregistered = new CompletableFuture<>();

    @SuppressWarnings("unused") // accessed through STATE
    private volatile long state;

    /** Set when the eviction policy dropped this region while it was leased; it re-enters when idle. */
    volatile boolean untracked;

    Region(Registration registration, long pinnedBytes, long initialLeases) {
        this.registration = registration;
        this.start = registration.address();
        this.end = registration.end();
        this.access = registration.access();
        this.pinnedBytes = pinnedBytes;
        this.state = initialLeases;
    }

    /** Takes a lease unless the region is retired (not counted as a hit). */
    boolean tryRetain() {
        long s;
        do {
            s = (long) STATE.getVolatile(this);
            if ((s & RETIRED_BIT) != 0) {
                return false;
            }
        } while (!STATE.compareAndSet(this, s, s + 1));
        return true;
    }

    /**
     * Takes a lease and counts a hit, unless the region is retired. Lock-free; the hit path's only write.
     *
     * @return {@link #NOT_RETAINED}, {@link #RETAINED}, or {@link #RETAINED_COUNTER_WRAPPED} when the hit
     *         counter wrapped to 0 and the caller must add {@link #HITS_PER_WRAP} hits to the total
     */
    int tryRetainHit() {
        long s;
        long next;
        int result;
        do {
            s = (long) STATE.getVolatile(this);
            if ((s & RETIRED_BIT) != 0) {
                return NOT_RETAINED;
            }
            next = s + 1 + HIT_ONE;
            result = RETAINED;
            if ((next & RETIRED_BIT) != 0) { // the counter carried into the retired bit: wrap it
                next = (s + 1) & ~HIT_MASK;
                result = RETAINED_COUNTER_WRAPPED;
            }
        } while (!STATE.compareAndSet(this, s, next));
        return result;
    }

    /** Hits counted in the state word since the last wrap. */
    long hits() {
        return ((long) STATE.getVolatile(this) & HIT_MASK) >>> 31;
    }

    /**
     * Drops a lease and returns the new lease count and retired bit: {@link #RETIRED_BIT} exactly means the
     * caller released the last lease of a retired region and must deregister it; 0 means the region became
     * idle.
     */
    long releaseLease() {
        return ((long) STATE.getAndAdd(this, -1L) - 1) & LIFE_MASK;
    }

    /**
     * Marks the region retired (unlinked from the index by the caller under the index lock).
     *
     * @return true when the region was live and idle, so the caller must deregister it now; false when
     *         leases remain (the last release deregisters) or another retirer got there first
     */
    boolean retire() {
        long before = (long) STATE.getAndBitwiseOr(this, RETIRED_BIT);
        return (before & LIFE_MASK) == 0;
    }

    /** Retires only if live and unleased: the compare-and-set that makes eviction safe against acquire (H5). */
    boolean tryRetireIdle() {
        long s;
        do {
            s = (long) STATE.getVolatile(this);
            if ((s & LIFE_MASK) != 0) {
                return false;
            }
        } while (!STATE.compareAndSet(this, s, s | RETIRED_BIT));
        return true;
    }

    long leases() {
        return (long) STATE.getVolatile(this) & LEASE_MASK;
    }

    boolean isLive() {
        return ((long) STATE.getVolatile(this) & RETIRED_BIT) == 0;
    }

    boolean isIdle() {
        return ((long) STATE.getVolatile(this) & LIFE_MASK) == 0;
    }

    boolean isRetired() {
        return !isLive();
    }

    boolean isDeregistered() {
        return deregistered.isDone();
    }

    boolean isRemote() {
        return Access.isRemote(access);
    }

    boolean overlaps(long from, long to) {
        return start < to && end > from;
    }

    /**
     * Whether a lease on this region may serve {@code [from, to)} with {@code requested} rights. A remote
     * region serves only requests with exactly its remote rights unless {@code widenRemote} (I6).
     */
    boolean serves(long from, long to, int requested, boolean widenRemote) {
        return from >= start && to <= end && grants(access, requested, widenRemote);
    }

    /** Whether rights {@code granted} serve {@code requested}: a superset, and equal remote rights unless widened. */
    static boolean grants(int granted, int requested, boolean widenRemote) {
        return Access.includes(granted, requested)
                && (widenRemote || (granted & Access.REMOTE_MASK) == (requested & Access.REMOTE_MASK));
    }

    @Override
    public String toString() {
        long s = (long) STATE.getVolatile(this);
        String life = (s & RETIRED_BIT) == 0 ? "live" : isDeregistered() ? "deregistered" : "retired";
        return "Region[0x" + Long.toHexString(start) + "..0x" + Long.toHexString(end) + " "
                + Access.describe(access) + " " + life + " leases=" + (s & LEASE_MASK) + "]";
    }
}
