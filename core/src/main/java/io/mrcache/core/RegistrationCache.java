package io.mrcache.core;

import io.mrcache.core.events.InvalidationEvent;
import io.mrcache.core.events.RegistrationEvent;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.HdrHistogram.Histogram;
import org.jspecify.annotations.Nullable;

/**
 * An interval-keyed cache of memory registrations: {@link #acquire} a {@link Lease} for (address, length,
 * access), {@link Lease#close() release} it, and {@link #invalidate} ranges from allocator free hooks.
 *
 * <h2>Contract (postconditions; the invariants of docs/SAFETY-MODEL.md)</h2>
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
 * <p>The tables live in {@link RegionTables}: the index, the retiring index, the in-flight registrations, the
 * front table and the lock. Read without a lock: the index, an immutable {@link RegionIndex} published through a
 * volatile field, and each {@link Region}'s state word (RETIRED, EVICTING, CLAIMED bits) and striped lease
 * cells. A hit is a probe of the {@link FrontTable} (a hint for repeated requests; where it has no answer, one
 * volatile read of the index and a walk down its B+-tree, a branch-free binary search over each node's arrays,
 * two or three nodes deep at thousands of regions, and a scan of the few regions added since the tree last took
 * any), then one atomic add on the calling thread's lease cell of the region and one read of its state word
 * ({@link Region#tryRetainHit}: a volatile add, then a volatile read), which backs off once the region is
 * retired. A region found through the hint, like one found through an old index, is only ever retained through
 * that same check. Two threads hitting the same region write different cache lines.
 *
 * <p>Written under the lock ({@link RegionTables#lock}) only: the index, the index of
 * retired-but-not-yet-deregistered regions (the retiring index) and the list of in-flight registrations, and
 * the deregistrar's quarantine. No registrar call is ever made under the lock: {@code register}/{@code deregister} run outside
 * it, so a slow {@code ibv_reg_mr} never blocks hits, other misses' planning, or free hooks. No
 * eviction-policy call is made under the lock either: a publication tells the policy of its region just before
 * it takes the lock (Caffeine's put, which evicts inline on the calling thread; its listener only claims idle
 * victims and takes none of the cache's locks), and the victims returned leave in the same index copy as the
 * region that displaced them, or in the same hold if the publication is then discarded, which takes its region
 * out of the policy again. Until its lock the region is in the policy and not in the index: leased by its
 * owner, so no eviction takes it. The regions a merge supersedes leave the policy after the lock, retired
 * already, as an invalidation's do. Index updates copy one root-to-leaf path, O(log n). The policy's writes
 * and walks take its own lock ({@link EvictionPolicy}), never while holding the cache's: under it only Caffeine
 * runs, whose listener takes no lock.
 *
 * <p>Publication against invalidation. Every way out of the index (invalidate, eviction, merge, access
 * upgrade, close) first swaps in a new index without the region, under the lock, and then sets its RETIRED
 * bit and sums its lease cells. A reader holding the old index adds to its cell before it reads the state
 * word, and the retirer sets the bit before it reads the cells: either the reader saw the region live (its
 * lease is then in the retirer's sum, and the deregistration waits for its release: I2, I3) or it sees
 * RETIRED, backs off and retries on the slow path, which sees the new index. So once {@code invalidate(r)} has returned, an acquire that
 * starts later can neither find nor retain a region retired by it (I1). A miss registers an in-flight
 * entry added under the lock; {@code invalidate} marks every overlapping pending entry doomed
 * under the same lock; the owner checks the mark under the lock before publishing. Hence a registration
 * that overlaps an invalidation which took the lock after the registration was planned is never published
 * (H4) and is deregistered before the invalidation's stage completes.
 *
 * <p>Exactly-once deregistration. After RETIRED is set, whoever may have brought the lease sum to zero (the
 * retirer, each release, an acquire backing off) sums the cells and, on zero, competes for the CLAIMED bit
 * with a compare-and-set; the one winner deregisters (I2, I4). Eviction first sets EVICTING (acquires back
 * off as from a retired region), then sums: zero proves the region idle and it is retired, anything else and
 * the eviction withdraws, so it never takes a region from under a concurrent acquire (H5). An invalidation
 * that wins the claim of a region it unlinked waits on no outcome of it: its own attempt, made before its
 * stage is built, is the outcome (I3 holds: the stage is built after the keys died, or fails naming them);
 * other invalidations of the range wait on the region's outcome as usual. The protocol is
 * drawn in {@link Region}'s comment; the jcstress races exercise each side of it.
 *
 * <p>Owner-bound regions. A region registered through {@link #acquire(MemorySegment, int)} or
 * {@link #acquire(ByteBuffer, int)} references its owner weakly ({@link OwnerRef}, kept with the rare counts) and a
 * bit in its shape byte says so; every lookup (front table, index, in-flight entry, joiner) serves a request only
 * from a region of the same owner object, or, for an address-keyed request, from a region with none. The requester
 * holds its owner, so a match proves the owner was not collected; the argument is in docs/SAFETY-MODEL.md (F1).
 * Regions of collected or closed owners leave through {@link #ownersGone}, which unlinks and retires them in one
 * hold of the lock, as an invalidation does; the {@link OwnerReaper} thread and owner-bound misses call it.
 *
 * <p>Free-hook fast path. {@code invalidate} of a range that nothing overlaps takes no lock and allocates
 * nothing: it reads the in-flight count, then the index, then the retiring index. Writers publish in the
 * opposite order (a published region enters the index before it leaves the in-flight count; a retired region
 * enters the retiring index before it leaves the index), so a region that existed when the invalidate began
 * is seen by one of the three reads ({@link RegionTables#nothingOverlaps}).
 *
 * <h2>Failure paths</h2>
 * <ul>
 * <li><b>register throws</b> anything (a {@link RegistrationException}, another runtime exception, an
 * {@code Error}): the in-flight entry leaves the in-flight list under the lock, every single-flight joiner
 * rethrows the owner's exception object itself, and the stages of invalidations and of close that waited on
 * the entry complete (nothing was registered). The cache stays usable.
 * <li><b>A widened registration is refused</b> (merged range or union of rights; EFAULT or EACCES where part
 * of the wider range has another page protection): the owner narrows its entry under the lock to the
 * request's own range and rights, replacing nothing, and registers again; only that failure fails the
 * acquire (the first is attached as suppressed). ENOMEM instead evicts idle regions and retries once (I8).
 * <li><b>deregister throws</b>: the keys are still live, so the region is never forgotten. It stays in
 * the retiring index (every later overlapping invalidation sees it: no fast path past it) and enters
 * the {@link Deregistrar}'s quarantine; the stages that waited for the attempt complete exceptionally with a
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
 * that leaves a region idle records the access: every one until its lease word has counted 64 hits, then one in
 * four ({@link Region#recordsRelease}), or every one ({@link Builder#sampledAccessRecording}). Without a budget
 * nothing is ever evicted, so an unbounded cache keeps Caffeine out of hits and misses altogether. When Caffeine
 * evicts an entry (its admission may reject the new region itself), the listener retires it only if
 * {@link Region#tryRetireIdle} proves it idle; a victim it cannot evict (leased, or marked by another evictor
 * that may yet withdraw) stays cached, marked, and re-enters the policy when it is next idle, put back by
 * whichever thread sees it idle last (see {@link EvictionPolicy#becameIdle}). After each registration, and after
 * each release while the last walk left the cache over budget (every region it could take was leased),
 * {@link EvictionPolicy#makeRoom} walks Caffeine's coldest entries to get back within both bounds (bytes and
 * count); see {@link EvictionPolicy}. The walk counts only settled registrations: one between its register call
 * and the end of its publication (or discard) is left to its own thread, which reads the budget again once it
 * has settled, so a release elsewhere never evicts for it.
 * Every write to the policy completes Caffeine's maintenance (where it evicts) before it lets go of the policy
 * lock, so the victims of a write are chosen in it, and they are that thread's: a publication's leave the index
 * in the publication's own copy, a walk's before it reads the budget again; all are deregistered outside every
 * lock. A release that drains Caffeine's recorded reads finds nothing to evict, and nobody else's victims to
 * unlink under the cache's lock.
 *
 * <h2>Where the parts live</h2>
 * <p>This class keeps the API and the protocol above: what happens under the lock, and in which order.
 * {@link RegionTables} holds what the protocol moves (the index, the retiring index, the in-flight
 * registrations, the front table, the lock) and does each publication and retirement in the order this
 * comment relies on; {@link MissPlanner} decides what a miss registers; {@link RegistrationRecovery} calls
 * the registrar and recovers from ENOMEM and refused widening; {@link Deregistrar} makes each deregistration
 * attempt and keeps the quarantine; {@link EvictionPolicy} is the Caffeine adapter and the budget walk;
 * {@link Region} holds the lease and lifecycle word; {@link RegionIndex} the immutable index;
 * {@link CacheClose} holds the closed flag and completes a close once every region is deregistered;
 * {@link CloseTimeoutReport} says what a timed-out close waits for. The class is longer than the project's
 * 400-line guide because this comment (the single home of the concurrency argument, about 125 lines) and the
 * public {@link Builder} (about 130) live here; the protocol itself is about 580 lines.
 *
 * <p>References: UCX {@code src/ucs/memory/rcache.c} (merging, access union, deferred deregistration),
 * Caffeine {@code BoundedLocalCache} (the layout of this comment), {@code docs/SAFETY-MODEL.md} (the
 * hazards, invariants and the tests that prove each).
 */
