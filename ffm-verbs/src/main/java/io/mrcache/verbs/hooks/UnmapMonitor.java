package io.mrcache.verbs.hooks;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.mrcache.verbs.Errno;
import io.mrcache.verbs.NativeException;
import io.mrcache.verbs.internal.Libc;
import io.mrcache.verbs.internal.Pages;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A process-wide unmap monitor on {@code userfaultfd(2)}: ranges handed to {@link #watch} are registered in
 * write-protect mode (no page is actually protected, so page faults are not slowed), and the kernel's
 * non-cooperative UNMAP, REMOVE ({@code madvise(MADV_DONTNEED)}) and REMAP ({@code mremap}) events are read
 * on a daemon thread and turned into calls of the {@link Listener} (for the cache: {@code invalidate}).
 *
 * <p><b>The window it leaves.</b> {@code munmap} blocks until the monitor has <em>read</em> the event, not
 * until the invalidation has completed. The freeing thread can therefore return from {@code munmap} and the
 * allocator hand the addresses out again while the listener is still running, or while a lease on the
 * region is still held. The registration pinned the old pages, so no NIC access lands in the new mapping,
 * but a lookup in that window could still return the old registration for the new buffer. What closes it:
 * free through an {@link InvalidatingArena} (the invalidation completes before the memory goes back), or
 * have the allocator wait for the invalidation's stage before reuse; the monitor alone is a net for frees the
 * JVM does not see.
 *
 * <p>userfaultfd needs {@code CAP_SYS_PTRACE} (root here) unless {@code vm.unprivileged_userfaultfd} is 1;
 * where it is refused, {@link #start} throws {@link UnavailableException} saying so, and the other free
 * sources still work.
 */
public final class UnmapMonitor implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(UnmapMonitor.class.getName());
    /** Receives the ranges the kernel reports as gone. */
    @FunctionalInterface
    public interface Listener {
        void unmapped(long address, long length, String cause);
    }

    /** userfaultfd is not available to this process. */
    public static final class UnavailableException extends RuntimeException {
        UnavailableException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private static final long SYS_USERFAULTFD = 323; // x86-64
    private static final int O_CLOEXEC = 0x80000;
    private static final int O_NONBLOCK = 0x800;
    private static final long UFFD_API = 0xAA;
    private static final long FEATURE_EVENT_REMAP = 1 << 2;
    private static final long FEATURE_EVENT_REMOVE = 1 << 3;
    private static final long FEATURE_EVENT_UNMAP = 1 << 6;
    private static final long MODE_WP = 1 << 1;
    // _IOWR(0xAA, nr, size): direction 3 << 30 | size << 16 | type << 8 | nr
    private static final long UFFDIO_API = 0xC018AA3FL;
    private static final long UFFDIO_REGISTER = 0xC020AA00L;
    private static final long UFFDIO_UNREGISTER = 0x8010AA01L;
    private static final int EVENT_REMAP = 0x14;
    private static final int EVENT_REMOVE = 0x15;
    private static final int EVENT_UNMAP = 0x16;
    private static final int MSG_SIZE = 32;

    private final int fd;
    private final Listener listener;
    private final Thread reader;
    private final long pageSize = Libc.pageSize();
    private final AtomicLong events = new AtomicLong();
    private volatile boolean closed;

    private UnmapMonitor(int fd, Listener listener) {
        this.fd = fd;
        this.listener = listener;
        this.reader = Thread.ofPlatform().daemon().name("mrcache-unmap-monitor").unstarted(this::readLoop);
    }

    /**
     * Opens a userfaultfd with UNMAP, REMOVE and REMAP events and starts the reader thread.
     *
     * @throws UnavailableException when the kernel or the process's privileges refuse userfaultfd
     */
    public static UnmapMonitor start(Listener listener) {
        int fd;
        try {
            fd = (int) Libc.syscall("userfaultfd", SYS_USERFAULTFD, O_CLOEXEC | O_NONBLOCK);
        } catch (NativeException e) {
            throw new UnavailableException("userfaultfd is refused here (" + e.getMessage() + "): it needs root"
                    + " or CAP_SYS_PTRACE, or 'sysctl vm.unprivileged_userfaultfd=1'. Frees through an"
                    + " InvalidatingArena and explicit invalidate calls still work.", e);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment api = arena.allocate(24, 8);
            api.set(JAVA_LONG, 0, UFFD_API);
            api.set(JAVA_LONG, 8, FEATURE_EVENT_UNMAP | FEATURE_EVENT_REMOVE | FEATURE_EVENT_REMAP);
            Libc.ioctl("ioctl(UFFDIO_API)", fd, UFFDIO_API, api);
        } catch (NativeException e) {
            Libc.close(fd);
            throw new UnavailableException("userfaultfd lacks the UNMAP/REMOVE/REMAP events on this kernel ("
                    + e.getMessage() + ")", e);
        }
        UnmapMonitor monitor = new UnmapMonitor(fd, listener);
        monitor.reader.start();
        return monitor;
    }

    /**
     * Watches the pages of {@code [address, address + length)} for unmaps. The range must be anonymous private
     * memory (EINVAL otherwise: file mappings, the JVM's own heap).
     */
    public void watch(long address, long length) {
        long start = Pages.firstPage(address, pageSize);
        long end = Pages.pagesEnd(address, length, pageSize);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment reg = arena.allocate(32, 8);
            reg.set(JAVA_LONG, 0, start);
            reg.set(JAVA_LONG, 8, end - start);
            reg.set(JAVA_LONG, 16, MODE_WP);
            Libc.ioctl(String.format("ioctl(UFFDIO_REGISTER, 0x%x, %d, WP)", start, end - start), fd,
                    UFFDIO_REGISTER, reg);
        }
    }

    /** Stops watching a range (no error if it was already unmapped). */
    public void unwatch(long address, long length) {
        long start = Pages.firstPage(address, pageSize);
        long end = Pages.pagesEnd(address, length, pageSize);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment range = arena.allocate(16, 8);
            range.set(JAVA_LONG, 0, start);
            range.set(JAVA_LONG, 8, end - start);
            Libc.ioctl("ioctl(UFFDIO_UNREGISTER)", fd, UFFDIO_UNREGISTER, range);
        } catch (NativeException e) {
            if (e.errno() != Errno.EINVAL && e.errno() != Errno.ENOMEM) {
                throw e;
            }
        }
    }

    /** Events read so far. */
    public long events() {
        return events.get();
    }

    private void readLoop() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(MSG_SIZE * 16L, 8);
            while (!closed) {
                if (!Libc.pollIn(fd, 100)) {
                    continue;
                }
                long n = Libc.readOrErrno(fd, buf);
                if (n == -Errno.EAGAIN || n == -Errno.EINTR) {
                    continue;
                }
                if (n < 0) {
                    if (!closed) {
                        LOG.log(System.Logger.Level.ERROR, "mrcache unmap monitor: read failed: "
                                + Errno.describe((int) -n) + "; unmaps are no longer turned into invalidations");
                    }
                    return;
                }
                for (long off = 0; off + MSG_SIZE <= n; off += MSG_SIZE) {
                    dispatch(buf.asSlice(off, MSG_SIZE));
                }
            }
        }
    }

    private void dispatch(MemorySegment msg) {
        int event = msg.get(JAVA_BYTE, 0) & 0xff;
        events.incrementAndGet();
        try {
            switch (event) {
                case EVENT_UNMAP -> listener.unmapped(msg.get(JAVA_LONG, 8),
                        msg.get(JAVA_LONG, 16) - msg.get(JAVA_LONG, 8), "munmap");
                case EVENT_REMOVE -> listener.unmapped(msg.get(JAVA_LONG, 8),
                        msg.get(JAVA_LONG, 16) - msg.get(JAVA_LONG, 8), "madvise");
                case EVENT_REMAP -> listener.unmapped(msg.get(JAVA_LONG, 8), msg.get(JAVA_LONG, 24), "mremap");
                default -> { } // page faults and forks are not ours to handle
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "mrcache unmap monitor: listener failed for event 0x"
                    + Integer.toHexString(event), e);
        }
    }

    @Override
    public void close() {
        closed = true;
        try {
            reader.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Libc.close(fd);
    }
}
