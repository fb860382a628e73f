package io.mrcache.ucx.transport;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.ByteBuffer;

/**
 * The TCP connection over which owner and peer exchange their UCX worker addresses (and the owner tells the peer
 * how to behave). It stays open for the whole run: its end tells the owner that the peer process is gone.
 */
final class Rendezvous implements AutoCloseable {
    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;

    Rendezvous(Socket socket) throws IOException {
        this.socket = socket;
        socket.setTcpNoDelay(true);
        this.in = new DataInputStream(socket.getInputStream());
        this.out = new DataOutputStream(socket.getOutputStream());
    }

    void sendBytes(ByteBuffer bytes) throws IOException {
        ByteBuffer b = bytes.duplicate();
        byte[] a = new byte[b.remaining()];
        b.get(a);
        out.writeInt(a.length);
        out.write(a);
        out.flush();
    }

    ByteBuffer receiveBytes() throws IOException {
        int n = in.readInt();
        if (n <= 0 || n > 1 << 20) {
            throw new IOException("a worker address of " + n + " bytes: not an mrcache transport peer on the other"
                    + " end of " + socket.getRemoteSocketAddress());
        }
        byte[] a = new byte[n];
        in.readFully(a);
        ByteBuffer direct = ByteBuffer.allocateDirect(n);
        direct.put(a).flip();
        return direct;
    }

    void sendInt(int v) throws IOException {
        out.writeInt(v);
        out.flush();
    }

    int receiveInt() throws IOException {
        return in.readInt();
    }

    /** Blocks until the other side closes the connection (or its process dies). */
    void awaitClose() {
        try {
            while (in.read() >= 0) {
                // nothing else is sent after the handshake
            }
        } catch (IOException e) {
            // reset: gone as well
        }
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException e) {
            // closing: nothing to do
        }
    }
}
