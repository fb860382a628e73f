package io.mrcache.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.testing.RecordingRegistrar;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.jetbrains.kotlinx.lincheck.Actor;
import org.jetbrains.kotlinx.lincheck.execution.ExecutionScenario;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.junit.jupiter.api.Test;

/**
 * Each window of the protocol under Lincheck's model checker: for every {@link CacheFault} that
 * {@link ProtocolModelCheckingTest}'s generated scenarios do not reach, a fixed scenario (a Lincheck custom
 * scenario: a starting state, two threads, a final part ending in {@link Window#check}) of the operations that
 * race in that window, {@link #INVOCATIONS} interleavings of it explored, on the real cache (which must pass)
 * and on the broken variant (which must be caught, its interleaving printed).
 *
 * <p>What makes the windows reachable: a lease can be held across operations ({@link Window#acquire} and
 * {@link Window#release}), so the checker can stop the holder anywhere while the other thread runs; and the
 * registrar itself checks I2 at every deregistration (the registration must not be leased by the scenario), so
 * a deregistration under a lease is caught where it happens, not only if a later liveness check runs after it.
 * The lease cells are fixed to one per region for the run ({@code -Dmrcache.stripes.fixed=true}, set by the
 * Maven execution) and the cache's clock is constant, so one interleaving replays the same way.
 *
 * <p>Checks: I2 (no deregistration of a registration the scenario leases; every lease's registration live when
 * taken); I3 (an invalidation's stage completes normally only when no registration begun before it and
 * overlapping it is live); I4 at close (a close whose stage completed normally left nothing registered); I5
 * (the cache holds more regions than its budget only while every region is leased). Every operation answers
 * the violations seen so far; the specification answers none.
 */
class WindowModelCheckingTest {
    static final long BASE = 0x100000;
    static final long PAGE = 4096;
    static {
        // a refusal's message formats numbers: load the locale data now, not inside the checker, which would
        // count the loading as part of the operation and call it hung
        var _ = String.format("%,d %s", 1L, "x");
    }

    /** Interleavings explored per scenario. */
    static final int INVOCATIONS = Integer.getInteger("mrcache.lincheck.invocations", 2_000);

    /**
     * What the scenario starts from, made in the test instance's constructor. (Not in a Lincheck initial part:
     * with one, Lincheck 3.7 ran a single interleaving of the custom scenario and called it explored.)
     */
    enum Setup {
        /** An empty cache. */
        EMPTY,
        /** Range 0 registered and idle. */
        IDLE_0,
        /** Range 0 registered and leased (the lease held in {@link Window#held}). */
        LEASED_0;

        void run(Window w) {
            switch (this) {
                case EMPTY -> { }
                case IDLE_0 -> w.use(0);
                case LEASED_0 -> w.acquire(0);
            }
        }
    }

    /** One cache (or two tenants' caches) over one recording registrar, and the checks; subclasses choose the bounds and the bug. */
    public abstract static class Window {
        /** Leases the scenario holds, per registration handle. */
        final ConcurrentHashMap<Long, Integer> leased = new ConcurrentHashMap<>();
        final AtomicReferenceArray<Lease> held = new AtomicReferenceArray<>(3);
        final List<String> violations = new CopyOnWriteArrayList<>();
        final RecordingRegistrar recording = new RecordingRegistrar();
        final StartRecordingRegistrar registrar = new StartRecordingRegistrar(recording) {
            @Override
            public void deregister(Registration registration) {
                if (leased.getOrDefault(registration.handle(), 0) > 0) {
                    violations.add("I2: " + registration + " deregistered while the scenario leased it");
                }
                super.deregister(registration);
            }
        };
        final RegistrationCache[] caches;
        final Budget budget;
        volatile boolean closedNormally;

        /** One cache with {@code budget}, set up before the threads start. */
        Window(Budget budget, Setup setup, CacheFault... bugs) {
            this.budget = budget;
            RegistrationCache c = builder(bugs).budget(budget).build();
            caches = new RegistrationCache[] {c, c, c};
            setup.run(this);
        }

