package io.mrcache.core;

/**
 * The cache's counters, each with a stable id (for exporters), a label and what a high count suggests.
 */
public enum CacheCounter {
    HITS(1, "hits", "acquires served by a cached region without registering"),
    MISSES(2, "misses", "acquires that had to register; high with low reuse: buffers are not recycled"),
    SINGLE_FLIGHT_JOINS(3, "single-flight joins",
            "misses that waited for a concurrent identical registration instead of registering again"),
    REGISTRATIONS(4, "registrations", "successful registrar.register calls"),
    REGISTRATION_FAILURES(5, "registration failures", "registrar.register calls that threw"),
    DEREGISTRATIONS(6, "deregistrations", "successful registrar.deregister calls"),
    DEREGISTRATION_FAILURES(7, "deregistration failures",
            "registrar.deregister calls that threw; the registration is quarantined and retried, and its memory"
                    + " must not be reused until a retry succeeds"),
    MERGES(8, "merges", "registrations that absorbed overlapping or adjacent local regions"),
    ACCESS_UPGRADES(9, "access upgrades", "regions replaced because a request needed more rights"),
    INVALIDATIONS(10, "invalidations", "invalidate calls that unlinked at least one region or in-flight registration"),
    INVALIDATED_REGIONS(11, "invalidated regions", "regions unlinked by invalidate"),
    DISCARDED_IN_FLIGHT(12, "discarded in-flight registrations",
            "registrations that finished after an overlapping invalidation began and were never published (H4)"),
    EVICTIONS(13, "evictions", "idle regions retired to stay within the budget; high: the budget is too small"),
    DEFERRED_DEREGISTRATIONS(14, "deferred deregistrations",
            "retired regions deregistered later, by the release of their last lease"),
    ENOMEM_RECOVERIES(15, "ENOMEM recoveries", "registrations that succeeded after evicting idle regions on ENOMEM"),
    BUDGET_OVERRUNS(16, "budget overruns",
            "registrations made over budget because every cached region was leased"),
    LEAKED_LEASES(17, "leaked leases", "leases garbage-collected without release (leak detection on)"),
    DEREGISTRATION_RETRIES(18, "deregistration retries",
            "attempts to deregister a quarantined registration again; growing: the registrar keeps refusing"),
    WIDENING_FALLBACKS(19, "widening fallbacks",
            "merged or upgraded registrations the registrar refused or the budget (a tenant's ceiling) could not hold,"
                    + " replaced by the request's own range and rights"),
    EVICTIONS_WITHDRAWN(20, "evictions withdrawn",
            "eviction candidates found leased (or leased meanwhile) and left alone (H5)"),
    OWNERS_GONE(21, "owners gone",
            "owner-bound regions retired because their owner was collected or its arena closed (no invalidate call)");

    private final int id;
    private final String label;
    private final String meaning;

    CacheCounter(int id, String label, String meaning) {
        this.id = id;
        this.label = label;
        this.meaning = meaning;
    }

    public int id() {
        return id;
    }

    public String label() {
        return label;
    }

    public String meaning() {
        return meaning;
    }
}
