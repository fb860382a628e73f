package io.mrcache.core;

import java.util.List;

/**
 * A deregistration failed: the keys of {@link #stillRegistered()} are still live at the NIC, so the memory they
 * cover must not be reused. The cache keeps each such registration in quarantine and retries its
 * deregistration (see {@link RegistrationCache.Builder#deregistrationRetry}); an invalidation or close whose
 * stage fails with this exception tells its caller exactly that.
 */
public final class DeregistrationException extends RegistrationException {
    private final List<Registration> stillRegistered;

    public DeregistrationException(String message, int errno, List<Registration> stillRegistered, Throwable cause) {
        super(message, errno, cause);
        this.stillRegistered = List.copyOf(stillRegistered);
    }

    /** One failed {@code deregister} call of {@code registration}, caused by {@code cause}. */
    static DeregistrationException of(Registration registration, Throwable cause) {
        int errno = cause instanceof RegistrationException re ? re.errno() : 0;
        return new DeregistrationException("deregister of " + registration + " failed (errno " + errno + "): "
                + cause + "; its keys are still live, so its memory must not be reused; the cache keeps it in"
                + " quarantine and retries", errno, List.of(registration), cause);
    }

    /** Registrations whose keys were still live when this was thrown. */
    public List<Registration> stillRegistered() {
        return stillRegistered;
    }
}
