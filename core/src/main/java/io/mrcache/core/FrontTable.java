package io.mrcache.core;

import org.jspecify.annotations.Nullable;

/**
 * A hint in front of the index for repeated requests: a two-way table from a request's first
 * {@value #GRAIN_SHIFT}-bit-aligned chunk to the regions that last served requests starting there. A hit
 * that the table answers skips the walk down the index: one probe of the table, then the region itself.
 *
 * <p>Sized to the cache: {@link #fit} (called by the cache's writers after each index change) keeps at least
 * {@value #SLOTS_PER_REGION} slots per published region, from {@value #MIN_SLOTS} up to {@value #MAX_SLOTS},
 * by swapping in a new, empty table, which the following hits fill again. A table a quarter the size would
 * leave hits past a few thousand regions to walk the index over regions that are no longer in the CPU's
 * caches; growing keeps the hit's cost flat in the number of regions, as a page table's is.
 *
 * <p>Why a hint is safe: the slots are read and written plainly, so a reader may see an old region, one long
 * retired, or an old table. It checks range and rights against the region's own final fields and then takes
 * its lease through {@link Region#tryRetainHit}, which refuses a retired or evicting region exactly as it
 * refuses one found through an old index; the caller then falls back to the index. So the table can make a
 * hit cheaper but never makes a retired registration reachable (I1). The array is published through a
 * volatile field, so a reader sees a fully allocated one. It keeps at most as many regions reachable for
 * the garbage collector after they are gone as it has slots, and a table that the index has outgrown the
 * other way (a sixteenth of its regions left) is replaced by a smaller, empty one; {@link #clear()} drops
 * them all.
 */
final class FrontTable {
    /** Requests starting in the same 64 KiB chunk share a pair of slots. */
    static final int GRAIN_SHIFT = 16;
    static final int MIN_SLOTS = 1 << 12;
    static final int MAX_SLOTS = 1 << 22;
    static final int SLOTS_PER_REGION = 4;

    private volatile Region[] slots = new Region[MIN_SLOTS];

    /** A region that may serve the request (the caller's lease attempt decides), or null. Allocation-free. */
    @Nullable Region find(long from, long to, int access, boolean widenRemote) {
        return find(from, to, access, widenRemote, null);
    }

    /** {@link #find(long, long, int, boolean)} for a request of {@code owner} (null: address-keyed). */
    @Nullable Region find(long from, long to, int access, boolean widenRemote, @Nullable Object owner) {
        Region[] s = slots;
        int pair = pair(from, s.length);
        Region r = s[pair];
        if (r != null && r.start <= from && r.end >= to && Region.grants(r.access, access, widenRemote)
                && r.ownedBy(owner)) {
            return r;
        }
        r = s[pair + 1];
        if (r != null && r.start <= from && r.end >= to && Region.grants(r.access, access, widenRemote)
                && r.ownedBy(owner)) {
            return r;
        }
        return null;
    }

    /** {@code r} just served a request starting at {@code from}: keep it first in its pair. */
    void remember(long from, Region r) {
        Region[] s = slots;
        int pair = pair(from, s.length);
        Region first = s[pair];
        if (first == r) {
            return;
        }
        if (first != null && first.isLive()) {
            s[pair + 1] = first; // the older live one moves to the second way
        }
        s[pair] = r;
    }

    /**
     * The index now holds {@code regions}: grows the table to keep {@value #SLOTS_PER_REGION} slots per region,
     * or shrinks it when fewer than a sixteenth of that are left. Called by one writer at a time (under the
     * cache's lock); a cheap comparison unless the size changes.
     */
    void fit(int regions) {
        int length = slots.length;
        int wanted = sizeFor(regions);
        if (wanted > length || (long) regions * SLOTS_PER_REGION * 16 <= length && length > MIN_SLOTS) {
            slots = new Region[wanted];
        }
    }

    /** The table's length for {@code regions}: a power of two in [{@value #MIN_SLOTS}, {@value #MAX_SLOTS}]. */
    static int sizeFor(int regions) {
        long want = (long) regions * SLOTS_PER_REGION;
        if (want <= MIN_SLOTS) {
            return MIN_SLOTS;
        }
        return (int) Math.min(MAX_SLOTS, Long.highestOneBit(want - 1) << 1);
    }

    int length() {
        return slots.length;
    }

    void clear() {
        slots = new Region[MIN_SLOTS];
    }

    private static int pair(long from, int length) {
        // multiplicative hashing: the product's top bits, as many as the table has
        return (int) (((from >>> GRAIN_SHIFT) * 0x9E3779B97F4A7C15L) >>> (64 - Integer.numberOfTrailingZeros(length)))
                & ~1;
    }
}
