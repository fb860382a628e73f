package io.mrcache.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A consumer of the library as JPMS modules: a module that requires {@code io.mrcache.verbs}, compiled and run
 * on the module path (the built core and ffm-verbs, Caffeine, HdrHistogram), builds a cache over an explicitly
 * chosen registrar as the README shows; and a module that imports the non-exported native helpers does not
 * compile.
 */
class ModulePathConsumerTest {
    static final String MAIN = """
            package consumer;

            import io.mrcache.core.Access;
            import io.mrcache.core.Lease;
            import io.mrcache.core.RegistrationCache;
            import io.mrcache.verbs.hooks.InvalidatingArena;
            import io.mrcache.verbs.registrar.DefaultRegistrar;
            import java.lang.foreign.MemorySegment;

            public class Main {
                public static void main(String[] args) {
                    DefaultRegistrar chosen = DefaultRegistrar.fromSystemProperty();
                    try (RegistrationCache cache = chosen.cacheBuilder().build();
                         InvalidatingArena arena = InvalidatingArena.ofShared(cache)) {
                        MemorySegment buffer = arena.allocate(16384, 4096);
                        try (Lease l = cache.acquire(buffer.address(), buffer.byteSize(), Access.LOCAL_WRITE)) {
                            System.out.println("module " + Main.class.getModule().getName() + " leased lkey 0x"
                                    + Integer.toHexString(l.lkey()) + " from " + RegistrationCache.class.getModule().getName());
                        }
                    }
                }
            }
            """;

    @Test
    void aModuleRequiringTheLibraryBuildsACacheAndCannotReachItsInternals() throws Exception {
        String modulePath = libraryModulePath();
        Path dir = Files.createTempDirectory("mrcache-consumer");
        Path src = dir.resolve("src");
        Files.createDirectories(src.resolve("consumer"));
        Files.writeString(src.resolve("module-info.java"), "module consumer { requires io.mrcache.verbs; }");
        Files.writeString(src.resolve("consumer/Main.java"), MAIN);
        String javac = Path.of(System.getProperty("java.home"), "bin", "javac").toString();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String[] compiled = run(javac, "--module-path", modulePath, "-d", dir.resolve("out").toString(),
                src.resolve("module-info.java").toString(), src.resolve("consumer/Main.java").toString());
        assertEquals("0", compiled[0], "the consumer does not compile on the module path:\n" + compiled[1]);
        String[] ran = run(java, "--module-path", modulePath + File.pathSeparator + dir.resolve("out"),
                "--enable-native-access=io.mrcache.verbs", "-Dmrcache.registrar=simulated", "-m", "consumer/consumer.Main");
        assertEquals("0", ran[0], ran[1]);
        assertTrue(ran[1].contains("module consumer leased lkey 0x") && ran[1].contains("from io.mrcache.core"), ran[1]);
        assertTrue(ran[1].contains("SIMULATED HCA"), "the simulated registrar says so: " + ran[1]);

        Files.writeString(src.resolve("consumer/Sneaky.java"),
                "package consumer; class Sneaky { long p = io.mrcache.verbs.internal.Libc.pageSize(); }");
        String[] sneaky = run(javac, "--module-path", modulePath, "-d", dir.resolve("out2").toString(),
                src.resolve("module-info.java").toString(), src.resolve("consumer/Sneaky.java").toString());
        assertTrue(!sneaky[0].equals("0") && sneaky[1].contains("is not visible"),
                "io.mrcache.verbs.internal is not exported: " + sneaky[1]);
    }

    /** The built library modules and what they need at run time, from this test's class path. */
    private static String libraryModulePath() {
        List<String> entries = new ArrayList<>();
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            String n = e.replace('\\', '/');
            if (n.contains("/core/target/") || n.contains("mrcache-core") || n.contains("/ffm-verbs/target/")
                    || n.contains("mrcache-ffm-verbs") || n.contains("/caffeine/") || n.contains("HdrHistogram")) {
                entries.add(e);
            }
        }
        assertTrue(entries.size() >= 4, "core, ffm-verbs, Caffeine and HdrHistogram on the class path: " + entries);
        return String.join(File.pathSeparator, entries);
    }

    private static String[] run(String... command) throws Exception {
        Process p = new ProcessBuilder(Arrays.asList(command)).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("timed out: " + String.join(" ", command));
        }
        return new String[] {String.valueOf(p.exitValue()), out};
    }
}
