package io.mrcache.core;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Policy;
import com.github.benmanes.caffeine.cache.RemovalCause;
import io.mrcache.core.events.EvictionEvent;
import io.mrcache.core.events.InvalidationEvent;
import io.mrcache.core.events.RegistrationEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * An interval-keyed cache of memory registrations: {@link #acquire} a {@link Lease} for (address, length,
 * access), {@link Lease#close() release} it, and {@link #invalidate} ranges from allocator free hooks.
 *
 * <h2>Contract (postconditions; the invariants of SAFETY-MODEL.md)</h2>
 * <ul>
 * <li>I1: after {@code invalidate(r)} returns, no {@code acquire} that starts afterwards returns a region
 * that overlaps {@code r} and was registered before {@code invalidate(r)} began. A registration in flight
 * while {@code invalidate(r)} runs, and overlapping {@code r}, is never published; it is deregistered.
 * <li>I2: a region is deregistered exactly once, only when it is unreachable for new acquires and unleased.
 * <li>I3: the stage returned by {@code invalidate(r)} completes only when every registration that overlapped
 * {@code r} (published, retired but leased, or in flight) has been deregistered.
 * <li>I4: after {@link #close()} and the release of every lease, each register has exactly one deregister.
 * <li>I5: idle regions are evicted to stay within the {@link Budget}; leased regions never are.
 * <li>I6: a lease covers its request with at least its rights; a remote region is exactly one request's
 * range, never merged, and serves only requests inside it with equal remote rights.
 * <li>I8: on {@code ENOMEM} idle regions are evicted and the registration retried once; then the error names
 * the pinned bytes, the budget and {@code RLIMIT_MEMLOCK}.
 * </ul>
 *
 * <h2>Concurrency</h2>
 * <p>Read without a lock: {@link #index}, an immutable {@link RegionIndex} published through a volatile
 * field, and each {@link Region}'s state word (RETIRED, EVICTING, CLAIMED bits) and striped lease cells. A
 * hit is one volatile read of the index, a branch-free binary search over the index's own arrays, one atomic
 * add on the calling thread's lease cell of the region and one read of its state word
 * ({@link Region#tryRetainHit}), which backs off once the region is retired. Two threads hitting the same
 * region write different cache lines.
 *
 * <p>Written under {@link #lock} only: the index, the index of retired-but-not-yet-deregistered regions
 * ({@link #retiring}) and the list of in-flight registrations ({@link #pending}). No registrar call and no
 * eviction-policy call is ever made under the lock: {@code register}/{@code deregister} run outside it, so
 * a slow {@code ibv_reg_mr} never blocks hits, other misses' planning, or free hooks.
 *
 * <p>Publication against invalidation. Every way out of the index (invalidate, eviction, merge, access
 * upgrade, close) first swaps in a new index without the region, under the lock, and then sets its RETIRED
 * bit and sums its lease cells. A reader holding the old index adds to its cell before it reads the state
 * word, and the retirer sets the bit before it reads the cells: either the reader saw the region live (its
 * lease is then in the retirer's sum, and the deregistration waits for its release: I2, I3) or it sees
 * RETIRED, backs off and retries on the slow path, which sees the new index. So once {@code invalidate(r)} has returned, an acquire that
 * starts later can neither find nor retain a region retired by it (I1). A miss registers an entry of
 * {@link #pending} added under the lock; {@code invalidate} marks every overlapping pending entry doomed
 * under the same lock; the owner checks the mark under the lock before publishing. Hence a registration
 * that overlaps an invalidation which took the lock after the registration was planned is never published
 * (H4) and is deregistered before the invalidation's stage completes.
 *
 * <p>Exactly-once deregistration. After RETIRED is set, whoever may have brought the lease sum to zero (the
 * retirer, each release, an acquire backing off) sums the cells and, on zero, competes for the CLAIMED bit
 * with a compare-and-set; the one winner deregisters (I2, I4). Eviction first sets EVICTING (acquires back
 * off as from a retired region), then sums: zero proves the region idle and it is retired, anything else and
 * the eviction withdraws, so it never takes a region from under a concurrent acquire (H5). The protocol is
 * drawn in {@link Region}'s comment; the jcstress races exercise each side of it.
 *
 * <p>Free-hook fast path. {@code invalidate} of a range that nothing overlaps takes no lock and allocates
 * nothing: it reads {@link #pendingCount}, then {@link #index}, then {@link #retiring}. Writers publish in
 * the opposite order (a published region enters the index before it leaves the pending count; a retired
 * region enters {@code retiring} before it leaves the index), so a region that existed when the invalidate
 * began is seen by one of the three reads.
 *
 * <h2>Failure paths</h2>
 * <ul>
 * <li><b>register throws</b> anything (a {@link RegistrationException}, another runtime exception, an
 * {@code Error}): the in-flight entry leaves {@link #pending} under the lock, every single-flight joiner
 * rethrows the owner's exception object itself, and the stages of invalidations and of close that waited on
 * the entry complete (nothing was registered). The cache stays usable.
 * <li><b>A widened registration is refused</b> (merged range or union of rights; EFAULT or EACCES where part
 * of the wider range has another page protection): the owner narrows its entry under the lock to the
 * request's own range and rights, replacing nothing, and registers again; only that failure fails the
 * acquire (the first is attached as suppressed). ENOMEM instead evicts idle regions and retries once (I8).
 * <li><b>deregister throws</b>: the keys are still live, so the region is never forgotten. It stays in
 * {@link #retiring} (every later overlapping invalidation sees it: no fast path past it) and enters the
 * {@link #quarantine}; the stages that waited for the attempt complete exceptionally with a
 * {@link DeregistrationException} naming the range, the registrations, their keys and the errno; a retry
 * ({@link DeregistrationRetry}: automatic with backoff by default, or {@link #retryQuarantined()}) makes a
 * new attempt, and stages that started waiting since complete with that attempt's outcome. So no stage
 * completes normally while a key that covered its range is live (I3). Pinned bytes still count the region,
 * so eviction keeps going until the budget holds. Close retries the quarantine once and reports what is
 * left; {@link #quarantined()} and the metrics show it.
 * <li><b>A registrar result that does not cover the request</b> (range or rights) is deregistered as an
 * unpublished registration and fails the acquire, for the owner and the joiners alike.
 * <li><b>Bad input</b> (non-positive length, negative address, a range past {@link #USER_SPACE_END}, an
 * empty or unknown access mask) is refused before anything changes.
 * </ul>
 *
 * <h2>Eviction</h2>
 * <p>Every published region is entered in a Caffeine cache used as the policy (W-TinyLFU), weighted by
 * pinned pages (or one per region when only the count is bounded) and bounded by the budget. A release
 * that leaves a region idle records the access. Without a budget nothing is ever evicted, so an unbounded
 * cache keeps Caffeine out of hits and misses altogether. When Caffeine evicts an entry (its admission may reject
 * the new region itself), the listener retires it only if {@link Region#tryRetireIdle} proves it idle; a
 * leased victim stays cached and re-enters the policy at its next idle moment. After each registration and
 * each release that leaves the cache over budget, {@code makeRoom} walks Caffeine's coldest entries to get
 * back within both bounds (bytes and count). Evicted regions are unlinked and deregistered by the thread
 * that made the policy call, outside every lock.
 *
 * <p>References: UCX {@code src/ucs/memory/rcache.c} (merging, access union, deferred deregistration),
 * Caffeine {@code BoundedLocalCache} (the layout of this comment), SAFETY-MODEL.md (the invariants).
 */
public final class RegistrationCache implements AutoCloseable {
    private static final CompletionStage<Void> DONE = CompletableFuture.<Void>completedFuture(null)
            .minimalCompletionStage();
    /**
     * Requests must end at or below this address: the top of user space on x86-64 with 5-level paging, the
     * widest of Linux's 64-bit layouts. Keeps every page-aligned end from overflowing.
     */
    static final long USER_SPACE_END = 1L << 56;
    private static final CompletableFuture<Void> DONE_FUTURE = CompletableFuture.completedFuture(null);
    /** Policy weights are in pages of this size, so a weight fits an int. */
    private static final long WEIGHT_UNIT = 4096;

    private final Registrar registrar;
    private final long alignment;
    private final Budget budget;
    private final MergePolicy mergePolicy;
    private final boolean widenRemote;
    /** Whether the budget can ever evict; if not, releases do not feed the policy (hits stay off Caffeine). */
    private final boolean bounded;
    private final LongSupplier nanoClock;
    private final LeakDetector leakDetector;
    /** Deliberate bugs for proofs that tests can fail (package-private; see {@link Fault}). */
    private final int faults;

    private volatile RegionIndex index = RegionIndex.EMPTY;
    /** Retired regions whose deregistration has not completed (leased, or about to be deregistered). */
    private volatile RegionIndex retiring = RegionIndex.EMPTY;
    private final ReentrantLock lock = new ReentrantLock();
    /** In-flight registrations; guarded by {@link #lock}. */
    private final List<PendingRegistration> pending = new ArrayList<>();
    /**
     * Retired regions whose deregistration failed and that no retry is attempting now; guarded by
     * {@link #lock}. They stay in {@link #retiring}, so every overlapping invalidation sees them.
     */
    private final List<Region> quarantine = new ArrayList<>();
    private final DeregistrationRetry retry;
    private volatile int pendingCount;
    private volatile boolean closed;
    private CompletableFuture<Void> closeCompletion; // guarded by lock

    private final Cache<Region, Region> policy;
    private final Policy.Eviction<Region, Region> policyEviction;
    /** Regions the policy retired, waiting to be unlinked and deregistered. */
    private final ConcurrentLinkedQueue<Region> evicted = new ConcurrentLinkedQueue<>();
    private final CacheMetrics metrics = new CacheMetrics();

    private RegistrationCache(Builder b) {
        this.registrar = b.registrar;
        this.alignment = b.alignment;
        this.budget = b.budget;
        this.mergePolicy = b.mergePolicy;
        this.widenRemote = b.widenRemote;
        this.bounded = !b.budget.equals(Budget.UNLIMITED);
        this.nanoClock = b.nanoClock;
        this.faults = b.faults;
        this.retry = b.retry;
        this.leakDetector = b.leakDetection
                ? new LeakDetector(b.leakListener, () -> metrics.increment(CacheCounter.LEAKED_LEASES))
                : null;
        long maxWeight = budget.maxPinnedBytes() == Long.MAX_VALUE
                ? (budget.maxRegions() == Integer.MAX_VALUE ? Long.MAX_VALUE : budget.maxRegions())
                : Math.max(1, budget.maxPinnedBytes() / WEIGHT_UNIT);
        boolean byBytes = budget.maxPinnedBytes() != Long.MAX_VALUE;
        this.policy = Caffeine.newBuilder()
                .maximumWeight(maxWeight)
                .<Region, Region>weigher((k, v) -> byBytes
                        ? (int) Math.min(Integer.MAX_VALUE, Math.max(1, (k.pinnedBytes + WEIGHT_UNIT - 1) / WEIGHT_UNIT))
                        : 1)
                .executor(Runnable::run)
                .evictionListener((Region k, Region v, RemovalCause cause) -> onPolicyEviction(k, cause))
                .build();
        this.policyEviction = policy.policy().eviction().orElseThrow();
    }

    public static Builder builder(Registrar registrar) {
        return new Builder(registrar);
    }

    // ------------------------------------------------------------------ acquire / release

    /**
     * Returns a lease whose registration covers {@code [address, address + length)} with at least
     * {@code access} rights ({@link Access} bits). A hit takes no lock. A miss registers outside every
     * lock; concurrent misses that one registration serves register once.
     *
     * @throws IllegalArgumentException on a non-positive length, a negative or overflowing range, or an empty
     *                                  or unknown access mask (the cache is unchanged)
     * @throws IllegalStateException    when the cache is closed
     * @throws RegistrationException    when the registrar fails ({@link PinnedMemoryExhaustedException} after
     *                                  ENOMEM recovery failed)
     */
    public Lease acquire(long address, long length, int access) {
        long end = checkRange("acquire", address, length);
        Access.validate(access);
        int stripe = Region.stripe();
        Region r = index.findServingUnchecked(address, end, access, widenRemote);
        int retained = r == null ? Region.NOT_RETAINED : r.tryRetainHit(stripe); // counts the hit in its cell
        if (retained != Region.RETAINED) {
            if (retained == Region.NOT_RETAINED_DEREGISTER) {
                deferredDeregister(r);
            }
            r = acquireSlow(address, end, access, stripe);
        }
        // the one allocation site: when the caller keeps the lease local, C2 can scalar-replace it
        return leakDetector == null ? new Lease(this, r, stripe, address, length, null)
                : trackedLease(r, stripe, address, length);
    }

    /** The miss path; returns the region with one lease taken for the caller on {@code stripe}. */
    private Region acquireSlow(long address, long end, int access, int stripe) {
        long length = end - address;
        for (;;) {
            drainEvicted();
            PendingRegistration p;
            boolean owner = false;
            Region backedOff = null;
            lock.lock();
            try {
                if (closed) {
                    throw new IllegalStateException("acquire(0x" + Long.toHexString(address) + ", " + length
                            + ") on a closed RegistrationCache: close() was called; build a new cache");
                }
                Region r = index.findServing(address, end, access, widenRemote);
                int retained = r == null ? Region.NOT_RETAINED : r.tryRetainHit(stripe);
                if (retained == Region.RETAINED) {
                    return r;
                }
                if (retained == Region.NOT_RETAINED_DEREGISTER) { // raced a retirement that left it to us
                    backedOff = r;
                }
                p = findPending(address, end, access);
                if (p == null) {
                    p = plan(address, end, access);
                    pending.add(p);
                    pendingCount = pending.size();
                    owner = true;
                }
            } finally {
                lock.unlock();
            }
            if (backedOff != null) {
                deferredDeregister(backedOff); // outside the lock, like every registrar call
            }
            Region r;
            if (owner) {
                metrics.increment(CacheCounter.MISSES);
                r = registerAndPublish(p, address, end, access); // holds one lease for us when non-null
            } else {
                metrics.increment(CacheCounter.SINGLE_FLIGHT_JOINS);
                r = p.await();
                if (r != null && !r.serves(address, end, access, widenRemote)) {
                    r = null; // the owner fell back to its own range or rights, which do not cover ours: retry
                }
                if (r != null) {
                    int retained = r.tryRetain(stripe);
                    if (retained == Region.NOT_RETAINED_DEREGISTER) {
                        deferredDeregister(r);
                    }
                    if (retained != Region.RETAINED) {
                        r = null; // invalidated right after publication: retry
                    }
                }
            }
            if (r != null) {
                return r;
            }
        }
    }

    private PendingRegistration findPending(long from, long to, int access) {
        for (PendingRegistration p : pending) {
            if (!p.doomed && p.serves(from, to, access, widenRemote)) {
                return p;
            }
        }
        return null;
    }

    /** Decides what a miss registers and which live regions it replaces. Under the lock. */
    private PendingRegistration plan(long address, long end, int access) {
        List<Region> supersedes = new ArrayList<>(2);
        if (Access.isRemote(access) && !widenRemote) {
            // exactly the requested bytes; replace only a narrower remote region of the same range
            for (Region r : index.overlapping(address, end)) {
                if (r.isLive() && r.isRemote() && r.start == address && r.end == end
                        && Access.includes(access, r.access)) {
                    supersedes.add(r);
                }
            }
            return new PendingRegistration(address, end, access, List.copyOf(supersedes), !supersedes.isEmpty());
        }
        long from = alignDown(address);
        long to = alignUp(end);
        int rights = access;
        boolean upgrade = false;
        long reach = mergePolicy == MergePolicy.OVERLAPPING_AND_ADJACENT ? 1 : 0;
        boolean grew = true;
        while (grew) { // a merge may widen the range onto more regions
            grew = false;
            for (Region r : index.overlapping(Math.max(0, from - reach), to + reach)) {
                if (!r.isLive() || supersedes.contains(r) || (r.isRemote() && !widenRemote)) {
                    continue;
                }
                boolean covers = r.start <= address && r.end >= end; // [ ( ) ]: lacks rights, else it hit
                if (mergePolicy == MergePolicy.NONE && !covers) {
                    continue;
                }
                upgrade |= covers;
                supersedes.add(r);
                from = Math.min(from, r.start);
                to = Math.max(to, r.end);
                rights |= r.access;
                grew = true;
            }
        }
        return new PendingRegistration(from, to, rights, List.copyOf(supersedes), upgrade);
    }

    /**
     * Registers a planned entry outside the lock and publishes it unless doomed; null means retry. Whatever
     * the registrar throws (an {@code Error} included) removes the entry, fails every joiner with that same
     * exception and completes every stage waiting on it before it reaches the caller.
     */
    private Region registerAndPublish(PendingRegistration p, long address, long end, int access) {
        RegistrationEvent event = new RegistrationEvent();
        event.begin();
        long started = nanoClock.getAsLong();
        Registration reg;
        try {
            reg = registerPlanned(p, address, end, access);
            if (reg == null) {
                throw new IllegalStateException("registrar " + registrar.getClass().getName()
                        + " returned null for [0x" + Long.toHexString(p.start) + ", 0x" + Long.toHexString(p.end)
                        + ") " + Access.describe(p.access) + ": register must return a registration or throw");
            }
        } catch (Throwable t) {
            RuntimeException unchecked = t instanceof RuntimeException re ? re : null;
            Error error = t instanceof Error er ? er : null;
            if (unchecked == null && error == null) { // a checked exception thrown sneakily
                unchecked = new RegistrationException("registrar " + registrar.getClass().getName()
                        + " threw a checked exception: " + t, 0, t);
            }
            lock.lock();
            try {
                removePending(p);
            } finally {
                lock.unlock();
            }
            metrics.increment(CacheCounter.REGISTRATION_FAILURES);
            p.failed(error != null ? error : unchecked, DONE_FUTURE);
            commit(event, p, "failed");
            if (error != null) {
                throw error;
            }
            throw unchecked;
        }
        long pinned = pagesSpan(reg.address(), reg.end());
        metrics.registered(pinned, nanoClock.getAsLong() - started, reg.length());
        Region region = new Region(reg, pinned, 1);
        String wrong = wrongResult(p, address, end, access, reg);
        List<Region> superseded = List.of();
        List<Region> toDeregister = List.of();
        boolean publish;
        lock.lock();
        try {
            publish = wrong == null && (!p.doomed || hasFault(Fault.PUBLISH_DOOMED))
                    && (!closed || hasFault(Fault.CLOSE_SKIPS_PENDING));
            if (publish) {
                superseded = p.supersedes.stream().filter(index::contains).toList();
                retiring = retiring.withAll(superseded);
                index = index.with(region, superseded);
                toDeregister = retireAll(superseded);
            } else {
                region.retire();
                retiring = retiring.withAll(List.of(region));
            }
            removePending(p); // last: the free-hook fast path reads pendingCount before the indexes
        } finally {
            lock.unlock();
        }
        if (!publish) {
            CompletableFuture<Void> firstAttempt = region.deregistration();
            if (region.release(Region.stripe())) { // never published: our lease was the only one
                deregister(region);
            }
            if (wrong != null) {
                IllegalStateException e = new IllegalStateException(wrong);
                metrics.increment(CacheCounter.REGISTRATION_FAILURES);
                commit(event, p, "failed");
                p.failed(e, firstAttempt);
                throw e;
            }
            metrics.increment(CacheCounter.DISCARDED_IN_FLIGHT);
            commit(event, p, "discarded");
            p.discarded(firstAttempt);
            return null;
        }
        commit(event, p, "published");
        if (!superseded.isEmpty()) {
            metrics.increment(p.upgrade ? CacheCounter.ACCESS_UPGRADES : CacheCounter.MERGES);
            superseded.forEach(this::policyRemove);
        }
        policyPut(region); // Caffeine may evict here (TinyLFU admission), the new region included
        deregisterAll(toDeregister);
        p.published(region);
        drainEvicted();
        if (makeRoom()) {
            metrics.increment(CacheCounter.BUDGET_OVERRUNS);
        }
        return region;
    }

    /**
     * Registers the plan; when the plan was widened (merged with other regions, or given the union of rights)
     * and the registrar refuses it with anything but ENOMEM (EFAULT or EACCES when part of the wider range has
     * another page protection), registers the request's own range and rights alone, replacing nothing.
     */
    private Registration registerPlanned(PendingRegistration p, long address, long end, int access) {
        try {
            return registerRecovering(p);
        } catch (RegistrationException e) {
            boolean exact = Access.isRemote(access) && !widenRemote;
            long ownFrom = exact ? address : alignDown(address);
            long ownTo = exact ? end : alignUp(end);
            boolean widened;
            lock.lock();
            try {
                widened = p.widerThan(ownFrom, ownTo, access);
                if (widened && e.errno() != RegistrationException.ENOMEM) {
                    p.narrowTo(ownFrom, ownTo, access);
                }
            } finally {
                lock.unlock();
            }
            if (!widened || e.errno() == RegistrationException.ENOMEM) {
                throw e;
            }
            metrics.increment(CacheCounter.WIDENING_FALLBACKS);
            try {
                return registerRecovering(p);
            } catch (RuntimeException | Error again) {
                again.addSuppressed(e);
                throw again;
            }
        }
    }

    private Registration registerRecovering(PendingRegistration p) {
        long length = p.end - p.start;
        try {
            return registrar.register(p.start, length, p.access);
        } catch (RegistrationException e) {
            if (e.errno() != RegistrationException.ENOMEM) {
                throw e;
            }
            int evictedCount = evictIdle();
            try {
                Registration reg = registrar.register(p.start, length, p.access);
                metrics.increment(CacheCounter.ENOMEM_RECOVERIES);
                return reg;
            } catch (RegistrationException again) {
                if (again.errno() != RegistrationException.ENOMEM) {
                    throw again;
                }
                throw new PinnedMemoryExhaustedException(exhaustedMessage(p, evictedCount), metrics.pinnedBytes.get(),
                        again);
            }
        }
    }

    private String exhaustedMessage(PendingRegistration p, int evictedCount) {
        long limit = registrar.memlockLimit();
        return String.format("registering %,d bytes at 0x%x (%s) failed with ENOMEM, also after evicting %d idle"
                + " regions and retrying: this cache holds %,d bytes pinned in %,d regions (budget %s bytes, %s"
                + " regions), RLIMIT_MEMLOCK is %s. Raise RLIMIT_MEMLOCK (ulimit -l, or 'memlock' in"
                + " /etc/security/limits.conf), set the cache budget below it, or release leases sooner.",
                p.end - p.start, p.start, Access.describe(p.access), evictedCount, metrics.pinnedBytes.get(),
                metrics.regions.get(), bound(budget.maxPinnedBytes()), bound(budget.maxRegions()),
                limit < 0 ? "unknown to this registrar" : String.format("%,d bytes", limit));
    }

    private static String bound(long v) {
        return v == Long.MAX_VALUE || v == Integer.MAX_VALUE ? "unlimited" : String.format("%,d", v);
    }

    /**
     * Why the registrar's result cannot serve the request or the plan (the request's own range and rights are
     * checked, never only the plan), or null when it can.
     */
    private String wrongResult(PendingRegistration p, long address, long end,
            int access, Registration reg) {
        if (reg.address() <= address && reg.end() >= end && reg.address() <= p.start
                && reg.end() >= p.end && Access.includes(reg.access(), p.access)
                && Access.includes(reg.access(), access) && reg.length() > 0) {
            return null;
        }
        return "registrar " + registrar.getClass().getName() + " returned " + reg + " for a request of [0x"
                + Long.toHexString(address) + ", 0x" + Long.toHexString(end) + ") " + Access.describe(access)
                + " (planned [0x" + Long.toHexString(p.start) + ", 0x" + Long.toHexString(p.end) + ") "
                + Access.describe(p.access) + "): a registration must cover the range with the rights;"
                + " the cache deregistered it and fails this acquire";
    }

    private void removePending(PendingRegistration p) {
        pending.remove(p);
        pendingCount = pending.size();
    }

    /** Called by {@link Lease#close()}. */
    void release(Region r, int stripe) {
        if (r.release(stripe)) {
            deferredDeregister(r);
            return;
        }
        if (!bounded || !r.isIdle()) {
            return; // without a budget there is no policy to inform and nothing to evict
        }
        if (r.untracked) { // the policy dropped it while leased: re-enter now that it is idle
            r.untracked = false;
            policy.put(r, r);
            if (!r.isLive()) {
                policy.invalidate(r);
            }
        } else {
            policy.getIfPresent(r); // records the access
        }
        drainEvicted();
        makeRoom();
    }

    /** The deregistration left to the last release (or to a backed-off acquire) of a retired region. */
    private void deferredDeregister(Region r) {
        metrics.increment(CacheCounter.DEFERRED_DEREGISTRATIONS);
        deregister(r);
    }

    private Lease trackedLease(Region r, int stripe, long address, long length) {
        LeakDetector.Tracker tracker = leakDetector.newTracker(address, length, r.access);
        Lease lease = new Lease(this, r, stripe, address, length, tracker);
        tracker.watch(lease);
        return lease;
    }

    // ------------------------------------------------------------------ invalidation

    /**
     * Unlinks every region overlapping {@code [address, address + length)} and dooms overlapping in-flight
     * registrations. The returned stage completes when all of them are deregistered (I3): only then may the
     * memory be reused. Idempotent; when nothing overlaps it takes no lock and allocates nothing.
     * It completes exceptionally if a deregistration failed (the memory must then not be reused).
     *
     * @throws IllegalArgumentException on a non-positive length or a negative or overflowing range
     */
    public CompletionStage<Void> invalidate(long address, long length) {
        long end = checkRange("invalidate", address, length);
        // read order matters: see "Free-hook fast path" in the class comment
        if (pendingCount == 0 && !index.overlapsAny(address, end)
                && (!retiring.overlapsAny(address, end) || hasFault(Fault.IGNORE_RETIRING))) {
            return DONE;
        }
        return invalidateSlow(address, end);
    }

    /** {@link #invalidate} and wait for its completion; rethrows a failed deregistration. */
    public void invalidateAndWait(long address, long length) {
        await(invalidate(address, length));
    }

    private CompletionStage<Void> invalidateSlow(long address, long end) {
        InvalidationEvent event = new InvalidationEvent();
        event.begin();
        List<CompletableFuture<Void>> waits = new ArrayList<>();
        List<Region> gone;
        List<Region> toDeregister;
        int doomed = 0;
        lock.lock();
        try {
            gone = index.overlapping(address, end);
            if (!hasFault(Fault.SKIP_UNLINK)) {
                retiring = retiring.withAll(gone);
                index = index.with(null, gone);
                toDeregister = retireAll(gone);
            } else {
                gone = List.of();
                toDeregister = List.of();
            }
            for (Region r : retiring.overlapping(address, end)) { // quarantined ones too
                if (!hasFault(Fault.IGNORE_RETIRING) || gone.contains(r)) {
                    waits.add(r.deregistration());
                }
            }
            for (PendingRegistration p : pending) {
                if (p.overlaps(address, end)) {
                    if (!p.doomed) {
                        doomed++;
                    }
                    p.doomed = true;
                    waits.add(p.settled);
                }
            }
        } finally {
            lock.unlock();
        }
        if (!gone.isEmpty() || doomed > 0) {
            metrics.increment(CacheCounter.INVALIDATIONS);
            metrics.add(CacheCounter.INVALIDATED_REGIONS, gone.size());
        }
        gone.forEach(this::policyRemove);
        deregisterAll(toDeregister);
        if (event.shouldCommit()) {
            event.address = address;
            event.length = end - address;
            event.regions = gone.size();
            event.inFlight = doomed;
            event.commit();
        }
        if (hasFault(Fault.COMPLETE_EARLY)) {
            return DONE;
        }
        return allDeregistered("invalidate [0x" + Long.toHexString(address) + ", 0x" + Long.toHexString(end) + ")",
                waits);
    }

    /**
     * A stage that completes when every wait has: normally when all deregistrations succeeded, else
     * exceptionally with a {@link DeregistrationException} that names {@code what} and every registration
     * whose keys are still live. Never normally while such a key is live (I3).
     */
    private static CompletionStage<Void> allDeregistered(String what, List<CompletableFuture<Void>> waits) {
        if (waits.isEmpty()) {
            return DONE;
        }
        return CompletableFuture.allOf(waits.toArray(CompletableFuture[]::new)).handle((ok, failure) -> {
            if (failure == null) {
                return null;
            }
            List<Registration> live = new ArrayList<>();
            List<String> causes = new ArrayList<>();
            int errno = 0;
            for (CompletableFuture<Void> w : waits) {
                if (w.isCompletedExceptionally()) {
                    Throwable cause = w.exceptionNow();
                    if (cause instanceof DeregistrationException de) {
                        live.addAll(de.stillRegistered());
                        errno = errno == 0 ? de.errno() : errno;
                        causes.add(String.valueOf(de.getCause()));
                    } else {
                        causes.add(String.valueOf(cause));
                    }
                }
            }
            throw new DeregistrationException(what + " did not complete: the deregistration of " + live
                    + " failed (errno " + errno + ": " + String.join("; ", causes) + "), so their keys are still"
                    + " live at the NIC. Do not reuse this memory; the cache keeps them quarantined and retries"
                    + " (see retryQuarantined()).", errno, live, failure instanceof CompletionException ce
                            && ce.getCause() != null ? ce.getCause() : failure);
        });
    }

    /** Retires unlinked regions (already moved to {@link #retiring}); returns the idle ones to deregister. */
    private List<Region> retireAll(List<Region> gone) {
        List<Region> idle = new ArrayList<>(gone.size());
        for (Region r : gone) {
            if (r.retire()) {
                idle.add(r);
            }
        }
        return idle;
    }

    // ------------------------------------------------------------------ eviction

    private void onPolicyEviction(Region r, RemovalCause cause) {
        if (!cause.wasEvicted()) {
            return;
        }
        if (r.tryRetireIdle() || (hasFault(Fault.EVICT_LEASED) && r.isLive() && r.forceRetireForFault())) {
            evicted.add(r);
        } else if (r.isLive()) {
            r.untracked = true;
        }
    }

    /**
     * Evicts the policy's coldest idle regions until the cache is within both bounds of the budget. Caffeine
     * enforces one bound itself at each put; this covers the other, and regions that were leased when
     * Caffeine chose them.
     *
     * @return true when the cache is still over budget (every remaining region is leased)
     */
    private boolean makeRoom() {
        // a loop: an evicted region whose deregistration fails stays pinned (quarantined), so more must go
        while (budget.exceededBy(metrics.pinnedBytes.get(), metrics.regions.get())) {
            long excessBytes = metrics.pinnedBytes.get() - budget.maxPinnedBytes();
            long excessRegions = metrics.regions.get() - budget.maxRegions();
            List<Region> victims = policyEviction.coldest(stream -> {
                List<Region> picked = new ArrayList<>();
                long freedBytes = 0;
                var it = stream.iterator();
                while (it.hasNext() && (freedBytes < excessBytes || picked.size() < excessRegions)) {
                    Region r = it.next().getKey();
                    if (r.isIdle()) {
                        picked.add(r);
                        freedBytes += r.pinnedBytes;
                    }
                }
                return picked;
            });
            int retired = 0;
            for (Region r : victims) {
                if (r.tryRetireIdle()) {
                    evicted.add(r);
                    retired++;
                }
            }
            drainEvicted();
            if (retired == 0) {
                return true; // every remaining region is leased (or quarantined)
            }
        }
        return false;
    }

    /**
     * Evicts every idle region (for example before a fork, or to give memory back).
     *
     * @return how many regions were evicted
     */
    public int evictIdle() {
        int n = 0;
        for (Region r : index.all()) {
            if (r.tryRetireIdle()) {
                evicted.add(r);
                n++;
            }
        }
        drainEvicted();
        return n;
    }

    /** Unlinks and deregisters regions the policy retired. Outside every lock. */
    private void drainEvicted() {
        if (evicted.isEmpty()) {
            return;
        }
        List<Region> batch = new ArrayList<>();
        for (Region r; (r = evicted.poll()) != null;) {
            batch.add(r);
        }
        if (batch.isEmpty()) {
            return;
        }
        lock.lock();
        try {
            // an invalidation may have unlinked some already (and put them in retiring): move only the rest
            List<Region> linked = batch.stream().filter(index::contains).toList();
            retiring = retiring.withAll(linked);
            index = index.with(null, linked);
        } finally {
            lock.unlock();
        }
        for (Region r : batch) {
            metrics.increment(CacheCounter.EVICTIONS);
            policyRemove(r);
            EvictionEvent event = new EvictionEvent();
            if (event.shouldCommit()) {
                event.address = r.start;
                event.length = r.end - r.start;
                event.reason = "budget";
                event.commit();
            }
            deregister(r); // tryRetireIdle won the claim (or, in the broken variant, the forced retirement did)
        }
    }

    // ------------------------------------------------------------------ deregistration

    private void deregisterAll(List<Region> regions) {
        for (Region r : regions) {
            deregister(r);
        }
    }

    /**
     * One deregistration attempt of a retired region; called by whoever the state word elected, or by a retry
     * that took it out of the quarantine. Never throws: whatever the registrar throws, its keys are still live,
     * so the region stays in {@link #retiring} and enters the {@link #quarantine}, the stages waiting on this
     * attempt complete exceptionally, and a retry is scheduled.
     */
    private void deregister(Region r) {
        Throwable failure = null;
        try {
            registrar.deregister(r.registration);
        } catch (Throwable t) {
            failure = t;
        }
        if (failure == null) {
            metrics.deregistered(r.pinnedBytes);
            lock.lock();
            try {
                retiring = retiring.with(null, List.of(r));
                metrics.add(CacheCounter.HITS, r.hits()); // final: a retired region takes no more hits
            } finally {
                lock.unlock();
            }
            r.deregistration().complete(null);
            return;
        }
        metrics.increment(CacheCounter.DEREGISTRATION_FAILURES);
        CompletableFuture<Void> failedAttempt;
        long retryDelay;
        lock.lock();
        try {
            failedAttempt = r.startRetry();
            retryDelay = retry.delayNanos(r.failedDeregistrations);
            quarantine.add(r);
        } finally {
            lock.unlock();
        }
        if (hasFault(Fault.COMPLETE_AFTER_FAILED_DEREGISTRATION)) {
            failedAttempt.complete(null);
        } else {
            failedAttempt.completeExceptionally(DeregistrationException.of(r.registration, failure));
        }
        if (retry.automatic()) {
            CompletableFuture.delayedExecutor(retryDelay, TimeUnit.NANOSECONDS).execute(() -> retryOne(r));
        }
    }

    private void retryOne(Region r) {
        boolean taken;
        lock.lock();
        try {
            taken = quarantine.remove(r); // a manual retry may have taken it first
        } finally {
            lock.unlock();
        }
        if (taken) {
            metrics.increment(CacheCounter.DEREGISTRATION_RETRIES);
            deregister(r);
        }
    }

    /**
     * Attempts once more, now, the deregistration of every quarantined registration (each one whose
     * deregistration failed). A success completes the stages waiting for it; a failure completes them
     * exceptionally and keeps the registration quarantined. Automatic retries (the default
     * {@link DeregistrationRetry}) make calling this optional.
     *
     * @return how many registrations are still quarantined afterwards
     */
    public int retryQuarantined() {
        List<Region> batch;
        lock.lock();
        try {
            batch = new ArrayList<>(quarantine);
            quarantine.clear();
        } finally {
            lock.unlock();
        }
        for (Region r : batch) {
            metrics.increment(CacheCounter.DEREGISTRATION_RETRIES);
            deregister(r);
        }
        lock.lock();
        try {
            return quarantine.size();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Registrations whose deregistration failed and is waiting for a retry: their keys are still live, and
     * the memory they cover must not be reused.
     */
    public List<Registration> quarantined() {
        lock.lock();
        try {
            return quarantine.stream().map(r -> r.registration).toList();
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ close

    /**
     * Closes the cache: later acquires fail, every region is retired and every in-flight registration
     * doomed. The stage completes when everything is deregistered (leases still held are waited for).
     */
    public CompletionStage<Void> closeAsync() {
        List<Region> toDeregister;
        List<Region> gone;
        CompletableFuture<Void> done;
        lock.lock();
        try {
            if (closeCompletion != null) {
                return closeCompletion.minimalCompletionStage();
            }
            closed = true;
            gone = index.all();
            retiring = retiring.withAll(gone);
            index = RegionIndex.EMPTY;
            toDeregister = retireAll(gone);
            List<CompletableFuture<Void>> waits = new ArrayList<>();
            for (Region r : retiring.all()) { // quarantined ones too: close retries them once below
                waits.add(r.deregistration());
            }
            for (PendingRegistration p : pending) {
                if (!hasFault(Fault.CLOSE_SKIPS_PENDING)) {
                    p.doomed = true;
                    waits.add(p.settled);
                }
            }
            done = allDeregistered("close", waits).toCompletableFuture();
            closeCompletion = done;
        } finally {
            lock.unlock();
        }
        gone.forEach(this::policyRemove);
        deregisterAll(toDeregister);
        drainEvicted();
        retryQuarantined(); // so that close reports, rather than waits for, a registrar that keeps failing
        return done.minimalCompletionStage();
    }

    /**
     * {@link #closeAsync()} and wait. Release this thread's leases first: the wait includes them.
     *
     * @throws DeregistrationException when a registration could not be deregistered (it stays quarantined,
     *                                 listed by {@link #quarantined()}, and {@link #retryQuarantined()} still
     *                                 works after close)
     */
    @Override
    public void close() {
        await(closeAsync());
    }

    public boolean isClosed() {
        return closed;
    }

    // ------------------------------------------------------------------ metrics and introspection

    /**
     * A snapshot of the metrics. Hits live in the regions' lease words until a region is deregistered, so
     * the snapshot sums them under the index lock.
     */
    public MetricsSnapshot metrics() {
        long liveHits = 0;
        long quarantined;
        lock.lock();
        try {
            quarantined = quarantine.size();
            for (Region r : index.all()) {
                liveHits += r.hits();
            }
            for (Region r : retiring.all()) {
                liveHits += r.hits();
            }
        } finally {
            lock.unlock();
        }
        return metrics.snapshot(liveHits, quarantined);
    }

    /** Registrations in flight now (tests check that a failure never leaves one behind). */
    int inFlightCount() {
        return pendingCount;
    }

    /** Regions retired and not yet deregistered (tests check it drains to zero). */
    int retiringCount() {
        return retiring.size();
    }

    public long pinnedBytes() {
        return metrics.pinnedBytes.get();
    }

    /** Published (acquirable) regions now. */
    public int regionCount() {
        return index.size();
    }

    public Budget budget() {
        return budget;
    }

    public long alignment() {
        return alignment;
    }

    /** A copy of the published registrations, for diagnostics. */
    public List<Registration> registrations() {
        return index.all().stream().map(r -> r.registration).toList();
    }

    @Override
    public String toString() {
        return "RegistrationCache[regions=" + index.size() + ", pinnedBytes=" + metrics.pinnedBytes.get()
                + ", closed=" + closed + "]";
    }

    // ------------------------------------------------------------------ helpers

    private static long checkRange(String op, long address, long length) {
        if (length <= 0) {
            throw new IllegalArgumentException(op + "(0x" + Long.toHexString(address) + ", " + length
                    + "): length " + length + " must be > 0");
        }
        if (address < 0) {
            throw new IllegalArgumentException(op + ": address " + address + " (0x" + Long.toHexString(address)
                    + ") is negative; user-space virtual addresses are below 2^63");
        }
        long end = address + length;
        if (end < 0 || end > USER_SPACE_END) {
            throw new IllegalArgumentException(String.format("%s(0x%x, %d): the range ends at %s, past 0x%x, the top"
                    + " of user-space virtual addresses (2^56); pass an address and length your allocator gave you",
                    op, address, length, end < 0 ? "more than 2^63 (address + length overflows)" : "0x" + Long.toHexString(end),
                    USER_SPACE_END));
        }
        return end;
    }

    private long alignDown(long a) {
        return a & -alignment;
    }

    /** No overflow: {@link #checkRange} keeps ends at or below {@link #USER_SPACE_END}. */
    private long alignUp(long a) {
        return (a + alignment - 1) & -alignment;
    }

    private long pagesSpan(long from, long to) {
        return alignUp(to) - alignDown(from);
    }

    private static void commit(RegistrationEvent event, PendingRegistration p, String outcome) {
        if (event.shouldCommit()) {
            event.address = p.start;
            event.length = p.end - p.start;
            event.access = Access.describe(p.access);
            event.outcome = outcome;
            event.commit();
        }
    }

    private static void await(CompletionStage<Void> stage) {
        try {
            stage.toCompletableFuture().join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw e;
        }
    }

    /** The policy only matters with a budget: without one nothing is evicted, so misses skip Caffeine. */
    private void policyPut(Region r) {
        if (bounded) {
            policy.put(r, r);
        }
    }

    private void policyRemove(Region r) {
        if (bounded) {
            policy.invalidate(r);
        }
    }

    private boolean hasFault(Fault f) {
        return (faults & f.bit) != 0;
    }

    /**
     * Deliberate bugs, each disabling one safety step, so that tests and jcstress can show that they catch
     * it. Package-private: no user can reach them.
     */
    enum Fault {
        /** H4: publish an in-flight registration even when an overlapping invalidation doomed it. */
        PUBLISH_DOOMED,
        /** H1: invalidate does not unlink overlapping regions. */
        SKIP_UNLINK,
        /** I3: invalidate's stage completes before deferred deregistrations. */
        COMPLETE_EARLY,
        /** H5: the policy evicts and deregisters a leased region, skipping the idle compare-and-set. */
        EVICT_LEASED,
        /** close vs acquire: close does not doom in-flight registrations, which then publish into a closed cache. */
        CLOSE_SKIPS_PENDING,
        /** invalidate vs invalidate: an invalidation ignores regions another one is still deregistering. */
        IGNORE_RETIRING,
        /** I3: a failed deregistration completes the waiting stages normally, though its keys are still live. */
        COMPLETE_AFTER_FAILED_DEREGISTRATION;

        final int bit = 1 << ordinal();
    }

    /** Builds a {@link RegistrationCache}. */
    public static final class Builder {
        private final Registrar registrar;
        private long alignment = 4096;
        private Budget budget = Budget.UNLIMITED;
        private MergePolicy mergePolicy = MergePolicy.OVERLAPPING;
        private boolean widenRemote;
        private LongSupplier nanoClock = System::nanoTime;
        private boolean leakDetection;
        private Consumer<LeakReport> leakListener = LeakDetector::printToStderr;
        private int faults;
        private DeregistrationRetry retry = DeregistrationRetry.DEFAULT;

        private Builder(Registrar registrar) {
            this.registrar = Objects.requireNonNull(registrar, "registrar");
        }

        /** Local regions are widened to this power of two (default 4096, the x86-64 page size). */
        public Builder alignment(long alignment) {
            if (alignment <= 0 || Long.bitCount(alignment) != 1) {
                throw new IllegalArgumentException("alignment " + alignment
                        + " must be a power of two > 0, usually the page size (4096)");
            }
            this.alignment = alignment;
            return this;
        }

        public Builder budget(Budget budget) {
            this.budget = Objects.requireNonNull(budget, "budget");
            return this;
        }

        public Builder mergePolicy(MergePolicy mergePolicy) {
            this.mergePolicy = Objects.requireNonNull(mergePolicy, "mergePolicy");
            return this;
        }

        /**
         * Lets remote regions merge and serve requests with fewer remote rights, like local ones. This
         * WIDENS EXPOSURE: an rkey may then open bytes and rights to peers that no request asked to open
         * (it gives up invariant I6). Off by default.
         */
        public Builder allowRemoteMerging(boolean allow) {
            this.widenRemote = allow;
            return this;
        }

        /** The clock for registration latency, in nanoseconds (tests pass a fake). */
        public Builder clock(LongSupplier nanoClock) {
            this.nanoClock = Objects.requireNonNull(nanoClock, "clock");
            return this;
        }

        /** Reports leases garbage-collected without release, with their acquire stack (costs a stack per acquire). */
        public Builder leakDetection(boolean on) {
            this.leakDetection = on;
            return this;
        }

        /** Where leak reports go (default: standard error). */
        public Builder leakListener(Consumer<LeakReport> listener) {
            this.leakListener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * When failed deregistrations are retried (default {@link DeregistrationRetry#DEFAULT}: automatically,
         * with backoff from 10 ms to 5 s). Until then each stays quarantined; see {@link DeregistrationRetry}.
         */
        public Builder deregistrationRetry(DeregistrationRetry retry) {
            this.retry = Objects.requireNonNull(retry, "retry");
            return this;
        }

        /** Test seam: enables deliberate bugs. Package-private on purpose. */
        Builder faults(Fault... enabled) {
            for (Fault f : enabled) {
                faults |= f.bit;
            }
            return this;
        }

        public RegistrationCache build() {
            return new RegistrationCache(this);
        }
    }
}
