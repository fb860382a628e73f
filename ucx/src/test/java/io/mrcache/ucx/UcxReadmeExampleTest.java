package io.mrcache.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;

/** The README's jucx example compiles as written, and runs on the real UCX. */
class UcxReadmeExampleTest {

    @Test
    void theReadmeUcxExampleCompilesAndRuns() throws Exception {
        String text = Files.readString(Path.of(System.getProperty("user.dir")).resolveSibling("README.md"));
        int begin = text.indexOf("<!-- ucx-example:begin -->");
        int end = text.indexOf("<!-- ucx-example:end -->");
        assertTrue(begin >= 0 && end > begin, "the README marks its UCX example");
        String block = text.substring(begin, end);
        String source = block.substring(block.indexOf("```java") + 7, block.lastIndexOf("```"));
        Path dir = Files.createTempDirectory("readme-ucx-example");
        Files.writeString(dir.resolve("UcxTransport.java"), source);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        ByteArrayOutputStream errors = new ByteArrayOutputStream();
        int rc = javac.run(null, null, errors, "-d", dir.toString(), "-cp", System.getProperty("java.class.path"),
                dir.resolve("UcxTransport.java").toString());
        assertEquals(0, rc, "the README's UCX example does not compile:\n" + errors.toString(StandardCharsets.UTF_8));
        PrintStream out = System.out;
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        try (URLClassLoader loader = new URLClassLoader(new java.net.URL[] {dir.toUri().toURL()},
                getClass().getClassLoader())) {
            System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
            loader.loadClass("UcxTransport").getMethod("main", String[].class).invoke(null, (Object) new String[0]);
        } finally {
            System.setOut(out);
        }
        String s = printed.toString(StandardCharsets.UTF_8);
        assertTrue(s.contains("the peer wrote 42; registrations 1"), s);
    }
}
