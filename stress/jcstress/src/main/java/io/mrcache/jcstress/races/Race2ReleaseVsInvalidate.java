package io.mrcache.jcstress.races;

import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.CacheFault;
import io.mrcache.core.Lease;
import io.mrcache.core.RegistrationCache;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.util.concurrent.CompletionStage;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * H2 and I3, release vs invalidation completion: a lease is held; actor 1 releases it while actor 2
 * invalidates the range. Result: (actor 2 saw its stage complete while the registration was still live,
 * the stage completed by the end, the registration is still live at the end).
 */
public final class Race2ReleaseVsInvalidate {
    static final long B = 0x100000;
    static final long P = 4096;

    public static class S {
        final RaceRegistrar registrar = new RaceRegistrar(0, 0);
        final RegistrationCache cache;
        final Lease lease;
        CompletionStage<Void> stage;

        S(CacheFault... faults) {
            cache = RaceRegistrar.cache(registrar, Budget.UNLIMITED, faults);
            lease = cache.acquire(B, P, Access.LOCAL_WRITE);
        }

        void invalidate(III_Result r) {
            stage = cache.invalidate(B, P);
            boolean done = stage.toCompletableFuture().isDone(); // read before liveness: see the class comment
            r.r1 = done && registrar.isLive(lease.registration()) ? 1 : 0;
        }

        void arbiter(III_Result r) {
            r.r2 = stage.toCompletableFuture().isDone() ? 1 : 0;
            r.r3 = registrar.isLive(lease.registration()) ? 1 : 0;
        }
    }

    @JCStressTest
    @Description("I3 on the real cache: the invalidation completes only once the released registration is dead")
    @Outcome(id = "0, 1, 0", expect = ACCEPTABLE, desc = "completed after the release deregistered the region")
    @Outcome(id = "1, .*, .*", expect = FORBIDDEN, desc = "I3 violated: invalidation complete while the leased registration lived")
    @Outcome(id = "0, 0, .*", expect = FORBIDDEN, desc = "the invalidation never completed after the last release")
    @Outcome(id = "0, 1, 1", expect = FORBIDDEN, desc = "complete, yet the registration leaked")
    @State
    public static class Real extends S {
        @Actor
        public void actor1() {
            lease.close();
        }

        @Actor
        public void actor2(III_Result r) {
            invalidate(r);
        }

        @Arbiter
        public void arbiter(III_Result r) {
            super.arbiter(r);
        }
    }

    @JCStressTest
    @Description("Broken variant (the stage completes early): must show the FORBIDDEN early completion")
    @Outcome(id = "0, 1, 0", expect = ACCEPTABLE, desc = "completed after the release")
    @Outcome(id = "1, .*, .*", expect = FORBIDDEN, desc = "I3 violated: complete while the leased registration lived")
    @Outcome(id = "0, 0, .*", expect = FORBIDDEN, desc = "never completed")
    @Outcome(id = "0, 1, 1", expect = FORBIDDEN, desc = "leaked")
    @State
    public static class Broken extends S {
        public Broken() {
            super(CacheFault.COMPLETE_EARLY);
        }

        @Actor
        public void actor1() {
            lease.close();
        }

        @Actor
        public void actor2(III_Result r) {
            invalidate(r);
        }

        @Arbiter
        public void arbiter(III_Result r) {
            super.arbiter(r);
        }
    }
    @JCStressTest
    @Description("Window mutant (the invalidation sums the leases before it sets RETIRED): must show the FORBIDDEN"
            + " lost deregistration")
    @Outcome(id = "0, 1, 0", expect = ACCEPTABLE, desc = "completed after the release")
    @Outcome(id = "1, .*, .*", expect = FORBIDDEN, desc = "I3 violated: complete while the leased registration lived")
    @Outcome(id = "0, 0, .*", expect = FORBIDDEN, desc = "never completed: the release and the retirer each left"
            + " the deregistration to the other")
    @Outcome(id = "0, 1, 1", expect = FORBIDDEN, desc = "leaked")
    @State
    public static class SumFirstBroken extends S {
        public SumFirstBroken() {
            super(CacheFault.RETIRE_SUMS_FIRST);
        }

        @Actor
        public void actor1() {
            lease.close();
        }

        @Actor
        public void actor2(III_Result r) {
            invalidate(r);
        }

        @Arbiter
        public void arbiter(III_Result r) {
            super.arbiter(r);
        }
    }
}
