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
 * H6, merge vs invalidate: idle local region A covers pages 0-1. Actor 1 acquires pages 1-2, which merges A
 * into a new registration of pages 0-2; actor 2 invalidates page 0 (a free of memory A covered). The arbiter
 * then acquires page 0. Result: (the arbiter got a registration begun before the invalidation, the ledger is
 * unbalanced after close).
 */
public final class Race5MergeVsInvalidate {
    static final long B = 0x100000;
    static final long P = 4096;

    public static class S {
        final RaceRegistrar registrar = new RaceRegistrar(50, 0);
        final RegistrationCache cache;

        S(CacheFault... faults) {
            cache = RaceRegistrar.cache(registrar, Budget.UNLIMITED, faults);
            cache.acquire(B, 2 * P, Access.LOCAL_WRITE).close();
        }

        void merge() {
            cache.acquire(B + P, 2 * P, Access.LOCAL_WRITE).close();
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
    @Description("H6 on the real cache: a merge racing a free of memory it covers is never published")
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "page 0 is served by a registration made after the free began")
    @Outcome(id = "1, .*", expect = FORBIDDEN, desc = "H6/I1 violated: a merged region covering freed memory was published")
    @Outcome(id = "0, 1", expect = FORBIDDEN, desc = "I4 violated: the ledger does not balance")
    @State
    public static class Real extends S {
        @Actor
        public void actor1() {
            merge();
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
    @Description("Broken variant (doomed registrations, merges included, are published): must show FORBIDDEN")
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "fresh registration")
    @Outcome(id = "1, .*", expect = FORBIDDEN, desc = "H6/I1 violated: a merged region covering freed memory was published")
    @Outcome(id = "0, 1", expect = FORBIDDEN, desc = "ledger unbalanced")
    @State
    public static class Broken extends S {
        public Broken() {
            super(CacheFault.PUBLISH_DOOMED);
        }

        @Actor
        public void actor1() {
            merge();
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
