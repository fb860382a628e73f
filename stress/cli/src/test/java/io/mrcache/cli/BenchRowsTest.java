package io.mrcache.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.cli.bench.BenchReport;
import io.mrcache.cli.bench.JmhJson;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The rows {@code bench} runs side by side: each UCX workload is the harness's, named as JMH's result. */
class BenchRowsTest {
    private static final Path HARNESS = Path.of("../jmh/src/main/c/ucx_rcache_bench.c");

    @Test
    void everyRowRunsOnceAndItsUcxWorkloadCarriesTheJmhResultsName(@TempDir Path dir) throws Exception {
        List<BenchCommand.Row> rows = BenchCommand.rows();
        Set<String> keys = new HashSet<>();
        for (BenchCommand.Row row : rows) {
            String key = row.key();
            assertTrue(keys.add(key), "run twice in a repeat: " + key);
            Path result = dir.resolve(keys.size() + ".json");
            Files.writeString(result, "[{\"benchmark\":\"io.mrcache.bench.CacheBenchmarks." + row.benchmark() + "\","
                    + (row.regions() == null ? "" : "\"params\":{\"regions\":\"" + row.regions() + "\"},")
                    + "\"primaryMetric\":{\"score\":1.0}}]");
            assertEquals(Set.of(key), JmhJson.read(result).keySet(),
                    "the report pairs a JMH result with the UCX line of the same name: the harness is given the key");
        }
        for (int n : BenchReport.SCALE) {
            assertTrue(keys.contains("scaleHit:" + n) && keys.contains("scaleMiss:" + n), "scaling row " + n);
        }
        assertTrue(keys.containsAll(List.of("w1HitExact1t", "w1HitExact2tShared", "w1HitExact2tCollide",
                "w1HitExact2tDisjoint", "w2HitSubRange", "w3Miss64k", "w3MissRandom", "w4Mixed1t", "w4Mixed2t",
                "w4Mixed2tOwnCache", "w5InvalidateEmpty", "w6")), keys.toString());
        assertEquals("w6", rows.getLast().benchmark(), "W6 runs last, after every row it would disturb");
    }

    @Test
    void everyUcxWorkloadARowNamesIsOneTheHarnessRuns() throws Exception {
        String c = Files.readString(HARNESS);
        for (BenchCommand.Row row : BenchCommand.rows()) {
            if (!row.onUcx()) {
                continue;
            }
            String ucx = row.key();
            String named = ucx.startsWith("scale") ? "\"" + ucx.substring(0, ucx.indexOf(':')) + ":%d\""
                    : "bench(\"" + ucx + "\"";
            assertTrue(c.contains(named), "the harness has no workload " + ucx + " (looked for " + named + ")");
        }
        assertTrue(c.contains("\"--only\""), "the harness runs one workload when asked");
    }
}
