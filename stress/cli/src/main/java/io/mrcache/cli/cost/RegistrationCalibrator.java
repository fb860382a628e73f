package io.mrcache.cli.cost;

import io.mrcache.core.Access;
import io.mrcache.core.Registrar;
import io.mrcache.core.Registration;
import io.mrcache.core.cost.LinearCost;
import io.mrcache.core.cost.RegistrationCostModel;
import io.mrcache.verbs.internal.Libc;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Measures what register and deregister cost with a real registrar (the simulated HCA's mlock pinning here,
 * {@code ibv_reg_mr} where a device exists, UCX's {@code ucp_mem_map}) over buffers of several sizes, and fits
 * {@code a + b * pages} to each. Buffers are touched first, as a transport's buffers are.
 *
 * <p>It measures registrations as they happen in use, not back to back: in use, other work (a message's round
 * trip, the cache's own bookkeeping) runs between two registrations and leaves the registrar's code and data out
 * of the processor's caches. Measured here with UcxRegistrar (4 KiB to 4 MiB, median of 300): back to back on one
 * buffer 2.1 to 3.7 us; with 8 MiB of other memory touched, a yield, or a 50 us sleep between registrations 3.7
 * to 5.4 us. So each timed registration follows a sweep over {@link #POLLUTE_BYTES} of other memory. The JIT is
 * warmed over every size first (a sweep that is not recorded), so that what is fitted is steady state.
 */
public final class RegistrationCalibrator {
    /** Memory swept between two timed registrations, to leave the processor's caches as other work does. */
    static final long POLLUTE_BYTES = 8L << 20;
    public static final long[] DEFAULT_SIZES = {4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20};

    private RegistrationCalibrator() {
    }

    public static RegistrationCostModel calibrate(Registrar registrar, String registrarName, long[] sizes, int repeats,
            Consumer<String> progress) {
        return calibrate(registrar, registrarName, sizes, repeats, Access.LOCAL_WRITE, progress);
    }

    /** The same, registering with {@code access} (a remote right includes what packing the remote key costs). */
    public static RegistrationCostModel calibrate(Registrar registrar, String registrarName, long[] sizes, int repeats,
            int access, Consumer<String> progress) {
        if (repeats < 2) {
            throw new IllegalArgumentException("repeats " + repeats + " must be >= 2");
        }
        long pageSize = Libc.pageSize();
        List<LinearCost.Sample> reg = new ArrayList<>();
        List<LinearCost.Sample> dereg = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment other = arena.allocate(POLLUTE_BYTES, pageSize).fill((byte) 1);
            List<MemorySegment> buffers = new ArrayList<>();
            for (long size : sizes) {
                buffers.add(arena.allocate(size, pageSize).fill((byte) 1));
            }
            // warm the registrar's code up first, over every size: a cold JIT would be fitted as registration cost
            for (int round = 0; round < 3; round++) {
                for (int s = 0; s < sizes.length; s++) {
                    for (int i = 0; i < Math.max(50, repeats / 2); i++) {
                        registrar.deregister(registrar.register(buffers.get(s).address(), sizes[s], access));
                    }
                }
            }
            for (int s = 0; s < sizes.length; s++) {
                MemorySegment buf = buffers.get(s);
                for (int i = 0; i < repeats; i++) {
                    sweep(other, i);
                    long t0 = System.nanoTime();
                    Registration r = registrar.register(buf.address(), sizes[s], access);
                    long t1 = System.nanoTime();
                    registrar.deregister(r);
                    long t2 = System.nanoTime();
                    reg.add(new LinearCost.Sample(sizes[s], (t1 - t0) / 1e9));
                    dereg.add(new LinearCost.Sample(sizes[s], (t2 - t1) / 1e9));
                }
                progress.accept(String.format("calibrated %,d bytes (%d registrations)", sizes[s], repeats));
            }
        }
        return new RegistrationCostModel(LinearCost.fitMedians(reg, pageSize), LinearCost.fitMedians(dereg, pageSize),
                "calibrated here on " + registrarName);
    }

    /** Touches every cache line of {@code other}, as the work between two registrations in use does. */
    private static void sweep(MemorySegment other, int round) {
        for (long o = 0; o < other.byteSize(); o += 64) {
            other.set(java.lang.foreign.ValueLayout.JAVA_BYTE, o, (byte) round);
        }
    }
}
