package io.mrcache.bench;

import io.mrcache.core.Access;
import io.mrcache.core.Lease;
import io.mrcache.core.RegistrationCache;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The owner-bound hit against the address-keyed hit, side by side: W1 (1024 cached 64 KiB regions, one thread, a
 * hit on a random region each operation), once through {@code acquire(address, length, access)} and once through
 * {@code acquire(MemorySegment, access)} with the segments of one shared arena, each in a cache of its own (the segments name the same
 * addresses; the no-op registrar touches no memory). Run both in one JMH run and compare.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 3, jvmArgsAppend = {"-XX:+UseParallelGC", "-Xmx1g", "--enable-native-access=ALL-UNNAMED"})
@Threads(1)
public class OwnerBoundBenchmarks {

    /** 1024 regions cached each way, in a cache of each kind: address-keyed, and owned by one arena's scope. */
    @State(Scope.Benchmark)
    public static class Cached {
        RegistrationCache keyed;
        RegistrationCache owned;
        Arena arena;
        MemorySegment[] segments;

        @Setup
        public void setup() {
            keyed = RegistrationCache.builder(new Workloads.NoopRegistrar(0)).build();
            owned = RegistrationCache.builder(new Workloads.NoopRegistrar(0)).build();
            arena = Arena.ofShared();
            segments = new MemorySegment[Workloads.REGIONS];
            for (int i = 0; i < Workloads.REGIONS; i++) {
                long address = Workloads.regionAddress(i);
                segments[i] = MemorySegment.ofAddress(address).reinterpret(Workloads.REGION_BYTES, arena, null);
                keyed.acquire(address, Workloads.REGION_BYTES, Access.LOCAL_WRITE).close();
                owned.acquire(segments[i], Access.LOCAL_WRITE).close();
            }
        }

        @TearDown
        public void tearDown() {
            keyed.close();
            owned.close();
            arena.close();
        }
    }

    @Benchmark
    public int hitAddressKeyed(Cached c, CacheBenchmarks.Cursor k) {
        int region = k.shared[k.i++ & (Workloads.SEQUENCE - 1)];
        return CacheBenchmarks.use(c.keyed, Workloads.regionAddress(region), Workloads.REGION_BYTES);
    }

    @Benchmark
    public int hitOwnerBound(Cached c, CacheBenchmarks.Cursor k) {
        int region = k.shared[k.i++ & (Workloads.SEQUENCE - 1)];
        Lease l = c.owned.acquire(c.segments[region], Access.LOCAL_WRITE);
        int lkey = l.lkey();
        l.close();
        return lkey;
    }
}
