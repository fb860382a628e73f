package io.mrcache.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.testing.RecordingRegistrar;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Owner-bound acquisition (F1 of docs/SAFETY-MODEL.md): a registration made for one owner (an arena's scope, a
 * direct buffer) is never served to another owner at the same addresses, with no invalidate call; an owner
 * collected or closed has its registrations deregistered with no call from the user; a lease keeps its owner.
 */
class OwnerBoundTest {
    static final int RW = Access.LOCAL_WRITE;
    final RecordingRegistrar registrar = new RecordingRegistrar();
    final RegistrationCache cache = RegistrationCache.builder(registrar).build();

    @AfterEach
    void balanced() {
        cache.close();
        registrar.assertBalanced();
    }

    /** Another arena's segment at the same addresses (the first arena closed): a miss, and the stale region goes. */
    @Test
    void aSegmentOfAnotherArenaAtTheSameAddressesIsNeverServedTheOldRegistration() {
        Arena first = Arena.ofConfined();
        MemorySegment old = first.allocate(64 * 1024, 4096);
        long address = old.address();
        Registration made;
        try (Lease l = cache.acquire(old, RW)) {
            made = l.registration();
        }
        first.close();
        try (Arena second = Arena.ofConfined()) {
            // the allocator gave the same bytes to another arena: here, the same addresses claimed by a new scope
            MemorySegment reused = MemorySegment.ofAddress(address).reinterpret(64 * 1024, second, null);
            try (Lease l = cache.acquire(reused, RW)) {
                assertNotEquals(made.handle(), l.registration().handle(), "served a registration of the closed arena");
            }
            assertEquals(2, registrar.registerCount());
            assertEquals(1, cache.metrics().get(CacheCounter.OWNERS_GONE), "the stale region was retired by the miss");
            assertTrue(!registrar.isLive(made), "and deregistered");
        }
    }

    /** The broken variant the tests above must catch: with the owner check skipped, the same scenario hits. */
    @Test
    void withTheOwnerCheckSkippedTheOldRegistrationIsServed() {
        try (RegistrationCache broken = RegistrationCache.builder(registrar).withDeliberateBug(CacheFault.IGNORE_OWNER)
                .build()) {
            Arena first = Arena.ofConfined();
            MemorySegment old = first.allocate(64 * 1024, 4096);
            long handle;
            try (Lease l = broken.acquire(old, RW)) {
                handle = l.registration().handle();
            }
            first.close();
            try (Arena second = Arena.ofConfined()) {
                MemorySegment reused = MemorySegment.ofAddress(old.address()).reinterpret(64 * 1024, second, null);
                try (Lease l = broken.acquire(reused, RW)) {
                    assertEquals(handle, l.registration().handle(), "the broken cache serves the stale registration");
                }
            }
        }
    }

