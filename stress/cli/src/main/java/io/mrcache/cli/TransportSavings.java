package io.mrcache.cli;

import io.mrcache.cli.bench.Series;
import io.mrcache.cli.cost.RegistrationCalibrator;
import io.mrcache.core.Access;
import io.mrcache.core.cost.RegistrationCostModel;
import io.mrcache.ucx.UcxRegistrar;
import io.mrcache.ucx.transport.UcxPeer;
import io.mrcache.ucx.transport.UcxSavings;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code bench --transport-savings}: what caching saves on the real transport (two JVMs, UCX through jucx), per
 * message size, beside the cost model's prediction from a registration cost calibrated on {@link UcxRegistrar}.
 */
final class TransportSavings {
    private TransportSavings() {
    }

    static int run(int repeats, boolean json) throws IOException, InterruptedException {
        RegistrationCostModel model;
        try (UcxRegistrar registrar = UcxRegistrar.open()) {
            model = RegistrationCalibrator.calibrate(registrar, "UcxRegistrar (ucp_mem_map with a packed remote key)",
                    UcxSavings.SIZES, 200, Access.LOCAL_WRITE | Access.REMOTE_WRITE, System.err::println);
        }
        List<UcxSavings.Row> rows = UcxSavings.run(repeats, UcxPeer::launch, System.err::println);
        if (json) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("model", model.source());
            out.put("registerFixedUs", model.register().fixedSeconds() * 1e6);
            out.put("registerPerPageUs", model.register().perPageSeconds() * 1e6);
            List<Object> list = new ArrayList<>();
            for (UcxSavings.Row r : rows) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("bytes", r.bytes());
                m.put("messages", r.messages());
                m.put("registeringRate", list(r.registeringRate(), 1));
                m.put("cachedRate", list(r.cachedRate(), 1));
                m.put("registeringP50Us", list(r.registeringP50(), 1e6));
                m.put("cachedP50Us", list(r.cachedP50(), 1e6));
                m.put("registrationInUseUs", list(r.registrationP50(), 1e6));
                m.put("modelSavingUs", model.roundTrip(r.bytes()) * 1e6);
                list.add(m);
            }
            out.put("rows", list);
            System.out.println(Json.write(out));
            return 0;
        }
        System.out.print(table(rows, model, repeats));
        return 0;
    }

    /** The table (also what docs/PERFORMANCE.md shows from one run). */
    static String table(List<UcxSavings.Row> rows, RegistrationCostModel model, int repeats) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format("Transport savings: one RDMA write per message by the peer JVM (UCX through jucx, software"
                + " RMA), one message at a time;%n%d repeats, each side %s; min / median / max of the repeats.%n",
                repeats, "alternating"));
        sb.append(String.format("Model: register %.2f us + %.4f us/page, deregister %.2f us + %.4f us/page (%s)%n%n",
                model.register().fixedSeconds() * 1e6, model.register().perPageSeconds() * 1e6,
                model.deregister().fixedSeconds() * 1e6, model.deregister().perPageSeconds() * 1e6, model.source()));
        sb.append("| size | msgs/s, register per message | msgs/s, cache hit | speed-up | latency p50, register per"
                + " message (us) | latency p50, cache hit (us) | saved per message (us) | register + deregister in use"
                + " (us) | model (us) | model vs in use | model vs saved |\n");
        sb.append("|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (UcxSavings.Row r : rows) {
            double[] saved = new double[r.registeringP50().length];
            for (int i = 0; i < saved.length; i++) {
                saved[i] = (r.registeringP50()[i] - r.cachedP50()[i]) * 1e6;
            }
            double measured = median(saved);
            double predicted = model.roundTrip(r.bytes()) * 1e6;
            double inUse = median(r.registrationP50()) * 1e6;
            sb.append(String.format("| %s | %s | %s | %.2fx | %s | %s | %s | %s | %.1f | %+.0f%% | %+.0f%% |%n",
                    size(r.bytes()), mmm(r.registeringRate(), 1, "%,.0f"), mmm(r.cachedRate(), 1, "%,.0f"),
                    median(r.cachedRate()) / median(r.registeringRate()), mmm(r.registeringP50(), 1e6, "%.1f"),
                    mmm(r.cachedP50(), 1e6, "%.1f"), mmm(saved, 1, "%.1f"), mmm(r.registrationP50(), 1e6, "%.1f"),
                    predicted, (predicted - inUse) / inUse * 100, (predicted - measured) / measured * 100));
        }
        return sb.toString();
    }

    private static String size(long bytes) {
        return bytes >= 1 << 20 ? (bytes >> 20) + " MiB" : (bytes >> 10) + " KiB";
    }

    private static String mmm(double[] v, double scale, String format) {
        double[] s = scale(v, scale);
        Arrays.sort(s);
        return String.format(format + " / " + format + " / " + format, s[0], median(s), s[s.length - 1]);
    }

    /** One value per repeat, scaled, as a JSON array. */
    private static List<Double> list(double[] v, double by) {
        return Arrays.stream(scale(v, by)).boxed().toList();
    }

    private static double[] scale(double[] v, double by) {
        double[] out = new double[v.length];
        for (int i = 0; i < v.length; i++) {
            out[i] = v[i] * by;
        }
        return out;
    }

    private static double median(double[] values) {
        return Series.median(Arrays.stream(values).boxed().toList());
    }
}
