package io.mrcache.jcstress.races;

import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.CacheFault;
import io.mrcache.core.Lease;
import io.mrcache.core.Registrar;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationCache;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The registrar of the jcstress races: counts register and deregister, knows which registrations are live,
 * and records for each registration whether its register call started before the race's invalidation began
 * ({@link #invalidationBegan}), so that an arbiter can tell a stale registration from a fresh one.
 */
final class RaceRegistrar implements Registrar {
    volatile boolean invalidationBegan;
    private final ConcurrentHashMap<Long, Registration> live = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Long, Boolean> startedBeforeInvalidation = new ConcurrentHashMap<>();
    private final AtomicInteger nextHandle = new AtomicInteger(1);
    final AtomicInteger registers = new AtomicInteger();
    final AtomicInteger deregisters = new AtomicInteger();
    final AtomicInteger badDeregisters = new AtomicInteger();
    private final int spinInRegister;
    private final int spinInDeregister;

    RaceRegistrar(int spinInRegister, int spinInDeregister) {
        this.spinInRegister = spinInRegister;
        this.spinInDeregister = spinInDeregister;
    }

    @Override
    public Registration register(long address, long length, int access) {
        boolean before = !invalidationBegan;
        spin(spinInRegister);
        int h = nextHandle.getAndIncrement();
        Registration r = new Registration(address, length, access, h, h, 1, h);
        startedBeforeInvalidation.put((long) h, before);
        live.put((long) h, r);
        registers.incrementAndGet();
        return r;
    }

    @Override
    public void deregister(Registration registration) {
        spin(spinInDeregister);
        if (live.remove(registration.handle()) == null) {
            badDeregisters.incrementAndGet();
        }
        deregisters.incrementAndGet();
    }

    boolean isLive(Registration r) {
        return live.containsKey(r.handle());
    }

    /** True when the registration's register call started before the invalidation began. */
    boolean startedBeforeInvalidation(Registration r) {
        return startedBeforeInvalidation.getOrDefault(r.handle(), false);
    }

    /** Every registration deregistered exactly once. */
    boolean balanced() {
        return live.isEmpty() && badDeregisters.get() == 0 && registers.get() == deregisters.get();
    }

    /**
     * The arbiter of the register-vs-free races: acquires the range after everything ran and closes the cache.
     * r1 = 1 when that acquire got a registration begun before the invalidation (published stale), r2 = 1 when
     * the ledger does not balance after close.
     */
    void judgeFreshness(RegistrationCache cache, long address, long length,
            org.openjdk.jcstress.infra.results.II_Result r) {
        Lease l = cache.acquire(address, length, Access.LOCAL_WRITE);
        r.r1 = startedBeforeInvalidation(l.registration()) ? 1 : 0;
        l.close();
        cache.close();
        r.r2 = balanced() ? 0 : 1;
    }

    static RegistrationCache cache(RaceRegistrar registrar, Budget budget, CacheFault... faults) {
        RegistrationCache.Builder b = RegistrationCache.builder(registrar).budget(budget);
        for (CacheFault f : faults) {
            b.withDeliberateBug(f);
        }
        return b.build();
    }

    private static void spin(int n) {
        for (int i = 0; i < n; i++) {
            Thread.onSpinWait();
        }
    }
}
