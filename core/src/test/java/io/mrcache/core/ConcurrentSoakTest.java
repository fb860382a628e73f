package io.mrcache.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.testing.RecordingRegistrar;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;

/**
 * Several threads acquire, release and invalidate overlapping ranges at once for a bounded time; every
 * acquire is checked for a stale hit (I1), every deregistration for a held lease (I2), every completed
 * invalidation for a surviving registration (I3), and the run ends in a ledger check (I4).
 *
 * <p>How a stale hit is seen without a lock: per page, {@code began[p]} counts invalidations that began and
 * {@code returned[p]} those that returned. A registration records {@code began} when its register call
 * starts; an acquire records {@code returned} when it starts. If the acquire's count exceeds the
 * registration's, some invalidation began after the registration started and returned before the acquire
 * started: exactly what I1 forbids.
 */
class ConcurrentSoakTest {
    static final long PAGE = 4096;
    static final long BASE = 0x80_0000;
    static final int PAGES = 32;

    @Test
    void soakKeepsInvariantsAndBalancesTheLedger() throws Exception {
        long millis = Long.getLong("mrcache.soak.millis", 1500);
        for (MergePolicy merge : MergePolicy.values()) {
            Soak soak = new Soak(merge);
            soak.run(3, millis, false);
            assertTrue(soak.violations.isEmpty(), () -> merge + ": " + soak.violations.subList(0,
                    Math.min(5, soak.violations.size())));
            assertTrue(soak.acquires.sum() > 1000, "the soak did work: " + soak.acquires.sum());
            assertTrue(soak.cache.metrics().get(CacheCounter.HITS) > 0);
            assertTrue(soak.cache.metrics().get(CacheCounter.INVALIDATIONS) > 0);
            soak.registrar.assertBalanced();
            assertEquals(0, soak.cache.pinnedBytes());
            assertEquals(0, soak.cache.retiringCount(), "every retired region left the retiring index");
            MetricsSnapshot m = soak.cache.metrics();
            long acquires = soak.acquires.sum();
            assertTrue(m.get(CacheCounter.HITS) <= acquires, "hits " + m.get(CacheCounter.HITS) + " > acquires");
            assertTrue(acquires <= m.get(CacheCounter.HITS) + m.get(CacheCounter.REGISTRATIONS)
                    + m.get(CacheCounter.SINGLE_FLIGHT_JOINS), "an acquire was neither a hit, a registration nor a"
                    + " join: hits were lost");
            System.out.printf("soak %s: %,d acquires, %s%n", merge, soak.acquires.sum(),
                    soak.cache.metrics().counters());
        }
    }

    /** The soak can fail: publishing doomed in-flight registrations (H4) shows up as stale hits. */
    @Test
    void soakCatchesPublicationOfDoomedRegistrations() throws Exception {
        Soak soak = new Soak(MergePolicy.OVERLAPPING, CacheFault.PUBLISH_DOOMED);
        soak.run(3, 5000, true);
        // the published doomed registration is both a stale hit (I1) and a survivor of a completed
        // invalidation (I3); whichever a run meets first stops it
        assertTrue(soak.violations.stream().anyMatch(v -> v.startsWith("I1") || v.startsWith("I3")),
                "the broken cache was not caught: " + soak.violations);
        System.out.println("broken variant PUBLISH_DOOMED caught: " + soak.violations.get(0));
    }

    private static final class Soak {
        final RecordingRegistrar registrar = new RecordingRegistrar(7, false);
        final AtomicLongArray began = new AtomicLongArray(PAGES + 8);
        final AtomicLongArray returned = new AtomicLongArray(PAGES + 8);
        final Map<Long, long[]> startedAt = new ConcurrentHashMap<>();
        final Map<Long, AtomicInteger> leases = new ConcurrentHashMap<>();
        final List<String> violations = new CopyOnWriteArrayList<>();
        final LongAdder acquires = new LongAdder();
        final RegistrationCache cache;
        volatile boolean stop;

