package io.mrcache.verbs.sim;

/**
 * What a NIC reports as a remote (or local) access error: the key is dead or unknown, belongs to another
 * protection domain, the range leaves the region, or the region lacks the right. Nothing was written.
 */
public final class RemoteAccessException extends RuntimeException {
    public enum Reason {
        DEAD_KEY, WRONG_PROTECTION_DOMAIN, OUT_OF_RANGE, ACCESS_DENIED
    }

    private final Reason reason;

    RemoteAccessException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
