package io.mrcache.core;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.testing.RecordingRegistrar;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLongArray;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.Test;

/**
 * The cache's protocol under Lincheck's model checker: every interleaving it explores of two threads, two
 * operations each, switching threads at the shared reads and writes (its bounds: {@link #options()}), with
 * invariant checks in the operations: acquire, release and invalidate on an unbounded cache over a recording
 * registrar, and over one whose first deregistration of each registration fails. The windows these generated
 * scenarios do not reach (eviction, the policy, close, two invalidations, the shared limit) have scenarios of
 * their own in {@link WindowModelCheckingTest}.
 *
 * <p>Checks: {@code use(r)} acquires range r, and its lease's registration must be live (I2) and must have
 * begun after the last invalidation of r that returned (I1); {@code invalidate(r)} invalidates r, and when its
 * stage completes normally no registration that began before the invalidation may still be live (I3,
 * including in-flight registrations the invalidation doomed: H4). "Began" is the start of the registrar's
 * register call, counted by a sequence. Results are compared with a specification that always answers true;
 * the I3 check runs in {@link Scenario#noStageCompletedOverALiveRegistration} after each scenario.
 *
 * <p>Each broken variant it is shown to catch prints the interleaving Lincheck reports.
 */
class ProtocolModelCheckingTest {
    static final long BASE = 0x100000;
    static final long PAGE = 4096;

    /** One cache and its registrar, checked by Lincheck; subclasses choose the deliberate bug, if any. */
    @Param(name = "range", gen = IntGen.class, conf = "0:1")
    public abstract static class Scenario {
        final RecordingRegistrar recording = new RecordingRegistrar();
        final StartRecordingRegistrar registrar = new StartRecordingRegistrar(recording);
        /** Per range, the sequence when the last invalidation that returned began. */
        final AtomicLongArray invalidatedAt = new AtomicLongArray(2);
        /** What each I3 violation saw, for the report: which registration, and how the stage completed. */
        final ConcurrentLinkedQueue<String> i3Violations = new ConcurrentLinkedQueue<>();
        final RegistrationCache cache;

        Scenario(CacheFault... bugs) {
            RegistrationCache.Builder b = RegistrationCache.builder(registrar)
                    .deregistrationRetry(DeregistrationRetry.MANUAL); // no retry thread: the checker sees every step
            for (CacheFault f : bugs) {
                b.withDeliberateBug(f);
            }
            cache = b.build();
        }

        @Operation
        public boolean use(@Param(name = "range") int r) {
            long floor = invalidatedAt.get(r);
            try (Lease l = cache.acquire(BASE + r * PAGE, PAGE, Access.LOCAL_WRITE)) {
                return registrar.began(l.registration()) > floor && recording.isLive(l.registration());
            }
        }

        @Operation
        public boolean invalidate(@Param(name = "range") int r) {
            long s = registrar.now();
            long from = BASE + r * PAGE;
            Thread invoker = Thread.currentThread();
            CompletionStage<Void> stage = cache.invalidate(from, PAGE);
            boolean doneAtOnce = stage == Stages.DONE; // the fast path, or nothing to wait for
            stage.whenComplete((ok, failure) -> {
                if (failure == null) {
                    for (Registration live : registrar.liveBegunBy(s, from, from + PAGE)) {
                        // enough to tell the fast path from a later completion, should the stress mode fail
                        i3Violations.add("invalidate(" + r + ") at sequence " + s + (doneAtOnce
                                ? " returned the cache's completed stage (the fast path, or nothing to wait for)"
                                : " returned a stage that completed, seen on " + (Thread.currentThread() == invoker
                                        ? "the invalidating thread" : "another thread"))
                                + ", while " + live + ", begun at sequence " + registrar.began(live) + ", was live");
                    }
                }
            });
            invalidatedAt.accumulateAndGet(r, s, Math::max);
            return true;
        }

        @Validate
        public void noStageCompletedOverALiveRegistration() {
            if (!i3Violations.isEmpty()) {
                throw new IllegalStateException("I3: an invalidation's stage completed normally while a registration"
                        + " begun before the invalidation was live: " + String.join("; ", i3Violations));
            }
        }
    }

