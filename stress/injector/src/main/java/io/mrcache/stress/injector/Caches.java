package io.mrcache.stress.injector;

import io.mrcache.core.Budget;
import io.mrcache.core.CacheFault;
import io.mrcache.core.RegistrationCache;

/** The caches the demo and the proofs drive. */
public final class Caches {
    private Caches() {
    }

    /** mrcache, with a budget of 8 regions under {@link Fault#EVICTION_PRESSURE}, else 4096. */
    public static final AddressReuseInjector.CacheFactory MRCACHE = (registrar, config) -> new MrcacheUnderTest(
            builder(registrar, config).build());

    /** The naive exact-match cache without invalidation (UNSAFE). */
    public static final AddressReuseInjector.CacheFactory NAIVE = (registrar, config) -> new NaiveCache(registrar);

    /** mrcache losing one invalidation in twenty (UNSAFE, for the proofs). */
    public static final AddressReuseInjector.CacheFactory DROPPING = (registrar, config) -> new DroppingCache(
            MRCACHE.create(registrar, config));

    /** mrcache with one deliberate bug switched on (UNSAFE, for the proofs). */
    public static AddressReuseInjector.CacheFactory broken(CacheFault bug) {
        return (registrar, config) -> new MrcacheUnderTest("mrcache with " + bug,
                builder(registrar, config).withDeliberateBug(bug).build());
    }

    private static RegistrationCache.Builder builder(io.mrcache.core.Registrar registrar, InjectorConfig config) {
        return RegistrationCache.builder(registrar)
                .budget(new Budget(Long.MAX_VALUE, config.has(Fault.EVICTION_PRESSURE) ? 8 : 4096));
    }
}
