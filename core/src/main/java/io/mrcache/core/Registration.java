package io.mrcache.core;

/**
 * One successful {@link Registrar#register}: the registered range, its rights and keys.
 *
 * @param address          first registered byte
 * @param length           registered bytes
 * @param access           {@link Access} mask granted
 * @param lkey             key for local work requests
 * @param rkey             key a remote peer presents
 * @param protectionDomain the protection domain the keys belong to (an opaque id)
 * @param handle           the registrar's own handle (an {@code ibv_mr*}, a simulated region id)
 */
public record Registration(long address, long length, int access, int lkey, int rkey, long protectionDomain,
        long handle) {

    public long end() {
        return address + length;
    }

    @Override
    public String toString() {
        return "Registration[0x" + Long.toHexString(address) + "+" + length + " " + Access.describe(access)
                + " lkey=0x" + Integer.toHexString(lkey) + " rkey=0x" + Integer.toHexString(rkey) + " pd="
                + protectionDomain + "]";
    }
}
