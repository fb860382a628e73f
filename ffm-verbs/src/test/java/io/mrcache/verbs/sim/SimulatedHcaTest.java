package io.mrcache.verbs.sim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.Access;
import io.mrcache.core.PinnedMemoryExhaustedException;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationCache;
import io.mrcache.core.RegistrationException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SimulatedHcaTest {
    final SimulatedHca hca = new SimulatedHca();
    final long pd = hca.allocProtectionDomain();

    @Test
    void registrationReallyPinsPagesAndDeregistrationUnpinsThem() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(1 << 20, 4096);
            long lockedBefore = vmLckKb();
            Registration r = hca.register(pd, buf.address(), buf.byteSize(), Access.LOCAL_WRITE);
            assertEquals(1 << 20, hca.pinnedBytes());
            if (!hca.pinningRefused()) {
                assertTrue(vmLckKb() - lockedBefore >= 1024, "mlock raised VmLck by a MiB: " + lockedBefore + " -> "
                        + vmLckKb());
            }
            hca.deregister(r);
            assertEquals(0, hca.pinnedBytes());
            assertEquals(lockedBefore, vmLckKb());
        }
    }

    @Test
    void overlappingRegistrationsPinSharedPagesOnce() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(4 * 4096, 4096);
            Registration a = hca.register(pd, buf.address(), 3 * 4096, Access.LOCAL_READ);
            Registration b = hca.register(pd, buf.address() + 4096, 3 * 4096, Access.LOCAL_READ);
            assertEquals(4 * 4096, hca.pinnedBytes());
            assertEquals(6 * 4096, hca.registeredBytes());
            hca.deregister(a);
            assertEquals(3 * 4096, hca.pinnedBytes(), "pages under b stay pinned");
            hca.deregister(b);
            assertEquals(0, hca.pinnedBytes());
        }
    }

    @Test
    void keysAreUniqueWhileAliveAndADeadKeyIsNeverReissued() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(4096, 4096);
            Set<Integer> seen = new HashSet<>();
            for (int i = 0; i < 1000; i++) {
                Registration r = hca.register(pd, buf.address(), 4096, Access.REMOTE_WRITE | Access.LOCAL_WRITE);
                assertTrue(seen.add(r.rkey()), "key 0x" + Integer.toHexString(r.rkey()) + " issued twice");
                hca.deregister(r);
                assertFalse(hca.isAlive(r.rkey()));
            }
        }
    }

    @Test
    void remoteWriteLandsOnlyWithALiveKeyOfTheDomainInsideTheRegionWithTheRight() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(8192, 4096);
            Registration r = hca.register(pd, buf.address() + 100, 1000, Access.REMOTE_WRITE | Access.LOCAL_WRITE);
            MemorySegment data = arena.allocate(16);
            data.fill((byte) 7);
            hca.rdmaWrite(pd, r.rkey(), buf.address() + 100, data);
            assertEquals(7, buf.get(ValueLayout.JAVA_BYTE, 100));

            data.fill((byte) 9);
            byte[] before = buf.toArray(ValueLayout.JAVA_BYTE);
            assertReason(RemoteAccessException.Reason.WRONG_PROTECTION_DOMAIN,
                    () -> hca.rdmaWrite(hca.allocProtectionDomain(), r.rkey(), buf.address() + 100, data));
            assertReason(RemoteAccessException.Reason.OUT_OF_RANGE,
                    () -> hca.rdmaWrite(pd, r.rkey(), buf.address() + 99, data));
            assertReason(RemoteAccessException.Reason.OUT_OF_RANGE,
                    () -> hca.rdmaWrite(pd, r.rkey(), buf.address() + 1090, data));
            assertReason(RemoteAccessException.Reason.ACCESS_DENIED,
                    () -> hca.rdmaRead(pd, r.rkey(), buf.address() + 100, arena.allocate(16)));
            hca.deregister(r);
            assertReason(RemoteAccessException.Reason.DEAD_KEY,
                    () -> hca.rdmaWrite(pd, r.rkey(), buf.address() + 100, data));
            assertArrayEquals(before, buf.toArray(ValueLayout.JAVA_BYTE), "a rejected access wrote nothing");
        }
    }

    @Test
    void localWriteNeedsLocalWriteRight() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(4096, 4096);
            Registration ro = hca.register(pd, buf.address(), 4096, Access.LOCAL_READ);
            assertReason(RemoteAccessException.Reason.ACCESS_DENIED,
                    () -> hca.localWrite(pd, ro.lkey(), buf.address(), arena.allocate(8)));
            hca.deregister(ro);
            Registration rw = hca.register(pd, buf.address(), 4096, Access.LOCAL_WRITE);
            MemorySegment data = arena.allocate(8).fill((byte) 3);
            hca.localWrite(pd, rw.lkey(), buf.address(), data);
            assertEquals(3, buf.get(ValueLayout.JAVA_BYTE, 0));
            hca.deregister(rw);
        }
    }

    @Test
    void doubleDeregisterIsRejectedWithEinval() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(4096, 4096);
            Registration r = hca.register(pd, buf.address(), 4096, Access.LOCAL_READ);
            hca.deregister(r);
            RegistrationException e = assertThrows(RegistrationException.class, () -> hca.deregister(r));
            assertEquals(22, e.errno());
            assertEquals(1, hca.deregistrations());
        }
    }

    @Test
    void memlockLimitFailsWithEnomemAndTheCacheExplainsIt() {
        hca.memlockLimit(64 * 1024);
        SimulatedRegistrar registrar = new SimulatedRegistrar(hca, pd);
        try (Arena arena = Arena.ofConfined();
                RegistrationCache cache = RegistrationCache.builder(registrar).build()) {
            MemorySegment buf = arena.allocate(256 * 1024, 4096);
            var held = cache.acquire(buf.address(), 48 * 1024, Access.LOCAL_WRITE);
            cache.acquire(buf.address() + 128 * 1024, 8 * 1024, Access.LOCAL_WRITE).close(); // idle, evictable
            // needs 32 KiB more: evicting the idle 8 KiB is not enough
            PinnedMemoryExhaustedException e = assertThrows(PinnedMemoryExhaustedException.class,
                    () -> cache.acquire(buf.address() + 64 * 1024, 32 * 1024, Access.LOCAL_WRITE));
            assertTrue(e.getMessage().contains("RLIMIT_MEMLOCK is 65,536 bytes"), e.getMessage());
            assertTrue(e.getMessage().contains("49,152 bytes pinned"), e.getMessage());
            held.close();
            cache.acquire(buf.address() + 64 * 1024, 32 * 1024, Access.LOCAL_WRITE).close();
        }
        assertEquals(0, hca.liveRegistrations());
    }

    @Test
    void rejectsBadRanges() {
        RegistrationException e = assertThrows(RegistrationException.class,
                () -> hca.register(pd, 4096, 0, Access.LOCAL_READ));
        assertEquals(22, e.errno());
        assertTrue(e.getMessage().contains("length 0"), e.getMessage());
    }

    private static void assertReason(RemoteAccessException.Reason reason, Runnable access) {
        RemoteAccessException e = assertThrows(RemoteAccessException.class, access::run);
        assertEquals(reason, e.reason(), e.getMessage());
        assertNotEquals(null, e.getMessage());
    }

    static long vmLckKb() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmLck:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        throw new IllegalStateException("no VmLck in /proc/self/status");
    }
}
