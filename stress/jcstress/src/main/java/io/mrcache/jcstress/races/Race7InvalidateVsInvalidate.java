package io.mrcache.jcstress.races;

import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.CacheFault;
import io.mrcache.core.Lease;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationCache;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * invalidate vs invalidate: two free hooks for the same idle region at once (deregistration is slow).
 * Result: (actor 1's stage complete while the registration lived, the same for actor 2, deregistrations of
 * the region other than exactly one).
 */
public final class Race7InvalidateVsInvalidate {
    static final long B = 0x100000;
    static final long P = 4096;

    public static class S {
        final RaceRegistrar registrar = new RaceRegistrar(0, 50);
        final RegistrationCache cache;
        final Registration reg;

        S(CacheFault... faults) {
            cache = RaceRegistrar.cache(registrar, Budget.UNLIMITED, faults);
            Lease l = cache.acquire(B, P, Access.LOCAL_WRITE);
            reg = l.registration();
            l.close();
        }

        int invalidate() {
            boolean done = cache.invalidate(B, P).toCompletableFuture().isDone(); // read before liveness
            return done && registrar.isLive(reg) ? 1 : 0;
        }

        void arbiter(III_Result r) {
            r.r3 = registrar.deregisters.get() == 1 && registrar.badDeregisters.get() == 0 ? 0 : 1;
        }
    }

    @JCStressTest
    @Description("Two invalidations on the real cache: each completes only after the one deregistration")
    @Outcome(id = "0, 0, 0", expect = ACCEPTABLE, desc = "both stages completed after the single deregistration")
    @Outcome(id = "1, .*, .*", expect = FORBIDDEN, desc = "I3 violated: actor 1's stage completed while the registration lived")
    @Outcome(id = ".*, 1, .*", expect = FORBIDDEN, desc = "I3 violated: actor 2's stage completed while the registration lived")
    @Outcome(id = ".*, .*, 1", expect = FORBIDDEN, desc = "I2 violated: not exactly one deregistration")
    @State
    public static class Real extends S {
        @Actor
        public void actor1(III_Result r) {
            r.r1 = invalidate();
        }

        @Actor
        public void actor2(III_Result r) {
            r.r2 = invalidate();
        }

        @Arbiter
        public void arbiter(III_Result r) {
            super.arbiter(r);
        }
    }

    @JCStressTest
    @Description("Broken variant (an invalidation ignores regions another is deregistering): must show FORBIDDEN")
    @Outcome(id = "0, 0, 0", expect = ACCEPTABLE, desc = "both completed after the deregistration")
    @Outcome(id = "1, .*, .*", expect = FORBIDDEN, desc = "I3 violated for actor 1")
    @Outcome(id = ".*, 1, .*", expect = FORBIDDEN, desc = "I3 violated for actor 2")
    @Outcome(id = ".*, .*, 1", expect = FORBIDDEN, desc = "not exactly one deregistration")
    @State
    public static class Broken extends S {
        public Broken() {
            super(CacheFault.IGNORE_RETIRING);
        }

        @Actor
        public void actor1(III_Result r) {
            r.r1 = invalidate();
        }

        @Actor
        public void actor2(III_Result r) {
            r.r2 = invalidate();
        }

        @Arbiter
        public void arbiter(III_Result r) {
            super.arbiter(r);
        }
    }
}
