package io.mrcache.core;

import java.lang.ref.Cleaner;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Opt-in detection of leases that became unreachable without being released (like Netty's leak detector).
 * Each tracked lease records the stack of its acquire; when the garbage collector finds the lease
 * unreachable and unreleased, a {@link LeakReport} goes to the listener. The leaked lease is not released
 * for the user: its keys may still be in use by a work request that the JVM cannot see.
 */
final class LeakDetector {
    private static final Cleaner CLEANER = Cleaner.create();

    private final Consumer<LeakReport> listener;
    private final Runnable onLeak;
    private final boolean sampled;
    /** Tracked leases not yet released or collected: what {@code close(timeout)} reports. */
    private final Set<Tracker> live = ConcurrentHashMap.newKeySet();

    LeakDetector(Consumer<LeakReport> listener, Runnable onLeak, LeakDetection level) {
        this.listener = listener;
        this.onLeak = onLeak;
        this.sampled = level == LeakDetection.SAMPLED;
    }

    /** Whether this acquire is tracked: always at EVERY_LEASE, one in {@link LeakDetection#SAMPLE_INTERVAL} sampled. */
    boolean track() {
        return !sampled || ThreadLocalRandom.current().nextInt(LeakDetection.SAMPLE_INTERVAL) == 0;
    }

    Tracker newTracker(long address, long length, int access) {
        Tracker t = new Tracker(this, address, length, access,
                new Throwable("acquire(0x" + Long.toHexString(address) + ", " + length + ")"));
        live.add(t);
        return t;
    }

    /** The acquire stacks of tracked leases still held. */
    List<Throwable> heldAcquires() {
        return live.stream().map(t -> t.acquiredAt).toList();
    }

    /** The state shared by a lease and its cleaning action (which must not reach the lease). */
    static final class Tracker implements Runnable {
        private final LeakDetector detector;
        private final long address;
        private final long length;
        private final int access;
        private final Throwable acquiredAt;
        private volatile boolean released;
        private Cleaner.@Nullable Cleanable cleanable;

        private Tracker(LeakDetector detector, long address, long length, int access, Throwable acquiredAt) {
            this.detector = detector;
            this.address = address;
            this.length = length;
            this.access = access;
            this.acquiredAt = acquiredAt;
        }

        void watch(Object lease) {
            cleanable = CLEANER.register(lease, this);
        }

        void released() {
            released = true;
            detector.live.remove(this);
            Cleaner.Cleanable c = cleanable;
            if (c != null) { // watched right after construction, before the lease is returned
                c.clean();
            }
        }

        @Override
        public void run() {
            if (!released) {
                detector.live.remove(this);
                detector.onLeak.run();
                detector.listener.accept(new LeakReport(address, length, access, acquiredAt));
            }
        }
    }

    private static final System.Logger LOG = System.getLogger(LeakDetector.class.getName());

    /** The default listener: logs the report with the acquire stack, at WARNING, through {@link System.Logger}. */
    static void log(LeakReport report) {
        LOG.log(System.Logger.Level.WARNING, report.toString(), report.acquiredAt());
    }
}