        /** A tenant's own budget: roomy, but bounded, so that its regions are in a policy the limit can take from. */
        static final Budget TENANT_BUDGET = new Budget(Long.MAX_VALUE, 4);

        /** Two tenants of one limit: range 0 is the first's, range 1 the second's. */
        Window(PinnedMemoryLimit limit, Setup setup, CacheFault... bugs) {
            this.budget = Budget.UNLIMITED;
            caches = new RegistrationCache[] {
                    builder(bugs).budget(TENANT_BUDGET).tenant(limit, TenantShare.bestEffort("a")).build(),
                    builder(bugs).budget(TENANT_BUDGET).tenant(limit, TenantShare.bestEffort("b")).build()};
            setup.run(this);
        }

        private RegistrationCache.Builder builder(CacheFault... bugs) {
            RegistrationCache.Builder b = RegistrationCache.builder(registrar)
                    .deregistrationRetry(DeregistrationRetry.MANUAL) // no retry thread: the checker sees every step
                    .clock(() -> 0L); // the registration timing must not make one interleaving replay differently
            for (CacheFault f : bugs) {
                b.withDeliberateBug(f);
            }
            return b;
        }

        /** Acquires range r and holds the lease until {@link #release}; a closed or full cache refuses. */
        @Operation
        public String acquire(int r) {
            Lease l;
            try {
                l = caches[r].acquire(BASE + r * PAGE, PAGE, Access.LOCAL_WRITE);
            } catch (IllegalStateException | PinnedMemoryExhaustedException refused) {
                return seen(); // closed, or no room that the limit may take: refused, not wrong
            }
            Registration reg = l.registration();
            leased.merge(reg.handle(), 1, Integer::sum);
            if (!recording.isLive(reg)) {
                violations.add("I2: a lease on range " + r + " served " + reg + ", already deregistered");
            }
            held.set(r, l);
            return seen();
        }

        @Operation
        public String release(int r) {
            Lease l = held.getAndSet(r, null);
            if (l != null) {
                leased.merge(l.registration().handle(), -1, Integer::sum);
                l.close();
            }
            return seen();
        }

        /** Acquires range r and releases it at once. */
        @Operation
        public String use(int r) {
            acquire(r);
            return release(r);
        }

        @Operation
        public String invalidate(int r) {
            long s = registrar.now();
            long from = BASE + r * PAGE;
            caches[r].invalidate(from, PAGE).whenComplete((ok, failure) -> {
                if (failure == null) {
                    for (Registration live : registrar.liveBegunBy(s, from, from + PAGE)) {
                        violations.add("I3: the stage of invalidate(range " + r + ") completed while " + live
                                + ", begun before it, was live");
                    }
                }
            });
            return seen();
        }

        @Operation
        public String evictIdle() {
            caches[0].evictIdle();
            return seen();
        }

        @Operation
        public String close() {
            caches[0].closeAsync().whenComplete((ok, failure) -> closedNormally = failure == null);
            return seen();
        }

        /** Run after the threads (the final part): the checks that hold once nothing runs. */
        @Operation
        public String check() {
            if (closedNormally && !recording.live().isEmpty()) {
                violations.add("I4: close completed normally with " + recording.live() + " still registered");
            }
            int leases = 0;
            for (int r = 0; r < held.length(); r++) {
                leases += held.get(r) == null ? 0 : 1;
            }
            // I5: over budget only while every region is leased (each held lease is on a region of its own here)
            int regions = caches[0].regionCount();
            if (regions > Math.max(budget.maxRegions(), leases)) {
                violations.add("I5: " + regions + " regions cached over a budget of " + budget.maxRegions() + " with "
                        + leases + " leased");
            }
            return seen();
        }

