package io.mrcache.stress.injector;

import java.util.Map;
import java.util.concurrent.CompletionStage;

/**
 * What the address-reuse injector drives: any registration cache, behind four calls. Implement it over
 * your own cache (or invalidation logic) and hand it to {@link AddressReuseInjector} to stress-test it.
 *
 * <p>The injector calls {@link #acquire} before the NIC uses a buffer's keys, {@link #release} after, and
 * {@link #free} as the allocator's free hook: the allocator reuses the range only after the returned stage
 * completes normally (an exceptional completion means a key may still be live; the injector announces the
 * free again later). The registrar to use is passed to the factory that builds the cache.
 */
public interface CacheUnderTest extends AutoCloseable {

    /** Keys for one use of a buffer. */
    interface Handle {
        int lkey();

        int rkey();

        /**
         * The protection domain the user posts these keys through (its queue pairs'), where a cache serves
         * several; 0, the default, for the domain the keys were registered in.
         */
        default long domain() {
            return 0;
        }
    }

    String name();

    /** Registration keys covering {@code [address, address + length)} with {@code access} rights. */
    Handle acquire(long address, long length, int access);

    void release(Handle handle);

    /** The free hook: the range is freed. The allocator reuses it only when the stage completes normally. */
    CompletionStage<Void> free(long address, long length);

    /** How often the cache met each hazard, by the names the injector prints; empty when it cannot say. */
    default Map<String, Long> coverage() {
        return Map.of();
    }

    /**
     * Whether the cache reads the page frames behind a buffer ({@code /proc/self/pagemap}), as a page-frame check
     * does: the allocator then makes a chunk's pages present when it maps it, so that there are frames to read.
     */
    default boolean readsPageFrames() {
        return false;
    }

    /**
     * Retries now the deregistrations that failed and are waiting for a retry. A one-thread (replay) run calls
     * this between operations, before it announces again a free whose stage failed, so that retries happen at
     * the same points of the run every time rather than on a clock; a cache that retries on its own may ignore it.
     */
    default void retryFailedDeregistrations() {
    }

    /** Deregisters everything still registered. */
    @Override
    void close();
}
