package io.mrcache.ucx;

import io.mrcache.core.Lease;
import io.mrcache.core.Registration;
import java.nio.ByteBuffer;
import org.jspecify.annotations.Nullable;
import org.openucx.jucx.ucp.UcpMemory;

/**
 * What {@link UcxRegistrar} attaches to each registration: UCX's memory handle and, for a registration with remote
 * rights, its remote key packed once at registration ({@code ucp_rkey_pack}, about half a microsecond), for the
 * transport to send to its peer. A transport reads it from its lease: {@code UcxKeys.of(lease).packedRemoteKey()}.
 *
 * @param memory    the UCX memory handle ({@code ucp_mem_h}); the registrar deregisters it
 * @param remoteKey the packed remote key (read-only; its position at 0), or null when no remote right was asked
 */
public record UcxKeys(UcpMemory memory, @Nullable ByteBuffer remoteKey) {

    /** The keys of the registration {@code lease} holds. */
    public static UcxKeys of(Lease lease) {
        return lease.attachment(UcxKeys.class);
    }

    /** The keys of {@code registration}, made by a {@link UcxRegistrar}. */
    public static UcxKeys of(Registration registration) {
        return registration.attachment(UcxKeys.class);
    }

    /**
     * The packed remote key: a fresh read-only view, position 0, for the peer's {@code unpackRemoteKey}.
     *
     * @throws IllegalStateException when the registration has no remote right (nothing was packed)
     */
    public ByteBuffer packedRemoteKey() {
        ByteBuffer k = remoteKey;
        if (k == null) {
            throw new IllegalStateException("no remote key: the registration at 0x" + Long.toHexString(memory.getAddress())
                    + " was made without a remote right; acquire with Access.REMOTE_READ or REMOTE_WRITE");
        }
        return k.duplicate();
    }
}
