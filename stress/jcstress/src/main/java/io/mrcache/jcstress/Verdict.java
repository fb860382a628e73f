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
 * match tests. Exits non-zero otherwise. A broken variant that showed nothing is run again alone, at most
 * {@value #RERUNS} times (its window may be too narrow for one quick run to sample); a real race never is.
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
        Observed first = observe(java, jar, mode, filter, Path.of("jcstress-" + mode + ".log"));
        Set<String> caught = new TreeSet<>(first.forbidden);
        boolean errors = first.errors;
        // A broken variant's window can be a few instructions wide, and a quick run samples it only so often: one
        // that showed nothing is run again alone, up to RERUNS times, until it shows its FORBIDDEN outcome. A real
        // race is never run again: one FORBIDDEN outcome in it is a failure.
        for (String t : tests) {
            for (int rerun = 1; isBroken(t) && !caught.contains(t) && rerun <= RERUNS; rerun++) {
                String name = t.substring(t.lastIndexOf('.', t.lastIndexOf('.') - 1) + 1);
                Path log = Path.of("jcstress-" + mode + "-" + name + "-rerun" + rerun + ".log");
                System.out.println("jcstress verdict: the broken variant " + name + " showed no FORBIDDEN outcome;"
                        + " running it again alone (" + rerun + " of " + RERUNS + ")");
                Observed again = observe(java, jar, mode, "^" + Pattern.quote(t) + "$", log);
                errors |= again.errors;
                if (again.forbidden.contains(t)) {
                    caught.add(t);
                    System.out.println("jcstress verdict: " + name + " caught on rerun " + rerun + " (" + log + ")");
                }
            }
        }
        int bad = 0;
        System.out.printf("%-62s %-10s %s%n", "test", "expected", "observed");
        for (String t : tests) {
            boolean broken = isBroken(t);
            boolean sawForbidden = caught.contains(t);
            boolean ok = broken == sawForbidden;
            bad += ok ? 0 : 1;
            System.out.printf("%-62s %-10s %s%s%n", t, broken ? "FORBIDDEN" : "pass",
                    sawForbidden ? "FORBIDDEN" : "pass", ok ? "" : "   <-- WRONG");
        }
        Path log = Path.of("jcstress-" + mode + ".log");
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

    /** How many times a broken variant that showed nothing is run again alone before the verdict fails. */
    static final int RERUNS = 2;

    /** The variants that must show a FORBIDDEN outcome: Broken, SweepBroken, SumFirstBroken, ... */
    static boolean isBroken(String test) {
        return test.substring(test.lastIndexOf('.') + 1).endsWith("Broken");
    }

    /** What one jcstress run showed: the tests with a FORBIDDEN outcome, and whether any test errored. */
    record Observed(Set<String> forbidden, boolean errors) {
    }

    private static Observed observe(String java, String jar, String mode, String filter, Path log)
            throws IOException, InterruptedException {
        List<String> out = run(List.of(java, "--enable-native-access=ALL-UNNAMED", "-jar", jar, "-m", mode, "-sc",
                "false", "-t", filter), log);
        return observed(out);
    }

    static Observed observed(List<String> out) {
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
        return new Observed(failed, errors);
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
