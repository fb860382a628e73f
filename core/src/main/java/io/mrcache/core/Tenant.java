package io.mrcache.core;

/**
 * One cache's account in a {@link PinnedMemoryLimit}: what it holds, what it was promised, and how it gives
 * room back. Its fields are guarded by the limit's lock; {@link PinnedMemoryLimit} holds the argument.
 */
final class Tenant {
    /** Evicts idle regions of one cache, coldest first; the limit asks it for room. Called under no lock. */
    interface RoomMaker {
        /**
         * Evicts idle regions until at least {@code wantBytes} are freed, never more than {@code maxBytes} (a
         * region that would pass it is skipped), and deregisters them before returning.
         *
         * @return what was evicted
         */
        Freed evictColdest(long wantBytes, long maxBytes);
    }

    /** Regions an eviction took, and the pinned bytes their deregistrations gave back. */
    record Freed(int regions, long bytes) {
        static final Freed NOTHING = new Freed(0, 0);
    }

    final String name;
    final long ceiling;
    final RoomMaker roomMaker;
    final PinnedMemoryLimit limit;
    /** Held back for this tenant; zero once its cache began to close (its share returns to the others). */
    long guarantee;
    /** Registered and not yet deregistered, plus registrations in flight. */
    long reserved;
    /** Bytes other requests are evicting from it right now: not counted as available above its guarantee twice. */
    long beingEvicted;
    boolean closing;
    long evictionsSuffered;
    long evictionsCaused;
    long admissionsRefused;

    Tenant(PinnedMemoryLimit limit, String name, long guarantee, long ceiling, RoomMaker roomMaker) {
        this.limit = limit;
        this.name = name;
        this.guarantee = guarantee;
        this.ceiling = ceiling;
        this.roomMaker = roomMaker;
    }

    /** Bytes above its guarantee that nobody is evicting yet: what another request may take from it. */
    long available() {
        return Math.max(0, reserved - beingEvicted - guarantee);
    }
    long aboveGuarantee() {
        return Math.max(0, reserved - guarantee);
    }
    TenantMetrics metrics() {
        return new TenantMetrics(name, reserved, guarantee, ceiling, evictionsSuffered, evictionsCaused,
                admissionsRefused);
    }

    @Override
    public String toString() {
        return "tenant '" + name + "'";
    }
}
