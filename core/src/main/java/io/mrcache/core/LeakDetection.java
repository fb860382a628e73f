package io.mrcache.core;

/**
 * How much leak detection costs and sees, as Netty's levels: each tracked lease records the stack of its acquire
 * (a few microseconds) and registers with a {@link java.lang.ref.Cleaner}; untracked leases cost nothing.
 */
public enum LeakDetection {
    /** No lease is tracked: hits allocate nothing beyond the lease itself. */
    DISABLED,
    /** One acquire in {@link #SAMPLE_INTERVAL} is tracked, chosen at random: cheap enough for production. */
    SAMPLED,
    /** Every lease is tracked: for tests and for hunting a leak. */
    EVERY_LEASE;

    /** One acquire in this many is tracked at {@link #SAMPLED}. */
    public static final int SAMPLE_INTERVAL = 128;
}
