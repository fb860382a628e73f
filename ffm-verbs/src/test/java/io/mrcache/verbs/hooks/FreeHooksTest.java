package io.mrcache.verbs.hooks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.Access;
import io.mrcache.core.ForwardingRegistrar;
import io.mrcache.core.Lease;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationCache;
import io.mrcache.core.RegistrationException;
import io.mrcache.verbs.internal.Libc;
import io.mrcache.verbs.sim.SimulatedHca;
import io.mrcache.verbs.sim.SimulatedRegistrar;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

class FreeHooksTest {
    final SimulatedHca hca = new SimulatedHca();
    final SimulatedRegistrar registrar = SimulatedRegistrar.onNewDomain(hca);

    /** Records the order in which the cache deregistered and the arena freed. */
    static final class OrderedArena implements Arena {
        final Arena delegate = Arena.ofShared();
        final List<String> log;

        OrderedArena(List<String> log) {
            this.log = log;
        }

        @Override
        public MemorySegment allocate(long byteSize, long byteAlignment) {
            return delegate.allocate(byteSize, byteAlignment);
        }

        @Override
        public MemorySegment.Scope scope() {
            return delegate.scope();
        }

        @Override
        public void close() {
            log.add("free");
            delegate.close();
        }
    }

    @Test
    void arenaCloseCompletesTheInvalidationBeforeFreeingTheMemory() throws Exception {
        List<String> log = new CopyOnWriteArrayList<>();
        RegistrationCache cache = RegistrationCache.builder(new ForwardingRegistrar(registrar) {
            @Override
            public void deregister(Registration r) {
                log.add("deregister");
                super.deregister(r);
            }
        }).build();
        InvalidatingArena arena = new InvalidatingArena(new OrderedArena(log), cache);
        MemorySegment buf = arena.allocate(64 * 1024, 4096);
        Lease lease = cache.acquire(buf.address(), buf.byteSize(), Access.LOCAL_WRITE);
        CompletableFuture<Void> closing = CompletableFuture.runAsync(arena::close);
        assertThrows(TimeoutException.class, () -> closing.get(200, TimeUnit.MILLISECONDS));
        assertTrue(log.isEmpty(), "nothing freed while the lease is held: " + log);
        lease.close();
        closing.get(5, TimeUnit.SECONDS);
        assertEquals(List.of("deregister", "free"), log);
        assertEquals(0, cache.regionCount());
        assertEquals(0, hca.pinnedBytes());
        cache.close();
    }

    @Test
    void arenaCloseNeverFreesMemoryAKeyStillCovers() {
        List<String> log = new CopyOnWriteArrayList<>();
        java.util.concurrent.atomic.AtomicBoolean refuse = new java.util.concurrent.atomic.AtomicBoolean(true);
        RegistrationCache cache = RegistrationCache.builder(new ForwardingRegistrar(registrar) {
            @Override
            public void deregister(Registration r) {
                if (refuse.get()) { // ibv_dereg_mr fails with EBUSY while a memory window is bound
                    throw new RegistrationException("ibv_dereg_mr: EBUSY", 16);
                }
                super.deregister(r);
            }
        }).deregistrationRetry(io.mrcache.core.DeregistrationRetry.MANUAL).build();
        InvalidatingArena arena = new InvalidatingArena(new OrderedArena(log), cache);
        MemorySegment buf = arena.allocate(16 * 1024, 4096);
        int rkey;
        try (Lease lease = cache.acquire(buf.address(), buf.byteSize(), Access.LOCAL_WRITE | Access.REMOTE_WRITE)) {
            rkey = lease.rkey();
        }
        io.mrcache.core.DeregistrationException first = org.junit.jupiter.api.Assertions.assertThrows(
                io.mrcache.core.DeregistrationException.class, arena::close);
        assertTrue(first.getMessage().contains("NOT freed"), first.getMessage());
        assertTrue(log.isEmpty(), "nothing freed while the key is live: " + log);
        assertTrue(arena.scope().isAlive());
        buf.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 0, (byte) 1); // still valid memory
        assertEquals(1, cache.quarantined().size());
        assertTrue(hca.isAlive(rkey), "the rkey is still live on the HCA");

        org.junit.jupiter.api.Assertions.assertThrows(io.mrcache.core.DeregistrationException.class, arena::close);
        assertTrue(log.isEmpty(), "a second close neither frees nor pretends success: " + log);

