package io.mrcache.stress.injector;

import io.mrcache.core.Access;
import io.mrcache.core.RegistrationException;
import io.mrcache.stress.injector.MallocArena.Allocation;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * One worker thread's loop: allocate, use any live allocation nobody else is using (alone or with its live
 * neighbours as one scatter/gather request), free any allocation nobody is using. Each use acquires keys from
 * the cache under test, has the NIC write a pattern (locally, or as a peer with the rkey), reads it back through
 * the buffer's current pages, and releases.
 */
final class InjectorWorker {
    /** A worker's keys for one use, and the NIC's record of the registration behind them (null: a dead key). */
    private record Held(CacheUnderTest.Handle handle, InjectorNic.@Nullable Pinned pinned) {
    }

    private final InjectorRun run;
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

    InjectorWorker(InjectorRun run, SplittableRandom rnd, boolean inlineRemote) {
        this.run = run;
        this.rnd = rnd;
        this.inlineRemote = inlineRemote;
        this.pattern = run.buffers.allocate(InjectorRun.PATTERN_BYTES, 8);
        this.garbage = run.buffers.allocate(InjectorRun.PATTERN_BYTES, 8).fill((byte) 0xBD);
    }

    void run(long quota) throws InterruptedException {
        long freed = 0;
        while (freed < quota) {
            op++;
            if (run.replay && run.operationsSoFar.incrementAndGet() % FreePath.REHOOK_OPS == 0) {
                run.cache.retryFailedDeregistrations(); // what the cache's retry timer does in other runs
            }
            deliverDelayedHooks(false);
            run.frees.deliverDueRehooks(false);
            if ((op & 31) == 0 && run.config.stopAtFirstViolation() && run.violations() > 0) {
                run.stop.set(true);
            }
            if (run.stop.get()) {
                break;
            }
            int live = run.liveCount.get();
            int k = rnd.nextInt(100);
            if (live < InjectorRun.LOW_WATER || k < 25) {
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
        InjectorRun.Live l = new InjectorRun.Live(a, new AtomicInteger(1)); // ours until its first use is over
        for (int tries = 0; tries < 8; tries++) {
            int i = rnd.nextInt(InjectorRun.POOL);
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
        run.frees.free(a, rnd, delayed, op); // the pool is full here: give it back
    }

    private boolean freeOne() {
        int i = rnd.nextInt(InjectorRun.POOL);
        InjectorRun.Live l = run.pool.get(i);
        if (l == null || !l.users().compareAndSet(0, -1)) {
            return false; // empty, or in use by a worker: a transport does not free a buffer it is using
        }
        run.pool.compareAndSet(i, l, null);
        run.byId.remove(l.a().id());
        run.liveCount.decrementAndGet();
        run.frees.free(l.a(), rnd, delayed, op);
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
        InjectorRun.Live first = run.pool.get(rnd.nextInt(InjectorRun.POOL));
        if (first == null || !take(first)) {
            return;
        }
        List<InjectorRun.Live> span = new ArrayList<>(4);
        span.add(first);
        if (rnd.nextInt(5) == 0) { // scatter/gather: the allocation and its live neighbours, as one request
            int more = 1 + rnd.nextInt(3);
            Allocation last = first.a();
            for (int m = 0; m < more; m++) {
                InjectorRun.Live next = run.byId.get(run.arena.nextOwner(last));
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
            for (InjectorRun.Live l : span) {
                l.users().decrementAndGet();
            }
        }
    }

    /** One worker at a time uses an allocation (its read-back must see its own write). */
    private static boolean take(InjectorRun.Live l) {
        return l.users().compareAndSet(0, 1);
    }

    /** One use of a span of adjacent allocations: acquire, NIC writes, read back, release. */
    private void use(List<InjectorRun.Live> span) throws InterruptedException {
        long from = span.get(0).a().address();
        long to = span.get(span.size() - 1).a().end();
        if (span.size() > 1) {
            run.spans.increment();
        }
        int access = InjectorRun.ACCESS[rnd.nextInt(InjectorRun.ACCESS.length)];
        boolean remote = Access.isRemote(access);
        long reusedAfter = 0;
        for (InjectorRun.Live l : span) {
            reusedAfter = Math.max(reusedAfter, l.a().reusedAfter());
        }
        Held held = acquire(from, to - from, access, reusedAfter, span.get(0).a().physical());
        if (held == null) {
            return;
        }
        CacheUnderTest.Handle h = held.handle();
        InjectorNic.leased(held.pinned(), 1);
        try {
            for (InjectorRun.Live l : span) {
                write(l.a(), h, remote);
            }
        } finally {
            InjectorNic.leased(held.pinned(), -1); // before the release, which may deregister
            run.cache.release(h);
        }
    }

    private void write(Allocation a, CacheUnderTest.Handle h, boolean remote) throws InterruptedException {
        int size = (int) Math.min(InjectorRun.PATTERN_BYTES, a.length());
        long offset = rnd.nextLong((a.length() - size) / 8 + 1) * 8;
        long word = a.id() << 20 | (++useCount & 0xFFFFF);
        MemorySegment data = pattern.asSlice(0, size);
        for (int i = 0; i < size; i += 8) {
            data.set(ValueLayout.JAVA_LONG, i, word);
        }
        boolean landed;
        if (remote) {
            landed = remoteWrite(h, a.address() + offset, data, a.id());
            if (run.config.has(Fault.TWO_TENANTS)) { // the other tenant's peer tries the same key (I7)
                run.nic.crossDomainWrite(h.rkey(), a.address() + offset, data, h.domain());
            }
        } else {
            landed = run.nic.localWrite(h.lkey(), a.address() + offset, data, a.id(), h.domain());
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
                if (AddressReuseInjector.DEBUG) {
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

    /** A remote write the worker waits for, with the handle's key, through the handle's domain. */
    private boolean remoteWrite(CacheUnderTest.Handle h, long address, MemorySegment data, long intended) {
        return run.nic.remoteWrite(h.rkey(), address, data, intended, h.domain());
    }

    private boolean remoteWrite(int rkey, long address, MemorySegment data, long intended, boolean wait)
            throws InterruptedException {
        if (inlineRemote || wait) {
            // a write the worker waits for runs here: handing it to the peer and parking until it is done
            // adds two context switches and no interleaving (the worker holds its lease throughout either way)
            return run.nic.remoteWrite(rkey, address, data, intended);
        }
        // a stale peer's write lands whenever the peer gets to it, racing the frees; garbage is never rewritten
        run.peerQueue.put(new InjectorRun.RemoteWrite(rkey, address, data, intended));
        if (run.peerQueue.size() >= InjectorRun.PEER_BATCH) {
            // woken per batch: each wake-up of a third thread preempts a worker on this 2-processor machine
            LockSupport.unpark(run.peer);
        }
        return false;
    }

    private void deliverDelayedHooks(boolean all) {
        while (!delayed.isEmpty() && (all || (long) delayed.peekFirst()[2] + InjectorRun.HOOK_DELAY_OPS <= op)) {
            Object[] d = delayed.pollFirst();
            Allocation a = (Allocation) d[0];
            run.frees.hook(a.address(), a.length(), (Runnable) d[1]);
        }
    }
}
