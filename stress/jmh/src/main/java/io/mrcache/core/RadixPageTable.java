package io.mrcache.core;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.jspecify.annotations.Nullable;

/**
 * A measured alternative to {@link RegionIndex}, not used by the cache: a mutable radix page table of the kind
 * UCX keeps in front of its registration cache. Each directory has {@code 2^bits} slots; a region is stored in
 * the fewest slots whose spans tile its page-aligned range (a 64 KiB region aligned to 64 KiB takes one slot at
 * the 64 KiB level), and a lookup walks down by address bits until it meets a region or an empty slot.
 *
 * <p>Writers change it in place under one lock; readers walk it without one, reading slots with acquire loads
 * that pair with the writers' release stores, so a reader sees a fully built directory or region. A reader can
 * see a region just removed, which is harmless where the caller takes it through the lease-then-state check,
 * as the cache does with its front table. What it does not do, and the tree does: hold overlapping regions
 * (a slot holds one region; UCX merges overlaps away, mrcache keeps remote regions exact and may hold two
 * regions over one page), answer "every region overlapping a range" in address order, or offer a snapshot.
 * So its numbers are a lower bound on what a radix index would cost in the cache.
 */
public final class RadixPageTable {
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Object[].class);
    private static final int PAGE_SHIFT = 12;
    private static final long PAGE = 1L << PAGE_SHIFT;
    /** User addresses are below 2^47. */
    private static final int ADDRESS_BITS = 47;

    private final int bits;
    private final int levels;
    private final Dir root;
    private int regions;

    /** A directory: its slots hold a {@link Region}, a child {@code Dir}, or null. */
    private static final class Dir {
        final Object[] slots;
        int used;

        Dir(int width) {
            slots = new Object[width];
        }
    }

    public RadixPageTable(int bitsPerLevel) {
        if (bitsPerLevel < 1 || bitsPerLevel > 10) {
            throw new IllegalArgumentException("bitsPerLevel must be in [1, 10]: " + bitsPerLevel);
        }
        this.bits = bitsPerLevel;
        this.levels = (ADDRESS_BITS - PAGE_SHIFT + bits - 1) / bits;
        this.root = new Dir(1 << bits);
    }

    public int size() {
        return regions;
    }

    /** The shift of a slot's span at {@code level} (0 is the root's slots). */
    private int shiftAt(int level) {
        return PAGE_SHIFT + (levels - 1 - level) * bits;
    }

    /** The region covering {@code from}'s page that serves the request, or null. Allocation-free, lock-free. */
    public @Nullable Region find(long from, long to, int access, boolean widenRemote) {
        Dir d = root;
        int mask = (1 << bits) - 1;
        for (int level = 0; level < levels; level++) {
            Object o = SLOT.getAcquire(d.slots, (int) (from >>> shiftAt(level)) & mask);
            if (o instanceof Region r) {
                return r.start <= from && r.end >= to && Region.grants(r.access, access, widenRemote) ? r : null;
            }
            if (o == null) {
                return null;
            }
            d = (Dir) o;
        }
        return null;
    }

    /** Stores {@code r} over its page-aligned range; its pages must hold no other region. Under the writers' lock. */
    public void insert(Region r) {
        put(root, 0, 0, AddressRange.alignDown(r.start, PAGE), AddressRange.alignUp(r.end, PAGE), r);
        regions++;
    }

    /** Clears {@code r}'s slots and frees the directories left empty. Under the writers' lock. */
    public void remove(Region r) {
        clear(root, 0, 0, AddressRange.alignDown(r.start, PAGE), AddressRange.alignUp(r.end, PAGE), r);
        regions--;
    }

    private void put(Dir d, int level, long base, long from, long to, Region r) {
        int shift = shiftAt(level);
        long span = 1L << shift;
        int first = (int) ((Math.max(from, base) - base) >>> shift);
        int last = (int) ((Math.min(to, base + (span << bits)) - 1 - base) >>> shift);
        for (int i = first; i <= last; i++) {
            long slotFrom = base + i * span;
            if (from <= slotFrom && slotFrom + span <= to) {
                if (d.slots[i] != null) {
                    throw new IllegalStateException("pages already mapped at 0x" + Long.toHexString(slotFrom));
                }
                d.used++;
                SLOT.setRelease(d.slots, i, r);
            } else {
                Object o = d.slots[i];
                if (o instanceof Region) {
                    throw new IllegalStateException("pages already mapped at 0x" + Long.toHexString(slotFrom));
                }
                Dir child = (Dir) o;
                if (child == null) {
                    child = new Dir(1 << bits);
                    put(child, level + 1, slotFrom, from, to, r);
                    d.used++;
                    SLOT.setRelease(d.slots, i, child); // published whole
                } else {
                    put(child, level + 1, slotFrom, from, to, r);
                }
            }
        }
    }

    private void clear(Dir d, int level, long base, long from, long to, Region r) {
        int shift = shiftAt(level);
        long span = 1L << shift;
        int first = (int) ((Math.max(from, base) - base) >>> shift);
        int last = (int) ((Math.min(to, base + (span << bits)) - 1 - base) >>> shift);
        for (int i = first; i <= last; i++) {
            Object o = d.slots[i];
            if (o == r) {
                d.used--;
                SLOT.setRelease(d.slots, i, null);
            } else if (o instanceof Dir child) {
                clear(child, level + 1, base + i * span, from, to, r);
                if (child.used == 0) {
                    d.used--;
                    SLOT.setRelease(d.slots, i, null);
                }
            }
        }
    }
}
