package io.mrcache.cli.bench;

import java.util.List;

/**
 * The steady state of one benchmark run whose every iteration was measured: the mean of its last
 * {@code window} iterations, and whether they agree (each within {@value #SETTLED_WITHIN} of their mean).
 * The iterations before the window are the warm-up curve, kept to show where the JIT finished. A miss path
 * measured one second after the fork starts reads two to six times its steady cost on this machine, so the
 * command measures every iteration and judges the curve rather than trusting a fixed warm-up.
 *
 * @param score   the mean of the window
 * @param settled whether every iteration of the window is within {@value #SETTLED_WITHIN} of the mean
 * @param curve   every iteration's score, warm-up first
 */
public record SteadyState(double score, boolean settled, List<Double> curve) {
    /** How far from the window's mean an iteration may be for the window to count as settled. */
    public static final double SETTLED_WITHIN = 0.10;

    /** The steady state of {@code curve}; a curve no longer than the window is all window. */
    public static SteadyState of(List<Double> curve, int window) {
        if (curve.isEmpty() || window < 1) {
            throw new IllegalArgumentException("a steady state needs iterations and a window >= 1, got "
                    + curve.size() + " iterations and a window of " + window);
        }
        List<Double> tail = curve.subList(Math.max(0, curve.size() - window), curve.size());
        double mean = tail.stream().mapToDouble(Double::doubleValue).average().orElseThrow();
        boolean settled = tail.stream().allMatch(v -> Math.abs(v - mean) <= SETTLED_WITHIN * mean);
        return new SteadyState(mean, settled, List.copyOf(curve));
    }
}
