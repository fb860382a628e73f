package io.mrcache.stress.injector;

import io.mrcache.core.Access;
import io.mrcache.stress.injector.MallocArena.Allocation;
import io.mrcache.verbs.sim.SimulatedHca;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * One injector run's shared state: the pool of live allocations the workers share, the detectors, the peer
 * thread that writes with stale remote keys, and the report. The workers ({@link InjectorWorker}), the free
 * hooks ({@link FreePath}) and the close race ({@link CloseRace}) act on it.
 */
final class InjectorRun {
    static final int PATTERN_BYTES = 64;
    static final int HOOK_DELAY_OPS = 3;
    static final int POOL = 512;
    /** Stale peer writes queued before the peer thread is woken for them. */
    static final int PEER_BATCH = 8;
    static final int LOW_WATER = 96;
    static final int[] ACCESS = {Access.LOCAL_WRITE, Access.LOCAL_WRITE | Access.LOCAL_READ,
        Access.LOCAL_WRITE | Access.REMOTE_WRITE, Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE};

    /** A stale peer's fire-and-forget remote write, for the peer thread. */
    record RemoteWrite(int rkey, long address, MemorySegment data, long intended) {
    }

    /** A live allocation in the shared pool: users >= 0 while live, -1 once a worker frees it. */
    record Live(Allocation a, AtomicInteger users) {
    }

    final InjectorConfig config;
    final AddressReuseInjector.CacheFactory factory;
    final Consumer<String> progress;
    final SimulatedHca hca;
    final AtomicLong clock = new AtomicLong(1);
    final ThreadLocal<SplittableRandom> faultRandom;
    final InjectorNic nic;
    final MallocArena arena;
    final AtomicReferenceArray<Live> pool = new AtomicReferenceArray<>(POOL);
    final ConcurrentHashMap<Long, Live> byId = new ConcurrentHashMap<>();
    final AtomicInteger liveCount = new AtomicInteger();
    final LongAdder done = new LongAdder();
    final LongAdder corrupted = new LongAdder();
    final LongAdder staleHits = new LongAdder();
    final LongAdder oracleCaught = new LongAdder();
    final LongAdder registrationErrors = new LongAdder();
    final LongAdder spans = new LongAdder();
    final AtomicLong closeDoomed = new AtomicLong();
    final AtomicLong leakedAtCloseRace = new AtomicLong();
    final AtomicBoolean stop = new AtomicBoolean();
    final Throwable[] failure = new Throwable[1];
    /** One worker: the run replays its seed (no clock decides anything, see {@link FreePath#rehookClock}). */
    final boolean replay;
    /** Operations of the one worker of a replay run. */
    final AtomicLong operationsSoFar = new AtomicLong();
    /** The free hooks, and the frees announced again. */
    final FreePath frees = new FreePath(this);
    final BlockingQueue<RemoteWrite> peerQueue = new ArrayBlockingQueue<>(1024);
    /** The peer thread (null with one worker); woken per {@link #PEER_BATCH} writes, not per write. */
    volatile @Nullable Thread peer;
    final Arena buffers = Arena.ofShared();
    CacheUnderTest cache;

    InjectorRun(InjectorConfig config, AddressReuseInjector.CacheFactory factory, Consumer<String> progress) {
        this.config = config;
        this.factory = factory;
        this.progress = progress;
        this.replay = config.threads() == 1;
        SimulatedHca nicHca = new SimulatedHca().warnings(progress::accept);
        this.hca = config.accountOnly() ? nicHca.accountOnly() : nicHca;
        // threads the injector does not start (the cache's retry threads) each get their own split of the seed:
        // one shared seed would give every fresh thread the same first draw
        SplittableRandom root = new SplittableRandom(config.seed());
        this.faultRandom = ThreadLocal.withInitial(() -> {
            synchronized (root) {
                return root.split();
            }
        });
        this.nic = new InjectorNic(hca, clock, config.has(Fault.SLOW_REGISTRATION) ? config.slowEvery() : 0,
                config.has(Fault.FAILING_REGISTRATION), config.has(Fault.FAILING_DEREGISTRATION), faultRandom);
        this.arena = new MallocArena(config.has(Fault.IMMEDIATE_REUSE), nic::liveFromBefore);
        nic.attach(arena);
    }

