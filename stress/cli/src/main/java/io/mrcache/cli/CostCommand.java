package io.mrcache.cli;

import io.mrcache.cli.cost.ChartSvg;
import io.mrcache.cli.cost.RegistrationCalibrator;
import io.mrcache.core.cost.NetworkModel;
import io.mrcache.core.cost.RegistrationCostModel;
import io.mrcache.core.cost.Savings;
import io.mrcache.verbs.registrar.DefaultRegistrar;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine;

/** The message-time model and what caching registrations saves. */
@Command(name = "cost", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Compute message time on a link, and what caching registrations saves per message size.",
            "T = latency + bytes / (link_gbps * 1e9 / 8 * efficiency / oversubscription); --what-if prints the"
                    + " savings table."},
        exitCodeListHeading = "%nExit status:%n",
        exitCodeList = {"0:printed", "2:invalid options, or the chart file cannot be written"},
        footer = {"", "Examples:", "  ./mrcache cost --bytes 4e9 --link-gbps 400 --efficiency 0.8 --oversubscription 2"
                + " --latency-us 5", "  ./mrcache cost --what-if --calibrate --svg cost.svg"})
final class CostCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--bytes", description = "Message size in bytes (forms like 4e9 accepted).")
    Double bytes;

    @Option(names = "--link-gbps", defaultValue = "400", description = "Nominal link rate, Gb/s (default ${DEFAULT-VALUE}).")
    double linkGbps;

    @Option(names = "--efficiency", defaultValue = "1.0", description = "Protocol efficiency in (0, 1] (default ${DEFAULT-VALUE}).")
    double efficiency;

    @Option(names = "--oversubscription", defaultValue = "1.0", description = "Oversubscription ratio >= 1 (default ${DEFAULT-VALUE}).")
    double oversubscription;

    @Option(names = "--latency-us", defaultValue = "0", description = "Fixed latency in microseconds (default ${DEFAULT-VALUE}).")
    double latencyMicros;

    @Option(names = "--what-if", description = "Print the savings table over message sizes 4 KiB .. 4 GiB.")
    boolean whatIf;

    @Option(names = "--reuses", defaultValue = "10",
            description = "Uses of each buffer over its life, for --what-if: the hit ratio is (reuses-1)/reuses unless"
                    + " --hit-ratio is given (default ${DEFAULT-VALUE}).")
    double reuses;

    @Option(names = "--hit-ratio", description = "Share of acquires that hit, in [0, 1] (overrides --reuses).")
    Double hitRatio;

    @Option(names = "--hit-ns", defaultValue = "50", description = "Cost of a cache hit in ns (default ${DEFAULT-VALUE}).")
    double hitNanos;

    @Option(names = "--invalidate-us", defaultValue = "1",
            description = "Cost a cached buffer's free adds for its invalidation, us (default ${DEFAULT-VALUE}).")
    double invalidateMicros;

    @Option(names = "--calibrate", description = "Measure registration cost here first (simulated HCA or RDMA device).")
    boolean calibrate;

    @Option(names = "--svg", paramLabel = "FILE", description = "Write a chart of message time against size.")
    Path svg;

    @Option(names = "--json", description = "Print one JSON object instead of text.")
    boolean json;

    private final Map<String, Object> jsonOut = new LinkedHashMap<>();

    /** Below zero, or a negative zero ("-0" is no size or time a user means). */
    private static boolean negative(double v) {
        return Double.compare(v, 0.0) < 0;
    }

    @Override
    public Integer call() throws IOException {
        if (bytes != null && (bytes != Math.rint(bytes) || negative(bytes))) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--bytes " + bytes
                    + ": a message size is a whole number of bytes >= 0 (4e9 is fine, 4.5 is not)");
        }
        if (negative(latencyMicros)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--latency-us " + latencyMicros
                    + ": a latency in microseconds must be >= 0");
        }
        if (negative(hitNanos)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--hit-ns " + hitNanos
                    + ": the cost of a hit in nanoseconds must be >= 0");
        }
        if (negative(invalidateMicros)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--invalidate-us " + invalidateMicros
                    + ": the cost of an invalidation in microseconds must be >= 0");
        }
        if (hitRatio != null && !(hitRatio >= 0 && hitRatio <= 1)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--hit-ratio " + hitRatio
                    + ": a share of acquires, in [0, 1]");
        }
        NetworkModel net;
        try {
            net = new NetworkModel(linkGbps, efficiency, oversubscription, latencyMicros * 1e-6);
            if (bytes != null) {
                net.messageTime(bytes);
            }
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), "invalid value: " + e.getMessage().replace(
                    "link_gbps", "--link-gbps").replace("latency", "--latency-us") + "; see --help");
        }
        if (!(reuses >= 1)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "invalid value: --reuses must be >= 1 (got "
                    + reuses + ")");
        }
        if (bytes == null && !whatIf && svg == null) {
            throw new CommandLine.ParameterException(spec.commandLine(), "give --bytes N, --what-if or --svg FILE");
        }
        if (bytes != null && json) {
            jsonOut.put("bytes", bytes.longValue());
            jsonOut.put("messageSeconds", net.messageTime(bytes));
            jsonOut.put("effectiveBytesPerSecond", net.effectiveBytesPerSecond());
        } else if (bytes != null) {
            System.out.printf("message of %,.0f bytes: %.9g s (effective bandwidth %.4g GB/s = link %.4g Gb/s x %.3g"
                    + " efficiency / %.3g oversubscription)%n", bytes, net.messageTime(bytes),
                    net.effectiveBytesPerSecond() / 1e9, linkGbps, efficiency, oversubscription);
        }
        if (!whatIf && svg == null) {
            if (json) {
                System.out.println(Json.write(jsonOut));
            }
            return 0;
        }
        RegistrationCostModel reg = RegistrationCostModel.defaults();
        if (calibrate) {
            DefaultRegistrar chosen = DefaultRegistrar.deviceOrSimulated();
            String name = chosen.why().replaceFirst(", because:.*", "");
            reg = RegistrationCalibrator.calibrate(chosen.registrar(), name, RegistrationCalibrator.DEFAULT_SIZES, 30,
                    line -> System.err.println("  " + line));
        }
        double h = hitRatio != null ? hitRatio : (reuses - 1) / reuses;
        Savings.WhatIf w;
        try {
            w = new Savings.WhatIf(net, reg, h, hitNanos * 1e-9, invalidateMicros * 1e-6);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), "invalid value: " + e.getMessage());
        }
        List<Savings.Row> rows = Savings.table(w);
        if (json) {
            jsonOut.put("registrationCost", reg.source());
            jsonOut.put("hitRatio", h);
            List<Map<String, Object>> table = new ArrayList<>();
            for (Savings.Row r : rows) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("bytes", r.bytes());
                m.put("networkSeconds", r.network());
                m.put("registrationSeconds", r.registration());
                m.put("withoutCacheSeconds", r.withoutCache());
                m.put("cacheHitSeconds", r.cacheHit());
                m.put("savingSeconds", r.saving());
                m.put("savingShare", r.savingShare());
                m.put("breakEvenUses", Savings.breakEvenUses(reg, r.bytes(), hitNanos * 1e-9, invalidateMicros * 1e-6));
                table.add(m);
            }
            jsonOut.put("whatIf", table);
        } else {
            System.out.println("registration cost: " + reg.source());
            System.out.println("  register:   " + reg.register());
            System.out.println("  deregister: " + reg.deregister());
            System.out.printf("link %.4g Gb/s, efficiency %.3g, oversubscription %.3g, latency %.3g us; hit ratio"
                    + " %.3f, hit %.0f ns%n%n", linkGbps, efficiency, oversubscription, latencyMicros, h, hitNanos);
        }
        if (whatIf && !json) {
            System.out.printf("%9s %12s %12s %12s %12s %12s %8s %11s %11s %9s%n", "size", "network", "reg+dereg",
                    "no cache", "cache hit", "saving/msg", "share", "GB/s none", "GB/s cache", "break-even");
            for (Savings.Row r : rows) {
                System.out.printf("%9s %12s %12s %12s %12s %12s %7.2f%% %11.3f %11.3f %9.2f%n", size(r.bytes()),
                        time(r.network()), time(r.registration()), time(r.withoutCache()), time(r.cacheHit()),
                        time(r.saving()), r.savingShare() * 100, r.bandwidthWithoutCache() / 1e9,
                        r.bandwidthWithCache() / 1e9, Savings.breakEvenUses(reg, r.bytes(), hitNanos * 1e-9,
                                invalidateMicros * 1e-6));
            }
            System.out.println("\nbreak-even: uses of one buffer after which caching it costs less than registering"
                    + " per use.");
        }
        if (svg != null) {
            try {
                Files.writeString(svg, ChartSvg.render(rows, String.format(Locale.ROOT, "Message time against message size,"
                        + " on a %s Gb/s link, efficiency %s, oversubscription %s, latency %s us; hit ratio %.2f",
                        plain(linkGbps), plain(efficiency), plain(oversubscription), plain(latencyMicros), h)));
            } catch (IOException e) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--svg " + svg + ": cannot write the"
                        + " chart there (" + e.getClass().getSimpleName() + ": " + e.getMessage() + ")");
            }
            if (json) {
                jsonOut.put("chart", svg.toAbsolutePath().toString());
            } else {
                System.out.println("chart written to " + svg.toAbsolutePath());
            }
        }
        if (json) {
            System.out.println(Json.write(jsonOut));
        }
        return 0;
    }

    /** A number as a person writes it: 400, 0.8, 2.5 (no trailing zeros, no exponent). */
    static String plain(double v) {
        return java.math.BigDecimal.valueOf(v).stripTrailingZeros().toPlainString();
    }

    static String time(double s) {
        if (s >= 1) {
            return String.format("%.3f s", s);
        }
        if (s >= 1e-3) {
            return String.format("%.3f ms", s * 1e3);
        }
        if (s >= 1e-6) {
            return String.format("%.3f us", s * 1e6);
        }
        return String.format("%.1f ns", s * 1e9);
    }

    static String size(long n) {
        if (n >= 1L << 30) {
            return (n >> 30) + " GiB";
        }
        if (n >= 1L << 20) {
            return (n >> 20) + " MiB";
        }
        return (n >> 10) + " KiB";
    }
}
