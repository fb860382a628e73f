package io.mrcache.verbs.hooks;

import io.mrcache.core.ForwardingRegistrar;
import io.mrcache.core.Lease;
import io.mrcache.core.Registrar;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationCache;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;

/**
 * Defense in depth against lost free hooks, as UCX's {@code check_pfn}: at registration, record the page frame
 * numbers behind the registered range from {@code /proc/self/pagemap}; on each hit, read them again for the
 * leased range and, on a mismatch (the addresses were unmapped and mapped again without the cache hearing of
 * it), invalidate the range and acquire again.
 *
 * <p>What it samples: the first and the last page of the range and up to {@link #SAMPLED_PAGES} pages evenly
 * between them, at registration and on each hit; a hit costs one {@code pread} of the range's 8-byte entries
 * (up to 64 pages; beyond, one per sample). Measured per hit (PageFrameCheckBenchmarks): about 0.9 us for a
 * 4 KiB range, 1.3 us for 64 KiB, 7 us for 1 MiB, against 11 ns without the check. A reuse that replaced only
 * pages between the samples goes unseen. It detects a <em>remapping</em> (new pages behind the addresses); a free whose memory stays mapped
 * and is handed out again keeps its pages, so nothing here can see it, and nothing needs to: the old
 * registration still pins the very pages the new buffer uses.
 *
 * <p>Page frame numbers read as zero without {@code CAP_SYS_ADMIN}. {@link #open()} finds that out once, says
 * so once through {@link System.Logger}, and returns a check that stays off ({@link #enabled()} false).
 */
public final class PageFrameCheck implements AutoCloseable {
    /** Pages read per range at most (first, last and evenly spaced between). */
    public static final int SAMPLED_PAGES = 8;
    /** Ranges up to this many pages are read in one {@code pread} (measured: one read of 16 entries costs a fifth of 8 reads; of 256 entries, more than 8 reads). */
    private static final long ONE_READ_PAGES = 64;
    private static final System.Logger LOG = System.getLogger(PageFrameCheck.class.getName());
    private static final long PAGE = 4096;
    private static final long PFN_MASK = (1L << 55) - 1;
    private static final long PRESENT = 1L << 63;

    private final @Nullable FileChannel pagemap;

    private PageFrameCheck(@Nullable FileChannel pagemap) {
        this.pagemap = pagemap;
    }

    /**
     * Opens {@code /proc/self/pagemap} and checks that page frame numbers are visible (they read as zero
     * without {@code CAP_SYS_ADMIN}); otherwise logs why once and returns a check that is off.
     */
    public static PageFrameCheck open() {
        FileChannel ch;
        try {
            ch = FileChannel.open(Path.of("/proc/self/pagemap"), StandardOpenOption.READ);
        } catch (IOException | UnsupportedOperationException e) {
            LOG.log(System.Logger.Level.WARNING, "page-frame check off: /proc/self/pagemap cannot be read (" + e
                    + "); lost free hooks will not be detected on hit");
            return new PageFrameCheck(null);
        }
        PageFrameCheck probe = new PageFrameCheck(ch);
        ByteBuffer touched = ByteBuffer.allocateDirect((int) PAGE);
        touched.put(0, (byte) 1);
        long address = probeAddress(touched);
        if (probe.frame(address) == 0) {
            LOG.log(System.Logger.Level.WARNING, "page-frame check off: page frame numbers read as zero (the"
                    + " process lacks CAP_SYS_ADMIN); lost free hooks will not be detected on hit");
            try {
                ch.close();
            } catch (IOException ignored) {
                // nothing to do: the check is off anyway
            }
            return new PageFrameCheck(null);
        }
        return probe;
    }

    private static long probeAddress(ByteBuffer direct) {
        return java.lang.foreign.MemorySegment.ofBuffer(direct).address();
    }

    /** Whether page frame numbers can be read here. */
    public boolean enabled() {
        return pagemap != null;
    }

