package io.mrcache.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The steady state of a measured curve, and the report's rows built from it (scaling targets, memory). */
class SteadyStateTest {

    @Test
    void theScoreIsTheLastWindowAndTheWarmUpIsKept() {
        // W3 as measured here: the first iterations read 1,887 and 519 ns before the JIT is done
        List<Double> curve = List.of(1886.6, 518.6, 270.4, 270.3, 279.5, 281.3);
        SteadyState s = SteadyState.of(curve, 3);
        assertEquals((270.3 + 279.5 + 281.3) / 3, s.score(), 1e-9);
        assertTrue(s.settled());
        assertEquals(curve, s.curve());
        assertFalse(SteadyState.of(curve, 5).settled(), "a window that reaches into the warm-up is not settled");
        assertEquals(270.4, SteadyState.of(List.of(270.4), 3).score(), "a short curve is all window");
        assertThrows(IllegalArgumentException.class, () -> SteadyState.of(List.of(), 3));
        assertThrows(IllegalArgumentException.class, () -> SteadyState.of(curve, 0));
    }

    @Test
    void jmhRawDataIsReadAsTheCurve(@TempDir Path dir) throws Exception {
        Path results = dir.resolve("r.json");
        Files.writeString(results, """
                [{"benchmark":"io.mrcache.bench.CacheBenchmarks.w3Miss64k",
                  "primaryMetric":{"score":700.0,"rawData":[[1900.0,520.0,270.0,280.0,290.0]]}}]""");
        JmhJson.Result r = JmhJson.read(results).get("w3Miss64k");
        assertEquals(List.of(1900.0, 520.0, 270.0, 280.0, 290.0), r.iterations());
        BenchReport report = new BenchReport(3);
        report.addJmh(Map.of("w3Miss64k", r), 0.0);
        report.addUcx(List.of("w3Miss64k 280.0 1.000"), 0.0);
        String table = report.table();
        assertTrue(table.contains("280.0/280.0/280.0") && table.contains("1.00x"), "the steady score, not JMH's mean:\n"
                + table);
        assertTrue(table.contains("mean of the last 3 of 5 measured iterations") && table.contains("settled within 10%: none"),
                table);
        Map<String, Object> json = report.json();
        String text = io.mrcache.cli.JsonForTest.write(json);
        assertTrue(text.contains("\"curves\":[{\"iterations\":[1900.0,520.0,270.0,280.0,290.0],\"steady\":280.0,"
                + "\"settled\":true}]"), text);
    }

    @Test
    void scalingRowsAndMemorySayWhetherEachTargetIsMet() {
        BenchReport report = new BenchReport(3);
        report.addJmh(Map.of("scaleHit:262144", result(30.0), "scaleMiss:262144", result(500.0)), 0.0);
        report.addUcx(List.of("scaleHit:262144 40.0 1.000", "scaleMiss:262144 400.0 1.000"), 0.0);
        report.addFootprint(List.of("footprint unbounded 262144 240.0", "footprint budget 262144 330.0",
                "footprint ucx 262144 96.0 91.5", "not a footprint line"));
        String table = report.table();
        String row = table.lines().filter(l -> l.startsWith("262144 ") && l.contains("30.0/")).findFirst().orElseThrow();
        assertTrue(row.contains("0.75x no") && row.contains("1.25x no"), row);
        String mem = table.lines().filter(l -> l.startsWith("262144 ") && l.contains("240.0")).findFirst().orElseThrow();
        assertTrue(mem.contains("330.0") && mem.contains("96.0") && mem.contains("91.5") && mem.contains("2.50x")
                && mem.endsWith("no"), mem);
        assertEquals(2.5, report.footprintRatio("mrcache unbounded", 262144), 1e-9);
        String text = io.mrcache.cli.JsonForTest.write(report.json());
        assertTrue(text.contains("\"hitRatio\":0.75,\"hitTarget\":0.5,\"hitMet\":false,\"missRatio\":1.25,"
                + "\"missTarget\":1.0,\"missMet\":false"), text);
        assertTrue(text.contains("\"bytesPerRegion\":[{\"regions\":262144,\"mrcache unbounded\":240.0,"
                + "\"mrcache budget\":330.0,\"UCX malloc\":96.0,\"UCX resident\":91.5,\"ratio\":2.5,\"target\":1.5,"
                + "\"met\":false}]"), text);
    }

    @Test
    void theTargetsWithoutARowOfTheirOwnAreChecksInTheJson() {
        BenchReport report = new BenchReport(3);
        report.addJmh(Map.of("w4Mixed1t", result(170.0), "w4Mixed2t", result(1870.0)), 0.0);
        String line = report.table().lines().filter(l -> l.startsWith("W4 per thread")).findFirst().orElseThrow();
        assertTrue(line.contains("11.00x") && line.contains("target <= 2x: not met"), line);
        String text = io.mrcache.cli.JsonForTest.write(report.json());
        assertTrue(text.contains("\"checks\":[{\"name\":\"W4 per thread, 2 threads against 1 (x)\",\"value\":11.0,"
                + "\"target\":2.0,\"met\":false}]"), text);

        BenchReport twoOk = new BenchReport(3);
        twoOk.addJmh(Map.of("w4Mixed1t", result(170.0), "w4Mixed2t", result(340.0)), 0.0);
        assertTrue(io.mrcache.cli.JsonForTest.write(twoOk.json()).contains("\"value\":2.0,\"target\":2.0,\"met\":true"),
                "twice one thread's cost is within the target");
    }

    @Test
    void w4sControlOnTwoThreadsWithACacheEachIsReportedBesideTheSharedRow() {
        BenchReport report = new BenchReport(3);
        report.addJmh(Map.of("w4Mixed1t", result(170.0), "w4Mixed2t", result(1870.0), "w4Mixed2tOwnCache",
                result(204.0)), 0.0);
        String line = report.table().lines().filter(l -> l.startsWith("W4 per thread, 2 threads with a cache each"))
                .findFirst().orElseThrow();
        assertTrue(line.contains("1.20x one thread's cost") && line.contains("204.0"), line);
        String text = io.mrcache.cli.JsonForTest.write(report.json());
        assertTrue(text.contains("\"w4TwoThreadsOwnCaches\":{\"w4Mixed2tOwnCache\":{\"values\":[204.0],"), text);
        assertTrue(text.contains("\"perThreadCostAgainstOneThread\":1.2"), text);
        assertFalse(new BenchReport(3).table().contains("with a cache each"), "no line without the control's run");
    }

    private static JmhJson.Result result(double v) {
        return new JmhJson.Result(v, Map.of(), Map.of(), List.of(v, v, v));
    }
}
