package io.mrcache.bench;

import io.mrcache.core.Access;
import io.mrcache.core.Lease;
import io.mrcache.core.RegistrationCache;
import io.mrcache.verbs.hooks.PageFrameCheck;
import io.mrcache.verbs.internal.Libc;
import io.mrcache.verbs.sim.SimulatedHca;
import io.mrcache.verbs.sim.SimulatedRegistrar;
import java.lang.foreign.MemorySegment;
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
 * What the page-frame check adds to a hit: the same hit on real, pinned memory with and without
 * {@link PageFrameCheck.Guard} (one {@code pread} of {@code /proc/self/pagemap} per hit, at most
 * {@link PageFrameCheck#SAMPLED_PAGES} entries). Run: {@code java -jar stress/jmh/target/benchmarks.jar PageFrame}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Xmx1g"})
@State(Scope.Benchmark)
public class PageFrameCheckBenchmarks {
    @Param({"4096", "65536", "1048576"})
    long bytes;

    PageFrameCheck check;
    RegistrationCache cache;
    PageFrameCheck.Guard guard;
    long address;

    @Setup
    public void setup() {
        check = PageFrameCheck.open();
        if (!check.enabled()) {
            throw new IllegalStateException("page frame numbers read as 0 here (no CAP_SYS_ADMIN): nothing to measure");
        }
        PageFrameCheck.RecordingFrames frames = new PageFrameCheck.RecordingFrames(
                SimulatedRegistrar.onNewDomain(new SimulatedHca()), check);
        cache = RegistrationCache.builder(frames).build();
        guard = new PageFrameCheck.Guard(cache, frames);
        address = Libc.mmapAnonymous(bytes);
        MemorySegment.ofAddress(address).reinterpret(bytes).fill((byte) 1);
        cache.acquire(address, bytes, Access.LOCAL_WRITE).close();
    }

    @TearDown
    public void tearDown() {
        cache.close();
        Libc.munmap(address, bytes);
        check.close();
    }

    @Benchmark
    public int hit() {
        try (Lease l = cache.acquire(address, bytes, Access.LOCAL_WRITE)) {
            return l.lkey();
        }
    }

    @Benchmark
    public int hitWithPageFrameCheck() {
        try (Lease l = guard.acquire(address, bytes, Access.LOCAL_WRITE)) {
            return l.lkey();
        }
    }
}
