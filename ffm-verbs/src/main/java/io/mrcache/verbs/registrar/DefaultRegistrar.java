package io.mrcache.verbs.registrar;

import io.mrcache.core.PinnedMemoryLimit;
import io.mrcache.core.Registrar;
import io.mrcache.core.RegistrationCache;
import io.mrcache.core.TenantShare;
import io.mrcache.verbs.hooks.MemlockLimit;
import io.mrcache.verbs.ibv.NoRdmaDeviceException;
import io.mrcache.verbs.ibv.Verbs;
import io.mrcache.verbs.ibv.VerbsUnavailableException;
import io.mrcache.verbs.sim.SimulatedHca;
import io.mrcache.verbs.sim.SimulatedRegistrar;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * The registrar a cache embeds, chosen explicitly: a real RDMA device through libibverbs ({@link #device()}),
 * which fails clearly where there is none; the simulated HCA only when asked for ({@link #simulated()}), which
 * says once, loudly, that its keys are not valid on any NIC; or what the system property
 * {@value #PROPERTY} names ({@link #fromSystemProperty()}: {@code device}, the default, or {@code simulated}).
 * Tools that must run anywhere use {@link #deviceOrSimulated()}, which says why it fell back. Nothing falls back
 * silently: a transport in production that found no device must not hand peers keys no NIC accepts.
 *
 * @param registrar the registrar to use; close it after the cache (or build the cache to own it)
 * @param why       one line on what was chosen and why (for logs and the command line)
 */
public record DefaultRegistrar(Registrar registrar, String why) {

    /** Share of RLIMIT_MEMLOCK the process-wide limit takes, leaving room for pinning the caches do not own. */
    public static final double MEMLOCK_SHARE = 0.75;
    /** The system property {@link #fromSystemProperty()} reads: {@code device} (default) or {@code simulated}. */
    public static final String PROPERTY = "mrcache.registrar";
    private static final System.Logger LOG = System.getLogger(DefaultRegistrar.class.getName());
    private static final AtomicBoolean SIMULATION_ANNOUNCED = new AtomicBoolean();
    private static final AtomicInteger UNNAMED_TENANTS = new AtomicInteger();
    private static volatile @Nullable PinnedMemoryLimit processLimit;

    /**
     * A cache builder over this registrar, owning it (closing the cache closes it), whose cache is a tenant of
     * the {@linkplain #processLimit() process-wide limit} named {@code cache-N}, with no guarantee: every cache
     * built this way shares that one limit instead of each taking a budget of its own (two caches with 3/4 of
     * the memlock limit each would promise 150% of it). Without a memlock limit the cache is unbounded. Call
     * {@link #cacheBuilder(TenantShare)} to give the cache a name, a guarantee or a ceiling.
     */
    public RegistrationCache.Builder cacheBuilder() {
        return cacheBuilder(TenantShare.bestEffort("cache-" + UNNAMED_TENANTS.incrementAndGet()));
    }

    /** As {@link #cacheBuilder()}, the cache a tenant of the process-wide limit with {@code share}. */
    public RegistrationCache.Builder cacheBuilder(TenantShare share) {
        RegistrationCache.Builder b = RegistrationCache.builder(registrar).ownsRegistrar(true);
        PinnedMemoryLimit limit = processLimit();
        return limit == null ? b : b.tenant(limit, share);
    }

    /**
     * The limit every cache of {@link #cacheBuilder()} draws from: {@link #MEMLOCK_SHARE} of the soft
     * {@code RLIMIT_MEMLOCK}, read once; null when the memlock limit is unlimited.
     */
    public static @Nullable PinnedMemoryLimit processLimit() {
        PinnedMemoryLimit limit = processLimit;
        if (limit == null) {
            synchronized (DefaultRegistrar.class) {
                limit = processLimit;
                if (limit == null) {
                    MemlockLimit memlock = MemlockLimit.read();
                    if (memlock.unlimited()) {
                        return null;
                    }
                    limit = new PinnedMemoryLimit(memlock.defaultBudget(MEMLOCK_SHARE, Long.MAX_VALUE).maxPinnedBytes());
                    processLimit = limit;
                }
            }
        }
        return limit;
    }

    /**
     * The first RDMA device, through the real libibverbs.
     *
     * @throws VerbsUnavailableException when libibverbs cannot be loaded (names the library and the packages)
     * @throws NoRdmaDeviceException     when there is no device (names the errno and how to get one)
     */
    public static DefaultRegistrar device() {
        Verbs verbs = Verbs.load();
        String device = verbs.deviceNames().get(0);
        return new DefaultRegistrar(verbs.openRegistrar(device), "RDMA device " + device + " (libibverbs)");
    }

    /**
     * The simulated HCA (real {@code mlock} pinning, keys valid only on the simulated NIC), for tests, demos and
     * machines without RDMA. The first call in a JVM logs a WARNING that its keys are not valid on any NIC.
     */
    public static DefaultRegistrar simulated() {
        if (SIMULATION_ANNOUNCED.compareAndSet(false, true)) {
            LOG.log(System.Logger.Level.WARNING, "mrcache: using the SIMULATED HCA. Its keys are not valid on any"
                    + " NIC: never send them to a peer. Use DefaultRegistrar.device() (or -D" + PROPERTY
                    + "=device) where an RDMA device exists.");
        }
        return new DefaultRegistrar(SimulatedRegistrar.onNewDomain(new SimulatedHca()),
                "simulated HCA (real mlock pinning; keys valid on no NIC)");
    }

    /** Test seam: the next {@link #simulated()} announces itself again. */
    static void forgetAnnouncement() {
        SIMULATION_ANNOUNCED.set(false);
    }

    /**
     * What the system property {@value #PROPERTY} asks for: {@code device} (the default) or {@code simulated}.
     *
     * @throws IllegalArgumentException naming the property and the value when it is neither
     */
    public static DefaultRegistrar fromSystemProperty() {
        String v = System.getProperty(PROPERTY, "device").trim().toLowerCase(Locale.ROOT);
        return switch (v) {
            case "device" -> device();
            case "simulated" -> simulated();
            default -> throw new IllegalArgumentException("-D" + PROPERTY + "=" + System.getProperty(PROPERTY)
                    + ": give 'device' (a real RDMA device, the default) or 'simulated' (the simulated HCA)");
        };
    }

    /** For tools that must run anywhere: the first device, else the simulated HCA, saying why it fell back. */
    public static DefaultRegistrar deviceOrSimulated() {
        try {
            return device();
        } catch (VerbsUnavailableException | NoRdmaDeviceException e) {
            DefaultRegistrar sim = simulated();
            return new DefaultRegistrar(sim.registrar(), sim.why() + ", because: " + e.getMessage());
        }
    }
}