    InjectorReport execute() {
        long started = System.nanoTime();
        if (config.threads() > 1) {
            CloseRace.run(this);
        }
        cache = config.has(Fault.TWO_TENANTS) ? factory.create(nic, nic.secondDomain(), config)
                : factory.create(nic, config);
        arena.presentPages(cache.readsPageFrames());
        Thread peer = config.threads() > 1 ? startPeer() : null;
        this.peer = peer;
        Thread[] workers = new Thread[config.threads()];
        for (int t = 0; t < workers.length; t++) {
            long quota = config.operations() / workers.length + (t < config.operations() % workers.length ? 1 : 0);
            long seed = config.seed() * 1_000_003L + t;
            workers[t] = Thread.ofPlatform().name("injector-" + t).start(() -> {
                faultRandom.set(new SplittableRandom(seed ^ 0x5DEECE66DL));
                try {
                    new InjectorWorker(this, new SplittableRandom(seed), config.threads() == 1).run(quota);
                } catch (Throwable e) {
                    fail(e);
                }
            });
        }
        long lastReport = System.nanoTime();
        for (Thread w : workers) {
            while (w.isAlive()) {
                join(w, 200);
                if (System.nanoTime() - lastReport > 1_000_000_000L) {
                    lastReport = System.nanoTime();
                    double secs = (lastReport - started) / 1e9;
                    progress.accept(String.format("[%s] %,d / %,d lifecycles, %,.0f/s, violations so far %,d",
                            cache.name(), done.sum(), config.operations(), done.sum() / secs, violations()));
                }
            }
        }
        if (peer != null) {
            peerQueue.add(new RemoteWrite(0, 0, MemorySegment.NULL, 0));
            LockSupport.unpark(peer);
            join(peer, 5000);
        }
        if (failure[0] != null) {
            throw new IllegalStateException("injector worker failed (seed " + config.seed() + "): " + failure[0],
                    failure[0]);
        }
        freeEverythingLeft();
        Map<String, Long> coverage = coverage();
        nic.stopFailingDeregistrations();
        closeQuietly(cache);
        double seconds = (System.nanoTime() - started) / 1e9;
        long leaked = hca.liveRegistrations() + leakedAtCloseRace.get();
        InjectorReport report = new InjectorReport(cache.name(), done.sum(), nic.staleWrites.sum(), corrupted.sum(),
                arena.reusedWhileRegistered(), leaked, nic.doubleDeregistrations.sum(),
                nic.deregisteredUnderLease.sum(), staleHits.sum(), oracleCaught.sum(), nic.writesAfterFree.sum(),
                nic.rejectedRemote.sum(), registrationErrors.sum(), nic.registrations.sum(),
                nic.crossDomainAccepted.sum(), coverage, seconds);
        arena.close();
        buffers.close();
        return report;
    }

    private Thread startPeer() {
        return Thread.ofPlatform().daemon().name("injector-peer").start(() -> {
            for (;;) {
                RemoteWrite w = peerQueue.poll();
                if (w == null) {
                    LockSupport.park(this); // until a batch is queued (or the end's marker)
                    if (Thread.interrupted()) {
                        return;
                    }
                    continue;
                }
                if (w.rkey() == 0 && w.address() == 0) {
                    return;
                }
                try {
                    nic.remoteWrite(w.rkey(), w.address(), w.data(), w.intended());
                } catch (RuntimeException e) {
                    fail(e);
                }
            }
        });
    }

    /** Frees what the workers left live and waits for every announced free to settle. */
    private void freeEverythingLeft() {
        SplittableRandom rnd = new SplittableRandom(config.seed() ^ 0xF4EEL);
        for (int i = 0; i < POOL; i++) {
            Live l = pool.get(i);
            if (l != null && l.users().compareAndSet(0, -1)) {
                pool.set(i, null);
                byId.remove(l.a().id());
                liveCount.decrementAndGet();
                frees.free(l.a(), rnd, null, 0);
            }
        }
        // a run stopped at its first violation is judged already: do not wait long for a broken cache's stages
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(stop.get() ? 1 : 30);
        while (frees.pendingHooks.get() > 0 && System.nanoTime() < deadline) {
            if (replay) {
                cache.retryFailedDeregistrations();
                frees.deliverDueRehooks(true);
            } else {
                frees.deliverDueRehooks(false);
                sleep(1);
            }
        }
        if (AddressReuseInjector.DEBUG && frees.pendingHooks.get() > 0) {
            System.err.println("PENDING HOOKS at the end: " + frees.pendingHooks.get() + " " + cache.coverage() + " "
                    + (cache instanceof MrcacheUnderTest m ? m.cache() + " quarantined " + m.cache().quarantined()
                            + " " + m.cache().metrics().counters() : ""));
            frees.stuck.entrySet().stream().limit(5).forEach(e -> System.err.println("  stuck: " + e.getValue()));
        }
    }

    long violations() {
        return nic.staleWrites.sum() + corrupted.sum() + arena.reusedWhileRegistered()
                + nic.doubleDeregistrations.sum() + nic.deregisteredUnderLease.sum() + staleHits.sum()
                + leakedAtCloseRace.get() + nic.crossDomainAccepted.sum();
    }

    private Map<String, Long> coverage() {
        Map<String, Long> out = new LinkedHashMap<>();
        for (String name : AddressReuseInjector.COVERAGE) {
            out.put(name, 0L);
        }
        out.putAll(cache.coverage());
        out.put(AddressReuseInjector.WAITED, frees.waited.sum());
        out.put(AddressReuseInjector.SPANS, spans.sum());
        out.put(AddressReuseInjector.UNMAPS, arena.chunkUnmaps());
        out.put(AddressReuseInjector.REMAPS, arena.chunkRemaps());
        out.put(AddressReuseInjector.CLOSE_DOOMED, closeDoomed.get());
        out.put(AddressReuseInjector.SLOWED, nic.slowed.sum());
        out.put(AddressReuseInjector.REGISTRATIONS, nic.registrations.sum());
        if (config.has(Fault.TWO_TENANTS)) {
            out.put(AddressReuseInjector.CROSS_DOMAIN_REJECTED, nic.crossDomainRejected.sum());
        }
        return out;
    }

    void fail(Throwable e) {
        synchronized (failure) {
            if (failure[0] == null) {
                failure[0] = e;
            }
        }
        stop.set(true);
    }

    /** Closes {@code c}; false when its close failed (it is then judged by what it left registered). */
    static boolean closeQuietly(CacheUnderTest c) {
        try {
            c.close();
            return true;
        } catch (RuntimeException e) {
            return false;
        }
    }

    static void join(Thread t, long millis) {
        try {
            t.join(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
