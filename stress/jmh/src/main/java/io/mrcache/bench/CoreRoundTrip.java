package io.mrcache.bench;

import java.util.Locale;

/**
 * What one cache line costs to move between two cores here: two threads pass a counter back and forth
 * through one volatile field, each waiting (spinning) for the other's write, and the time per round trip is
 * two transfers of the line. Every word that one thread writes and the other then reads costs about half of it,
 * which is what W4 on two threads pays for each line of the index, the policy and the gauges that a miss on one
 * thread writes and the next operation on the other reads.
 *
 * <p>Run as {@code java -cp benchmarks.jar io.mrcache.bench.CoreRoundTrip [ROUNDS]}; prints one line per round
 * of two million round trips.
 */
public final class CoreRoundTrip {
    private static final long TRIPS = 2_000_000;
    private static volatile long turn;

    private CoreRoundTrip() {
    }

    public static void main(String[] args) throws InterruptedException {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        for (int round = 0; round < rounds; round++) {
            turn = 0;
            Thread other = new Thread(() -> pass(1), "round-trip-other");
            other.start();
            long started = System.nanoTime();
            pass(0);
            other.join();
            System.out.printf(Locale.ROOT, "round %d: %.0f ns per round trip%n", round,
                    (System.nanoTime() - started) / (double) TRIPS);
        }
    }

    /** Waits for each of this side's turns (0 or 1 modulo 2) and hands the turn on. */
    private static void pass(long side) {
        for (long t = side; t < 2 * TRIPS; t += 2) {
            while (turn != t) {
                Thread.onSpinWait();
            }
            turn = t + 1;
        }
    }
}
