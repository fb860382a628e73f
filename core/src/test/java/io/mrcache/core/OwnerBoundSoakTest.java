package io.mrcache.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.testing.RecordingRegistrar;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Owner-bound acquisition on two threads while arenas close and the GC collects others, and the reaper retires
 * their regions concurrently: every lease's registration was made for the lease's own arena (the registrar records,
 * at each register call, the arena the calling thread was acquiring for). The broken variant that skips the owner
 * check is caught by the same check. Arenas are reused fast: each thread closes its confined arenas and allocates
 * new ones of the same sizes, so the allocator hands their addresses out again; shared arenas are used by both.
 */
class OwnerBoundSoakTest {
    static final long MILLIS = Long.getLong("mrcache.soak.millis", 1500);

    @Test
    void everyLeaseIsARegistrationMadeForItsOwnArena() throws Exception {
        Result r = soak(RegistrationCache::builder, 11);
        System.out.println("owner-bound soak: " + r);
        assertEquals(0, r.wrongOwner.get(), "leases served a registration made for another arena: " + r);
        assertTrue(r.acquires.get() > 10_000, "too little work to judge: " + r);
        assertTrue(r.reused.get() > 0, "no address came back: the run proves nothing: " + r);
        assertTrue(r.ownersGone > 0, "no owner's region was retired by the reaper or a miss: " + r);
    }

    @Test
    void theBrokenVariantThatSkipsTheOwnerCheckIsCaught() throws Exception {
        Result r = soak(reg -> RegistrationCache.builder(reg).withDeliberateBug(CacheFault.IGNORE_OWNER), 11);
        System.out.println("owner-bound soak, IGNORE_OWNER: " + r);
        assertTrue(r.wrongOwner.get() > 0, "the owner check's removal went unseen: " + r);
    }

    record Result(AtomicLong acquires, AtomicLong wrongOwner, AtomicLong reused, long ownersGone) {
    }

    interface Builders {
        RegistrationCache.Builder of(Registrar registrar);
    }

    static Result soak(Builders builders, long seed) throws Exception {
        RecordingRegistrar recording = new RecordingRegistrar(1, false);
        ThreadLocal<Object> acquiringFor = new ThreadLocal<>();
        // registration handle -> the scope it was made for, weakly: the map must not keep auto arenas from the GC
        Map<Long, WeakReference<Object>> madeFor = new ConcurrentHashMap<>();
        Registrar registrar = new ForwardingRegistrar(recording) {
            @Override
            public Registration register(long address, long length, int access) {
                Registration r = super.register(address, length, access);
                madeFor.put(r.handle(), new WeakReference<>(acquiringFor.get()));
                return r;
            }
        };
        AtomicLong acquires = new AtomicLong();
        AtomicLong wrong = new AtomicLong();
        AtomicLong reused = new AtomicLong();
        long ownersGone;
        try (RegistrationCache cache = builders.of(registrar).build();
             Arena sharedA = Arena.ofShared();
             Arena sharedB = Arena.ofShared()) {
            List<MemorySegment> shared = List.of(sharedA.allocate(8192, 4096), sharedB.allocate(16384, 4096));
            long deadline = System.nanoTime() + MILLIS * 1_000_000;
            List<Thread> threads = new ArrayList<>();
            List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
            for (int t = 0; t < 2; t++) {
                long threadSeed = seed + t;
                threads.add(Thread.ofPlatform().start(() -> {
                    try {
                        SplittableRandom rnd = new SplittableRandom(threadSeed);
                        java.util.Set<Long> seen = new java.util.HashSet<>();
                        while (System.nanoTime() < deadline) {
                            int kind = rnd.nextInt(4);
                            if (kind == 0) { // both threads use the shared arenas' segments
                                use(cache, shared.get(rnd.nextInt(2)), acquiringFor, madeFor, acquires, wrong);
                            } else if (kind == 1) { // an auto arena, dropped for the GC
                                use(cache, Arena.ofAuto().allocate(4096L * (1 + rnd.nextInt(4)), 4096), acquiringFor,
                                        madeFor, acquires, wrong);
                            } else { // a confined arena: used a few times, then closed; its addresses come back
                                try (Arena a = Arena.ofConfined()) {
                                    MemorySegment s = a.allocate(4096L * (1 + rnd.nextInt(4)), 4096);
                                    if (!seen.add(s.address())) {
                                        reused.incrementAndGet();
                                    }
                                    for (int i = 0, n = 1 + rnd.nextInt(3); i < n; i++) {
                                        use(cache, s.asSlice(0, 1 + rnd.nextInt((int) s.byteSize())), acquiringFor,
                                                madeFor, acquires, wrong);
                                    }
                                }
                            }
                            if (rnd.nextInt(2000) == 0) {
                                System.gc();
                            }
                        }
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                }));
            }
            for (Thread t : threads) {
                t.join();
            }
            assertTrue(failures.isEmpty(), () -> "a soak thread failed: " + failures);
            ownersGone = cache.metrics().get(CacheCounter.OWNERS_GONE);
        }
        recording.assertBalanced();
        return new Result(acquires, wrong, reused, ownersGone);
    }

    private static void use(RegistrationCache cache, MemorySegment s, ThreadLocal<Object> acquiringFor,
            Map<Long, WeakReference<Object>> madeFor, AtomicLong acquires, AtomicLong wrong) {
        acquiringFor.set(s.scope());
        try (Lease l = cache.acquire(s, Access.LOCAL_WRITE)) {
            acquires.incrementAndGet();
            WeakReference<Object> made = madeFor.get(l.registration().handle());
            if (made == null || made.get() != s.scope()) { // a cleared reference: made for a collected arena
                wrong.incrementAndGet();
            }
        } finally {
            acquiringFor.remove();
        }
    }
}
