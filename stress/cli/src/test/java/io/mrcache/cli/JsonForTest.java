package io.mrcache.cli;

/** {@link Json} for tests in other packages of the command line. */
public final class JsonForTest {
    private JsonForTest() {
    }

    public static String write(Object value) {
        return Json.write(value);
    }
}
