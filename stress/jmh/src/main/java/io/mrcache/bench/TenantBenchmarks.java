package io.mrcache.bench;

import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.Lease;
import io.mrcache.core.PinnedMemoryLimit;
import io.mrcache.core.RegistrationCache;
import io.mrcache.core.TenantShare;
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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What being a tenant of a shared {@link PinnedMemoryLimit} costs a miss: W3 (acquire, release and free of a
 * 64 KiB buffer, every acquire a miss) on a plain cache, on a cache with a byte budget as large as the limit (so
 * the same eviction policy is kept), and on a tenant of a limit that never binds (the reservation, the settle and
 * the release on each miss, and the policy its ceiling brings).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 6, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 3, jvmArgsAppend = {"-XX:+UseParallelGC", "-Xmx1g"})
public class TenantBenchmarks {
    static final long LIMIT = 1L << 40;

    @State(Scope.Thread)
    public static class Missing {
        @Param({"plain", "budget", "tenant"})
        String cache;
        RegistrationCache c;
        long k;

        @Setup
        public void setup() {
            RegistrationCache.Builder b = RegistrationCache.builder(new Workloads.NoopRegistrar(0));
            c = switch (cache) {
                case "plain" -> b.build();
                case "budget" -> b.budget(Budget.ofBytes(LIMIT)).build();
                case "tenant" -> b.tenant(new PinnedMemoryLimit(LIMIT), TenantShare.bestEffort("bench")).build();
                default -> throw new IllegalArgumentException("cache " + cache + ": plain, budget or tenant");
            };
        }

        @TearDown
        public void tearDown() {
            c.close();
        }
    }

    @Benchmark
    @Threads(1)
    public int w3Miss64k(Missing m) {
        long address = Workloads.MISS_BASE + (m.k++ & 4095) * Workloads.STRIDE;
        Lease l = m.c.acquire(address, Workloads.REGION_BYTES, Access.LOCAL_WRITE);
        int lkey = l.lkey();
        l.close();
        m.c.invalidate(address, Workloads.REGION_BYTES);
        return lkey;
    }
}
