package io.mrcache.core;

/**
 * Which of a region's lease cells a thread uses. The count is sized to the machine (the next power of two at
 * or above the processor count, at least 4 and at most 16: each cell is a 64-byte line of every region, so
 * a 64-core machine does not pay 4 KiB per region). A thread starts on a cell chosen by a hash of its id; two
 * threads whose ids collide would share a cell line and make it bounce between their cores, so a thread
 * that finds its cell contended (the compare-and-set of its add failed) moves on, as {@code Striped64} does:
 * its slot in a small table of offsets advances by one, and its later acquires use the next cell.
 *
 * <p>The table is shared by all caches and read plainly: a thread that reads a stale offset only uses the
 * old cell once more. A lease remembers the cell it was taken on, so moving never unbalances a count. Two
 * threads that share a slot as well as a cell (one pair of colliding threads in 64) move together and stay
 * on one cell: correct, only slower.
 */
final class LeaseStripes {
    /** Cells per region; a power of two. */
    static final int STRIPES = Math.clamp(Integer.highestOneBit(Math.max(1, Runtime.getRuntime().availableProcessors() * 2 - 1)), 4, 16);
    private static final int BITS = Integer.numberOfTrailingZeros(STRIPES);
    /** Threads whose ids hash to the same slot move together; 64 slots make that rare. */
    private static final int SLOTS = 64;
    private static final int[] OFFSETS = new int[SLOTS];
    /**
     * A diagnostic for benchmarks ({@code -Dmrcache.stripes.collide=true}): every thread starts on cell 0, so
     * that a run measures two threads whose ids collide, and the moving that separates them.
     */
    private static final boolean COLLIDE = Boolean.getBoolean("mrcache.stripes.collide");
    /**
     * For the model checker ({@code -Dmrcache.stripes.fixed=true}): every thread uses cell 0 and never moves, so
     * that one interleaving replays the same way (the moving writes a table shared by all caches, which Lincheck's
     * replays of an interleaving would see changed). A constant: the hit path pays nothing for it.
     */
    private static final boolean FIXED = Boolean.getBoolean("mrcache.stripes.fixed");

    private LeaseStripes() {
    }

    /** The calling thread's cell now. */
    static int current() {
        return of(Thread.currentThread().threadId());
    }

    static int of(long threadId) {
        if (FIXED) {
            return 0;
        }
        long h = threadId * 0x9E3779B97F4A7C15L;
        int home = COLLIDE ? 0 : (int) (h >>> (64 - BITS));
        return (home + OFFSETS[slot(h)]) & (STRIPES - 1);
    }

    /** The calling thread found its cell contended: its later acquires use the next one. */
    static void contended() {
        contended(Thread.currentThread().threadId());
    }

    static void contended(long threadId) {
        if (FIXED) {
            return;
        }
        int slot = slot(threadId * 0x9E3779B97F4A7C15L);
        OFFSETS[slot] = OFFSETS[slot] + 1; // a racy increment is fine: any change moves the thread
    }

    /** The thread's slot in the table of offsets (for tests). */
    static int slotOf(long threadId) {
        return slot(threadId * 0x9E3779B97F4A7C15L);
    }

    private static int slot(long hash) {
        return (int) (hash >>> 20) & (SLOTS - 1);
    }
}
