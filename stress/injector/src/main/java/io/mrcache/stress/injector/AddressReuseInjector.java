package io.mrcache.stress.injector;

import io.mrcache.core.Access;
import io.mrcache.core.Registrar;
import io.mrcache.core.RegistrationException;
import io.mrcache.stress.injector.ReusingAllocator.Allocation;
import io.mrcache.verbs.sim.SimulatedHca;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.SplittableRandom;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

/**
 * The address-reuse fault injector: worker threads allocate buffers from a {@link ReusingAllocator} (which
 * reuses freed virtual ranges with new pages behind them), acquire their registrations from the cache under
 * test, have the NIC write a pattern into them (locally, or remotely from a peer thread holding the rkey),
 * read the buffer back, release, and free through the cache's free hook. Ground truth counts every NIC write
 * that landed in pages no longer backing its key's allocation; the read-back counts corrupted buffers.
 *
 * <p>A run is seeded; with one thread it is deterministic (remote writes then run inline and delayed hooks
 * are delayed by a count of operations), so the seed replays the same counts.
 */
public final class AddressReuseInjector {
    /** Builds the cache under test over the injector's registrar. */
    @FunctionalInterface
    public interface CacheFactory {
        CacheUnderTest create(Registrar registrar, InjectorConfig config);
    }

    private static final int PATTERN_BYTES = 64;
    private static final int HOOK_DELAY_OPS = 3;

    private AddressReuseInjector() {
    }

    /** A remote write for the peer thread; {@code done} is null for fire-and-forget stale writes. */
    private record RemoteWrite(int rkey, long address, MemorySegment data, CompletableFuture<Boolean> done) {
    }

