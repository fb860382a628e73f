package io.mrcache.verbs.hooks;

import io.mrcache.core.Registrar;
import io.mrcache.core.Registration;
import io.mrcache.verbs.Errno;
import io.mrcache.verbs.NativeException;

/**
 * A {@link Registrar} decorator that hands each registered range to an {@link UnmapMonitor}, so that an
 * unmap of cached memory reaches the cache as an invalidation. Ranges the monitor cannot watch (not
 * anonymous private memory: EINVAL) are registered anyway, and counted.
 */
public final class UnmapWatchingRegistrar implements Registrar {
    private final Registrar delegate;
    private final UnmapMonitor monitor;
    private final java.util.concurrent.atomic.AtomicLong unwatchable = new java.util.concurrent.atomic.AtomicLong();

    public UnmapWatchingRegistrar(Registrar delegate, UnmapMonitor monitor) {
        this.delegate = delegate;
        this.monitor = monitor;
    }

    @Override
    public Registration register(long address, long length, int access) {
        Registration r = delegate.register(address, length, access);
        try {
            monitor.watch(address, length);
        } catch (NativeException e) {
            if (e.errno() != Errno.EINVAL) {
                delegate.deregister(r);
                throw e;
            }
            unwatchable.incrementAndGet();
        }
        return r;
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

    /** Registrations whose range the monitor could not watch. */
    public long unwatchable() {
        return unwatchable.get();
    }
}
