package io.mrcache.core;

import java.util.concurrent.locks.ReentrantLock;

/**
 * The cache's lock (and the eviction policy's): a {@link ReentrantLock} that, when another thread holds it, retries for a few
 * microseconds before parking. Its critical sections are short (an index copy, a few counters), so on a machine
 * with more than one processor the holder is usually done within that time, and a thread that parked instead
 * would pay two context switches (a futex wait and a wake-up) to wait for it. Measured on the injector's soak
 * (2 threads, 2 cores, constant eviction): about 5% more lifecycles per second than parking at once.
 */
final class SpinningLock extends ReentrantLock {
    private static final long serialVersionUID = 1L;
    /** Retries before parking; none on one processor, where a spin could only delay the holder. */
    private static final int SPINS = Runtime.getRuntime().availableProcessors() > 1 ? 256 : 0;

    @Override
    public void lock() {
        if (tryLock()) { // free, or already this thread's
            return;
        }
        for (int i = 0; i < SPINS; i++) {
            Thread.onSpinWait();
            if (!isLocked() && tryLock()) {
                return;
            }
        }
        super.lock();
    }
}
