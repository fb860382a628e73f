package io.mrcache.cli.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The results of one {@code ./mrcache bench} run, both sides, every repeat: the comparison table, the
 * scaling table, W6's latency percentiles, allocation per hit against a baseline with no cache call, and
 * the same as JSON. Ratios compare medians of the undisturbed repeats of this one run.
 */
public final class BenchReport {
    /**
     * name, label, kind (ns: ns per op, lower is better; tput: 2 threads, ratio of throughput; abs), target, and
     * the UCX harness's name when it differs (UCX has no lease cells to collide on).
     */
    static final String[][] ROWS = {
        {"w1HitExact1t", "W1 hit, exact 64 KiB of 1024, 1 thread", "ns", "<= 0.5x UCX ns/op"},
        {"w1HitExact2tShared", "W1 hit, 2 threads, shared regions", "tput", ">= 10x UCX throughput"},
        {"w1HitExact2tCollide", "W1 same, 2 threads on one lease cell at first", "tput", ">= 10x UCX throughput",
            "w1HitExact2tShared"},
        {"w1HitExact2tDisjoint", "W1 hit, 2 threads, disjoint regions", "tput", ">= 10x UCX throughput"},
        {"w2HitSubRange", "W2 hit, random sub-range", "ns", "<= 0.5x UCX ns/op"},
        {"w3Miss64k", "W3 miss+invalidate, 64 KiB", "ns", "<= 1.0x UCX ns/op"},
        {"w3MissRandom", "W3 miss+invalidate, 4 KiB..1 MiB", "ns", "<= 1.0x UCX ns/op"},
        {"w4Mixed1t", "W4 90% hit / 10% miss, 512 regions, 1 thread", "ns", "<= 0.75x UCX ns/op"},
        {"w4Mixed2t", "W4 same, 2 threads", "tput", ">= 10x UCX throughput"},
        {"w5InvalidateEmpty", "W5 free hook, nothing registered", "abs", "<= 20 ns"},
    };
    /** Region counts of the scaling table (JMH's {@code regions} parameter, the harness's --scaling). */
    public static final int[] SCALE = {64, 1024, 16384, 65536, 262144, 1048576};
    /** The scaling table's targets: a hit at most this many times UCX's, a miss with its invalidation at most this. */
    static final double SCALE_HIT_TARGET = 0.5;
    static final double SCALE_MISS_TARGET = 1.0;
    /** Heap bytes per cached region, at most this many times UCX's. */
    static final double FOOTPRINT_TARGET = 1.5;
    /** W4's cost per operation and thread on two threads, at most this many times its cost on one. */
    static final double W4_TWO_THREAD_COST_TARGET = 2.0;
    /** The name of that target's entry in the JSON's {@code checks} ({@link RunComparison} reads it back). */
    static final String W4_COST_CHECK = "W4 per thread, 2 threads against 1 (x)";
    /** W6's p99 hit latency, in ns, at most this. */
    static final double W6_P99_TARGET_NS = 1000;
    /**
     * Bytes per hit the allocation check tolerates: a thousandth of a byte, one 16-byte object per 16,000 hits,
     * where JMH's own threads show as about 1e-4 bytes per hit (some 6 KB a second).
     */
    static final double ALLOCATION_RESOLUTION = 0.001;
    private static final String[] W6_PERCENTILES = {"50.0", "99.0", "99.9", "100.0"};

    private final Map<String, Series> mine = new LinkedHashMap<>();
    private final Map<String, Series> ucx = new LinkedHashMap<>();
    private final Map<String, Series> w6 = new LinkedHashMap<>();
    private final Set<String> notes = new LinkedHashSet<>();
    private final List<Double> mineShares = new ArrayList<>();
    private final List<Double> ucxShares = new ArrayList<>();
    private Map<String, Object> w6Attribution = Map.of();
    private double allocationPerHit = Double.NaN;
    private double allocationBaseline = Double.NaN;
    private double allocationLastIteration = Double.NaN;
    private double hitNanos = Double.NaN;
    private double baselineNanos = Double.NaN;
    /** Iterations each steady-state score averages (0: JMH's own score, after its warm-up iterations). */
    private final int steadyWindow;
    /** Each benchmark's curve per repeat, and whether its window settled. */
    private final Map<String, List<SteadyState>> curves = new LinkedHashMap<>();
    /** Bytes per region by configuration ("mrcache unbounded", "UCX malloc", ...) and region count. */
    private final Map<String, Map<Integer, Double>> footprint = new LinkedHashMap<>();

