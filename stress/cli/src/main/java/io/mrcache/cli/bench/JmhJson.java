package io.mrcache.cli.bench;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Reads the file JMH writes with {@code -rf json}. */
public final class JmhJson {
    private JmhJson() {
    }

    /**
     * One benchmark's result: its score, its percentiles (sample mode), secondary metrics by name, and the
     * score of each measured iteration of its first fork, in order (the warm-up curve when a run measures
     * every iteration; empty when JMH wrote none).
     */
    public record Result(double score, Map<String, Double> percentiles, Map<String, Result> secondary,
            List<Double> iterations) {
        public Result(double score, Map<String, Double> percentiles, Map<String, Result> secondary) {
            this(score, percentiles, secondary, List.of());
        }

        /** The secondary metric whose name ends with {@code suffix} (JMH's gc profiler prefixes some). */
        public Result secondaryEndingWith(String suffix) {
            for (Map.Entry<String, Result> e : secondary.entrySet()) {
                if (e.getKey().endsWith(suffix)) {
                    return e.getValue();
                }
            }
            throw new IllegalStateException("no secondary metric ending with " + suffix + " in " + secondary.keySet());
        }

        /**
         * The mean of the measured iterations before the last: the last one of a trial also runs its
         * {@code @TearDown}, which JMH's profilers count with it.
         *
         * @throws IllegalStateException when fewer than two iterations were recorded
         */
        public double meanBeforeLast() {
            if (iterations.size() < 2) {
                throw new IllegalStateException("needs at least two measured iterations, has " + iterations
                        + ": run JMH with -i 2 or more");
            }
            return iterations.subList(0, iterations.size() - 1).stream().mapToDouble(Double::doubleValue).average()
                    .orElseThrow();
        }
    }

    /**
     * Results by short name: the method name, then {@code :value} for each parameter (as in
     * {@code scaleHit:1024}).
     */
    public static Map<String, Result> read(Path file) throws IOException {
        Map<String, Result> out = new LinkedHashMap<>();
        JsonArray runs = JsonParser.parseString(Files.readString(file)).getAsJsonArray();
        for (JsonElement e : runs) {
            JsonObject run = e.getAsJsonObject();
            String benchmark = run.get("benchmark").getAsString();
            StringBuilder name = new StringBuilder(benchmark.substring(benchmark.lastIndexOf('.') + 1));
            if (run.has("params")) {
                for (Map.Entry<String, JsonElement> p : run.getAsJsonObject("params").entrySet()) {
                    name.append(':').append(p.getValue().getAsString());
                }
            }
            Map<String, Result> secondary = new LinkedHashMap<>();
            if (run.has("secondaryMetrics")) {
                for (Map.Entry<String, JsonElement> m : run.getAsJsonObject("secondaryMetrics").entrySet()) {
                    secondary.put(m.getKey(), metric(m.getValue().getAsJsonObject(), Map.of()));
                }
            }
            out.put(name.toString(), metric(run.getAsJsonObject("primaryMetric"), secondary));
        }
        return out;
    }

    private static Result metric(JsonObject m, Map<String, Result> secondary) {
        Map<String, Double> percentiles = new LinkedHashMap<>();
        if (m.has("scorePercentiles")) {
            for (Map.Entry<String, JsonElement> p : m.getAsJsonObject("scorePercentiles").entrySet()) {
                percentiles.put(p.getKey(), p.getValue().getAsDouble());
            }
        }
        List<Double> iterations = new ArrayList<>();
        if (m.has("rawData") && !m.getAsJsonArray("rawData").isEmpty()) {
            for (JsonElement v : m.getAsJsonArray("rawData").get(0).getAsJsonArray()) {
                iterations.add(v.getAsDouble());
            }
        }
        return new Result(m.get("score").getAsDouble(), percentiles, secondary, List.copyOf(iterations));
    }
}
