package io.mrcache.core;

/**
 * A lease that became unreachable without {@link Lease#close()} (reported only with leak detection on).
 *
 * @param address    requested start address
 * @param length     requested length
 * @param access     requested rights
 * @param acquiredAt a throwable whose stack trace is the acquire's
 */
public record LeakReport(long address, long length, int access, Throwable acquiredAt) {
    @Override
    public String toString() {
        return "LEAK: lease on [0x" + Long.toHexString(address) + ", +" + length + ") " + Access.describe(access)
                + " became unreachable without close(); its registration stays pinned until close() of the cache"
                + " is never reached. Acquired at:";
    }
}
