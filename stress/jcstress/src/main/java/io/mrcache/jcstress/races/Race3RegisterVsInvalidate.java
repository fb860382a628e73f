package io.mrcache.jcstress.races;

import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.CacheFault;
import io.mrcache.core.RegistrationCache;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * H4, an in-flight registration vs invalidate: actor 1 misses and registers (slowly) while actor 2 begins and
 * runs an invalidation of the range. The arbiter acquires afterwards. Result: (the arbiter got a registration
 * whose register call started before the invalidation began, the ledger is unbalanced after close).
 */
public final class Race3RegisterVsInvalidate {
    static final long B = 0x100000;
    static final long P = 4096;

    public static class S {
        final RaceRegistrar registrar = new RaceRegistrar(50, 0);
        final RegistrationCache cache;

        S(CacheFault... faults) {
            cache = RaceRegistrar.cache(registrar, Budget.UNLIMITED, faults);
        }

        void acquire() {
            cache.acquire(B, P, Access.LOCAL_WRITE).close();
        }

        void invalidate() {
            registrar.invalidationBegan = true;
            cache.invalidate(B, P);
        }

        void arbiter(II_Result r) {
            registrar.judgeFreshness(cache, B, P, r);
        }
    }

    @JCStressTest
    @Description("H4 on the real cache: a registration racing an invalidation of its range is never published")
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "the arbiter got a registration made after the invalidation began")
    @Outcome(id = "1, .*", expect = FORBIDDEN, desc = "H4/I1 violated: a registration begun before the invalidation was published")
    @Outcome(id = "0, 1", expect = FORBIDDEN, desc = "I4 violated: the ledger does not balance after close")
    @State
    public static class Real extends S {
        @Actor
        public void actor1() {
            acquire();
        }

        @Actor
        public void actor2() {
            invalidate();
        }

        @Arbiter
        public void arbiter(II_Result r) {
            super.arbiter(r);
        }
    }

    @JCStressTest
    @Description("Broken variant (doomed registrations are published): must show the FORBIDDEN stale publication")
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "fresh registration")
    @Outcome(id = "1, .*", expect = FORBIDDEN, desc = "H4/I1 violated: a registration begun before the invalidation was published")
    @Outcome(id = "0, 1", expect = FORBIDDEN, desc = "ledger unbalanced")
    @State
    public static class Broken extends S {
        public Broken() {
            super(CacheFault.PUBLISH_DOOMED);
        }

        @Actor
        public void actor1() {
            acquire();
        }

        @Actor
        public void actor2() {
            invalidate();
        }

        @Arbiter
        public void arbiter(II_Result r) {
            super.arbiter(r);
        }
    }
}
