package io.mrcache.ucx.transport;

import io.mrcache.ucx.UcxVersion;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucp.UcpRequestParams;
import org.openucx.jucx.ucp.UcpWorker;

/**
 * The owner's link to its peer: the TCP rendezvous (worker addresses exchanged, the peer told how to behave, the
 * connection watched for the peer's end), the UCX endpoint, the requests it sends and the completions it
 * receives (a ring of posted tagged receives). One thread uses it, progressing the worker.
 */
final class PeerLink implements AutoCloseable {
    private final UcpWorker worker;
    private final Rendezvous rendezvous;
    private final UcpEndpoint endpoint;
    private final @Nullable Process peer;
    private final UcpRequestParams host = new UcpRequestParams().setMemoryType(UcxVersion.HOST_MEMORY);
    private final MemorySegment requestBuffer;
    private final MemorySegment completionBuffers;
    private final ArrayDeque<Wire.Completion> completions = new ArrayDeque<>();
    /** The posted completion receives, one per slot (cancelled at close, so UCX gets its requests back). */
    private final UcpRequest[] receives;
    private volatile @Nullable String failure;
    /** The control connection ended: the peer process is gone, or it left. */
    private volatile boolean controlClosed;
    private boolean closed;

    private PeerLink(UcpWorker worker, Rendezvous rendezvous, ByteBuffer peerAddress, @Nullable Process peer,
            Arena arena, int window) {
        this.worker = worker;
        this.rendezvous = rendezvous;
        this.peer = peer;
        this.requestBuffer = arena.allocate(Wire.REQUEST_BYTES, 8);
        this.completionBuffers = arena.allocate((long) Wire.COMPLETION_BYTES * window, 8);
        this.receives = new UcpRequest[window];
        this.endpoint = worker.newEndpoint(new UcpEndpointParams().setUcpAddress(peerAddress)
                .setPeerErrorHandlingMode().setErrorHandler((ep, status, message) ->
                        failure = "its endpoint failed (UCX status " + status + ": " + message + ")"));
        Thread.ofPlatform().daemon().name("ucx-owner-peer-watch").start(() -> {
            rendezvous.awaitClose();
            controlClosed = true;
            if (failure == null) {
                failure = "its control connection closed";
            }
        });
        for (int slot = 0; slot < window; slot++) {
            postCompletionReceive(slot);
        }
    }

    /**
     * Listens on {@code listen}, has {@code launchPeer} start the peer (given the port; null for a peer started by
     * hand), accepts it within 60 s and exchanges addresses; {@code flags} tell the peer how to behave.
     */
    static PeerLink accept(UcpWorker worker, Arena arena, InetSocketAddress listen, int window, int flags,
            Function<Integer, @Nullable Process> launchPeer) throws IOException {
        try (ServerSocket server = new ServerSocket()) {
            server.bind(listen);
            server.setSoTimeout(60_000);
            Process peer = launchPeer.apply(server.getLocalPort());
            Socket socket;
            try {
                socket = server.accept();
            } catch (SocketTimeoutException e) {
                throw new IOException("no peer connected to " + server.getLocalSocketAddress() + " within 60 s"
                        + (peer != null && !peer.isAlive() ? " (the peer process exited with " + peer.exitValue()
                                + ")" : ""), e);
            }
            Rendezvous rv = new Rendezvous(socket);
            ByteBuffer peerAddress = rv.receiveBytes();
            rv.sendBytes(worker.getAddress());
            rv.sendInt(flags);
            return new PeerLink(worker, rv, peerAddress, peer, arena, window);
        }
    }

    /** Why the peer is lost, or null while it is not. */
    @Nullable String failure() {
        return failure;
    }

    void progress() throws IOException {
        try {
            worker.progress();
        } catch (Exception e) {
            throw new IOException("UCX worker progress failed", e);
        }
    }

    /** Sends {@code r}, progressing until the send completed (or the peer is lost). */
    void send(Wire.Request r) throws IOException {
        Wire.encode(requestBuffer, r);
        UcpRequest sent = endpoint.sendTaggedNonBlocking(requestBuffer.address(), Wire.REQUEST_BYTES, Wire.REQUEST_TAG,
                null, host);
        while (!sent.isCompleted() && failure == null) {
            progress();
        }
    }

    /** The next completion received, or null (it does not progress). */
    Wire.@Nullable Completion poll() {
        return completions.pollFirst();
    }

    /** Progresses until a completion arrives; null when the peer is lost first. */
    Wire.@Nullable Completion await() throws IOException {
        Wire.Completion c;
        while ((c = completions.pollFirst()) == null) {
            if (failure != null) {
                return null;
            }
            progress();
        }
        return c;
    }

    /** Tells the peer to stop; returns what its STOP completion carries (its count of late writes). */
    long stop() throws IOException {
        send(new Wire.Request(Long.MAX_VALUE, Wire.STOP, 0, 0, 0, ByteBuffer.allocate(0)));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline && failure == null) {
            progress();
            Wire.Completion c = completions.pollFirst();
            if (c != null && c.op() == Long.MAX_VALUE) {
                return c.checksum();
            }
        }
        throw new IOException("the peer did not answer STOP within 30 s" + (failure == null ? "" : ": " + failure));
    }

    /**
     * Closes the endpoint (flushing it, or by force when the peer is lost) and waits for the peer process to end;
     * after it, no write of the peer can arrive.
     */
    void close(boolean force) throws IOException, InterruptedException {
        if (closed) {
            return;
        }
        closed = true;
        for (UcpRequest r : receives) {
            if (r != null && !r.isCompleted()) {
                worker.cancelRequest(r);
            }
        }
        UcpRequest closing = force ? endpoint.closeNonBlockingForce() : endpoint.closeNonBlockingFlush();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!closing.isCompleted() && System.nanoTime() < deadline) {
            progress();
        }
        if (peer != null && !peer.waitFor(30, TimeUnit.SECONDS)) {
            peer.destroyForcibly();
        }
        if (force) { // a lost peer's writes can arrive until its control connection ends (CMA writes directly)
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!controlClosed && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
        }
        rendezvous.close();
    }

    /** Whether the peer's control connection has ended. */
    boolean controlClosed() {
        return controlClosed;
    }

    @Override
    public void close() throws IOException {
        try {
            close(failure != null);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void postCompletionReceive(int slot) {
        long offset = (long) slot * Wire.COMPLETION_BYTES;
        receives[slot] = worker.recvTaggedNonBlocking(completionBuffers.address() + offset, Wire.COMPLETION_BYTES,
                Wire.COMPLETION_TAG, -1L, new UcxCallback() {
                    @Override
                    public void onSuccess(UcpRequest request) {
                        completions.addLast(Wire.decodeCompletion(completionBuffers.asSlice(offset,
                                Wire.COMPLETION_BYTES)));
                        postCompletionReceive(slot);
                    }

                    @Override
                    public void onError(int status, String message) {
                        if (closed) {
                            return; // cancelled at close
                        }
                        if (failure == null) {
                            failure = "a completion receive failed (UCX status " + status + ": " + message + ")";
                        }
                    }
                }, host);
    }
}