        /**
         * What every operation answers: the violations seen so far, empty while the invariants hold. Lincheck
         * compares each invocation's answers with the specification's, which are all empty.
         */
        String seen() {
            return String.join("; ", violations);
        }
    }

    /** What a correct cache answers to every operation, in any order. */
    public static class Specification {
        @Operation
        public String acquire(int r) {
            return "";
        }

        @Operation
        public String release(int r) {
            return "";
        }

        @Operation
        public String use(int r) {
            return "";
        }

        @Operation
        public String invalidate(int r) {
            return "";
        }

        @Operation
        public String evictIdle() {
            return "";
        }

        @Operation
        public String close() {
            return "";
        }

        @Operation
        public String check() {
            return "";
        }
    }

    // ------------------------------------------------------------------ the windows and their variants

    /** Real: unbounded, range 0 idle. */
    public static class Idle extends Window {
        public Idle() {
            super(Budget.UNLIMITED, Setup.IDLE_0);
        }
    }

    /** Real: unbounded, range 0 leased. */
    public static class Leased extends Window {
        public Leased() {
            super(Budget.UNLIMITED, Setup.LEASED_0);
        }
    }

    /** Real: unbounded and empty. */
    public static class Empty extends Window {
        public Empty() {
            super(Budget.UNLIMITED, Setup.EMPTY);
        }
    }

    /** Real: a budget of one region, range 0 idle, so that a second region's publication makes the policy evict. */
    public static class OneRegion extends Window {
        public OneRegion() {
            super(new Budget(Long.MAX_VALUE, 1), Setup.IDLE_0);
        }
    }

    /** Real: two tenants sharing a limit of one page; the first tenant's range 0 leased. */
    public static class TwoTenants extends Window {
        public TwoTenants() {
            super(new PinnedMemoryLimit(PAGE), Setup.LEASED_0);
        }
    }

    public static class EvictWithoutMark extends Window {
        public EvictWithoutMark() {
            super(Budget.UNLIMITED, Setup.IDLE_0, CacheFault.EVICT_WITHOUT_MARK);
        }
    }

    public static class PublishDoomed extends Window {
        public PublishDoomed() {
            super(Budget.UNLIMITED, Setup.EMPTY, CacheFault.PUBLISH_DOOMED);
        }
    }

    public static class RetireSumsFirst extends Window {
        public RetireSumsFirst() {
            super(Budget.UNLIMITED, Setup.IDLE_0, CacheFault.RETIRE_SUMS_FIRST);
        }
    }

    public static class CloseSkipsPending extends Window {
        public CloseSkipsPending() {
            super(Budget.UNLIMITED, Setup.EMPTY, CacheFault.CLOSE_SKIPS_PENDING);
        }
    }

    public static class IgnoreRetiring extends Window {
        public IgnoreRetiring() {
            super(Budget.UNLIMITED, Setup.LEASED_0, CacheFault.IGNORE_RETIRING);
        }
    }

    public static class EvictLeased extends Window {
        public EvictLeased() {
            super(new Budget(Long.MAX_VALUE, 1), Setup.IDLE_0, CacheFault.EVICT_LEASED);
        }
    }

    /** Real: a budget of one region, range 0 leased. */
    public static class OneRegionLeased extends Window {
        public OneRegionLeased() {
            super(new Budget(Long.MAX_VALUE, 1), Setup.LEASED_0);
        }
    }

    public static class LosePolicyDrops extends Window {
        public LosePolicyDrops() {
            super(new Budget(Long.MAX_VALUE, 1), Setup.LEASED_0, CacheFault.LOSE_POLICY_DROPS);
        }
    }

    public static class LimitEvictsLeased extends Window {
        public LimitEvictsLeased() {
            super(new PinnedMemoryLimit(PAGE), Setup.LEASED_0, CacheFault.LIMIT_EVICTS_LEASED);
        }
    }

