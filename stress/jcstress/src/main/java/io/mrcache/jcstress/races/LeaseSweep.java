package io.mrcache.jcstress.races;

import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.CacheFault;
import io.mrcache.core.Lease;
import io.mrcache.core.RegistrationCache;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * The state of the sweeping races, which reach a window of a few instructions by repeating it: {@value #SWEPT}
 * idle regions; one actor takes a lease on each in turn and keeps them all before it checks them
 * ({@link #acquireEach}), while the other retires them one by one in the same order (an eviction of every idle
 * region, or one invalidation of their whole span). Each region is one more chance for an acquire to land inside
 * the retirer's window. Result: (a lease's registration was deregistered while held, the ledger is unbalanced
 * after close).
 */
class LeaseSweep {
    static final int SWEPT = 32;
    static final long BASE = 0x100000;
    static final long P = 4096;
    /** The range that covers every swept region. */
    static final long SPAN = 2 * SWEPT * P;

    final RaceRegistrar registrar = new RaceRegistrar(0, 0);
    final RegistrationCache cache;
    volatile int deadUnderLease;

    LeaseSweep(CacheFault... faults) {
        cache = RaceRegistrar.cache(registrar, Budget.UNLIMITED, faults);
        for (int i = 0; i < SWEPT; i++) {
            cache.acquire(BASE + 2 * i * P, P, Access.LOCAL_WRITE).close();
        }
    }

    void acquireEach() {
        Lease[] held = new Lease[SWEPT];
        for (int i = 0; i < SWEPT; i++) {
            held[i] = cache.acquire(BASE + 2 * i * P, P, Access.LOCAL_WRITE);
        }
        for (Lease l : held) {
            if (!registrar.isLive(l.registration())) {
                deadUnderLease = 1;
            }
            l.close();
        }
    }

    void arbiter(II_Result r) {
        r.r1 = deadUnderLease;
        // every lease is released by now, so close deregisters everything before it returns; a stage still
        // pending means a deregistration nobody will make (a mutant can lose one): unbalanced, never waited on
        boolean closed = cache.closeAsync().toCompletableFuture().isDone();
        r.r2 = closed && registrar.balanced() ? 0 : 1;
    }
}
