package io.mrcache.core;

/**
 * How much the cache may keep pinned: idle regions are evicted to stay within both bounds (invariant I5).
 * Leased regions are never evicted, so while every region is leased the cache may exceed the budget
 * (counted as {@link CacheCounter#BUDGET_OVERRUNS}).
 *
 * @param maxPinnedBytes most bytes pinned by cached registrations (page-aligned spans)
 * @param maxRegions     most cached registrations
 */
public record Budget(long maxPinnedBytes, int maxRegions) {
    public static final Budget UNLIMITED = new Budget(Long.MAX_VALUE, Integer.MAX_VALUE);

    public Budget {
        if (maxPinnedBytes <= 0) {
            throw new IllegalArgumentException("budget maxPinnedBytes " + maxPinnedBytes
                    + " must be > 0; use Budget.UNLIMITED for no bound");
        }
        if (maxRegions <= 0) {
            throw new IllegalArgumentException("budget maxRegions " + maxRegions
                    + " must be > 0; use Integer.MAX_VALUE for no bound");
        }
    }

    public static Budget ofBytes(long maxPinnedBytes) {
        return new Budget(maxPinnedBytes, Integer.MAX_VALUE);
    }

    boolean exceededBy(long pinnedBytes, long regions) {
        return pinnedBytes > maxPinnedBytes || regions > maxRegions;
    }
}
