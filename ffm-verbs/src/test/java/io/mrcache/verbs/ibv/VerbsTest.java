package io.mrcache.verbs.ibv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.Access;
import io.mrcache.core.Lease;
import io.mrcache.core.RegistrationCache;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Loads the real {@code libibverbs.so.1}. Without a device (as on the project's machines) it checks the
 * no-device path; with one it lists, queries and registers through the cache.
 */
class VerbsTest {

    @Test
    void realLibraryLoadsAndExportsTheBoundSymbols() {
        Verbs verbs = Verbs.load();
        for (String symbol : List.of("ibv_get_device_list", "ibv_reg_mr", "ibv_dereg_mr", "ibv_alloc_pd",
                "ibv_fork_init")) {
            assertTrue(verbs.exports(symbol), symbol);
        }
        assertFalse(verbs.exports("ibv_no_such_function"));
        assertTrue(verbs.exports("ibv_reg_mr_iova2") && verbs.exports("ibv_reg_dmabuf_mr"),
                "Debian 12's rdma-core 44 exports both");
        verbs.bindOptional(); // the optional downcalls link against the real library
        assertTrue(verbs.forkState().isPresent(), "ibv_is_fork_initialized is exported by rdma-core 28+");
    }

    @Test
    void devicesAreListedOrTheirAbsenceExplained() {
        Verbs verbs = Verbs.load();
        List<DeviceInfo> devices;
        try {
            devices = verbs.queryDevices();
        } catch (NoRdmaDeviceException e) {
            // the machines this project runs on: ENOSYS from ibv_get_device_list, or no device listed
            assertTrue(e.errno() == 38 || e.errno() == 0 || e.errno() == 2, "errno " + e.errno());
            assertTrue(e.getMessage().contains("rdma link add rxe0 type rxe netdev"), e.getMessage());
            return;
        }
        assertFalse(devices.isEmpty());
        DeviceInfo first = devices.get(0);
        assertTrue(first.maxMrSize() > 0, first.toString());
        try (VerbsRegistrar registrar = verbs.openRegistrar(first.name());
                Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(64 * 1024, 4096);
            try (RegistrationCache cache = RegistrationCache.builder(registrar).build();
                    Lease lease = cache.acquire(buf.address(), buf.byteSize(), Access.LOCAL_WRITE | Access.REMOTE_READ)) {
                assertNotEquals(0, lease.lkey());
            }
        }
    }

    @Test
    void aMissingLibraryIsNamedWithThePackagesToInstall() {
        VerbsUnavailableException e = org.junit.jupiter.api.Assertions.assertThrows(VerbsUnavailableException.class,
                () -> Verbs.load("libibverbs-not-installed.so.1"));
        assertTrue(e.getMessage().contains("libibverbs-not-installed.so.1"), e.getMessage());
        assertTrue(e.getMessage().contains("libibverbs1") && e.getMessage().contains("ibverbs-providers"),
                e.getMessage());
    }

    @Test
    void accessFlagsMapToVerbsWithTheLocalWriteVerbsRequires() {
        assertEquals(0, VerbsRegistrar.toIbvAccess(Access.LOCAL_READ));
        assertEquals(1, VerbsRegistrar.toIbvAccess(Access.LOCAL_WRITE));
        assertEquals(1 | 2, VerbsRegistrar.toIbvAccess(Access.REMOTE_WRITE));
        assertEquals(4, VerbsRegistrar.toIbvAccess(Access.REMOTE_READ));
        assertEquals(1 | 8, VerbsRegistrar.toIbvAccess(Access.REMOTE_ATOMIC));
    }
}
