package io.mrcache.stress.injector;

import io.mrcache.core.RegistrationException;
import io.mrcache.verbs.internal.Libc;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A malloc-like allocator over a virtual address space it manages, with the ground truth the injector checks
 * against.
 *
 * <p>The "physical" memory is an in-memory file ({@code memfd}) of runs of {@link #CHUNK} bytes, seen whole through
 * one shared mapping, the <em>physical view</em>, through which the NIC writes and the workers read back, as DMA
 * reaches pages whatever maps them. The virtual address space is a reserved range of {@link #CHUNKS} chunks:
 * mapping a chunk maps a run of the file there ({@code mmap(MAP_SHARED | MAP_FIXED)}), unmapping it leaves an
 * inaccessible hole, so the page frames behind a virtual address really change when a chunk comes back with
 * another run, and a page-frame check ({@code /proc/self/pagemap}) can see it. A chunk mapped to a run then
 * serves one size class as a
 * slab: a 64-byte class packs 64 allocations into each page, so a page-rounded registration of one allocation
 * covers its neighbours' bytes. Freed slots are reused on the same pages once their free hook's stage
 * completed; a chunk whose slots are all free may be <em>unmapped</em> (one large invalidation of the whole
 * chunk) and later mapped again, for any size class, with a <em>new physical run</em>, as a process's
 * reused addresses get new pages. A run pinned by a registration is not handed out again (the kernel keeps
 * pinned pages).
 *
 * <p>Ground truth: which allocation owns each slot, which run backs each chunk, and the epoch at which each
 * slot's and chunk's free began, for the reuse check ({@link ReuseCheck}). Thread-safe: one monitor guards
 * the ground truth; the mapping system calls run outside it, on a chunk that its state (MAPPING, UNMAPPING)
 * keeps every other call away from.
 */
final class MallocArena {
    static final long PAGE = 4096;
    static final long CHUNK = 64 * 1024;
    static final int CHUNKS = 48;
    static final long[] SIZES = {64, 256, 1024, 4096, 16 * 1024, 64 * 1024};
    /** Relative frequency of each size class, in percent. */
    static final int[] WEIGHTS = {30, 25, 20, 12, 8, 5};
    private static final int SPARE_RUNS = 32;
    private static final int RUNS = CHUNKS + SPARE_RUNS;

    /**
     * One live allocation; {@code reusedAfter} is the epoch at which the last free of its bytes began (0 for
     * bytes never used before): no registration begun before it may serve this allocation. {@code physical} is
     * where its first byte lies in the physical view: fixed while it is live, since a chunk is unmapped only
     * when every slot in it is free.
     */
    record Allocation(long id, int chunk, int slot, long address, long length, long reusedAfter, long physical) {
        long end() {
            return address + length;
        }
    }

    /** Told of every reuse of bytes: what the NIC still has registered over them from before their free. */
    @FunctionalInterface
    interface ReuseCheck {
        /** Registrations over {@code [address, address + length)} that began before {@code freeEpoch}. */
        int liveFromBefore(long address, long length, long freeEpoch);
    }

    /** A chunk whose every slot is free: the caller announces its unmap, then calls {@link #unmapped}. */
    record Unmap(int chunk, long address, long length) {
    }

    private enum ChunkState { UNMAPPED, MAPPING, MAPPED, UNMAPPING }

    private final boolean lifo;
    private final ReuseCheck reuseCheck;
    private final int memfd;
    private final long physicalView;
    private final long virtualBase;
    private final ChunkState[] state = new ChunkState[CHUNKS];
    private final int[] chunkClass = new int[CHUNKS];
    private final long[] run = new long[CHUNKS];
    private final long[] chunkFreedAt = new long[CHUNKS];
    /** How many times each chunk has been mapped (a mapping's identity, with the chunk). */
    private final long[] mappings = new long[CHUNKS];
    private final long[][] owner = new long[CHUNKS][];
    private final long[][] slotFreedAt = new long[CHUNKS][];
    /** Slots of a mapped chunk that are neither live nor waiting for their free hook. */
    private final int[] reusableSlots = new int[CHUNKS];
    /** Per size class: (chunk, slot) pairs ready for reuse; stale entries are skipped on the way out. */
    private final List<ArrayDeque<long[]>> ready = new ArrayList<>();
    private final ArrayDeque<Integer> unmappedChunks = new ArrayDeque<>();
    private final ArrayDeque<Long> freeRuns = new ArrayDeque<>();
    /** Per run (by index): registrations pinning it. */
    private final int[] runPins = new int[RUNS];
    /** Per run: whether a chunk maps it. */
    private final boolean[] runMapped = new boolean[RUNS];
    private long nextId = 1;
    private long reusedWhileRegistered;
    private long chunkUnmaps;
    private long chunkRemaps;

    MallocArena(boolean lifo, ReuseCheck reuseCheck) {
        this.lifo = lifo;
        this.reuseCheck = reuseCheck;
        for (int c = 0; c < SIZES.length; c++) {
            ready.add(new ArrayDeque<>());
        }
        memfd = Libc.memfd("mrcache-injector", CHUNK * RUNS);
        physicalView = Libc.mmap(0, CHUNK * RUNS, Libc.PROT_READ | Libc.PROT_WRITE, Libc.MAP_SHARED, memfd, 0);
        virtualBase = Libc.mmap(0, CHUNK * CHUNKS, Libc.PROT_NONE,
                Libc.MAP_PRIVATE | Libc.MAP_ANONYMOUS | Libc.MAP_NORESERVE, -1, 0);
        for (int r = 0; r < RUNS; r++) {
            long base = physicalView + r * CHUNK;
            freeRuns.add(base);
        }
        for (int c = 0; c < CHUNKS; c++) {
            state[c] = ChunkState.UNMAPPED;
            unmappedChunks.add(c);
        }
    }

    /** Picks a size class by {@link #WEIGHTS} from a number in [0, 100). */
    static int sizeClass(int percent) {
        int c = 0;
        for (int acc = WEIGHTS[0]; percent >= acc && c < SIZES.length - 1; acc += WEIGHTS[++c]) {
            // walk the cumulative weights
        }
        return c;
    }

    /** A new allocation of class {@code sizeClass}, or null when no slot or chunk is free now. */
    Allocation allocate(int sizeClass) {
        while (true) {
            long[] mapping;
            synchronized (this) {
                Allocation a = takeReady(sizeClass);
                if (a != null) {
                    return a;
                }
                mapping = startMapping();
                if (mapping == null) {
                    return null;
                }
            }
            // the system calls outside the monitor: the chunk is MAPPING, so no other call touches it or its run
            map((int) mapping[0], mapping[1]);
            synchronized (this) {
                finishMapping((int) mapping[0], mapping[1], sizeClass);
            }
        }
    }

    /** A ready slot of {@code sizeClass} taken, or null when there is none. */
    private Allocation takeReady(int sizeClass) {
        ArrayDeque<long[]> q = ready.get(sizeClass);
        while (!q.isEmpty()) {
            long[] cs = lifo ? q.pollLast() : q.pollFirst();
            int c = (int) cs[0];
            int s = (int) cs[1];
            if (state[c] != ChunkState.MAPPED || chunkClass[c] != sizeClass || owner[c][s] != 0
                    || cs[2] != slotFreedAt[c][s]) {
                continue; // the chunk was unmapped or remapped since, or the slot was taken
            }
            return take(c, s);
        }
        return null;
    }

    /** An unmapped chunk and a free run for it, {chunk, run}, marked MAPPING; null when either is lacking. */
    private long @Nullable [] startMapping() {
        Integer c = lifo ? unmappedChunks.pollLast() : unmappedChunks.pollFirst();
        if (c == null || freeRuns.isEmpty()) {
            if (c != null) {
                unmappedChunks.addFirst(c);
            }
            return null;
        }
        long r = freeRuns.pollFirst();
        runMapped[runIndex(r)] = true;
        state[c] = ChunkState.MAPPING;
        return new long[] {c, r};
    }

    private Allocation take(int c, int s) {
        long address = address(c, s);
        long length = SIZES[chunkClass[c]];
        if (slotFreedAt[c][s] > 0) {
            reusedWhileRegistered += reuseCheck.liveFromBefore(address, length, slotFreedAt[c][s]);
        }
        long id = nextId++;
        owner[c][s] = id;
        reusableSlots[c]--;
        return new Allocation(id, c, s, address, length, Math.max(slotFreedAt[c][s], chunkFreedAt[c]),
                backing(c, address));
    }

    /**
     * Whether a chunk's pages are made present when it is mapped: a page-frame check reads them. Otherwise nothing
     * touches the virtual pages (the NIC and the workers reach the runs through the physical view), so none is
     * present, and an unmap has no page table entries to clear: no TLB flush, which needs the other processor's
     * acknowledgement and was most of an unmap's cost (8% of a one-thread soak's samples).
     */
    private volatile boolean presentPages = true;

    void presentPages(boolean present) {
        presentPages = present;
    }

    /** Maps run {@code r} at chunk {@code c}, zeroed. Outside the monitor. */
    private void map(int c, long r) {
        MemorySegment.ofAddress(r).reinterpret(CHUNK).fill((byte) 0);
        // MAP_POPULATE: the pages are present at once, as a registration makes them (touching them from Java
        // instead is a loop of unused reads that the JIT may remove, leaving page frames that read as absent)
        Libc.mmap(chunkAddress(c), CHUNK, Libc.PROT_READ | Libc.PROT_WRITE,
                Libc.MAP_SHARED | Libc.MAP_FIXED | (presentPages ? Libc.MAP_POPULATE : 0), memfd, r - physicalView);
    }

    /** Chunk {@code c} maps run {@code r} now: it serves {@code sizeClass}, every slot ready. */
    private void finishMapping(int c, long r, int sizeClass) {
        if (chunkFreedAt[c] > 0) { // the addresses come back: nothing registered before the unmap may cover them
            reusedWhileRegistered += reuseCheck.liveFromBefore(chunkAddress(c), CHUNK, chunkFreedAt[c]);
            chunkRemaps++;
        }
        int slots = (int) (CHUNK / SIZES[sizeClass]);
        state[c] = ChunkState.MAPPED;
        mappings[c]++;
        chunkClass[c] = sizeClass;
        run[c] = r;
        owner[c] = new long[slots];
        slotFreedAt[c] = new long[slots];
        reusableSlots[c] = slots;
        for (int s = 0; s < slots; s++) {
            ready.get(sizeClass).add(new long[] {c, s, 0});
        }
    }

    /**
     * Frees {@code a}: its bytes are free from now on, and reusable once {@link #reusable} is called (after
     * the free hook's stage completed). {@code epoch} is when the free began.
     */
    synchronized void free(Allocation a, long epoch) {
        owner[a.chunk()][a.slot()] = 0;
        slotFreedAt[a.chunk()][a.slot()] = epoch;
    }

    /**
     * The free hook's stage of {@code a} completed: its slot may be reused. Returns the chunk to unmap when
     * every slot is free again and {@code unmapIt} (the caller's coin) says so and a spare run exists, else
     * null.
     */
    synchronized Unmap reusable(Allocation a, boolean unmapIt) {
        int c = a.chunk();
        reusableSlots[c]++;
        ready.get(chunkClass[c]).add(new long[] {c, a.slot(), slotFreedAt[c][a.slot()]});
        if (unmapIt && reusableSlots[c] == owner[c].length && !freeRuns.isEmpty()) {
            state[c] = ChunkState.UNMAPPING; // munmap: registering these addresses now fails (EFAULT)
            return new Unmap(c, chunkAddress(c), CHUNK);
        }
        return null;
    }

    /** The unmap of a chunk began at {@code epoch}; its run goes back to the pool once nothing pins it. */
    void unmapping(Unmap u, long epoch) {
        int c = u.chunk();
        // outside the monitor: the chunk is UNMAPPING, so no other call reads its mapping or maps it; its run
        // returns to the pool only after this, as the kernel reuses no page while a mapping holds it
        Libc.mmap(chunkAddress(c), CHUNK, Libc.PROT_NONE,
                Libc.MAP_PRIVATE | Libc.MAP_ANONYMOUS | Libc.MAP_FIXED | Libc.MAP_NORESERVE, -1, 0);
        synchronized (this) {
            chunkFreedAt[c] = epoch;
            long r = run[c];
            run[c] = 0;
            int i = runIndex(r);
            runMapped[i] = false;
            if (runPins[i] == 0) {
                freeRuns.add(r);
            }
            chunkUnmaps++;
        }
    }

    /** The unmap's free hook completed: the addresses may be mapped again. */
    synchronized void unmapped(Unmap u) {
        state[u.chunk()] = ChunkState.UNMAPPED;
        unmappedChunks.add(u.chunk());
    }

    /** Whom a write meets ({@link #classify}). */
    enum Meets {
        /** No live owner: the byte is free or unmapped. */
        FREE,
        /** The intended allocation, through the pages that back it now. */
        INTENDED,
        /** Another allocation owns the byte, or other pages back it now. */
        OTHER
    }

    /**
     * Whom a write at virtual {@code address} that reaches physical {@code target} meets now, when allocation
     * {@code intended} is meant. One hold of the monitor for owner and pages both.
     */
    synchronized Meets classify(long address, long intended, long target) {
        int c = chunkOf(address);
        if (c < 0 || state[c] != ChunkState.MAPPED) {
            return Meets.FREE;
        }
        long id = owner[c][(int) ((address - chunkAddress(c)) / SIZES[chunkClass[c]])];
        if (id == 0) {
            return Meets.FREE;
        }
        return id == intended && backing(c, address) == target ? Meets.INTENDED : Meets.OTHER;
    }

    /**
     * A registration pins the pages of {@code [address, address + length)}: they must lie in one mapped
     * chunk (else EFAULT, as {@code ibv_reg_mr} of unmapped memory fails). Returns the physical run.
     */
    synchronized long pin(long address, long length) {
        int c = chunkOf(address);
        if (c < 0 || state[c] != ChunkState.MAPPED || address + length > chunkAddress(c) + CHUNK) {
            throw new RegistrationException(String.format("register of [0x%x, +%d): not inside one mapped chunk"
                    + " (EFAULT)", address, length), RegistrationException.EFAULT);
        }
        runPins[runIndex(run[c])]++;
        return run[c];
    }

    synchronized void unpin(long r) {
        int i = runIndex(r);
        runPins[i]--;
        if (runPins[i] == 0 && !runMapped[i]) {
            freeRuns.add(r);
        }
    }

    /** The physical address behind {@code address} in mapped chunk {@code c}. */
    private long backing(int c, long address) {
        return run[c] + (address - chunkAddress(c));
    }

    private int runIndex(long r) {
        return (int) ((r - physicalView) / CHUNK);
    }

    int chunkOf(long address) {
        long off = address - virtualBase;
        return off < 0 || off >= CHUNKS * CHUNK ? -1 : (int) (off / CHUNK);
    }

    long chunkAddress(int c) {
        return virtualBase + c * CHUNK;
    }

    private long address(int c, int s) {
        return chunkAddress(c) + s * SIZES[chunkClass[c]];
    }

    /** The live allocation in {@code a}'s chunk right after {@code a}, or null (for scatter/gather spans). */
    synchronized long nextOwner(Allocation a) {
        int c = a.chunk();
        int s = a.slot() + 1;
        return state[c] == ChunkState.MAPPED && s < owner[c].length ? owner[c][s] : 0;
    }

    /** Which mapping of its chunk {@code a} lives in (1 for the first). */
    synchronized long mappingOf(Allocation a) {
        return mappings[a.chunk()];
    }

    synchronized long reusedWhileRegistered() {
        return reusedWhileRegistered;
    }

    synchronized long chunkUnmaps() {
        return chunkUnmaps;
    }

    synchronized long chunkRemaps() {
        return chunkRemaps;
    }

    void close() {
        Libc.munmap(virtualBase, CHUNK * CHUNKS);
        Libc.munmap(physicalView, CHUNK * RUNS);
        Libc.close(memfd);
    }
}
