package io.mrcache.ucx.transport;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;

/**
 * The transport's two messages, as fixed-size tagged UCX messages. A request (owner to peer): operation id,
 * kind, the buffer's address and length, the word to write, the packed remote key. A completion (peer to owner):
 * operation id and, for a read, the checksum of what the peer read.
 */
final class Wire {
    static final long REQUEST_TAG = 0x5245_5155L;
    static final long COMPLETION_TAG = 0x434F_4D50L;
    static final int REQUEST_BYTES = 256;
    static final int COMPLETION_BYTES = 32;
    static final int MAX_KEY_BYTES = REQUEST_BYTES - 40;

    static final int WRITE = 1;
    static final int READ = 2;
    /** The owner is done: the peer answers and leaves. */
    static final int STOP = 3;

    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;

    private Wire() {
    }

    record Request(long op, int kind, long address, long length, long word, ByteBuffer key) {
    }

    record Completion(long op, long checksum) {
    }

    static void encode(MemorySegment m, Request r) {
        ByteBuffer key = r.key().duplicate();
        if (key.remaining() > MAX_KEY_BYTES) {
            throw new IllegalArgumentException("a packed remote key of " + key.remaining() + " bytes: at most "
                    + MAX_KEY_BYTES + " fit a request");
        }
        m.set(LONG, 0, r.op());
        m.set(INT, 8, r.kind());
        m.set(INT, 12, key.remaining());
        m.set(LONG, 16, r.address());
        m.set(LONG, 24, r.length());
        m.set(LONG, 32, r.word());
        MemorySegment.copy(MemorySegment.ofBuffer(key), 0, m, 40, key.remaining());
    }

    static Request decodeRequest(MemorySegment m) {
        int keyBytes = m.get(INT, 12);
        ByteBuffer key = ByteBuffer.allocateDirect(keyBytes);
        MemorySegment.copy(m, 40, MemorySegment.ofBuffer(key), 0, keyBytes);
        return new Request(m.get(LONG, 0), m.get(INT, 8), m.get(LONG, 16), m.get(LONG, 24), m.get(LONG, 32), key);
    }

    static void encode(MemorySegment m, Completion c) {
        m.set(LONG, 0, c.op());
        m.set(LONG, 8, c.checksum());
    }

    static Completion decodeCompletion(MemorySegment m) {
        return new Completion(m.get(LONG, 0), m.get(LONG, 8));
    }

    /** The checksum both sides compute over a buffer's words. */
    static long checksum(MemorySegment bytes) {
        long h = 0x9E3779B97F4A7C15L;
        for (long i = 0; i + 8 <= bytes.byteSize(); i += 8) {
            h = (h ^ bytes.get(LONG, i)) * 0xBF58476D1CE4E5B9L;
        }
        return h;
    }
}
