package io.mrcache.core;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.mrcache.core.events.CrossTenantEvictionEvent;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One pinned-memory limit that several caches (tenants) draw from: a process pins against one
 * {@code RLIMIT_MEMLOCK}, however many protection domains and caches it has. Each tenant joins with a
 * {@link TenantShare}: a name, a guarantee and a ceiling ({@link RegistrationCache.Builder#tenant}).
 *
 * <h2>What it promises</h2>
 * <ul>
 * <li>T1 (limit): the bytes all tenants hold (registered, quarantined, or in flight) never exceed
 * {@link #limitBytes()}: a registration reserves its bytes here before the registrar is called, and is refused
 * if no room can be made. (A registrar that returns a wider registration than asked is the one exception; it
 * is counted in {@link #overruns()}.)
 * <li>T2 (guarantee): a tenant can always reach its guarantee, however busy the others are: the guarantees are
 * held back (they add up to at most the limit, checked at join), and the rest, the shared part, is what
 * tenants compete for. No other tenant's request evicts a tenant below its guarantee, and nothing ever
 * evicts a leased region (I5 holds per tenant). A tenant that joins late, while the others hold more than the
 * shared part that its guarantee leaves, is admitted: what they hold above their guarantees comes back to it as
 * their leases end (their idle regions are evicted for it at once). A request within the guarantee that finds
 * nothing idle to take waits for that, up to {@link #roomWait()}, before it is refused; the refusal names who
 * holds what.
 * <li>T3 (ceiling): a tenant never holds more than its ceiling; a single request above it fails at once with
 * {@link TenantCeilingExceededException} and evicts nothing of anyone.
 * <li>T4 (room): when a registration would break T1 or the shared part is full, room is made from idle regions
 * above guarantees, each tenant's coldest first (its own W-TinyLFU order), tenants in the order of the
 * {@link RoomRule}. Only when that frees nothing twice running is the registration refused, with a
 * {@link PinnedMemoryExhaustedException} naming what each tenant holds; unless room is on its way back (a
 * closing tenant's bytes not yet deregistered, another request's eviction under way, or, for a request within
 * its tenant's guarantee, the others' bytes above theirs): then it waits for that room, up to
 * {@link #roomWait()}, and is refused only if none came.
 * </ul>
 * Guarantees are reservations, not loans: a guarantee a tenant does not use is not lent to the others. A lent
 * guarantee could only be taken back by evicting the borrower, and a borrower's regions may be leased for as
 * long as a transfer takes; then the guarantee would not hold. Caches that want to share everything join with
 * a guarantee of zero.
 *
 * <h2>Concurrency</h2>
 * <p>Every tenant's account and the total change under {@link #lock}, and no other lock is ever taken under it,
 * nor a registrar called: reservations happen on misses and releases on deregistrations, both microseconds
 * apart at best, so one short lock costs little beside them. Making room is done outside the lock: the
 * requester plans, under the lock, how many bytes each victim should give and adds them to the victim's
 * {@code beingEvicted}, so two requesters never count the same bytes above a guarantee as theirs to take;
 * then it calls each victim's {@link Tenant.RoomMaker} with no lock held (that takes the victim cache's own
 * locks, which never call back into this one), which deregisters the victims before it returns, and their
 * release lowers the account here. Then the requester checks again under the lock. A region is retired only
 * through {@link Region#tryRetireIdle()}, the same claim every evictor uses, so a lease is never taken.
 *
 * <p>Why T1 and T2 hold together: a reservation is admitted only if the total stays within the limit and the
 * bytes tenants hold above their guarantees stay within the shared part (limit minus guarantees). The bytes
 * at or below each guarantee add up to at most the guarantees, so a tenant growing within its guarantee never
 * needs another's bytes except after a join shrank the shared part below what it held, which room making
 * then takes back from the tenants above their guarantees.
 */
public final class PinnedMemoryLimit {
    /** Rounds in a row that free nothing before a registration is refused. */
    private static final int FRUITLESS_ROUNDS = 2;
    /**
     * Rounds in all before a registration is refused: bounds a request that other tenants' requests keep
     * taking the freed room from (each round that frees something lets some request through).
     */
    private static final int MAX_ROUNDS = 10_000;
    /** How long a request waits for room on its way back before it looks again: woken early by any release. */
    private static final long WAIT_SLICE_NANOS = 1_000_000;
    /** The default of {@link #roomWait()}. */
    public static final Duration DEFAULT_ROOM_WAIT = Duration.ofSeconds(1);

    private final long limitBytes;
    private final RoomRule rule;
    private final long roomWaitNanos;
    private final ReentrantLock lock = new ReentrantLock();
    /** Signalled whenever bytes come back or an eviction ends: a request waiting for room looks again. */
    private final Condition roomReturned = lock.newCondition();
    @GuardedBy("lock")
    private final List<Tenant> tenants = new ArrayList<>();
    @GuardedBy("lock")
    private long total;
    @GuardedBy("lock")
    private long peak;
    @GuardedBy("lock")
    private long overruns;

    /** A limit of {@code limitBytes} with the default rule, {@link RoomRule#FURTHEST_ABOVE_GUARANTEE}. */
    public PinnedMemoryLimit(long limitBytes) {
        this(limitBytes, RoomRule.FURTHEST_ABOVE_GUARANTEE);
    }

    /** A limit of {@code limitBytes} under {@code rule}, waiting {@link #DEFAULT_ROOM_WAIT} for room on its way back. */
    public PinnedMemoryLimit(long limitBytes, RoomRule rule) {
        this(limitBytes, rule, DEFAULT_ROOM_WAIT);
    }

    /**
     * A limit of {@code limitBytes} under {@code rule}; a request that finds room on its way back (see T4) waits for
     * it at most {@code roomWait} before it is refused ({@link Duration#ZERO}: never waits).
     */
    public PinnedMemoryLimit(long limitBytes, RoomRule rule, Duration roomWait) {
        if (limitBytes <= 0) {
            throw new IllegalArgumentException("pinned-memory limit " + limitBytes + " bytes must be > 0");
        }
        java.util.Objects.requireNonNull(roomWait, "roomWait");
        if (roomWait.isNegative()) {
            throw new IllegalArgumentException("roomWait " + roomWait + " must be >= 0 (Duration.ZERO: never wait)");
        }
        this.limitBytes = limitBytes;
        this.rule = java.util.Objects.requireNonNull(rule, "rule");
        this.roomWaitNanos = roomWait.compareTo(Duration.ofDays(365)) > 0 ? Duration.ofDays(365).toNanos()
                : roomWait.toNanos();
    }

    public long limitBytes() {
        return limitBytes;
    }

    public RoomRule rule() {
        return rule;
    }

    /** How long a request waits for room on its way back (see T2 and T4) before it is refused. */
    public Duration roomWait() {
        return Duration.ofNanos(roomWaitNanos);
    }

    /** Bytes all tenants hold now (in flight included). */
    public long pinnedBytes() {
        lock.lock();
        try {
            return total;
        } finally {
            lock.unlock();
        }
    }

    /** The most the tenants ever held at once. */
    public long peakPinnedBytes() {
        lock.lock();
        try {
            return peak;
        } finally {
            lock.unlock();
        }
    }

    /** Registrations that took the total over the limit because the registrar returned more than was asked. */
    public long overruns() {
        lock.lock();
        try {
            return overruns;
        } finally {
            lock.unlock();
        }
    }

    /** Every tenant still holding bytes or open, in the order they joined. */
    public List<TenantMetrics> tenants() {
        lock.lock();
        try {
            return tenants.stream().map(Tenant::metrics).toList();
        } finally {
            lock.unlock();
        }
    }

    /** One tenant's metrics, read under the lock. */
    TenantMetrics metrics(Tenant t) {
        lock.lock();
        try {
            return t.metrics();
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ membership

    /**
     * Adds a tenant.
     *
     * @throws IllegalArgumentException when an open tenant has the name already, or the guarantees would add up
     *                                  to more than the limit (the message lists what each tenant holds back)
     */
    Tenant join(TenantShare share, Tenant.RoomMaker roomMaker) {
        lock.lock();
        try {
            long guaranteed = 0;
            for (Tenant t : tenants) {
                if (t.name.equals(share.name()) && !t.closing) {
                    throw new IllegalArgumentException("a tenant named '" + share.name() + "' already draws from this"
                            + " limit: give each cache its own name");
                }
                guaranteed += t.guarantee;
            }
            if (share.guaranteeBytes() > limitBytes - guaranteed) {
                throw new IllegalArgumentException(String.format("tenant '%s' asks a guarantee of %,d bytes, but"
                        + " the limit of %,d bytes has %,d left that no tenant is guaranteed (%s): lower a guarantee"
                        + " or raise the limit", share.name(), share.guaranteeBytes(), limitBytes,
                        limitBytes - guaranteed, holdings()));
            }
            Tenant t = new Tenant(this, share.name(), share.guaranteeBytes(), Math.min(share.ceilingBytes(), limitBytes),
                    roomMaker);
            tenants.add(t);
            return t;
        } finally {
            lock.unlock();
        }
    }

    /** The tenant's cache began to close: its guarantee returns now, its bytes as they are deregistered. */
    void closing(Tenant t) {
        lock.lock();
        try {
            t.closing = true;
            t.guarantee = 0;
            if (t.reserved == 0) {
                tenants.remove(t);
            }
            roomReturned.signalAll(); // its guarantee is shared room now
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ accounting

    /**
     * Reserves {@code bytes} for a registration of tenant {@code t}, making room first if needed (T4). Called on a
     * miss before the registrar, with no lock held.
     *
     * @throws TenantCeilingExceededException when {@code bytes} alone exceeds the tenant's ceiling (nothing evicted)
     * @throws PinnedMemoryExhaustedException when no room could be made
     */
    void reserve(Tenant t, long bytes) {
        lock.lock();
        try {
            if (bytes > t.ceiling) {
                t.admissionsRefused++;
                throw new TenantCeilingExceededException(String.format("tenant '%s': a registration of %,d bytes"
                        + " exceeds the tenant's ceiling of %,d bytes (it holds %,d pinned); nothing was evicted."
                        + " Register the buffer in smaller pieces, or give the tenant a higher ceiling"
                        + " (TenantShare.ceilingBytes)", t.name, bytes, t.ceiling, t.reserved), t.name);
            }
        } finally {
            lock.unlock();
        }
        int fruitless = 0;
        long waitingSince = 0; // when it began to wait for room on its way back; 0 while it has not
        for (int round = 0;;) { // rounds of room making: a wait for room on its way back is not one
            List<Planned> plan;
            boolean othersEvicting;
            lock.lock();
            try {
                long own = t.reserved + bytes - t.ceiling;
                long shared = sharedShortfall(t, bytes);
                if (own <= 0 && shared <= 0) {
                    add(t, bytes);
                    return;
                }
                othersEvicting = tenants.stream().anyMatch(u -> u.beingEvicted > 0);
                if (fruitless >= FRUITLESS_ROUNDS || round >= MAX_ROUNDS) {
                    // the clock only for a request that may wait: a refusal at once reads no time
                    long waited = round >= MAX_ROUNDS || !roomOnItsWay(t, bytes) ? -1
                            : waitingSince == 0 ? 0 : System.nanoTime() - waitingSince;
                    if (waited < 0 || waited >= roomWaitNanos) {
                        t.admissionsRefused++;
                        throw new PinnedMemoryExhaustedException(exhaustedMessage(t, bytes, own, shared, waited),
                                t.reserved);
                    }
                    if (waitingSince == 0) {
                        waitingSince = System.nanoTime() | 1; // never 0
                    }
                    roomReturned.awaitNanos(Math.min(roomWaitNanos - waited, WAIT_SLICE_NANOS)); // a release wakes it
                    fruitless = FRUITLESS_ROUNDS - 1; // one more round of room making, then wait again
                    continue;
                }
                plan = planRoom(t, own, shared);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                t.admissionsRefused++;
                throw new PinnedMemoryExhaustedException("tenant '" + t.name + "': interrupted while waiting for room"
                        + " for " + grouped(bytes) + " bytes (" + describeHoldingsLocked() + ")", t.reserved);
            } finally {
                lock.unlock();
            }
            if (plan.isEmpty() && othersEvicting) {
                Thread.yield(); // the bytes it could take are another request's to evict now: see what is left after
            } else {
                fruitless = makeRoom(t, plan) == 0 ? fruitless + 1 : 0;
            }
            round++;
        }
    }

    /**
     * Whether room for {@code t} is on its way back, so that a request that found nothing to evict should wait
     * rather than be refused: a closing tenant's bytes are still being deregistered, another request's eviction
     * is under way, or {@code t} asks within its guarantee (then the shortfall is the others' bytes above their
     * guarantees, which come back to it as their leases end: T2).
     */
    @GuardedBy("lock")
    private boolean roomOnItsWay(Tenant t, long bytes) {
        if (t.reserved + bytes <= t.guarantee) {
            return true;
        }
        for (Tenant u : tenants) {
            if (u != t && ((u.closing && u.reserved > 0) || u.beingEvicted > 0)) {
                return true;
            }
        }
        return false;
    }

    /** A registration reserved {@code reserved} bytes and pins {@code actual}: the account takes the difference. */
    void settle(Tenant t, long reserved, long actual) {
        lock.lock();
        try {
            add(t, actual - reserved);
            if (actual > reserved && total > limitBytes) {
                overruns++;
            }
        } finally {
            lock.unlock();
        }
    }

    /** Bytes a tenant no longer holds: a deregistration succeeded, or a reserved registration failed. */
    void released(Tenant t, long bytes) {
        lock.lock();
        try {
            add(t, -bytes);
            if (t.closing && t.reserved == 0) {
                tenants.remove(t);
            }
            roomReturned.signalAll();
        } finally {
            lock.unlock();
        }
    }

    @GuardedBy("lock")
    private void add(Tenant t, long bytes) {
        t.reserved += bytes;
        total += bytes;
        peak = Math.max(peak, total);
    }

    /** Bytes others (or {@code t} above its guarantee) must give so that {@code t} may add {@code bytes}. */
    @GuardedBy("lock")
    private long sharedShortfall(Tenant t, long bytes) {
        long guaranteed = 0;
        long above = 0;
        for (Tenant u : tenants) {
            guaranteed += u.guarantee;
            above += u.aboveGuarantee();
        }
        long growthAbove = Math.max(0, t.reserved + bytes - t.guarantee) - t.aboveGuarantee();
        long overShared = growthAbove == 0 ? 0 : above + growthAbove - (limitBytes - guaranteed);
        return Math.max(total + bytes - limitBytes, overShared);
    }

    /** How much a victim is asked to give, and the most it may. */
    private record Planned(Tenant victim, long want, long max) {
    }

    @GuardedBy("lock")
    private List<Planned> planRoom(Tenant t, long own, long shared) {
        List<Planned> plan = new ArrayList<>(2);
        if (own > 0) { // over its ceiling: its own regions, down to nothing if need be
            long max = Math.max(0, t.reserved - t.beingEvicted);
            plan.add(new Planned(t, Math.min(own, max), max));
            t.beingEvicted += max;
        }
        long needed = shared;
        for (Tenant v : victimsInOrder(t)) {
            if (needed <= 0) {
                break;
            }
            long max = v.available();
            if (max > 0) {
                plan.add(new Planned(v, Math.min(needed, max), max));
                v.beingEvicted += max;
                needed -= max;
            }
        }
        return plan;
    }

    @GuardedBy("lock")
    private List<Tenant> victimsInOrder(Tenant requester) {
        List<Tenant> order = new ArrayList<>(tenants);
        order.sort(Comparator.comparingLong(Tenant::aboveGuarantee).reversed());
        if (rule == RoomRule.REQUESTER_FIRST && order.remove(requester)) {
            order.addFirst(requester);
        }
        return order;
    }

    /** Asks each planned victim for room, with no lock held; returns the bytes freed. */
    private long makeRoom(Tenant requester, List<Planned> plan) {
        long freed = 0;
        List<Tenant.Freed> results = new ArrayList<>(plan.size());
        try {
            for (Planned p : plan) {
                Tenant.Freed f = p.want() <= 0 ? Tenant.Freed.NOTHING : p.victim().roomMaker.evictColdest(p.want(), p.max());
                results.add(f);
                freed += f.bytes();
            }
        } finally {
            lock.lock();
            try {
                if (!plan.isEmpty()) {
                    roomReturned.signalAll(); // these bytes are no longer another request's to evict
                }
                for (int i = 0; i < plan.size(); i++) {
                    Planned p = plan.get(i);
                    p.victim().beingEvicted -= p.max();
                    Tenant.Freed f = i < results.size() ? results.get(i) : Tenant.Freed.NOTHING;
                    if (p.victim() != requester && f.regions() > 0) {
                        p.victim().evictionsSuffered += f.regions();
                        requester.evictionsCaused += f.regions();
                        crossTenantEvicted(requester, p.victim(), f);
                    }
                }
            } finally {
                lock.unlock();
            }
        }
        return freed;
    }

    private static void crossTenantEvicted(Tenant requester, Tenant victim, Tenant.Freed f) {
        CrossTenantEvictionEvent event = new CrossTenantEvictionEvent();
        if (event.shouldCommit()) {
            event.requester = requester.name;
            event.victim = victim.name;
            event.regions = f.regions();
            event.bytes = f.bytes();
            event.victimPinnedAfter = victim.reserved;
            event.commit();
        }
    }

    // The refusal messages group digits themselves, not through the locale's formatter: the same text everywhere,
    // and no locale data loaded in the middle of a refused registration (the model checker counted that loading
    // as part of the operation and called it hung).

    /** What each tenant holds, for errors. */
    String describeHoldings() {
        lock.lock();
        try {
            return "limit " + grouped(limitBytes) + " bytes, " + grouped(total) + " pinned: " + holdings();
        } finally {
            lock.unlock();
        }
    }

    @GuardedBy("lock")
    private String holdings() {
        if (tenants.isEmpty()) {
            return "no tenants";
        }
        StringBuilder sb = new StringBuilder();
        for (Tenant u : tenants) {
            sb.append(sb.isEmpty() ? "" : "; ").append('\'').append(u.name).append("' holds ").append(grouped(u.reserved))
                    .append(" (guarantee ").append(grouped(u.guarantee)).append(", ceiling ").append(grouped(u.ceiling))
                    .append(')');
        }
        return sb.toString();
    }

    @GuardedBy("lock")
    private String exhaustedMessage(Tenant t, long bytes, long own, long shared, long waitedNanos) {
        return "tenant '" + t.name + "' cannot register " + grouped(bytes) + " more bytes: " + describeHoldingsLocked()
                + "; no idle region " + (own > 0 ? "of its own below its ceiling" : "above a guarantee")
                + " could be evicted (" + grouped(Math.max(own, shared)) + " bytes short)"
                + (waitedNanos <= 0 ? "" : ", also after waiting " + grouped(waitedNanos / 1_000_000)
                        + " ms for room on its way back")
                + ". Release leases sooner, raise the limit, or lower the other tenants' guarantees";
    }

    @GuardedBy("lock")
    private String describeHoldingsLocked() {
        return "the limit of " + grouped(limitBytes) + " bytes holds " + grouped(total) + " (" + holdings() + ")";
    }

    /** {@code v} with a comma between each group of three digits, as {@code %,d} in an English locale. */
    static String grouped(long v) {
        String digits = Long.toString(v);
        int sign = v < 0 ? 1 : 0;
        StringBuilder sb = new StringBuilder(digits.length() + digits.length() / 3);
        for (int i = 0; i < digits.length(); i++) {
            sb.append(digits.charAt(i));
            int left = digits.length() - 1 - i;
            if (i >= sign && left > 0 && left % 3 == 0) {
                sb.append(',');
            }
        }
        return sb.toString();
    }

    @Override
    public String toString() {
        return "PinnedMemoryLimit[" + describeHoldings() + "]";
    }
}
