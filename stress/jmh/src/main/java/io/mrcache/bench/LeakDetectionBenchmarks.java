package io.mrcache.bench;

import io.mrcache.core.Access;
import io.mrcache.core.LeakDetection;
import io.mrcache.core.Lease;
import io.mrcache.core.RegistrationCache;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What leak detection costs a hit at each level (W1's exact hit, one thread). Run:
 * {@code java -jar stress/jmh/target/benchmarks.jar LeakDetection}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-XX:+UseParallelGC", "-Xmx1g"})
@State(Scope.Benchmark)
public class LeakDetectionBenchmarks {
    @Param({"DISABLED", "SAMPLED", "EVERY_LEASE"})
    LeakDetection level;

    RegistrationCache cache;

    @Setup
    public void setup() {
        cache = RegistrationCache.builder(new Workloads.NoopRegistrar(0)).leakDetection(level).build();
        cache.acquire(Workloads.regionAddress(0), Workloads.REGION_BYTES, Access.LOCAL_WRITE).close();
    }

    @TearDown
    public void tearDown() {
        cache.close();
    }

    @Benchmark
    public int hit() {
        try (Lease l = cache.acquire(Workloads.regionAddress(0), Workloads.REGION_BYTES, Access.LOCAL_WRITE)) {
            return l.lkey();
        }
    }
}
