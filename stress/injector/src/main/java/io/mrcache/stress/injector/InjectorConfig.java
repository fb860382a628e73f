package io.mrcache.stress.injector;

import java.util.EnumSet;
import java.util.Set;

/**
 * One injector run.
 *
 * @param operations  buffer lifecycles to run in all (allocate, use one or more times, free)
 * @param threads     worker threads; 1 replays a seed (remote writes then run inline, retries at fixed points;
 *                    exact but for mrcache's counts under eviction-pressure: see the README)
 * @param seed        seeds every random choice; a failing run prints it
 * @param faults      faults switched on
 * @param oracleCheck the injector's ORACLE (not a defense a library could have): on each acquire, ask the
 *                    ground truth whether the keys serve pages that no longer back the buffer, and if so
 *                    invalidate and retry. Used only to show what lost free hooks do; off in judged runs
 * @param stopAtFirstViolation stop as soon as any detector counts (for the mutation-kill proofs and the soak)
 * @param accountOnly the simulated HCA accounts pins without {@code mlock} (long soaks, where mlock bounds the
 *                    rate); everything the detectors read is unchanged
 * @param slowEvery   under {@link Fault#SLOW_REGISTRATION}, one registration in this many (drawn at random) takes
 *                    the extra 20 us: 1 (the demo's) makes every registration slow; a long soak samples, since the
 *                    spin is CPU time that bounds its rate
 */
public record InjectorConfig(long operations, int threads, long seed, Set<Fault> faults, boolean oracleCheck,
        boolean stopAtFirstViolation, boolean accountOnly, int slowEvery) {
    public InjectorConfig {
        if (operations <= 0) {
            throw new IllegalArgumentException("operations " + operations + " must be > 0");
        }
        if (threads < 1 || threads > 64) {
            throw new IllegalArgumentException("threads " + threads + " must be in 1..64");
        }
        if (slowEvery < 1) {
            throw new IllegalArgumentException("slowEvery " + slowEvery + " must be >= 1 (1: every registration)");
        }
        faults = faults.isEmpty() ? EnumSet.noneOf(Fault.class) : EnumSet.copyOf(faults);
    }

    public InjectorConfig(long operations, int threads, long seed, Set<Fault> faults) {
        this(operations, threads, seed, faults, false, false, false, 1);
    }

    public InjectorConfig(long operations, int threads, long seed, Set<Fault> faults, boolean oracleCheck,
            boolean stopAtFirstViolation) {
        this(operations, threads, seed, faults, oracleCheck, stopAtFirstViolation, false, 1);
    }

    public boolean has(Fault f) {
        return faults.contains(f);
    }
}
