package io.mrcache.cli;

import java.util.List;
import java.util.function.ToLongFunction;

/** The demos' side-by-side tables: one row of counts, a label and then one column per run. */
final class Columns {
    private Columns() {
    }

    /** Prints {@code label} in {@code labelWidth} characters, then each run's value, grouped, in {@code width}. */
    static <R> void row(List<R> runs, String label, ToLongFunction<R> value, int labelWidth, int width) {
        StringBuilder sb = new StringBuilder(String.format("%-" + labelWidth + "s", "  " + label));
        for (R r : runs) {
            sb.append(String.format(" %," + width + "d", value.applyAsLong(r)));
        }
        System.out.println(sb);
    }
}
