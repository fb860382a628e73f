package io.mrcache.verbs.hooks;

import io.mrcache.core.ForwardingRegistrar;
import io.mrcache.core.Registrar;
import io.mrcache.core.Registration;
import io.mrcache.verbs.Errno;
import io.mrcache.verbs.NativeException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link Registrar} decorator that hands each registered range to an {@link UnmapMonitor}, so that an
 * unmap of cached memory reaches the cache as an invalidation. Ranges the monitor cannot watch (not
 * anonymous private memory: EINVAL) are registered anyway, and counted.
 */
public final class UnmapWatchingRegistrar extends ForwardingRegistrar {
    private final UnmapMonitor monitor;
    private final AtomicLong unwatchable = new AtomicLong();

    public UnmapWatchingRegistrar(Registrar delegate, UnmapMonitor monitor) {
        super(delegate);
        this.monitor = monitor;
    }

    @Override
    public Registration register(long address, long length, int access) {
        Registration r = super.register(address, length, access);
        try {
            monitor.watch(address, length);
        } catch (NativeException e) {
            if (e.errno() != Errno.EINVAL) {
                super.deregister(r);
                throw e;
            }
            unwatchable.incrementAndGet();
        }
        return r;
    }

    /** Registrations whose range the monitor could not watch. */
    public long unwatchable() {
        return unwatchable.get();
    }
}
