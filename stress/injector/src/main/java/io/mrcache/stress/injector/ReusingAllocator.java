package io.mrcache.stress.injector;

import io.mrcache.core.RegistrationException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A caching allocator over a virtual address space it manages, with the ground truth the injector checks
 * against.
 *
 * <p>Virtual addresses are numbers (they are never dereferenced); each size class owns a run of virtual
 * slots. An allocation maps its slot to a physical run: real memory, page-aligned, from an {@link Arena}.
 * Freeing a slot and allocating it again gives the <em>same virtual addresses</em> a <em>new physical
 * run</em>, as a reused virtual range gets new pages in a real process. A physical run is not handed out
 * again while a registration pins it (the kernel keeps pinned pages) or before it is freed.
 *
 * <p>Ground truth: which allocation owns each slot now ({@link #ownerOf}), and which physical run.
 * Reuse order: last freed, first reused with {@link Fault#IMMEDIATE_REUSE}, else oldest first. In safe mode
 * a freed slot is quarantined until its invalidation completes.
 */
final class ReusingAllocator {
    static final long PAGE = 4096;
    static final long[] SIZES = {4 << 10, 8 << 10, 16 << 10, 32 << 10};
    static final int SLOTS_PER_CLASS = 32;
    static final long VIRTUAL_BASE = 0x7e00_0000_0000L;
    private static final long CLASS_SPAN = 1L << 32;

    /** One live allocation. */
    record Allocation(long id, int sizeClass, int slot, long address, long length, long physical) {
    }

    private final boolean lifo;
    private final Arena arena = Arena.ofShared();
    private final ArrayDeque<Integer>[] freeSlots;
    private final ArrayDeque<Long>[] freeRuns;
    private final long[][] owner; // [class][slot] -> allocation id, 0 when free
    private final long[][] physicalOf; // [class][slot] -> physical run of the current allocation
    private final java.util.Map<Long, int[]> runState = new java.util.HashMap<>(); // run -> {pins, freed(0/1)}
    private final AtomicLong nextId = new AtomicLong(1);
    private long quarantined; // guarded by this

    @SuppressWarnings("unchecked")
    ReusingAllocator(boolean lifo) {
        this.lifo = lifo;
        freeSlots = new ArrayDeque[SIZES.length];
        freeRuns = new ArrayDeque[SIZES.length];
        owner = new long[SIZES.length][SLOTS_PER_CLASS];
        physicalOf = new long[SIZES.length][SLOTS_PER_CLASS];
        for (int c = 0; c < SIZES.length; c++) {
            freeSlots[c] = new ArrayDeque<>();
            freeRuns[c] = new ArrayDeque<>();
            for (int s = 0; s < SLOTS_PER_CLASS; s++) {
                freeSlots[c].add(s);
            }
            // twice the slots: room for runs pinned by registrations of freed buffers
            MemorySegment pool = arena.allocate(SIZES[c] * SLOTS_PER_CLASS * 2, PAGE);
            pool.fill((byte) 0);
            for (int r = 0; r < SLOTS_PER_CLASS * 2; r++) {
                long run = pool.address() + r * SIZES[c];
                freeRuns[c].add(run);
                runState.put(run, new int[] {0, 1});
            }
        }
    }

    /** A new allocation of class {@code sizeClass}, or null when every slot or run is busy. */
    synchronized Allocation allocate(int sizeClass) {
        if (freeSlots[sizeClass].isEmpty() || freeRuns[sizeClass].isEmpty()) {
            return null;
        }
        int slot = lifo ? freeSlots[sizeClass].pollLast() : freeSlots[sizeClass].pollFirst();
        long run = freeRuns[sizeClass].pollFirst();
        runState.get(run)[1] = 0;
        long id = nextId.getAndIncrement();
        owner[sizeClass][slot] = id;
        physicalOf[sizeClass][slot] = run;
        return new Allocation(id, sizeClass, slot, VIRTUAL_BASE + sizeClass * CLASS_SPAN + slot * SIZES[sizeClass],
                SIZES[sizeClass], run);
    }

    /**
     * Frees an allocation. The slot returns to the free list when {@code reusable} completes (safe mode
     * passes the invalidation's stage; a completed stage means at once).
     */
    void free(Allocation a, CompletionStage<Void> reusable) {
        synchronized (this) {
            owner[a.sizeClass()][a.slot()] = 0;
            int[] st = runState.get(a.physical());
            st[1] = 1;
            if (st[0] == 0) {
                freeRuns[a.sizeClass()].add(a.physical());
            }
            quarantined++;
        }
        reusable.whenComplete((v, e) -> {
            synchronized (this) {
                quarantined--;
                freeSlots[a.sizeClass()].add(a.slot());
            }
        });
    }

    /** The allocation id owning the slot at {@code address} now, 0 when free. */
    synchronized long ownerOf(long address) {
        int c = classOf(address);
        return owner[c][slotOf(c, address)];
    }

    /** Physical address backing {@code address} now. */
    synchronized long physical(long address) {
        int c = classOf(address);
        int slot = slotOf(c, address);
        if (owner[c][slot] == 0) {
            throw new RegistrationException("address 0x" + Long.toHexString(address) + " is not mapped", 14);
        }
        return physicalOf[c][slot] + (address - (VIRTUAL_BASE + c * CLASS_SPAN + slot * SIZES[c]));
    }

    /** A registration now pins the run behind {@code address}; returns that run. */
    synchronized long pin(long address, long length) {
        int c = classOf(address);
        int slot = slotOf(c, address);
        long slotStart = VIRTUAL_BASE + c * CLASS_SPAN + slot * SIZES[c];
        if (owner[c][slot] == 0 || address + length > slotStart + SIZES[c]) {
            throw new RegistrationException(String.format("register of [0x%x, +%d): not inside one mapped"
                    + " allocation (EFAULT)", address, length), 14);
        }
        long run = physicalOf[c][slot];
        runState.get(run)[0]++;
        return run;
    }

    synchronized void unpin(long run, int sizeClass) {
        int[] st = runState.get(run);
        st[0]--;
        if (st[0] == 0 && st[1] == 1) {
            freeRuns[sizeClass].add(run);
        }
    }

    static int classOf(long address) {
        return (int) ((address - VIRTUAL_BASE) / CLASS_SPAN);
    }

    private static int slotOf(int c, long address) {
        return (int) ((address - VIRTUAL_BASE - c * CLASS_SPAN) / SIZES[c]);
    }

    synchronized long quarantined() {
        return quarantined;
    }

    void close() {
        arena.close();
    }
}
