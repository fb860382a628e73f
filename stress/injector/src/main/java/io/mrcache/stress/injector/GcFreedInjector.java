package io.mrcache.stress.injector;

import io.mrcache.core.Access;
import io.mrcache.core.CacheCounter;
import io.mrcache.core.CacheFault;
import io.mrcache.core.ForwardingRegistrar;
import io.mrcache.core.Lease;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationCache;
import io.mrcache.core.testing.RecordingRegistrar;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.PhantomReference;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The address-reuse injector's JVM-managed mode: buffers that the JVM frees, with no free hook at all. Each buffer is
 * a segment of its own {@code Arena.ofAuto()} (1 to 16 whole pages, page-aligned, so no other live buffer shares its
 * pages) or a {@code ByteBuffer.allocateDirect} of 64 or 256 KiB; it is acquired when new and sometimes again while
 * it lives, the newest 32 are kept, and older ones are dropped for the GC, which frees them (a {@code System.gc()}
 * every 512 buffers, besides the GCs the allocation makes). The allocator hands the freed addresses out again.
 *
 * <p>The detector is the ground truth of who a registration was made for: the registrar records, for each key, the
 * buffer being acquired when it registered. A <b>stale hit</b> is a lease whose registration was made for another
 * buffer that the run has already dropped: that buffer's memory was freed (the new buffer lies on its addresses), so
 * the registration pins pages that no longer back this buffer, or exposes this buffer's bytes through an old key. On
 * an RDMA device the NIC writes through it land in the old pages (the other injector modes show what that does to
 * the bytes); here the registrar is a recording one, and the detector counts what the cache served.
 */
public final class GcFreedInjector {
    /** The caches compared, in the order the demo shows them. */
    public enum Column {
        NAIVE("naive cache (UNSAFE)"),
        ADDRESS_KEYED("mrcache, address-keyed"),
        OWNER_BOUND("mrcache, owner-bound"),
        /** The broken variant the detector must catch: owner-bound calls with the owner check skipped. */
        OWNER_CHECK_SKIPPED("mrcache, owner check skipped (BROKEN)");

        private final String title;

        Column(String title) {
            this.title = title;
        }

        public String title() {
            return title;
        }
    }

    /**
     * What one column's run showed.
     *
     * @param buffers          buffers allocated (each acquired at least once, when new)
     * @param acquires         acquires in all
     * @param staleHits        leases whose registration was made for a buffer the run had dropped (must be 0)
     * @param reusedAddresses  new buffers at an address an earlier buffer started at (the allocator's reuse)
     * @param registrations    registrations made
     * @param deregistrations  deregistrations made during the run (before the cache closed)
     * @param ownersGone       the cache's owner-bound regions retired because their owner was collected
     * @param gcs              explicit collections asked for
     * @param delayMicros      for owner-bound columns, per owner collected and then deregistered in the run: the time
     *                         from the GC's notice that it was unreachable (a phantom reference enqueued) to its
     *                         registration's deregistration, in microseconds, sorted
     */
    public record Report(Column column, long buffers, long acquires, long staleHits, long reusedAddresses,
            long registrations, long deregistrations, long ownersGone, long gcs, long[] delayMicros, double seconds) {
        public boolean safe() {
            return staleHits == 0;
        }
    }

    private static final int ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE;
    private static final int LIVE = 32;
    private static final int GC_EVERY = 512;
    private static final long PAGE = 4096;

    /** A buffer the run holds: its serial (who registrations are made for) and its owner object. */
    private record Buffer(long serial, Object owner, long address, long length) {
    }

    private final Column column;
    private final SplittableRandom rnd;
    private final RecordingRegistrar recording = new RecordingRegistrar(1, false);
    /** For each live key: the serial of the buffer being acquired when it was registered. */
    private final Map<Integer, Long> serialOfKey = new ConcurrentHashMap<>();
    /** Per serial of an owner whose phantom was enqueued: when (System.nanoTime()). */
    private final Map<Long, Long> collectedAt = new ConcurrentHashMap<>();
    private final List<Long> delays = new ArrayList<>();
    private final Set<Long> dropped = new HashSet<>();
    private long current;

    private GcFreedInjector(Column column, long seed) {
        this.column = column;
        this.rnd = new SplittableRandom(seed);
    }

    /** Runs {@code buffers} buffer lifecycles through {@code column}'s cache; progress every second, if asked. */
    public static Report run(Column column, long buffers, long seed, @Nullable Consumer<String> progress) {
        if (buffers <= 0) {
            throw new IllegalArgumentException("buffers " + buffers + " must be > 0");
        }
        return new GcFreedInjector(column, seed).run(buffers, progress);
    }

