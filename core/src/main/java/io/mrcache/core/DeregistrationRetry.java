package io.mrcache.core;

import java.time.Duration;
import java.util.Objects;

/**
 * When the cache retries a deregistration that failed ({@code ibv_dereg_mr} can fail, for example with
 * {@code EBUSY} while memory windows are bound). Until a retry succeeds the registration stays quarantined:
 * counted in the metrics, listed by {@link RegistrationCache#quarantined()}, seen by every overlapping
 * invalidation (whose stage waits for the next attempt) and reported by close.
 *
 * @param initialDelay delay before the first automatic retry; each further failure doubles it
 * @param maxDelay     the longest delay between two automatic retries
 * @param automatic    false: retries happen only through {@link RegistrationCache#retryQuarantined()} (and
 *                     once in close)
 */
public record DeregistrationRetry(Duration initialDelay, Duration maxDelay, boolean automatic) {
    /** Automatic, from 10 ms doubling up to 5 s: the default. */
    public static final DeregistrationRetry DEFAULT = backoff(Duration.ofMillis(10), Duration.ofSeconds(5));
    /** No automatic retry: the embedder calls {@link RegistrationCache#retryQuarantined()}. */
    public static final DeregistrationRetry MANUAL = new DeregistrationRetry(Duration.ZERO, Duration.ZERO, false);

    public DeregistrationRetry {
        Objects.requireNonNull(initialDelay, "initialDelay");
        Objects.requireNonNull(maxDelay, "maxDelay");
        if (automatic && (initialDelay.isNegative() || initialDelay.isZero() || maxDelay.compareTo(initialDelay) < 0)) {
            throw new IllegalArgumentException("deregistration retry delays " + initialDelay + " then up to " + maxDelay
                    + ": the initial delay must be > 0 and the maximum at least the initial delay");
        }
    }

    /** Automatic retries with exponential backoff from {@code initialDelay} up to {@code maxDelay}. */
    public static DeregistrationRetry backoff(Duration initialDelay, Duration maxDelay) {
        return new DeregistrationRetry(initialDelay, maxDelay, true);
    }

    /** The delay before retry number {@code failures} (1 for the first retry). */
    long delayNanos(int failures) {
        long nanos = initialDelay.toNanos();
        for (int i = 1; i < failures && nanos < maxDelay.toNanos(); i++) {
            nanos *= 2;
        }
        return Math.min(nanos, maxDelay.toNanos());
    }
}
