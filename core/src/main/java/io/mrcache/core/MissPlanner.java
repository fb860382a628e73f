package io.mrcache.core;

import java.util.ArrayList;
import java.util.List;

/**
 * Decides what a miss registers: which live regions the request folds in (merged, or upgraded to the union of
 * rights), and the range and rights of the one registration that replaces them. Pure: it reads an index and
 * changes nothing; the cache calls it under its lock so that the index does not move meanwhile.
 */
final class MissPlanner {
    private final long alignment;
    private final MergePolicy mergePolicy;
    private final boolean widenRemote;

    MissPlanner(long alignment, MergePolicy mergePolicy, boolean widenRemote) {
        this.alignment = alignment;
        this.mergePolicy = mergePolicy;
        this.widenRemote = widenRemote;
    }

    /**
     * The plan for a request of {@code owner} (owner-bound acquisition): the request's own range and rights,
     * merging nothing, since a region serves one owner.
     */
    PendingRegistration planOwned(long address, long end, int access, Object owner) {
        return new PendingRegistration(ownStart(address, access), ownEnd(end, access), access, List.of(), false, owner);
    }

    /** The plan for a request of {@code [address, end)} with {@code access} that {@code index} does not serve. */
    PendingRegistration plan(RegionIndex index, long address, long end, int access) {
        List<Region> supersedes = new ArrayList<>(2);
        if (isExact(access)) {
            // exactly the requested bytes (I6); replace only a narrower remote region of the same range
            for (Region r : index.overlapping(address, end)) {
                if (r.isLive() && r.isRemote() && r.start == address && r.end == end
                        && Access.includes(access, r.access) && r.owner() == null) {
                    supersedes.add(r);
                }
            }
            return new PendingRegistration(address, end, access, List.copyOf(supersedes), !supersedes.isEmpty());
        }
        long from = ownStart(address, access);
        long to = ownEnd(end, access);
        int rights = access;
        boolean upgrade = false;
        long reach = mergePolicy == MergePolicy.OVERLAPPING_AND_ADJACENT ? 1 : 0;
        if (!index.overlapsAny(Math.max(0, from - reach), to + reach)) {
            return new PendingRegistration(from, to, access, List.of(), false); // the common miss: nothing near
        }
        boolean grew = true;
        while (grew) { // a merge may widen the range onto more regions
            grew = false;
            for (Region r : index.overlapping(Math.max(0, from - reach), to + reach)) {
                if (!r.isLive() || supersedes.contains(r) || (r.isRemote() && !widenRemote) || r.owner() != null) {
                    continue;
                }
                boolean covers = r.start <= address && r.end >= end; // [ ( ) ]: lacks rights, else it hit
                if (mergePolicy == MergePolicy.NONE && !covers) {
                    continue;
                }
                upgrade |= covers;
                supersedes.add(r);
                from = Math.min(from, r.start);
                to = Math.max(to, r.end);
                rights |= r.access;
                grew = true;
            }
        }
        return new PendingRegistration(from, to, rights, List.copyOf(supersedes), upgrade);
    }

    /** The start of the request's own registration: exact for a remote request (I6), else page-aligned. */
    long ownStart(long address, int access) {
        return isExact(access) ? address : AddressRange.alignDown(address, alignment);
    }

    /** The end of the request's own registration: exact for a remote request (I6), else page-aligned. */
    long ownEnd(long end, int access) {
        return isExact(access) ? end : AddressRange.alignUp(end, alignment);
    }

    private boolean isExact(int access) {
        return Access.isRemote(access) && !widenRemote;
    }
}
