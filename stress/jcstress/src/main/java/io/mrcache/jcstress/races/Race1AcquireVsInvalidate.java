package io.mrcache.jcstress.races;

import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.CacheFault;
import io.mrcache.core.Lease;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationCache;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * H1, acquire vs invalidate: a cached, idle region; actor 1 acquires it while actor 2 invalidates its range.
 * Result: (actor 1 saw the invalidation return before it started, it got the old registration, the lease's
 * registration was dead while held). Run: {@code ./mrcache jcstress -t Race1}.
 */
public final class Race1AcquireVsInvalidate {
    static final long B = 0x100000;
    static final long P = 4096;

    public static class S {
        final RaceRegistrar registrar = new RaceRegistrar(0, 0);
        final RegistrationCache cache;
        final Registration old;
        volatile boolean invalidateReturned;

        S(CacheFault... faults) {
            cache = RaceRegistrar.cache(registrar, Budget.UNLIMITED, faults);
            Lease l = cache.acquire(B, P, Access.LOCAL_WRITE);
            old = l.registration();
            l.close();
        }

        void acquire(III_Result r) {
            boolean after = invalidateReturned;
            Lease l = cache.acquire(B, P, Access.LOCAL_WRITE);
            r.r1 = after ? 1 : 0;
            r.r2 = l.registration().equals(old) ? 1 : 0;
            r.r3 = registrar.isLive(l.registration()) ? 0 : 1;
            l.close();
        }

        void invalidate() {
            cache.invalidate(B, P);
            invalidateReturned = true;
        }
    }

    @JCStressTest
    @Description("H1 on the real cache: an acquire that starts after invalidate returned never gets the old region")
    @Outcome(id = "0, 1, 0", expect = ACCEPTABLE_INTERESTING, desc = "actor 1 acquired before the invalidation unlinked the region; the invalidation waits for its release")
    @Outcome(id = "0, 0, 0", expect = ACCEPTABLE, desc = "the invalidation unlinked the region first; actor 1 registered anew")
    @Outcome(id = "1, 0, 0", expect = ACCEPTABLE, desc = "actor 1 started after invalidate returned and registered anew")
    @Outcome(id = "1, 1, 0", expect = FORBIDDEN, desc = "I1 violated: an acquire starting after invalidate returned got the stale registration")
    @Outcome(id = ".*, .*, 1", expect = FORBIDDEN, desc = "I2 violated: the lease's registration was deregistered while held")
    @State
    public static class Real extends S {
        @Actor
        public void actor1(III_Result r) {
            acquire(r);
        }

        @Actor
        public void actor2() {
            invalidate();
        }
    }

    @JCStressTest
    @Description("Broken variant (invalidate skips the unlink): must show the FORBIDDEN stale hit")
    @Outcome(id = "0, 1, 0", expect = ACCEPTABLE_INTERESTING, desc = "actor 1 acquired before the invalidation")
    @Outcome(id = "0, 0, 0", expect = ACCEPTABLE, desc = "registered anew")
    @Outcome(id = "1, 0, 0", expect = ACCEPTABLE, desc = "registered anew after the invalidation")
    @Outcome(id = "1, 1, 0", expect = FORBIDDEN, desc = "I1 violated: stale registration after invalidate returned")
    @Outcome(id = ".*, .*, 1", expect = FORBIDDEN, desc = "I2 violated: deregistered while held")
    @State
    public static class Broken extends S {
        public Broken() {
            super(CacheFault.SKIP_UNLINK);
        }

        @Actor
        public void actor1(III_Result r) {
            acquire(r);
        }

        @Actor
        public void actor2() {
            invalidate();
        }
    }
    @JCStressTest
    @Description("H1/H2, the retirer's window: a sweep of retirements never deregisters a region under a lease")
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "every lease kept a live registration; the ledger balances")
    @Outcome(id = "1, .*", expect = FORBIDDEN, desc = "I2 violated: a leased region was deregistered")
    @Outcome(id = "0, 1", expect = FORBIDDEN, desc = "I4 violated: the ledger does not balance")
    @State
    public static class SweepReal extends LeaseSweep {
        @Actor
        public void actor1() {
            acquireEach();
        }

        @Actor
        public void actor2() {
            cache.invalidate(BASE, SPAN); // retires every swept region, in order
        }

        @Arbiter
        public void arbiter(II_Result r) {
            super.arbiter(r);
        }
    }

    @JCStressTest
    @Description("Window mutant (retire sums the leases before it sets RETIRED): must show the FORBIDDEN outcome")
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "no lease lost its registration")
    @Outcome(id = "1, .*", expect = FORBIDDEN, desc = "I2 violated: a leased region was deregistered")
    @Outcome(id = "0, 1", expect = FORBIDDEN, desc = "ledger unbalanced")
    @State
    public static class SweepBroken extends LeaseSweep {
        public SweepBroken() {
            super(CacheFault.RETIRE_SUMS_FIRST);
        }

        @Actor
        public void actor1() {
            acquireEach();
        }

        @Actor
        public void actor2() {
            cache.invalidate(BASE, SPAN); // retires every swept region, in order
        }

        @Arbiter
        public void arbiter(II_Result r) {
            super.arbiter(r);
        }
    }
}
