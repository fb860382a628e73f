package io.mrcache.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import org.jspecify.annotations.Nullable;

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
    private final long[] ends;
    /** Each region's rights, beside its range: a lookup reads no region object until it has found one. */
    private final int[] accesses;
    /** maxEnds[i] = max(ends[0..i]). */
    private final long[] maxEnds;

    private RegionIndex(Region[] sortedRegions) {
        this.regions = sortedRegions;
        this.starts = new long[sortedRegions.length];
        this.ends = new long[sortedRegions.length];
        this.accesses = new int[sortedRegions.length];
        for (int i = 0; i < sortedRegions.length; i++) {
            starts[i] = sortedRegions[i].start;
            ends[i] = sortedRegions[i].end;
            accesses[i] = sortedRegions[i].access;
        }
        this.maxEnds = new long[sortedRegions.length];
        fillMaxEnds(0);
    }

    private RegionIndex(Region[] regions, long[] starts, long[] ends, int[] accesses, int dirtyFrom,
            long[] oldMaxEnds) {
        this.regions = regions;
        this.starts = starts;
        this.ends = ends;
        this.accesses = accesses;
        this.maxEnds = new long[regions.length];
        System.arraycopy(oldMaxEnds, 0, maxEnds, 0, Math.min(dirtyFrom, regions.length));
        fillMaxEnds(dirtyFrom);
    }

    private void fillMaxEnds(int from) {
        long max = from == 0 ? Long.MIN_VALUE : maxEnds[from - 1];
        for (int i = from; i < ends.length; i++) {
            max = Math.max(max, ends[i]);
            maxEnds[i] = max;
        }
    }

    int size() {
        return regions.length;
    }

    /** A live region serving the request, or null. Allocation-free. */
    @Nullable Region findServing(long from, long to, int access, boolean widenRemote) {
        // regions[i].start <= from for i <= last; scan left while something can still reach 'to'
        for (int i = lastStartAtOrBefore(from); i >= 0 && maxEnds[i] >= to; i--) {
            if (ends[i] >= to && Region.grants(accesses[i], access, widenRemote) && regions[i].isLive()) {
                return regions[i];
            }
        }
        return null;
    }

    /**
     * The hit path's lookup: like {@link #findServing} but reads only the index's arrays, leaving the region's
     * lease word (the one cache line threads write) to the compare-and-set that follows, which fails on a
     * retired region anyway.
     */
    @Nullable Region findServingUnchecked(long from, long to, int access, boolean widenRemote) {
        for (int i = lastStartAtOrBefore(from); i >= 0 && maxEnds[i] >= to; i--) {
            if (ends[i] >= to && Region.grants(accesses[i], access, widenRemote)) {
                return regions[i];
            }
        }
        return null;
    }

    /** Whether any region overlaps {@code [from, to)}. Allocation-free: the free hooks' fast path. */
    boolean overlapsAny(long from, long to) {
        for (int i = lastStartBefore(to); i >= 0 && maxEnds[i] > from; i--) {
            if (ends[i] > from) {
                return true;
            }
        }
        return false;
    }

    /** Every region overlapping {@code [from, to)}: start < to and end > from. */
    List<Region> overlapping(long from, long to) {
        List<Region> out = new ArrayList<>(2);
        for (int i = lastStartBefore(to); i >= 0 && maxEnds[i] > from; i--) {
            if (ends[i] > from) {
                out.add(regions[i]);
            }
        }
        return out;
    }

    boolean contains(Region region) {
        return indexOf(region) >= 0;
    }

    /**
     * A new index with {@code added} (may be null) and without {@code removed}. Copies arrays with
     * {@code System.arraycopy} and recomputes the running maximum only from the first changed position: a
     * miss publishes in well under a microsecond at a thousand regions.
     */
    RegionIndex with(@Nullable Region added, Collection<Region> removed) {
        RegionIndex r = this;
        for (Region gone : removed) {
            r = r.without(gone);
        }
        return added == null ? r : r.plus(added);
    }

    /** A new index that also holds {@code added}. */
    RegionIndex withAll(Collection<Region> added) {
        RegionIndex r = this;
        for (Region a : added) {
            r = r.plus(a);
        }
        return r;
    }

    private RegionIndex plus(Region added) {
        int n = regions.length;
        int at = lastStartAtOrBefore(added.start) + 1; // after every region starting at or before it
        Region[] rs = new Region[n + 1];
        long[] ss = new long[n + 1];
        long[] es = new long[n + 1];
        int[] as = new int[n + 1];
        System.arraycopy(regions, 0, rs, 0, at);
        System.arraycopy(starts, 0, ss, 0, at);
        System.arraycopy(ends, 0, es, 0, at);
        System.arraycopy(accesses, 0, as, 0, at);
        rs[at] = added;
        ss[at] = added.start;
        es[at] = added.end;
        as[at] = added.access;
        System.arraycopy(regions, at, rs, at + 1, n - at);
        System.arraycopy(starts, at, ss, at + 1, n - at);
        System.arraycopy(ends, at, es, at + 1, n - at);
        System.arraycopy(accesses, at, as, at + 1, n - at);
        return new RegionIndex(rs, ss, es, as, at, maxEnds);
    }

    private RegionIndex without(Region gone) {
        int at = indexOf(gone);
        if (at < 0) {
            return this;
        }
        int n = regions.length;
        if (n == 1) {
            return EMPTY;
        }
        Region[] rs = new Region[n - 1];
        long[] ss = new long[n - 1];
        long[] es = new long[n - 1];
        int[] as = new int[n - 1];
        System.arraycopy(regions, 0, rs, 0, at);
        System.arraycopy(starts, 0, ss, 0, at);
        System.arraycopy(ends, 0, es, 0, at);
        System.arraycopy(accesses, 0, as, 0, at);
        System.arraycopy(regions, at + 1, rs, at, n - at - 1);
        System.arraycopy(starts, at + 1, ss, at, n - at - 1);
        System.arraycopy(ends, at + 1, es, at, n - at - 1);
        System.arraycopy(accesses, at + 1, as, at, n - at - 1);
        return new RegionIndex(rs, ss, es, as, at, maxEnds);
    }

    private int indexOf(Region region) {
        for (int i = lastStartAtOrBefore(region.start); i >= 0 && starts[i] == region.start; i--) {
            if (regions[i] == region) {
                return i;
            }
        }
        return -1;
    }

    List<Region> all() {
        return List.of(regions);
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
