package io.mrcache.core;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;
import org.jspecify.annotations.Nullable;

/**
 * Where a cache keeps its regions, and the lock under which they move: publication (a new region enters the
 * index, the regions it replaces leave) and retirement (regions leave the index for the retiring index, then
 * get their RETIRED bit). {@link RegistrationCache} decides when each happens; its class comment holds the
 * concurrency argument, and this class keeps the two orders that argument relies on:
 * <ul>
 * <li>A region leaves {@link #index} in the same hold of {@link #lock} in which it enters {@link #retiring},
 * and it is retired ({@link Region#retire()}) only after it left the index: a reader holding the old index
 * adds to its lease cell before it reads the state word, so it either sees RETIRED or is counted.
 * <li>The free-hook fast path ({@link #nothingOverlaps}) reads {@link #pendingCount}, then {@link #index},
 * then {@link #retiring}; writers go the opposite way (a published region enters the index before its entry
 * leaves the pending count, a retired one enters the retiring index before it leaves the index), so a region
 * that existed when the check began is seen by one of the three reads.
 * </ul>
 *
 * <p>Read without the lock: the two indexes (immutable, published through volatile fields), the pending
 * count and the {@link FrontTable} hint. Everything else is written and read under {@link #lock}, which the
 * cache also holds to plan misses and doom in-flight registrations; no registrar call is ever made under it.
 */
final class RegionTables {
    /** The cache's one lock: the indexes, the pending list and the deregistrar's quarantine change under it. */
    final ReentrantLock lock = new SpinningLock();
    private final CacheMetrics metrics;
    private final int faults;
    private final boolean widenRemote;
    /** A hint for repeated requests, checked before the index; see {@link FrontTable} for why it is safe. */
    private final FrontTable front = new FrontTable();
    /** Published regions: read without a lock, replaced under {@link #lock}. */
    private volatile RegionIndex index = RegionIndex.EMPTY;
    /**
     * Retired regions not yet deregistered (leased, being deregistered, or quarantined), and deregistered ones
     * until the next writer drops them ({@link #dropDeregistered()}); as {@link #index}.
     */
    private volatile RegionIndex retiring = RegionIndex.EMPTY;
    @GuardedBy("lock")
    private final List<PendingRegistration> pending = new ArrayList<>();
    /** {@code pending.size()}, for the free-hook fast path's lock-free read. */
    private volatile int pendingCount;
    /** Deregistered regions still in {@link #retiring}, until the next writer drops them. */
    private final RegionHandoff deregistered = new RegionHandoff();

    RegionTables(CacheMetrics metrics, int faults, boolean widenRemote) {
        this.metrics = metrics;
        this.faults = faults;
        this.widenRemote = widenRemote;
    }

    // ------------------------------------------------------------------ lock-free reads

    /** The region the front table remembers for the request, if it may serve it (the lease attempt decides). */
    @Nullable Region hint(long from, long to, int access, @Nullable Object owner) {
        return front.find(from, to, access, widenRemote, owner);
    }

    /** A published region that may serve the request, from the index as it is now; remembered as a hint. */
    @Nullable Region findPublished(long from, long to, int access, @Nullable Object owner) {
        Region r = index.findServingUnchecked(from, to, access, widenRemote, owner);
        if (r != null) {
            front.remember(from, r);
        }
        return r;
    }

    /** {@code r} served a request starting at {@code from} (the miss path's result): remember it. */
    void remember(long from, Region r) {
        front.remember(from, r);
    }

    /**
     * True when no region (published or retiring) and no registration in flight overlaps the range: the
     * free-hook fast path, no lock and no allocation. The read order is the one in the class comment.
     */
    boolean nothingOverlaps(long from, long to) {
        return pendingCount == 0 && !index.overlapsAny(from, to)
                && (!retiring.overlapsAny(from, to) || CacheFault.IGNORE_RETIRING.in(faults));
    }

    /** The published regions now (an immutable index: safe to walk without the lock). */
    RegionIndex published() {
        return index;
    }

    int pendingCount() {
        return pendingCount;
    }

    int frontTableLength() {
        return front.length();
    }

    // ------------------------------------------------------------------ misses (under the lock)