    /** The page frame numbers of the sampled pages of {@code [address, address + length)} (0 for absent pages). */
    public long[] frames(long address, long length) {
        long first = address / PAGE;
        long last = (address + length - 1) / PAGE;
        long pages = last - first + 1;
        if (pages <= SAMPLED_PAGES) { // every page, in one read
            return read(first, (int) pages);
        }
        long[] out = new long[SAMPLED_PAGES];
        // one read of every entry is one system call; up to ONE_READ_PAGES entries that beats a read per sample
        long[] all = pages <= ONE_READ_PAGES ? read(first, (int) pages) : null;
        for (int i = 0; i < SAMPLED_PAGES; i++) {
            long page = (pages - 1) * i / (SAMPLED_PAGES - 1);
            out[i] = all != null ? all[(int) page] : read(first + page, 1)[0];
        }
        return out;
    }

    private long frame(long address) {
        return read(address / PAGE, 1)[0];
    }

    /** Page frame numbers of {@code count} pages from virtual page {@code page}; 0 for absent ones. */
    private long[] read(long page, int count) {
        long[] out = new long[count];
        FileChannel ch = pagemap;
        if (ch == null) {
            return out;
        }
        ByteBuffer entries = ByteBuffer.allocate(8 * count).order(ByteOrder.nativeOrder());
        try {
            while (entries.hasRemaining()) {
                if (ch.read(entries, page * 8 + entries.position()) < 0) {
                    return out;
                }
            }
        } catch (IOException e) {
            return out;
        }
        for (int i = 0; i < count; i++) {
            long v = entries.getLong(i * 8);
            out[i] = (v & PRESENT) == 0 ? 0 : v & PFN_MASK;
        }
        return out;
    }

    @Override
    public void close() {
        FileChannel ch = pagemap;
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // closing a procfs file does not fail in practice
            }
        }
    }

    /**
     * A registrar that records the sampled page frames of each registration it makes, for {@link Guard}.
     */
    public static final class RecordingFrames extends ForwardingRegistrar {
        private final PageFrameCheck check;
        private final ConcurrentHashMap<Long, long[]> framesByHandle = new ConcurrentHashMap<>();

        public RecordingFrames(Registrar delegate, PageFrameCheck check) {
            super(delegate);
            this.check = check;
        }

        @Override
        public Registration register(long address, long length, int access) {
            Registration r = super.register(address, length, access);
            if (check.enabled()) {
                framesByHandle.put(r.handle(), check.frames(r.address(), r.length()));
            }
            return r;
        }

        @Override
        public void deregister(Registration registration) {
            super.deregister(registration);
            framesByHandle.remove(registration.handle());
        }

        /** Whether {@code r} still pins the pages behind its addresses (true when the check is off). */
        boolean stillBacked(Registration r) {
            long[] recorded = framesByHandle.get(r.handle());
            return recorded == null || Arrays.equals(recorded, check.frames(r.address(), r.length()));
        }
    }

    /**
     * Acquires through a cache built over {@link RecordingFrames}, checking each lease's pages: on a mismatch the
     * lease is released, the range invalidated (and waited for), and the acquire made again.
     */
    public static final class Guard {
        private final RegistrationCache cache;
        private final RecordingFrames frames;
        private final LongAdder remapsCaught = new LongAdder();

        public Guard(RegistrationCache cache, RecordingFrames frames) {
            this.cache = cache;
            this.frames = frames;
        }

        /** {@link RegistrationCache#acquire}, with the page-frame check on the result. */
        public Lease acquire(long address, long length, int access) {
            for (int attempt = 0;; attempt++) {
                Lease lease = cache.acquire(address, length, access);
                if (attempt >= 3 || frames.stillBacked(lease.registration())) {
                    return lease;
                }
                Registration stale = lease.registration();
                lease.close();
                remapsCaught.increment();
                cache.invalidateAndWait(stale.address(), stale.length());
            }
        }

        /** Hits whose pages had changed (a free the cache never heard of), caught and re-registered. */
        public long remapsCaught() {
            return remapsCaught.sum();
        }
    }
}