    /**
     * H5, the evictor's window (from {@link Setup#IDLE_0}): one thread leases range 0 and holds the lease across a
     * second operation while the other evicts every idle region.
     */
    static ExecutionScenario evictionRacesAHit() {
        return scenario(List.of(op("acquire", 0), op("use", 1), op("release", 0)), List.of(op("evictIdle")), List.of());
    }

    /** H1/H2, the retirer's window (from {@link Setup#IDLE_0}): one thread leases range 0 while the other invalidates it. */
    static ExecutionScenario invalidationRacesAHit() {
        return scenario(List.of(op("acquire", 0), op("use", 1), op("release", 0)), List.of(op("invalidate", 0)),
                List.of());
    }

    /** Close racing a miss (from {@link Setup#EMPTY}): the miss's registration is in flight when close runs. */
    static ExecutionScenario closeRacesAMiss() {
        return scenario(List.of(op("use", 0)), List.of(op("close")), List.of());
    }

    /**
     * Invalidate vs invalidate (from {@link Setup#LEASED_0}): the first retires a leased region, the second must
     * wait for it as well; the lease is released at the end.
     */
    static ExecutionScenario twoInvalidationsOfALeasedRegion() {
        return scenario(List.of(op("invalidate", 0)), List.of(op("invalidate", 0)), List.of(op("release", 0)));
    }

    /**
     * I3 and H4 (from {@link Setup#EMPTY}): one thread invalidates range 0 twice while the other misses on it, so
     * each invalidation may find the registration in flight, published, retired or gone. The scenario of the one
     * failure of {@link ProtocolModelCheckingTest}'s stress test that has not been explained (docs/SAFETY-MODEL.md).
     */
    static ExecutionScenario twoInvalidationsRaceAMiss() {
        return scenario(List.of(op("invalidate", 0), op("invalidate", 0)), List.of(op("use", 0)), List.of());
    }

    /**
     * H5/I5 under a budget of one region (from {@link Setup#IDLE_0}): one thread leases range 0 and holds the lease
     * while the other misses on range 1, whose publication puts the cache over budget and makes the policy evict.
     */
    static ExecutionScenario aMissNeedsRoomDuringAHit() {
        return scenario(List.of(op("acquire", 0), op("release", 0)), List.of(op("use", 1)), List.of());
    }

    /**
     * I5 under a budget of one region (from {@link Setup#LEASED_0}): one thread misses on range 1 while the other
     * releases range 0. The policy admits neither region while the other is as frequent: it drops region 1 while
     * its publisher leases it, or drops region 0, which may be leased still or released at that very moment;
     * whoever makes a dropped region idle last must see that it is outside the policy. Then range 2 is acquired
     * and held: a policy that holds every idle region evicts down to that one region.
     */
    static ExecutionScenario aDropRacesTheRelease() {
        return scenario(List.of(op("use", 1)), List.of(op("release", 0)), List.of(op("acquire", 2)));
    }

    /**
     * T2/H5 for two tenants of a limit of one page (from {@link Setup#LEASED_0}): the second tenant misses, and the
     * limit looks for room in the first tenant's policy while the first tenant's lease is released.
     */
    static ExecutionScenario aTenantNeedsRoomWhileTheOtherReleases() {
        return scenario(List.of(op("use", 1)), List.of(op("release", 0)), List.of());
    }

    @Test
    void theRunUsesOneLeaseCellThatNeverMoves() {
        long me = Thread.currentThread().threadId();
        LeaseStripes.contended(me);
        assertEquals(0, LeaseStripes.of(me), "-Dmrcache.stripes.fixed=true is not set: replays would differ");
        assertEquals(0, LeaseStripes.of(me + 1));
    }

    @Test
    void evictionRacingAHitIsSafeAndEvictWithoutMarkIsCaught() {
        passes(Idle.class, evictionRacesAHit());
        caught(CacheFault.EVICT_WITHOUT_MARK, EvictWithoutMark.class, evictionRacesAHit());
    }

