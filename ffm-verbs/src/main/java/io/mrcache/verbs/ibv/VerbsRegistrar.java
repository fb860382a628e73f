package io.mrcache.verbs.ibv;

import io.mrcache.core.Access;
import io.mrcache.core.Registrar;
import io.mrcache.core.Registration;
import io.mrcache.verbs.hooks.MemlockLimit;
import java.lang.foreign.MemorySegment;

/**
 * The cache's {@link Registrar} over a real device: {@code ibv_reg_mr}/{@code ibv_dereg_mr} in one protection
 * domain. Verbs requires local write with remote write or atomic rights, so those requests also get
 * {@code IBV_ACCESS_LOCAL_WRITE}; local read is implicit in verbs.
 */
public final class VerbsRegistrar implements Registrar {
    private final Verbs verbs;
    private final MemorySegment context;
    private final MemorySegment pd;
    private final long memlock;

    VerbsRegistrar(Verbs verbs, MemorySegment context, MemorySegment pd) {
        this.verbs = verbs;
        this.context = context;
        this.pd = pd;
        MemlockLimit limit = MemlockLimit.read();
        this.memlock = limit.unlimited() ? -1 : limit.soft();
    }

    /** mrcache {@link Access} bits to {@code ibv_access_flags}. */
    public static int toIbvAccess(int access) {
        int flags = 0;
        if ((access & Access.LOCAL_WRITE) != 0) {
            flags |= Verbs.IBV_ACCESS_LOCAL_WRITE;
        }
        if ((access & Access.REMOTE_WRITE) != 0) {
            flags |= Verbs.IBV_ACCESS_REMOTE_WRITE | Verbs.IBV_ACCESS_LOCAL_WRITE;
        }
        if ((access & Access.REMOTE_READ) != 0) {
            flags |= Verbs.IBV_ACCESS_REMOTE_READ;
        }
        if ((access & Access.REMOTE_ATOMIC) != 0) {
            flags |= Verbs.IBV_ACCESS_REMOTE_ATOMIC | Verbs.IBV_ACCESS_LOCAL_WRITE;
        }
        return flags;
    }

    @Override
    public Registration register(long address, long length, int access) {
        MemorySegment mr = verbs.regMr(pd, address, length, toIbvAccess(access));
        int lkey = (int) IbvLayouts.MR_LKEY.get(mr, 0L);
        int rkey = (int) IbvLayouts.MR_RKEY.get(mr, 0L);
        return new Registration(address, length, access, lkey, rkey, pd.address(), mr.address());
    }

    /** Registers host memory addressed at the NIC by {@code iova} ({@code ibv_reg_mr_iova2}); deregister as usual. */
    public Registration registerWithIova(long address, long length, long iova, int access) {
        MemorySegment mr = verbs.regMrIova2(pd, address, length, iova, toIbvAccess(access));
        return new Registration(address, length, access, (int) IbvLayouts.MR_LKEY.get(mr, 0L),
                (int) IbvLayouts.MR_RKEY.get(mr, 0L), pd.address(), mr.address());
    }

    /**
     * Registers device memory exported as a dma-buf ({@code ibv_reg_dmabuf_mr}, GPU buffers); the returned
     * registration's address is the {@code iova}.
     */
    public Registration registerDmabuf(int fd, long offset, long length, long iova, int access) {
        MemorySegment mr = verbs.regDmabufMr(pd, offset, length, iova, fd, toIbvAccess(access));
        return new Registration(iova, length, access, (int) IbvLayouts.MR_LKEY.get(mr, 0L),
                (int) IbvLayouts.MR_RKEY.get(mr, 0L), pd.address(), mr.address());
    }

    @Override
    public void deregister(Registration registration) {
        verbs.deregMr(MemorySegment.ofAddress(registration.handle()));
    }

    @Override
    public long protectionDomain() {
        return pd.address();
    }

    @Override
    public long memlockLimit() {
        return memlock;
    }

    /** Deallocates the protection domain and closes the device; deregister everything first. */
    @Override
    public void close() {
        verbs.deallocPd(pd);
        verbs.closeContext(context);
    }
}
