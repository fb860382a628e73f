package io.mrcache.jcstress.races;

import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.CacheFault;
import io.mrcache.core.Lease;
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
 * H5, eviction vs acquire: a budget of one region holds idle region A. Actor 1 acquires A while actor 2
 * acquires B, whose registration pushes the cache over budget and makes it evict. Result: (an actor's lease
 * was deregistered while held, the ledger is unbalanced after close).
 */
public final class Race4EvictVsAcquire {
    static final long A = 0x100000;
    static final long B = 0x200000;
    static final long P = 4096;

    public static class S {
        final RaceRegistrar registrar = new RaceRegistrar(0, 0);
        final RegistrationCache cache;
        volatile int deadUnderLease;

        S(CacheFault... faults) {
            cache = RaceRegistrar.cache(registrar, new Budget(Long.MAX_VALUE, 1), faults);
            cache.acquire(A, P, Access.LOCAL_WRITE).close();
        }

        void use(long address) {
            Lease l = cache.acquire(address, P, Access.LOCAL_WRITE);
            for (int i = 0; i < 20; i++) {
                Thread.onSpinWait(); // "work requests" while the lease is held
            }
            if (!registrar.isLive(l.registration())) {
                deadUnderLease = 1;
            }
            l.close();
        }

        void arbiter(II_Result r) {
            r.r1 = deadUnderLease;
            cache.close();
            r.r2 = registrar.balanced() ? 0 : 1;
        }
    }

    @JCStressTest
    @Description("H5 on the real cache: eviction never takes a region from under a lease")
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "every lease kept a live registration; the ledger balances")
    @Outcome(id = "1, .*", expect = FORBIDDEN, desc = "H5/I2 violated: a leased region was evicted and deregistered")
    @Outcome(id = "0, 1", expect = FORBIDDEN, desc = "I4 violated: the ledger does not balance")
    @State
    public static class Real extends S {
        @Actor
        public void actor1() {
            use(A);
        }

        @Actor
        public void actor2() {
            use(B);
        }

        @Arbiter
        public void arbiter(II_Result r) {
            super.arbiter(r);
        }
    }

    @JCStressTest
    @Description("H5, the evictor's window: a sweep of evictions never takes a region from under a lease")
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "every lease kept a live registration; the ledger balances")
    @Outcome(id = "1, .*", expect = FORBIDDEN, desc = "H5/I2 violated: a leased region was evicted and deregistered")
    @Outcome(id = "0, 1", expect = FORBIDDEN, desc = "I4 violated: the ledger does not balance")
    @State
    public static class SweepReal extends LeaseSweep {
        @Actor
        public void actor1() {
            acquireEach();
        }

        @Actor
        public void actor2() {
            cache.evictIdle();
        }

        @Arbiter
        public void arbiter(II_Result r) {
            super.arbiter(r);
        }
    }

    @JCStressTest
    @Description("Window mutant (the evictor claims without its EVICTING mark): must show the FORBIDDEN eviction")
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "no lease lost its registration")
    @Outcome(id = "1, .*", expect = FORBIDDEN, desc = "H5/I2 violated: a leased region was evicted and deregistered")
    @Outcome(id = "0, 1", expect = FORBIDDEN, desc = "ledger unbalanced")
    @State
    public static class SweepBroken extends LeaseSweep {
        public SweepBroken() {
            super(CacheFault.EVICT_WITHOUT_MARK);
        }

        @Actor
        public void actor1() {
            acquireEach();
        }

        @Actor
        public void actor2() {
            cache.evictIdle();
        }

        @Arbiter
        public void arbiter(II_Result r) {
            super.arbiter(r);
        }
    }

    @JCStressTest
    @Description("Broken variant (eviction skips the idle compare-and-set): must show the FORBIDDEN eviction")
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "no lease lost its registration")
    @Outcome(id = "1, .*", expect = FORBIDDEN, desc = "H5/I2 violated: a leased region was evicted and deregistered")
    @Outcome(id = "0, 1", expect = FORBIDDEN, desc = "ledger unbalanced")
    @State
    public static class Broken extends S {
        public Broken() {
            super(CacheFault.EVICT_LEASED);
        }

        @Actor
        public void actor1() {
            use(A);
        }

        @Actor
        public void actor2() {
            use(B);
        }

        @Arbiter
        public void arbiter(II_Result r) {
            super.arbiter(r);
        }
    }
}