        Soak(MergePolicy merge, CacheFault... faults) {
            Registrar observed = new ForwardingRegistrar(registrar) {
                @Override
                public Registration register(long address, long length, int access) {
                    long[] snapshot = new long[PAGES + 8];
                    for (int p = 0; p < snapshot.length; p++) {
                        snapshot[p] = began.get(p);
                    }
                    for (int i = 0; i < 200; i++) { // widen the in-flight window (H4)
                        Thread.onSpinWait();
                    }
                    Registration r = super.register(address, length, access);
                    startedAt.put(r.handle(), snapshot);
                    return r;
                }

                @Override
                public void deregister(Registration r) {
                    AtomicInteger n = leases.get(r.handle());
                    if (n != null && n.get() > 0) {
                        violations.add("I2: deregister of " + r + " with " + n.get() + " leases held");
                    }
                    super.deregister(r);
                }
            };
            cache = RegistrationCache.builder(observed).mergePolicy(merge).budget(new Budget(24 * PAGE, 6))
                    .faults(faults).build();
        }

        void run(int threads, long millis, boolean stopAtFirstViolation) throws InterruptedException {
            Thread[] workers = new Thread[threads];
            for (int t = 0; t < threads; t++) {
                long seed = 0x50A4L * (t + 1);
                workers[t] = new Thread(() -> work(new SplittableRandom(seed), stopAtFirstViolation), "soak-" + t);
                workers[t].start();
            }
            long deadline = System.nanoTime() + millis * 1_000_000;
            while (System.nanoTime() < deadline && !(stopAtFirstViolation && !violations.isEmpty())) {
                Thread.sleep(10);
            }
            stop = true;
            for (Thread w : workers) {
                w.join(10_000);
            }
            cache.close();
        }

        private void work(SplittableRandom rnd, boolean stopAtFirstViolation) {
            int[] accesses = CacheModelChecker.ACCESSES;
            while (!stop && !(stopAtFirstViolation && !violations.isEmpty())) {
                int page = rnd.nextInt(PAGES);
                int pages = 1 + rnd.nextInt(4);
                if (rnd.nextInt(100) < 75) {
                    long[] returnedAtStart = new long[PAGES + 8];
                    for (int p = 0; p < returnedAtStart.length; p++) {
                        returnedAtStart[p] = returned.get(p);
                    }
                    long address = BASE + page * PAGE + rnd.nextInt(64);
                    long length = pages * PAGE - rnd.nextInt(128);
                    Lease lease = cache.acquire(address, length, accesses[rnd.nextInt(accesses.length)]);
                    acquires.increment();
                    Registration reg = lease.registration();
                    leases.computeIfAbsent(reg.handle(), h -> new AtomicInteger()).incrementAndGet();
                    long[] regStart = startedAt.get(reg.handle());
                    for (int p = pageOf(reg.address()); p < pageOf(reg.end() - 1) + 1; p++) {
                        if (returnedAtStart[p] > regStart[p]) {
                            violations.add("I1: stale hit on " + reg + ": page " + p + " saw " + returnedAtStart[p]
                                    + " invalidations returned before the acquire but " + regStart[p]
                                    + " begun before the registration");
                            break;
                        }
                    }
                    if (!registrar.isLive(reg)) {
                        violations.add("I2: lease on deregistered " + reg);
                    }
                    for (int i = rnd.nextInt(50); i > 0; i--) {
                        Thread.onSpinWait(); // "work requests"
                    }
                    leases.get(reg.handle()).decrementAndGet();
                    lease.close();
                } else {
                    long from = BASE + page * PAGE;
                    int[] mine = new int[PAGES + 8];
                    for (int p = page; p < page + pages; p++) {
                        mine[p] = (int) began.incrementAndGet(p);
                    }
                    cache.invalidateAndWait(from, pages * PAGE);
                    for (Registration r : registrar.live()) { // I3: nothing registered before us survives
                        long[] regStart = startedAt.get(r.handle());
                        if (regStart == null) {
                            continue; // registered just now, not yet recorded: started after us
                        }
                        for (int p = Math.max(page, pageOf(r.address())); p < Math.min(page + pages,
                                pageOf(r.end() - 1) + 1); p++) {
                            if (regStart[p] < mine[p]) {
                                violations.add("I3: " + r + " survived a completed invalidation of page " + p);
                            }
                        }
                    }
                    for (int p = page; p < page + pages; p++) {
                        returned.incrementAndGet(p);
                    }
                }
            }
        }

        private static int pageOf(long address) {
            return (int) ((address - BASE) / PAGE);
        }
    }
}
