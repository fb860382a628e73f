package io.mrcache.cli.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * One measurement over the repeats of a run, each value with the share of the machine other processes took
 * while it was measured. Statistics use the undisturbed repeats, or all of them when every repeat was
 * disturbed (then {@link #allDisturbed()} says so).
 */
public final class Series {
    private record Sample(double value, double othersShare) {
    }

    private final List<Sample> samples = new ArrayList<>();

    public void add(double value, double othersShare) {
        samples.add(new Sample(value, othersShare));
    }

    public boolean isEmpty() {
        return samples.isEmpty();
    }

    /** The values the statistics use. */
    public List<Double> kept() {
        List<Double> clean = new ArrayList<>();
        for (Sample s : samples) {
            if (!CpuShare.disturbed(s.othersShare)) {
                clean.add(s.value);
            }
        }
        return clean.isEmpty() ? all() : clean;
    }

    public List<Double> all() {
        return samples.stream().map(Sample::value).toList();
    }

    public int disturbed() {
        return (int) samples.stream().filter(s -> CpuShare.disturbed(s.othersShare)).count();
    }

    public boolean allDisturbed() {
        return !samples.isEmpty() && disturbed() == samples.size();
    }

    public double median() {
        return median(kept());
    }

    /** min/median/max of the kept values, one decimal; "-" when there are none. */
    public String stats() {
        if (samples.isEmpty()) {
            return "-";
        }
        List<Double> s = new ArrayList<>(kept());
        s.sort(null);
        String out = String.format(Locale.ROOT, "%.1f/%.1f/%.1f", s.getFirst(), median(s), s.getLast());
        return disturbed() == 0 ? out : out + (allDisturbed() ? " (all disturbed)" : " (-" + disturbed() + ")");
    }

    /** The median of {@code v} (NaN when empty). */
    public static double median(List<Double> v) {
        if (v.isEmpty()) {
            return Double.NaN;
        }
        List<Double> s = new ArrayList<>(v);
        s.sort(null);
        int n = s.size();
        return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
    }
}
