package io.mrcache.ucx.transport;

import io.mrcache.core.Access;
import io.mrcache.ucx.UcxRegistrar;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.Consumer;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;

/**
 * The owner side of the transport: a process whose buffers come from a {@link SlabAllocator} (memory from FFM,
 * freed and reused), with the cache's free hook as the allocator's. For each operation it takes keys for a buffer
 * from the cache, sends the peer (address, length, packed remote key), and releases the keys on the peer's
 * completion message. The application frees buffers on its own schedule, sometimes while the peer's operation on
 * them is outstanding; the cache's free hook is what must hold their reuse back until the completion.
 *
 * <p>One thread runs it all (an event loop: progress the worker, take completions, post operations): UCX's
 * software RMA needs the owner's worker progressed for the peer's operations to land. The ground truth is the
 * bytes: before every operation on a buffer, after every completion and before every free, the buffer must hold
 * what its owner or the peer's completed write put there ({@link TransportReport}).
 *
 * <p>A peer that disconnects or dies: the owner stops posting, closes the peer's endpoint and releases that
 * peer's keys only once the endpoint is closed and the peer's control connection has ended (its process is gone,
 * or it has left): no write of it can still arrive. It says so on {@code progress}.
 */
public final class UcxOwner {
    /** Which cache the owner embeds. */
    public enum CacheKind {
        MRCACHE, NAIVE
    }

