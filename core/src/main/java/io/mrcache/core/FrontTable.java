package io.mrcache.core;

import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * A hint in front of the index for repeated requests: a small two-way table from a request's first
 * {@value #GRAIN_SHIFT}-bit-aligned chunk to the regions that last served requests starting there. A hit
 * that the table answers skips the walk down the index.
 *
 * <p>Why a hint is safe: the table's slots are read and written plainly, so a reader may see an old region,
 * one long retired. It checks range and rights against the region's own final fields and then takes its
 * lease through {@link Region#tryRetainHit}, which refuses a retired or evicting region exactly as it
 * refuses one found through an old index; the caller then falls back to the index. So the table can make a
 * hit cheaper but never makes a retired registration reachable (I1). It keeps at most {@value #SLOTS}
 * regions reachable for the garbage collector after they are gone; {@link #clear()} drops them.
 */
final class FrontTable {
    /** Requests starting in the same 64 KiB chunk share a pair of slots. */
    static final int GRAIN_SHIFT = 16;
    private static final int BITS = 12;
    static final int SLOTS = 1 << BITS;

    private final Region[] slots = new Region[SLOTS];

    /** A region that may serve the request (the caller's lease attempt decides), or null. Allocation-free. */
    @Nullable Region find(long from, long to, int access, boolean widenRemote) {
        int pair = pair(from);
        Region r = slots[pair];
        if (r != null && r.start <= from && r.end >= to && Region.grants(r.access, access, widenRemote)) {
            return r;
        }
        r = slots[pair + 1];
        if (r != null && r.start <= from && r.end >= to && Region.grants(r.access, access, widenRemote)) {
            return r;
        }
        return null;
    }

    /** {@code r} just served a request starting at {@code from}: keep it first in its pair. */
    void remember(long from, Region r) {
        int pair = pair(from);
        Region first = slots[pair];
        if (first == r) {
            return;
        }
        if (first != null && first.isLive()) {
            slots[pair + 1] = first; // the older live one moves to the second way
        }
        slots[pair] = r;
    }

    void clear() {
        Arrays.fill(slots, null);
    }

    private static int pair(long from) {
        return (int) (((from >>> GRAIN_SHIFT) * 0x9E3779B97F4A7C15L) >>> (64 - BITS)) & ~1;
    }
}