public final class RegistrationCache implements AutoCloseable {
    /**
     * Requests must end at or below this address: the top of user space on x86-64 with 5-level paging, the
     * widest of Linux's 64-bit layouts.
     */
    public static final long USER_SPACE_END = AddressRange.USER_SPACE_END;

    private final Registrar registrar;
    private final long alignment;
    /** What a registration pins is counted in these: whole pages, whatever the (smaller) alignment. */
    private final long pinUnit;
    private final Budget budget;
    private final boolean widenRemote;
    private final LongSupplier nanoClock;
    private final @Nullable LeakDetector leakDetector;
    private final boolean ownsRegistrar;
    /** Deliberate bugs for proofs that tests can fail ({@link CacheFault}; zero in every user's cache). */
    private final int faults;
    private final CacheMetrics metrics = new CacheMetrics();
    /** This cache's account in a shared {@link PinnedMemoryLimit}, or null when it draws from none. */
    private final @Nullable Tenant tenant;
    private final MissPlanner planner;
    private final RegistrationRecovery recovery;
    private final Deregistrar deregistrar;
    private final EvictionPolicy eviction;

    /** The index, the retiring index, the in-flight registrations, the front table, and the lock. */
    private final RegionTables tables;
    /** Whether this cache asked the {@link OwnerReaper} to scan it (on its first owner-bound registration). */
    private volatile boolean watchedByReaper;
    /** Whether the cache is closed, and the close itself. */
    private final CacheClose closing;

