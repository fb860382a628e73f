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
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;

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

    /** Share of RLIMIT_MEMLOCK the default budget takes, leaving room for pinning the cache does not own. */
    public static final double MEMLOCK_SHARE = 0.75;
    /** The system property {@link #fromSystemProperty()} reads: {@code device} (default) or {@code simulated}. */
    public static final String PROPERTY = "mrcache.registrar";
    private static final System.Logger LOG = System.getLogger(DefaultRegistrar.class.getName());
    private static final AtomicBoolean SIMULATION_ANNOUNCED = new AtomicBoolean();

    /**
     * A cache builder over this registrar with the default budget ({@link #MEMLOCK_SHARE} of the soft
     * {@code RLIMIT_MEMLOCK}, unlimited when the limit is), owning the registrar: closing the cache closes it.
     */
    public RegistrationCache.Builder cacheBuilder() {
        MemlockLimit limit = MemlockLimit.read();
        Budget budget = limit.unlimited() ? Budget.UNLIMITED : limit.defaultBudget(MEMLOCK_SHARE, Long.MAX_VALUE);
        return RegistrationCache.builder(registrar).budget(budget).ownsRegistrar(true);
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
