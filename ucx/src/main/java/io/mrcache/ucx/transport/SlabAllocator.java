package io.mrcache.ucx.transport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.function.BiFunction;
import org.jspecify.annotations.Nullable;

/**
 * A malloc-like allocator over memory from FFM, as a transport's buffers come from one: chunks of
 * {@link #CHUNK} bytes, each serving one size class (64 B to 64 KiB) as a slab, so small buffers share pages
 * and a page-rounded registration of one covers its neighbours. A chunk whose slots are all free goes back to
 * the chunk pool and may serve another size class next: the same addresses, cut differently.
 *
 * <p>Every free goes through the free hook (the cache's {@code invalidate}) and the slot is reused only once
 * the hook's stage completed normally; a stage that failed keeps the slot out of use, as a key may still be
 * live. The last freed slot of a class is the first reused (LIFO), as allocators do, so reuse comes fast. One
 * thread uses it (the transport's event loop); stages complete on that thread or another.
 */
public final class SlabAllocator implements AutoCloseable {
    /** Bytes per chunk. */
    public static final int CHUNK = 64 * 1024;
    /** Size classes: 64 B to 64 KiB. */
    static final int[] CLASSES = {64, 256, 1024, 4096, 16384, 65536};

    /** A live allocation: its slot's address and size, and the chunk it is in. */
    public record Buffer(long address, int length, int chunk) {
        public long end() {
            return address + length;
        }
    }

    private final MemorySegment memory;
    private final BiFunction<Long, Long, CompletionStage<Void>> freeHook;
    private final ArrayDeque<Integer> freeChunks = new ArrayDeque<>();
    /** Per size class, its free slots (addresses), last freed first. */
    private final List<ArrayDeque<Long>> freeSlots = new ArrayList<>();
    /** Per chunk: its size class (-1 when in the pool) and its slots in use or waiting for a free's stage. */
    private final int[] chunkClass;
    private final int[] chunkBusy;
    /** The addresses of the buffers handed out and not yet freed: a free must name one of them. */
    private final Set<Long> allocated = new HashSet<>();
    private final Object lock = new Object();
    private long waitingFrees;
    private long failedFrees;

    /**
     * {@code chunks} chunks of memory from {@code arena}; {@code freeHook} is called with (address, length) at
     * every free.
     */
    public SlabAllocator(Arena arena, int chunks, BiFunction<Long, Long, CompletionStage<Void>> freeHook) {
        this.memory = arena.allocate((long) chunks * CHUNK, 4096);
        this.freeHook = freeHook;
        this.chunkClass = new int[chunks];
        this.chunkBusy = new int[chunks];
        for (int c = 0; c < chunks; c++) {
            freeChunks.add(c);
            chunkClass[c] = -1;
        }
        for (int i = 0; i < CLASSES.length; i++) {
            freeSlots.add(new ArrayDeque<>());
        }
    }

    /** The size class index for a request of {@code bytes} (1 to {@link #CHUNK}). */
    static int classOf(int bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("allocation of " + bytes + " bytes: ask for 1 to " + CHUNK);
        }
        for (int i = 0; i < CLASSES.length; i++) {
            if (bytes <= CLASSES[i]) {
                return i;
            }
        }
        throw new IllegalArgumentException("allocation of " + bytes + " bytes: at most " + CHUNK + " (one chunk)");
    }

    /** A buffer of the size class that fits {@code bytes}, or null when no memory is free now. */
    public @Nullable Buffer allocate(int bytes) {
        int cls = classOf(bytes);
        synchronized (lock) {
            ArrayDeque<Long> slots = freeSlots.get(cls);
            if (slots.isEmpty()) {
                Integer c = freeChunks.pollLast(); // the last chunk given back first: addresses come back fast
                if (c == null) {
                    return null;
                }
                chunkClass[c] = cls;
                long base = memory.address() + (long) c * CHUNK;
                for (long a = base + CHUNK - CLASSES[cls]; a >= base; a -= CLASSES[cls]) {
                    slots.addLast(a);
                }
            }
            long address = slots.pollLast();
            int chunk = chunkOf(address);
            chunkBusy[chunk]++;
            allocated.add(address);
            return new Buffer(address, CLASSES[cls], chunk);
        }
    }

    /**
     * Frees {@code b}: the free hook runs now; the slot is reused once its stage completes normally (at once, for
     * a cache that does not hold it back).
     */
    public void free(Buffer b) {
        synchronized (lock) {
            String wrong = notAllocated(b);
            if (wrong != null) {
                throw new IllegalArgumentException("free(" + b + "): " + wrong + "; nothing was freed");
            }
            allocated.remove(b.address());
            waitingFrees++;
        }
        CompletionStage<Void> stage;
        try {
            stage = freeHook.apply(b.address(), (long) b.length());
        } catch (RuntimeException | Error e) { // the hook refused: the buffer is still the caller's
            synchronized (lock) {
                allocated.add(b.address());
                waitingFrees--;
            }
            throw e;
        }
        stage.whenComplete((ok, failure) -> {
            synchronized (lock) {
                waitingFrees--;
                if (failure != null) {
                    failedFrees++; // a key may still be live: the slot stays out of use
                    return;
                }
                freeSlots.get(classOf(b.length())).addLast(b.address());
                if (--chunkBusy[b.chunk()] == 0) { // every slot free: the chunk may serve another class
                    freeSlots.get(classOf(b.length())).removeIf(a -> chunkOf(a) == b.chunk());
                    chunkClass[b.chunk()] = -1;
                    freeChunks.addLast(b.chunk());
                }
            }
        });
    }

    /** Why {@code b} is not a buffer this allocator handed out and has not freed since, or null when it is. */
    private @Nullable String notAllocated(Buffer b) {
        long offset = b.address() - memory.address();
        if (offset < 0 || offset >= memory.byteSize()) {
            return "0x" + Long.toHexString(b.address()) + " is outside this allocator's memory [0x"
                    + Long.toHexString(memory.address()) + ", 0x" + Long.toHexString(memory.address() + memory.byteSize())
                    + ")";
        }
        if (!allocated.contains(b.address())) {
            return "0x" + Long.toHexString(b.address()) + " is not allocated (freed already, or never handed out)";
        }
        int chunk = chunkOf(b.address());
        if (b.chunk() != chunk || chunkClass[chunk] < 0 || CLASSES[chunkClass[chunk]] != b.length()) {
            return "it does not match the buffer handed out at 0x" + Long.toHexString(b.address()) + " (chunk " + chunk
                    + ", " + (chunkClass[chunk] < 0 ? "no size class" : CLASSES[chunkClass[chunk]] + " bytes") + ")";
        }
        return null;
    }

    private int chunkOf(long address) {
        return (int) ((address - memory.address()) / CHUNK);
    }

    /** The buffer's bytes. */
    public MemorySegment segment(Buffer b) {
        return memory.asSlice(b.address() - memory.address(), b.length());
    }

    /** All the allocator's memory (for checks of bytes no live buffer owns). */
    public MemorySegment memory() {
        return memory;
    }

    /** Frees whose stage has not completed yet. */
    public long waitingFrees() {
        synchronized (lock) {
            return waitingFrees;
        }
    }

    /** Frees whose stage failed (their slots are never reused). */
    public long failedFrees() {
        synchronized (lock) {
            return failedFrees;
        }
    }

    @Override
    public void close() {
        // the memory is the arena's: its owner frees it
    }
}