    private RegistrationCache(Builder b) {
        this.registrar = b.registrar;
        this.alignment = b.alignment;
        this.pinUnit = AddressRange.pinUnit(alignment);
        PinnedMemoryLimit limit = b.limit;
        TenantShare share = b.share;
        this.budget = limit == null || share == null ? b.budget
                : new Budget(Math.min(b.budget.maxPinnedBytes(), Math.min(share.ceilingBytes(), limit.limitBytes())),
                        b.budget.maxRegions()); // within its ceiling by its own policy, so it has one to evict from
        this.widenRemote = b.widenRemote;
        this.nanoClock = b.nanoClock;
        this.faults = b.faults;
        this.leakDetector = b.leakDetection == LeakDetection.DISABLED ? null
                : new LeakDetector(b.leakListener, () -> metrics.increment(CacheCounter.LEAKED_LEASES), b.leakDetection);
        this.ownsRegistrar = b.ownsRegistrar;
        this.tables = new RegionTables(metrics, faults, widenRemote);
        ReentrantLock lock = tables.lock;
        this.planner = new MissPlanner(alignment, b.mergePolicy, widenRemote);
        this.deregistrar = new Deregistrar(registrar, metrics, b.retry, faults, lock, b.retryClock,
                this::forgetDeregistered);
        this.eviction = new EvictionPolicy(budget, metrics, faults, this::unlinkEvicted, deregistrar,
                b.sampledAccessRecording);
        this.recovery = new RegistrationRecovery(registrar, metrics, budget, planner, lock, this::evictIdle,
                limit == null ? null : limit::describeHoldings);
        this.tenant = limit == null || share == null ? null : limit.join(share, eviction::evictColdest);
        metrics.tenant = tenant; // before the cache is published: seen through the final field
        this.closing = new CacheClose(tables, deregistrar, eviction, registrar, b.ownsRegistrar, tenant, leakDetector,
                faults);
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
     * @throws IllegalArgumentException on a non-positive length, a negative range or one ending past
     *                                  {@link #USER_SPACE_END}, or an empty or unknown access mask (the cache is
     *                                  unchanged)
     * @throws IllegalStateException    when the cache is closed
     * @throws RegistrationException    when the registrar fails ({@link PinnedMemoryExhaustedException} after
     *                                  ENOMEM recovery failed); whatever else the registrar throws, as it is
     */
    public Lease acquire(long address, long length, int access) {
        return acquireFor(address, length, access, null);
    }

    /**
     * Owner-bound acquisition: a lease on the native memory of {@code segment} (of any arena), with no free hook
     * needed. The registration is made for the segment's arena scope and serves only segments of that same scope
     * (every segment of one arena shares it): a registration made while one arena held the memory is never served
     * to another arena's segment at the same addresses, even with no {@link #invalidate} call in between (its
     * arena closed, or collected, and the allocator gave the same bytes to another). The lease holds the scope
     * strongly, so the GC frees no memory under a lease; once the scope is collected or closed, its regions are
     * deregistered with no call from the user (metric {@link CacheCounter#OWNERS_GONE}). A hit is lock-free, as
     * {@link #acquire(long, long, int)}'s; unlike it, it often allocates its lease (56 bytes) and costs about 1.5x
     * (docs/PERFORMANCE.md, "Owner-bound acquisition").
     *
     * <p>Closing an arena while a lease on its memory is held frees memory a NIC may still use: the cache cannot
     * stop that (no public API keeps an arena open); it only never serves that registration again. A segment of
     * the global scope ({@code Arena.global()}, {@code MemorySegment.ofAddress}) is memory the JVM never frees: if
     * it wraps memory a native allocator frees, announce those frees with {@link #invalidate}.
     *
     * @throws IllegalArgumentException on a heap segment (the GC moves heap arrays), an empty segment, or bad
     *                                  access bits
     * @throws IllegalStateException    when the segment's arena is closed, or the cache is
     */
    public Lease acquire(MemorySegment segment, int access) {
        MemorySegment.Scope scope = segment.scope();
        if (!segment.isNative() || !scope.isAlive()) {
            throw unusable(segment); // the messages out of line: the cold path
        }
        return acquireFor(segment.address(), segment.byteSize(), access,
                CacheFault.IGNORE_OWNER.in(faults) ? null : scope);
    }

    private static RuntimeException unusable(MemorySegment segment) {
        if (!segment.isNative()) {
            return new IllegalArgumentException("acquire(" + segment + "): a heap segment cannot be registered (the GC"
                    + " moves heap arrays); allocate it from an Arena, or use a direct ByteBuffer");
        }
        return new IllegalStateException("acquire(" + segment + "): the segment's arena is closed; its memory may"
                + " belong to someone else now");
    }

    /**
     * Owner-bound acquisition of a direct buffer's bytes between its position and limit, as
     * {@link #acquire(MemorySegment, int)}: the owner is the buffer object itself (keep it; a slice or duplicate is
     * another owner, so its first acquire is a miss), held strongly by the lease. Reachability proves liveness only
     * for memory the JVM frees: a buffer from {@code ByteBuffer.allocateDirect} or from an arena's segment. A
     * buffer wrapping memory that native code frees explicitly ({@code JNI NewDirectByteBuffer}, Netty's
     * no-cleaner buffers, a global segment's {@code asByteBuffer()}) is not protected: announce its frees with
     * {@link #invalidate}.
     *
     * @throws IllegalArgumentException on a heap buffer, no bytes remaining, or bad access bits
     * @throws IllegalStateException    when the buffer's arena is closed, or the cache is
     */
    public Lease acquire(ByteBuffer buffer, int access) {
        if (!buffer.isDirect()) {
            throw new IllegalArgumentException("acquire(" + buffer + "): a heap ByteBuffer cannot be registered (the"
                    + " GC moves heap arrays); use ByteBuffer.allocateDirect or a segment's asByteBuffer()");
        }
        MemorySegment bytes = MemorySegment.ofBuffer(buffer);
        if (!bytes.scope().isAlive()) {
            throw new IllegalStateException("acquire(" + buffer + "): the buffer's arena is closed");
        }
        return acquireFor(bytes.address(), bytes.byteSize(), access, CacheFault.IGNORE_OWNER.in(faults) ? null : buffer);
    }

    /**
     * Every acquire's body: {@code owner} null for the address-keyed one. The owner-bound hit does not stay
     * allocation-free yet: C2 often compiles the owner-bound acquire (or this method) on its own first, then finds it
     * "already compiled into a big method" and does not inline it into the caller, so the lease escapes (56 bytes
     * per hit in {@code OwnerBoundBenchmarks}; docs/PERFORMANCE.md has the versions tried).
     */
    private Lease acquireFor(long address, long length, int access, @Nullable Object owner) {
        long end = AddressRange.checkedEnd("acquire", address, length);
        Access.validate(access);
        int stripe = Region.stripe();
        Region r = tables.hint(address, end, access, owner);
        int slot = r == null ? Region.NOT_RETAINED : retainHit(r, stripe);
        if (r == null || slot < 0) {
            Retained got = acquireBehindFront(address, end, access, stripe, owner);
            r = got.region();
            slot = got.slot();
        }
        // the one allocation site: when the caller keeps the lease local, C2 can scalar-replace it
        return leakDetector == null || !leakDetector.track() ? new Lease(this, r, slot, address, length, null, owner)
                : trackedLease(leakDetector, r, slot, address, length, owner);
    }

    /**
     * The index, then the miss path; remembers the region in the front table. Out of line: with the index
     * walk inlined, {@link #acquire} compiled too big to be inlined into its callers, and then the lease could
     * no longer be scalar-replaced.
     */
    private Retained acquireBehindFront(long address, long end, int access, int stripe, @Nullable Object owner) {
        Region r = tables.findPublished(address, end, access, owner);
        int slot = r == null ? Region.NOT_RETAINED : retainHit(r, stripe);
        if (r != null && slot >= 0) {
            return new Retained(r, slot);
        }
        if (owner != null) {
            retireOwnersGone(address, end); // a stale region at these addresses leaves before this one is made
        }
        Retained got = acquireSlow(address, end, access, stripe, owner);
        tables.remember(address, got.region());
        return got;
    }

    /** A region and the lease slot the caller's lease was counted in (the miss path's result). */
    private record Retained(Region region, int slot) {
    }

    /**
     * Takes a lease on {@code r} and counts the hit, unless {@code r} is retired or being evicted; returns the
     * lease's slot, or a negative value. A back-off that released the last lease of a retired region
     * deregisters it here.
     */
    private int retainHit(Region r, int stripe) {
        int slot = r.tryRetainHit(stripe);
        if (slot == Region.NOT_RETAINED_MUST_DEREGISTER) {
            deferredDeregister(r);
        }
        return slot;
    }

    /** The miss path; returns the region with one lease taken for the caller, and that lease's slot. */
    private Retained acquireSlow(long address, long end, int access, int stripe, @Nullable Object owner) {
        for (;;) {
            eviction.drainEvicted();
            PendingRegistration p;
            CompletableFuture<Region> joined = null;
            tables.lock.lock();
            try {
                if (closing.isClosed()) {
                    throw new IllegalStateException("acquire(0x" + Long.toHexString(address) + ", "
                            + (end - address) + ") on a closed RegistrationCache: close() was called; build a new"
                            + " cache");
                }
                // Under the lock a region in the index is live, being evicted, or evicted (RETIRED and CLAIMED at
                // once): retirement by an invalidation, a merge or close unlinks in the same hold of the lock. So a
                // back-off here never wins a deregistration, unlike one on the lock-free paths (retainHit).
                Region hit = tables.findServing(address, end, access, owner);
                if (hit != null) {
                    int retained = hit.tryRetainHit(stripe);
                    if (retained >= 0) {
                        return new Retained(hit, retained);
                    }
                }
                p = tables.findPending(address, end, access, owner);
                if (p != null) {
                    joined = p.outcomeForJoiner();
                } else {
                    p = owner != null ? planner.planOwned(address, end, access, owner)
                            : planner.plan(tables.published(), address, end, access);
                    tables.addPending(p);
                    metrics.countUnderLock(CacheCounter.MISSES, 1);
                }
            } finally {
                tables.lock.unlock();
            }
            Retained r;
            if (joined == null) { // this thread owns the registration
                Region published = registerAndPublish(p, address, end, access, stripe);
                r = published == null ? null : new Retained(published, Region.BASE_SLOT); // the owner's lease
            } else {
                r = joinInFlight(joined, address, end, access, stripe, owner);
            }
            if (r != null) {
                return r;
            }
        }
    }

    /** Waits for another thread's registration; the region with a lease for us, or null to retry. */
    private @Nullable Retained joinInFlight(CompletableFuture<Region> outcome, long address, long end, int access,
            int stripe, @Nullable Object owner) {
        metrics.increment(CacheCounter.SINGLE_FLIGHT_JOINS);
        Region r = PendingRegistration.await(outcome); // rethrows the owner's failure itself
        if (r == null || !r.serves(address, end, access, widenRemote) || !r.ownedBy(owner)) {
            return null; // discarded, or the owner fell back to a range or rights that do not cover ours
        }
        Region.raceWindowsForTest.beforeJoinerLease(r);
        int retained = r.tryRetain(stripe);
        if (retained == Region.NOT_RETAINED_MUST_DEREGISTER) {
            deferredDeregister(r);
        }
        return retained >= 0 ? new Retained(r, retained) : null; // invalidated right after publication: retry
    }

    /**
     * Registers a planned entry outside the lock and publishes it unless doomed; null means retry. Whatever
     * the registrar throws (an {@code Error} included) removes the entry, fails every joiner with that same
     * exception and completes every stage waiting on it before it reaches the caller.
     */
    private @Nullable Region registerAndPublish(PendingRegistration p, long address, long end, int access,
            int stripe) {
        RegistrationEvent event = CacheEvents.registrationStarted();
        long started = metrics.shouldTimeRegistration() ? nanoClock.getAsLong() : Long.MIN_VALUE;
        Registration reg;
        long reserved = 0;
        Tenant tenant = this.tenant;
        try {
            if (AddressRange.alignedSpan(p.start, p.end, pinUnit) > budget.maxPinnedBytes()) {
                // a merge or upgrade that no budget (nor tenant ceiling, which bounds it) could hold: the request alone
                recovery.narrowToRequest(p, address, end, access);
            }
            if (tenant != null) { // the shared limit first: it refuses, or makes room, before the registrar pins
                long planned = AddressRange.alignedSpan(p.start, p.end, pinUnit);
                tenant.limit.reserve(tenant, planned);
                reserved = planned;
            }
            reg = recovery.register(p, address, end, access);
        } catch (Throwable t) {
            if (tenant != null && reserved > 0) {
                tenant.limit.released(tenant, reserved);
            }
            throw registrationFailed(p, event, t);
        }
        long pinned = AddressRange.alignedSpan(reg.address(), reg.end(), pinUnit); // as Region.pinnedBytes()
        long registrationNanos = started == Long.MIN_VALUE ? -1 : Math.max(0, nanoClock.getAsLong() - started);
        if (tenant != null) {
            tenant.limit.settle(tenant, reserved, pinned);
        }
        if (!eviction.bounded()) { // nothing to make room for: no settling to count
            metrics.registered(pinned);
            return publishOrDiscard(p, reg, pinned, registrationNanos, event, address, end, access, stripe);
        }
        metrics.registeredUnsettled(pinned); // other threads' walks leave it to us until it is published or discarded
        Region published;
        try {
            published = publishOrDiscard(p, reg, pinned, registrationNanos, event, address, end, access, stripe);
        } finally {
            metrics.settled(pinned);
        }
        if (published != null) { // settled: the walk now counts it
            eviction.drainEvicted();
            if (eviction.makeRoom()) {
                metrics.increment(CacheCounter.BUDGET_OVERRUNS);
            }
        }
        return published;
    }

    /**
     * Publishes a registered entry unless it is doomed, closed or wrong, and deregisters what it displaced;
     * null means retry.
     */
    private @Nullable Region publishOrDiscard(PendingRegistration p, Registration reg, long pinned,
            long registrationNanos, RegistrationEvent event, long address, long end, int access, int stripe) {
        OwnerRef ownerRef = p.owner == null ? null : new OwnerRef(p.owner, this);
        Region region = new Region(reg, pinUnit, 1, stripe, ownerRef); // the caller's lease, in its base word
        if (ownerRef != null) {
            ownerRef.bind(region);
            if (!watchedByReaper) { // a race makes two calls at most; the reaper's set ignores the second
                watchedByReaper = true;
                OwnerReaper.watch(this);
            }
        }
        String wrong = recovery.wrongResult(p, address, end, access, reg);
        // the policy learns of the change before the lock, so that Caffeine's put and its maintenance never hold
        // the lock up; its victims still leave in this publication's index copy (or this hold, if discarded)
        List<Region> evicted = wrong == null ? eviction.admitting(region) : List.of();
        List<Region> superseded = List.of();
        List<Region> toDeregister = List.of();
        boolean publish;
        tables.lock.lock();
        try {
            tables.dropDeregistered();
            metrics.recordRegistration(registrationNanos, reg.length());
            publish = wrong == null && (!p.doomed || CacheFault.PUBLISH_DOOMED.in(faults))
                    && (!closing.isClosed() || CacheFault.CLOSE_SKIPS_PENDING.in(faults));
            if (publish) {
                superseded = tables.stillPublished(p.supersedes);
                toDeregister = tables.publish(region, superseded, evicted);
                if (!superseded.isEmpty()) {
                    metrics.countUnderLock(p.upgrade ? CacheCounter.ACCESS_UPGRADES : CacheCounter.MERGES, 1);
                }
            } else {
                tables.retireUnpublished(region);
                tables.unlinkEvicted(evicted);
            }
            tables.removePending(p); // last: the free-hook fast path reads pendingCount before the indexes
        } finally {
            tables.lock.unlock();
        }
        eviction.finishEvicted(evicted);
        if (!publish) {
            if (wrong == null) {
                eviction.notPublished(region);
            }
            discardUnpublished(p, region, event, wrong);
            return null;
        }
        eviction.unlinked(superseded); // retired under the lock, as an invalidation's regions
        CacheEvents.registered(event, p, "published");
        deregistrar.deregisterAll(toDeregister);
        p.published(region);
        return region;
    }

    /** The registrar threw {@code t}: the entry leaves, its joiners and waiters are told; what to throw. */
    private RuntimeException registrationFailed(PendingRegistration p, RegistrationEvent event, Throwable t) {
        tables.lock.lock();
        try {
            tables.removePending(p);
        } finally {
            tables.lock.unlock();
        }
        metrics.increment(CacheCounter.REGISTRATION_FAILURES);
        CacheEvents.registered(event, p, "failed");
        if (t instanceof Error error) {
            p.failed(error, Stages.DONE_FUTURE);
            throw error;
        }
        RuntimeException unchecked = t instanceof RuntimeException re ? re
                : new RegistrationException("registrar " + registrar.getClass().getName()
                        + " threw a checked exception: " + t, 0, t); // thrown sneakily
        p.failed(unchecked, Stages.DONE_FUTURE);
        return unchecked;
    }

    /**
     * A registration that must not be published (doomed by an invalidation or close, or a result that does
     * not cover the request; already retired under the lock) is deregistered; its waiters learn the outcome.
     */
    private void discardUnpublished(PendingRegistration p, Region region, RegistrationEvent event,
            @Nullable String wrong) {
        CompletableFuture<Void> firstAttempt = region.deregistration();
        if (region.release(Region.BASE_SLOT)) { // never published: our lease, in its base word, was the only one
            deregistrar.deregister(region);
        }
        if (wrong != null) {
            IllegalStateException e = new IllegalStateException(wrong);
            metrics.increment(CacheCounter.REGISTRATION_FAILURES);
            CacheEvents.registered(event, p, "failed");
            p.failed(e, firstAttempt);
            throw e;
        }
        metrics.increment(CacheCounter.DISCARDED_IN_FLIGHT);
        CacheEvents.registered(event, p, "discarded");
        p.discarded(firstAttempt);
    }

    /** Called by {@link Lease#close()}. */
    void release(Region r, int slot) {
        if (r.release(slot)) {
            deferredDeregister(r);
        } else {
            eviction.becameIdle(r, slot);
        }
    }

    /** The deregistration left to the last release (or to a backed-off acquire) of a retired region. */
    private void deferredDeregister(Region r) {
        metrics.increment(CacheCounter.DEFERRED_DEREGISTRATIONS);
        deregistrar.deregister(r);
    }

    private Lease trackedLease(LeakDetector detector, Region r, int slot, long address, long length,
            @Nullable Object owner) {
        LeakDetector.Tracker tracker = detector.newTracker(address, length, r.access);
        Lease lease = new Lease(this, r, slot, address, length, tracker, owner);
        tracker.watch(lease);
        return lease;
    }

    // ------------------------------------------------------------------ invalidation

    /**
     * Unlinks every region overlapping {@code [address, address + length)} and dooms overlapping in-flight
     * registrations. The returned stage completes when all of them are deregistered (I3): only then may the
     * memory be reused. Idempotent; when nothing overlaps it takes no lock and allocates nothing.
     *
     * <p>It completes exceptionally, with a {@link DeregistrationException} naming the registrations whose
     * keys are still live, if a deregistration failed; the memory must then not be reused. A later
     * invalidation of the range waits for the next retry of those registrations.
     *
     * @throws IllegalArgumentException on a non-positive length or a negative range, or one ending past
     *                                  {@link #USER_SPACE_END}
     */
    public CompletionStage<Void> invalidate(long address, long length) {
        long end = AddressRange.checkedEnd("invalidate", address, length);
        if (tables.nothingOverlaps(address, end)) { // see "Free-hook fast path" in the class comment
            return Stages.DONE;
        }
        return invalidateSlow(address, end);
    }

    /** {@link #invalidate} and wait for its completion; rethrows a failed deregistration. */
    public void invalidateAndWait(long address, long length) {
        Stages.await(invalidate(address, length));
    }

    private CompletionStage<Void> invalidateSlow(long address, long end) {
        InvalidationEvent event = CacheEvents.invalidationStarted();
        List<CompletableFuture<Void>> waits;
        List<Region> gone = List.of();
        List<Region> toDeregister = List.of();
        int doomed = 0;
        tables.lock.lock();
        try {
            tables.dropDeregistered();
            if (!CacheFault.SKIP_UNLINK.in(faults)) {
                RegionTables.Unlinked unlinked = tables.unlinkOverlapping(address, end);
                gone = unlinked.gone();
                toDeregister = unlinked.idle();
            }
            waits = tables.retiringOutcomes(address, end, gone, toDeregister); // quarantined ones too
            for (PendingRegistration p : tables.pending()) {
                if (p.overlaps(address, end)) {
                    doomed += p.doomed ? 0 : 1;
                    p.doomed = true;
                    waits.add(p.settledForWaiter());
                }
            }
            if (!gone.isEmpty() || doomed > 0) {
                metrics.countUnderLock(CacheCounter.INVALIDATIONS, 1);
                metrics.countUnderLock(CacheCounter.INVALIDATED_REGIONS, gone.size());
            }
        } finally {
            tables.lock.unlock();
        }
        eviction.unlinked(gone);
        for (int i = 0; i < toDeregister.size(); i++) { // ours to deregister: no outcome was asked for them
            Region r = toDeregister.get(i);
            Throwable failure = deregistrar.deregister(r);
            if (failure != null) {
                waits.add(deregistrar.failedAttempt(r, failure));
            }
        }
        CacheEvents.invalidated(event, address, end, gone.size(), doomed);
        if (CacheFault.COMPLETE_EARLY.in(faults)) {
            return Stages.DONE;
        }
        return Stages.allDeregistered(() -> "invalidate " + AddressRange.describe(address, end), waits);
    }

    // ------------------------------------------------------------------ owners gone

    /**
     * Retires owned regions whose owner was collected or closed, as an invalidation retires them: unlinked now,
     * deregistered once unleased. Called by the {@link OwnerReaper} and by an owner-bound miss.
     */
    void ownersGone(List<Region> regions) {
        if (regions.isEmpty()) {
            return;
        }
        RegionTables.Unlinked unlinked;
        tables.lock.lock();
        try {
            tables.dropDeregistered();
            unlinked = tables.unlinkRegions(regions);
            metrics.countUnderLock(CacheCounter.OWNERS_GONE, unlinked.gone().size());
        } finally {
            tables.lock.unlock();
        }
        eviction.unlinked(unlinked.gone());
        deregistrar.deregisterAll(unlinked.idle());
    }

    /** Retires the owned regions overlapping {@code [address, end)} whose owner is gone. Lock-free when none is. */
    private void retireOwnersGone(long address, long end) {
        ownersGone(withOwnerGone(tables.published().overlapping(address, end)));
    }

    /** For the {@link OwnerReaper}'s scan: retires owned regions whose arena was closed (nothing enqueues those). */
    void reapClosedOwners() {
        if (!closing.isClosed()) {
            ownersGone(withOwnerGone(tables.published().all()));
        }
    }

    /** Those of {@code regions} that are owned and whose owner was collected or closed. */
    private static List<Region> withOwnerGone(List<Region> regions) {
        List<Region> gone = List.of();
        for (Region r : regions) {
            OwnerRef o = r.owner();
            if (o != null && !o.ownerAlive()) {
                (gone.isEmpty() ? gone = new ArrayList<>(2) : gone).add(r);
            }
        }
        return gone;
    }

    /** For the eviction policy: unlinks the evicted regions still published (they are retired already). */
    private void unlinkEvicted(List<Region> batch) {
        tables.lock.lock();
        try {
            tables.dropDeregistered();
            tables.unlinkEvicted(batch);
        } finally {
            tables.lock.unlock();
        }
    }

    /**
     * For the deregistrar: a region's keys are dead ({@link RegionTables#forgetDeregistered}); after a close that
     * met a failed deregistration, the retry that ends the quarantine closes the owned registrar.
     */
    private void forgetDeregistered(Region r) {
        tables.forgetDeregistered(r);
        closing.deregistered();
    }

    /**
     * Evicts every idle region (for example before a fork, or to give memory back).
     *
     * @return how many regions were evicted
     */
    public int evictIdle() {
        return eviction.evictIdle(tables.published().all());
    }

    // ------------------------------------------------------------------ failed deregistrations

    /**
     * Attempts once more, now, the deregistration of every quarantined registration (each one whose
     * deregistration failed). A success completes the stages waiting for it; a failure completes them
     * exceptionally and keeps the registration quarantined. Automatic retries (the default
     * {@link DeregistrationRetry}) make calling this optional.
     *
     * @return how many registrations are still quarantined afterwards
     */
    public int retryQuarantined() {
        return deregistrar.retryQuarantined();
    }

    /**
     * Registrations whose deregistration failed and is waiting for a retry: their keys are still live, and
     * the memory they cover must not be reused.
     */
    public List<Registration> quarantined() {
        return deregistrar.quarantined();
    }

    // ------------------------------------------------------------------ close

    /**
     * Closes the cache: later acquires fail, every region is retired and every in-flight registration
     * doomed. The stage completes when everything is deregistered (leases still held are waited for);
     * exceptionally, naming them, when registrations could not be deregistered (they stay quarantined, and
     * {@link #retryQuarantined()} still works).
     */
    public CompletionStage<Void> closeAsync() {
        return closing.start();
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
        Stages.await(closeAsync());
    }

    /**
     * {@link #close()}, waiting at most {@code timeout} for leases to be released. On time out the cache stays
     * closed to new acquires and finishes closing when the last lease is released.
     *
     * @throws LeasesStillHeldException when leases are still held after {@code timeout}: it names the regions
     *                                  they hold and, with leak detection on, carries their acquire stacks
     * @throws CloseTimedOutException   when no lease is held but the close still waits after {@code timeout}
     *                                  for registrar calls (registrations in flight, deregistrations under
     *                                  way): it names them
     * @throws DeregistrationException  as {@link #close()}
     */
    public void close(Duration timeout) {
        closing.await(timeout);
    }

    public boolean isClosed() {
        return closing.isClosed();
    }

    // ------------------------------------------------------------------ metrics and introspection

    /**
     * A snapshot of the metrics. Hits live in the regions' lease cells until a region is deregistered, so
     * the snapshot sums them under the index lock.
     */
    public MetricsSnapshot metrics() {
        long liveHits;
        Histogram[] histograms;
        long[] countedUnderLock;
        tables.lock.lock();
        try {
            tables.dropDeregistered();
            histograms = metrics.copyHistograms();
            countedUnderLock = metrics.copyUnderLock();
            liveHits = tables.liveHits();
        } finally {
            tables.lock.unlock();
        }
        return metrics.snapshot(liveHits, deregistrar.quarantinedCount(), histograms, countedUnderLock);
    }

    /** Registrations in flight now (tests check that a failure never leaves one behind). */
    int inFlightCount() {
        return tables.pendingCount();
    }

    /** The published regions, in address order (tests reach a region's state through it). */
    List<Region> regionsForTest() {
        return tables.published().all();
    }

    /** Fallback timers the deregistration retries scheduled (tests check that one covers many retries). */
    int retryTimersScheduledForTest() {
        return deregistrar.timersScheduledForTest();
    }

    /** Regions the eviction policy holds (tests check that every region leaving the index leaves it). */
    long policySizeForTest() {
        return eviction.sizeForTest();
    }

    /** The start addresses of the policy's regions, coldest first (tests check what the policy was told). */
    List<Long> policyOrderForTest() {
        return eviction.coldestForTest().stream().map(r -> r.start).toList();
    }

    /** Slots of the front table now (tests check that it grows and shrinks with the index). */
    int frontTableLengthForTest() {
        return tables.frontTableLength();
    }

    /** Regions retired and not yet deregistered (tests check it drains to zero). */
    int retiringCount() {
        tables.lock.lock();
        try {
            tables.dropDeregistered();
            return tables.retiringSize();
        } finally {
            tables.lock.unlock();
        }
    }

    public long pinnedBytes() {
        return metrics.pinnedBytes.get();
    }

    /** Published (acquirable) regions now. */
    public int regionCount() {
        return tables.published().size();
    }

    public Budget budget() {
        return budget;
    }

    public long alignment() {
        return alignment;
    }

    /** A copy of the published registrations, for diagnostics. */
    public List<Registration> registrations() {
        return tables.published().all().stream().map(r -> r.registration()).toList();
    }

    @Override
    public String toString() {
        return "RegistrationCache[regions=" + tables.published().size() + ", pinnedBytes=" + metrics.pinnedBytes.get()
                + ", closed=" + closing.isClosed() + "]";
    }

    /** Builds a {@link RegistrationCache}. */
    public static final class Builder {
        private final Registrar registrar;
        private long alignment = 4096;
        private Budget budget = Budget.UNLIMITED;
        private boolean sampledAccessRecording = true;
        private MergePolicy mergePolicy = MergePolicy.OVERLAPPING;
        private boolean widenRemote;
        private LongSupplier nanoClock = System::nanoTime;
        private LongSupplier retryClock = System::nanoTime;
        private LeakDetection leakDetection = LeakDetection.DISABLED;
        private boolean ownsRegistrar;
        private Consumer<LeakReport> leakListener = LeakDetector::log;
        private int faults;
        private DeregistrationRetry retry = DeregistrationRetry.DEFAULT;
        private @Nullable PinnedMemoryLimit limit;
        private @Nullable TenantShare share;

        private Builder(Registrar registrar) {
            this.registrar = Objects.requireNonNull(registrar, "registrar");
        }

        /**
         * Local regions are widened to this power of two (default 4096, the x86-64 page size). Below a page, pinned
         * bytes (the budget's, a tenant's) are still counted in whole pages: the registrar pins whole pages.
         */
        public Builder alignment(long alignment) {
            this.alignment = AddressRange.checkedAlignment(alignment);
            return this;
        }

        public Builder budget(Budget budget) {
            this.budget = Objects.requireNonNull(budget, "budget");
            return this;
        }

        /**
         * Under a budget, whether the eviction policy hears of every release until a lease word has counted 64
         * hits and then of one in four ({@link Region#recordsRelease}; the default, true), or of every release
         * (false). Recording a release is most of a budgeted hit's cost, and on two threads most of their
         * contention: W4 (90% hits under a budget of 512 regions), in two runs of both side by side, took 104 to
         * 123 ns per operation sampled against 130 to 155 recording every release on one thread, and 330 to 410
         * (a few iterations near 1,000) against 580 to 1,490 per thread on two. What sampling costs: the policy
         * ranks a region it has long heard of a little below newer ones, which cost 0.1 to 0.6 points of hit ratio
         * on Zipf traces over sixteen times the budget, and moved a Zipf trace with scans by -1.6 to +1.7 points,
         * within what the trace's seed moves it (docs/PERFORMANCE.md, {@code PolicyHitRatio}). Turn it off where
         * one thread does the work, the working set is far larger than the budget, and a registration costs more
         * than a few thousand hits.
         */
        public Builder sampledAccessRecording(boolean sampled) {
            this.sampledAccessRecording = sampled;
            return this;
        }

        /**
         * Makes the cache a tenant of a pinned-memory limit that other caches share: every registration is
         * reserved against {@code limit} before the registrar pins it, within the tenant's ceiling (which also
         * bounds the cache's own budget), with its guarantee held back for it; see {@link PinnedMemoryLimit}.
         * The tenant joins when the cache is built and gives its guarantee back when the cache closes.
         *
         * @throws IllegalArgumentException from {@link #build()} when the limit already has an open tenant of that
         *                                  name, or the guarantees would add up to more than the limit
         */
        public Builder tenant(PinnedMemoryLimit limit, TenantShare share) {
            this.limit = Objects.requireNonNull(limit, "limit");
            this.share = Objects.requireNonNull(share, "share");
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
            return leakDetection(on ? LeakDetection.EVERY_LEASE : LeakDetection.DISABLED);
        }

        /** How many leases leak detection tracks ({@link LeakDetection}; default {@code DISABLED}). */
        public Builder leakDetection(LeakDetection level) {
            this.leakDetection = Objects.requireNonNull(level, "level");
            return this;
        }

        /**
         * Whether the cache owns its registrar: its close then closes the registrar last, once everything is
         * deregistered (not when a deregistration failed: keys are still live). Default false.
         */
        public Builder ownsRegistrar(boolean owns) {
            this.ownsRegistrar = owns;
            return this;
        }

        /** Where leak reports go (default: {@link System.Logger} {@code io.mrcache.core.LeakDetector}, WARNING). */
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

        /** Test seam: the clock that says when a quarantined retry falls due (to run one without waiting). */
        Builder retryClock(LongSupplier clock) {
            this.retryClock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /** Test seam: enables deliberate bugs ({@link CacheFault}). */
        Builder faults(CacheFault... enabled) {
            faults |= CacheFault.bits(enabled);
            return this;
        }

        /**
         * FOR PROOFS ONLY: builds a cache with one safety step switched off ({@link CacheFault}), so that a test
         * can show it catches the bug. The cache is unsafe: never use it to register memory a NIC touches.
         */
        public Builder withDeliberateBug(CacheFault bug) {
            return faults(Objects.requireNonNull(bug, "bug"));
        }

        public RegistrationCache build() {
            return new RegistrationCache(this);
        }
    }
}
