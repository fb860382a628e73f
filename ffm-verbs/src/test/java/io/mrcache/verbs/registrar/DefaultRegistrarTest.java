package io.mrcache.verbs.registrar;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.Access;
import io.mrcache.core.Lease;
import io.mrcache.core.RegistrationCache;
import io.mrcache.verbs.ibv.NoRdmaDeviceException;
import io.mrcache.verbs.ibv.Verbs;
import io.mrcache.verbs.ibv.VerbsUnavailableException;
import io.mrcache.verbs.sim.SimulatedRegistrar;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

/** The registrar is chosen explicitly: no silent fallback to keys no NIC accepts. */
class DefaultRegistrarTest {

    static boolean hasDevice() {
        try {
            return !Verbs.load().deviceNames().isEmpty();
        } catch (VerbsUnavailableException | NoRdmaDeviceException e) {
            return false;
        }
    }

    @Test
    void theDeviceRegistrarFailsClearlyWhereThereIsNoDevice() {
        if (hasDevice()) { // with a device (soft-RoCE or a NIC) it is that device
            DefaultRegistrar d = DefaultRegistrar.device();
            assertTrue(d.why().startsWith("RDMA device "), d.why());
            d.registrar().close();
            return;
        }
        RuntimeException e = assertThrows(RuntimeException.class, DefaultRegistrar::device);
        assertTrue(e instanceof NoRdmaDeviceException || e instanceof VerbsUnavailableException, e.toString());
        assertTrue(e.getMessage().contains("ENOSYS") || e.getMessage().contains("libibverbs"), e.getMessage());
    }

    @Test
    void theSimulatedHcaIsUsedOnlyWhenAskedForAndSaysSoOnceLoudly() {
        List<LogRecord> records = new CopyOnWriteArrayList<>();
        Logger jul = Logger.getLogger(DefaultRegistrar.class.getName());
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord r) {
                records.add(r);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        jul.addHandler(capture);
        try {
            DefaultRegistrar.forgetAnnouncement();
            DefaultRegistrar a = DefaultRegistrar.simulated();
            DefaultRegistrar b = DefaultRegistrar.simulated();
            assertTrue(a.registrar() instanceof SimulatedRegistrar && b.registrar() instanceof SimulatedRegistrar);
            assertTrue(a.why().contains("keys valid on no NIC"), a.why());
            long warnings = records.stream().filter(r -> r.getMessage().contains("not valid on any NIC")).count();
            assertEquals(1, warnings, "said once, not at every call, and not never: " + records);
        } finally {
            jul.removeHandler(capture);
        }
    }

    @Test
    void theSystemPropertyChoosesAndABadValueIsNamed() {
        String before = System.getProperty(DefaultRegistrar.PROPERTY);
        try {
            System.setProperty(DefaultRegistrar.PROPERTY, "simulated");
            assertTrue(DefaultRegistrar.fromSystemProperty().registrar() instanceof SimulatedRegistrar);
            System.setProperty(DefaultRegistrar.PROPERTY, "nic");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    DefaultRegistrar::fromSystemProperty);
            assertTrue(e.getMessage().contains("-Dmrcache.registrar=nic"), e.getMessage());
        } finally {
            if (before == null) {
                System.clearProperty(DefaultRegistrar.PROPERTY);
            } else {
                System.setProperty(DefaultRegistrar.PROPERTY, before);
            }
        }
    }

    @Test
    void toolsFallBackSayingWhyAndTheCacheOwnsTheRegistrar() {
        DefaultRegistrar chosen = DefaultRegistrar.deviceOrSimulated();
        if (!hasDevice()) {
            assertTrue(chosen.why().contains("because:"), chosen.why());
        }
        try (RegistrationCache cache = chosen.cacheBuilder().build(); Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(8192, 4096);
            try (Lease l = cache.acquire(buf.address(), buf.byteSize(), Access.LOCAL_WRITE)) {
                assertEquals(buf.address(), l.registration().address());
            }
        }
    }
}