    /**
     * One run.
     *
     * @param operations       operations to post in all
     * @param seed             seeds the workload (sizes, buffers, kinds, frees)
     * @param window           operations outstanding at most
     * @param freeEarlyPercent percent of operations whose buffer the application frees right after posting them
     * @param peerViolates     the peer also writes with keys after their completion (outside the safety model)
     * @param listen           where to listen for the peer (port 0: any free port on the loopback address)
     * @param releaseAtSend    FOR PROOFS ONLY, a broken protocol: the owner releases an operation's keys as soon as
     *                         it has sent the request, not on the peer's completion message
     */
    public record Config(long operations, long seed, int window, int freeEarlyPercent, boolean peerViolates,
            InetSocketAddress listen, boolean releaseAtSend) {
        public Config {
            if (operations <= 0) {
                throw new IllegalArgumentException("operations " + operations + " must be > 0");
            }
            if (window < 1 || window > 256) {
                throw new IllegalArgumentException("window " + window + " must be in 1..256");
            }
            if (freeEarlyPercent < 0 || freeEarlyPercent > 100) {
                throw new IllegalArgumentException("freeEarlyPercent " + freeEarlyPercent + " must be in 0..100");
            }
        }

        /** A run as the demo makes it: 8 operations outstanding, a quarter of the buffers freed early. */
        public Config(long operations, long seed, boolean peerViolates, InetSocketAddress listen) {
            this(operations, seed, 8, 25, peerViolates, listen, false);
        }

        /** A local run: listen on a free loopback port. */
        public static Config local(long operations, long seed, boolean peerViolates) {
            return new Config(operations, seed, peerViolates, new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        }

        /** The same run with the broken protocol (keys released at send), for the proof that the demo catches it. */
        public Config releasingAtSend() {
            return new Config(operations, seed, window, freeEarlyPercent, peerViolates, listen, true);
        }
    }

    private static final int ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;
    private static final int[] SIZES = {64, 200, 1000, 4096, 12000, 65536};
    private static final int LIVE_TARGET = 48;

    /** A buffer the application holds: the word every 8 bytes of it must read. */
    private static final class Live {
        final SlabAllocator.Buffer buffer;
        long word;
        boolean inOperation;
        boolean freed;

        Live(SlabAllocator.Buffer buffer, long word) {
            this.buffer = buffer;
            this.word = word;
        }
    }

    private record Operation(Live live, TransportCache.Held held, int kind, long word, long readChecksum) {
    }

    private final Config config;
    private final TransportCache cache;
    private final PeerLink link;
    private final SlabAllocator allocator;
    private final Consumer<String> progress;
    private final SplittableRandom rnd;
    private final List<Live> live = new ArrayList<>();
    private final Map<Long, Operation> outstanding = new HashMap<>();
    private long nextWord = 1;
    private long corrupted;
    private long staleReads;
    private long earlyFrees;
    private long heldBack;
    private long completed;

    private UcxOwner(Config config, TransportCache cache, PeerLink link, Arena arena, Consumer<String> progress) {
        this.config = config;
        this.cache = cache;
        this.link = link;
        this.progress = progress;
        this.rnd = new SplittableRandom(config.seed());
        this.allocator = new SlabAllocator(arena, 32, cache::free);
    }

    /**
     * Runs the owner: listens, has {@code launchPeer} start the peer (given the port; it may return null for a peer
     * started by hand), serves the run and returns its report.
     */
    public static TransportReport run(Config config, CacheKind kind, Function<Integer, @Nullable Process> launchPeer,
            Consumer<String> progress) throws IOException, InterruptedException {
        long started = System.nanoTime();
        try (UcpContext context = UcxRegistrar.newContext();
             UcpWorker worker = context.newWorker(new UcpWorkerParams());
             Arena arena = Arena.ofShared()) {
            UcxRegistrar registrar = new UcxRegistrar(context);
            TransportCache cache = kind == CacheKind.MRCACHE ? new MrcacheTransportCache(registrar)
                    : new NaiveTransportCache(registrar);
            try (PeerLink link = PeerLink.accept(worker, arena, config.listen(), config.window(),
                    config.peerViolates() ? UcxPeer.VIOLATE : 0, launchPeer)) {
                UcxOwner owner = new UcxOwner(config, cache, link, arena, progress);
                long lateWrites = owner.serve();
                String lostBecause = lateWrites < 0 ? link.failure() : null;
                String name = cache.name() + (config.peerViolates() ? " + violating peer" : "")
                        + (config.releaseAtSend() ? " releasing keys at send (BROKEN)" : "");
                return new TransportReport(name, owner.completed, owner.corrupted, owner.staleReads, owner.earlyFrees,
                        owner.heldBack, Math.max(0, lateWrites), cache.registrations(),
                        lateWrites < 0 ? (lostBecause != null ? lostBecause : "the peer was lost") : null,
                        (System.nanoTime() - started) / 1e9);
            } finally {
                cache.close();
            }
        }
    }

    /** The event loop; returns the peer's count of late writes, or -1 when the peer was lost. */
    private long serve() throws IOException, InterruptedException {
        long posted = 0;
        long lastReport = System.nanoTime();
        while (posted < config.operations() || !outstanding.isEmpty()) {
            link.progress();
            drainCompletions();
            if (link.failure() != null) {
                return peerLost();
            }
            if (posted < config.operations() && outstanding.size() < config.window() && post(posted + 1)) {
                posted++;
            }
            if (System.nanoTime() - lastReport > 1_000_000_000L) {
                lastReport = System.nanoTime();
                progress.accept(String.format("[%s] %,d / %,d operations, corrupted %,d, stale reads %,d", cache.name(),
                        completed, config.operations(), corrupted, staleReads));
            }
        }
        for (Live l : List.copyOf(live)) {
            free(l); // checks it first
        }
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (allocator.waitingFrees() > 0 && System.nanoTime() < deadline) {
            link.progress();
        }
        long lateWrites = link.stop();
        link.close(false);
        return lateWrites;
    }

    /** Posts one operation on a new or a live idle buffer; false when no memory is free just now. */
    private boolean post(long id) throws IOException {
        Live l = pickOrAllocate();
        if (l == null) {
            return false; // frees are held back: progress until their stages complete
        }
        check(l);
        int kind = rnd.nextBoolean() ? Wire.WRITE : Wire.READ;
        long word = kind == Wire.WRITE ? nextWord++ : 0;
        long readChecksum = kind == Wire.READ ? Wire.checksum(allocator.segment(l.buffer)) : 0;
        TransportCache.Held held = cache.acquire(l.buffer.address(), l.buffer.length(), ACCESS);
        link.send(new Wire.Request(id, kind, l.buffer.address(), l.buffer.length(), word, held.packedRemoteKey()));
        if (config.releaseAtSend()) {
            held.release(); // the broken protocol: the peer still holds the key, the cache no longer knows
        }
        l.inOperation = true;
        outstanding.put(id, new Operation(l, held, kind, word, readChecksum));
        if (rnd.nextInt(100) < config.freeEarlyPercent()) { // the application is done with it: frees it now
            earlyFrees++;
            free(l);
        }
        return true;
    }

    private @Nullable Live pickOrAllocate() {
        if (live.size() >= LIVE_TARGET && rnd.nextInt(100) >= 30) {
            for (int tries = 0; tries < 4; tries++) {
                Live l = live.get(rnd.nextInt(live.size()));
                if (!l.inOperation) {
                    return l;
                }
            }
        }
        SlabAllocator.Buffer b = allocator.allocate(SIZES[rnd.nextInt(SIZES.length)]);
        if (b == null) {
            return null;
        }
        Live l = new Live(b, nextWord++);
        fill(allocator.segment(b), l.word);
        live.add(l);
        return l;
    }

    private void drainCompletions() {
        Wire.Completion c;
        while ((c = link.poll()) != null) {
            Operation op = outstanding.remove(c.op());
            if (op == null) {
                throw new IllegalStateException("a completion for operation " + c.op() + ", which is not outstanding");
            }
            if (!config.releaseAtSend()) {
                op.held().release(); // the peer is done with the keys: a held-back free may complete now
            }
            completed++;
            if (op.kind() == Wire.READ && c.checksum() != op.readChecksum()) {
                staleReads++; // the peer read bytes this buffer did not hold when the read was posted
            }
            Live l = op.live();
            l.inOperation = false;
            if (l.freed) {
                continue; // its memory is the allocator's again (or will be once the free's stage completes)
            }
            if (op.kind() == Wire.WRITE) {
                l.word = op.word();
            }
            check(l);
            if (rnd.nextInt(100) < 20) {
                free(l);
            }
        }
    }

    /** The application frees {@code l} (checking its bytes first, unless a peer may still be writing them). */
    private void free(Live l) {
        if (!l.inOperation) {
            check(l);
        }
        live.remove(l);
        l.freed = true;
        long before = allocator.waitingFrees();
        allocator.free(l.buffer);
        if (l.inOperation && allocator.waitingFrees() > before) {
            heldBack++;
        }
    }

    /** Ground truth: every word of the buffer is the one its owner, or the peer's completed write, put there. */
    private void check(Live l) {
        MemorySegment s = allocator.segment(l.buffer);
        for (long i = 0; i + 8 <= s.byteSize(); i += 8) {
            if (s.get(ValueLayout.JAVA_LONG, i) != l.word) {
                corrupted++;
                fill(s, l.word); // counted once: the owner restores it
                return;
            }
        }
    }

    private static void fill(MemorySegment s, long word) {
        for (long i = 0; i + 8 <= s.byteSize(); i += 8) {
            s.set(ValueLayout.JAVA_LONG, i, word);
        }
    }

    /**
     * The peer is gone or failing: no more operations; its keys are released only once its endpoint is closed
     * and its control connection has ended, so that no write of it can still arrive.
     */
    private long peerLost() throws IOException, InterruptedException {
        progress.accept("ucx owner: the peer is lost (" + link.failure() + "); closing its endpoint before releasing"
                + " its " + outstanding.size() + " operation(s)' keys");
        link.close(true);
        for (Operation op : outstanding.values()) {
            if (!config.releaseAtSend()) {
                op.held().release();
            }
        }
        progress.accept("ucx owner: released " + outstanding.size() + " lease(s) of the lost peer after its endpoint"
                + " closed" + (link.controlClosed() ? " and its control connection ended; no write of it can arrive"
                        + " any more" : "; its control connection was still open after 30 s"));
        outstanding.clear();
        for (Live l : List.copyOf(live)) {
            free(l);
        }
        return -1;
    }

}
