package io.mrcache.stress.injector;

import io.mrcache.core.Registrar;
import io.mrcache.core.Registration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;

/**
 * UNSAFE, for demonstration only: the stale-registration bug in its plainest form. An exact-match map from
 * (address, length, access) to a registration that is never invalidated: the free hook is ignored, so after
 * an allocator reuses the addresses this cache hands out the old registration, whose pages are no longer
 * the buffer's. Never use it for real transfers; it exists to show what mrcache prevents.
 */
public final class NaiveCache implements CacheUnderTest {
    private record Key(long address, long length, int access) {
    }

    private record Entry(Registration registration) implements Handle {
        @Override
        public int lkey() {
            return registration.lkey();
        }

        @Override
        public int rkey() {
            return registration.rkey();
        }
    }

    private static final CompletionStage<Void> DONE = CompletableFuture.completedFuture(null);
    private final Registrar registrar;
    private final ConcurrentHashMap<Key, Entry> map = new ConcurrentHashMap<>();

    public NaiveCache(Registrar registrar) {
        this.registrar = registrar;
    }

    @Override
    public String name() {
        return "naive (UNSAFE)";
    }

    @Override
    public Handle acquire(long address, long length, int access) {
        return map.computeIfAbsent(new Key(address, length, access),
                k -> new Entry(registrar.register(address, length, access)));
    }

    @Override
    public void release(Handle handle) {
        // no reference counting either
    }

    @Override
    public CompletionStage<Void> free(long address, long length) {
        return DONE; // the bug: the free is not seen
    }

    @Override
    public void close() {
        map.values().forEach(e -> registrar.deregister(e.registration()));
        map.clear();
    }
}
