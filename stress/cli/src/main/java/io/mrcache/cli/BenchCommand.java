package io.mrcache.cli;

import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.CacheCounter;
import io.mrcache.core.RegistrationCache;
import io.mrcache.core.testing.RecordingRegistrar;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Runs the JMH benchmarks and, with --vs-ucx, UCX's registration cache through a native C harness on the
 * same workloads, repeating both; prints min/median/max and the ratio of medians, measured in one run.
 */
@Command(name = "bench", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Benchmark mrcache (JMH), and with --vs-ucx UCX's ucs_rcache, on workloads W1..W7.",
            "UCX runs through a native C harness built against libucx-dev; min/median/max over repeats and the ratio"
                    + " of medians are printed."},
        exitCodeListHeading = "%nExit status:%n",
        exitCodeList = {"0:the benchmarks ran", "1:a benchmark run failed", "2:invalid options, or the harness or the"
                + " benchmark jar is missing"})
final class BenchCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--vs-ucx", description = "Also build and run the UCX harness (needs gcc and libucx-dev).")
    boolean vsUcx;

    @Option(names = "--quick", description = "Short run: 3 repeats of 1 s measurements.")
    boolean quick;

    @Option(names = "--repeats", description = "Repeats of each side (default 3 with --quick, else 5).")
    Integer repeats;

    @Option(names = "--json", description = "Print the results as one JSON object instead of the table.")
    boolean json;

    private static final String[][] ROWS = {
        // name, label, kind (ns: lower is better; tput: ns per op per thread, ratio as throughput), target
        {"w1HitExact1t", "W1 hit, exact 64 KiB of 1024, 1 thread", "ns", "<= 0.5x UCX ns/op"},
        {"w1HitExact2tShared", "W1 hit, 2 threads, shared regions", "tput", ">= 10x UCX throughput"},
        {"w1HitExact2tDisjoint", "W1 hit, 2 threads, disjoint regions", "tput", ">= 10x UCX throughput"},
        {"w2HitSubRange", "W2 hit, random sub-range", "ns", "<= 0.5x UCX ns/op"},
        {"w3Miss64k", "W3 miss+invalidate, 64 KiB", "ns", "<= 1.0x UCX ns/op"},
        {"w3MissRandom", "W3 miss+invalidate, 4 KiB..1 MiB", "ns", "<= 1.0x UCX ns/op"},
        {"w4Mixed1t", "W4 90% hit / 10% miss, 512 regions, 1 thread", "ns", "<= 0.75x UCX ns/op"},
        {"w4Mixed2t", "W4 same, 2 threads", "tput", ">= 10x UCX throughput"},
        {"w5InvalidateEmpty", "W5 free hook, nothing registered", "abs", "<= 20 ns"},
    };

    @Override
    public Integer call() throws IOException, InterruptedException {
        if (repeats != null && repeats < 1) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--repeats " + repeats
                    + ": give 1 or more repeats of each side");
        }
        Path root = Path.of(System.getProperty("mrcache.root", "."));
        Path jar = root.resolve("stress/jmh/target/benchmarks.jar");
        if (!Files.exists(jar)) {
            System.err.println("missing " + jar + ": build with ./mrcache (it packages every module)");
            return 2;
        }
        int reps = repeats != null ? repeats : quick ? 3 : 5;
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Path ucxBinary = null;
        if (vsUcx) {
            ucxBinary = root.resolve("stress/jmh/target/ucx_rcache_bench");
            Path src = root.resolve("stress/jmh/src/main/c/ucx_rcache_bench.c");
            List<String> gcc = List.of("gcc", "-O2", "-o", ucxBinary.toString(), src.toString(), "-lucs", "-lpthread");
            Process p = new ProcessBuilder(gcc).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            if (p.waitFor() != 0) {
                System.err.println("cannot build the UCX harness (" + String.join(" ", gcc) + "):\n" + out
                        + "install gcc and UCX's headers: apt-get install gcc libucx-dev");
                return 2;
            }
        }
        Map<String, List<Double>> mine = new HashMap<>();
        Map<String, List<Double>> ucx = new HashMap<>();
        Map<String, List<Double>> w6 = new HashMap<>();
        String measure = quick ? "1" : "2";
        for (int r = 1; r <= reps; r++) {
            System.err.printf("repeat %d/%d: JMH (mrcache) ...%n", r, reps);
            Path csv = Files.createTempFile("mrcache-jmh", ".csv");
            run(List.of(java, "-jar", jar.toString(), "-f", "1", "-wi", quick ? "1" : "2", "-w", "1", "-i", measure,
                    "-r", "1", "-rf", "csv", "-rff", csv.toString(), "CacheBenchmarks"), null);
            for (String line : Files.readAllLines(csv)) {
                String[] c = line.replace("\"", "").split(",");
                if (c.length < 5 || !c[0].contains("CacheBenchmarks.")) {
                    continue;
                }
                String name = c[0].substring(c[0].indexOf("CacheBenchmarks.") + 16);
                double score = Double.parseDouble(c[4]);
                if (name.startsWith("w6:w6Hit:p")) {
                    w6.computeIfAbsent(name.substring(9), k -> new ArrayList<>()).add(score);
                } else if (!name.startsWith("w6")) {
                    mine.computeIfAbsent(name, k -> new ArrayList<>()).add(score);
                }
            }
            Files.deleteIfExists(csv);
            if (ucxBinary != null) {
                System.err.printf("repeat %d/%d: UCX harness ...%n", r, reps);
                for (String line : run(List.of(ucxBinary.toString(), quick ? "1000" : "2000"), null)) {
                    String[] c = line.trim().split(" ");
                    if (c.length == 2) {
                        ucx.computeIfAbsent(c[0], k -> new ArrayList<>()).add(Double.parseDouble(c[1]));
                    }
                }
            }
        }
        double alloc = allocationPerHit(java, jar);
        if (json) {
            System.out.println(Json.write(jsonResults(mine, ucx, w6, alloc, reps)));
            return 0;
        }
        printTable(mine, ucx, w6, alloc, reps);
        printHitRatio();
        return 0;
    }

    static Map<String, Object> jsonResults(Map<String, List<Double>> mine, Map<String, List<Double>> ucx,
            Map<String, List<Double>> w6, double alloc, int reps) {
        Map<String, Object> out = new java.util.LinkedHashMap<>();
        out.put("repeats", reps);
        List<Object> rows = new ArrayList<>();
        for (String[] row : ROWS) {
            Map<String, Object> r = new java.util.LinkedHashMap<>();
            r.put("workload", row[1]);
            r.put("benchmark", row[0]);
            r.put("unit", "ns per op per thread");
            r.put("mrcache", mine.getOrDefault(row[0], List.of()));
            r.put("ucx", ucx.getOrDefault(row[0], List.of()));
            r.put("target", row[3]);
            rows.add(r);
        }
        out.put("rows", rows);
        out.put("w6HitLatencyNs", new java.util.LinkedHashMap<>(w6));
        out.put("allocationBytesPerHit", alloc);
        return out;
    }

    private double allocationPerHit(String java, Path jar) throws IOException, InterruptedException {
        System.err.println("allocation on the hit path (JMH -prof gc) ...");
        Path csv = Files.createTempFile("mrcache-gc", ".csv");
        run(List.of(java, "-jar", jar.toString(), "-f", "1", "-wi", "2", "-w", "1", "-i", "2", "-r", "1", "-prof", "gc",
                "-rf", "csv", "-rff", csv.toString(), "w1HitExact1t"), null);
        double norm = Double.NaN;
        for (String line : Files.readAllLines(csv)) {
            String[] c = line.replace("\"", "").split(",");
            if (c.length >= 5 && c[0].endsWith("gc.alloc.rate.norm")) {
                norm = Double.parseDouble(c[4]);
            }
        }
        Files.deleteIfExists(csv);
        return norm;
    }

    private static void printTable(Map<String, List<Double>> mine, Map<String, List<Double>> ucx,
            Map<String, List<Double>> w6, double alloc, int reps) {
        System.out.printf("%n%-46s %-26s %-26s %9s  %-22s %s%n", "workload (ns per op per thread)",
                "mrcache min/med/max", "UCX min/med/max", "ratio", "target", "met");
        for (String[] row : ROWS) {
            List<Double> m = mine.getOrDefault(row[0], List.of());
            List<Double> u = ucx.getOrDefault(row[0], List.of());
            String ratio = "";
            String met = "";
            if (!m.isEmpty() && row[2].equals("abs")) {
                met = median(m) <= 20 ? "yes" : "no";
            } else if (!m.isEmpty() && !u.isEmpty()) {
                double r = row[2].equals("tput") ? median(u) / median(m) : median(m) / median(u);
                ratio = String.format("%.2fx", r);
                double bound = Double.parseDouble(row[3].replaceAll("[^0-9.]+", " ").trim().split(" ")[0]);
                met = (row[2].equals("tput") ? r >= bound : r <= bound) ? "yes" : "no";
                ratio += row[2].equals("tput") ? " tput" : "";
            }
            System.out.printf("%-46s %-26s %-26s %9s  %-22s %s%n", row[1], stats(m), stats(u), ratio, row[3], met);
        }
        if (!w6.isEmpty()) {
            System.out.printf("%-46s p50 %s, p99 %s, max %s ns (target p99 <= 1000 ns: %s)%n",
                    "W6 hit latency while another thread misses", stats(w6.get("p0.50")), stats(w6.get("p0.99")),
                    stats(w6.get("p1.00")), median(w6.get("p0.99")) <= 1000 ? "met" : "not met");
        }
        System.out.printf("%-46s %.3f bytes per acquire+release (JMH gc profiler; target 0)%n",
                "allocation on the hit path (W1)", alloc);
        System.out.printf("(%d repeats of each side in this run; 2-thread ratios compare total throughput)%n", reps);
    }

    /** W7: hit ratio at equal budget on a skewed trace with scans, mrcache's policy against plain LRU. */
    static void printHitRatio() {
        int budget = 200;
        int distinct = 4000;
        Random rnd = new Random(7);
        List<Integer> trace = new ArrayList<>();
        int oneOff = distinct;
        double[] zipf = new double[distinct];
        double sum = 0;
        for (int i = 0; i < distinct; i++) {
            sum += 1.0 / (i + 1);
            zipf[i] = sum;
        }
        for (int n = 0; n < 200_000; n++) {
            if (n % 20_000 < 600) {
                trace.add(oneOff++); // a scan of buffers used once
            } else {
                double x = rnd.nextDouble() * sum;
                int lo = 0;
                int hi = distinct - 1;
                while (lo < hi) {
                    int mid = (lo + hi) >>> 1;
                    if (zipf[mid] < x) {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                trace.add(lo);
            }
        }
        RecordingRegistrar registrar = new RecordingRegistrar(1, false);
        long hits;
        try (RegistrationCache cache = RegistrationCache.builder(registrar).budget(new Budget(Long.MAX_VALUE, budget))
                .build()) {
            for (int b : trace) {
                cache.acquire(0x1000_0000L + b * 8192L, 4096, Access.LOCAL_WRITE).close();
            }
            hits = cache.metrics().get(CacheCounter.HITS);
        }
        LinkedHashMap<Integer, Boolean> lru = new LinkedHashMap<>(budget * 2, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Integer, Boolean> e) {
                return size() > budget;
            }
        };
        long lruHits = 0;
        for (int b : trace) {
            if (lru.get(b) != null) {
                lruHits++;
            } else {
                lru.put(b, true);
            }
        }
        System.out.printf("%-46s mrcache %.1f%%, plain LRU %.1f%% (%.2fx), %d regions, Zipf over %d buffers"
                + " with scans%n", "W7 hit ratio at equal budget", 100.0 * hits / trace.size(),
                100.0 * lruHits / trace.size(), (double) hits / lruHits, budget, distinct);
    }

    private static String stats(List<Double> v) {
        if (v == null || v.isEmpty()) {
            return "-";
        }
        List<Double> s = new ArrayList<>(v);
        s.sort(null);
        return String.format("%.1f/%.1f/%.1f", s.get(0), median(s), s.get(s.size() - 1));
    }

    private static double median(List<Double> v) {
        List<Double> s = new ArrayList<>(v);
        s.sort(null);
        int n = s.size();
        return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
    }

    private static List<String> run(List<String> command, Path log) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        List<String> lines = new ArrayList<>();
        try (var reader = p.inputReader()) {
            for (String line; (line = reader.readLine()) != null;) {
                lines.add(line);
            }
        }
        if (!p.waitFor(30, TimeUnit.MINUTES) || p.exitValue() != 0) {
            throw new IllegalStateException(command.get(0) + " failed:\n" + String.join("\n", lines));
        }
        return lines;
    }
}
