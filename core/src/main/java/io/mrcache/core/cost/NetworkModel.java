package io.mrcache.core.cost;

/**
 * The message-time model of a link: {@code T = latency + bytes / B_eff} with
 * {@code B_eff = link_gbps * 1e9 / 8 * efficiency / oversubscription} bytes per second.
 *
 * @param linkGbps         nominal link rate in Gb/s (bits), > 0
 * @param efficiency       protocol efficiency, {@code 0 < efficiency <= 1}
 * @param oversubscription fabric oversubscription ratio, >= 1
 * @param latencySeconds   fixed one-way latency in seconds, >= 0
 */
public record NetworkModel(double linkGbps, double efficiency, double oversubscription, double latencySeconds) {

    public NetworkModel {
        if (!(linkGbps > 0) || Double.isInfinite(linkGbps)) {
            throw new IllegalArgumentException("link_gbps must be > 0 (got " + linkGbps + ")");
        }
        if (!(efficiency > 0 && efficiency <= 1)) {
            throw new IllegalArgumentException("efficiency must be in (0, 1] (got " + efficiency + ")");
        }
        if (!(oversubscription >= 1) || Double.isInfinite(oversubscription)) {
            throw new IllegalArgumentException("oversubscription must be >= 1 (got " + oversubscription + ")");
        }
        if (!(latencySeconds >= 0) || Double.isInfinite(latencySeconds)) {
            throw new IllegalArgumentException("latency must be >= 0 seconds (got " + latencySeconds + ")");
        }
    }

    /** Effective bandwidth in bytes per second. */
    public double effectiveBytesPerSecond() {
        return linkGbps * 1e9 / 8 * efficiency / oversubscription;
    }

    /** Seconds to move {@code bytes} (>= 0) as one message. */
    public double messageTime(double bytes) {
        if (!(bytes >= 0) || Double.isInfinite(bytes)) {
            throw new IllegalArgumentException("bytes must be >= 0 (got " + bytes + ")");
        }
        return latencySeconds + bytes / effectiveBytesPerSecond();
    }

    /** The model as one function, with its validation: bytes, link_gbps, efficiency, oversubscription, latency_s. */
    public static double messageTimeSeconds(double bytes, double linkGbps, double efficiency,
            double oversubscription, double latencySeconds) {
        return new NetworkModel(linkGbps, efficiency, oversubscription, latencySeconds).messageTime(bytes);
    }
}
