package io.mrcache.core;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Policy;
import com.github.benmanes.caffeine.cache.RemovalCause;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Keeps the cache within its {@link Budget} (I5): Caffeine (W-TinyLFU) orders the published regions, weighted by
 * pinned pages (or one per region when only the count is bounded), and {@link #makeRoom()} evicts the coldest
 * idle ones until both bounds hold. Never takes a leased region: a victim is retired only through
 * {@link Region#tryRetireIdle()} (H5).
 *
 * <p>Without a budget nothing is ever evicted, so an unbounded cache keeps Caffeine out of hits and misses
 * altogether. Regions the policy retires are unlinked by the thread that made the policy call (a
 * publication's victims in the publication's own index copy, returned by {@link #admitting}; a walk's before
 * it reads the budget again; the few chosen elsewhere, such as a re-entry's, through {@link #drainEvicted()})
 * and deregistered outside every lock. A victim leaves the policy when it is chosen
 * (Caffeine's own eviction, or the walk in the same hold of the policy lock), not when it is unlinked: one
 * hold of the policy lock fewer per eviction (when a publication still wrote to the policy under the cache's
 * lock, this cut the soak's two threads' waits on the cache's lock from 5.4 s to 2.2 s per million lifecycles).
 * No call here is made under the cache's lock now: a publication writes before it ({@link #admitting}), so the
 * cache's lock covers an index copy, the policy's lock Caffeine's work, and two threads' misses overlap the two.
 */
final class EvictionPolicy {
    /** Policy weights are in pages of this size, so a weight fits an int. */
    private static final long WEIGHT_UNIT = 4096;

    private final Budget budget;
    private final CacheMetrics metrics;
    private final boolean bounded;
    /** Whether a release is recorded only as {@link Region#recordsRelease} says (the builder's option). */
    private final boolean sampledAccessRecording;
    private final int faults;
    /** Moves the regions that are still linked from the index to the retiring index, under the cache's lock. */
    private final Consumer<List<Region>> unlink;
    private final Deregistrar deregistrar;
    private final Cache<Region, Region> policy;
    private final Policy.Eviction<Region, Region> coldestFirst;
    /** Regions the policy retired (and whose deregistration it claimed), waiting to be unlinked. */
    private final RegionHandoff evicted = new RegionHandoff();
    /** Regions the policy dropped while it could not evict them, found idle where they could not be put back. */
    private final RegionHandoff reentering = new RegionHandoff();
    /** Held around every write to the policy and every walk of it (see {@link #writing}). */
    private final SpinningLock policyLock = new SpinningLock();
    /**
     * While a thread holds {@link #policyLock} to write or walk: the list that the regions Caffeine evicts go to,
     * so that this thread unlinks them itself (a publication in its own index copy). Handed to another thread,
     * a victim could be taken by a release's {@link #drainEvicted} before the publisher polled it: the publisher
     * then saw the cache over budget and walked for one more victim than it needed, and the release unlinked
     * under the cache's lock ({@code RaceWindowsTest}: two evictions for one region over the budget). Null
     * otherwise.
     */
    private @Nullable List<Region> victimsOfHolder;
    /** Set when Caffeine's maintenance ran under the policy lock since its holder cleared it ({@link #writing}). */
    private boolean maintained;
    /**
     * Set while the last walk ended with the cache over budget (every region it could take was leased, or
     * quarantined): only then can a release, by making a region idle, let a walk succeed, so only then does a
     * release walk. The walker sets it before it walks once more, and a release reads it after its lease write:
     * either that walk sees the region idle or the release sees the flag and walks (sequentially consistent,
     * as the lease protocol). Registrations read the budget themselves, after they settle.
     */
    private volatile boolean overrun;
    /** Calls of {@link #makeRoom} not yet served: nonzero while a thread walks. */
    private final AtomicInteger roomRequests = new AtomicInteger();

    /** Whether a budget bounds the cache (without one the policy is never used). */
    boolean bounded() {
        return bounded;
    }

    EvictionPolicy(Budget budget, CacheMetrics metrics, int faults, Consumer<List<Region>> unlink,
            Deregistrar deregistrar, boolean sampledAccessRecording) {
        this.budget = budget;
        this.sampledAccessRecording = sampledAccessRecording;
        this.metrics = metrics;
        this.bounded = !budget.equals(Budget.UNLIMITED);
        this.faults = faults;
        this.unlink = unlink;
        this.deregistrar = deregistrar;
        boolean byBytes = budget.maxPinnedBytes() != Long.MAX_VALUE;
        long maxWeight = byBytes ? Math.max(1, budget.maxPinnedBytes() / WEIGHT_UNIT)
                : budget.maxRegions() == Integer.MAX_VALUE ? Long.MAX_VALUE : budget.maxRegions();
        this.policy = Caffeine.newBuilder()
                .maximumWeight(maxWeight)
                .<Region, Region>weigher((k, v) -> byBytes
                        ? (int) Math.min(Integer.MAX_VALUE, Math.max(1, (k.pinnedBytes() + WEIGHT_UNIT - 1) / WEIGHT_UNIT))
                        : 1)
                .executor(this::maintain)
                .evictionListener((@Nullable Region k, @Nullable Region v, RemovalCause cause) -> onPolicyEviction(k, cause))
                .build();
        this.coldestFirst = policy.policy().eviction().orElseThrow();
    }

    /**
     * A region is about to be published. Called before the cache's lock, so that Caffeine's put and its
     * maintenance never hold up another thread's planning or publication there: the caller unlinks the victims
     * returned (retired and claimed already) in the publication's own index copy, or in the same hold if the
     * publication is discarded, and then deregisters them ({@link #finishEvicted}). Until then the region is in
     * the policy but not in the index: leased by its owner, so no walk takes it, and if Caffeine drops it, it
     * re-enters once idle, as any leased region. The regions a merge supersedes leave afterwards, as any
     * retired region ({@link #unlinked}); a discarded publication takes its region out ({@link #notPublished}).
     */
    List<Region> admitting(Region r) {
        if (!bounded) {
            return List.of();
        }
        return writing(() -> policy.put(r, r));
    }

    /** A region {@link #admitting} announced was retired unpublished: it leaves the policy. */
    void notPublished(Region r) {
        unlinked(List.of(r));
    }

    /**
     * The policy's regions, coldest first, once Caffeine has applied what it was told (its snapshot runs the
     * pending maintenance first; tests read the order).
     */
    List<Region> coldestForTest() {
        return coldestFirst.coldest(Integer.MAX_VALUE).keySet().stream().toList();
    }

    /** Regions the policy holds now (tests check that regions leaving the index leave the policy too). */
    long sizeForTest() {
        return policy.estimatedSize(); // the map's own count: an invalidate or put shows at once
    }

    /** Regions left the index (invalidated, closed): one hold of the policy lock for all of them. */
    void unlinked(List<Region> regions) {
        if (bounded && !regions.isEmpty()) {
            handOff(writing(() -> regions.forEach(policy::invalidate)));
        }
    }

    /**
     * The release of a lease on {@code r} counted in {@code slot}: record the access (when sampling, only those
     * {@link Region#recordsRelease} picks), or put a dropped region back once idle, then
     * restore the budget if a walk left it exceeded ({@link #overrun}). A hit's release reads no word that a miss
     * writes unless it must: not the other threads' lease cells (a region's idleness matters only once the
     * policy dropped it), not the pinned counts.
     */
    void becameIdle(Region r, int slot) {
        if (!bounded) {
            return; // without a budget there is no policy to inform and nothing to evict
        }
        if (r.isDroppedByPolicy()) { // read after the release's lease write: see markDropped
            if (r.isIdle() && r.claimReentry()) {
                reenter(r);
            }
        } else if (!sampledAccessRecording || r.recordsRelease(slot)) {
            var _ = policy.getIfPresent(r); // only to record the access
        }
        drainEvicted();
        if (overrun) {
            makeRoom();
        }
    }

    private void onPolicyEviction(@Nullable Region r, RemovalCause cause) {
        if (r == null || !cause.wasEvicted()) { // keys are strong references: never null in practice
            return;
        }
        if (retireIdle(r) || (CacheFault.EVICT_LEASED.in(faults) && r.isLive() && r.forceRetireForFault())) {
            r.leftPolicy = true; // Caffeine removed it already
            List<Region> mine = policyLock.isHeldByCurrentThread() ? victimsOfHolder : null;
            if (mine != null) {
                mine.add(r);
            } else {
                evicted.add(r);
            }
            Region.raceWindowsForTest.afterVictimChosen(r);
        } else if (CacheFault.LOSE_POLICY_DROPS.in(faults)) {
            if (r.isLive()) {
                metrics.increment(CacheCounter.EVICTIONS_WITHDRAWN);
                r.markDroppedByPolicy(); // and nobody looks again: the bug
            }
        } else if (!r.isRetired()) { // leased, or marked by another evictor that may yet withdraw
            metrics.increment(CacheCounter.EVICTIONS_WITHDRAWN);
            markDropped(r);
        }
    }

    /**
     * The policy dropped {@code r} while it could not evict it: it must re-enter once idle, whoever makes it
     * idle last. The mark is written before idleness is read here; a release writes its lease word and a
     * withdrawing evictor its state word before they read the mark ({@link #becameIdle}, {@link #afterWithdrawal}).
     * All sequentially consistent, so either this read sees the region idle or that thread sees the mark;
     * {@link Region#claimReentry} lets exactly one of them put it back. From inside Caffeine's listener the
     * put cannot run at once: the region is handed to {@link #drainEvicted}, which the policy caller runs next.
     */
    private void markDropped(Region r) {
        r.markDroppedByPolicy();
        afterWithdrawal(r);
    }

    /**
     * An eviction attempt on {@code r} gave up (it was leased), or the policy just dropped it: if it is marked
     * and idle, it is handed to {@link #drainEvicted} to be put back.
     */
    private void afterWithdrawal(Region r) {
        if (r.isDroppedByPolicy() && r.isIdle()) {
            reentering.add(r);
        }
    }

    /** Puts a dropped region back; takes it out again if it was retired meanwhile (its unlinking may be past). */
    private void reenter(Region r) {
        Region.raceWindowsForTest.beforeReentry(r);
        handOff(writing(() -> {
            policy.put(r, r);
            if (r.isRetired()) {
                policy.invalidate(r);
            }
        }));
    }

    /**
     * Evicts the policy's coldest idle regions until the cache is within both bounds of the budget. Caffeine
     * enforces one bound itself at each put; this covers the other, regions that were leased when Caffeine
     * chose them, and regions whose deregistration failed (they stay pinned, so more must go).
     *
     * @return true when this call walked and left the cache over budget (every remaining region leased or
     *     quarantined); false when it left the cache within budget, or left the walk to a thread already walking
     */
    boolean makeRoom() {
        // Within budget there is nothing to serve: most calls end on these reads, without writing the counter that
        // the other threads' calls write too. A set flag is cleared by a walker only (the walk ends at once).
        if (!metrics.settledExceed(budget) && !overrun) {
            return false;
        }
        // One thread walks at a time. A second caller would only wait on the policy lock to walk the entries
        // the first is walking; it counts itself in instead, and the walker walks again for it before leaving
        // (the walk reads the budget afresh, so it covers whatever that caller published).
        if (roomRequests.getAndIncrement() != 0) {
            return false; // the walker reports an overrun, if one is left
        }
        boolean over;
        int served = 1;
        do {
            over = walkUntilWithinBudget();
            if (over && !overrun) {
                Region.raceWindowsForTest.beforeOverrunFlag();
                overrun = true; // releases walk from now on; a release just before this is seen by this walk:
                over = walkUntilWithinBudget();
            }
            overrun = over;
            served = roomRequests.addAndGet(-served);
        } while (served != 0);
        return over;
    }

    private boolean walkUntilWithinBudget() {
        for (;;) {
            long excessBytes = metrics.settledExcessBytes(budget);
            long excessRegions = metrics.settledExcessRegions(budget);
            if (excessBytes == 0 && excessRegions == 0) {
                return false;
            }
            List<Region> victims;
            List<Region> mine = new ArrayList<>();
            int withdrawn = 0;
            policyLock.lock();
            try {
                victimsOfHolder = mine; // Caffeine's own evictions in the snapshot's maintenance are ours to unlink
                victims = coldestFirst.coldest(stream -> {
                    List<Region> picked = new ArrayList<>();
                    long freedBytes = 0;
                    var it = stream.iterator();
                    while (it.hasNext() && (freedBytes < excessBytes || picked.size() < excessRegions)) {
                        Region r = it.next().getKey();
                        if (r.isIdle()) {
                            picked.add(r);
                            freedBytes += r.pinnedBytes();
                        }
                    }
                    return picked;
                });
                // in the same hold: a victim leaves the policy here, not with a lock of its own when unlinked
                for (Region r : victims) {
                    if (retireIdle(r)) {
                        policy.invalidate(r);
                        r.leftPolicy = true;
                        mine.add(r);
                    } else if (r.isLive()) {
                        // leased since it was picked; it stays in the policy, with no dropped mark to act on:
                        // Caffeine drops regions only while over its weight, between a write's put and the end of
                        // its maintenance, and every write holds this lock
                        withdrawn++;
                    }
                }
            } finally {
                victimsOfHolder = null;
                policyLock.unlock();
            }
            metrics.add(CacheCounter.EVICTIONS_WITHDRAWN, withdrawn);
            if (!mine.isEmpty()) { // unlinked and deregistered before the budget is read again
                unlink.accept(mine);
                finishEvicted(mine);
            }
            drainEvicted();
            if (mine.isEmpty()) {
                return true;
            }
        }
    }

    /**
     * For a shared {@link PinnedMemoryLimit}: evicts the policy's coldest idle regions until at least
     * {@code wantBytes} are freed, skipping any region that would take the total past {@code maxBytes}, and
     * deregisters them before returning. The same claim as every eviction ({@link Region#tryRetireIdle}).
     *
     * @return the regions evicted, and the bytes their deregistrations gave back (not those that failed and
     *     stay quarantined, still pinned)
     */
    Tenant.Freed evictColdest(long wantBytes, long maxBytes) {
        // no shortcut for an unbounded cache or nothing wanted: a tenant's cache always has a budget, the limit
        // asks only for wantBytes > 0, and with nothing wanted the walk below picks nothing
        List<Region> victims = new ArrayList<>();
        policyLock.lock();
        try {
            List<Region> picked = coldestFirst.coldest(stream -> {
                List<Region> chosen = new ArrayList<>();
                long bytes = 0;
                var it = stream.iterator();
                while (it.hasNext() && bytes < wantBytes) {
                    Region r = it.next().getKey();
                    boolean take = CacheFault.LIMIT_EVICTS_LEASED.in(faults) ? r.isLive() : r.isIdle();
                    if (take && bytes + r.pinnedBytes() <= maxBytes) {
                        chosen.add(r);
                        bytes += r.pinnedBytes();
                    }
                }
                return chosen;
            });
            for (Region r : picked) {
                if (retireIdle(r) || (CacheFault.LIMIT_EVICTS_LEASED.in(faults) && r.forceRetireForFault())) {
                    policy.invalidate(r);
                    r.leftPolicy = true;
                    victims.add(r);
                } else if (r.isLive()) { // leased since it was picked: as in the budget walk
                    metrics.increment(CacheCounter.EVICTIONS_WITHDRAWN);
                }
            }
        } finally {
            policyLock.unlock();
        }
        long released = 0;
        if (!victims.isEmpty()) {
            unlink.accept(victims);
            for (Region r : victims) {
                metrics.increment(CacheCounter.EVICTIONS);
                CacheEvents.evicted(r, "shared limit");
                deregistrar.deregister(r);
                if (r.isDeregistered()) {
                    released += r.pinnedBytes(); // a quarantined region still pins its pages: no room made
                }
            }
        }
        drainEvicted();
        return new Tenant.Freed(victims.size(), released);
    }

    /** Evicts every idle region of {@code regions}; returns how many. */
    int evictIdle(List<Region> regions) {
        int n = 0;
        for (Region r : regions) {
            if (retireIdle(r)) {
                evicted.add(r);
                n++;
            } else {
                afterWithdrawal(r);
            }
        }
        drainEvicted();
        return n;
    }

    /** The idle claim every eviction makes ({@link Region#tryRetireIdle}), or the broken variant's. */
    private boolean retireIdle(Region r) {
        return CacheFault.EVICT_WITHOUT_MARK.in(faults) ? r.retireIdleWithoutMarkForFault() : r.tryRetireIdle();
    }

    /**
     * Runs one write to Caffeine under {@link #policyLock}. Caffeine's own eviction lock parks a thread that
     * finds it held (a futex wait and a wake-up: 16% of the soak's worker CPU samples before this lock), and with two
     * threads missing at once one nearly always finds the other in Caffeine's maintenance after its write. Under
     * this lock only one thread writes or walks at a time, so Caffeine's lock is seldom contended, and a thread
     * that waits here spins first: these holds take a few microseconds. Reads ({@link #becameIdle}'s access
     * record on a hit) stay outside it. Returns the victims Caffeine chose in this write (see
     * {@link #victimsOfHolder}).
     */
    private List<Region> writing(Runnable write) {
        List<Region> victims = new ArrayList<>(2);
        policyLock.lock();
        try {
            victimsOfHolder = victims;
            maintained = false;
            write.run(); // Caffeine's maintenance runs inside (maintain), unless a release held its lock
            if (!maintained) {
                policy.cleanUp(); // then here and now: the write's victims are this thread's to unlink
            }
        } finally {
            victimsOfHolder = null;
            policyLock.unlock();
        }
        return victims;
    }

    /** Victims that the thread which chose them will not unlink itself: for {@link #drainEvicted}. */
    private void handOff(List<Region> victims) {
        for (int i = 0; i < victims.size(); i++) {
            evicted.add(victims.get(i));
        }
    }

    /**
     * Caffeine's executor: its maintenance (draining the recorded reads, applying writes, evicting) runs here,
     * on the calling thread. A write under the policy lock notes that it ran, so that {@link #writing} runs it
     * itself when Caffeine could not (a release was draining its reads), and the write's victims are always
     * chosen while this thread holds the lock ({@link #victimsOfHolder}).
     */
    private void maintain(Runnable maintenance) {
        Region.raceWindowsForTest.inPolicyMaintenance(false);
        maintenance.run();
        if (policyLock.isHeldByCurrentThread()) {
            maintained = true;
        }
        Region.raceWindowsForTest.inPolicyMaintenance(true);
    }

    /**
     * Unlinks and deregisters the regions the policy retired, and puts back the dropped ones found idle where
     * the put could not run. Outside every lock.
     */
    void drainEvicted() {
        do {
            List<Region> batch = pollEvicted();
            if (!batch.isEmpty()) {
                unlink.accept(batch);
                finishEvicted(batch);
            }
            for (Region r : reentering.isEmpty() ? List.<Region>of() : reentering.takeAll()) {
                if (r.claimReentry()) {
                    reenter(r); // may evict others: the loop drains them
                }
            }
        } while (!evicted.isEmpty() || !reentering.isEmpty());
    }

    /** Takes the regions retired outside a holder's call (handed off) that nobody has unlinked yet. */
    private List<Region> pollEvicted() {
        return evicted.isEmpty() ? List.of() : evicted.takeAll();
    }

    /** Counts and deregisters unlinked victims (retired and claimed by the policy). Outside every lock. */
    void finishEvicted(List<Region> batch) {
        for (Region r : batch) {
            metrics.increment(CacheCounter.EVICTIONS);
            if (!r.leftPolicy) { // a victim of evictIdle (an ENOMEM recovery) is still in the policy
                unlinked(List.of(r));
            }
            CacheEvents.evicted(r, "budget");
            deregistrar.deregister(r); // tryRetireIdle won the claim (or, in the broken variant, the forced one)
        }
    }
}
