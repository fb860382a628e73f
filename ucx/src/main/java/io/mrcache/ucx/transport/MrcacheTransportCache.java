package io.mrcache.ucx.transport;

import io.mrcache.core.CacheCounter;
import io.mrcache.core.Lease;
import io.mrcache.core.RegistrationCache;
import io.mrcache.ucx.UcxKeys;
import io.mrcache.ucx.UcxRegistrar;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletionStage;

/**
 * mrcache in the transport: a lease per operation (its packed remote key rides on the registration), released
 * on the peer's completion message; the free hook is {@link RegistrationCache#invalidate}, whose stage waits for
 * the leases on the range, so the allocator cannot reuse a buffer a peer may still write.
 */
public final class MrcacheTransportCache implements TransportCache {
    private final RegistrationCache cache;

    public MrcacheTransportCache(UcxRegistrar registrar) {
        this.cache = RegistrationCache.builder(registrar).build();
    }

    private record LeaseHeld(Lease lease) implements Held {
        @Override
        public ByteBuffer packedRemoteKey() {
            return UcxKeys.of(lease).packedRemoteKey();
        }

        @Override
        public void release() {
            lease.close();
        }
    }

    @Override
    public String name() {
        return "mrcache";
    }

    @Override
    public Held acquire(long address, long length, int access) {
        return new LeaseHeld(cache.acquire(address, length, access));
    }

    @Override
    public CompletionStage<Void> free(long address, long length) {
        return cache.invalidate(address, length);
    }

    @Override
    public long registrations() {
        return cache.metrics().get(CacheCounter.REGISTRATIONS);
    }

    public RegistrationCache cache() {
        return cache;
    }

    @Override
    public void close() {
        cache.close();
    }
}
