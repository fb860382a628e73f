package io.mrcache.stress.injector;

import io.mrcache.core.Access;
import io.mrcache.core.Registrar;
import io.mrcache.core.RegistrationException;
import io.mrcache.stress.injector.MallocArena.Allocation;
import io.mrcache.verbs.sim.SimulatedHca;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
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
 * The address-reuse fault injector. Worker threads share one pool of live allocations from a {@link MallocArena}
 * (64 B to 64 KiB, packed like a malloc, several to a page; chunks unmapped and mapped again with new pages).
 * Any worker allocates, uses any live allocation (alone, or with its neighbours as one scatter/gather request;
 * with varying rights, so regions merge and upgrade), and frees any allocation nobody is using, while other
 * workers' registrations may be in flight or leased on the same pages. Each use: acquire keys from the cache
 * under test, have the NIC write a pattern (locally, or from a peer thread with the rkey), read it back through
 * the buffer's current pages, release. Each free goes through the cache's free hook; the allocator reuses the
 * bytes only after the hook's stage completed normally, and first asks the NIC whether a registration made
 * before the free still covers them.
 *
 * <p>Detectors (see {@link InjectorReport}): stale writes, corrupted buffers, reuse while registered, leaked
 * registrations, double deregistrations, deregistrations under lease, stale hits. Coverage: how often the run
 * exercised each hazard. Before the main run, a close race: caches closed while workers' registrations are in
 * flight.
 *
 * <p>The file is long (about 700 lines) because it nests the run's shared state ({@code Run}: the pool, the
 * detectors, the free hooks) and the worker loop ({@code Worker}), each under 400 lines, which share those
 * detectors and the pool; the allocator and the NIC live in their own classes.
 *
 * <p>A run is seeded; with one thread it is deterministic (remote writes then run inline, delayed and failed
 * frees wait a count of operations, the cache's failed deregistrations are retried by the worker at fixed points,
 * and there is no close race), so the seed replays the same counts; the one exception is mrcache's eviction
 * policy under eviction-pressure, whose admission breaks some ties with a random draw (see the README).
 */
public final class AddressReuseInjector {
    /** Builds the cache under test over the injector's registrar. */
    @FunctionalInterface
    public interface CacheFactory {
        CacheUnderTest create(Registrar registrar, InjectorConfig config);
    }

    // coverage names, in print order
    public static final String DOOMED = "in-flight registrations doomed by a free (H4)";
    public static final String JOINS = "single-flight joins";
    public static final String MERGES = "merges";
    public static final String UPGRADES = "access upgrades";
    public static final String DEFERRED = "deferred deregistrations";
    public static final String EVICTIONS = "evictions";
    public static final String WITHDRAWN = "evictions withdrawn (leased)";
    public static final String DEREG_FAILURES = "failed deregistrations (retried)";
    public static final String WAITED = "free stages that had to wait";
    public static final String SPANS = "scatter/gather requests";
    public static final String UNMAPS = "chunk unmaps (large invalidations)";
    public static final String REMAPS = "chunks mapped again, new pages";
    public static final String CLOSE_DOOMED = "in-flight registrations at close";
    /** Printed only for a cache with the page-frame check. */
    public static final String PFN_CAUGHT = "remapped pages caught by the page-frame check";
    /** Not a hazard: how many registrations {@link Fault#SLOW_REGISTRATION} slowed, of {@link #REGISTRATIONS}. */
    public static final String SLOWED = "registrations slowed by 20 us";
    public static final String REGISTRATIONS = "registrations";
    /** Not a hazard: acquires the cache served from a cached region (printed by the soak). */
    public static final String HITS = "hits";
    /** Every coverage name, in print order. */
    public static final List<String> COVERAGE = List.of(DOOMED, JOINS, MERGES, UPGRADES, DEFERRED, EVICTIONS,
            WITHDRAWN, DEREG_FAILURES, WAITED, SPANS, UNMAPS, REMAPS, CLOSE_DOOMED);

