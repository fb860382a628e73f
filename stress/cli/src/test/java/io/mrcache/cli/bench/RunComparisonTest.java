package io.mrcache.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Two bench runs side by side: which ratios agree within 15%, and how far each run's own repeats spread. */
class RunComparisonTest {

    /** A run as {@code bench --json} writes it: one ns row, one throughput row, W4's two rows, one scaling N. */
    private static JsonObject run(double[] w1Mine, double[] w1Ucx, double w2tMine, double w2tUcx, double w4One,
            double[] hitMine, double[] hitUcx) {
        return JsonParser.parseString("""
                {"rows":[
                  {"workload":"W1 hit","benchmark":"w1HitExact1t","ratioKind":"mrcache/ucx ns",
                   "mrcache":%s,"ucx":%s,"ratio":%s},
                  {"workload":"W4 1t","benchmark":"w4Mixed1t","ratioKind":"mrcache/ucx ns",
                   "mrcache":%s,"ucx":%s,"ratio":%s},
                  {"workload":"W4 2t","benchmark":"w4Mixed2t","ratioKind":"ucx/mrcache ns (throughput)",
                   "mrcache":%s,"ucx":%s,"ratio":%s},
                  {"workload":"W5","benchmark":"w5InvalidateEmpty","ratioKind":"mrcache/ucx ns",
                   "mrcache":%s,"ucx":{"values":[],"median":"NaN"},"ratio":"NaN"}],
                 "scaling":[{"regions":65536,"hitMrcache":%s,"hitUcx":%s,"hitRatio":%s,
                   "missMrcache":{"values":[]},"missUcx":{"values":[]},"missRatio":"NaN"}],
                 "checks":[{"name":"W4 per thread, 2 threads against 1 (x)","value":%s,"target":2.0}]}
                """.formatted(side(w1Mine), side(w1Ucx), median(w1Mine) / median(w1Ucx),
                side(new double[] {w4One}), side(new double[] {150}), w4One / 150,
                side(new double[] {w2tMine}), side(new double[] {w2tUcx}), w2tUcx / w2tMine,
                side(new double[] {10}), side(hitMine), side(hitUcx), median(hitMine) / median(hitUcx),
                w2tMine / w4One))
                .getAsJsonObject();
    }

    private static String side(double[] v) {
        StringBuilder sb = new StringBuilder("{\"values\":[");
        for (int i = 0; i < v.length; i++) {
            sb.append(i == 0 ? "" : ",").append(v[i]);
        }
        return sb.append("],\"median\":").append(median(v)).append('}').toString();
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        java.util.Arrays.sort(s);
        return s[s.length / 2];
    }

