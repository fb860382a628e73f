package io.mrcache.core;

import org.jspecify.annotations.Nullable;

/**
 * One successful {@link Registrar#register}: the registered range, its rights and keys.
 *
 * <p>Verbs keys are 32-bit integers ({@link #lkey}, {@link #rkey}). A transport whose remote keys are something
 * else gets them through {@link #attachment}: UCX's, for example, is a packed byte buffer that the registrar
 * makes once, at registration, and a transport reads from its lease
 * ({@code lease.attachment(UcxKeys.class)}), with no map of its own keyed by address. Reading it costs the hit
 * path nothing: the cache keeps the registration's fields, the attachment among them, in the region a lease holds
 * (so {@code lease.registration()} is a record equal to this one, not this object).
 *
 * @param address          first registered byte
 * @param length           registered bytes
 * @param access           {@link Access} mask granted
 * @param lkey             key for local work requests
 * @param rkey             key a remote peer presents
 * @param protectionDomain the protection domain the keys belong to (an opaque id)
 * @param handle           the registrar's own handle (an {@code ibv_mr*}, a simulated region id)
 * @param attachment       the registrar's own object for this registration (keys that are not integers, the
 *                         native handle object), or null where it needs none
 */
public record Registration(long address, long length, int access, int lkey, int rkey, long protectionDomain,
        long handle, @Nullable Object attachment) {

    /** A registration with nothing attached (verbs, the simulated HCA). */
    public Registration(long address, long length, int access, int lkey, int rkey, long protectionDomain,
            long handle) {
        this(address, length, access, lkey, rkey, protectionDomain, handle, null);
    }

    public long end() {
        return address + length;
    }

    /**
     * The attachment as a {@code type}.
     *
     * @throws IllegalStateException when the registrar attached nothing, or something else (the message names
     *                               what is there and which registrar makes a {@code type})
     */
    public <T> T attachment(Class<T> type) {
        Object a = attachment;
        if (!type.isInstance(a)) {
            throw notA(type);
        }
        return type.cast(a);
    }

    /** What {@link #attachment(Class)} throws when the attachment is not a {@code type} (also for a lease's). */
    IllegalStateException notA(Class<?> type) {
        Object a = attachment;
        return new IllegalStateException(this + " carries " + (a == null ? "no attachment"
                : "a " + a.getClass().getName()) + ", not a " + type.getName()
                + ": was it made by the registrar that attaches one (for UCX keys, UcxRegistrar)?");
    }

    @Override
    public String toString() {
        return "Registration[0x" + Long.toHexString(address) + "+" + length + " " + Access.describe(access)
                + " lkey=0x" + Integer.toHexString(lkey) + " rkey=0x" + Integer.toHexString(rkey) + " pd="
                + protectionDomain + "]";
    }
}
