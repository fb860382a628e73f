package io.mrcache.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MainTest {

    static String[] capture(String... args) {
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream bytesOut = new ByteArrayOutputStream();
        ByteArrayOutputStream bytesErr = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(bytesOut, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(bytesErr, true, StandardCharsets.UTF_8));
            int status = Main.run(args);
            return new String[] {String.valueOf(status), bytesOut.toString(StandardCharsets.UTF_8),
                bytesErr.toString(StandardCharsets.UTF_8)};
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
    }

    @Test
    void helpListsTheSubcommands() {
        String[] r = capture("--help");
        assertEquals("0", r[0]);
        assertTrue(r[1].contains("demo"), r[1]);
    }

    @Test
    void tourRunsItsSafetyChecksAndExitsZero() {
        String[] r = capture("tour", "--hits", "1000");
        assertEquals("0", r[0], r[1] + r[2]);
        assertTrue(r[1].contains("All safety checks passed."), r[1]);
        assertTrue(r[1].contains("cold: too few hits to warm up first"), "1,000 hits cannot warm up: " + r[1]);
        assertTrue(r[1].contains("discarded in-flight registrations"), r[1]);
    }

    @Test
    void badOptionsExitNonZeroNamingTheOption() {
        String[] r = capture("tour", "--hits", "-5");
        assertEquals("2", r[0]);
        assertTrue(r[2].contains("--hits"), r[2]);
        String[] faults = capture("demo", "--faults", "drop-hook");
        assertEquals("2", faults[0]);
        assertTrue(faults[2].contains("unknown fault 'drop-hook'") && faults[2].contains("drop-hooks"), faults[2]);
        String[] ops = capture("demo", "--ops", "0");
        assertEquals("2", ops[0]);
        assertTrue(ops[2].contains("--ops 0: must be > 0"), "names the option and the value: " + ops[2]);
        String[] unknown = capture("demo", "--nope");
        assertEquals("2", unknown[0]);
        assertTrue(unknown[2].contains("--nope"), unknown[2]);
    }

    @Test
    void devicesExplainsTheAbsenceOfADeviceWithStatus3() {
        String[] r = capture("devices");
        if (r[0].equals("0")) { // a machine with an RDMA device: the table is printed
            assertTrue(r[1].contains("max_mr_size"), r[1]);
            return;
        }
        assertEquals("3", r[0], r[1] + r[2]);
        assertTrue(r[1].contains("RLIMIT_MEMLOCK"), r[1]);
        assertTrue(r[1].contains("rdma link add") || r[1].contains("libibverbs1"), r[1]);
        String[] help = capture("devices", "--help");
        assertTrue(help[1].contains("3") && help[1].contains("no RDMA device"), help[1]);
    }

    @Test
    void costPrintsTheWorkedExampleAndRejectsInvalidValuesByName() throws Exception {
        String[] r = capture("cost", "--bytes", "4e9", "--link-gbps", "400", "--efficiency", "0.8",
                "--oversubscription", "2", "--latency-us", "5");
        assertEquals("0", r[0], r[2]);
        assertTrue(r[1].contains("0.200005000 s"), r[1]);
        assertTrue(r[1].contains("20.00 GB/s"), r[1]);
        for (String[] bad : new String[][] {{"--efficiency", "0"}, {"--oversubscription", "0.5"},
            {"--link-gbps", "-1"}, {"--latency-us", "-2"}, {"--bytes", "-4"}}) {
            String[] b = capture("cost", "--bytes", "1e6", bad[0], bad[1]);
            assertEquals("2", b[0], String.join(" ", bad));
            assertTrue(b[2].contains(bad[0].replace("--", "").split("-")[0]), bad[0] + ": " + b[2]);
        }
        java.nio.file.Path svg = java.nio.file.Files.createTempFile("cost", ".svg");
        String[] w = capture("cost", "--what-if", "--svg", svg.toString());
        assertEquals("0", w[0], w[2]);
        assertTrue(w[1].contains("4 GiB") && w[1].contains("break-even"), w[1]);
        assertTrue(java.nio.file.Files.readString(svg).contains("id=\"no-cache\""));
    }

    /** The main job at full size: a million buffer lifecycles per cache with every fault. */
    @Test
    void demoWithAMillionOperationsAndAllFaultsShowsNaiveStaleWritesAndNoneForMrcache() {
        String[] r = capture("demo", "--ops", "1000000", "--faults", "all", "--threads", "2");
        assertEquals("0", r[0], r[1] + r[2]);
        long[] stale = cells(r[1], "stale writes (ground truth)");
        assertTrue(stale[0] > 0, "the naive cache let stale writes through: " + r[1]);
        for (String detector : new String[] {"stale writes (ground truth)", "corrupted buffers (read back)",
            "reused while registered (I3)", "leaked registrations", "double deregistrations",
            "deregistered under lease (H2)", "stale hits served (H1)"}) {
            long[] c = cells(r[1], detector);
            assertEquals(0, c[c.length - 1], "mrcache's " + detector + ": " + r[1]);
        }
        assertEquals(1_000_000, cells(r[1], "operations")[1], r[1]);
        assertTrue(r[1].contains("zero on every detector"), r[1]);
        assertFalse(r[1].contains("NOT EXERCISED"), "every hazard exercised: " + r[1]);
        System.out.println(r[1]);
    }

    @Test
    void demoWithDroppedHooksKeepsTheCacheAloneAndTheOracleApart() {
        String[] r = capture("demo", "--ops", "20000", "--faults", "drop-hooks,immediate-reuse", "--threads", "1",
                "--seed", "7");
        assertEquals("0", r[0], r[1] + r[2]);
        assertTrue(r[1].contains("mrcache alone") && r[1].contains("mrcache + page-frame check")
                && r[1].contains("mrcache + injector ORACLE"), r[1]);
        assertTrue(r[1].contains("not a defense the library has"), r[1]);
        long[] hits = cells(r[1], "stale hits served (H1)");
        assertTrue(hits[1] > 0, "the cache alone serves stale hits when frees are lost: " + r[1]);
        assertEquals(0, hits[3], "the oracle catches them: " + r[1]);
        assertTrue(cells(r[1], "stale hits caught by the ORACLE")[3] > 0, r[1]);
        assertTrue(cells(r[1], "remaps caught by the page-frame check")[2] > 0, r[1]);
        assertEquals(0, cells(r[1], "stale writes (ground truth)")[2], "the library's check: " + r[1]);
        assertTrue(r[1].contains("Not judged"), r[1]);
    }

    @Test
    void soakRunsMrcacheAloneWithProgressAndTheVerdict() {
        String[] r = capture("soak", "--lifecycles", "20000", "--seed", "3");
        assertEquals("0", r[0], r[1] + r[2]);
        assertTrue(r[1].contains("20,000 lifecycles in"), r[1]);
        assertTrue(r[1].contains("lifecycles/s") && r[1].contains("zero on every detector"), r[1]);
        assertTrue(r[1].contains("pinning account"), r[1]);
        assertTrue(r[1].contains("slow registration 1 in 32"), r[1]);
        assertTrue(r[1].matches("(?s).*acquires served from the cache \\(hits\\): [1-9][0-9,]*; registrations made: [1-9].*"),
                r[1]);
        String[] bad = capture("soak", "--pinning", "madvise");
        assertEquals("2", bad[0], bad[1] + bad[2]);
        assertTrue(bad[2].contains("--pinning madvise"), bad[2]);
        String[] never = capture("soak", "--slow-every", "0");
        assertEquals("2", never[0], never[1] + never[2]);
        assertTrue(never[2].contains("--slow-every") && never[2].contains("0"), never[2]);
    }

    @Test
    void everyBadOptionExitsTwoNamingTheOptionAndTheValue() {
        String[][] cases = {
            {"--faults", "", "demo", "--faults", ""},
            {"--faults 'immediate-reuse,'", "", "demo", "--faults", "immediate-reuse,"},
            {"--ops 0", "", "demo", "--ops", "0"},
            {"--threads 99", "", "demo", "--threads", "99"},
            {"--repeats 0", "", "bench", "--repeats", "0"},
            {"--compare /nonexistent/a.json", "--vs-ucx --json", "bench", "--compare", "/nonexistent/a.json",
                "/nonexistent/b.json"},
            {"--bytes 4.5", "whole number", "cost", "--bytes", "4.5"},
            {"--bytes -0", "whole number", "cost", "--bytes", "-0"},
            {"--latency-us -0", "microseconds", "cost", "--bytes", "100", "--latency-us", "-0"},
            {"--latency-us -5.0", "microseconds", "cost", "--bytes", "100", "--latency-us", "-5"},
            {"--hit-ns -1.0", "nanoseconds", "cost", "--what-if", "--hit-ns", "-1"},
            {"--svg /nonexistent-dir/x.svg", "cannot write", "cost", "--what-if", "--svg", "/nonexistent-dir/x.svg"},
            {"--seed", "0x followed by", "demo", "--seed", "0xZZ"},
            {"--transport tcp", "'ucx'", "demo", "--transport", "tcp"},
            {"--frees malloc", "'gc'", "demo", "--frees", "malloc"},
            {"--frees gc", "leave out --transport ucx", "demo", "--frees", "gc", "--transport", "ucx"},
            {"--listen 7000", "only with --transport ucx", "demo", "--listen", "7000"},
            {"--listen 0", "1..65535", "demo", "--transport", "ucx", "--listen", "0"},
            {"--connect nohost", "HOST:PORT", "ucx-peer", "--connect", "nohost"},
        };
        for (String[] c : cases) {
            String[] args = java.util.Arrays.copyOfRange(c, 2, c.length);
            String[] r = capture(args);
            assertEquals("2", r[0], String.join(" ", args) + ": " + r[1] + r[2]);
            assertTrue(r[2].contains(c[0]) && r[2].contains(c[1]), String.join(" ", args) + " -> " + r[2]);
            assertFalse(r[2].contains("\tat "), "no stack trace: " + r[2]);
        }
    }

    /** GC-freed buffers: the naive cache and the address-keyed API serve stale registrations, owner-bound none. */
    @Test
    void demoWithGcFreesCatchesTheNaiveAndAddressKeyedCachesAndNotOwnerBound() {
        String[] r = capture("demo", "--frees", "gc", "--ops", "6000", "--seed", "5", "--json");
        assertEquals("0", r[0], r[1] + r[2]);
        com.google.gson.JsonObject o = com.google.gson.JsonParser.parseString(r[1].trim()).getAsJsonObject();
        assertEquals("safe", o.get("judged").getAsString());
        var columns = o.getAsJsonArray("columns");
        assertTrue(columns.get(0).getAsJsonObject().get("staleHits").getAsLong() > 0, columns.toString());
        assertTrue(columns.get(1).getAsJsonObject().get("staleHits").getAsLong() > 0, columns.toString());
        assertEquals(0, columns.get(2).getAsJsonObject().get("staleHits").getAsLong(), columns.toString());
        assertTrue(o.getAsJsonObject("collectedToDeregisteredMicros").get("count").getAsLong() > 0, r[1]);
    }

    /** Two JVMs over UCX: the naive cache corrupts the owner's memory, mrcache does not, in one JSON line. */
    @Test
    void demoOverUcxShowsTheNaiveCacheCorruptingAnotherProcesssMemoryAndMrcacheNot() {
        String[] r = capture("demo", "--transport", "ucx", "--ops", "3000", "--seed", "12", "--json");
        assertEquals("0", r[0], r[1] + r[2]);
        com.google.gson.JsonObject o = com.google.gson.JsonParser.parseString(r[1].trim()).getAsJsonObject();
        assertEquals("ucx", o.get("transport").getAsString());
        assertEquals("safe", o.get("judged").getAsString());
        var columns = o.getAsJsonArray("columns");
        var naive = columns.get(0).getAsJsonObject();
        var mrcache = columns.get(1).getAsJsonObject();
        var violating = columns.get(2).getAsJsonObject();
        assertTrue(naive.get("corruptedBuffers").getAsLong() + naive.get("staleReads").getAsLong() > 0, naive.toString());
        assertEquals(0, mrcache.get("corruptedBuffers").getAsLong(), mrcache.toString());
        assertEquals(0, mrcache.get("staleReads").getAsLong(), mrcache.toString());
        assertEquals(mrcache.get("freesWhileOutstanding").getAsLong(), mrcache.get("heldBack").getAsLong());
        assertTrue(violating.get("lateWrites").getAsLong() > 0 && violating.get("corruptedBuffers").getAsLong() > 0,
                violating.toString());
        assertEquals(1, r[1].trim().lines().count(), "one JSON line on standard output, progress on error");
    }

    /** The transport savings run end to end: every size, both sides, the model beside them (no claim from it). */
    @Test
    void transportSavingsMeasuresEverySizeOnBothSidesBesideTheModel() {
        String[] r = capture("bench", "--transport-savings", "--repeats", "1", "--json");
        assertEquals("0", r[0], r[1] + r[2]);
        com.google.gson.JsonObject o = com.google.gson.JsonParser.parseString(r[1].trim()).getAsJsonObject();
        assertTrue(o.get("model").getAsString().contains("UcxRegistrar"), r[1]);
        var rows = o.getAsJsonArray("rows");
        assertEquals(6, rows.size(), "4 KiB to 4 MiB");
        for (var row : rows) {
            var m = row.getAsJsonObject();
            assertTrue(m.getAsJsonArray("registeringRate").get(0).getAsDouble() > 0, m.toString());
            assertTrue(m.getAsJsonArray("cachedRate").get(0).getAsDouble() > 0, m.toString());
            assertTrue(m.get("modelSavingUs").getAsDouble() > 0, m.toString());
        }
    }

    @Test
    void hexSeedsAsTheProjectPrintsThemAreAccepted() {
        String[] r = capture("demo", "--ops", "2000", "--threads", "1", "--faults", "immediate-reuse", "--seed",
                "0xfffffffffffffffe");
        assertEquals("0", r[0], r[1] + r[2]);
        assertTrue(r[1].contains("seed -2"), r[1]);
        assertFalse(r[1].contains("slow-registration per call"), "no note about a fault that was off: " + r[1]);
    }

    @Test
    void helpNeverCutsACommandsSummaryMidSentence() {
        String[] r = capture("--help");
        for (String line : r[1].lines().filter(l -> l.startsWith("  ") && !l.startsWith("   ")).toList()) {
            String summary = line.trim();
            if (summary.startsWith("-")) {
                continue; // an option
            }
            // a summary either ends its sentence or wraps onto an indented continuation line
            int at = r[1].indexOf(line) + line.length() + 1;
            String next = at < r[1].length() ? r[1].substring(at).lines().findFirst().orElse("") : "";
            assertTrue(summary.endsWith(".") || next.startsWith("             "), "cut: '" + line + "'");
        }
        for (String cmd : new String[] {"demo", "soak", "tour", "cost", "bench", "devices", "ucx-peer"}) {
            String[] h = capture(cmd, "--help");
            assertTrue(h[1].contains("Exit status:"), cmd + " lists its exit codes: " + h[1]);
        }
    }

    @Test
    void devicesCostAndDemoSpeakJson() {
        String[] d = capture("devices", "--json");
        assertTrue(d[1].trim().startsWith("{") && d[1].contains("\"devices\":"), d[1]);
        String[] c = capture("cost", "--bytes", "4e9", "--link-gbps", "400", "--efficiency", "0.8",
                "--oversubscription", "2", "--latency-us", "5", "--json");
        assertEquals("0", c[0], c[2]);
        assertTrue(c[1].contains("\"messageSeconds\":0.200005"), c[1]);
        String[] w = capture("cost", "--what-if", "--json");
        assertTrue(w[1].contains("\"whatIf\":[{\"bytes\":4096"), w[1]);
        String[] demo = capture("demo", "--ops", "3000", "--threads", "1", "--seed", "5", "--faults", "immediate-reuse",
                "--json");
        assertEquals("0", demo[0], demo[1] + demo[2]);
        assertTrue(demo[1].trim().startsWith("{\"seed\":5,") && demo[1].contains("\"judged\":\"safe\""), demo[1]);
        assertEquals(1, demo[1].trim().lines().count(), "one JSON line on standard output, progress on error");
    }

    @Test
    void benchJsonCarriesEveryRowWithBothSidesAndLeavesDisturbedRepeatsOut() {
        io.mrcache.cli.bench.BenchReport report = new io.mrcache.cli.bench.BenchReport();
        var result = new io.mrcache.cli.bench.JmhJson.Result(10.0, java.util.Map.of(), java.util.Map.of());
        report.addJmh(java.util.Map.of("w1HitExact1t", result), 0.01);
        report.addJmh(java.util.Map.of("w1HitExact1t", new io.mrcache.cli.bench.JmhJson.Result(50.0,
                java.util.Map.of(), java.util.Map.of())), 0.40); // another process took 40% of the machine
        report.addUcx(java.util.List.of("# UCX rcache_check_pfn=0, rcache flags 0", "w1HitExact1t 40.0 1.000"), 0.0);
        report.allocation(0.5, 0.05, 2.0, 10.0, 1.0);
        String json = Json.write(report.json());
        assertTrue(json.startsWith("{\"repeats\":2,"), json);
        assertTrue(json.contains("\"benchmark\":\"w1HitExact1t\",\"unit\":\"ns per op per thread\","
                + "\"mrcache\":{\"values\":[10.0,50.0],\"kept\":[10.0],\"median\":10.0},"
                + "\"ucx\":{\"values\":[40.0],\"kept\":[40.0],\"median\":40.0},\"ratio\":0.25"), json);
        assertTrue(json.contains("\"allocationBytesPerHit\":0.5,\"allocationBytesBaseline\":0.05,"
                + "\"allocationBytesLastIterationWithTeardown\":2.0,\"allocationNsPerHit\":10.0,"
                + "\"allocationNsPerBaselineOp\":1.0,\"allocationBytesPerHitBeyondBackground\":0.0"), json);
        assertTrue(json.contains("{\"name\":\"W1 allocation per hit beyond the background (bytes)\",\"value\":0.0,"
                + "\"target\":0.001,\"met\":true}"), "the baseline's bytes per second, not per op, are subtracted: "
                + json);
        report.allocation(0.6, 0.05, 2.0, 10.0, 1.0);
        assertTrue(Json.write(report.json()).contains("\"allocationBytesPerHitBeyondBackground\":0.09999999999999998"),
                "a tenth of a byte more per hit is seen");
        String table = report.table();
        assertTrue(table.contains("10.0/10.0/10.0 (-1)"), "the disturbed repeat is left out and counted:\n" + table);
        assertTrue(table.contains("0.25x") && table.contains("UCX: UCX rcache_check_pfn=0"), table);
        assertEquals("{\"a\":\"q\\\"\\n\"}", Json.write(java.util.Map.of("a", "q\"\n")), "escaping");
    }

    @Test
    void benchReadsJmhJsonAndRewritesOnlyTheGeneratedPartOfTheDoc(@TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path results = dir.resolve("r.json");
        java.nio.file.Files.writeString(results, """
                [{"benchmark":"io.mrcache.bench.CacheBenchmarks.scaleHit","params":{"regions":"1024"},
                  "primaryMetric":{"score":21.5,"scorePercentiles":{"50.0":21.0}},
                  "secondaryMetrics":{"gc.alloc.rate.norm":{"score":0.25,"rawData":[[0.0001,0.0003,0.7]]}}},
                 {"benchmark":"io.mrcache.bench.CacheBenchmarks.w6","primaryMetric":{"score":1.0},
                  "secondaryMetrics":{"w6Hit":{"score":2.0,"scorePercentiles":{"99.9":900.0}}}}]""");
        var r = io.mrcache.cli.bench.JmhJson.read(results);
        assertEquals(21.5, r.get("scaleHit:1024").score());
        assertEquals(0.25, r.get("scaleHit:1024").secondaryEndingWith("gc.alloc.rate.norm").score());
        assertEquals(0.0002, r.get("scaleHit:1024").secondaryEndingWith("gc.alloc.rate.norm").meanBeforeLast(), 1e-12,
                "the last iteration, which runs the trial's teardown, is left out");
        IllegalStateException one = assertThrows(IllegalStateException.class,
                () -> r.get("w6").secondary().get("w6Hit").meanBeforeLast());
        assertTrue(one.getMessage().contains("at least two") && one.getMessage().contains("-i 2"), one.getMessage());
        assertEquals(900.0, r.get("w6").secondary().get("w6Hit").percentiles().get("99.9"));
        java.nio.file.Path doc = dir.resolve("doc.md");
        java.nio.file.Files.writeString(doc, "# head\n" + BenchCommand.DOC_BEGIN + "\nold\n" + BenchCommand.DOC_END
                + "\ntail\n");
        BenchCommand.writeDoc(doc, "TABLE\n");
        String text = java.nio.file.Files.readString(doc);
        assertTrue(text.startsWith("# head\n" + BenchCommand.DOC_BEGIN) && text.contains("```\nTABLE\n```")
                && !text.contains("old") && text.endsWith(BenchCommand.DOC_END + "\ntail\n"), text);
        String[] bad = capture("bench", "--update-doc", dir.resolve("none.md").toString());
        assertEquals("2", bad[0]);
        assertTrue(bad[2].contains("--update-doc") && bad[2].contains("none.md"), bad[2]);
    }

    @Test
    void theVersionAndTheLaunchersOwnHelp() throws Exception {
        String[] v = capture("--version");
        assertEquals("0", v[0]);
        assertTrue(v[1].startsWith("mrcache ") && v[1].contains("Java " + Runtime.version().feature()), v[1]);
        java.nio.file.Path launcher = java.nio.file.Path.of(System.getProperty("user.dir")).resolve("../../mrcache")
                .normalize();
        for (String cmd : new String[] {"test", "jcstress"}) {
            Process p = new ProcessBuilder("bash", launcher.toString(), cmd, "--help").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(60, java.util.concurrent.TimeUnit.SECONDS));
            assertEquals(0, p.exitValue(), out);
            assertTrue(out.startsWith("Usage: ./mrcache " + cmd) && out.contains("Exit status:"), out);
        }
    }

    /** The numbers of one row of the demo's table, one per column. */
    private static long[] cells(String out, String label) {
        String line = out.lines().filter(l -> l.trim().startsWith(label)).findFirst()
                .orElseThrow(() -> new AssertionError("no row '" + label + "' in: " + out));
        String[] parts = line.substring(40).trim().split("\\s+");
        long[] v = new long[parts.length];
        for (int i = 0; i < parts.length; i++) {
            v[i] = Long.parseLong(parts[i].replace(",", ""));
        }
        return v;
    }
}
