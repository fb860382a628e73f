package io.mrcache.core;

import java.util.Objects;

/**
 * A {@link Registrar} that forwards every call to another one: extend it and override only what a decorator
 * changes (watch each registered range, count calls, stage a race in a test), as Guava's forwarding
 * collections do.
 */
public abstract class ForwardingRegistrar implements Registrar {
    private final Registrar delegate;

    protected ForwardingRegistrar(Registrar delegate) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
    }

    /** The registrar this one forwards to. */
    protected final Registrar delegate() {
        return delegate;
    }

    @Override
    public Registration register(long address, long length, int access) {
        return delegate.register(address, length, access);
    }

    @Override
    public void deregister(Registration registration) {
        delegate.deregister(registration);
    }

    @Override
    public long protectionDomain() {
        return delegate.protectionDomain();
    }

    @Override
    public long memlockLimit() {
        return delegate.memlockLimit();
    }

    @Override
    public void close() {
        delegate.close();
    }
}
