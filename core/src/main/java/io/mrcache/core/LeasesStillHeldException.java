package io.mrcache.core;

/**
 * {@link RegistrationCache#close(java.time.Duration)} timed out: leases were still held. The message names the
 * regions they hold; with leak detection on, the acquire stacks of the tracked ones are attached as suppressed
 * exceptions. The cache finishes closing when they are released.
 */
public final class LeasesStillHeldException extends IllegalStateException {
    private final int regions;

    public LeasesStillHeldException(String message, int regions) {
        super(message);
        this.regions = regions;
    }

    /** Regions still leased when the wait ended. */
    public int regions() {
        return regions;
    }
}