    /** Prints each violation as it is found (environment MRCACHE_INJECTOR_DEBUG=1), for diagnosing a seed. */
    static final boolean DEBUG = "1".equals(System.getenv("MRCACHE_INJECTOR_DEBUG"));
    private static final int PATTERN_BYTES = 64;
    private static final int HOOK_DELAY_OPS = 3;
    private static final int POOL = 512;
    /** Stale peer writes queued before the peer thread is woken for them. */
    private static final int PEER_BATCH = 8;
    /** How long a free whose stage failed waits before it is announced again: 5 ms. */
    private static final long REHOOK_NANOS = 5_000_000L;
    /**
     * The same in a one-thread (replay) run, counted in operations; such a run's cache has no retry timer (see
     * {@link Caches}), so the worker has it retry its failed deregistrations as often.
     */
    private static final long REHOOK_OPS = 16;
    private static final int LOW_WATER = 96;
    private static final int CLOSE_RACE_ROUNDS = 12;
    private static final int[] ACCESS = {Access.LOCAL_WRITE, Access.LOCAL_WRITE | Access.LOCAL_READ,
        Access.LOCAL_WRITE | Access.REMOTE_WRITE, Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE};

    private AddressReuseInjector() {
    }

    /** A worker's keys for one use, and the NIC's record of the registration behind them (null: a dead key). */
    private record Held(CacheUnderTest.Handle handle, InjectorNic.@Nullable Pinned pinned) {
    }

    /** A free to announce again at {@code due} (on the run's {@code rehookClock}), its stage having failed. */
    private record Rehook(long due, long address, long length, Runnable then) {
    }

    /** A stale peer's fire-and-forget remote write, for the peer thread. */
    private record RemoteWrite(int rkey, long address, MemorySegment data, long intended) {
    }

    /** A live allocation in the shared pool: users >= 0 while live, -1 once a worker frees it. */
    private record Live(Allocation a, AtomicInteger users) {
    }

    public static InjectorReport run(InjectorConfig config, CacheFactory factory, Consumer<String> progress) {
        return new Run(config, factory, progress).execute();
    }

    /** One run's shared state. */
    private static final class Run {
        final InjectorConfig config;
        final CacheFactory factory;
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
        final LongAdder waited = new LongAdder();
        final LongAdder spans = new LongAdder();
        final AtomicLong closeDoomed = new AtomicLong();
        final AtomicLong leakedAtCloseRace = new AtomicLong();
        final AtomicLong pendingHooks = new AtomicLong();
        final ConcurrentHashMap<Object, String> stuck = new ConcurrentHashMap<>();
        final AtomicBoolean stop = new AtomicBoolean();
        final Throwable[] failure = new Throwable[1];
        /** One worker: the run replays its seed exactly (no clock decides anything, see {@link #rehookClock}). */
        final boolean replay;
        /** Operations of the one worker of a replay run. */
        final AtomicLong operationsSoFar = new AtomicLong();
        /**
         * Frees whose stage completed exceptionally, to announce again once due: the workers (and at the end the
         * main thread) deliver them between operations, as an allocator retries on its next call, so that no
         * timer thread's wake-up preempts a worker. In due order: every one waits the same {@link #REHOOK_NANOS}.
         */
        final ConcurrentLinkedQueue<Rehook> rehooks = new ConcurrentLinkedQueue<>();
        final BlockingQueue<RemoteWrite> peerQueue = new ArrayBlockingQueue<>(1024);
        /** The peer thread (null with one worker); woken per {@link #PEER_BATCH} writes, not per write. */
        volatile @Nullable Thread peer;
        final Arena buffers = Arena.ofShared();
        CacheUnderTest cache;

