package io.mrcache.core;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * One cached registration and its lifecycle.
 *
 * <pre>
 *   LIVE ──retire()/tryRetireIdle()──▶ RETIRED ──last lease released──▶ DEREGISTERED
 *    │  leases come and go                 no new lease; old ones drain        keys dead at the NIC
 * </pre>
 *
 * <p><b>Leases are counted in words that threads do not share.</b> The thread that made the region counts
 * its leases (and the hits it was served) in the region's {@link #base} word; the first lease of a thread on
 * another stripe makes {@link #STRIPES} cells, each on its own cache line, and from then on each thread
 * counts new leases in its stripe's cell, so two threads taking leases on the same region do not pass a
 * cache line back and forth, and a region only one thread uses costs no cells. A lease is taken by adding to
 * its word and <em>then</em> reading the state word: if the region is retired (or being evicted) the add is
 * undone and the acquire fails. Retirement sets {@link #RETIRED} in the state word and <em>then</em> sums
 * the base and the cells (the cells array is published before any add to it). Both sides
 * write before they read, with sequentially consistent atomics, so for every lease either the acquirer sees
 * the retirement (and backs off, never using the region) or the retirer's sum sees the lease (and leaves the
 * deregistration to its release). Hence a sum of zero read after {@code RETIRED} is set proves no lease is
 * or will be in use (invariant I2).
 *
 * <p><b>Exactly one deregistration.</b> Everyone who may have brought the sum to zero after retirement (the
 * retirer, each release, each backed-off acquire) sums the cells; whoever sees zero competes for
 * {@link #CLAIMED} with a compare-and-set, and the single winner deregisters (I2, I4).
 *
 * <p><b>Eviction</b> must never take a leased region (H5): the evictor sets {@link #EVICTING} (acquirers
 * back off as for a retired region), then sums the cells; zero means idle and it retires the region, else it
 * clears {@code EVICTING} and gives up.
 */
final class Region {
    static final long RETIRED = 1L;
    static final long EVICTING = 1L << 1;
    static final long CLAIMED = 1L << 2;
    /** Cells per region ({@link LeaseStripes}). */
    static final int STRIPES = LeaseStripes.STRIPES;
    /** longs per cell: 8 x 8 bytes = one 64-byte cache line. */
    private static final int CELL_STRIDE = 8;
    /** In a cell: leases in the low 32 bits, hits in the high 32 (harvested before they can wrap). */
    private static final long LEASE_ONE = 1L;
    private static final long HIT_ONE = 1L << 32;
    private static final long LEASE_BITS = 0xFFFF_FFFFL;
    /**
     * A cell's hit half is moved into the region's {@link RareCounts#harvestedHits} when it reaches this many, so it never wraps: the
     * add that reaches it harvests, and the adds racing it before its subtraction lands have 3 x 2^30 of head
     * room below 2^32. 2^30 rather than 2^31 keeps the subtrahend (2^30 x 2^32) below the sign bit.
     */
    static final long HARVEST_AT = 1L << 30;
    /** A lease word's hits up to which the policy records every release ({@link #recordsRelease}). */
    static final int FULL_RECORD_HITS = 64;
    /** Past {@link #FULL_RECORD_HITS}, the policy records one release in this many; a power of two. */
    static final int ACCESS_SAMPLE = 4;

    /**
     * {@link #tryRetain} and {@link #tryRetainHit} results: zero and above, the slot the lease was counted in
     * (the caller's lease records it and releases there); below zero, not retained.
     */
    static final int NOT_RETAINED = -1;
    /** Not retained, and the caller's back-off released the last lease of a retired region: deregister it. */
    static final int NOT_RETAINED_MUST_DEREGISTER = -2;
    /** The slot of the region's own lease word, used until a second thread takes leases on the region. */
    static final int BASE_SLOT = STRIPES;

    private static final VarHandle STATE;
    private static final VarHandle RARE;
    private static final VarHandle BASE;
    private static final VarHandle CELLS_ARRAY;
    private static final VarHandle DROPPED;
    private static final VarHandle OUTCOME;
    /** The outcome of every successful deregistration: one object for all regions. */
    private static final CompletableFuture<Void> DEREGISTERED = CompletableFuture.completedFuture(null);
    private static final VarHandle CELLS = java.lang.invoke.MethodHandles.arrayElementVarHandle(long[].class);

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Region.class, "state", long.class);
            RARE = MethodHandles.lookup().findVarHandle(Region.class, "rare", RareCounts.class);
            BASE = MethodHandles.lookup().findVarHandle(Region.class, "base", long.class);
            CELLS_ARRAY = MethodHandles.lookup().findVarHandle(Region.class, "cells", long[].class);
            DROPPED = MethodHandles.lookup().findVarHandle(Region.class, "droppedByPolicy", boolean.class);
            OUTCOME = MethodHandles.lookup().findVarHandle(Region.class, "deregistration", CompletableFuture.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The calling thread's stripe ({@link LeaseStripes}: a hash of its id, moved on contention). */
    static int stripe() {
        return LeaseStripes.current();
    }

    // The registration's fields, held here rather than the registrar's Registration object: a hit reads the
    // range, rights and keys from the region it takes a lease on (one object, not two, in a cache of many
    // regions), and a cached region costs one object. registration() makes the record when asked.
    /** Range and rights this region serves (the registered range). */
    final long start;
    final long end;
    final int access;
    /** Keys and the registrar's handle, as in {@link Registration}. */
    final int lkey;
    final int rkey;
    final long protectionDomain;
    final long handle;
    final @Nullable Object attachment;
    /**
     * log2 of the cache's pinning unit ({@link #pinnedBytes()} is the range widened to it) in the low six bits,
     * and {@link #OWNED} when the region was registered for an owner (owner-bound acquisition): a byte, so that
     * an address-keyed hit tells an owned region without another field or a second object.
     */
    private final byte shape;
    private static final int OWNED = 0x80;
    private static final int SHIFT_MASK = 0x3F;
    /**
     * The outcome of the next deregistration attempt: completes normally when the keys are dead, exceptionally
     * when that attempt failed (a fresh one then stands for the retry). Made only when someone waits for it (an
     * invalidation, close, a joiner): most regions are evicted or closed without a waiter, and an outcome nobody
     * reads is 24 bytes per cached region. Null until then; {@link #DEREGISTERED} once the keys are dead.
     */
    private volatile @Nullable CompletableFuture<Void> deregistration;
    /**
     * Counts that most regions never need (harvested hits, failed deregistrations): made by the first that
     * does. A field per count would be 12 bytes on every cached region.
     */
    private volatile @Nullable RareCounts rare;

    @SuppressWarnings("unused") // accessed through STATE
    private volatile long state;
    /**
     * The lease word of the thread that made the region (leases and hits, as a cell), and of any thread on
     * {@link #baseStripe}, until {@link #cells} exist. Most regions are only ever used by one thread: they
     * never pay for the cells.
     */
    @SuppressWarnings("unused") // accessed through BASE
    private volatile long base;
    /**
     * The stripe of the thread that made the region: its acquires count in {@link #base}. A byte (there are at
     * most 16 stripes), so that the hash below fits in the same 96 bytes.
     */
    private final byte baseStripe;
    /**
     * {@link #hashCode()}, computed once: the policy hashes its key on every access it records (a bounded cache's
     * every release): computed there each time, W4 on one thread took 144 to 150 ns against 133 to 151 (JMH
     * medians 148 and 140, four forks each, alternating).
     */
    private final int hash;
    /**
     * STRIPES cells, one per cache line (with a line of padding before the first), made when a thread on
     * another stripe first takes a lease: from then on every new lease is counted in its thread's cell.
     */
    private volatile long @Nullable [] cells;

    /**
     * Set when the eviction policy dropped this region while it could not be evicted (leased, or marked by
     * another evictor that may yet withdraw); whoever then sees it idle and wins {@link #claimReentry} puts it
     * back ({@link EvictionPolicy}). Accessed through DROPPED.
     */
    @SuppressWarnings("unused")
    private volatile boolean droppedByPolicy;
    /**
     * Set when the policy retired this region and already dropped it (Caffeine's own eviction, or the walk),
     * before handing it off as a victim: its unlinking then skips the policy. The hand-off orders the write
     * before the read.
     */
    boolean leftPolicy;

    /** A live region holding {@code initialLeases} leases in {@link #BASE_SLOT}, made by the calling thread. */
    Region(Registration registration, long alignment, long initialLeases) {
        this(registration, alignment, initialLeases, stripe());
    }

    /**
     * A live region holding {@code initialLeases} leases in {@link #BASE_SLOT} (the owner's lease records that
     * slot), made by a thread on {@code stripe}.
     */
    Region(Registration registration, long alignment, long initialLeases, int stripe) {
        this(registration, alignment, initialLeases, stripe, null);
    }

    /**
     * {@link #Region(Registration, long, long, int)} for a registration made for {@code owner} (an arena's scope, a
     * direct buffer), which the region references weakly: it serves only requests of that same owner, and once the
     * owner is collected the {@link OwnerReaper} retires it. Null: an address-keyed region.
     */
    Region(Registration registration, long alignment, long initialLeases, int stripe, @Nullable OwnerRef owner) {
        this.start = registration.address();
        this.end = registration.end();
        this.access = registration.access();
        this.lkey = registration.lkey();
        this.rkey = registration.rkey();
        this.protectionDomain = registration.protectionDomain();
        this.handle = registration.handle();
        this.attachment = registration.attachment();
        this.shape = (byte) (Long.numberOfTrailingZeros(AddressRange.checkedAlignment(alignment))
                | (owner != null ? OWNED : 0));
        if (owner != null) {
            this.rare = new RareCounts(owner); // owned regions keep their owner where the rare counts live
        }
        this.baseStripe = (byte) stripe;
        this.hash = hashOf(start, end, access, lkey, rkey, handle);
        this.base = initialLeases; // leases are the word's low half; every field is final or volatile: safe to
                                   // publish through a race
    }

    private static int cell(int stripe) {
        return (stripe + 1) * CELL_STRIDE;
    }

    /** Takes a lease on {@code stripe} unless the region is retired or being evicted (not a hit). */
    int tryRetain(int stripe) {
        return addLeaseThenReadState(stripe, LEASE_ONE);
    }

    /**
     * Takes a lease for a thread on {@code stripe} and counts a hit, unless the region is retired or being
     * evicted; returns the slot it was counted in, or a negative value. Lock-free: one compare-and-set on the
     * base word or on the thread's cell (when it fails, another thread shares the word: the lease goes to the
     * cells, or to the same cell with an atomic add and the thread moves on), then one read of the state word.
     */
    int tryRetainHit(int stripe) {
        return addLeaseThenReadState(stripe, LEASE_ONE + HIT_ONE);
    }

    /**
     * A volatile add to the caller's cell, <em>then</em> a volatile read of the state word: the order that
     * pairs with {@link #retire()}'s set-then-sum. With either side weakened to a plain or release/acquire
     * access, the reader and the retirer could both miss the other, and a lease would be taken on a region
     * being deregistered (H2). On a retired region the add is undone.
     */
    private int addLeaseThenReadState(int stripe, long delta) {
        long[] cs = cells;
        int slot;
        long before;
        if (cs == null && stripe == baseStripe) {
            before = (long) BASE.getOpaque(this);
            if (BASE.compareAndSet(this, before, before + delta)) { // write first ...
                slot = BASE_SLOT;
            } else { // another thread on this stripe uses the base word now: spread out
                slot = stripe;
                before = addToCell(null, stripe, delta);
            }
        } else {
            slot = stripe;
            before = addToCell(cs, stripe, delta); // (also a write first)
        }
        if (((long) STATE.getVolatile(this) & (RETIRED | EVICTING)) == 0) { // ... then read
            if ((before >>> 32) >= HARVEST_AT - 1 && delta != LEASE_ONE) {
                harvest(slot);
            }
            return slot;
        }
        return backOff(slot, delta);
    }

    /**
     * Adds to {@code stripe}'s cell (making the cells first if needed); a compare-and-set, so that a cell
     * another thread shares is noticed and this thread moves on ({@link LeaseStripes}). Out of line, like
     * {@link #backOff}, to keep the hit path small enough to inline into the caller.
     */
    private long addToCell(long @Nullable [] existing, int stripe, long delta) {
        long[] cs = existing != null ? existing : inflate(); // a second thread: spread the leases out first
        int c = cell(stripe);
        long before = (long) CELLS.getOpaque(cs, c);
        if (CELLS.compareAndSet(cs, c, before, before + delta)) {
            return before;
        }
        LeaseStripes.contended();
        return (long) CELLS.getAndAdd(cs, c, delta);
    }

    /** The region was retired or is being evicted: undo the add; whether the caller must deregister. */
    private int backOff(int slot, long delta) {
        raceWindowsForTest.beforeBackOff(this);
        add(slot, -delta); // this lease was never used
        return ((long) STATE.getVolatile(this) & RETIRED) != 0 && claimDeregistrationIfUnleased()
                ? NOT_RETAINED_MUST_DEREGISTER : NOT_RETAINED;
    }

    /**
     * The cells, made now if they do not exist yet: published with a compare-and-set (a volatile write) before
     * any lease is added to them, so that a retirer that sums after setting RETIRED and sees a lease's add
     * also sees the array it was made in.
     */
    private long[] inflate() {
        long[] fresh = new long[(STRIPES + 1) * CELL_STRIDE];
        long[] won = (long[]) CELLS_ARRAY.compareAndExchange(this, (long[]) null, fresh);
        return won == null ? fresh : won;
    }

    /** The word of {@code slot}: {@link #base}, or a cell (which exists once a lease was counted there). */
    private void add(int slot, long delta) {
        if (slot == BASE_SLOT) {
            BASE.getAndAdd(this, delta);
        } else {
            CELLS.getAndAdd(existingCells(), cell(slot), delta);
        }
    }

    private long read(int slot) {
        return slot == BASE_SLOT ? (long) BASE.getVolatile(this) : (long) CELLS.getVolatile(existingCells(), cell(slot));
    }

    private boolean compareAndSet(int slot, long expected, long value) {
        return slot == BASE_SLOT ? BASE.compareAndSet(this, expected, value)
                : CELLS.compareAndSet(existingCells(), cell(slot), expected, value);
    }

    private long[] existingCells() {
        long[] cs = cells;
        if (cs == null) {
            throw new IllegalStateException("a lease cell was used before the cells were made");
        }
        return cs;
    }

    /**
     * Drops a lease counted in {@code slot} (what {@link #tryRetain} returned).
     *
     * @return true when the caller must deregister the region (it was retired and this was the last lease)
     */
    boolean release(int slot) {
        add(slot, -LEASE_ONE);
        return ((long) STATE.getVolatile(this) & RETIRED) != 0 && claimDeregistrationIfUnleased();
    }

    /**
     * Whether a cache that samples its policy's accesses ({@link RegistrationCache.Builder#sampledAccessRecording})
     * records the release of a lease counted in {@code slot}: every release until the word has counted
     * {@value #FULL_RECORD_HITS} hits, then one in {@value #ACCESS_SAMPLE}. Past that many hits the region is
     * hot, and recording each hit cost W4's hits half their time. A read of the word the releasing thread just
     * wrote; a hit on the same word by another thread in between only shifts which release is recorded.
     */
    boolean recordsRelease(int slot) {
        long hits = read(slot) >>> 32;
        return hits <= FULL_RECORD_HITS || (hits & (ACCESS_SAMPLE - 1)) == 0;
    }

    /**
     * Sets RETIRED (a volatile read-modify-write), <em>then</em> sums the lease cells: the order that pairs
     * with {@link #addLeaseThenReadState}. The caller unlinked the region from the index under the index lock.
     *
     * @return true when the region was idle and the caller won the deregistration; false when leases remain
     *         (the last release deregisters) or another retirer or releaser won it
     */
    boolean retire() {
        STATE.getAndBitwiseOr(this, RETIRED);
        return claimDeregistrationIfUnleased();
    }

    /**
     * The broken variant {@link CacheFault#RETIRE_SUMS_FIRST}: {@link #retire} summing the leases before it sets
     * RETIRED, so an acquire that adds its lease in between, and reads the state before the bit, keeps a lease on
     * a region the retirer then deregisters (jcstress only).
     */
    boolean retireSummingFirstForFault() {
        boolean idle = sumLeases() == 0;
        STATE.getAndBitwiseOr(this, RETIRED);
        if (!idle) {
            return false;
        }
        long s;
        do {
            s = (long) STATE.getVolatile(this);
            if ((s & CLAIMED) != 0) {
                return false;
            }
        } while (!STATE.compareAndSet(this, s, s | CLAIMED));
        return true;
    }

    /**
     * Retires only if live and unleased: never takes a region from under an acquire (H5). True: the caller
     * won the deregistration.
     *
     * <p>Once the cells sum to zero under EVICTING, no lease exists or can be taken (an acquire adds before it
     * reads the state word, and sees EVICTING), so the evictor retires and claims in one compare-and-set.
     * Claiming separately would let an acquire that backs off in between win the claim and deregister a
     * region that is still linked in the index, where the evictor is the one that unlinks it.
     */
    boolean tryRetireIdle() {
        RaceWindows windows = raceWindowsForTest;
        windows.beforeMark(this);
        long s = (long) STATE.getVolatile(this);
        if ((s & (RETIRED | EVICTING)) != 0 || !STATE.compareAndSet(this, s, s | EVICTING)) {
            return false;
        }
        windows.afterMark(this);
        if (sumLeases() != 0) { // leased after all: give up, and let acquirers in again
            windows.afterLeasedSum(this);
            STATE.getAndBitwiseAnd(this, ~EVICTING);
            return false;
        }
        windows.afterSum(this);
        do {
            s = (long) STATE.getVolatile(this);
            if ((s & (RETIRED | CLAIMED)) != 0) {
                return false; // an invalidation retired it meanwhile, under the index lock: it unlinks it
            }
        } while (!STATE.compareAndSet(this, s, s | RETIRED | CLAIMED));
        return true;
    }

    /**
     * The broken variant {@link CacheFault#EVICT_WITHOUT_MARK}: {@link #tryRetireIdle} without its EVICTING mark,
     * so an acquire that adds its lease between the sum and the claim is not turned away (jcstress and model
     * tests only).
     */
    boolean retireIdleWithoutMarkForFault() {
        if ((((long) STATE.getVolatile(this)) & (RETIRED | EVICTING)) != 0 || sumLeases() != 0) {
            return false;
        }
        long s;
        do {
            s = (long) STATE.getVolatile(this);
            if ((s & (RETIRED | CLAIMED)) != 0) {
                return false;
            }
        } while (!STATE.compareAndSet(this, s, s | RETIRED | CLAIMED));
        return true;
    }

    /** The broken variant's eviction: retires and claims whatever the leases (jcstress and model tests only). */
    boolean forceRetireForFault() {
        long before = (long) STATE.getAndBitwiseOr(this, RETIRED | CLAIMED);
        return (before & CLAIMED) == 0;
    }

    /**
     * After retirement (RETIRED already set, by a volatile read-modify-write): sums the cells with volatile
     * reads and, on zero, competes for {@link #CLAIMED} with a compare-and-set. The single winner deregisters.
     */
    private boolean claimDeregistrationIfUnleased() {
        if (sumLeases() != 0) {
            return false;
        }
        long s;
        do {
            s = (long) STATE.getVolatile(this);
            if ((s & CLAIMED) != 0) {
                return false;
            }
        } while (!STATE.compareAndSet(this, s, s | CLAIMED));
        return true;
    }

    private long sumLeases() {
        long sum = (long) BASE.getVolatile(this) & LEASE_BITS;
        long[] cs = cells; // read after the base: a lease added to a cell was added after the array was published
        if (cs != null) {
            for (int i = 0; i < STRIPES; i++) {
                sum += (long) CELLS.getVolatile(cs, cell(i)) & LEASE_BITS;
            }
        }
        return sum;
    }

    /**
     * Moves a full word's hits into {@link RareCounts#harvestedHits}, leaving the lease half untouched. Rare (every 2^30
     * hits of a word). A compare-and-set, so that two threads of one slot that both saw the threshold
     * harvest once: the second sees the hit half below it and does nothing.
     */
    private void harvest(int slot) {
        long v;
        do {
            v = read(slot);
            if ((v >>> 32) < HARVEST_AT) {
                return;
            }
            raceWindowsForTest.beforeHarvestSwap(this); // once per 2^30 hits on a word: off the hit path
        } while (!compareAndSet(slot, v, v - HARVEST_AT * HIT_ONE));
        rareCounts().harvestedHits.getAndAdd(HARVEST_AT);
    }

    /**
     * Test seam: windows where another thread's acquire, release or invalidation can come in, which the race
     * tests cannot pin down (jcstress did not reach the evictor's window between its sum and its claim); tests
     * set {@link #raceWindowsForTest} to run that other thread's step there. In use it is
     * {@link RaceWindows#NONE}, whose empty calls the JIT inlines away: one static read per eviction attempt, per
     * re-entry into the policy, per back-off and per join, and two per run of the policy's maintenance (a write's,
     * or a release's once its buffer of recorded reads fills); none on a hit's own path.
     */
    interface RaceWindows {
        /** No windows: what the cache runs with. */
        RaceWindows NONE = new RaceWindows() {
        };

        /** The evictor picked the region (idle then) and has not marked it yet. */
        default void beforeMark(Region r) {
        }

        /** The evictor marked the region (EVICTING) and has not summed its leases yet. */
        default void afterMark(Region r) {
        }

        /**
         * The evictor marked the region and its sum found a lease; it has not taken its mark off yet (a release
         * here finds the region evicting, not idle).
         */
        default void afterLeasedSum(Region r) {
        }

        /** The evictor marked the region and its sum found no lease; it has not retired or claimed it yet. */
        default void afterSum(Region r) {
        }

        /** A release left a region the policy had dropped while leased idle; it is not back in the policy yet. */
        default void beforeReentry(Region r) {
        }

        /** An acquire's lease met a retired or evicting region; the acquire has not taken the lease back yet. */
        default void beforeBackOff(Region r) {
        }

        /** A joiner's wait for another thread's registration returned this region; it has not taken a lease yet. */
        default void beforeJoinerLease(Region r) {
        }

        /**
         * The policy chose this idle region as a victim and retired it, inside the policy call of a publication
         * (or of a walk); the thread that made the call has not unlinked it yet.
         */
        default void afterVictimChosen(Region r) {
        }

        /**
         * A budget walk found every region it could take leased and is about to set the overrun flag (after which
         * releases walk too) and walk once more; a release here still finds the flag clear.
         */
        default void beforeOverrunFlag() {
        }

        /** A harvest read a word past the threshold; it has not swapped the harvested hits out yet. */
        default void beforeHarvestSwap(Region r) {
        }

        /**
         * This thread holds Caffeine's eviction lock to run the policy's maintenance: before it runs
         * ({@code ran} false) and after ({@code ran} true). A write to the policy on another thread meanwhile
         * cannot run its own.
         */
        default void inPolicyMaintenance(boolean ran) {
        }
    }

    static RaceWindows raceWindowsForTest = RaceWindows.NONE;

    /** Test seam: sets the hit half of {@code slot}'s word (making the cells if it is one of them). */
    void seedHitsForTest(int slot, long hits) {
        if (slot != BASE_SLOT) {
            inflate();
        }
        long v = read(slot);
        compareAndSet(slot, v, (v & LEASE_BITS) | (hits << 32));
    }

    /** Test seam: a second harvest of {@code slot}, as by a thread that saw the threshold after another did. */
    void harvestForTest(int slot) {
        harvest(slot);
    }

    /** Test seam: marks the region as an evictor does before it sums the leases ({@link #tryRetireIdle}). */
    void beginEvictionForTest() {
        STATE.getAndBitwiseOr(this, EVICTING);
    }

    /** Test seam: the evictor gives up, as {@link #tryRetireIdle} does when its sum finds a lease. */
    void endEvictionForTest() {
        STATE.getAndBitwiseAnd(this, ~EVICTING);
    }

    /** Test seam: the hit half of {@code slot}'s word as it is now (harvesting keeps it below HARVEST_AT). */
    long hitHalfForTest(int slot) {
        return read(slot) >>> 32;
    }

    /** Hits served by this region: the words' hit halves plus what was harvested from them. */
    long hits() {
        RareCounts rc = rare;
        long sum = (rc == null ? 0 : rc.harvestedHits.get()) + ((long) BASE.getVolatile(this) >>> 32);
        long[] cs = cells;
        if (cs != null) {
            for (int i = 0; i < STRIPES; i++) {
                sum += (long) CELLS.getVolatile(cs, cell(i)) >>> 32;
            }
        }
        return sum;
    }

    long leases() {
        return sumLeases();
    }

    boolean isLive() {
        return ((long) STATE.getVolatile(this) & (RETIRED | EVICTING)) == 0;
    }

    /** Whether RETIRED is set: the region has left, or is leaving, the index for good. */
    boolean isRetired() {
        return ((long) STATE.getVolatile(this) & RETIRED) != 0;
    }

    /**
     * The policy dropped this region though it could not evict it. A volatile write, which the policy's
     * listener follows with a read of the leases and state ({@link #isIdle}): the order that pairs with a
     * release (lease word, then this flag) and with a withdrawing evictor (state word, then this flag), so
     * that whichever of them makes the region idle last sees it idle.
     */
    void markDroppedByPolicy() {
        DROPPED.setVolatile(this, true);
    }

    boolean isDroppedByPolicy() {
        return (boolean) DROPPED.getVolatile(this);
    }

    /** Clears the dropped mark; true for the one caller that then puts the region back into the policy. */
    boolean claimReentry() {
        return DROPPED.compareAndSet(this, true, false);
    }

    boolean isIdle() {
        return isLive() && sumLeases() == 0;
    }

    boolean isDeregistered() {
        return deregistration == DEREGISTERED;
    }

    /**
     * The outcome of the next (or last successful) deregistration attempt; see {@link #deregistration}. Made
     * here, by whichever caller comes first, when nobody has asked before.
     */
    CompletableFuture<Void> deregistration() {
        CompletableFuture<Void> d = deregistration;
        if (d != null) {
            return d;
        }
        CompletableFuture<Void> fresh = new CompletableFuture<>();
        @SuppressWarnings("unchecked")
        CompletableFuture<Void> won = (CompletableFuture<Void>) OUTCOME.compareAndExchange(this, null, fresh);
        return won == null ? fresh : won;
    }

    /**
     * The keys are dead: completes the outcome that waiters hold, if any, and leaves {@link #DEREGISTERED} for
     * later ones. A waiter that asks concurrently either installed its outcome first (completed here) or finds
     * the sentinel.
     */
    void deregistered() {
        @SuppressWarnings("unchecked")
        CompletableFuture<Void> waited = (CompletableFuture<Void>) OUTCOME.getAndSet(this, DEREGISTERED);
        if (waited != null) {
            waited.complete(null);
        }
    }

    /**
     * After a failed attempt: leaves the retry's outcome to be made when asked for, and returns the failed
     * attempt's (null when nobody waited), for the caller to complete exceptionally once it has let go of the
     * lock. Under the cache's lock.
     */
    @Nullable CompletableFuture<Void> startRetry() {
        @SuppressWarnings("unchecked")
        CompletableFuture<Void> failed = (CompletableFuture<Void>) OUTCOME.getAndSet(this, null);
        rareCounts().failedDeregistrations++;
        return failed;
    }

    /** Failed deregistration attempts so far (the retry's backoff grows with it); read under the cache's lock. */
    int failedDeregistrations() {
        RareCounts rc = rare;
        return rc == null ? 0 : rc.failedDeregistrations;
    }

    /** The registration this region holds, as the registrar made it (an equal record, made on each call). */
    Registration registration() {
        return new Registration(start, end - start, access, lkey, rkey, protectionDomain, handle, attachment);
    }

    /** Bytes the registrar pinned: the range widened to the cache's alignment (whole pages). */
    long pinnedBytes() {
        return AddressRange.alignedSpan(start, end, 1L << (shape & SHIFT_MASK));
    }

    private RareCounts rareCounts() {
        RareCounts rc = rare;
        if (rc != null) {
            return rc;
        }
        RareCounts fresh = new RareCounts();
        RareCounts won = (RareCounts) RARE.compareAndExchange(this, (RareCounts) null, fresh);
        return won == null ? fresh : won;
    }

    /** See {@link #rare}. */
    private static final class RareCounts {
        /** The owner of an owned region (set at construction, so before the region is published), else null. */
        final @Nullable OwnerRef owner;

        RareCounts() {
            this(null);
        }

        RareCounts(@Nullable OwnerRef owner) {
            this.owner = owner;
        }

        /** Hits moved out of the lease words before they could wrap (see {@link #HARVEST_AT}). */
        final AtomicLong harvestedHits = new AtomicLong();
        /** Written under the cache's lock ({@link #startRetry}). */
        int failedDeregistrations;
    }

    boolean isRemote() {
        return Access.isRemote(access);
    }

    /**
     * Whether this region serves requests of {@code requester}: an address-keyed region (no owner) serves only
     * address-keyed requests ({@code requester} null); an owned one only requests of that same owner object, while
     * the region references it. A requester holds its owner strongly, so a match proves the owner was not
     * collected: the memory the region was registered on is still the owner's (see docs/SAFETY-MODEL.md, F1).
     */
    boolean ownedBy(@Nullable Object requester) {
        if ((shape & OWNED) == 0) {
            return requester == null;
        }
        RareCounts rc = rare; // never null for an owned region: set in the constructor
        return requester != null && rc != null && rc.owner != null && rc.owner.get() == requester;
    }

    /** The owner reference of an owned region, or null for an address-keyed one. */
    @Nullable OwnerRef owner() {
        RareCounts rc = rare;
        return (shape & OWNED) == 0 || rc == null ? null : rc.owner;
    }

    /** Whether this region covers {@code [from, to)} with rights that serve {@code requested} (I6). */
    boolean serves(long from, long to, int requested, boolean widenRemote) {
        return start <= from && end >= to && grants(access, requested, widenRemote);
    }

    /**
     * Whether rights {@code granted} serve {@code requested}: a superset, and, unless {@code widenRemote},
     * exactly the same remote rights (I6).
     */
    static boolean grants(int granted, int requested, boolean widenRemote) {
        return Access.includes(granted, requested)
                && (widenRemote || (granted & Access.REMOTE_MASK) == (requested & Access.REMOTE_MASK));
    }

    /**
     * The eviction policy's frequency sketch hashes its keys: a hash of the registration (its range, rights and
     * keys) makes the policy's choices a function of what was registered, so one thread's run replays exactly,
     * where the identity hash would differ from run to run. Equality stays identity.
     */
    @Override
    public int hashCode() {
        return hash;
    }

    private static int hashOf(long start, long end, int access, int lkey, int rkey, long handle) {
        long h = start * 0x9E3779B97F4A7C15L ^ (end - start) * 0xC2B2AE3D27D4EB4FL
                ^ ((long) lkey << 32 | (rkey & 0xFFFF_FFFFL)) * 0x165667B19E3779F9L ^ handle ^ access;
        h = (h ^ (h >>> 31)) * 0xBF58476D1CE4E5B9L;
        return (int) (h ^ (h >>> 29) ^ (h >>> 32));
    }

    @Override
    public boolean equals(@Nullable Object o) {
        return this == o;
    }


    @Override
    public String toString() {
        String life = isLive() ? "live" : isDeregistered() ? "deregistered" : "retired";
        return "Region[0x" + Long.toHexString(start) + "..0x" + Long.toHexString(end) + " "
                + Access.describe(access) + " " + life + " leases=" + sumLeases() + "]";
    }
}
