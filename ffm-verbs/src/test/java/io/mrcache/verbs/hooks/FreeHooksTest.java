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
    static class OrderedArena implements Arena {
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

    /** A shared arena's close waits for a lease; another thread allocating then must not get memory it frees. */
    @Test
    void anAllocationOnceCloseBeganIsRefusedAndNothingRegisteredIsFreed() throws Exception {
        List<String> log = new CopyOnWriteArrayList<>();
        RegistrationCache cache = RegistrationCache.builder(registrar).build();
        InvalidatingArena arena = new InvalidatingArena(new OrderedArena(log), cache);
        MemorySegment held = arena.allocate(4096, 4096);
        Lease lease = cache.acquire(held.address(), held.byteSize(), Access.LOCAL_WRITE);
        CompletableFuture<Void> closing = CompletableFuture.runAsync(arena::close);
        assertThrows(TimeoutException.class, () -> closing.get(200, TimeUnit.MILLISECONDS));
        MemorySegment late = null;
        IllegalStateException refused = null;
        try {
            late = arena.allocate(8192, 4096);
            cache.acquire(late.address(), late.byteSize(), Access.LOCAL_WRITE).close(); // registered, then idle
        } catch (IllegalStateException e) {
            refused = e;
        }
        lease.close();
        closing.get(5, TimeUnit.SECONDS);
        assertEquals(List.of("free"), log);
        assertEquals(0, hca.pinnedBytes(), "no registration outlives the memory the close freed");
        assertTrue(refused != null && late == null, "the allocation during close was refused");
        assertTrue(refused.getMessage().contains("closing") && refused.getMessage().contains("8192"), refused.getMessage());
        cache.close();
    }

    /** An allocation under way when close begins is waited for and freed with the rest; later ones are refused. */
    @Test
    void aCloseWaitsForAnAllocationUnderWayAndRefusesLaterOnes() throws Exception {
        List<String> log = new CopyOnWriteArrayList<>();
        java.util.concurrent.CountDownLatch inAllocate = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch finish = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.atomic.AtomicBoolean first = new java.util.concurrent.atomic.AtomicBoolean(true);
        OrderedArena slow = new OrderedArena(log) {
            @Override
            public MemorySegment allocate(long byteSize, long byteAlignment) {
                if (!first.getAndSet(false)) {
                    return super.allocate(byteSize, byteAlignment);
                }
                inAllocate.countDown();
                try {
                    finish.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return super.allocate(byteSize, byteAlignment);
            }
        };
        RegistrationCache cache = RegistrationCache.builder(registrar).build();
        InvalidatingArena arena = new InvalidatingArena(slow, cache);
        java.util.concurrent.Executor ownThread = r -> new Thread(r).start(); // not the common pool: one worker here
        CompletableFuture<MemorySegment> allocating = CompletableFuture.supplyAsync(() -> arena.allocate(4096, 4096),
                ownThread);
        inAllocate.await(10, TimeUnit.SECONDS);
        CompletableFuture<Void> closing = CompletableFuture.runAsync(arena::close, ownThread);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!isRefused(arena)) { // the close has begun once allocations are refused
            assertTrue(System.nanoTime() < deadline, "the close never began refusing allocations");
            Thread.sleep(1);
        }
        assertFalse(closing.isDone(), "the close waits for the allocation under way");
        finish.countDown();
        MemorySegment s = allocating.get(5, TimeUnit.SECONDS);
        closing.get(5, TimeUnit.SECONDS);
        assertFalse(s.scope().isAlive(), "the segment allocated while the close began was freed by it");
        assertEquals(List.of("free"), log);
        cache.close();
    }

    private static boolean isRefused(InvalidatingArena arena) {
        try {
            arena.allocate(0, 1);
            return false;
        } catch (IllegalStateException e) {
            return true;
        }
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
    void defaultCachesShareOneLimitOfThreeQuartersOfMemlock() {
        io.mrcache.verbs.registrar.DefaultRegistrar chosen = io.mrcache.verbs.registrar.DefaultRegistrar.deviceOrSimulated();
        io.mrcache.verbs.registrar.DefaultRegistrar other = io.mrcache.verbs.registrar.DefaultRegistrar.simulated();
        MemlockLimit limit = MemlockLimit.read();
        try (RegistrationCache a = chosen.cacheBuilder().build(); RegistrationCache b = other.cacheBuilder().build()) {
            if (limit.unlimited()) {
                assertEquals(null, io.mrcache.verbs.registrar.DefaultRegistrar.processLimit());
                assertEquals(null, a.metrics().tenant());
                return;
            }
            long expected = Math.max(4096, (long) (limit.soft() * 0.75));
            io.mrcache.core.PinnedMemoryLimit shared = io.mrcache.verbs.registrar.DefaultRegistrar.processLimit();
            assertEquals(expected, shared.limitBytes(), limit.toString());
            assertEquals(expected, a.budget().maxPinnedBytes(), "a cache's own bound is the limit, not a share of its own");
            var ta = a.metrics().tenant();
            var tb = b.metrics().tenant();
            assertTrue(ta != null && tb != null && !ta.name().equals(tb.name()), ta + " / " + tb);
            assertEquals(0, ta.guaranteeBytes());
            assertTrue(shared.tenants().stream().map(io.mrcache.core.TenantMetrics::name).toList()
                    .containsAll(List.of(ta.name(), tb.name())), shared.tenants().toString());
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
