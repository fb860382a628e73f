package io.mrcache.core;

import java.lang.ref.Cleaner;
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

    LeakDetector(Consumer<LeakReport> listener, Runnable onLeak) {
        this.listener = listener;
        this.onLeak = onLeak;
    }

    Tracker newTracker(long address, long length, int access) {
        return new Tracker(listener, onLeak, address, length, access,
                new Throwable("acquire(0x" + Long.toHexString(address) + ", " + length + ")"));
    }

    /** The state shared by a lease and its cleaning action (which must not reach the lease). */
    static final class Tracker implements Runnable {
        private final Consumer<LeakReport> listener;
        private final Runnable onLeak;
        private final long address;
        private final long length;
        private final int access;
        private final Throwable acquiredAt;
        private volatile boolean released;
        private Cleaner.@Nullable Cleanable cleanable;

        private Tracker(Consumer<LeakReport> listener, Runnable onLeak, long address, long length, int access,
                Throwable acquiredAt) {
            this.listener = listener;
            this.onLeak = onLeak;
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
            Cleaner.Cleanable c = cleanable;
            if (c != null) { // watched right after construction, before the lease is returned
                c.clean();
            }
        }

        @Override
        public void run() {
            if (!released) {
                onLeak.run();
                listener.accept(new LeakReport(address, length, access, acquiredAt));
            }
        }
    }

    private static final System.Logger LOG = System.getLogger(LeakDetector.class.getName());

    /** The default listener: logs the report with the acquire stack, at WARNING, through {@link System.Logger}. */
    static void log(LeakReport report) {
        LOG.log(System.Logger.Level.WARNING, report.toString(), report.acquiredAt());
    }
}
