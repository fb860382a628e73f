package io.mrcache.ucx.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link SlabAllocator}'s refusals: each bad call says what was wrong and changes nothing. */
class SlabAllocatorTest {
    final Arena arena = Arena.ofConfined();
    final List<Long> hooked = new ArrayList<>();
    final SlabAllocator slab = new SlabAllocator(arena, 2, (address, length) -> {
        hooked.add(address);
        return CompletableFuture.completedFuture(null);
    });

    @AfterEach
    void close() {
        arena.close();
    }

    @Test
    void aSecondFreeIsRefusedAndTheSlotIsNeverHandedOutTwice() {
        SlabAllocator.Buffer b = slab.allocate(100);
        assertNotNull(b);
        slab.free(b);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> slab.free(b));
        assertTrue(e.getMessage().contains("is not allocated (freed already"), e.getMessage());
        assertEquals(List.of(b.address()), hooked, "the free hook ran once");
        SlabAllocator.Buffer x = slab.allocate(100);
        SlabAllocator.Buffer y = slab.allocate(100);
        assertNotNull(x);
        assertNotNull(y);
        assertNotEquals(x.address(), y.address(), "two live buffers at one address");
    }

    @Test
    void aForgedBufferOutsideTheMemoryIsRefusedAndTheAllocatorStillWorks() {
        SlabAllocator.Buffer forged = new SlabAllocator.Buffer(slab.memory().address() + slab.memory().byteSize() + 4096,
                64, 5);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> slab.free(forged));
        assertTrue(e.getMessage().contains("outside this allocator's memory"), e.getMessage());
        assertTrue(hooked.isEmpty(), "no range was invalidated for it");
        Set<Long> addresses = new HashSet<>();
        SlabAllocator.Buffer b;
        while ((b = slab.allocate(64 * 1024)) != null) {
            assertTrue(addresses.add(b.address()));
        }
        assertEquals(2, addresses.size(), "both chunks, each once");
    }

    @Test
    void aBufferThatDoesNotMatchWhatWasHandedOutIsRefused() {
        SlabAllocator.Buffer b = slab.allocate(64);
        assertNotNull(b);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> slab.free(new SlabAllocator.Buffer(b.address(), 65536, b.chunk())));
        assertTrue(e.getMessage().contains("does not match"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> slab.free(new SlabAllocator.Buffer(b.address() + 64, 64,
                b.chunk())), "a slot never handed out");
        assertTrue(hooked.isEmpty());
        slab.free(b); // the real one still frees
        assertEquals(List.of(b.address()), hooked);
    }

    @Test
    void aSizeOfZeroOrLessOrAboveAChunkIsRefused() {
        for (int bad : new int[] {-1, 0, SlabAllocator.CHUNK + 1}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> slab.allocate(bad));
            assertTrue(e.getMessage().contains("allocation of " + bad + " bytes"), e.getMessage());
        }
    }

    @Test
    void aFreeHookThatThrowsLeavesTheBufferAllocated() {
        SlabAllocator refusing = new SlabAllocator(arena, 1, (address, length) -> {
            throw new IllegalStateException("closed cache");
        });
        SlabAllocator.Buffer b = refusing.allocate(64);
        assertNotNull(b);
        assertThrows(IllegalStateException.class, () -> refusing.free(b));
        assertEquals(0, refusing.waitingFrees());
        assertThrows(IllegalStateException.class, () -> refusing.free(b), "still allocated: the hook is asked again");
    }
}
