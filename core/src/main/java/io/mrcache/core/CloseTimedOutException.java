package io.mrcache.core;

import java.util.List;

/**
 * {@link RegistrationCache#close(java.time.Duration)} did not finish in time. The message says what the close
 * still waits for: leases still held ({@link LeasesStillHeldException}, the common case), registrations in
 * flight (a registrar call that has not returned: close dooms them and deregisters what they register), and
 * deregistrations under way (a registrar call that has not returned). The cache stays closed to new acquires
 * and finishes closing when they are done.
 */
public class CloseTimedOutException extends IllegalStateException {
    private final List<String> leased;
    private final List<String> inFlight;
    private final List<String> deregistering;

    public CloseTimedOutException(String message, List<String> leased, List<String> inFlight,
            List<String> deregistering) {
        super(message);
        this.leased = List.copyOf(leased);
        this.inFlight = List.copyOf(inFlight);
        this.deregistering = List.copyOf(deregistering);
    }

    /** The regions still leased, each with its range, rights and lease count. */
    public List<String> leasedRegions() {
        return leased;
    }

    /** The registrations in flight (planned range and rights) whose registrar call had not returned. */
    public List<String> inFlightRegistrations() {
        return inFlight;
    }

    /** The unleased registrations whose deregistration had begun and not returned. */
    public List<String> deregistrationsUnderWay() {
        return deregistering;
    }
}
