package io.mrcache.stress.injector;

import java.util.concurrent.CompletionStage;

/**
 * What the address-reuse injector drives: any registration cache, behind four calls. Implement it over
 * your own cache (or invalidation logic) and hand it to {@link AddressReuseInjector} to stress-test it.
 *
 * <p>The injector calls {@link #acquire} before the NIC uses a buffer's keys, {@link #release} after, and
 * {@link #free} as the allocator's free hook; in safe mode the allocator reuses the range only after the
 * returned stage completes. The registrar to use is passed to the factory that builds the cache.
 */
public interface CacheUnderTest extends AutoCloseable {

    /** Keys for one use of a buffer. */
    interface Handle {
        int lkey();

        int rkey();
    }

    String name();

    /** Registration keys covering {@code [address, address + length)} with {@code access} rights. */
    Handle acquire(long address, long length, int access);

    void release(Handle handle);

    /** The free hook: the range is about to be freed. Reuse waits for the stage (safe mode). */
    CompletionStage<Void> free(long address, long length);

    /** Whether {@link #free} really invalidates (the injector's generation check needs it). */
    boolean invalidates();

    /** Deregisters everything still registered. */
    @Override
    void close();
}