    @Test
    void invalidationRacingAHitIsSafeAndRetireSumsFirstIsCaught() {
        passes(Idle.class, invalidationRacesAHit());
        caught(CacheFault.RETIRE_SUMS_FIRST, RetireSumsFirst.class, invalidationRacesAHit());
    }

    @Test
    void closeRacingAMissIsSafeAndCloseSkipsPendingIsCaught() {
        passes(Empty.class, closeRacesAMiss());
        caught(CacheFault.CLOSE_SKIPS_PENDING, CloseSkipsPending.class, closeRacesAMiss());
    }

    @Test
    void twoInvalidationsWaitForOneRetiringRegionAndIgnoreRetiringIsCaught() {
        passes(Leased.class, twoInvalidationsOfALeasedRegion());
        caught(CacheFault.IGNORE_RETIRING, IgnoreRetiring.class, twoInvalidationsOfALeasedRegion());
    }

    @Test
    void twoInvalidationsRacingAMissWaitForItAndPublishDoomedIsCaught() {
        passes(Empty.class, twoInvalidationsRaceAMiss());
        caught(CacheFault.PUBLISH_DOOMED, PublishDoomed.class, twoInvalidationsRaceAMiss());
    }

    @Test
    void thePolicyNeverEvictsALeasedRegionAndEvictLeasedIsCaught() {
        passes(OneRegion.class, aMissNeedsRoomDuringAHit());
        caught(CacheFault.EVICT_LEASED, EvictLeased.class, aMissNeedsRoomDuringAHit());
    }

    @Test
    void aRegionThePolicyDropsReentersAndLosePolicyDropsIsCaught() {
        passes(OneRegionLeased.class, aDropRacesTheRelease());
        caught(CacheFault.LOSE_POLICY_DROPS, LosePolicyDrops.class, aDropRacesTheRelease());
    }

    @Test
    void theSharedLimitNeverEvictsALeasedRegionAndLimitEvictsLeasedIsCaught() {
        passes(TwoTenants.class, aTenantNeedsRoomWhileTheOtherReleases());
        caught(CacheFault.LIMIT_EVICTS_LEASED, LimitEvictsLeased.class, aTenantNeedsRoomWhileTheOtherReleases());
    }

    // ------------------------------------------------------------------ running them

    static ModelCheckingOptions options(ExecutionScenario scenario) {
        return new ModelCheckingOptions().iterations(0).invocationsPerIteration(INVOCATIONS)
                .addCustomScenario(scenario).sequentialSpecification(Specification.class);
    }

    private static void passes(Class<? extends Window> real, ExecutionScenario scenario) {
        options(scenario).check(real);
    }

    private static void caught(CacheFault bug, Class<? extends Window> variant, ExecutionScenario scenario) {
        AssertionError e = assertThrows(AssertionError.class, () -> options(scenario).check(variant),
                bug + ": the model checker found no interleaving that breaks an invariant");
        String report = String.valueOf(e.getMessage());
        assertTrue(report.contains("Thread") && report.matches("(?s).*I[2-5]: .*"),
                bug + ": no invariant named in the report: " + report);
        System.out.println(bug + " caught by the model checker:\n" + report.substring(0, Math.min(3000, report.length())));
    }

    private static Actor op(String name, Object... args) {
        Method m = Arrays.stream(Window.class.getMethods()).filter(x -> x.getName().equals(name)).findFirst()
                .orElseThrow();
        return new Actor(m, List.of(args), false, false, false, false, false);
    }

    /** A scenario: two threads, then the final part, and then {@link Window#check}. */
    private static ExecutionScenario scenario(List<Actor> first, List<Actor> second, List<Actor> post) {
        List<Actor> last = new ArrayList<>(post);
        last.add(op("check"));
        return new ExecutionScenario(new ArrayList<>(), List.of(new ArrayList<>(first), new ArrayList<>(second)),
                last, null);
    }
}
