package io.mrcache.ucx.transport;

import io.mrcache.ucx.UcxRegistrar;
import io.mrcache.ucx.UcxVersion;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.List;
import java.util.function.Consumer;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpRemoteKey;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucp.UcpRequestParams;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;

/**
 * The peer process: connects to an owner, then for each request it receives does the RDMA write or read through
 * jucx with the packed remote key the request carries, waits for it to complete, and sends a completion message.
 * It uses a key only between the request and its completion message, as the protocol asks, unless told to
 * misbehave: a violating peer also writes with keys of earlier operations after their completion (what only
 * revocation by hardware could stop).
 */
public final class UcxPeer {
    /** Flag the owner sends: write with old keys after their completion (outside the safety model). */
    static final int VIOLATE = 1;
    /** The largest operation a peer serves (the savings benchmark's 4 MiB messages). */
    public static final long MAX_BYTES = 4L << 20;
    /** A violating peer writes late once per this many operations. */
    static final int LATE_WRITE_EVERY = 4;

    private UcxPeer() {
    }

    /**
     * Starts a peer in a JVM of its own (this JVM's {@code java} and class path), connecting to {@code port} on the
     * loopback address; its output is discarded.
     */
    public static Process launch(int port) {
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                UcxPeer.class.getName(), "127.0.0.1", Integer.toString(port));
        try {
            return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("could not start the peer JVM (" + cmd.getFirst() + ")", e);
        }
    }

    /** {@code UcxPeer HOST PORT}: connects to an owner and serves it until it says stop. */
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: UcxPeer HOST PORT");
            System.exit(2);
        }
        long ops = run(args[0], Integer.parseInt(args[1]), System.err::println);
        System.err.println("ucx peer: served " + ops + " operations");
    }

    /** Serves the owner at {@code host:port}; returns the operations served. */
    public static long run(String host, int port, Consumer<String> log) throws IOException, Exception {
        try (UcpContext context = UcxRegistrar.newContext();
             UcpWorker worker = context.newWorker(new UcpWorkerParams());
             Arena arena = Arena.ofConfined();
             Rendezvous rv = new Rendezvous(connect(host, port))) {
            rv.sendBytes(worker.getAddress());
            ByteBuffer ownerAddress = rv.receiveBytes();
            int flags = rv.receiveInt();
            UcpEndpoint owner = worker.newEndpoint(new UcpEndpointParams().setUcpAddress(ownerAddress)
                    .setPeerErrorHandlingMode().setErrorHandler((ep, status, message) ->
                            log.accept("ucx peer: the owner's endpoint failed: " + message)));
            try {
                return serve(worker, owner, arena, (flags & VIOLATE) != 0);
            } finally {
                UcpRequest closing = owner.closeNonBlockingFlush();
                while (!closing.isCompleted()) {
                    worker.progress();
                }
            }
        }
    }

    private static Socket connect(String host, int port) throws IOException {
        Socket s = new Socket();
        s.connect(new InetSocketAddress(host, port), 10_000);
        return s;
    }

    /** An operation the peer completed, whose key a violating peer keeps using. */
    private record Done(ByteBuffer key, long address, long length) {
    }

    private static long serve(UcpWorker worker, UcpEndpoint owner, Arena arena, boolean violate) throws Exception {
        UcpRequestParams host = new UcpRequestParams().setMemoryType(UcxVersion.HOST_MEMORY);
        MemorySegment request = arena.allocate(Wire.REQUEST_BYTES, 8);
        MemorySegment completion = arena.allocate(Wire.COMPLETION_BYTES, 8);
        MemorySegment data = arena.allocate(MAX_BYTES, 4096);
        MemorySegment garbage = arena.allocate(SlabAllocator.CHUNK, 4096).fill((byte) 0xBD);
        ArrayDeque<Done> done = new ArrayDeque<>();
        long served = 0;
        long lateWrites = 0;
        for (;;) {
            UcpRequest recv = worker.recvTaggedNonBlocking(request.address(), Wire.REQUEST_BYTES, Wire.REQUEST_TAG,
                    -1L, null, host);
            progressUntil(worker, recv);
            Wire.Request r = Wire.decodeRequest(request);
            long checksum = 0;
            if (r.kind() != Wire.STOP) {
                if (r.length() <= 0 || r.length() > MAX_BYTES) {
                    throw new IOException("a request for " + r.length() + " bytes: a peer serves 1.." + MAX_BYTES);
                }
                UcpRemoteKey key = owner.unpackRemoteKey(r.key());
                try {
                    if (r.kind() == Wire.WRITE) {
                        MemorySegment src = data.asSlice(0, r.length());
                        for (long i = 0; i < r.length(); i += 8) {
                            src.set(ValueLayout.JAVA_LONG, i, r.word());
                        }
                        owner.putNonBlocking(src.address(), r.length(), r.address(), key, null);
                    } else {
                        owner.getNonBlocking(r.address(), key, data.address(), r.length(), null);
                    }
                    progressUntil(worker, owner.flushNonBlocking(null));
                } finally {
                    key.close();
                }
                if (r.kind() == Wire.READ) {
                    checksum = Wire.checksum(data.asSlice(0, r.length()));
                }
                served++;
            }
            // a STOP's completion carries the count of late writes (zero for a peer that keeps the protocol)
            Wire.encode(completion, new Wire.Completion(r.op(), r.kind() == Wire.STOP ? lateWrites : checksum));
            progressUntil(worker, owner.sendTaggedNonBlocking(completion.address(), Wire.COMPLETION_BYTES,
                    Wire.COMPLETION_TAG, null, host));
            if (r.kind() == Wire.STOP) {
                return served;
            }
            if (violate && r.kind() == Wire.WRITE) {
                done.addLast(new Done(r.key(), r.address(), r.length()));
                if (served % LATE_WRITE_EVERY == 0 && done.size() > 2) { // a key whose operation completed earlier
                    Done old = done.pollFirst();
                    lateWrite(worker, owner, old, garbage);
                    lateWrites++;
                }
                while (done.size() > 16) {
                    done.pollFirst();
                }
            }
        }
    }

    /** A write with the key of an operation that completed already: outside the protocol. */
    private static void lateWrite(UcpWorker worker, UcpEndpoint owner, Done old, MemorySegment garbage) throws Exception {
        UcpRemoteKey key = owner.unpackRemoteKey(old.key());
        try {
            owner.putNonBlocking(garbage.address(), old.length(), old.address(), key, null);
            progressUntil(worker, owner.flushNonBlocking(null));
        } finally {
            key.close();
        }
    }

    static void progressUntil(UcpWorker worker, UcpRequest request) throws Exception {
        while (!request.isCompleted()) {
            worker.progress();
        }
        if (request.getStatus() < 0) {
            throw new IOException("UCX request failed with status " + request.getStatus());
        }
    }
}
