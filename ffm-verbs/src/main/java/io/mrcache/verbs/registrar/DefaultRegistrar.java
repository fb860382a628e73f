package io.mrcache.verbs.registrar;

import io.mrcache.core.Budget;
import io.mrcache.core.Registrar;
import io.mrcache.core.RegistrationCache;
import io.mrcache.verbs.hooks.MemlockLimit;
import io.mrcache.verbs.ibv.NoRdmaDeviceException;
import io.mrcache.verbs.ibv.Verbs;
import io.mrcache.verbs.ibv.VerbsUnavailableException;
import io.mrcache.verbs.sim.SimulatedHca;
import io.mrcache.verbs.sim.SimulatedRegistrar;

/**
 * Picks the registrar a cache should embed: the first real RDMA device through libibverbs, or, where there
 * is none (or no libibverbs), the simulated HCA, saying why.
 *
 * @param registrar the registrar to use
 * @param why       one line on what was chosen and why (for logs and the command line)
 */
public record DefaultRegistrar(Registrar registrar, String why) {

    /** Share of RLIMIT_MEMLOCK the default budget takes, leaving room for pinning the cache does not own. */
    public static final double MEMLOCK_SHARE = 0.75;

    /**
     * A cache builder over this registrar with the default budget: {@link #MEMLOCK_SHARE} of the soft
     * {@code RLIMIT_MEMLOCK}, so that idle regions are evicted before the kernel refuses a pin; unlimited when
     * the limit is.
     */
    public RegistrationCache.Builder cacheBuilder() {
        MemlockLimit limit = MemlockLimit.read();
        Budget budget = limit.unlimited() ? Budget.UNLIMITED : limit.defaultBudget(MEMLOCK_SHARE, Long.MAX_VALUE);
        return RegistrationCache.builder(registrar).budget(budget);
    }

    public static DefaultRegistrar choose() {
        try {
            Verbs verbs = Verbs.load();
            String device = verbs.deviceNames().get(0);
            return new DefaultRegistrar(verbs.openRegistrar(device), "RDMA device " + device + " (libibverbs)");
        } catch (VerbsUnavailableException | NoRdmaDeviceException e) {
            SimulatedHca hca = new SimulatedHca();
            return new DefaultRegistrar(SimulatedRegistrar.onNewDomain(hca),
                    "simulated HCA (real mlock pinning), because: " + e.getMessage());
        }
    }
}
