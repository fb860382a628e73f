package io.mrcache.core;

import java.util.List;

/**
 * {@link RegistrationCache#close(java.time.Duration)} timed out while leases were still held. The message names
 * the regions they hold (and whatever else the close waits for, as {@link CloseTimedOutException}); with leak
 * detection on, the acquire stacks of the tracked ones are attached as suppressed exceptions. The cache
 * finishes closing when they are released.
 */
public final class LeasesStillHeldException extends CloseTimedOutException {
    public LeasesStillHeldException(String message, List<String> leased, List<String> inFlight,
            List<String> deregistering) {
        super(message, leased, inFlight, deregistering);
    }

    /** Regions still leased when the wait ended. */
    public int regions() {
        return leasedRegions().size();
    }
}