        refuse.set(false);
        arena.close(); // retries the quarantined deregistration, then frees
        assertEquals(List.of("free"), log);
        assertEquals(0, hca.pinnedBytes());
        assertTrue(cache.quarantined().isEmpty());
        assertFalse(hca.isAlive(rkey), "the rkey died before the memory was freed");
        cache.close();
    }

    private static <T extends Throwable> void assertThrows(Class<T> type, org.junit.jupiter.api.function.Executable e) {
        org.junit.jupiter.api.Assertions.assertThrows(type, e);
    }

    @Test
    void theDefaultCacheBudgetIsThreeQuartersOfMemlock() {
        io.mrcache.verbs.registrar.DefaultRegistrar chosen = io.mrcache.verbs.registrar.DefaultRegistrar.deviceOrSimulated();
        MemlockLimit limit = MemlockLimit.read();
        try (RegistrationCache cache = chosen.cacheBuilder().build()) {
            long expected = limit.unlimited() ? Long.MAX_VALUE : Math.max(4096, (long) (limit.soft() * 0.75));
            assertEquals(expected, cache.budget().maxPinnedBytes(), limit.toString());
        }
    }

    @Test
    void memlockLimitIsRead() {
        MemlockLimit limit = MemlockLimit.read();
        assertTrue(limit.soft() > 0 && limit.hard() >= limit.soft(), limit.toString());
        long budget = limit.defaultBudget(0.5, 1L << 30).maxPinnedBytes();
        assertEquals(limit.unlimited() ? 1L << 30 : Math.max(4096, limit.soft() / 2), budget);
    }

    // ------------------------------------------------------------------ userfaultfd

    private UnmapMonitor startOrExplain(UnmapMonitor.Listener listener) {
        try {
            return UnmapMonitor.start(listener);
        } catch (UnmapMonitor.UnavailableException e) {
            // a real refusal must say what to do; then the test has nothing more to check here
            assertTrue(e.getMessage().contains("unprivileged_userfaultfd"), e.getMessage());
            System.err.println("userfaultfd unavailable, monitor tests only checked the message: " + e.getMessage());
            return null;
        }
    }

    @Test
    void unmapMadviseAndMremapOfCachedRangesInvalidateThem() throws Exception {
        java.util.concurrent.atomic.AtomicReference<RegistrationCache> target =
                new java.util.concurrent.atomic.AtomicReference<>();
        List<String> causes = new CopyOnWriteArrayList<>();
        UnmapMonitor monitor = startOrExplain((a, l, why) -> {
            causes.add(why);
            target.get().invalidate(a, l);
        });
        if (monitor == null) {
            return;
        }
        // an in-memory registrar: mlock (the simulated HCA's pinning) makes madvise(MADV_DONTNEED) fail with
        // EINVAL, whereas the kernel's RDMA pinning does not stop it
        io.mrcache.core.testing.RecordingRegistrar plain = new io.mrcache.core.testing.RecordingRegistrar();
        try (monitor;
                RegistrationCache cache = RegistrationCache.builder(new UnmapWatchingRegistrar(plain, monitor))
                        .build()) {
            target.set(cache);
            long len = 64 * 1024;
            long a = Libc.mmapAnonymous(len);
            cache.acquire(a, len, Access.LOCAL_WRITE).close();
            assertEquals(1, cache.regionCount());
            Libc.munmap(a, len);
            waitFor(() -> cache.regionCount() == 0, "munmap");

            long b = Libc.mmapAnonymous(len);
            cache.acquire(b, len, Access.LOCAL_WRITE).close();
            Libc.madvise(b, len, Libc.MADV_DONTNEED);
            waitFor(() -> cache.regionCount() == 0, "madvise(MADV_DONTNEED)");

            long c = Libc.mmapAnonymous(len);
            cache.acquire(c, len, Access.LOCAL_WRITE).close();
            long moved = Libc.mremap(c, len, 2 * len, Libc.MREMAP_MAYMOVE, 0);
            if (moved != c) {
                waitFor(() -> cache.regionCount() == 0, "mremap");
                assertTrue(causes.contains("mremap"), causes.toString());
            }
            Libc.munmap(b, len);
            Libc.munmap(moved, 2 * len);
            assertTrue(causes.contains("munmap") && causes.contains("madvise"), causes.toString());
        }
        plain.assertBalanced();
    }

    private static void waitFor(java.util.function.BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!condition.getAsBoolean()) {
            assertFalse(System.nanoTime() > deadline, what + " did not invalidate the cached range within 5 s");
            Thread.sleep(2);
        }
    }
}
