package io.mrcache.ucx.transport;

import io.mrcache.core.Access;
import io.mrcache.core.Lease;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationCache;
import io.mrcache.ucx.UcxKeys;
import io.mrcache.ucx.UcxRegistrar;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;

/**
 * What caching saves on the real transport: per message size, RDMA writes by the peer into one owner buffer,
 * one at a time (request, write, completion), with a registration per message (register, pack the key, send,
 * wait for the completion, deregister) against a cache hit per message (acquire, send, wait, release). Both
 * sides run in each repeat, alternating, after a repeat that warms both up and is left out.
 */
public final class UcxSavings {
    /** Message sizes: 4 KiB to 4 MiB. */
    public static final long[] SIZES = {4L << 10, 16L << 10, 64L << 10, 256L << 10, 1L << 20, 4L << 20};
    private static final int ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE;

    private UcxSavings() {
    }

    /**
     * One size's measurements, each array one value per repeat.
     *
     * @param bytes            message size
     * @param messages         messages per repeat and side
     * @param registeringRate  messages per second with a registration per message
     * @param cachedRate       messages per second with a cache hit per message
     * @param registeringP50   median message latency with a registration per message, seconds
     * @param cachedP50        median message latency with a cache hit, seconds
     * @param registrationP50  median time of the register and deregister calls themselves, seconds
     */
    public record Row(long bytes, int messages, double[] registeringRate, double[] cachedRate, double[] registeringP50,
            double[] cachedP50, double[] registrationP50) {
    }

    /** Messages per repeat for a size: fewer for large messages, so that each repeat takes about as long. */
    static int messagesFor(long bytes) {
        return (int) Math.max(40, Math.min(2000, (256L << 20) / bytes));
    }

    /** Runs every size; the peer is started by {@code launchPeer} (given the loopback port). */
    public static List<Row> run(int repeats, Function<Integer, @Nullable Process> launchPeer, Consumer<String> progress)
            throws IOException, InterruptedException {
        if (repeats < 1) {
            throw new IllegalArgumentException("repeats " + repeats + " must be >= 1");
        }
        List<Row> rows = new ArrayList<>();
        try (UcpContext context = UcxRegistrar.newContext();
             UcpWorker worker = context.newWorker(new UcpWorkerParams());
             Arena arena = Arena.ofShared();
             PeerLink link = PeerLink.accept(worker, arena, new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                     1, 0, launchPeer)) {
            UcxRegistrar registrar = new UcxRegistrar(context);
            try (RegistrationCache cache = RegistrationCache.builder(registrar).build()) {
                long op = 1;
                for (long bytes : SIZES) {
                    MemorySegment buffer = arena.allocate(bytes, 4096).fill((byte) 1); // a transport's buffer: touched
                    int n = messagesFor(bytes);
                    double[][] out = new double[5][repeats];
                    for (int r = -1; r < repeats; r++) { // repeat -1 warms both sides up and is left out
                        double[] registering = new double[n];
                        double[] registration = new double[n];
                        double[] cached = new double[n];
                        long t0 = System.nanoTime();
                        for (int i = 0; i < n; i++) {
                            long a = System.nanoTime();
                            Registration reg = registrar.register(buffer.address(), bytes, ACCESS);
                            long b = System.nanoTime();
                            write(link, op++, buffer, bytes, UcxKeys.of(reg).packedRemoteKey());
                            long c = System.nanoTime();
                            registrar.deregister(reg);
                            long d = System.nanoTime();
                            registering[i] = (d - a) / 1e9;
                            registration[i] = ((b - a) + (d - c)) / 1e9;
                        }
                        long t1 = System.nanoTime();
                        for (int i = 0; i < n; i++) {
                            long a = System.nanoTime();
                            try (Lease lease = cache.acquire(buffer.address(), bytes, ACCESS)) {
                                write(link, op++, buffer, bytes, UcxKeys.of(lease).packedRemoteKey());
                            }
                            cached[i] = (System.nanoTime() - a) / 1e9;
                        }
                        long t2 = System.nanoTime();
                        if (r >= 0) {
                            out[0][r] = n / ((t1 - t0) / 1e9);
                            out[1][r] = n / ((t2 - t1) / 1e9);
                            out[2][r] = median(registering);
                            out[3][r] = median(cached);
                            out[4][r] = median(registration);
                        }
                    }
                    cache.invalidateAndWait(buffer.address(), bytes);
                    rows.add(new Row(bytes, n, out[0], out[1], out[2], out[3], out[4]));
                    progress.accept(String.format("transport savings: %,d bytes done (%d repeats of %,d messages each"
                            + " side)", bytes, repeats, n));
                }
            }
            link.stop();
            link.close(false);
        }
        return rows;
    }

    private static void write(PeerLink link, long op, MemorySegment buffer, long bytes, java.nio.ByteBuffer key)
            throws IOException {
        link.send(new Wire.Request(op, Wire.WRITE, buffer.address(), bytes, op, key));
        Wire.Completion c = link.await();
        if (c == null || c.op() != op) {
            throw new IOException("message " + op + ": " + (c == null ? "the peer was lost: " + link.failure()
                    : "completion for " + c.op()));
        }
    }

    static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }
}
