package io.mrcache.core;

/**
 * Which tenant gives first when a {@link PinnedMemoryLimit} must make room for a registration. Only bytes above
 * a tenant's guarantee are ever taken, and only from idle regions, coldest first in that tenant's own order.
 */
public enum RoomRule {
    /**
     * The tenant furthest above its guarantee gives first, then the next: the one holding most of the shared
     * part pays for it, so a tenant that scans cannot push a steady one out of what it shares (the default).
     */
    FURTHEST_ABOVE_GUARANTEE,
    /**
     * The tenant that asks gives first (its own coldest regions above its guarantee), then the others furthest
     * above theirs: each tenant pays for its own growth while it can.
     */
    REQUESTER_FIRST
}
