package io.mrcache.ucx.transport;

import io.mrcache.core.Registration;
import io.mrcache.ucx.UcxKeys;
import io.mrcache.ucx.UcxRegistrar;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * UNSAFE, on purpose: the cache a transport writes when it caches registrations by (address, length, access) and
 * never hears of frees. Its free hook completes at once, so the allocator reuses a buffer while a peer's
 * operation on it may still be outstanding; the peer's write then lands in the new owner's bytes.
 */
public final class NaiveTransportCache implements TransportCache {
    private record Key(long address, long length, int access) {
    }

    private final UcxRegistrar registrar;
    private final Map<Key, Registration> registrations = new HashMap<>();

    public NaiveTransportCache(UcxRegistrar registrar) {
        this.registrar = registrar;
    }

    @Override
    public String name() {
        return "naive cache";
    }

    @Override
    public Held acquire(long address, long length, int access) {
        Registration r = registrations.computeIfAbsent(new Key(address, length, access),
                k -> registrar.register(address, length, access));
        ByteBuffer key = UcxKeys.of(r).packedRemoteKey();
        return new Held() {
            @Override
            public ByteBuffer packedRemoteKey() {
                return key.duplicate();
            }

            @Override
            public void release() {
                // nothing: the naive cache keeps no count of its users
            }
        };
    }

    @Override
    public CompletionStage<Void> free(long address, long length) {
        return CompletableFuture.completedFuture(null); // never hears of frees: the bug
    }

    @Override
    public long registrations() {
        return registrations.size();
    }

    @Override
    public void close() {
        registrations.values().forEach(registrar::deregister);
        registrations.clear();
    }
}
