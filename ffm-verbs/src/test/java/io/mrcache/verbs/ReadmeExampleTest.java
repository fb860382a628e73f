package io.mrcache.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;

/** The README's embedding example compiles as written, and runs on the simulated HCA. */
class ReadmeExampleTest {

    @Test
    void theReadmeExampleCompilesAndRuns() throws Exception {
        Path readme = Path.of(System.getProperty("user.dir")).resolveSibling("README.md");
        String text = Files.readString(readme);
        int begin = text.indexOf("<!-- example:begin -->");
        int end = text.indexOf("<!-- example:end -->");
        assertTrue(begin >= 0 && end > begin, "the README marks its example");
        String block = text.substring(begin, end);
        String source = block.substring(block.indexOf("```java") + 7, block.lastIndexOf("```"));
        Path dir = Files.createTempDirectory("readme-example");
        Files.writeString(dir.resolve("Transport.java"), source);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        ByteArrayOutputStream errors = new ByteArrayOutputStream();
        int rc = javac.run(null, null, errors, "-d", dir.toString(), "-cp", System.getProperty("java.class.path"),
                dir.resolve("Transport.java").toString());
        assertEquals(0, rc, "the README example does not compile:\n" + errors.toString(StandardCharsets.UTF_8));

        String before = System.getProperty("mrcache.registrar");
        PrintStream out = System.out;
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        System.setProperty("mrcache.registrar", "simulated");
        try (URLClassLoader loader = new URLClassLoader(new java.net.URL[] {dir.toUri().toURL()},
                getClass().getClassLoader())) {
            System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
            loader.loadClass("Transport").getMethod("main", String[].class).invoke(null, (Object) new String[0]);
        } finally {
            System.setOut(out);
            if (before == null) {
                System.clearProperty("mrcache.registrar");
            } else {
                System.setProperty("mrcache.registrar", before);
            }
            deleteTree(dir);
        }
        String s = printed.toString(StandardCharsets.UTF_8);
        assertTrue(s.contains("lkey 0x") && s.contains("registrations"), s);
    }

    private static void deleteTree(Path dir) throws IOException {
        try (var paths = Files.walk(dir)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