    @Test
    void eachRatioOfBothRunsIsComparedAndTheRepeatsSpreadIsMeasuredByPairs() {
        // run A: W1 0.40x, its pairs 9/25, 10/25, 12/25 (0.36..0.48: spread 33%); hits 0.50x, pairs all 0.50
        JsonObject a = run(new double[] {9, 10, 12}, new double[] {25, 25, 25}, 300, 3000, 120,
                new double[] {50, 100, 150}, new double[] {100, 200, 300});
        // run B: W1 0.44x (+10%), pairs within 3%; throughput 12x against 10x (+20%); hits 0.30x (-40%); W4's
        // cost 250/120 against 300/120 (-17%)
        JsonObject b = run(new double[] {11, 11, 11.3}, new double[] {25, 25, 25}, 250, 3000, 120,
                new double[] {30, 60, 90}, new double[] {100, 200, 300});
        RunComparison c = RunComparison.of(a, b);
        List<String> names = c.lines().stream().map(RunComparison.Line::name).toList();
        assertEquals(List.of("W1 hit", "W4 1t", "W4 2t", "hits, 65,536 regions", "W4 per thread, 2 threads against 1"),
                names, "rows with a ratio in both runs (not W5, not a scaling side without one), then W4's cost");
        RunComparison.Line w1 = c.lines().getFirst();
        assertEquals(0.44 / 0.40 - 1, w1.change(), 1e-9);
        assertTrue(w1.agrees());
        assertEquals(12.0 / 9.0, w1.firstSpread(), 1e-9, "the largest pair over the smallest");
        assertEquals(11.3 / 11.0, w1.secondSpread(), 1e-9);
        assertTrue(w1.repeatsSpreadWider(), "run A's own pairs differ by 33%");
        RunComparison.Line tput = c.lines().get(2);
        assertEquals(10.0, tput.first(), 1e-9);
        assertEquals(12.0, tput.second(), 1e-9);
        assertFalse(tput.agrees(), "+20%");
        assertEquals(1.0, tput.firstSpread(), 1e-9, "one pair: no spread");
        RunComparison.Line hits = c.lines().get(3);
        assertFalse(hits.agrees());
        assertFalse(hits.repeatsSpreadWider(), "every pair of each run is the same ratio: the runs themselves differ");
        RunComparison.Line w4 = c.lines().get(4);
        assertEquals(2.5, w4.first(), 1e-9, "300 ns per thread on two threads over 120 on one");
        assertEquals(250.0 / 120, w4.second(), 1e-9);
        assertEquals(2, c.agreeing(), "W1 and W4 on one thread");
        String md = c.markdown("A", "B");
        assertTrue(md.contains("| W1 hit | 0.40x | 0.44x | +10% | yes | +33% / +3% |"), md);
        assertTrue(md.contains("| hits, 65,536 regions | 0.50x | 0.30x | -40% | no | +0% / +0% |"), md);
        assertTrue(md.contains("2 of 5 ratios within 15%; in 1 of the 5, the repeats of one run alone spread by more"
                + " than 15%, 0 of the 3 outside among them"), md);
    }

    @Test
    void theSpreadPairsValuesByRepeatAndReadsTheSameForARatioTheOtherWayUp() {
        JsonObject mine = JsonParser.parseString("{\"values\":[300.0,200.0,250.0]}").getAsJsonObject();
        JsonObject ucx = JsonParser.parseString("{\"values\":[3000.0,3000.0,2000.0]}").getAsJsonObject();
        // pairs 0.100, 0.0667, 0.125: the largest over the smallest, not max(mine)/min(mine) (1.5)
        assertEquals(0.125 / (200.0 / 3000), RunComparison.spread(mine, ucx), 1e-9);
        assertEquals(RunComparison.spread(mine, ucx), RunComparison.spread(ucx, mine), 1e-9,
                "a throughput row's ratio is UCX's over mrcache's: the spread is the same");
        JsonObject none = JsonParser.parseString("{\"values\":[]}").getAsJsonObject();
        assertTrue(Double.isNaN(RunComparison.spread(none, ucx)), "no pair, no spread");
    }

    @Test
    void aFileThatIsNotABenchRunIsRefusedSayingWhatToGive(@TempDir Path dir) throws Exception {
        Path notJson = Files.writeString(dir.resolve("a.json"), "{not json");
        Path jmh = Files.writeString(dir.resolve("b.json"), "[{\"benchmark\":\"x\"}]");
        Path good = Files.writeString(dir.resolve("c.json"), run(new double[] {10}, new double[] {25}, 300, 3000,
                120, new double[] {50}, new double[] {100}).toString());
        var e = assertThrows(IllegalArgumentException.class, () -> RunComparison.read(notJson, good));
        assertTrue(e.getMessage().contains("a.json is not JSON") && e.getMessage().contains("--vs-ucx --json"),
                e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> RunComparison.read(good, jmh));
        assertTrue(e.getMessage().contains("b.json has no \"rows\""), e.getMessage());
        assertEquals(5, RunComparison.read(good, good).agreeing(), "a run agrees with itself on every ratio");
    }
}
