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
 * I5, the policy's own eviction vs another evictor and a release: a budget of one region holds region A,
 * leased. Actor 1 evicts every idle region ({@code evictIdle}: it marks A, finds it leased, withdraws), then
 * releases A; actor 2 acquires B, whose publication makes Caffeine drop A from the policy when A cannot be
 * evicted (leased, or marked by actor 1). Whatever the order, A must be back in the policy once idle. The arbiter releases
 * B and takes a lease on a third region C: a cache whose policy still holds every idle region evicts down to C
 * alone. Result: (regions published while only C is leased, minus one; the ledger is unbalanced after close).
 */
public final class Race8PolicyDropVsEvict {
    static final long A = 0x100000;
    static final long B = 0x200000;
    static final long C = 0x300000;
    static final long P = 4096;

    public static class S {
        final RaceRegistrar registrar = new RaceRegistrar(0, 0);
        final RegistrationCache cache;
        final Lease a;
        Lease b;

        S(CacheFault... faults) {
            cache = RaceRegistrar.cache(registrar, new Budget(Long.MAX_VALUE, 1), faults);
            a = cache.acquire(A, P, Access.LOCAL_WRITE);
        }

        void arbiter(II_Result r) {
            b.close();
            Lease c = cache.acquire(C, P, Access.LOCAL_WRITE);
            r.r1 = cache.regionCount() - 1; // above zero: an idle region the policy no longer holds
            c.close();
            cache.close();
            r.r2 = registrar.balanced() ? 0 : 1;
        }
    }

    @JCStressTest
    @Description("I5 on the real cache: a region the policy dropped while it could not be evicted re-enters when idle")
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "every idle region was evictable; the ledger balances")
    @Outcome(id = "[1-9].*, .*", expect = FORBIDDEN, desc = "I5 violated: an idle region outside the policy kept the cache over budget")
    @Outcome(id = "0, 1", expect = FORBIDDEN, desc = "I4 violated: the ledger does not balance")
    @State
    public static class Real extends S {
        @Actor
        public void actor1() {
            cache.evictIdle();
            a.close();
        }

        @Actor
        public void actor2() {
            b = cache.acquire(B, P, Access.LOCAL_WRITE);
        }

        @Arbiter
        public void arbiter(II_Result r) {
            super.arbiter(r);
        }
    }

    @JCStressTest
    @Description("Broken variant (a drop is marked only when no other evictor holds the region, and only releases look): must show the lost region")
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "every idle region was evictable")
    @Outcome(id = "[1-9].*, .*", expect = FORBIDDEN, desc = "I5 violated: an idle region outside the policy kept the cache over budget")
    @Outcome(id = "0, 1", expect = FORBIDDEN, desc = "ledger unbalanced")
    @State
    public static class Broken extends S {
        public Broken() {
            super(CacheFault.LOSE_POLICY_DROPS);
        }

        @Actor
        public void actor1() {
            cache.evictIdle();
            a.close();
        }

        @Actor
        public void actor2() {
            b = cache.acquire(B, P, Access.LOCAL_WRITE);
        }

        @Arbiter
        public void arbiter(II_Result r) {
            super.arbiter(r);
        }
    }
}
