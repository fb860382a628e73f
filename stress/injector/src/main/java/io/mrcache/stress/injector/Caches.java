package io.mrcache.stress.injector;

import io.mrcache.core.Budget;
import io.mrcache.core.RegistrationCache;

/** The caches the demo compares. */
public final class Caches {
    private Caches() {
    }

    /** mrcache, with a budget of 8 regions under {@link Fault#EVICTION_PRESSURE}, else 4096. */
    public static final AddressReuseInjector.CacheFactory MRCACHE = (registrar, config) -> new MrcacheUnderTest(
            RegistrationCache.builder(registrar)
                    .budget(new Budget(Long.MAX_VALUE, config.has(Fault.EVICTION_PRESSURE) ? 8 : 4096))
                    .build());

    /** The naive exact-match cache without invalidation (UNSAFE). */
    public static final AddressReuseInjector.CacheFactory NAIVE = (registrar, config) -> new NaiveCache(registrar);
}
