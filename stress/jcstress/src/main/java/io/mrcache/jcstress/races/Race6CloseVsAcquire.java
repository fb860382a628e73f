package io.mrcache.jcstress.races;

import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.CacheFault;
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
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * close vs acquire: actor 1 acquires (a miss, registering slowly) and releases while actor 2 closes the
 * cache. Result: (actor 1's acquire succeeded, after everything: close incomplete or a registration left).
 */
public final class Race6CloseVsAcquire {
    static final long B = 0x100000;
    static final long P = 4096;

    public static class S {
        final RaceRegistrar registrar = new RaceRegistrar(50, 0);
        final RegistrationCache cache;
        CompletionStage<Void> closing;

        S(CacheFault... faults) {
            cache = RaceRegistrar.cache(registrar, Budget.UNLIMITED, faults);
        }

        void acquire(II_Result r) {
            try {
                cache.acquire(B, P, Access.LOCAL_WRITE).close();
                r.r1 = 1;
            } catch (IllegalStateException closed) {
                r.r1 = 0;
            }
        }

        void arbiter(II_Result r) {
            r.r2 = closing.toCompletableFuture().isDone() && registrar.balanced() ? 0 : 1;
        }
    }

    @JCStressTest
    @Description("close vs acquire on the real cache: after close completes nothing stays registered")
    @Outcome(id = "1, 0", expect = ACCEPTABLE, desc = "the acquire came first; close deregistered its region")
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "the acquire met the closed cache and failed clearly")
    @Outcome(id = ".*, 1", expect = FORBIDDEN, desc = "I4 violated: close did not complete, or a registration outlived it")
    @State
    public static class Real extends S {
        @Actor
        public void actor1(II_Result r) {
            acquire(r);
        }

        @Actor
        public void actor2() {
            closing = cache.closeAsync();
        }

        @Arbiter
        public void arbiter(II_Result r) {
            super.arbiter(r);
        }
    }

    @JCStressTest
    @Description("Broken variant (close leaves in-flight registrations alone): must show the FORBIDDEN leak")
    @Outcome(id = "1, 0", expect = ACCEPTABLE, desc = "acquire first, deregistered by close")
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "acquire failed on the closed cache")
    @Outcome(id = ".*, 1", expect = FORBIDDEN, desc = "I4 violated: a registration outlived close")
    @State
    public static class Broken extends S {
        public Broken() {
            super(CacheFault.CLOSE_SKIPS_PENDING);
        }

        @Actor
        public void actor1(II_Result r) {
            acquire(r);
        }

        @Actor
        public void actor2() {
            closing = cache.closeAsync();
        }

        @Arbiter
        public void arbiter(II_Result r) {
            super.arbiter(r);
        }
    }
}
