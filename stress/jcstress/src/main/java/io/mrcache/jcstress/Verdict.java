package io.mrcache.jcstress;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Runs the jcstress races and judges them: every real test must pass, every deliberately broken variant must
 * show a FORBIDDEN outcome (so each test is known to be able to fail), no test may error, and the filter must
 * match tests. Exits non-zero otherwise.
 *
 * <p>Usage: {@code Verdict <jcstress.jar> <mode> [test regexp]} (mode: sanity, quick, default, tough).
 */
public final class Verdict {
    private static final Pattern FORBIDDEN = Pattern.compile("^(io\\.mrcache\\.\\S+) \\[.*\\]: Observed forbidden state");

    public static void main(String[] args) throws IOException, InterruptedException {
        String jar = args[0];
        String mode = args.length > 1 ? args[1] : "quick";
        String filter = args.length > 2 ? args[2] : "io\\.mrcache\\.jcstress\\.races\\.Race.*";
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();

        List<String> listed = run(List.of(java, "-jar", jar, "-l", "-t", filter), null);
        Set<String> tests = new TreeSet<>();
        for (String line : listed) {
            String t = line.trim();
            if (t.startsWith("io.mrcache.")) {
                tests.add(t);
            }
        }
        if (tests.isEmpty() || listed.stream().anyMatch(l -> l.contains("No matching tests"))) {
            System.err.println("jcstress verdict: the filter '" + filter + "' matched no test");
            System.exit(1);
        }
        System.out.println("jcstress verdict: running " + tests.size() + " tests in " + mode + " mode");
        Path log = Path.of("jcstress-" + mode + ".log");
        List<String> out = run(List.of(java, "--enable-native-access=ALL-UNNAMED", "-jar", jar, "-m", mode, "-sc",
                "false", "-t", filter), log);
        Set<String> failed = new TreeSet<>();
        boolean errors = false;
        for (String line : out) {
            Matcher m = FORBIDDEN.matcher(line);
            if (m.find()) {
                failed.add(m.group(1));
            }
            if (line.contains("Error tests:") && !line.contains("No matches")) {
                errors = true;
            }
            if (line.startsWith("FATAL:")) { // e.g. more actors than this machine has CPUs: nothing ran
                System.out.println("jcstress: " + line);
                errors = true;
            }
        }
        int bad = 0;
        System.out.printf("%-62s %-10s %s%n", "test", "expected", "observed");
        for (String t : tests) {
            boolean broken = t.substring(t.lastIndexOf('.') + 1).endsWith("Broken"); // Broken, SweepBroken, ...
            boolean sawForbidden = failed.contains(t);
            boolean ok = broken == sawForbidden;
            bad += ok ? 0 : 1;
            System.out.printf("%-62s %-10s %s%s%n", t, broken ? "FORBIDDEN" : "pass",
                    sawForbidden ? "FORBIDDEN" : "pass", ok ? "" : "   <-- WRONG");
        }
        if (errors) {
            System.out.println("jcstress reported test errors (exceptions in a test): see " + log.toAbsolutePath());
            bad++;
        }
        if (bad > 0) {
            System.out.println("jcstress verdict: FAILED (" + bad + " wrong); full output in " + log.toAbsolutePath());
            System.exit(1);
        }
        System.out.println("jcstress verdict: every real race passed and every broken variant was caught");
    }

    private static List<String> run(List<String> command, Path log) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        List<String> lines = new ArrayList<>();
        Set<String> shown = new TreeSet<>();
        try (var reader = p.inputReader(StandardCharsets.UTF_8)) {
            for (String line; (line = reader.readLine()) != null;) {
                lines.add(line);
                // progress: the first result line of each test
                int at = line.indexOf("io.mrcache.");
                if (log != null && at >= 0 && (line.contains("[OK]") || line.contains("[FAILED]"))
                        && shown.add(line.substring(at).trim())) {
                    System.out.println(line.replaceAll("^\\.+ ", "  "));
                }
            }
        }
        p.waitFor();
        if (log != null) {
            Files.write(log, lines);
        }
        return lines;
    }
}
