package io.mrcache.bench;

import io.mrcache.core.Registrar;
import io.mrcache.core.Registration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The workloads W1..W6 as data: the same generator (splitmix64) and the same constants as the UCX harness
 * ({@code src/main/c/ucx_rcache_bench.c}), so both sides run the same address sequences.
 */
public final class Workloads {
    public static final int REGIONS = 1024;
    public static final long REGION_BYTES = 64 << 10;
    public static final long BASE = 0x100_0000_0000L;
    public static final long STRIDE = 128 << 10;
    public static final long MISS_BASE = 0x200_0000_0000L;
    public static final long MIXED_BASE = 0x300_0000_0000L;
    public static final long EMPTY_BASE = 0x400_0000_0000L;
    public static final int SEQUENCE = 1 << 16;
    public static final int MIXED_HOT = 256;
    public static final int MIXED_BUDGET = 512;
    /** Each thread's cold stream in W4: its own 2^24 buffers, never repeated within a run. */
    public static final long COLD_PER_THREAD = 1L << 24;

    private Workloads() {
    }

    /** splitmix64, as in the C harness. */
    public static final class SplitMix {
        private long state;

        public SplitMix(long seed) {
            state = seed;
        }

        public long next() {
            long z = (state += 0x9E3779B97F4A7C15L);
            z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
            z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
            return z ^ (z >>> 31);
        }

        /** Uniform in [0, n). */
        public long below(long n) {
            return Long.remainderUnsigned(next(), n);
        }
    }

    public static long regionAddress(int i) {
        return BASE + i * STRIDE;
    }

    /** W1: region indices in [from, from + count). */
    public static int[] indices(long seed, int from, int count) {
        SplitMix rnd = new SplitMix(seed);
        int[] out = new int[SEQUENCE];
        for (int i = 0; i < SEQUENCE; i++) {
            out[i] = from + (int) rnd.below(count);
        }
        return out;
    }

    /** W2: {address, length} of a random sub-range of a random region. */
    public static long[][] subRanges(long seed) {
        SplitMix rnd = new SplitMix(seed);
        long[][] out = new long[SEQUENCE][];
        for (int i = 0; i < SEQUENCE; i++) {
            long region = regionAddress((int) rnd.below(REGIONS));
            long offset = rnd.below(REGION_BYTES / 64 - 1) * 64;
            long length = 64 + rnd.below((REGION_BYTES - offset) / 64) * 64;
            out[i] = new long[] {region + offset, Math.min(length, REGION_BYTES - offset)};
        }
        return out;
    }

    /** W4: the address of hot region {@code i} (of {@link #MIXED_HOT}), each 2 MiB apart. */
    public static long mixedHotAddress(int i) {
        return MIXED_BASE + i * (2L << 20);
    }

    /** W4: the first cold buffer of thread {@code thread}'s stream, as an index for {@link #mixedColdAddress}. */
    public static long mixedColdBase(int thread) {
        return MIXED_HOT + thread * COLD_PER_THREAD;
    }

    /** W4: the address of cold buffer {@code n}, 2 MiB apart like the hot ones. */
    public static long mixedColdAddress(long n) {
        return MIXED_BASE + n * (2L << 20);
    }

    /** W4: whether draw {@code r} is a miss (one in ten). */
    public static boolean mixedIsMiss(long r) {
        return Long.remainderUnsigned(r, 10) == 0;
    }

    /** W4: the hot region draw {@code r} hits. */
    public static int mixedHotIndex(long r) {
        return (int) Long.remainderUnsigned(r >>> 8, MIXED_HOT);
    }

    /** W4: the length of the cold miss of draw {@code r}, 4 KiB .. 1 MiB in whole pages. */
    public static long mixedColdLength(long r) {
        return (1 + Long.remainderUnsigned(r >>> 16, 256)) * 4096;
    }

    /** A size of 4 KiB .. 1 MiB in whole pages. */
    public static long randomSize(SplitMix rnd) {
        return (1 + rnd.below(256)) * 4096;
    }

    /**
     * A registrar that registers nothing: the cache's own cost alone. It does what the UCX harness's mem_reg
     * does: the next key from one atomic counter and the live count in another; no lock, and no allocation
     * but the {@link Registration} the API returns (the fields UCX's mem_reg writes into the region UCX
     * allocated). With {@code spinNanos} it spins that long per registration (W6's slow registrar).
     */
    public static final class NoopRegistrar implements Registrar {
        private final long spinNanos;
        private final AtomicInteger nextKey = new AtomicInteger();
        private final AtomicLong live = new AtomicLong();

        public NoopRegistrar(long spinNanos) {
            this.spinNanos = spinNanos;
        }

        @Override
        public Registration register(long address, long length, int access) {
            if (spinNanos > 0) {
                long end = System.nanoTime() + spinNanos;
                while (System.nanoTime() < end) {
                    Thread.onSpinWait();
                }
            }
            int key = nextKey.incrementAndGet();
            live.incrementAndGet();
            return new Registration(address, length, access, key, key, 0, key);
        }

        @Override
        public void deregister(Registration registration) {
            live.decrementAndGet();
        }

        /** Registrations made and not yet deregistered. */
        public long live() {
            return live.get();
        }
    }
}
