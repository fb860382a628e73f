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
        RecordingRegistrar registrar = new RecordingRegistrar();
        Path file = Files.createTempFile("mrcache", ".jfr");
        try (Recording recording = new Recording()) {
            recording.enable("io.mrcache.Registration").withoutThreshold();
            recording.enable("io.mrcache.Invalidation").withoutThreshold();
            recording.enable("io.mrcache.Eviction").withoutThreshold();
            recording.start();
            try (RegistrationCache cache = RegistrationCache.builder(registrar).budget(new Budget(Long.MAX_VALUE, 1))
                    .build()) {
                cache.acquire(0x10000, 4096, Access.LOCAL_READ).close();
                cache.acquire(0x20000, 4096, Access.LOCAL_READ).close(); // evicts one of the two
                cache.invalidateAndWait(0x10000, 0x20000);
                cache.invalidate(0x90000, 10); // the empty fast path records nothing
            }
            recording.stop();
            recording.dump(file);
        }
        List<RecordedEvent> events = RecordingFile.readAllEvents(file);
        Files.delete(file);
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
        Path file = Files.createTempFile("mrcache", ".jfr");
        try (Recording recording = new Recording()) {
            recording.enable("io.mrcache.Registration").withoutThreshold();
            recording.start();
            try (RegistrationCache cache = RegistrationCache.builder(registrar).build()) {
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
            recording.stop();
            recording.dump(file);
        }
        List<RecordedEvent> events = RecordingFile.readAllEvents(file);
        Files.delete(file);
        Map<String, Long> byOutcome = events.stream()
                .filter(e -> e.getEventType().getName().equals("io.mrcache.Registration"))
                .collect(Collectors.groupingBy(e -> e.getString("outcome"), Collectors.counting()));
        assertEquals(Map.of("failed", 1L, "discarded", 1L, "published", 1L), byOutcome);
    }
}
