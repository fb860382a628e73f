package io.mrcache.ucx;

import io.mrcache.core.Access;
import io.mrcache.core.LiveKeys;
import io.mrcache.core.Registrar;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationException;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import org.openucx.jucx.UcxException;
import org.openucx.jucx.ucp.UcpConstants;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpMemMapParams;
import org.openucx.jucx.ucp.UcpMemory;
import org.openucx.jucx.ucp.UcpParams;

/**
 * A {@link Registrar} over UCX ({@code ucp_mem_map} and {@code ucp_mem_unmap} through jucx's
 * {@link UcpContext#memoryMap} and {@link UcpMemory#deregister}). Each registration carries its {@link UcxKeys}
 * as its attachment: the memory handle and, when a remote right was asked for, the packed remote key.
 *
 * <p>UCX's keys are not 32-bit integers: {@link Registration#lkey()} and {@link Registration#rkey()} are this
 * registrar's own numbers for the registration (unique while it lives, never sent to a peer); a peer needs the
 * packed key ({@link UcxKeys#packedRemoteKey()}). Rights map to UCX's protection flags
 * ({@code UCP_MEM_MAP_PROT_*}). Every {@link UcxException} becomes a {@link RegistrationException} with UCX's
 * status and the errno the cache acts on ({@link UcxStatus}): ENOMEM for {@code UCS_ERR_NO_MEMORY}, so the cache
 * evicts idle regions and retries once.
 *
 * <p>Without an RDMA device UCX emulates RMA in software and deregistration revokes nothing (see
 * {@link UcxVersion}): the cache's rule that memory is reused only after {@code invalidate}'s stage completes, and
 * the transport's rule that a peer uses a key only while the owner holds its lease, are what protect memory.
 */
public final class UcxRegistrar implements Registrar {
    private static final AtomicInteger DOMAINS = new AtomicInteger();

    private final UcpContext context;
    private final boolean ownsContext;
    private final long domain = DOMAINS.incrementAndGet();
    private final LiveKeys keys;

    /** A registrar over {@code context} (which needs the RMA feature); closing it leaves the context open. */
    public UcxRegistrar(UcpContext context) {
        this(context, false);
    }

    private UcxRegistrar(UcpContext context, boolean ownsContext) {
        this(context, ownsContext, new LiveKeys());
    }

    private UcxRegistrar(UcpContext context, boolean ownsContext, LiveKeys keys) {
        this.context = context;
        this.ownsContext = ownsContext;
        this.keys = keys;
    }

    /** Test seam: a registrar whose keys come from {@code keys} (started near the top, to see the wrap). */
    static UcxRegistrar withKeys(UcpContext context, LiveKeys keys) {
        return new UcxRegistrar(context, false, keys);
    }

    /** A registrar over a context of its own (RMA, tagged and active messages), closed with it. */
    public static UcxRegistrar open() {
        return new UcxRegistrar(newContext(), true);
    }

    /** A UCX context with the features a transport on this module uses: RMA, tagged and active messages. */
    public static UcpContext newContext() {
        return new UcpContext(new UcpParams().requestRmaFeature().requestTagFeature().requestAmFeature()
                .setMtWorkersShared(true));
    }

    /** The context registrations are made in (a transport's workers must belong to it). */
    public UcpContext context() {
        return context;
    }

    @Override
    public Registration register(long address, long length, int access) {
        if (address == 0 || length <= 0) { // what UCX refuses: refused here, since jucx's refusal is unsafe
            throw new RegistrationException("ucp_mem_map(0x" + Long.toHexString(address) + ", " + length + ") refused"
                    + " before the call: UCX rejects a null address or an empty range (UCS_ERR_INVALID_PARAM), and"
                    + " jucx " + UcxVersion.JUCX + " goes on after a failed ucp_mem_map with an uninitialized handle"
                    + " (see UcxVersion)", UcxStatus.EINVAL);
        }
        UcpMemory memory;
        try {
            memory = context.memoryMap(new UcpMemMapParams().setAddress(address).setLength(length)
                    .setProtection(protection(access)));
        } catch (UcxException e) {
            throw UcxStatus.failed("ucp_mem_map", address, length, e);
        }
        ByteBuffer packed = null;
        if (Access.isRemote(access)) {
            try {
                packed = copyOf(memory.getRemoteKeyBuffer());
            } catch (UcxException e) {
                unmapQuietly(memory, e);
                throw UcxStatus.failed("ucp_rkey_pack", address, length, e);
            }
        }
        int key;
        try {
            key = keys.next(); // never a live registration's key, also once the counter wrapped
        } catch (RegistrationException e) {
            unmapQuietly(memory, e);
            throw e;
        }
        return new Registration(address, length, access, key, key, domain, key, new UcxKeys(memory, packed));
    }

    @Override
    public void deregister(Registration registration) {
        UcpMemory memory = UcxKeys.of(registration).memory();
        if (memory.getNativeId() == null) { // jucx would throw a NullPointerException
            throw new RegistrationException("ucp_mem_unmap(0x" + Long.toHexString(registration.address()) + ", "
                    + registration.length() + "): " + registration + " was already deregistered (a second"
                    + " deregistration of one registration)", UcxStatus.EINVAL);
        }
        try {
            memory.deregister();
        } catch (UcxException e) {
            throw UcxStatus.failed("ucp_mem_unmap", registration.address(), registration.length(), e);
        }
        keys.release((int) registration.handle()); // dead now: its key may be handed out again
    }

    @Override
    public long protectionDomain() {
        return domain;
    }

    @Override
    public void close() {
        if (ownsContext) {
            context.close();
        }
    }

    /** UCX's protection flags for {@link Access} bits. */
    static long protection(int access) {
        long prot = 0;
        if ((access & Access.LOCAL_READ) != 0) {
            prot |= UcpConstants.UCP_MEM_MAP_PROT_LOCAL_READ;
        }
        if ((access & Access.LOCAL_WRITE) != 0) {
            prot |= UcpConstants.UCP_MEM_MAP_PROT_LOCAL_WRITE | UcpConstants.UCP_MEM_MAP_PROT_LOCAL_READ;
        }
        if ((access & Access.REMOTE_READ) != 0) {
            prot |= UcpConstants.UCP_MEM_MAP_PROT_REMOTE_READ;
        }
        if ((access & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) != 0) {
            prot |= UcpConstants.UCP_MEM_MAP_PROT_REMOTE_WRITE | UcpConstants.UCP_MEM_MAP_PROT_REMOTE_READ;
        }
        return prot;
    }

    /** The packed key, copied out of UCX's buffer (which jucx frees with the memory handle). */
    private static ByteBuffer copyOf(ByteBuffer ucx) {
        ByteBuffer copy = ByteBuffer.allocateDirect(ucx.remaining());
        copy.put(ucx.duplicate()).flip();
        return copy.asReadOnlyBuffer();
    }

    private static void unmapQuietly(UcpMemory memory, Exception cause) {
        try {
            memory.deregister();
        } catch (UcxException e) {
            cause.addSuppressed(e);
        }
    }

    @Override
    public String toString() {
        return "UcxRegistrar[domain " + domain + "]";
    }
}
