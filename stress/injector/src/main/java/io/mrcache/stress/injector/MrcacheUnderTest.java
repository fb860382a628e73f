package io.mrcache.stress.injector;

import io.mrcache.core.Lease;
import io.mrcache.core.RegistrationCache;
import java.util.concurrent.CompletionStage;

/** mrcache's {@link RegistrationCache} as a {@link CacheUnderTest}. */
public final class MrcacheUnderTest implements CacheUnderTest {
    private final RegistrationCache cache;

    public MrcacheUnderTest(RegistrationCache cache) {
        this.cache = cache;
    }

    private record LeaseHandle(Lease lease) implements Handle {
        @Override
        public int lkey() {
            return lease.lkey();
        }

        @Override
        public int rkey() {
            return lease.rkey();
        }
    }

    @Override
    public String name() {
        return "mrcache";
    }

    @Override
    public Handle acquire(long address, long length, int access) {
        return new LeaseHandle(cache.acquire(address, length, access));
    }

    @Override
    public void release(Handle handle) {
        ((LeaseHandle) handle).lease().close();
    }

    @Override
    public CompletionStage<Void> free(long address, long length) {
        return cache.invalidate(address, length);
    }

    @Override
    public boolean invalidates() {
        return true;
    }

    public RegistrationCache cache() {
        return cache;
    }

    @Override
    public void close() {
        cache.close();
    }
}
