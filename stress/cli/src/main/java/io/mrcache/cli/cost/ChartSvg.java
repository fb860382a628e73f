package io.mrcache.cli.cost;

import io.mrcache.core.cost.Savings;
import java.util.List;
import java.util.Locale;

/**
 * An SVG chart of message time against message size (both axes logarithmic) for four series: register per
 * message (no cache), with the cache at the run's hit ratio, every message a hit, and the network alone.
 * Self-contained, readable in any browser; each legend swatch is drawn with its series' colour, width and
 * dashes.
 */
public final class ChartSvg {
    private static final int W = 760;
    private static final int H = 480;
    private static final int LEFT = 90;
    private static final int RIGHT = 200;
    private static final int TOP = 60;
    private static final int BOTTOM = 60;

    private ChartSvg() {
    }

    /** The series drawn: id, legend label, colour, dash pattern (empty for a solid line). */
    private static final String[][] SERIES = {
        {"no-cache", "register per message (no cache)", "#c0392b", ""},
        {"hit-ratio", "with the cache, at the hit ratio", "#8e44ad", "8,3"},
        {"cache-hit", "every message a cache hit", "#2471a3", ""},
        {"network", "network alone (dots mark it)", "#000000", "2,3"},
    };

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
        int cut = title.indexOf(", ");
        String head = cut < 0 ? title : title.substring(0, cut);
        String sub = cut < 0 ? "" : title.substring(cut + 2);
        svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"24\" font-size=\"15\">%s</text>%n", LEFT,
                escape(head)));
        if (!sub.isEmpty()) {
            svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"42\" font-size=\"12\">%s</text>%n", LEFT,
                    escape(sub)));
        }
        int plotW = W - LEFT - RIGHT;
        int plotH = H - TOP - BOTTOM;
        // grid and axis labels: decades of time; sizes in powers of four, every other one labelled so none collide
        for (double d = y0; d <= y1; d++) {
            double y = TOP + plotH - (d - y0) / (y1 - y0) * plotH;
            svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>%n",
                    LEFT, y, LEFT + plotW, y));
            svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n", LEFT - 6,
                    y + 4, seconds(Math.pow(10, d))));
        }
        for (int i = 0; i < rows.size(); i++) {
            Savings.Row r = rows.get(i);
            double x = LEFT + (Math.log10(r.bytes()) - minX) / (maxX - minX) * plotW;
            svg.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>%n",
                    x, TOP, x, TOP + plotH));
            if (i % 2 == 0) {
                svg.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>%n",
                        x, TOP + plotH + 18, bytes(r.bytes())));
            }
        }
        svg.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\""
                + " stroke=\"#333\"/>%n", LEFT, TOP, plotW, plotH));
        svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">message size</text>%n",
                LEFT + plotW / 2, H - 14));
        svg.append(String.format(Locale.ROOT, "<text transform=\"translate(22,%d) rotate(-90)\" text-anchor=\"middle\">"
                + "time per message</text>%n", TOP + plotH / 2));
        StringBuilder markers = new StringBuilder();
        for (int s = 0; s < SERIES.length; s++) {
            StringBuilder points = new StringBuilder();
            for (Savings.Row r : rows) {
                double v = switch (s) {
                    case 0 -> r.withoutCache();
                    case 1 -> r.withCache();
                    case 2 -> r.cacheHit();
                    default -> r.network();
                };
                double x = LEFT + (Math.log10(r.bytes()) - minX) / (maxX - minX) * plotW;
                double y = TOP + plotH - (Math.log10(v) - y0) / (y1 - y0) * plotH;
                points.append(String.format(Locale.ROOT, "%.1f,%.1f ", x, y));
                if (s == SERIES.length - 1) { // the network line coincides with the hit line: mark its points
                    markers.append(String.format(Locale.ROOT, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>%n",
                            x, y, SERIES[s][2]));
                }
            }
            String dash = SERIES[s][3].isEmpty() ? "" : " stroke-dasharray=\"" + SERIES[s][3] + "\"";
            // later series are drawn thinner on top, so a series that coincides with another stays visible
            double width = 4.5 - s;
            svg.append(String.format(Locale.ROOT, "<polyline id=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\"%s"
                    + " points=\"%s\"><title>%s</title></polyline>%n", SERIES[s][0], SERIES[s][2], width, dash,
                    points.toString().trim(), SERIES[s][1]));
            int ly = TOP + 14 + s * 40;
            svg.append(String.format(Locale.ROOT, "<line class=\"swatch\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\""
                    + " stroke=\"%s\" stroke-width=\"%.1f\"%s/>%n", LEFT + plotW + 10, ly, LEFT + plotW + 40, ly,
                    SERIES[s][2], width, dash));
            String[] words = SERIES[s][1].split(" ");
            StringBuilder first = new StringBuilder();
            int k = 0;
            while (k < words.length && first.length() + words[k].length() < 18) {
                first.append(first.isEmpty() ? "" : " ").append(words[k++]);
            }
            String rest = String.join(" ", java.util.Arrays.copyOfRange(words, k, words.length));
            svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">%s</text>%n", LEFT + plotW + 46, ly + 4,
                    escape(first.toString())));
            if (!rest.isEmpty()) {
                svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">%s</text>%n", LEFT + plotW + 46,
                        ly + 18, escape(rest)));
            }
        }
        svg.append(markers);
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
