package io.mrcache.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.testing.RecordingRegistrar;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;

class FlightRecorderEventsTest {

    @Test
    void registrationInvalidationAndEvictionAreRecorded() throws Exception {
        List<RecordedEvent> events = record(() -> {
            try (RegistrationCache cache = RegistrationCache.builder(new RecordingRegistrar())
                    .budget(new Budget(Long.MAX_VALUE, 1)).build()) {
                cache.acquire(0x10000, 4096, Access.LOCAL_READ).close();
                cache.acquire(0x20000, 4096, Access.LOCAL_READ).close(); // evicts one of the two
                cache.invalidateAndWait(0x10000, 0x20000);
                cache.invalidate(0x90000, 10); // the empty fast path records nothing
            }
        });
        long registrations = events.stream().filter(e -> e.getEventType().getName().equals("io.mrcache.Registration"))
                .peek(e -> assertEquals("published", e.getString("outcome"))).count();
        long invalidations = events.stream().filter(e -> e.getEventType().getName().equals("io.mrcache.Invalidation"))
                .count();
        long evictions = events.stream().filter(e -> e.getEventType().getName().equals("io.mrcache.Eviction"))
                .count();
        assertEquals(2, registrations);
        assertEquals(1, invalidations);
        assertEquals(1, evictions);
        assertTrue(events.stream().anyMatch(e -> e.getEventType().getName().equals("io.mrcache.Registration")
                && e.getLong("address") == 0x10000 && e.getLong("length") == 4096));
    }

    @Test
    void registrationsThatFailOrAreDiscardedAreRecordedWithTheirOutcome() throws Exception {
        RecordingRegistrar registrar = new RecordingRegistrar();
        Registrar short1 = new ForwardingRegistrar(registrar) { // a result that does not cover 0x60000's request
            @Override
            public Registration register(long address, long length, int access) {
                Registration r = super.register(address, length, access);
                return address != 0x60000 ? r : new Registration(r.address(), 8, r.access(), r.lkey(), r.rkey(),
                        r.protectionDomain(), r.handle());
            }
        };
        List<RecordedEvent> events = record(() -> {
            try (RegistrationCache cache = RegistrationCache.builder(short1).build()) {
                assertThrows(IllegalStateException.class, () -> cache.acquire(0x60000, 4096, Access.LOCAL_READ));
                registrar.failures((a, l, x) -> a == 0x40000 ? RegistrationException.EFAULT : 0);
                assertThrows(RegistrationException.class, () -> cache.acquire(0x40000, 4096, Access.LOCAL_READ));
                AtomicBoolean once = new AtomicBoolean();
                registrar.duringRegister(() -> { // a free of the range racing its registration (H4)
                    if (once.compareAndSet(false, true)) {
                        cache.invalidate(0x50000, 4096);
                    }
                });
                cache.acquire(0x50000, 4096, Access.LOCAL_READ).close(); // discarded, then registered again
            }
        });
        Map<String, Long> byOutcome = events.stream()
                .filter(e -> e.getEventType().getName().equals("io.mrcache.Registration"))
                .collect(Collectors.groupingBy(e -> e.getString("outcome"), Collectors.counting()));
        assertEquals(Map.of("failed", 2L, "discarded", 1L, "published", 1L), byOutcome);
    }

    @Test
    void aCrossTenantEvictionIsRecordedWithBothTenants() throws Exception {
        PinnedMemoryLimit limit = new PinnedMemoryLimit(2 * 4096);
        List<RecordedEvent> events = record(() -> {
            try (RegistrationCache a = RegistrationCache.builder(new RecordingRegistrar(1, true))
                    .tenant(limit, TenantShare.bestEffort("alpha")).build();
                    RegistrationCache b = RegistrationCache.builder(new RecordingRegistrar(2, true))
                            .tenant(limit, TenantShare.bestEffort("beta")).build()) {
                a.acquire(0x10000, 2 * 4096, Access.LOCAL_READ).close();
                b.acquire(0x20000, 4096, Access.LOCAL_READ).close(); // alpha's region makes room
                b.acquire(0x30000, 4096, Access.LOCAL_READ).close(); // within the limit: nothing crosses
            }
        });
        List<RecordedEvent> crossings = events.stream()
                .filter(e -> e.getEventType().getName().equals("io.mrcache.CrossTenantEviction")).toList();
        assertEquals(1, crossings.size());
        RecordedEvent e = crossings.get(0);
        assertEquals("beta", e.getString("requester"));
        assertEquals("alpha", e.getString("victim"));
        assertEquals(1, e.getInt("regions"));
        assertEquals(2 * 4096, e.getLong("bytes"));
        assertEquals(0, e.getLong("victimPinnedAfter"));
        List<RecordedEvent> evictions = events.stream()
                .filter(x -> x.getEventType().getName().equals("io.mrcache.Eviction")).toList();
        assertEquals(1, evictions.size(), "the victim's own eviction event, in alpha's cache");
        assertEquals("shared limit", evictions.get(0).getString("reason"));
        assertEquals(0x10000, evictions.get(0).getLong("address"));
        assertEquals(2 * 4096, evictions.get(0).getLong("length"));
    }

    /** The cache's events while {@code work} runs, every one recorded (no threshold). */
    private static List<RecordedEvent> record(Runnable work) throws Exception {
        Path file = Files.createTempFile("mrcache", ".jfr");
        try (Recording recording = new Recording()) {
            for (String event : List.of("io.mrcache.Registration", "io.mrcache.Invalidation", "io.mrcache.Eviction",
                    "io.mrcache.CrossTenantEviction")) {
                recording.enable(event).withoutThreshold();
            }
            recording.start();
            work.run();
            recording.stop();
            recording.dump(file);
        }
        try {
            return RecordingFile.readAllEvents(file);
        } finally {
            Files.delete(file);
        }
    }
}
