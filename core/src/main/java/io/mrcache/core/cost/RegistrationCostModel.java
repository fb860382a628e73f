package io.mrcache.core.cost;

/**
 * What registering and deregistering cost, each {@code a + b * pages}.
 *
 * @param register   cost of one register call
 * @param deregister cost of one deregister call
 * @param source     where the numbers come from (a calibration here, or documented defaults)
 */
public record RegistrationCostModel(LinearCost register, LinearCost deregister, String source) {

    /**
     * Defaults measured on the project's reference machine (2-core x86-64, Linux; see docs/PERFORMANCE.md):
     * mlock+munlock of touched memory costs about 4.5 us for 64 KiB and 52 us per MiB, i.e. 1.25 us + 0.203 us
     * per 4 KiB page for the pair. How that
     * splits between register and deregister was not measured there; it is split 3:1 here (pinning costs
     * more than unpinning). Use a calibration for real numbers.
     */
    public static RegistrationCostModel defaults() {
        return new RegistrationCostModel(LinearCost.of(0.94e-6, 0.152e-6, 4096), LinearCost.of(0.31e-6, 0.051e-6, 4096),
                "defaults (mlock+munlock measured on a 2-core x86-64 reference machine, split 3:1; run --calibrate to"
                        + " measure here)");
    }

    /** Register plus deregister for one buffer of {@code bytes}. */
    public double roundTrip(double bytes) {
        return register.seconds(bytes) + deregister.seconds(bytes);
    }
}
