package io.mrcache.core;

/**
 * Registration still failed with {@code ENOMEM} after the cache evicted every idle region and retried once
 * (invariant I8). The message names the pinned bytes, the budget, {@code RLIMIT_MEMLOCK} and what to change.
 */
public final class PinnedMemoryExhaustedException extends RegistrationException {
    private final long pinnedBytes;

    public PinnedMemoryExhaustedException(String message, long pinnedBytes, Throwable cause) {
        super(message, ENOMEM, cause);
        this.pinnedBytes = pinnedBytes;
    }

    /** Refused by a shared {@link PinnedMemoryLimit} before the registrar was called. */
    public PinnedMemoryExhaustedException(String message, long pinnedBytes) {
        super(message, ENOMEM);
        this.pinnedBytes = pinnedBytes;
    }

    /** Bytes this cache held pinned when it gave up. */
    public long pinnedBytes() {
        return pinnedBytes;
    }
}
