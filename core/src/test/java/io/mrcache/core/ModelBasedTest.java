package io.mrcache.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Random operation sequences against the real cache, each step checked against a reference model for
 * I1..I6 and the ledger (see {@link CacheModelChecker}).
 *
 * <p>{@code -Dmrcache.model.sequences=N} sets how many (default 100,000); {@code -Dmrcache.model.seed=S}
 * replays one sequence, printing every step. A failure prints its seed and the shortest failing sequence.
 */
class ModelBasedTest {
    static final int OPS_PER_SEQUENCE = 40;

    @Test
    void randomSequencesKeepEveryInvariant() {
        String replay = System.getProperty("mrcache.model.seed");
        if (replay != null) {
            long seed = Long.decode(replay);
            String failure = runSeed(seed);
            if (failure != null) {
                fail(report(seed, failure));
            }
            return;
        }
        int sequences = Integer.getInteger("mrcache.model.sequences", 100_000);
        long base = new Random().nextLong();
        System.out.printf("model test: %,d sequences of %d operations, base seed 0x%x%n", sequences,
                OPS_PER_SEQUENCE, base);
        long started = System.nanoTime();
        Map<CacheCounter, Long> coverage = new EnumMap<>(CacheCounter.class);
        for (int i = 0; i < sequences; i++) {
            long seed = base + i;
            String failure = runSeed(seed, coverage);
            if (failure != null) {
                fail(report(seed, failure));
            }
            if ((i + 1) % 25_000 == 0) {
                System.out.printf("model test: %,d sequences passed (%.1f s)%n", i + 1,
                        (System.nanoTime() - started) / 1e9);
            }
        }
        System.out.println("model test coverage: " + coverage);
        if (sequences >= 1_000) { // the sequences must really take every path they claim to check
            for (CacheCounter c : List.of(CacheCounter.MERGES, CacheCounter.ACCESS_UPGRADES, CacheCounter.EVICTIONS,
                    CacheCounter.DEFERRED_DEREGISTRATIONS, CacheCounter.REGISTRATION_FAILURES,
                    CacheCounter.DEREGISTRATION_FAILURES, CacheCounter.DEREGISTRATION_RETRIES,
                    CacheCounter.WIDENING_FALLBACKS, CacheCounter.ENOMEM_RECOVERIES)) {
                assertTrue(coverage.getOrDefault(c, 0L) > 0, c + " never happened in " + sequences + " sequences");
            }
        }
    }

    /** The checker must be able to fail: each deliberately broken cache is caught, shrunk, and replayable. */
    @Test
    void theCheckerCatchesEachDeliberatelyBrokenCache() {
        for (CacheFault fault : List.of(CacheFault.SKIP_UNLINK,
                CacheFault.COMPLETE_EARLY, CacheFault.EVICT_LEASED,
                CacheFault.COMPLETE_AFTER_FAILED_DEREGISTRATION)) {
            Long failingSeed = null;
            String failure = null;
            for (long seed = 1; seed <= 20_000 && failingSeed == null; seed++) {
                Random rnd = new Random(seed);
                failure = CacheModelChecker.run(CacheModelChecker.config(rnd), CacheModelChecker.ops(rnd,
                        OPS_PER_SEQUENCE), fault);
                if (failure != null) {
                    failingSeed = seed;
                }
            }
            assertNotNull(failingSeed, fault + " was not caught in 20,000 sequences");
            Random rnd = new Random(failingSeed);
            CacheModelChecker.Config config = CacheModelChecker.config(rnd);
            List<CacheModelChecker.Op> ops = CacheModelChecker.ops(rnd, OPS_PER_SEQUENCE);
            List<CacheModelChecker.Op> shortest = CacheModelChecker.shrink(config, ops, fault);
            assertNotNull(CacheModelChecker.run(config, shortest, fault), "the shrunk sequence still fails");
            assertTrue(shortest.size() <= 6, fault + " shrank only to " + shortest);
            assertEquals(null, CacheModelChecker.run(config, shortest), "the correct cache passes it");
            System.out.println("broken variant " + fault + " caught by seed " + failingSeed + ": " + failure
                    + "\n  shortest: " + shortest);
        }
    }

    private static String runSeed(long seed) {
        return runSeed(seed, null);
    }

    private static String runSeed(long seed, Map<CacheCounter, Long> coverage) {
        Random rnd = new Random(seed);
        CacheModelChecker.Config config = CacheModelChecker.config(rnd);
        return CacheModelChecker.run(config, CacheModelChecker.ops(rnd, OPS_PER_SEQUENCE), coverage);
    }

    private static String report(long seed, String failure) {
        Random rnd = new Random(seed);
        CacheModelChecker.Config config = CacheModelChecker.config(rnd);
        List<CacheModelChecker.Op> ops = CacheModelChecker.ops(rnd, OPS_PER_SEQUENCE);
        List<CacheModelChecker.Op> shortest = CacheModelChecker.shrink(config, ops);
        StringBuilder sb = new StringBuilder();
        sb.append("seed 0x").append(Long.toHexString(seed)).append(" failed: ").append(failure).append('\n');
        sb.append("config: ").append(config).append('\n');
        sb.append("shortest failing sequence (").append(shortest.size()).append(" steps):\n");
        for (CacheModelChecker.Op op : shortest) {
            sb.append("  ").append(op).append('\n');
        }
        sb.append("replay: ./mrcache test -Dmrcache.model.seed=0x").append(Long.toHexString(seed))
                .append(" -Dtest=ModelBasedTest -pl core");
        return sb.toString();
    }
}