    /** The published region that serves the request, as the lock holder sees the index. */
    @GuardedBy("lock")
    @Nullable Region findServing(long from, long to, int access, @Nullable Object owner) {
        return index.findServing(from, to, access, widenRemote, owner);
    }

    /** An in-flight registration that will serve the request and is not doomed, or null. */
    @GuardedBy("lock")
    @Nullable PendingRegistration findPending(long from, long to, int access, @Nullable Object owner) {
        for (PendingRegistration p : pending) {
            if (!p.doomed && p.serves(from, to, access, widenRemote, owner)) {
                return p;
            }
        }
        return null;
    }

    @GuardedBy("lock")
    void addPending(PendingRegistration p) {
        pending.add(p);
        pendingCount = pending.size();
    }

    /** Last in a publication: the fast path reads the pending count before the indexes. */
    @GuardedBy("lock")
    void removePending(PendingRegistration p) {
        pending.remove(p);
        pendingCount = pending.size();
    }

    /** The registrations in flight (to doom, or to name in a report). */
    @GuardedBy("lock")
    List<PendingRegistration> pending() {
        return pending;
    }

    /** Those of {@code regions} still in the index (another writer may have unlinked some already). */
    @GuardedBy("lock")
    List<Region> stillPublished(List<Region> regions) {
        return regions.isEmpty() ? List.of() : regions.stream().filter(index::contains).toList();
    }

    /**
     * Publishes {@code region} in one index copy, unlinking what it supersedes and the policy's victims (those
     * still published and not superseded: another thread's policy call may have queued one this publication
     * supersedes), and retires the superseded ones (the victims were retired by the policy).
     *
     * @return the superseded regions that were idle: the caller deregisters them outside the lock
     */
    @GuardedBy("lock")
    List<Region> publish(Region region, List<Region> superseded, List<Region> victims) {
        List<Region> gone = superseded;
        if (!victims.isEmpty()) {
            gone = new ArrayList<>(superseded);
            for (Region r : victims) {
                if (index.contains(r) && !superseded.contains(r)) {
                    gone.add(r);
                }
            }
        }
        retiring = retiring.withAll(gone); // in before out: see the class comment
        index = index.with(region, gone);
        front.fit(index.size());
        return retire(superseded);
    }

    /** A registration that will never be published (doomed, closed, or a wrong result): retired at once. */
    @GuardedBy("lock")
    void retireUnpublished(Region region) {
        region.retire();
        retiring = retiring.withAll(List.of(region));
    }

    // ------------------------------------------------------------------ retirement (under the lock)

    /**
     * Unlinks every published region overlapping the range and retires it.
     *
     * @return the unlinked regions, and (second) those that were idle, whose deregistration the caller won
     */
    @GuardedBy("lock")
    Unlinked unlinkOverlapping(long from, long to) {
        List<Region> gone = index.overlapping(from, to);
        unlink(gone);
        return new Unlinked(gone, retire(gone));
    }

    /** Unlinks and retires those of {@code regions} still published (their owner is gone). */
    @GuardedBy("lock")
    Unlinked unlinkRegions(List<Region> regions) {
        List<Region> gone = stillPublished(regions);
        unlink(gone);
        return new Unlinked(gone, retire(gone));
    }

    /** Unlinks and retires every published region (close). */
    @GuardedBy("lock")
    Unlinked unlinkAll() {
        List<Region> gone = index.all();
        retiring = retiring.withAll(gone);
        index = RegionIndex.EMPTY;
        front.clear(); // the regions are retired anyway: this only lets them be collected
        return new Unlinked(gone, retire(gone));
    }

    /**
     * Unlinks evicted regions that are still published; the policy already retired them (an invalidation may
     * have unlinked some already, and put them in the retiring index).
     */
    @GuardedBy("lock")
    void unlinkEvicted(List<Region> evicted) {
        unlink(stillPublished(evicted));
    }

    /** Regions unlinked in one hold of the lock, and those of them that were idle (to deregister). */
    record Unlinked(List<Region> gone, List<Region> idle) {
    }

    @GuardedBy("lock")
    private void unlink(List<Region> gone) {
        if (gone.isEmpty()) {
            return;
        }
        retiring = retiring.withAll(gone); // in before out: see the class comment
        index = index.with(null, gone);
        front.fit(index.size());
    }

