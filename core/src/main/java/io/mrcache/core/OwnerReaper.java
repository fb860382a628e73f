package io.mrcache.core;

import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.WeakHashMap;

/**
 * Retires owned regions whose owner is gone, with no call from the user: one daemon thread for the process,
 * started by the first owner-bound registration. It takes each collected owner's reference off the queue as the GC
 * enqueues it (at once) and, every {@link #SCAN_MILLIS} ms, looks through each cache with owned regions for owners
 * that were closed rather than collected (an arena's {@code close()} enqueues nothing). Each region found is retired
 * as an invalidation retires it, and deregistered once its last lease is released.
 */
final class OwnerReaper {
    /** How often the caches are searched for closed owners: the bound on a closed arena's registrations. */
    static final long SCAN_MILLIS = 100;

    private static final ReferenceQueue<Object> QUEUE = new ReferenceQueue<>();
    /** Caches that registered for an owner, weakly: the scan for closed owners walks them. */
    private static final Set<RegistrationCache> CACHES = Collections.newSetFromMap(new WeakHashMap<>());
    private static volatile boolean started;

    private OwnerReaper() {
    }

    static ReferenceQueue<Object> queue() {
        return QUEUE;
    }

    /** {@code cache} registers for owners: scan it, and start the thread if it is not running yet. */
    static void watch(RegistrationCache cache) {
        synchronized (CACHES) {
            CACHES.add(cache);
            if (started) {
                return;
            }
            started = true;
        }
        Thread.ofPlatform().daemon().name("mrcache-owner-reaper").start(OwnerReaper::run);
    }

    private static void run() {
        long nextScan = System.nanoTime() + SCAN_MILLIS * 1_000_000;
        for (;;) {
            try {
                long wait = Math.max(1, (nextScan - System.nanoTime()) / 1_000_000);
                Reference<?> first = QUEUE.remove(wait);
                if (first != null) {
                    reap(first);
                }
                if (System.nanoTime() - nextScan >= 0) {
                    for (RegistrationCache c : caches()) {
                        c.reapClosedOwners();
                    }
                    nextScan = System.nanoTime() + SCAN_MILLIS * 1_000_000;
                }
            } catch (InterruptedException e) {
                return; // a daemon: only the JVM's end stops it
            } catch (RuntimeException | Error e) {
                System.getLogger(OwnerReaper.class.getName()).log(System.Logger.Level.WARNING,
                        "retiring the registrations of collected or closed owners failed; the reaper goes on", e);
            }
        }
    }

    /** Retires the regions of {@code first} and of every other reference already enqueued, per cache. */
    private static void reap(Reference<?> first) {
        List<OwnerRef> batch = new ArrayList<>();
        for (Reference<?> r = first; r != null; r = QUEUE.poll()) {
            if (r instanceof OwnerRef o) {
                batch.add(o);
            }
        }
        batch.stream().map(o -> o.cache).distinct().forEach(c -> {
            List<Region> regions = new ArrayList<>();
            for (OwnerRef o : batch) {
                Region region = o.region();
                if (o.cache == c && region != null) {
                    regions.add(region);
                }
            }
            c.ownersGone(regions);
        });
    }

    private static List<RegistrationCache> caches() {
        synchronized (CACHES) {
            return new ArrayList<>(CACHES);
        }
    }
}