        Run(InjectorConfig config, CacheFactory factory, Consumer<String> progress) {
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
                closeRace();
            }
            cache = factory.create(nic, config);
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
                        new Worker(this, new SplittableRandom(seed), config.threads() == 1).run(quota);
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
                    nic.rejectedRemote.sum(), registrationErrors.sum(), nic.registrations.sum(), coverage, seconds);
            arena.close();
            buffers.close();
            return report;
        }

        /** Caches closed while registrations are in flight: none may publish into a closed cache (leak). */
        private void closeRace() {
            SplittableRandom rnd = new SplittableRandom(config.seed() ^ 0xC105EL);
            for (int round = 0; round < CLOSE_RACE_ROUNDS && !stop.get(); round++) {
                CacheUnderTest c = factory.create(nic, config);
                List<Allocation> mine = new ArrayList<>();
                for (int i = 0; i < 8; i++) {
                    Allocation a = arena.allocate(3 + rnd.nextInt(2)); // 4 KiB and 16 KiB: page-sized requests
                    if (a != null) {
                        mine.add(a);
                    }
                }
                Thread[] racers = new Thread[2];
                for (int t = 0; t < racers.length; t++) {
                    long seed = rnd.nextLong();
                    racers[t] = Thread.ofPlatform().start(() -> raceClose(c, mine, new SplittableRandom(seed)));
                }
                try {
                    Thread.sleep(1 + rnd.nextInt(2));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                boolean closedNormally = closeQuietly(c);
                for (Thread t : racers) {
                    join(t, 10_000);
                }
                closeDoomed.addAndGet(c.coverage().getOrDefault(DOOMED, 0L));
                // this cache is the only one: what the NIC still has registered is its own. A close that
                // completed normally must have left nothing; one that reported failed deregistrations gets time
                // for the cache's retries
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(closedNormally ? 0 : 10);
                while (hca.liveRegistrations() > 0 && System.nanoTime() < deadline) {
                    sleep(1);
                }
                if (hca.liveRegistrations() > 0) {
                    leakedAtCloseRace.addAndGet(hca.liveRegistrations());
                    if (DEBUG) {
                        System.err.println("LEAKED at close race round " + round + ": " + hca.liveRegistrations()
                                + (closedNormally ? " after a normal close" : " 10 s after a failed close"));
                    }
                    break; // the NIC keeps them: later rounds could not tell theirs apart
                }
                for (Allocation a : mine) {
                    arena.free(a, clock.incrementAndGet());
                    arena.reusable(a, false);
                }
            }
        }

        private void raceClose(CacheUnderTest c, List<Allocation> mine, SplittableRandom rnd) {
            if (mine.isEmpty()) {
                return;
            }
            for (int i = 0; i < 10_000; i++) {
                Allocation a = mine.get(rnd.nextInt(mine.size()));
                long pages = a.length() / MallocArena.PAGE;
                long first = rnd.nextLong(pages);
                long length = (1 + rnd.nextLong(pages - first)) * MallocArena.PAGE - rnd.nextInt(64);
                try {
                    CacheUnderTest.Handle h = c.acquire(a.address() + first * MallocArena.PAGE, length,
                            ACCESS[rnd.nextInt(ACCESS.length)]);
                    c.release(h);
                } catch (IllegalStateException closed) {
                    return;
                } catch (RegistrationException e) {
                    // injected ENOMEM: go on
                }
            }
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
                    free(l.a(), rnd, null, 0);
                }
            }
            // a run stopped at its first violation is judged already: do not wait long for a broken cache's stages
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(stop.get() ? 1 : 30);
            while (pendingHooks.get() > 0 && System.nanoTime() < deadline) {
                if (replay) {
                    cache.retryFailedDeregistrations();
                    deliverDueRehooks(true);
                } else {
                    deliverDueRehooks(false);
                    sleep(1);
                }
            }
            if (DEBUG && pendingHooks.get() > 0) {
                System.err.println("PENDING HOOKS at the end: " + pendingHooks.get() + " " + cache.coverage() + " "
                        + (cache instanceof MrcacheUnderTest m ? m.cache() + " quarantined " + m.cache().quarantined()
                                + " " + m.cache().metrics().counters() : ""));
                stuck.entrySet().stream().limit(5).forEach(e -> System.err.println("  stuck: " + e.getValue()));
            }
        }

        /** Frees {@code a} through the hook; {@code delayed} holds hooks to deliver later (null: at once). */
        void free(Allocation a, SplittableRandom rnd, ArrayDeque<Object[]> delayed, long op) {
            // drop-hooks: 5% of chunk mappings are memory the JVM never hears about (native code frees and unmaps
            // it): none of their frees, and not their unmap, reaches the cache
            boolean dropFree = config.has(Fault.DROP_HOOKS) && silent(a);
            boolean dropUnmap = dropFree;
            boolean unmapIt = rnd.nextInt(3) == 0;
            arena.free(a, clock.incrementAndGet());
            Runnable reusable = () -> {
                MallocArena.Unmap u = arena.reusable(a, unmapIt);
                if (u != null) {
                    arena.unmapping(u, clock.incrementAndGet());
                    announce(u.address(), u.length(), dropUnmap, () -> arena.unmapped(u));
                }
            };
            if (delayed != null && config.has(Fault.DELAYED_HOOKS) && !dropFree) {
                pendingHooks.incrementAndGet();
                delayed.addLast(new Object[] {a, reusable, op});
                return;
            }
            announce(a.address(), a.length(), dropFree, reusable);
        }

        private boolean silent(Allocation a) {
            long h = (config.seed() ^ a.chunk() * 0x9E3779B97F4A7C15L ^ arena.mappingOf(a) * 0xC2B2AE3D27D4EB4FL);
            h = (h ^ (h >>> 31)) * 0xBF58476D1CE4E5B9L;
            return Long.remainderUnsigned(h ^ (h >>> 29), 20) == 0;
        }

        private void announce(long address, long length, boolean drop, Runnable then) {
            if (drop) { // the hook is lost: the allocator reuses the bytes without the cache hearing of it
                then.run();
                return;
            }
            pendingHooks.incrementAndGet();
            hook(address, length, then);
        }

        /** Calls the free hook; reuse waits for a normal completion, and an exceptional one is announced again. */
        void hook(long address, long length, Runnable then) {
            CompletionStage<Void> stage;
            try {
                stage = cache.free(address, length);
            } catch (RuntimeException e) {
                fail(e);
                pendingHooks.decrementAndGet();
                return;
            }
            if (!stage.toCompletableFuture().isDone()) {
                waited.increment();
            }
            Object token = new Object();
            if (DEBUG) {
                stuck.put(token, String.format("hook [0x%x,+%d) %s", address, length, stage));
            }
            stage.whenComplete((v, e) -> {
                stuck.remove(token);
                if (e == null) {
                    try {
                        then.run();
                    } catch (RuntimeException | Error x) {
                        fail(x);
                    }
                    pendingHooks.decrementAndGet();
                } else { // a key may still be live: ask again later, as an allocator that honours the stage does
                    rehooks.add(new Rehook(rehookClock() + (replay ? REHOOK_OPS : REHOOK_NANOS), address, length, then));
                }
            });
        }

        /**
         * The clock a failed free's second announcement waits on: wall time, or in a replay run the worker's
         * operations, so that it comes at the same point of the run every time.
         */
        long rehookClock() {
            return replay ? operationsSoFar.get() : System.nanoTime();
        }

        /** Announces again the frees whose wait is up ({@code all}: every one). */
        void deliverDueRehooks(boolean all) {
            while (!rehooks.isEmpty()) {
                Rehook due;
                synchronized (rehooks) { // the head's check and its removal as one: another thread may take it
                    Rehook head = rehooks.peek();
                    if (head == null || !all && rehookClock() - head.due() < 0) {
                        return;
                    }
                    due = rehooks.poll();
                }
                hook(due.address(), due.length(), due.then());
            }
        }

        long violations() {
            return nic.staleWrites.sum() + corrupted.sum() + arena.reusedWhileRegistered()
                    + nic.doubleDeregistrations.sum() + nic.deregisteredUnderLease.sum() + staleHits.sum()
                    + leakedAtCloseRace.get();
        }

        private Map<String, Long> coverage() {
            Map<String, Long> out = new LinkedHashMap<>();
            for (String name : COVERAGE) {
                out.put(name, 0L);
            }
            out.putAll(cache.coverage());
            out.put(WAITED, waited.sum());
            out.put(SPANS, spans.sum());
            out.put(UNMAPS, arena.chunkUnmaps());
            out.put(REMAPS, arena.chunkRemaps());
            out.put(CLOSE_DOOMED, closeDoomed.get());
            out.put(SLOWED, nic.slowed.sum());
            out.put(REGISTRATIONS, nic.registrations.sum());
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
        private static boolean closeQuietly(CacheUnderTest c) {
            try {
                c.close();
                return true;
            } catch (RuntimeException e) {
                return false;
            }
        }

        private static void join(Thread t, long millis) {
            try {
                t.join(millis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
        }

        private static void sleep(long millis) {
            try {
                Thread.sleep(millis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** One worker thread's loop. */
    private static final class Worker {
        private final Run run;
        private final SplittableRandom rnd;
        private final boolean inlineRemote;
        private final MemorySegment pattern;
        private final MemorySegment garbage;
        /** Frees whose hooks are held back (delayed-hooks): {allocation, what to do once reusable, op}. */
        private final ArrayDeque<Object[]> delayed = new ArrayDeque<>();
        /** rkeys of freed buffers a peer still holds (stale-remote-keys): {rkey, address, allocation id}. */
        private final ArrayDeque<long[]> oldKeys = new ArrayDeque<>();
        private long op;
        private long useCount;

        Worker(Run run, SplittableRandom rnd, boolean inlineRemote) {
            this.run = run;
            this.rnd = rnd;
            this.inlineRemote = inlineRemote;
            this.pattern = run.buffers.allocate(PATTERN_BYTES, 8);
            this.garbage = run.buffers.allocate(PATTERN_BYTES, 8).fill((byte) 0xBD);
        }

        void run(long quota) throws InterruptedException {
            long freed = 0;
            while (freed < quota) {
                op++;
                if (run.replay && run.operationsSoFar.incrementAndGet() % REHOOK_OPS == 0) {
                    run.cache.retryFailedDeregistrations(); // what the cache's retry timer does in other runs
                }
                deliverDelayedHooks(false);
                run.deliverDueRehooks(false);
                if ((op & 31) == 0 && run.config.stopAtFirstViolation() && run.violations() > 0) {
                    run.stop.set(true);
                }
                if (run.stop.get()) {
                    break;
                }
                int live = run.liveCount.get();
                int k = rnd.nextInt(100);
                if (live < LOW_WATER || k < 25) {
                    allocate();
                } else if (k < 55) {
                    if (freeOne()) {
                        freed++;
                        run.done.increment();
                    }
                } else {
                    useOne();
                }
            }
            deliverDelayedHooks(true);
        }

        private void allocate() throws InterruptedException {
            Allocation a = run.arena.allocate(MallocArena.sizeClass(rnd.nextInt(100)));
            if (a == null) { // nothing free now: let held hooks through and free something instead
                deliverDelayedHooks(true);
                Thread.yield();
                return;
            }
            Live l = new Live(a, new AtomicInteger(1)); // ours until its first use is over
            for (int tries = 0; tries < 8; tries++) {
                int i = rnd.nextInt(POOL);
                if (run.pool.compareAndSet(i, null, l)) {
                    run.byId.put(a.id(), l);
                    run.liveCount.incrementAndGet();
                    try {
                        use(List.of(l));
                    } finally {
                        l.users().decrementAndGet();
                    }
                    return;
                }
            }
            run.free(a, rnd, delayed, op); // the pool is full here: give it back
        }

        private boolean freeOne() {
            int i = rnd.nextInt(POOL);
            Live l = run.pool.get(i);
            if (l == null || !l.users().compareAndSet(0, -1)) {
                return false; // empty, or in use by a worker: a transport does not free a buffer it is using
            }
            run.pool.compareAndSet(i, l, null);
            run.byId.remove(l.a().id());
            run.liveCount.decrementAndGet();
            run.free(l.a(), rnd, delayed, op);
            if (run.config.has(Fault.STALE_REMOTE_KEYS) && !oldKeys.isEmpty() && rnd.nextInt(3) == 0
                    && !run.byId.containsKey(oldKeys.peekFirst()[2])) { // only keys of buffers freed since
                long[] old = oldKeys.pollFirst();
                try {
                    remoteWrite((int) old[0], old[1], garbage, old[2], false);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return true;
        }

        private void useOne() throws InterruptedException {
            Live first = run.pool.get(rnd.nextInt(POOL));
            if (first == null || !take(first)) {
                return;
            }
            List<Live> span = new ArrayList<>(4);
            span.add(first);
            if (rnd.nextInt(5) == 0) { // scatter/gather: the allocation and its live neighbours, as one request
                int more = 1 + rnd.nextInt(3);
                Allocation last = first.a();
                for (int m = 0; m < more; m++) {
                    Live next = run.byId.get(run.arena.nextOwner(last));
                    if (next == null || next.a().address() != last.end() || !take(next)) {
                        break;
                    }
                    span.add(next);
                    last = next.a();
                }
            }
            try {
                use(span);
            } finally {
                for (Live l : span) {
                    l.users().decrementAndGet();
                }
            }
        }

        /** One worker at a time uses an allocation (its read-back must see its own write). */
        private static boolean take(Live l) {
            return l.users().compareAndSet(0, 1);
        }

        /** One use of a span of adjacent allocations: acquire, NIC writes, read back, release. */
        private void use(List<Live> span) throws InterruptedException {
            long from = span.get(0).a().address();
            long to = span.get(span.size() - 1).a().end();
            if (span.size() > 1) {
                run.spans.increment();
            }
            int access = ACCESS[rnd.nextInt(ACCESS.length)];
            boolean remote = Access.isRemote(access);
            long reusedAfter = 0;
            for (Live l : span) {
                reusedAfter = Math.max(reusedAfter, l.a().reusedAfter());
            }
            Held held = acquire(from, to - from, access, reusedAfter, span.get(0).a().physical());
            if (held == null) {
                return;
            }
            CacheUnderTest.Handle h = held.handle();
            InjectorNic.leased(held.pinned(), 1);
            try {
                for (Live l : span) {
                    write(l.a(), h, remote);
                }
            } finally {
                InjectorNic.leased(held.pinned(), -1); // before the release, which may deregister
                run.cache.release(h);
            }
        }

        private void write(Allocation a, CacheUnderTest.Handle h, boolean remote) throws InterruptedException {
            int size = (int) Math.min(PATTERN_BYTES, a.length());
            long offset = rnd.nextLong((a.length() - size) / 8 + 1) * 8;
            long word = a.id() << 20 | (++useCount & 0xFFFFF);
            MemorySegment data = pattern.asSlice(0, size);
            for (int i = 0; i < size; i += 8) {
                data.set(ValueLayout.JAVA_LONG, i, word);
            }
            boolean landed;
            if (remote) {
                landed = remoteWrite(h.rkey(), a.address() + offset, data, a.id(), true);
            } else {
                landed = run.nic.localWrite(h.lkey(), a.address() + offset, data, a.id());
            }
            long physical = a.physical() + offset; // the pages stay while the allocation is live
            MemorySegment mine = MemorySegment.ofAddress(physical).reinterpret(size);
            for (int i = 0; i < size; i += 8) {
                if (mine.get(ValueLayout.JAVA_LONG, i) != word) {
                    run.corrupted.increment();
                    if (AddressReuseInjector.DEBUG) {
                        System.err.printf("CORRUPTED alloc %d [0x%x,+%d) off %d size %d remote %b landed %b key 0x%x"
                                + " read 0x%x want 0x%x%n", a.id(), a.address(), a.length(), offset, size, remote,
                                landed, remote ? h.rkey() : h.lkey(), mine.get(ValueLayout.JAVA_LONG, i), word);
                    }
                    break;
                }
            }
            if (remote && run.config.has(Fault.STALE_REMOTE_KEYS)) {
                oldKeys.addLast(new long[] {h.rkey(), a.address() + offset, a.id()});
                if (oldKeys.size() > 8) {
                    oldKeys.removeFirst();
                }
            }
        }

        /**
         * Acquires; the oracle (ground truth, no library has it) counts a stale hit: keys whose registration began
         * before the last free of these bytes (I1), or that pin pages other than {@code backing}, the physical
         * address of {@code address} now. With {@link InjectorConfig#oracleCheck()} it invalidates and retries
         * instead. Null when registration failed.
         */
        private @Nullable Held acquire(long address, long length, int access, long reusedAfter, long backing) {
            for (int attempt = 0;; attempt++) {
                CacheUnderTest.Handle h;
                try {
                    h = run.cache.acquire(address, length, access);
                } catch (RegistrationException e) {
                    run.registrationErrors.increment();
                    return null;
                }
                InjectorNic.Pinned p = run.nic.pinned(h.lkey()); // null: a dead key, which the writes will meet
                if (p == null || !p.beganBefore(reusedAfter) && !InjectorNic.pinsOldPages(p, address, backing)) {
                    return new Held(h, p);
                }
                if (!run.config.oracleCheck() || attempt >= 3) {
                    run.staleHits.increment();
                    if (DEBUG) {
                        System.err.printf("STALE HIT [0x%x,+%d) key 0x%x reusedAfter %d%n", address, length, h.lkey(),
                                reusedAfter);
                    }
                    return new Held(h, p);
                }
                run.oracleCaught.increment();
                run.cache.release(h);
                run.cache.free(address, length).toCompletableFuture().exceptionally(e -> null).join();
            }
        }

        private boolean remoteWrite(int rkey, long address, MemorySegment data, long intended, boolean wait)
                throws InterruptedException {
            if (inlineRemote || wait) {
                // a write the worker waits for runs here: handing it to the peer and parking until it is done
                // adds two context switches and no interleaving (the worker holds its lease throughout either way)
                return run.nic.remoteWrite(rkey, address, data, intended);
            }
            // a stale peer's write lands whenever the peer gets to it, racing the frees; garbage is never rewritten
            run.peerQueue.put(new RemoteWrite(rkey, address, data, intended));
            if (run.peerQueue.size() >= PEER_BATCH) {
                // woken per batch: each wake-up of a third thread preempts a worker on this 2-processor machine
                LockSupport.unpark(run.peer);
            }
            return false;
        }

        private void deliverDelayedHooks(boolean all) {
            while (!delayed.isEmpty() && (all || (long) delayed.peekFirst()[2] + HOOK_DELAY_OPS <= op)) {
                Object[] d = delayed.pollFirst();
                Allocation a = (Allocation) d[0];
                run.hook(a.address(), a.length(), (Runnable) d[1]);
            }
        }
    }
}
