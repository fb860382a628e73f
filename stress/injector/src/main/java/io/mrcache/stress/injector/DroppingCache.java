package io.mrcache.stress.injector;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;

/**
 * UNSAFE, for the proofs: a cache that loses one free hook in twenty (it says "done" without invalidating),
 * the bug a cache with a racy or lossy invalidation queue has. The injector must report it.
 */
public final class DroppingCache implements CacheUnderTest {
    private static final CompletionStage<Void> DONE = CompletableFuture.completedFuture(null);
    private final CacheUnderTest inner;
    private final AtomicLong frees = new AtomicLong();

    public DroppingCache(CacheUnderTest inner) {
        this.inner = inner;
    }

    @Override
    public String name() {
        return inner.name() + " dropping 1 in 20 invalidations";
    }

    @Override
    public Handle acquire(long address, long length, int access) {
        return inner.acquire(address, length, access);
    }

    @Override
    public void release(Handle handle) {
        inner.release(handle);
    }

    @Override
    public CompletionStage<Void> free(long address, long length) {
        return frees.incrementAndGet() % 20 == 0 ? DONE : inner.free(address, length);
    }

    @Override
    public Map<String, Long> coverage() {
        return inner.coverage();
    }

    @Override
    public void retryFailedDeregistrations() {
        inner.retryFailedDeregistrations();
    }

    @Override
    public void close() {
        inner.close();
    }
}