    /**
     * Every registration's first deregistration fails (as {@code ibv_dereg_mr} may with EBUSY), and retries wait
     * for {@link RegistrationCache#retryQuarantined()}: an invalidation's stage must not complete normally over
     * the still-live key (I3).
     */
    public abstract static class FailingDeregistrationScenario extends Scenario {
        final ConcurrentHashMap<Long, Boolean> failedOnce = new ConcurrentHashMap<>();

        FailingDeregistrationScenario(CacheFault... bugs) {
            super(bugs);
            recording.deregisterFailures(reg -> failedOnce.putIfAbsent(reg.handle(), true) == null
                    ? new RegistrationException("ibv_dereg_mr: EBUSY", 16) : null);
        }
    }

    /** What a correct cache answers to every operation, in any order. */
    @Param(name = "range", gen = IntGen.class, conf = "0:1")
    public static class Specification {
        @Operation
        public boolean use(@Param(name = "range") int r) {
            return true;
        }

        @Operation
        public boolean invalidate(@Param(name = "range") int r) {
            return true;
        }
    }

    public static class Real extends Scenario {
        public Real() {
        }
    }

    public static class RealFailingDeregistration extends FailingDeregistrationScenario {
        public RealFailingDeregistration() {
        }
    }

    public static class CompleteAfterFailedDeregistration extends FailingDeregistrationScenario {
        public CompleteAfterFailedDeregistration() {
            super(CacheFault.COMPLETE_AFTER_FAILED_DEREGISTRATION);
        }
    }

    public static class SkipUnlink extends Scenario {
        public SkipUnlink() {
            super(CacheFault.SKIP_UNLINK);
        }
    }

    public static class PublishDoomed extends Scenario {
        public PublishDoomed() {
            super(CacheFault.PUBLISH_DOOMED);
        }
    }

    public static class CompleteEarly extends Scenario {
        public CompleteEarly() {
            super(CacheFault.COMPLETE_EARLY);
        }
    }

    /** The bounds: 30 scenarios of 2 threads x 2 operations, 300 interleavings explored for each. */
    static ModelCheckingOptions options() {
        return new ModelCheckingOptions().iterations(30).invocationsPerIteration(300).threads(2).actorsPerThread(2)
                .sequentialSpecification(Specification.class);
    }

    @Test
    void theRealCacheKeepsI1I2AndI3InEveryInterleavingExplored() {
        options().check(Real.class);
    }

    /**
     * The same scenarios in Lincheck's stress mode: real threads, no instrumented switches, so the JIT's and the
     * hardware's orderings take part (the model checker explores sequentially consistent interleavings only).
     */
    @Test
    void theRealCacheKeepsI1I2AndI3UnderStress() {
        new StressOptions().iterations(30).invocationsPerIteration(2_000).threads(2).actorsPerThread(2)
                .sequentialSpecification(Specification.class).check(Real.class);
    }

    @Test
    void theRealCacheKeepsI3WhenDeregistrationsFail() {
        options().check(RealFailingDeregistration.class);
    }

    @Test
    void aStageCompletedOverAFailedDeregistrationIsCaught() {
        caught(CacheFault.COMPLETE_AFTER_FAILED_DEREGISTRATION, CompleteAfterFailedDeregistration.class);
    }

    @Test
    void aCacheThatDoesNotUnlinkOnInvalidateIsCaught() {
        caught(CacheFault.SKIP_UNLINK, SkipUnlink.class);
    }

    @Test
    void aCacheThatPublishesDoomedRegistrationsIsCaught() {
        caught(CacheFault.PUBLISH_DOOMED, PublishDoomed.class);
    }

    @Test
    void aCacheWhoseStageCompletesEarlyIsCaught() {
        caught(CacheFault.COMPLETE_EARLY, CompleteEarly.class);
    }

    private static void caught(CacheFault bug, Class<? extends Scenario> variant) {
        AssertionError e = assertThrows(AssertionError.class, () -> options().check(variant),
                bug + ": the model checker found no interleaving that breaks an invariant");
        String report = String.valueOf(e.getMessage());
        assertTrue(report.contains("Thread 1") && report.contains("Thread") , bug + ": no interleaving reported: "
                + report);
        System.out.println(bug + " caught by the model checker:\n" + report.substring(0, Math.min(2500, report.length())));
    }
}
