/**
 * mrcache's registration cache. Exports the API packages only: the cache ({@code io.mrcache.core}), the cost
 * model, the recording registrar for tests, and the Micrometer binding (which needs Micrometer, an optional
 * dependency). The JFR events are opened to {@code jdk.jfr} alone.
 */
module io.mrcache.core {
    requires com.github.benmanes.caffeine;
    requires HdrHistogram;
    requires jdk.jfr;
    requires static org.jspecify;
    requires static com.google.errorprone.annotations;
    requires static micrometer.core;

    exports io.mrcache.core;
    exports io.mrcache.core.cost;
    exports io.mrcache.core.testing;
    exports io.mrcache.core.micrometer;
    exports io.mrcache.core.events to jdk.jfr;
}
