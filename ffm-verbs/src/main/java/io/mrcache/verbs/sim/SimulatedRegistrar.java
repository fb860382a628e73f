package io.mrcache.verbs.sim;

import io.mrcache.core.Registrar;
import io.mrcache.core.Registration;

/** The cache's {@link Registrar} over one protection domain of a {@link SimulatedHca}. */
public final class SimulatedRegistrar implements Registrar {
    private final SimulatedHca hca;
    private final long pd;

    public SimulatedRegistrar(SimulatedHca hca, long protectionDomain) {
        this.hca = hca;
        this.pd = protectionDomain;
    }

    /** A registrar on a new protection domain of {@code hca}. */
    public static SimulatedRegistrar onNewDomain(SimulatedHca hca) {
        return new SimulatedRegistrar(hca, hca.allocProtectionDomain());
    }

    @Override
    public Registration register(long address, long length, int access) {
        return hca.register(pd, address, length, access);
    }

    @Override
    public void deregister(Registration registration) {
        hca.deregister(registration);
    }

    @Override
    public long protectionDomain() {
        return pd;
    }

    @Override
    public long memlockLimit() {
        return hca.memlockLimit();
    }

    public SimulatedHca hca() {
        return hca;
    }
}
