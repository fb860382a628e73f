package io.mrcache.stress.injector;

import io.mrcache.core.Registrar;
import java.util.List;
import java.util.function.Consumer;

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
 * <p>The parts: {@link InjectorRun} (one run's shared state: the pool of live allocations, the detectors, the
 * peer thread, the report), {@link InjectorWorker} (a worker's loop: allocate, use, free), {@link FreePath} (the
 * free hooks: delayed, failed and announced again), {@link CloseRace} (caches closed while registrations are in
 * flight), {@link MallocArena} (the allocator) and {@link InjectorNic} (the NIC's ground truth).
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

        /**
         * Under {@link Fault#TWO_TENANTS}: a cache over two registrars in two protection domains of one NIC. By
         * default the first alone is used.
         */
        default CacheUnderTest create(Registrar first, Registrar second, InjectorConfig config) {
            return create(first, config);
        }
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
    /** Printed under {@link Fault#TWO_TENANTS} only. */
    public static final String CROSS_DOMAIN_REJECTED = "cross-domain writes rejected (I7)";
    /** Printed under {@link Fault#TWO_TENANTS} only: evictions one tenant's registration made of the other's. */
    public static final String CROSS_TENANT_EVICTIONS = "cross-tenant evictions";
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
    private AddressReuseInjector() {
    }

    public static InjectorReport run(InjectorConfig config, CacheFactory factory, Consumer<String> progress) {
        return new InjectorRun(config, factory, progress).execute();
    }
}
