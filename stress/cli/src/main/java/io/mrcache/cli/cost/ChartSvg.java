package io.mrcache.cli.cost;

import io.mrcache.core.cost.Savings;
import java.util.List;
import java.util.Locale;

/**
 * An SVG chart of message time against message size (both axes logarithmic) for three series: register per
 * message (no cache), cache hit, and the network alone. Self-contained, readable in any browser.
 */
public final class ChartSvg {
    private static final int W = 760;
    private static final int H = 480;
    private static final int LEFT = 90;
    private static final int RIGHT = 180;
    private static final int TOP = 50;
    private static final int BOTTOM = 60;

    private ChartSvg() {
    }

    public static String render(List<Savings.Row> rows, String title) {
        double minX = Math.log10(rows.get(0).bytes());
        double maxX = Math.log10(rows.get(rows.size() - 1).bytes());
        double minY = Double.MAX_VALUE;
        double maxY = 0;
        for (Savings.Row r : rows) {
            minY = Math.min(minY, Math.min(r.network(), r.cacheHit()));
            maxY = Math.max(maxY, r.withoutCache());
        }
        double y0 = Math.floor(Math.log10(minY));
        double y1 = Math.ceil(Math.log10(maxY));
        StringBuilder svg = new StringBuilder();
        svg.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
                + " viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n", W, H, W, H));
        svg.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
        svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"28\" font-size=\"16\">%s</text>%n", LEFT, escape(title)));
        int plotW = W - LEFT - RIGHT;
        int plotH = H - TOP - BOTTOM;
        // grid and axis labels: decades of time, powers of four of size
        for (double d = y0; d <= y1; d++) {
            double y = TOP + plotH - (d - y0) / (y1 - y0) * plotH;
            svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>%n",
                    LEFT, y, LEFT + plotW, y));
            svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n", LEFT - 6,
                    y + 4, seconds(Math.pow(10, d))));
        }
        for (Savings.Row r : rows) {
            double x = LEFT + (Math.log10(r.bytes()) - minX) / (maxX - minX) * plotW;
            svg.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>%n",
                    x, TOP, x, TOP + plotH));
            svg.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>%n", x,
                    TOP + plotH + 18, bytes(r.bytes())));
        }
        svg.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\""
                + " stroke=\"#333\"/>%n", LEFT, TOP, plotW, plotH));
        svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">message size</text>%n",
                LEFT + plotW / 2, H - 18));
        svg.append(String.format(Locale.ROOT, "<text transform=\"translate(20,%d) rotate(-90)\" text-anchor=\"middle\">"
                + "time per message</text>%n", TOP + plotH / 2));
        String[][] series = {{"no-cache", "register per message", "#c0392b"}, {"cache-hit", "cache hit", "#2471a3"},
            {"network", "network alone", "#7f8c8d"}};
        for (int s = 0; s < series.length; s++) {
            StringBuilder points = new StringBuilder();
            for (Savings.Row r : rows) {
                double v = s == 0 ? r.withoutCache() : s == 1 ? r.cacheHit() : r.network();
                double x = LEFT + (Math.log10(r.bytes()) - minX) / (maxX - minX) * plotW;
                double y = TOP + plotH - (Math.log10(v) - y0) / (y1 - y0) * plotH;
                points.append(String.format(Locale.ROOT, "%.1f,%.1f ", x, y));
            }
            svg.append(String.format(Locale.ROOT, "<polyline id=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s"
                    + " points=\"%s\"><title>%s</title></polyline>%n", series[s][0], series[s][2],
                    s == 2 ? " stroke-dasharray=\"5,4\"" : "", points.toString().trim(), series[s][1]));
            int ly = TOP + 20 + s * 22;
            svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\""
                    + " stroke-width=\"2\"/><text x=\"%d\" y=\"%d\">%s</text>%n", LEFT + plotW + 12, ly,
                    LEFT + plotW + 36, ly, series[s][2], LEFT + plotW + 42, ly + 4, series[s][1]));
        }
        svg.append("</svg>\n");
        return svg.toString();
    }

    static String seconds(double s) {
        if (s >= 1) {
            return String.format(Locale.ROOT, "%.0f s", s);
        }
        if (s >= 1e-3) {
            return String.format(Locale.ROOT, "%.0f ms", s * 1e3);
        }
        if (s >= 1e-6) {
            return String.format(Locale.ROOT, "%.0f us", s * 1e6);
        }
        return String.format(Locale.ROOT, "%.0f ns", s * 1e9);
    }

    static String bytes(long n) {
        if (n >= 1L << 30) {
            return (n >> 30) + " GiB";
        }
        if (n >= 1L << 20) {
            return (n >> 20) + " MiB";
        }
        return (n >> 10) + " KiB";
    }

    private static String escape(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }
}
