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
 * {@code ibv_reg_mr} where a device exists) over buffers of several sizes, and fits {@code a + b * pages} to
 * each. Buffers are touched first, as a transport's buffers are.
 */
public final class RegistrationCalibrator {
    public static final long[] DEFAULT_SIZES = {4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20};

    private RegistrationCalibrator() {
    }

    public static RegistrationCostModel calibrate(Registrar registrar, String registrarName, long[] sizes, int repeats,
            Consumer<String> progress) {
        if (repeats < 2) {
            throw new IllegalArgumentException("repeats " + repeats + " must be >= 2");
        }
        long pageSize = Libc.pageSize();
        List<LinearCost.Sample> reg = new ArrayList<>();
        List<LinearCost.Sample> dereg = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            // warm the registrar's code up first: a cold JIT would be fitted as registration cost
            MemorySegment small = arena.allocate(pageSize, pageSize).fill((byte) 1);
            for (int i = 0; i < 5000; i++) {
                registrar.deregister(registrar.register(small.address(), pageSize, Access.LOCAL_WRITE));
            }
            for (long size : sizes) {
                MemorySegment buf = arena.allocate(size, pageSize).fill((byte) 1);
                for (int i = -2; i < repeats; i++) { // two warm-up rounds per size
                    long t0 = System.nanoTime();
                    Registration r = registrar.register(buf.address(), size, Access.LOCAL_WRITE);
                    long t1 = System.nanoTime();
                    registrar.deregister(r);
                    long t2 = System.nanoTime();
                    if (i >= 0) {
                        reg.add(new LinearCost.Sample(size, (t1 - t0) / 1e9));
                        dereg.add(new LinearCost.Sample(size, (t2 - t1) / 1e9));
                    }
                }
                progress.accept(String.format("calibrated %,d bytes (%d registrations)", size, repeats));
            }
        }
        return new RegistrationCostModel(LinearCost.fitMedians(reg, pageSize), LinearCost.fitMedians(dereg, pageSize),
                "calibrated here on " + registrarName);
    }
}