    @Test
    void segmentsOfOneArenaShareItsRegionsAndAddressKeyedRequestsNever() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment s = arena.allocate(16 * 1024, 4096);
            cache.acquire(s.asSlice(0, 4096), RW).close();
            cache.acquire(s.asSlice(100, 200), RW).close(); // another segment of the same arena: a hit
            assertEquals(1, registrar.registerCount());
            cache.acquire(s.address(), 4096, RW).close(); // address-keyed: never an owned region
            assertEquals(2, registrar.registerCount());
            cache.acquire(s.asSlice(0, 4096), RW).close();
            assertEquals(2, registrar.registerCount(), "the owned region still serves its owner");
        }
    }

    @Test
    void aCollectedOwnersRegistrationIsDeregisteredWithNoCallFromTheUser() {
        long address = registerOnAnAutoArenaAndDropIt();
        awaitTrue(() -> registrar.deregisterCount() == 1, "the collected arena's registration was never deregistered");
        assertEquals(1, cache.metrics().get(CacheCounter.OWNERS_GONE));
        assertEquals(0, cache.regionCount());
        assertNotEquals(0, address);
    }

    private long registerOnAnAutoArenaAndDropIt() {
        MemorySegment s = Arena.ofAuto().allocate(8192, 4096);
        cache.acquire(s, RW).close();
        return s.address();
    }

    @Test
    void aClosedArenasRegistrationIsDeregisteredByTheReapersScan() {
        Arena arena = Arena.ofShared();
        cache.acquire(arena.allocate(4096, 4096), RW).close();
        arena.close(); // nothing is enqueued for a close: the scan finds it
        awaitTrue(() -> registrar.deregisterCount() == 1, "the closed arena's registration was never deregistered");
        assertEquals(1, cache.metrics().get(CacheCounter.OWNERS_GONE));
    }

    @Test
    void aLeaseKeepsItsOwnerAndSoItsMemory() {
        Lease[] held = {leaseOnAnAutoArena()}; // the only reference to the arena's scope is the lease's
        for (int i = 0; i < 5; i++) {
            System.gc();
        }
        assertEquals(0, registrar.deregisterCount(), "deregistered under a lease");
        assertEquals(1, registrar.live().size());
        held[0].close();
        held[0] = null; // released and dropped: the scope is unreachable now
        awaitTrue(() -> registrar.deregisterCount() == 1, "released, dropped: never deregistered");
        assertEquals(1, cache.metrics().get(CacheCounter.OWNERS_GONE));
    }

    private Lease leaseOnAnAutoArena() {
        return cache.acquire(Arena.ofAuto().allocate(4096, 4096), RW);
    }

    @Test
    void directBuffersAreOwnedByTheBufferObject() {
        ByteBuffer b = ByteBuffer.allocateDirect(64 * 1024);
        cache.acquire(b, RW).close();
        cache.acquire(b, RW).close();
        assertEquals(1, registrar.registerCount(), "the same buffer hits");
        cache.acquire(b.duplicate(), RW).close();
        assertEquals(2, registrar.registerCount(), "a duplicate is another owner: a miss, never a wrong hit");
        b.position(4096).limit(8192);
        try (Lease l = cache.acquire(b, RW)) {
            assertEquals(MemorySegment.ofBuffer(b).address(), l.address(), "position to limit");
            assertEquals(4096, l.length());
        }
        assertEquals(2, registrar.registerCount(), "inside the buffer's own region");
    }

    @Test
    void aBufferOfAClosedArenaAndAClosedSegmentAreRefused() {
        Arena arena = Arena.ofConfined();
        MemorySegment s = arena.allocate(4096, 4096);
        ByteBuffer b = s.asByteBuffer();
        arena.close();
        assertTrue(assertThrows(IllegalStateException.class, () -> cache.acquire(s, RW)).getMessage()
                .contains("arena is closed"));
        assertThrows(IllegalStateException.class, () -> cache.acquire(b, RW));
        assertEquals(0, registrar.registerCount());
    }

    @Test
    void heapMemoryAndEmptySegmentsAreRefusedNamingWhatToDo() {
        IllegalArgumentException heap = assertThrows(IllegalArgumentException.class,
                () -> cache.acquire(MemorySegment.ofArray(new byte[4096]), RW));
        assertTrue(heap.getMessage().contains("heap segment") && heap.getMessage().contains("Arena"), heap.getMessage());
        IllegalArgumentException heapBuffer = assertThrows(IllegalArgumentException.class,
                () -> cache.acquire(ByteBuffer.allocate(4096), RW));
        assertTrue(heapBuffer.getMessage().contains("allocateDirect"), heapBuffer.getMessage());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment empty = arena.allocate(4096, 4096).asSlice(0, 0);
            assertThrows(IllegalArgumentException.class, () -> cache.acquire(empty, RW));
            assertThrows(IllegalArgumentException.class, () -> cache.acquire(arena.allocate(64), 0));
        }
        assertEquals(0, registrar.registerCount());
    }

    @Test
    void anInvalidationStillRetiresOwnedRegions() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(4096, 4096);
            cache.acquire(s, RW).close();
            cache.invalidateAndWait(s.address(), s.byteSize());
            assertEquals(1, registrar.deregisterCount());
            cache.acquire(s, RW).close();
            assertEquals(2, registrar.registerCount());
        }
    }

    static void awaitTrue(BooleanSupplier condition, String message) {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(message);
            }
            System.gc();
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
        assertNotNull(message);
    }
}
