package io.mrcache.core;

/**
 * One tenant of a {@link PinnedMemoryLimit}, at a point in time.
 *
 * @param name              the tenant's name
 * @param pinnedBytes       bytes it holds against the limit: registered and not yet deregistered (quarantined
 *                          ones included), plus registrations in flight
 * @param guaranteeBytes    what it can always reach
 * @param ceilingBytes      the most it may pin
 * @param evictionsSuffered its regions that another tenant's request evicted
 * @param evictionsCaused   other tenants' regions that its requests evicted
 * @param admissionsRefused its registrations the limit refused (over its ceiling, or no room could be made)
 */
public record TenantMetrics(String name, long pinnedBytes, long guaranteeBytes, long ceilingBytes,
        long evictionsSuffered, long evictionsCaused, long admissionsRefused) {

    /** One line for humans. */
    public String format() {
        return String.format("tenant %-12s pinned %,15d  guarantee %,15d  ceiling %,15d  evictions suffered %,d"
                + "  caused %,d  refused %,d", name, pinnedBytes, guaranteeBytes, ceilingBytes, evictionsSuffered,
                evictionsCaused, admissionsRefused);
    }
}