    /** A report whose scores are JMH's own (each after the warm-up iterations JMH ran). */
    public BenchReport() {
        this(0);
    }

    /**
     * A report of runs that measured every iteration: each score is the mean of the last {@code steadyWindow}
     * iterations ({@link SteadyState}), and each curve is kept.
     */
    public BenchReport(int steadyWindow) {
        this.steadyWindow = steadyWindow;
    }

    /** One repeat of the JMH side; {@code othersShare} from {@link CpuShare#othersSince}. */
    public void addJmh(Map<String, JmhJson.Result> results, double othersShare) {
        mineShares.add(othersShare);
        for (Map.Entry<String, JmhJson.Result> e : results.entrySet()) {
            if (e.getKey().equals("w6")) {
                Map<String, Double> p = e.getValue().secondary().get("w6Hit").percentiles();
                for (String q : W6_PERCENTILES) {
                    w6.computeIfAbsent(q, k -> new Series()).add(p.getOrDefault(q, Double.NaN), othersShare);
                }
            } else if (!e.getKey().startsWith("w0")) {
                double score = e.getValue().score();
                if (steadyWindow > 0 && !e.getValue().iterations().isEmpty()) {
                    SteadyState steady = SteadyState.of(e.getValue().iterations(), steadyWindow);
                    curves.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).add(steady);
                    score = steady.score();
                }
                mine.computeIfAbsent(e.getKey(), k -> new Series()).add(score, othersShare);
            }
        }
    }

    /** One repeat of the UCX harness: its output lines ("name ns cpu-share", and "# " notes). */
    public void addUcx(List<String> lines, double othersShare) {
        ucxShares.add(othersShare);
        for (String line : lines) {
            String[] c = line.trim().split(" ");
            if (line.startsWith("#")) {
                notes.add("UCX: " + line.substring(1).trim());
            } else if (c.length >= 2) {
                ucx.computeIfAbsent(c[0], k -> new Series()).add(Double.parseDouble(c[1]), othersShare);
            }
        }
    }

    /** The "# " lines the JMH benchmarks printed (W4's live region count). */
    public void addJmhNotes(List<String> lines) {
        for (String line : lines) {
            int at = line.indexOf("# w4 live regions"); // JMH prefixes the teardown's output with the iteration
            if (at >= 0) {
                notes.add("mrcache: " + line.substring(at + 1).trim());
            }
        }
    }

    /**
     * Lines of the footprint measurements: {@code footprint <config> <regions> <bytes per region> [<rss bytes
     * per region>]}, from {@code RegionFootprint} (configs unbounded and budget) and the UCX harness (config
     * ucx: malloc's bytes, then the resident set's); other lines are ignored.
     */
    public void addFootprint(List<String> lines) {
        for (String line : lines) {
            String[] c = line.trim().split(" ");
            if (c.length < 4 || !c[0].equals("footprint")) {
                continue;
            }
            int n = Integer.parseInt(c[2]);
            if (c[1].equals("ucx")) {
                footprint.computeIfAbsent("UCX malloc", k -> new LinkedHashMap<>()).put(n, Double.parseDouble(c[3]));
                if (c.length > 4) {
                    footprint.computeIfAbsent("UCX resident", k -> new LinkedHashMap<>()).put(n, Double.parseDouble(c[4]));
                }
            } else {
                footprint.computeIfAbsent("mrcache " + c[1], k -> new LinkedHashMap<>()).put(n, Double.parseDouble(c[3]));
            }
        }
    }

    /** mrcache's bytes per region over UCX's (malloc) for {@code config} at {@code n} regions; NaN when a side is missing. */
    double footprintRatio(String config, int n) {
        Double m = footprint.getOrDefault(config, Map.of()).get(n);
        Double u = footprint.getOrDefault("UCX malloc", Map.of()).get(n);
        return m == null || u == null ? Double.NaN : m / u;
    }

    /** The result of {@link W6Attribution} (its JSON, read back). */
    public void w6Attribution(Map<String, Object> result) {
        this.w6Attribution = result;
    }

    /**
     * Bytes allocated per operation of W1 and of the baseline that makes no cache call (JMH gc profiler, the
     * iterations before the last), W1's last iteration (which also counts the trial's teardown), and each
     * one's time per operation.
     */
    public void allocation(double perHit, double baseline, double lastIteration, double hitNanos,
            double baselineNanos) {
        this.allocationPerHit = perHit;
        this.allocationBaseline = baseline;
        this.allocationLastIteration = lastIteration;
        this.hitNanos = hitNanos;
        this.baselineNanos = baselineNanos;
    }

    /**
     * W1's bytes per hit beyond the fork's background: JMH's own threads allocate at a rate per second, not per
     * operation, so the baseline's bytes per operation are scaled by how much longer a hit takes than a
     * baseline operation before they are subtracted.
     */
    double allocationBeyondBackground() {
        return allocationPerHit - allocationBaseline * (hitNanos / baselineNanos);
    }

    private static String ucxName(String[] row) {
        return row.length > 4 ? row[4] : row[0];
    }

    /** The ratio of medians for a row: ns rows mine/UCX, throughput rows UCX/mine (per-thread ns); NaN if a side is missing. */
    static double ratio(String kind, Series m, Series u) {
        if (m == null || u == null || m.isEmpty() || u.isEmpty()) {
            return Double.NaN;
        }
        return kind.equals("tput") ? u.median() / m.median() : m.median() / u.median();
    }

    static boolean met(String[] row, Series m, double ratio) {
        double bound = Double.parseDouble(row[3].replaceAll("[^0-9.]+", " ").trim().split(" ")[0]);
        return switch (row[2]) {
            case "abs" -> m != null && !m.isEmpty() && m.median() <= bound;
            case "tput" -> ratio >= bound;
            default -> ratio <= bound;
        };
    }

    /** The tables as printed, plain text. */
    public String table() {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "%-46s %-26s %-26s %11s  %-22s %s%n", "workload (ns per op per thread)",
                "mrcache min/med/max", "UCX min/med/max", "ratio", "target", "met"));
        for (String[] row : ROWS) {
            Series m = mine.get(row[0]);
            Series u = ucx.get(ucxName(row));
            double r = ratio(row[2], m, u);
            String ratio = Double.isNaN(r) ? "" : String.format(Locale.ROOT, "%.2fx%s", r, row[2].equals("tput") ? " tput" : "");
            boolean hasSide = row[2].equals("abs") ? m != null : !Double.isNaN(r);
            sb.append(String.format(Locale.ROOT, "%-46s %-26s %-26s %11s  %-22s %s%n", row[1], stats(m), stats(u), ratio,
                    row[3], hasSide ? (met(row, m, r) ? "yes" : "no") : ""));
        }
        if (!w6.isEmpty()) {
            sb.append(String.format(Locale.ROOT, "%-46s p50 %s, p99 %s, p99.9 %s, max %s ns (target p99 <= %.0f ns: %s)%n",
                    "W6 hit latency while another thread misses", stats(w6.get("50.0")), stats(w6.get("99.0")),
                    stats(w6.get("99.9")), stats(w6.get("100.0")), W6_P99_TARGET_NS,
                    w6.get("99.0").median() <= W6_P99_TARGET_NS ? "met" : "not met"));
        }
        double w4Cost = w4CostAgainstOneThread("w4Mixed2t");
        if (!Double.isNaN(w4Cost)) {
            sb.append(String.format(Locale.ROOT, "%-46s %.2fx one thread's cost per operation (target <= %.0fx: %s)%n",
                    "W4 per thread, 2 threads against 1", w4Cost, W4_TWO_THREAD_COST_TARGET,
                    w4Cost <= W4_TWO_THREAD_COST_TARGET ? "met" : "not met"));
        }
        double ownCost = w4CostAgainstOneThread("w4Mixed2tOwnCache");
        if (!Double.isNaN(ownCost)) {
            sb.append(String.format(Locale.ROOT, "%-46s %.2fx one thread's cost per operation, %s ns (the control: what"
                    + " two threads cost each other on this machine when they share no cache)%n",
                    "W4 per thread, 2 threads with a cache each", ownCost, stats(mine.get("w4Mixed2tOwnCache"))));
        }
        if (!w6Attribution.isEmpty()) {
            sb.append(String.format(Locale.ROOT, "%-46s %s%n", "W6 slow hits attributed (JFR, schedstat)",
                    W6Attribution.describe(w6Attribution)));
        }
        double beyond = allocationBeyondBackground();
        sb.append(String.format(Locale.ROOT, "%-46s %.6f bytes per acquire+release at %.1f ns; baseline with no cache"
                + " call %.6f per op at %.2f ns; beyond the background rate %.6f (target <= %s: %s) (JMH gc profiler,"
                + " iterations before the last); the last iteration, which also runs the trial's teardown (the"
                + " cache's close): %.4f%n", "allocation on the hit path (W1)", allocationPerHit, hitNanos,
                allocationBaseline, baselineNanos, beyond, ALLOCATION_RESOLUTION,
                beyond <= ALLOCATION_RESOLUTION ? "met" : "not met", allocationLastIteration));
        sb.append(String.format(Locale.ROOT, "%nscaling: ns per op, 1 thread, with N cached 64 KiB regions%n"));
        sb.append(String.format(Locale.ROOT, "%-8s %-22s %-22s %7s %-4s  %-22s %-22s %7s %s%n", "N", "hit mrcache",
                "hit UCX", "ratio", "met", "miss+inval mrcache", "miss+inval UCX", "ratio", "met"));
        for (int n : SCALE) {
            Series hm = mine.get("scaleHit:" + n);
            Series hu = ucx.get("scaleHit:" + n);
            Series mm = mine.get("scaleMiss:" + n);
            Series mu = ucx.get("scaleMiss:" + n);
            sb.append(String.format(Locale.ROOT, "%-8d %-22s %-22s %7s %-4s  %-22s %-22s %7s %s%n", n, stats(hm),
                    stats(hu), ratioText(hm, hu), metText(hm, hu, SCALE_HIT_TARGET), stats(mm), stats(mu),
                    ratioText(mm, mu), metText(mm, mu, SCALE_MISS_TARGET)));
        }
        sb.append(String.format(Locale.ROOT, "targets: hit <= %.1fx UCX, miss+invalidate <= %.1fx UCX at every N%n",
                SCALE_HIT_TARGET, SCALE_MISS_TARGET));
        footprintTable(sb);
        steadyStateLine(sb);
        sb.append('\n');
        for (String note : notes) {
            sb.append(note).append('\n');
        }
        sb.append(String.format(Locale.ROOT, "repeats: %d of each side; other processes' share of the machine per repeat:"
                + " mrcache %s, UCX %s; a repeat above %.0f%% is left out of the medians (marked -k)%n",
                mineShares.size(), shares(mineShares), shares(ucxShares), CpuShare.DISTURBED_ABOVE * 100));
        sb.append("2-thread ratios compare total throughput (UCX ns per op per thread over mrcache's)\n");
        return sb.toString();
    }

    /**
     * mrcache's W4 median per operation and thread on two threads ({@code w4Mixed2t}, or its control
     * {@code w4Mixed2tOwnCache}: two threads with a cache each) over its median on one; NaN without both.
     */
    private double w4CostAgainstOneThread(String twoThreads) {
        Series one = mine.get("w4Mixed1t");
        Series two = mine.get(twoThreads);
        return one == null || two == null ? Double.NaN : two.median() / one.median();
    }

    /**
     * The targets that have no row of their own with a met flag, for a script that checks every target: W4's
     * two-thread cost, W6's p99, and the hit path's allocation (beyond the background the no-call baseline shows).
     */
    private List<Object> checksJson() {
        List<Object> checks = new ArrayList<>();
        double w4Cost = w4CostAgainstOneThread("w4Mixed2t");
        if (!Double.isNaN(w4Cost)) {
            checks.add(check(W4_COST_CHECK, w4Cost, W4_TWO_THREAD_COST_TARGET));
        }
        Series p99 = w6.get("99.0");
        if (p99 != null) {
            checks.add(check("W6 hit latency p99 (ns)", p99.median(), W6_P99_TARGET_NS));
        }
        if (!Double.isNaN(allocationPerHit)) {
            checks.add(check("W1 allocation per hit beyond the background (bytes)", allocationBeyondBackground(),
                    ALLOCATION_RESOLUTION));
        }
        return checks;
    }

    private static Map<String, Object> check(String name, double value, double atMost) {
        Map<String, Object> j = new LinkedHashMap<>();
        j.put("name", name);
        j.put("value", value);
        j.put("target", atMost);
        j.put("met", value <= atMost);
        return j;
    }

    private static String metText(Series m, Series u, double target) {
        double r = ratio("ns", m, u);
        return Double.isNaN(r) ? "" : r <= target ? "yes" : "no";
    }

    private void footprintTable(StringBuilder sb) {
        if (footprint.isEmpty()) {
            return;
        }
        sb.append(String.format(Locale.ROOT, "%nmemory: bytes per cached 64 KiB region (mrcache: live objects, class histogram, after a warm-up cache;"
                + " UCX: malloc's in-use bytes, and the resident set)%n"));
        sb.append(String.format(Locale.ROOT, "%-8s %-20s %-20s %-12s %-12s %8s %s%n", "N", "mrcache unbounded",
                "mrcache budget", "UCX malloc", "UCX resident", "ratio", "met (<= " + FOOTPRINT_TARGET + "x)"));
        for (int n : footprintCounts()) {
            double r = footprintRatio("mrcache unbounded", n);
            sb.append(String.format(Locale.ROOT, "%-8d %-20s %-20s %-12s %-12s %8s %s%n", n,
                    bytes("mrcache unbounded", n), bytes("mrcache budget", n), bytes("UCX malloc", n),
                    bytes("UCX resident", n), Double.isNaN(r) ? "" : String.format(Locale.ROOT, "%.2fx", r),
                    Double.isNaN(r) ? "" : r <= FOOTPRINT_TARGET ? "yes" : "no"));
        }
    }

    private List<Integer> footprintCounts() {
        Set<Integer> n = new java.util.TreeSet<>();
        footprint.values().forEach(m -> n.addAll(m.keySet()));
        return List.copyOf(n);
    }

    private String bytes(String config, int n) {
        Double v = footprint.getOrDefault(config, Map.of()).get(n);
        return v == null ? "-" : String.format(Locale.ROOT, "%.1f", v);
    }

    private void steadyStateLine(StringBuilder sb) {
        if (curves.isEmpty()) {
            return;
        }
        List<String> unsettled = new ArrayList<>();
        java.util.TreeSet<Integer> lengths = new java.util.TreeSet<>();
        for (Map.Entry<String, List<SteadyState>> e : curves.entrySet()) {
            e.getValue().forEach(st -> lengths.add(st.curve().size()));
            long n = e.getValue().stream().filter(st -> !st.settled()).count();
            if (n > 0) {
                unsettled.add(e.getKey() + " (" + n + " of " + e.getValue().size() + ")");
            }
        }
        String of = lengths.size() == 1 ? String.valueOf(lengths.first()) : lengths.first() + " to " + lengths.last();
        sb.append(String.format(Locale.ROOT, "%nsteady state: every JMH score is the mean of the last %d of %s measured"
                + " iterations of its fork (the earlier ones are the warm-up curve, kept in --json); windows not"
                + " settled within %.0f%%: %s%n", steadyWindow, of, SteadyState.SETTLED_WITHIN * 100,
                unsettled.isEmpty() ? "none" : String.join(", ", unsettled)));
    }

    private static String ratioText(Series m, Series u) {
        double r = ratio("ns", m, u);
        return Double.isNaN(r) ? "" : String.format(Locale.ROOT, "%.2fx", r);
    }

    private static String stats(Series s) {
        return s == null ? "-" : s.stats();
    }

    private static String shares(List<Double> shares) {
        if (shares.isEmpty()) {
            return "-";
        }
        List<String> out = new ArrayList<>();
        for (double s : shares) {
            out.add(Double.isNaN(s) ? "?" : String.format(Locale.ROOT, "%.0f%%", s * 100));
        }
        return String.join(" ", out);
    }

    /** The same results as a JSON-ready map. */
    public Map<String, Object> json() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("repeats", mineShares.size());
        out.put("disturbedAbove", CpuShare.DISTURBED_ABOVE);
        out.put("othersShare", Map.of("mrcache", mineShares, "ucx", ucxShares));
        List<Object> rows = new ArrayList<>();
        for (String[] row : ROWS) {
            Series m = mine.get(row[0]);
            Series u = ucx.get(ucxName(row));
            double r = ratio(row[2], m, u);
            Map<String, Object> j = new LinkedHashMap<>();
            j.put("workload", row[1]);
            j.put("benchmark", row[0]);
            j.put("unit", "ns per op per thread");
            j.put("mrcache", values(m));
            j.put("ucx", values(u));
            j.put("ratio", r);
            j.put("ratioKind", row[2].equals("tput") ? "ucx/mrcache ns (throughput)" : "mrcache/ucx ns");
            j.put("target", row[3]);
            j.put("met", met(row, m, r));
            j.put("curves", curvesJson(row[0]));
            rows.add(j);
        }
        out.put("rows", rows);
        List<Object> scaling = new ArrayList<>();
        for (int n : SCALE) {
            Map<String, Object> j = new LinkedHashMap<>();
            j.put("regions", n);
            j.put("hitMrcache", values(mine.get("scaleHit:" + n)));
            j.put("hitUcx", values(ucx.get("scaleHit:" + n)));
            j.put("missMrcache", values(mine.get("scaleMiss:" + n)));
            j.put("missUcx", values(ucx.get("scaleMiss:" + n)));
            double hr = ratio("ns", mine.get("scaleHit:" + n), ucx.get("scaleHit:" + n));
            double mr = ratio("ns", mine.get("scaleMiss:" + n), ucx.get("scaleMiss:" + n));
            j.put("hitRatio", hr);
            j.put("hitTarget", SCALE_HIT_TARGET);
            j.put("hitMet", hr <= SCALE_HIT_TARGET);
            j.put("missRatio", mr);
            j.put("missTarget", SCALE_MISS_TARGET);
            j.put("missMet", mr <= SCALE_MISS_TARGET);
            j.put("hitCurves", curvesJson("scaleHit:" + n));
            j.put("missCurves", curvesJson("scaleMiss:" + n));
            scaling.add(j);
        }
        out.put("scaling", scaling);
        List<Object> memory = new ArrayList<>();
        for (int n : footprintCounts()) {
            Map<String, Object> j = new LinkedHashMap<>();
            j.put("regions", n);
            for (String config : footprint.keySet()) {
                j.put(config, footprint.get(config).getOrDefault(n, Double.NaN));
            }
            double r = footprintRatio("mrcache unbounded", n);
            j.put("ratio", r);
            j.put("target", FOOTPRINT_TARGET);
            j.put("met", r <= FOOTPRINT_TARGET);
            memory.add(j);
        }
        out.put("bytesPerRegion", memory);
        out.put("steadyWindow", steadyWindow);
        out.put("settledWithin", SteadyState.SETTLED_WITHIN);
        Map<String, Object> lat = new LinkedHashMap<>();
        for (String q : W6_PERCENTILES) {
            lat.put("p" + q, values(w6.get(q)));
        }
        out.put("w6HitLatencyNs", lat);
        out.put("w6Attribution", w6Attribution);
        out.put("allocationBytesPerHit", allocationPerHit);
        out.put("allocationBytesBaseline", allocationBaseline);
        out.put("allocationBytesLastIterationWithTeardown", allocationLastIteration);
        out.put("allocationNsPerHit", hitNanos);
        out.put("allocationNsPerBaselineOp", baselineNanos);
        out.put("allocationBytesPerHitBeyondBackground", allocationBeyondBackground());
        out.put("checks", checksJson());
        Map<String, Object> control = new LinkedHashMap<>();
        control.put("w4Mixed2tOwnCache", values(mine.get("w4Mixed2tOwnCache")));
        control.put("perThreadCostAgainstOneThread", w4CostAgainstOneThread("w4Mixed2tOwnCache"));
        out.put("w4TwoThreadsOwnCaches", control);
        out.put("notes", List.copyOf(notes));
        return out;
    }

    /** Each repeat's curve of {@code name}: every iteration's score and whether its window settled. */
    private List<Object> curvesJson(String name) {
        List<Object> out = new ArrayList<>();
        for (SteadyState st : curves.getOrDefault(name, List.of())) {
            Map<String, Object> j = new LinkedHashMap<>();
            j.put("iterations", st.curve());
            j.put("steady", st.score());
            j.put("settled", st.settled());
            out.add(j);
        }
        return out;
    }

    private static Map<String, Object> values(Series s) {
        Map<String, Object> j = new LinkedHashMap<>();
        j.put("values", s == null ? List.of() : s.all());
        j.put("kept", s == null ? List.of() : s.kept());
        j.put("median", s == null ? Double.NaN : s.median());
        return j;
    }
}
