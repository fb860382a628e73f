package io.mrcache.stress.injector;

import io.mrcache.core.Budget;
import io.mrcache.core.CacheFault;
import io.mrcache.core.DeregistrationRetry;
import io.mrcache.core.PinnedMemoryLimit;
import io.mrcache.core.Registrar;
import io.mrcache.core.RegistrationCache;
import io.mrcache.core.TenantShare;
import io.mrcache.verbs.hooks.PageFrameCheck;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/** The caches the demo and the proofs drive. */
public final class Caches {
    private Caches() {
    }

    /** mrcache, with a budget of 8 regions under {@link Fault#EVICTION_PRESSURE}, else 4096. */
    public static final AddressReuseInjector.CacheFactory MRCACHE = (registrar, config) -> new MrcacheUnderTest(
            builder(registrar, config).build());

    /** The naive exact-match cache without invalidation (UNSAFE). */
    public static final AddressReuseInjector.CacheFactory NAIVE = (registrar, config) -> new NaiveCache(registrar);

    /**
     * mrcache with the library's defense against lost frees: every hit checked against the page frames recorded
     * at registration ({@link PageFrameCheck}); off, and saying so, where page frame numbers are not readable.
     */
    public static final AddressReuseInjector.CacheFactory MRCACHE_PAGE_FRAME_CHECK = (registrar, config) -> {
        PageFrameCheck check = PageFrameCheck.open();
        PageFrameCheck.RecordingFrames frames = new PageFrameCheck.RecordingFrames(registrar, check);
        RegistrationCache cache = builder(frames, config).build();
        return new MrcacheUnderTest("mrcache + page-frame check", cache, new PageFrameCheck.Guard(cache, frames),
                check);
    };

    /** mrcache losing one invalidation in twenty (UNSAFE, for the proofs). */
    public static final AddressReuseInjector.CacheFactory DROPPING = (registrar, config) -> new DroppingCache(
            MRCACHE.create(registrar, config));

    /** mrcache with one deliberate bug switched on (UNSAFE, for the proofs). */
    public static AddressReuseInjector.CacheFactory broken(CacheFault bug) {
        return (registrar, config) -> new MrcacheUnderTest("mrcache with " + bug,
                builder(registrar, config).withDeliberateBug(bug).build());
    }

    /**
     * Two mrcache tenants in two protection domains sharing one {@link PinnedMemoryLimit} (under
     * {@link Fault#TWO_TENANTS}): 256 KiB under {@link Fault#EVICTION_PRESSURE} (a few dozen of the injector's
     * buffers), else 16 MiB; tenant A is guaranteed a quarter of it, B has no guarantee. Without two-tenants it is
     * the plain cache.
     */
    public static final AddressReuseInjector.CacheFactory TWO_TENANTS = tenants("mrcache, two tenants", null, false);

    /** {@link #TWO_TENANTS} with one deliberate bug in both tenants' caches (UNSAFE, for the proofs). */
    public static AddressReuseInjector.CacheFactory twoTenantsBroken(CacheFault bug) {
        return tenants("mrcache, two tenants, with " + bug, bug, false);
    }

    /**
     * UNSAFE, for the proofs of I7: both tenants' caches register in tenant A's protection domain, as a transport
     * that kept one registrar for two domains would, while B posts its keys through its own domain.
     */
    public static final AddressReuseInjector.CacheFactory TWO_TENANTS_ONE_DOMAIN =
            tenants("mrcache, two tenants registering in one domain", null, true);

    private static AddressReuseInjector.CacheFactory tenants(String name, @Nullable CacheFault bug,
            boolean oneDomain) {
        return new AddressReuseInjector.CacheFactory() {
            @Override
            public CacheUnderTest create(Registrar registrar, InjectorConfig config) {
                return bug == null ? MRCACHE.create(registrar, config) : broken(bug).create(registrar, config);
            }

            @Override
            public CacheUnderTest create(Registrar first, Registrar second, InjectorConfig config) {
                long bytes = config.has(Fault.EVICTION_PRESSURE) ? 256 * 1024 : 16 << 20;
                PinnedMemoryLimit limit = new PinnedMemoryLimit(bytes);
                return new TenantsUnderTest(name,
                        new MrcacheUnderTest(tenant(first, config, bug).tenant(limit,
                                TenantShare.guaranteed("A", bytes / 4)).build()),
                        new MrcacheUnderTest(tenant(oneDomain ? first : second, config, bug).tenant(limit,
                                TenantShare.bestEffort("B")).build()),
                        limit, first.protectionDomain(), second.protectionDomain());
            }
        };
    }

    private static RegistrationCache.Builder tenant(Registrar registrar, InjectorConfig config,
            @Nullable CacheFault bug) {
        RegistrationCache.Builder b = RegistrationCache.builder(registrar)
                .deregistrationRetry(config.threads() == 1 ? DeregistrationRetry.MANUAL : RETRY);
        return bug == null ? b : b.withDeliberateBug(bug);
    }

    /**
     * The injector's EBUSY ({@link Fault#FAILING_DEREGISTRATION}) is a coin toss per attempt, not a state that
     * lasts as a bound memory window does, so a retry after 200 us is as likely to succeed as one after the
     * library's default 10 ms. With that default, a soak's thousand failures a second kept 1 to 12 registrations
     * quarantined at any time (they count against the budget, I5), often more than eviction-pressure's budget of
     * 8: the policy then held 0 or 1 idle regions and evicted each region at its release.
     */
    static final DeregistrationRetry RETRY = DeregistrationRetry.backoff(Duration.ofNanos(200_000), Duration.ofSeconds(5));

    private static RegistrationCache.Builder builder(io.mrcache.core.Registrar registrar, InjectorConfig config) {
        return RegistrationCache.builder(registrar)
                .budget(new Budget(Long.MAX_VALUE, config.has(Fault.EVICTION_PRESSURE) ? 8 : 4096))
                // one thread replays a seed: its retries run at fixed points of the run, not on a clock
                .deregistrationRetry(config.threads() == 1 ? DeregistrationRetry.MANUAL : RETRY);
    }
}
