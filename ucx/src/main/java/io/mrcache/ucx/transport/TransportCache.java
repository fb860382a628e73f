package io.mrcache.ucx.transport;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletionStage;

/**
 * What the transport asks of a registration cache: keys for a buffer while an operation uses it, and the free
 * hook. {@link MrcacheTransportCache} is mrcache; {@link NaiveTransportCache} is the bug this project exists to
 * prevent (a cache that never hears of frees), kept to show it.
 */
public interface TransportCache extends AutoCloseable {
    /** Keys held for one operation: the packed remote key the peer uses, released when the operation ends. */
    interface Held {
        ByteBuffer packedRemoteKey();

        void release();
    }

    String name();

    /** Keys covering {@code [address, address + length)} with {@code access} rights, held until released. */
    Held acquire(long address, long length, int access);

    /** The allocator's free hook: the range is reused only once the stage completes normally. */
    CompletionStage<Void> free(long address, long length);

    /** Registrations made (cache misses). */
    long registrations();

    @Override
    void close();
}
