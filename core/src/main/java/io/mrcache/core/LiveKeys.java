package io.mrcache.core;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Keys for a registrar that makes up its own (a software transport's, a test's): nonzero, below
 * {@code 2^bits}, and never one that is still live. A counter wraps after {@code 2^bits - 1} registrations, and a
 * long-lived transport makes that many; a key handed out twice while both registrations live would let a peer's
 * key reach the wrong memory. So a key stays taken from {@link #next()} until {@link #release(int)} (call it
 * only once the registration is dead), and the counter skips taken keys when it wraps.
 *
 * <p>Thread-safe; one concurrent-set insertion per key, which costs nothing beside a registration.
 */
public final class LiveKeys {
    private final int mask;
    private final AtomicInteger counter;
    private final Set<Integer> live = ConcurrentHashMap.newKeySet();

    /** Keys in {@code [1, 2^31)}. */
    public LiveKeys() {
        this(31, 0);
    }

    /**
     * Keys in {@code [1, 2^bits)}, the first one {@code after + 1} (a test starts near the top to see the wrap).
     *
     * @throws IllegalArgumentException when {@code bits} is not in 2..31, or {@code after} is not below 2^bits
     */
    public LiveKeys(int bits, int after) {
        if (bits < 2 || bits > 31) {
            throw new IllegalArgumentException("key width " + bits + " bits must be in 2..31");
        }
        this.mask = (int) ((1L << bits) - 1);
        if (after < 0 || after > mask) {
            throw new IllegalArgumentException("first key after " + after + ": must be in 0.." + mask);
        }
        this.counter = new AtomicInteger(after);
    }

    /**
     * A key that no live registration holds.
     *
     * @throws RegistrationException ({@code ENOMEM}) when every key of the width is live
     */
    public int next() {
        for (long tries = 0; tries <= mask; tries++) {
            int k = counter.incrementAndGet() & mask;
            if (k != 0 && live.add(k)) {
                return k;
            }
        }
        throw new RegistrationException("all " + mask + " keys are live: deregister some registrations first",
                RegistrationException.ENOMEM);
    }

    /** {@code key}'s registration is dead: the key may be handed out again. */
    public void release(int key) {
        live.remove(key);
    }

    /** Keys handed out and not released. */
    public int liveCount() {
        return live.size();
    }
}
