package io.mrcache.stress.injector;

import io.mrcache.stress.injector.MallocArena.Allocation;
import java.util.ArrayDeque;
import java.util.SplittableRandom;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * The allocator's free path: each free goes through the cache's free hook (at once, or held back a few
 * operations under delayed-hooks, or lost under drop-hooks), and the allocator reuses the bytes only once the
 * hook's stage completed normally; a stage that failed (a key may still be live) is announced again later.
 */
final class FreePath {
    /** How long a free whose stage failed waits before it is announced again: 5 ms. */
    private static final long REHOOK_NANOS = 5_000_000L;
    /**
     * The same in a one-thread (run.replay) run, counted in operations; such a run's run.cache has no retry timer (see
     * {@link Caches}), so the worker has it retry its failed deregistrations as often.
     */
    static final long REHOOK_OPS = 16;

    /** A free to announce again at {@code due} (on {@link #rehookClock}), its stage having failed. */
    private record Rehook(long due, long address, long length, Runnable then) {
    }

    private final InjectorRun run;
    /** Frees announced and not yet settled (their stage pending, or failed and waiting to be announced again). */
    final AtomicLong pendingHooks = new AtomicLong();
    /** Stages that were not complete when the hook returned. */
    final LongAdder waited = new LongAdder();
    /** What each unsettled free waits on (MRCACHE_INJECTOR_DEBUG only). */
    final ConcurrentHashMap<Object, String> stuck = new ConcurrentHashMap<>();
    /**
     * Frees whose stage completed exceptionally, to announce again once due: the workers (and at the end the
     * main thread) deliver them between operations, as an allocator retries on its next call, so that no
     * timer thread's wake-up preempts a worker. In due order: every one waits the same time.
     */
    private final ConcurrentLinkedQueue<Rehook> rehooks = new ConcurrentLinkedQueue<>();

    FreePath(InjectorRun run) {
        this.run = run;
    }

    /** Frees {@code a} through the hook; {@code delayed} holds hooks to deliver later (null: at once). */
    void free(Allocation a, SplittableRandom rnd, ArrayDeque<Object[]> delayed, long op) {
        // drop-hooks: 5% of chunk mappings are memory the JVM never hears about (native code frees and unmaps
        // it): none of their frees, and not their unmap, reaches the cache
        boolean dropFree = run.config.has(Fault.DROP_HOOKS) && silent(a);
        boolean dropUnmap = dropFree;
        boolean unmapIt = rnd.nextInt(3) == 0;
        run.arena.free(a, run.clock.incrementAndGet());
        Runnable reusable = () -> {
            MallocArena.Unmap u = run.arena.reusable(a, unmapIt);
            if (u != null) {
                run.arena.unmapping(u, run.clock.incrementAndGet());
                announce(u.address(), u.length(), dropUnmap, () -> run.arena.unmapped(u));
            }
        };
        if (delayed != null && run.config.has(Fault.DELAYED_HOOKS) && !dropFree) {
            pendingHooks.incrementAndGet();
            delayed.addLast(new Object[] {a, reusable, op});
            return;
        }
        announce(a.address(), a.length(), dropFree, reusable);
    }

    private boolean silent(Allocation a) {
        long h = (run.config.seed() ^ a.chunk() * 0x9E3779B97F4A7C15L ^ run.arena.mappingOf(a) * 0xC2B2AE3D27D4EB4FL);
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
            stage = run.cache.free(address, length);
        } catch (RuntimeException e) {
            run.fail(e);
            pendingHooks.decrementAndGet();
            return;
        }
        if (!stage.toCompletableFuture().isDone()) {
            waited.increment();
        }
        Object token = new Object();
        if (AddressReuseInjector.DEBUG) {
            stuck.put(token, String.format("hook [0x%x,+%d) %s", address, length, stage));
        }
        stage.whenComplete((v, e) -> {
            stuck.remove(token);
            if (e == null) {
                try {
                    then.run();
                } catch (RuntimeException | Error x) {
                    run.fail(x);
                }
                pendingHooks.decrementAndGet();
            } else { // a key may still be live: ask again later, as an allocator that honours the stage does
                rehooks.add(new Rehook(rehookClock() + (run.replay ? REHOOK_OPS : REHOOK_NANOS), address, length, then));
            }
        });
    }

    /**
     * The clock a failed free's second announcement waits on: wall time, or in a replay run the worker's
     * operations, so that it comes at the same point of the run every time.
     */
    long rehookClock() {
        return run.replay ? run.operationsSoFar.get() : System.nanoTime();
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
}
