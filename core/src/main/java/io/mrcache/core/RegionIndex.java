package io.mrcache.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Set;

/**
 * An immutable interval index: regions sorted by start address, with a running maximum of their ends so
 * that a lookup can stop scanning left as soon as no earlier region can reach far enough.
 *
 * <p>Readers use a published instance without locks; writers build a new one (copy on write, O(n)) under
 * the cache's index lock. Overlaps are allowed (remote regions are exact and never merged).
 */
final class RegionIndex {
    static final RegionIndex EMPTY = new RegionIndex(new Region[0]);

    private final Region[] regions;
    private final long[] starts;
    /** maxEnds[i] = max(end of regions[0..i]). */
    private final long[] maxEnds;

    private RegionIndex(Region[] sortedRegions) {
        this.regions = sortedRegions;
        this.starts = new long[sortedRegions.length];
        this.maxEnds = new long[sortedRegions.length];
        long max = Long.MIN_VALUE;
        for (int i = 0; i < sortedRegions.length; i++) {
            starts[i] = sortedRegions[i].start;
            max = Math.max(max, sortedRegions[i].end);
            maxEnds[i] = max;
        }
    }

    int size() {
        return regions.length;
    }

    /** A live region serving the request, or null. Allocation-free. */
    Region findServing(long from, long to, int access, boolean widenRemote) {
        // regions[i].start <= from for i <= last; scan left while something can still reach 'to'
        for (int i = lastStartAtOrBefore(from); i >= 0 && maxEnds[i] >= to; i--) {
            Region r = regions[i];
            if (r.serves(from, to, access, widenRemote) && r.isLive()) {
                return r;
            }
        }
        return null;
    }

    /** Whether any region overlaps {@code [from, to)}. Allocation-free: the free hooks' fast path. */
    boolean overlapsAny(long from, long to) {
        for (int i = lastStartBefore(to); i >= 0 && maxEnds[i] > from; i--) {
            if (regions[i].end > from) {
                return true;
            }
        }
        return false;
    }

    /** Every region overlapping {@code [from, to)}: start < to and end > from. */
    List<Region> overlapping(long from, long to) {
        List<Region> out = new ArrayList<>(2);
        for (int i = lastStartBefore(to); i >= 0 && maxEnds[i] > from; i--) {
            if (regions[i].end > from) {
                out.add(regions[i]);
            }
        }
        return out;
    }

    boolean contains(Region region) {
        int i = lastStartAtOrBefore(region.start);
        for (; i >= 0 && starts[i] == region.start; i--) {
            if (regions[i] == region) {
                return true;
            }
        }
        return false;
    }

    /** A new index with {@code added} (may be null) and without {@code removed}. */
    RegionIndex with(Region added, Collection<Region> removed) {
        Set<Region> gone = removed.isEmpty() ? Set.of() : Set.copyOf(removed);
        List<Region> next = new ArrayList<>(regions.length + 1);
        for (Region r : regions) {
            if (!gone.contains(r)) {
                next.add(r);
            }
        }
        if (added != null) {
            int at = insertionPoint(next, added.start);
            next.add(at, added);
        }
        return next.isEmpty() ? EMPTY : new RegionIndex(next.toArray(new Region[0]));
    }

    /** A new index that also holds {@code added}. */
    RegionIndex withAll(Collection<Region> added) {
        if (added.isEmpty()) {
            return this;
        }
        List<Region> next = new ArrayList<>(regions.length + added.size());
        next.addAll(List.of(regions));
        for (Region r : added) {
            next.add(insertionPoint(next, r.start), r);
        }
        return new RegionIndex(next.toArray(new Region[0]));
    }

    List<Region> all() {
        return List.of(regions);
    }

    private static int insertionPoint(List<Region> sorted, long start) {
        int lo = 0;
        int hi = sorted.size();
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (sorted.get(mid).start <= start) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /**
     * Index of the last region with start <= address, or -1. Branch-free halving (the comparison becomes a
     * conditional move), because a hit's lookup otherwise pays a mispredicted branch per level.
     */
    private int lastStartAtOrBefore(long address) {
        long[] a = starts;
        int n = a.length;
        if (n == 0 || a[0] > address) {
            return -1;
        }
        int base = 0;
        while (n > 1) {
            int half = n >>> 1;
            base = a[base + half] <= address ? base + half : base;
            n -= half;
        }
        return base;
    }

    /** Index of the last region with start < address, or -1. */
    private int lastStartBefore(long address) {
        int lo = 0;
        int hi = starts.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (starts[mid] < address) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo - 1;
    }

    @Override
    public String toString() {
        return Arrays.toString(regions);
    }
}