    public static InjectorReport run(InjectorConfig config, CacheFactory factory, Consumer<String> progress) {
        SimulatedHca hca = new SimulatedHca().warnings(w -> progress.accept(w));
        ReusingAllocator allocator = new ReusingAllocator(config.has(Fault.IMMEDIATE_REUSE));
        ThreadLocal<SplittableRandom> faultRandom = ThreadLocal.withInitial(() -> new SplittableRandom(config.seed()));
        InjectorNic nic = new InjectorNic(hca, allocator, config.has(Fault.SLOW_REGISTRATION),
                config.has(Fault.FAILING_REGISTRATION), faultRandom);
        CacheUnderTest cache = factory.create(nic, config);
        LongAdder done = new LongAdder();
        LongAdder corrupted = new LongAdder();
        LongAdder caught = new LongAdder();
        LongAdder registrationErrors = new LongAdder();
        AtomicLong firstError = new AtomicLong();
        Throwable[] failure = new Throwable[1];

        BlockingQueue<RemoteWrite> peerQueue = new ArrayBlockingQueue<>(1024);
        // the workers' patterns live as long as the run: the peer may still hold a write of a finished worker
        Arena buffers = Arena.ofShared();
        Thread peer = null;
        if (config.threads() > 1) {
            peer = Thread.ofPlatform().daemon().name("injector-peer").start(() -> {
                try {
                    for (;;) {
                        RemoteWrite w = peerQueue.take();
                        if (w.rkey() == 0 && w.address() == 0) {
                            return;
                        }
                        try {
                            boolean landed = nic.remoteWrite(w.rkey(), w.address(), w.data());
                            if (w.done() != null) {
                                w.done().complete(landed);
                            }
                        } catch (RuntimeException e) {
                            if (w.done() != null) {
                                w.done().completeExceptionally(e);
                            }
                            synchronized (failure) {
                                if (failure[0] == null) {
                                    failure[0] = e;
                                }
                            }
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
        }
        long started = System.nanoTime();
        Thread[] workers = new Thread[config.threads()];
        for (int t = 0; t < workers.length; t++) {
            long quota = config.operations() / workers.length + (t < config.operations() % workers.length ? 1 : 0);
            long seed = config.seed() * 1_000_003L + t;
            boolean inlineRemote = config.threads() == 1;
            workers[t] = Thread.ofPlatform().name("injector-" + t).start(() -> {
                faultRandom.set(new SplittableRandom(seed ^ 0x5DEECE66DL));
                try {
                    new Worker(config, new SplittableRandom(seed), allocator, nic, cache, buffers, inlineRemote,
                            peerQueue, done, corrupted, caught, registrationErrors).run(quota);
                } catch (Throwable e) {
                    synchronized (failure) {
                        if (failure[0] == null) {
                            failure[0] = e;
                        }
                    }
                }
            });
        }
        long lastReport = System.nanoTime();
        for (Thread w : workers) {
            while (w.isAlive()) {
                try {
                    w.join(200);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted", e);
                }
                if (System.nanoTime() - lastReport > 1_000_000_000L) {
                    lastReport = System.nanoTime();
                    double secs = (lastReport - started) / 1e9;
                    progress.accept(String.format("[%s] %,d / %,d operations, %,.0f ops/s, stale writes %,d",
                            cache.name(), done.sum(), config.operations(), done.sum() / secs, nic.staleWrites.sum()));
                }
            }
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        if (peer != null) {
            peerQueue.add(new RemoteWrite(0, 0, null, null));
            try {
                peer.join(5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (failure[0] != null) {
            throw new IllegalStateException("injector worker failed (seed " + config.seed() + "): " + failure[0],
                    failure[0]);
        }
        cache.close();
        long leaked = hca.liveRegistrations();
        allocator.close();
        buffers.close();
        return new InjectorReport(cache.name(), done.sum(), nic.staleWrites.sum(), nic.writesAfterFree.sum(),
                corrupted.sum(),
                nic.rejectedRemote.sum(), leaked, caught.sum(), registrationErrors.sum(), nic.registrations.sum(),
                seconds);
    }

    /** One worker thread's loop. */
    private static final class Worker {
        private final InjectorConfig config;
        private final SplittableRandom rnd;
        private final ReusingAllocator allocator;
        private final InjectorNic nic;
        private final CacheUnderTest cache;
        private final boolean inlineRemote;
        private final BlockingQueue<RemoteWrite> peerQueue;
        private final LongAdder done;
        private final LongAdder corrupted;
        private final LongAdder caught;
        private final LongAdder registrationErrors;
        private final MemorySegment pattern;
        private final MemorySegment garbage;
        /** Frees whose hooks are held back (delayed-hooks), with the op number they were made at. */
        private final ArrayDeque<Object[]> delayed = new ArrayDeque<>();
        /** rkeys of freed buffers a peer still holds (stale-remote-keys): {rkey, address}. */
        private final ArrayDeque<long[]> oldKeys = new ArrayDeque<>();
        private long op;
        private long useCount;

        Worker(InjectorConfig config, SplittableRandom rnd, ReusingAllocator allocator, InjectorNic nic,
                CacheUnderTest cache, Arena arena, boolean inlineRemote, BlockingQueue<RemoteWrite> peerQueue,
                LongAdder done, LongAdder corrupted, LongAdder caught, LongAdder registrationErrors) {
            this.config = config;
            this.rnd = rnd;
            this.allocator = allocator;
            this.nic = nic;
            this.cache = cache;
            this.inlineRemote = inlineRemote;
            this.peerQueue = peerQueue;
            this.done = done;
            this.corrupted = corrupted;
            this.caught = caught;
            this.registrationErrors = registrationErrors;
            this.pattern = arena.allocate(PATTERN_BYTES, 8);
            this.garbage = arena.allocate(PATTERN_BYTES, 8).fill((byte) 0xBD);
        }

        void run(long quota) throws InterruptedException {
            for (long completed = 0; completed < quota;) {
                deliverDelayedHooks(false);
                Allocation a = allocator.allocate(rnd.nextInt(ReusingAllocator.SIZES.length));
                if (a == null) { // every slot of the class busy or quarantined: let hooks through, retry
                    deliverDelayedHooks(true);
                    Thread.yield();
                    continue;
                }
                op++;
                lifecycle(a);
                completed++;
                done.increment();
            }
            deliverDelayedHooks(true);
        }

        /** A buffer's life: one to eight uses, then the free. */
        private void lifecycle(Allocation a) throws InterruptedException {
            int uses = 1 + rnd.nextInt(8);
            for (int u = 0; u < uses; u++) {
                if (!use(a)) {
                    break;
                }
            }
            free(a);
            if (config.has(Fault.STALE_REMOTE_KEYS) && !oldKeys.isEmpty() && rnd.nextInt(5) == 0) {
                long[] old = oldKeys.pollFirst();
                remoteWrite((int) old[0], old[1], garbage, false);
            }
        }

        /** One use: acquire, a NIC write of a fresh pattern, read back, release. False if acquire failed. */
        private boolean use(Allocation a) throws InterruptedException {
            boolean remote = rnd.nextInt(4) == 0;
            int access = Access.LOCAL_WRITE | (remote ? Access.REMOTE_WRITE : 0);
            CacheUnderTest.Handle h = acquire(a, access);
            if (h == null) {
                return false;
            }
            long offset = rnd.nextLong(a.length() / 8 - PATTERN_BYTES / 8) * 8;
            long word = a.id() << 20 | (++useCount & 0xFFFFF);
            for (int i = 0; i < PATTERN_BYTES; i += 8) {
                pattern.set(ValueLayout.JAVA_LONG, i, word);
            }
            if (remote) {
                remoteWrite(h.rkey(), a.address() + offset, pattern, true);
            } else {
                nic.localWrite(h.lkey(), a.address() + offset, pattern);
            }
            // read the buffer back through its current pages
            MemorySegment mine = MemorySegment.ofAddress(a.physical() + offset).reinterpret(PATTERN_BYTES);
            for (int i = 0; i < PATTERN_BYTES; i += 8) {
                if (mine.get(ValueLayout.JAVA_LONG, i) != word) {
                    corrupted.increment();
                    break;
                }
            }
            cache.release(h);
            if (remote && config.has(Fault.STALE_REMOTE_KEYS)) {
                oldKeys.addLast(new long[] {h.rkey(), a.address() + offset});
                if (oldKeys.size() > 8) {
                    oldKeys.removeFirst();
                }
            }
            return true;
        }

        /** Acquires, with the generation check when configured; null when registration failed. */
        private CacheUnderTest.Handle acquire(Allocation a, int access) {
            for (int attempt = 0;; attempt++) {
                CacheUnderTest.Handle h;
                try {
                    h = cache.acquire(a.address(), a.length(), access);
                } catch (RegistrationException e) {
                    registrationErrors.increment();
                    return null;
                }
                if (!config.generationCheck() || !cache.invalidates() || nic.ownerOfKey(h.lkey()) == a.id()
                        || attempt >= 3) {
                    return h;
                }
                // defense in depth: the registration was made for an earlier allocation of these addresses
                caught.increment();
                cache.release(h);
                cache.free(a.address(), a.length()).toCompletableFuture().join();
            }
        }

        private void remoteWrite(int rkey, long address, MemorySegment data, boolean wait) throws InterruptedException {
            if (inlineRemote) {
                nic.remoteWrite(rkey, address, data);
                return;
            }
            // a waited write's pattern is not touched until the peer is done; garbage is never rewritten
            CompletableFuture<Boolean> landed = wait ? new CompletableFuture<>() : null;
            peerQueue.put(new RemoteWrite(rkey, address, data, landed));
            if (wait) {
                try {
                    landed.get(10, TimeUnit.SECONDS);
                } catch (Exception e) {
                    throw new IllegalStateException("the peer did not perform the remote write in 10 s", e);
                }
            }
        }

        private void free(Allocation a) {
            if (config.has(Fault.DROP_HOOKS) && rnd.nextInt(100) < 5) {
                allocator.free(a, CompletableFuture.completedFuture(null)); // the hook is lost
                return;
            }
            if (config.has(Fault.DELAYED_HOOKS)) {
                CompletableFuture<Void> reusable = new CompletableFuture<>();
                allocator.free(a, reusable);
                delayed.addLast(new Object[] {a, reusable, op});
                return;
            }
            allocator.free(a, cache.free(a.address(), a.length()));
        }

        @SuppressWarnings("unchecked")
        private void deliverDelayedHooks(boolean all) {
            while (!delayed.isEmpty() && (all || (long) delayed.peekFirst()[2] + HOOK_DELAY_OPS <= op)) {
                Object[] d = delayed.pollFirst();
                Allocation a = (Allocation) d[0];
                CompletionStage<Void> stage = cache.free(a.address(), a.length());
                stage.whenComplete((v, e) -> ((CompletableFuture<Void>) d[1]).complete(null));
            }
        }
    }
}
