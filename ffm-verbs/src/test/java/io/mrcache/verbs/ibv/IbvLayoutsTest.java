package io.mrcache.verbs.ibv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.PaddingLayout;
import java.lang.foreign.StructLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Compiles a C program against {@code <infiniband/verbs.h>} that prints {@code offsetof} and {@code sizeof}
 * for every field of the structs in {@link IbvLayouts}, and compares them with the Java layouts.
 * Needs gcc and libibverbs-dev ({@code ./mrcache test} installs them when run as root).
 */
class IbvLayoutsTest {

    @Test
    void layoutsMatchTheCHeader() throws Exception {
        Path header = Path.of("/usr/include/infiniband/verbs.h");
        assertTrue(Files.exists(header), "missing " + header + ": apt-get install libibverbs-dev gcc");
        StringBuilder c = new StringBuilder("#include <stdio.h>\n#include <stddef.h>\n#include <infiniband/verbs.h>\n"
                + "int main(void) {\n");
        for (StructLayout s : List.of(IbvLayouts.IBV_MR, IbvLayouts.IBV_DEVICE_ATTR)) {
            String name = s.name().orElseThrow();
            c.append(String.format("  printf(\"%s sizeof %%zu\\n\", sizeof(struct %s));%n", name, name));
            for (MemoryLayout m : s.memberLayouts()) {
                if (m instanceof PaddingLayout) {
                    continue;
                }
                String field = m.name().orElseThrow();
                c.append(String.format("  printf(\"%s %s %%zu %%zu\\n\", offsetof(struct %s, %s), sizeof(((struct %s*)0)->%s));%n",
                        name, field, name, field, name, field));
            }
        }
        c.append("  return 0;\n}\n");
        Path dir = Files.createTempDirectory("mrcache-layout");
        Path src = dir.resolve("layout.c");
        Path exe = dir.resolve("layout");
        Files.writeString(src, c);
        run(List.of("gcc", "-Wall", "-o", exe.toString(), src.toString()));
        String out = run(List.of(exe.toString()));
        Map<String, long[]> fromC = new HashMap<>();
        for (String line : out.split("\n")) {
            String[] p = line.trim().split(" ");
            if (p[1].equals("sizeof")) {
                fromC.put(p[0], new long[] {Long.parseLong(p[2])});
            } else {
                fromC.put(p[0] + "." + p[1], new long[] {Long.parseLong(p[2]), Long.parseLong(p[3])});
            }
        }
        int checked = 0;
        for (StructLayout s : List.of(IbvLayouts.IBV_MR, IbvLayouts.IBV_DEVICE_ATTR)) {
            String name = s.name().orElseThrow();
            assertEquals(fromC.get(name)[0], s.byteSize(), "sizeof(struct " + name + ")");
            for (MemoryLayout m : s.memberLayouts()) {
                if (m instanceof PaddingLayout) {
                    continue;
                }
                String field = m.name().orElseThrow();
                long[] expected = fromC.get(name + "." + field);
                long offset = s.byteOffset(MemoryLayout.PathElement.groupElement(field));
                assertEquals(expected[0], offset, "offsetof(struct " + name + ", " + field + ")");
                assertEquals(expected[1], m.byteSize(), "sizeof " + name + "." + field);
                checked++;
            }
        }
        assertTrue(checked >= 45, "fields checked: " + checked);
    }

    private static String run(List<String> command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "timed out: " + command);
        assertEquals(0, p.exitValue(), command + " failed:\n" + out);
        return out;
    }
}