    /**
     * Sets RETIRED on regions already moved from the index to {@link #retiring}; returns the idle ones, whose
     * deregistration the caller won and makes outside the lock.
     */
    @GuardedBy("lock")
    private List<Region> retire(List<Region> gone) {
        if (gone.isEmpty()) {
            return List.of();
        }
        if (gone.size() == 1) { // the common case (one buffer freed, one region superseded): no new list
            return retireOne(gone.getFirst()) ? gone : List.of();
        }
        List<Region> idle = new ArrayList<>(gone.size());
        for (Region r : gone) {
            if (retireOne(r)) {
                idle.add(r);
            }
        }
        return idle;
    }

    /** Sets RETIRED on {@code r} (or, in the broken variant, sums first); true when it was idle. */
    @GuardedBy("lock")
    private boolean retireOne(Region r) {
        return CacheFault.RETIRE_SUMS_FIRST.in(faults) ? r.retireSummingFirstForFault() : r.retire();
    }

    /**
     * The outcomes of every retiring region overlapping the range (quarantined ones too) but those in
     * {@code ownAttempts}, whose deregistration the caller won and whose outcome it learns from its own attempt:
     * what an invalidation waits for. With {@link CacheFault#IGNORE_RETIRING} only those in
     * {@code justUnlinked}.
     */
    @GuardedBy("lock")
    List<CompletableFuture<Void>> retiringOutcomes(long from, long to, List<Region> justUnlinked,
            List<Region> ownAttempts) {
        List<CompletableFuture<Void>> waits = new ArrayList<>(0); // the common case adds nothing: no array
        // a free of a large range retires thousands of regions at once: no list scan per region under the lock
        Collection<Region> own = ownAttempts.size() <= 8 ? ownAttempts : identitySet(ownAttempts);
        for (Region r : retiring.overlapping(from, to)) {
            if ((!CacheFault.IGNORE_RETIRING.in(faults) || justUnlinked.contains(r)) && !own.contains(r)) {
                waits.add(r.deregistration());
            }
        }
        return waits;
    }

    private static Set<Region> identitySet(List<Region> regions) {
        Set<Region> set = Collections.newSetFromMap(new IdentityHashMap<>(regions.size() * 2));
        set.addAll(regions);
        return set;
    }

    /** Every retired region not yet deregistered (and deregistered ones not yet dropped). */
    @GuardedBy("lock")
    List<Region> retiringRegions() {
        return retiring.all();
    }

    // ------------------------------------------------------------------ deregistered regions

    /**
     * For the deregistrar: a region's keys are dead, so it may leave {@link #retiring}. It leaves with the next
     * writer's copy ({@link #dropDeregistered()}), not under a lock of its own: one lock fewer per
     * deregistration. Until then it is one more region an overlapping invalidation waits for, whose
     * deregistration has already completed: a superset of what I3 needs.
     */
    void forgetDeregistered(Region r) {
        deregistered.add(r);
    }

    /** Takes the regions whose deregistration succeeded out of {@link #retiring}, in one copy. */
    @GuardedBy("lock")
    void dropDeregistered() {
        if (deregistered.isEmpty()) {
            return;
        }
        List<Region> dead = deregistered.takeAll();
        metrics.countUnderLock(CacheCounter.DEREGISTRATIONS, dead.size());
        for (Region r : dead) {
            metrics.countUnderLock(CacheCounter.HITS, r.hits()); // final: a retired region takes no more hits
        }
        retiring = retiring.with(null, dead);
    }

    /** Regions in the retiring index, without listing them. */
    @GuardedBy("lock")
    int retiringSize() {
        return retiring.size();
    }

    /** Nothing is in flight and nothing retired is left to deregister (after {@link #dropDeregistered()}). */
    @GuardedBy("lock")
    boolean allDeregistered() {
        dropDeregistered();
        return pending.isEmpty() && retiringSize() == 0;
    }

    /** Hits still counted in live and retiring regions' cells (the metrics snapshot adds them). */
    @GuardedBy("lock")
    long liveHits() {
        long hits = 0;
        for (Region r : index.all()) {
            hits += r.hits();
        }
        for (Region r : retiring.all()) {
            hits += r.hits();
        }
        return hits;
    }
}