    private Report run(long buffers, @Nullable Consumer<String> progress) {
        long started = System.nanoTime();
        ForwardingRegistrar registrar = new ForwardingRegistrar(recording) {
            @Override
            public Registration register(long address, long length, int access) {
                Registration r = super.register(address, length, access);
                serialOfKey.put(r.lkey(), current);
                return r;
            }

            @Override
            public void deregister(Registration registration) {
                super.deregister(registration);
                Long serial = serialOfKey.remove(registration.lkey());
                Long at = serial == null ? null : collectedAt.get(serial);
                if (at != null) {
                    synchronized (delays) {
                        delays.add((System.nanoTime() - at) / 1000);
                    }
                }
            }
        };
        NaiveCache naive = column == Column.NAIVE ? new NaiveCache(registrar) : null;
        RegistrationCache.Builder builder = RegistrationCache.builder(registrar);
        RegistrationCache cache = column == Column.NAIVE ? null
                : (column == Column.OWNER_CHECK_SKIPPED ? builder.withDeliberateBug(CacheFault.IGNORE_OWNER) : builder)
                        .build();
        ReferenceQueue<Object> collected = new ReferenceQueue<>();
        Map<Reference<?>, Long> phantoms = new ConcurrentHashMap<>();
        Thread stamper = Thread.ofPlatform().daemon().name("gc-injector-stamper").start(() -> {
            try {
                for (;;) {
                    Reference<?> r = collected.remove();
                    Long serial = phantoms.remove(r);
                    if (serial != null) {
                        collectedAt.put(serial, System.nanoTime());
                    }
                }
            } catch (InterruptedException e) {
                // the run is over
            }
        });
        ArrayDeque<Buffer> live = new ArrayDeque<>();
        Set<Long> starts = new HashSet<>();
        long acquires = 0;
        long stale = 0;
        long reused = 0;
        long gcs = 0;
        long lastReport = System.nanoTime();
        try {
            for (long serial = 1; serial <= buffers; serial++) {
                Buffer b = allocate(serial);
                if (!starts.add(b.address())) {
                    reused++;
                }
                live.addLast(b);
                stale += use(b, naive, cache) ? 1 : 0;
                acquires++;
                int again = rnd.nextInt(3);
                for (int i = 0; i < again; i++) { // a few more uses of buffers still held: hits
                    Buffer l = pick(live);
                    stale += use(l, naive, cache) ? 1 : 0;
                    acquires++;
                }
                if (live.size() > LIVE) {
                    Buffer gone = live.removeFirst();
                    dropped.add(gone.serial());
                    phantoms.put(new PhantomReference<>(gone.owner(), collected), gone.serial());
                }
                if (serial % GC_EVERY == 0) {
                    System.gc();
                    gcs++;
                }
                if (progress != null && System.nanoTime() - lastReport > 1_000_000_000L) {
                    lastReport = System.nanoTime();
                    progress.accept(String.format("[%s] %,d / %,d buffers, stale hits %,d", column.title(), serial,
                            buffers, stale));
                }
            }
            long waitUntil = System.nanoTime() + 2_000_000_000L; // the owners dropped last: let the reaper see them
            while (cache != null && column == Column.OWNER_BOUND && System.nanoTime() < waitUntil
                    && cache.regionCount() > LIVE * 4) {
                System.gc();
                gcs++;
                sleep(20);
            }
            long deregistrations = recording.deregisterCount();
            long ownersGone = cache == null ? 0 : cache.metrics().get(CacheCounter.OWNERS_GONE);
            live.clear();
            long[] sorted;
            synchronized (delays) {
                sorted = delays.stream().mapToLong(Long::longValue).toArray();
            }
            Arrays.sort(sorted);
            return new Report(column, buffers, acquires, stale, reused, recording.registerCount(), deregistrations,
                    ownersGone, gcs, sorted, (System.nanoTime() - started) / 1e9);
        } finally {
            stamper.interrupt();
            if (cache != null) {
                cache.close();
            }
            if (naive != null) {
                naive.close();
            }
        }
    }

    private Buffer allocate(long serial) {
        if (rnd.nextBoolean()) {
            long pages = 1 + rnd.nextInt(16);
            MemorySegment s = Arena.ofAuto().allocate(pages * PAGE, PAGE);
            return new Buffer(serial, s, s.address(), s.byteSize());
        }
        ByteBuffer bb = ByteBuffer.allocateDirect(rnd.nextBoolean() ? 64 * 1024 : 256 * 1024);
        MemorySegment s = MemorySegment.ofBuffer(bb);
        return new Buffer(serial, bb, s.address(), s.byteSize());
    }

    private Buffer pick(ArrayDeque<Buffer> live) {
        int i = rnd.nextInt(live.size());
        for (Buffer b : live) {
            if (i-- == 0) {
                return b;
            }
        }
        return live.getLast();
    }

    /** One acquire and release of {@code b}; true when the lease was a stale hit. */
    private boolean use(Buffer b, @Nullable NaiveCache naive, @Nullable RegistrationCache cache) {
        current = b.serial();
        int lkey;
        if (naive != null) {
            CacheUnderTest.Handle h = naive.acquire(b.address(), b.length(), ACCESS);
            lkey = h.lkey();
            naive.release(h);
        } else {
            RegistrationCache c = Objects.requireNonNull(cache, "cache");
            try (Lease l = column == Column.ADDRESS_KEYED ? c.acquire(b.address(), b.length(), ACCESS)
                    : b.owner() instanceof MemorySegment s ? c.acquire(s, ACCESS)
                    : c.acquire((ByteBuffer) b.owner(), ACCESS)) {
                lkey = l.lkey();
            }
        }
        Long madeFor = serialOfKey.get(lkey);
        return madeFor != null && madeFor != b.serial() && dropped.contains(madeFor);
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
