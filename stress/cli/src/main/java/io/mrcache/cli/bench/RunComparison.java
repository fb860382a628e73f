package io.mrcache.cli.bench;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * Two runs of {@code ./mrcache bench --vs-ucx --json} side by side: whether each ratio of the first run is
 * reproduced by the second within {@value #AGREEMENT} (the reproducibility the comparison table promises), and,
 * for each run, how far that row's own repeats spread. Each repeat runs a row's two sides back to back, so
 * the ratio of one repeat's pair is a measurement of its own; when the pairs of one run already differ by
 * more than the agreement allows, a second run cannot be expected to land within it, and the line says so.
 */
public final class RunComparison {
    /** Two runs agree on a ratio when the second is within this fraction of the first. */
    public static final double AGREEMENT = 0.15;

    /**
     * One ratio in both runs: the ratio of medians each run reports, and the spread of each run's per-repeat
     * ratios (largest over smallest; 1 when a run has one repeat).
     */
    public record Line(String name, double first, double second, double firstSpread, double secondSpread) {
        /** The second run's ratio against the first's, as a signed fraction. */
        public double change() {
            return second / first - 1;
        }

        public boolean agrees() {
            return Math.abs(change()) <= AGREEMENT;
        }

        /** Whether either run's own repeats differ by more than the agreement allows. */
        public boolean repeatsSpreadWider() {
            return firstSpread > 1 + AGREEMENT || secondSpread > 1 + AGREEMENT;
        }
    }

    private final List<Line> lines;

    private RunComparison(List<Line> lines) {
        this.lines = List.copyOf(lines);
    }

    public List<Line> lines() {
        return lines;
    }

    /** Reads two files written by {@code bench --json}. */
    public static RunComparison read(Path first, Path second) throws IOException {
        return of(parse(first), parse(second));
    }

    private static JsonObject parse(Path file) throws IOException {
        JsonElement e;
        try {
            e = JsonParser.parseString(Files.readString(file));
        } catch (RuntimeException bad) {
            throw new IllegalArgumentException(file + " is not JSON (" + bad.getMessage()
                    + "): give two files written by ./mrcache bench --vs-ucx --json", bad);
        }
        if (!e.isJsonObject() || !e.getAsJsonObject().has("rows") || !e.getAsJsonObject().has("scaling")) {
            throw new IllegalArgumentException(file + " has no \"rows\" and \"scaling\": give two files written by"
                    + " ./mrcache bench --vs-ucx --json");
        }
        return e.getAsJsonObject();
    }

    /** The ratios both runs report: the comparison rows, the scaling table's hits and misses, W4's cost. */
    static RunComparison of(JsonObject first, JsonObject second) {
        List<Line> lines = new ArrayList<>();
        JsonArray rowsB = second.getAsJsonArray("rows");
        for (JsonElement ea : first.getAsJsonArray("rows")) {
            JsonObject a = ea.getAsJsonObject();
            JsonObject b = find(rowsB, "benchmark", a.get("benchmark").getAsString());
            if (b == null || !isNumber(a, "ratio") || !isNumber(b, "ratio")) {
                continue; // W5 is an absolute target; a row without UCX's side has no ratio
            }
            lines.add(new Line(a.get("workload").getAsString(), a.get("ratio").getAsDouble(),
                    b.get("ratio").getAsDouble(), spread(a.getAsJsonObject("mrcache"), a.getAsJsonObject("ucx")),
                    spread(b.getAsJsonObject("mrcache"), b.getAsJsonObject("ucx"))));
        }
        JsonArray scaleB = second.getAsJsonArray("scaling");
        for (JsonElement ea : first.getAsJsonArray("scaling")) {
            JsonObject a = ea.getAsJsonObject();
            JsonObject b = find(scaleB, "regions", a.get("regions").getAsString());
            if (b == null) {
                continue;
            }
            for (String side : new String[] {"hit", "miss"}) {
                if (!isNumber(a, side + "Ratio") || !isNumber(b, side + "Ratio")) {
                    continue;
                }
                lines.add(new Line(String.format(Locale.ROOT, "%s, %,d regions", side.equals("hit") ? "hits"
                        : "miss+invalidate", a.get("regions").getAsInt()), a.get(side + "Ratio").getAsDouble(),
                        b.get(side + "Ratio").getAsDouble(),
                        spread(a.getAsJsonObject(side + "Mrcache"), a.getAsJsonObject(side + "Ucx")),
                        spread(b.getAsJsonObject(side + "Mrcache"), b.getAsJsonObject(side + "Ucx"))));
            }
        }
        Line w4 = w4Cost(first, second);
        if (w4 != null) {
            lines.add(w4);
        }
        return new RunComparison(lines);
    }

    /**
     * W4's cost per thread on two threads over one thread's, as each run's {@code checks} report it; its spread
     * from the two W4 rows' repeats.
     */
    private static @Nullable Line w4Cost(JsonObject first, JsonObject second) {
        JsonObject a1 = find(first.getAsJsonArray("rows"), "benchmark", "w4Mixed1t");
        JsonObject a2 = find(first.getAsJsonArray("rows"), "benchmark", "w4Mixed2t");
        JsonObject b1 = find(second.getAsJsonArray("rows"), "benchmark", "w4Mixed1t");
        JsonObject b2 = find(second.getAsJsonArray("rows"), "benchmark", "w4Mixed2t");
        JsonObject ca = w4CostCheck(first);
        JsonObject cb = w4CostCheck(second);
        if (a1 == null || a2 == null || b1 == null || b2 == null || ca == null || cb == null) {
            return null;
        }
        return new Line("W4 per thread, 2 threads against 1", ca.get("value").getAsDouble(),
                cb.get("value").getAsDouble(), spread(a2.getAsJsonObject("mrcache"), a1.getAsJsonObject("mrcache")),
                spread(b2.getAsJsonObject("mrcache"), b1.getAsJsonObject("mrcache")));
    }

    /** The run's entry for W4's two-thread cost in its {@code checks}, if it has one with a number. */
    private static @Nullable JsonObject w4CostCheck(JsonObject run) {
        JsonObject check = run.has("checks") ? find(run.getAsJsonArray("checks"), "name", BenchReport.W4_COST_CHECK)
                : null;
        return check != null && isNumber(check, "value") ? check : null;
    }

    /**
     * Largest over smallest of the per-repeat ratios of {@code top} over {@code bottom}, pairing the values by
     * repeat; 1 when there is one pair, NaN when there is none. The same for a throughput row, whose ratio is
     * the other way up: inverting every ratio leaves the largest over the smallest as it is.
     */
    static double spread(JsonObject top, JsonObject bottom) {
        JsonArray t = top.getAsJsonArray("values");
        JsonArray b = bottom.getAsJsonArray("values");
        double lo = Double.POSITIVE_INFINITY;
        double hi = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < Math.min(t.size(), b.size()); i++) {
            double r = t.get(i).getAsDouble() / b.get(i).getAsDouble();
            lo = Math.min(lo, r);
            hi = Math.max(hi, r);
        }
        return lo == Double.POSITIVE_INFINITY ? Double.NaN : hi / lo;
    }

    private static boolean isNumber(JsonObject o, String key) {
        JsonElement e = o.get(key);
        return e != null && e.isJsonPrimitive() && e.getAsJsonPrimitive().isNumber() && Double.isFinite(e.getAsDouble());
    }

    /** The object of {@code array} whose {@code key} reads {@code value}, or null. */
    private static @Nullable JsonObject find(JsonArray array, String key, String value) {
        for (JsonElement e : array) {
            JsonElement k = e.getAsJsonObject().get(key);
            if (k != null && k.getAsString().equals(value)) {
                return e.getAsJsonObject();
            }
        }
        return null;
    }

    /** How many ratios agree within {@value #AGREEMENT}. */
    public long agreeing() {
        return lines.stream().filter(Line::agrees).count();
    }

    /** A Markdown table, one line per ratio, and a summary. */
    public String markdown(String firstName, String secondName) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "| ratio | run %s | run %s | change | within %.0f%% | repeats' spread,"
                + " run %s / run %s |%n", firstName, secondName, AGREEMENT * 100, firstName, secondName));
        sb.append("|---|---|---|---|---|---|\n");
        for (Line l : lines) {
            sb.append(String.format(Locale.ROOT, "| %s | %.2fx | %.2fx | %+.0f%% | %s | %s / %s |%n", l.name(),
                    l.first(), l.second(), l.change() * 100, l.agrees() ? "yes" : "no", spreadText(l.firstSpread()),
                    spreadText(l.secondSpread())));
        }
        long apart = lines.size() - agreeing();
        long wide = lines.stream().filter(Line::repeatsSpreadWider).count();
        long apartWide = lines.stream().filter(l -> !l.agrees() && l.repeatsSpreadWider()).count();
        sb.append(String.format(Locale.ROOT, "%n%d of %d ratios within %.0f%%; in %d of the %d, the repeats of one run"
                + " alone spread by more than %.0f%%, %d of the %d outside among them%n", agreeing(), lines.size(),
                AGREEMENT * 100, wide, lines.size(), AGREEMENT * 100, apartWide, apart));
        return sb.toString();
    }

    private static String spreadText(double spread) {
        return Double.isNaN(spread) ? "-" : String.format(Locale.ROOT, "%+.0f%%", (spread - 1) * 100);
    }
}
