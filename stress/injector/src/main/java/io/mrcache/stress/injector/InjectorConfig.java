package io.mrcache.stress.injector;

import java.util.EnumSet;
import java.util.Set;

/**
 * One injector run.
 *
 * @param operations      buffer lifecycles to run in all (allocate, acquire, NIC writes, check, release, free)
 * @param threads         worker threads; 1 replays a seed exactly (remote writes then run inline)
 * @param seed            seeds every random choice; a failing run prints it
 * @param faults          faults switched on
 * @param generationCheck defense in depth for caches that invalidate: on each hit, compare the allocation a
 *                        registration was made for with the buffer's; on mismatch invalidate and retry
 */
public record InjectorConfig(long operations, int threads, long seed, Set<Fault> faults, boolean generationCheck) {
    public InjectorConfig {
        if (operations <= 0) {
            throw new IllegalArgumentException("operations " + operations + " must be > 0");
        }
        if (threads < 1 || threads > 64) {
            throw new IllegalArgumentException("threads " + threads + " must be in 1..64");
        }
        faults = faults.isEmpty() ? EnumSet.noneOf(Fault.class) : EnumSet.copyOf(faults);
    }

    public boolean has(Fault f) {
        return faults.contains(f);
    }
}
