package io.mrcache.core;

/**
 * Deliberate bugs, each switching one safety step of {@link RegistrationCache} off, so that the model test, the
 * soak, the jcstress races and the address-reuse injector can show that they catch it. FOR PROOFS ONLY: a cache
 * built with {@link RegistrationCache.Builder#withDeliberateBug} is unsafe by construction. Public so that the
 * proofs outside this package (the injector, the jcstress races) can build the broken variants they must catch.
 */
public enum CacheFault {
    /** H4: publish an in-flight registration even when an overlapping invalidation doomed it. */
    PUBLISH_DOOMED,
    /** H1: invalidate does not unlink overlapping regions. */
    SKIP_UNLINK,
    /** I3: invalidate's stage completes before deferred deregistrations. */
    COMPLETE_EARLY,
    /** H5: the policy evicts and deregisters a leased region, skipping the idle compare-and-set. */
    EVICT_LEASED,
    /** close vs acquire: close does not doom in-flight registrations, which then publish into a closed cache. */
    CLOSE_SKIPS_PENDING,
    /** invalidate vs invalidate: an invalidation ignores regions another one is still deregistering. */
    IGNORE_RETIRING,
    /** I3: a failed deregistration completes the waiting stages normally, though its keys are still live. */
    COMPLETE_AFTER_FAILED_DEREGISTRATION,
    /**
     * I5: a region the policy drops while it cannot be evicted is marked for re-entry only if no other evictor
     * holds it at that moment, and only the releases look at the mark: a drop that meets another evictor's
     * window, or a release that comes before the mark, leaves the region outside the policy for good.
     */
    LOSE_POLICY_DROPS,
    /**
     * T2/H5: a shared {@link PinnedMemoryLimit} making room for another tenant evicts this cache's regions
     * whether or not they are leased.
     */
    LIMIT_EVICTS_LEASED,
    /**
     * H5, the evictor's window: eviction sums the leases and claims the region without first marking it EVICTING,
     * so an acquire between the sum and the claim keeps its lease on a region that is then deregistered.
     */
    EVICT_WITHOUT_MARK,
    /**
     * H1/H2, the retirer's window: an invalidation sums a region's leases before it sets RETIRED, so an acquire
     * between the sum and the bit keeps its lease on a region that is then deregistered.
     */
    RETIRE_SUMS_FIRST,
    /**
     * F1: owner-bound acquisition skips the owner check: a request on a segment or buffer is served any region at
     * its addresses, as the address-keyed API is, whoever held the memory when it was registered.
     */
    IGNORE_OWNER;

    private final int bit = 1 << ordinal();

    /** The faults as a bit set. */
    static int bits(CacheFault... faults) {
        int bits = 0;
        for (CacheFault f : faults) {
            bits |= f.bit;
        }
        return bits;
    }

    /** Whether this fault is in the bit set {@code bits}. */
    boolean in(int bits) {
        return (bits & bit) != 0;
    }
}
