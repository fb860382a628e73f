package io.mrcache.verbs.ibv;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.mrcache.verbs.Errno;
import io.mrcache.verbs.NativeException;
import io.mrcache.verbs.internal.NativeCall;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * {@code libibverbs.so.1} through the FFM API (no JNI): device list, device open/query, protection domains,
 * memory registration and the fork helpers.
 *
 * <p>Binding notes from {@code <infiniband/verbs.h>}: {@code ibv_reg_mr} is a macro over
 * {@code __ibv_reg_mr}, a static inline that calls the exported {@code ibv_reg_mr} (or
 * {@code ibv_reg_mr_iova2} for optional-range flags); we bind the exported symbol. {@code ibv_dereg_mr},
 * {@code ibv_query_device} and {@code ibv_fork_init} return the error number instead of setting errno.
 * {@code ibv_reg_mr_iova2} and {@code ibv_reg_dmabuf_mr} are looked up lazily and are optional (older
 * libraries lack them). Memory windows ({@code ibv_alloc_mw}, {@code ibv_bind_mw}) are static inlines over
 * the context's ops table and are not bound: mrcache keeps rkeys narrow by exact-range registration (I6).
 */
public final class Verbs {
    public static final String LIBRARY = "libibverbs.so.1";
    static final String PACKAGES = "libibverbs1 and ibverbs-providers";
    public static final int IBV_ACCESS_LOCAL_WRITE = 1;
    public static final int IBV_ACCESS_REMOTE_WRITE = 1 << 1;
    public static final int IBV_ACCESS_REMOTE_READ = 1 << 2;
    public static final int IBV_ACCESS_REMOTE_ATOMIC = 1 << 3;

    private final SymbolLookup lookup;
    private final MethodHandle getDeviceList;
    private final MethodHandle freeDeviceList;
    private final MethodHandle getDeviceName;
    private final MethodHandle openDevice;
    private final MethodHandle closeDevice;
    private final MethodHandle queryDevice;
    private final MethodHandle allocPd;
    private final MethodHandle deallocPd;
    private final MethodHandle regMr;
    private final MethodHandle deregMr;
    private final MethodHandle forkInit;
    /** Null where the library does not export it. */
    private final @Nullable MethodHandle isForkInitialized;
    /** Optional entry points, bound on first use (older libraries lack them). */
    private volatile @Nullable MethodHandle regMrIova2;
    private volatile @Nullable MethodHandle regDmabufMr;

    private Verbs(SymbolLookup lookup) {
        this.lookup = lookup;
        String pkg = "libibverbs1";
        getDeviceList = NativeCall.withErrno(lookup, LIBRARY, pkg, "ibv_get_device_list",
                FunctionDescriptor.of(ADDRESS, ADDRESS));
        freeDeviceList = NativeCall.plain(lookup, LIBRARY, pkg, "ibv_free_device_list",
                FunctionDescriptor.ofVoid(ADDRESS));
        getDeviceName = NativeCall.plain(lookup, LIBRARY, pkg, "ibv_get_device_name",
                FunctionDescriptor.of(ADDRESS.withTargetLayout(java.lang.foreign.MemoryLayout.sequenceLayout(64,
                        java.lang.foreign.ValueLayout.JAVA_BYTE)), ADDRESS));
        openDevice = NativeCall.withErrno(lookup, LIBRARY, pkg, "ibv_open_device",
                FunctionDescriptor.of(ADDRESS, ADDRESS));
        closeDevice = NativeCall.plain(lookup, LIBRARY, pkg, "ibv_close_device",
                FunctionDescriptor.of(JAVA_INT, ADDRESS));
        queryDevice = NativeCall.plain(lookup, LIBRARY, pkg, "ibv_query_device",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        allocPd = NativeCall.withErrno(lookup, LIBRARY, pkg, "ibv_alloc_pd",
                FunctionDescriptor.of(ADDRESS, ADDRESS));
        deallocPd = NativeCall.plain(lookup, LIBRARY, pkg, "ibv_dealloc_pd",
                FunctionDescriptor.of(JAVA_INT, ADDRESS));
        regMr = NativeCall.withErrno(lookup, LIBRARY, pkg, "ibv_reg_mr",
                FunctionDescriptor.of(ADDRESS.withTargetLayout(IbvLayouts.IBV_MR), ADDRESS, ADDRESS, JAVA_LONG,
                        JAVA_INT));
        deregMr = NativeCall.plain(lookup, LIBRARY, pkg, "ibv_dereg_mr",
                FunctionDescriptor.of(JAVA_INT, ADDRESS));
        forkInit = NativeCall.plain(lookup, LIBRARY, pkg, "ibv_fork_init", FunctionDescriptor.of(JAVA_INT));
        isForkInitialized = lookup.find("ibv_is_fork_initialized")
                .map(s -> Linker.nativeLinker().downcallHandle(s, FunctionDescriptor.of(JAVA_INT)))
                .orElse(null);
    }

    /**
     * Loads {@code libibverbs.so.1} and looks up its functions.
     *
     * @throws VerbsUnavailableException naming the library and the Debian packages when it is missing
     */
    public static Verbs load() {
        return load(LIBRARY);
    }

    /** Loads the named library (tests name a missing one to check the message). */
    static Verbs load(String library) {
        SymbolLookup lookup;
        try {
            lookup = SymbolLookup.libraryLookup(library, Arena.global());
        } catch (IllegalArgumentException e) {
            throw new VerbsUnavailableException("cannot load " + library + " (" + e.getMessage() + "): install the"
                    + " Debian packages " + PACKAGES + " (apt-get install libibverbs1 ibverbs-providers)", e);
        }
        return new Verbs(lookup);
    }

    /** Whether the library exports {@code symbol} (for optional entry points such as ibv_reg_dmabuf_mr). */
    public boolean exports(String symbol) {
        return lookup.find(symbol).isPresent();
    }

    /**
     * The device names. Throws {@link NoRdmaDeviceException} when the list fails or is empty.
     */
    public List<String> deviceNames() {
        List<String> names = new ArrayList<>();
        withDevices(devices -> {
            for (MemorySegment d : devices) {
                names.add(name(d));
            }
            return names;
        });
        return names;
    }

    /** Opens each device, queries it, and closes it again. */
    public List<DeviceInfo> queryDevices() {
        return withDevices(devices -> {
            List<DeviceInfo> infos = new ArrayList<>();
            for (MemorySegment d : devices) {
                MemorySegment ctx = open(d);
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment attr = arena.allocate(IbvLayouts.IBV_DEVICE_ATTR);
                    int rc = (int) queryDevice.invokeExact(ctx, attr);
                    if (rc != 0) {
                        throw new NativeException("ibv_query_device(" + name(d) + ")", rc);
                    }
                    String fw = attr.asSlice(0, 64).getString(0);
                    infos.add(new DeviceInfo(name(d), fw,
                            (long) IbvLayouts.ATTR_MAX_MR_SIZE.get(attr, 0L),
                            (int) IbvLayouts.ATTR_MAX_MR.get(attr, 0L),
                            (int) IbvLayouts.ATTR_MAX_PD.get(attr, 0L),
                            (int) IbvLayouts.ATTR_MAX_MW.get(attr, 0L),
                            Byte.toUnsignedInt((byte) IbvLayouts.ATTR_PORTS.get(attr, 0L)),
                            (int) IbvLayouts.ATTR_VENDOR.get(attr, 0L),
                            (int) IbvLayouts.ATTR_PART.get(attr, 0L),
                            (long) IbvLayouts.ATTR_PAGE_SIZE_CAP.get(attr, 0L)));
                } catch (Throwable t) {
                    throw NativeCall.rethrow(t);
                } finally {
                    closeContext(ctx);
                }
            }
            return infos;
        });
    }

    /** Opens the named device (or the first one when {@code name} is null) and allocates a protection domain. */
    public VerbsRegistrar openRegistrar(String name) {
        return withDevices(devices -> {
            for (MemorySegment d : devices) {
                if (name == null || name.equals(name(d))) {
                    MemorySegment ctx = open(d);
                    try {
                        return new VerbsRegistrar(this, ctx, allocPd(ctx));
                    } catch (RuntimeException e) {
                        closeContext(ctx);
                        throw e;
                    }
                }
            }
            throw new IllegalArgumentException("no RDMA device named '" + name + "'; see ./mrcache devices");
        });
    }

    /** {@code ibv_fork_init()}: returns 0 or the error number. */
    public int forkInit() {
        try {
            return (int) forkInit.invokeExact();
        } catch (Throwable t) {
            throw NativeCall.rethrow(t);
        }
    }

    /** {@code ibv_is_fork_initialized()}: DISABLED, ENABLED or UNNEEDED; empty when the library lacks it. */
    public Optional<String> forkState() {
        if (isForkInitialized == null) {
            return Optional.empty();
        }
        try {
            int s = (int) isForkInitialized.invokeExact();
            return Optional.of(switch (s) {
                case 0 -> "DISABLED";
                case 1 -> "ENABLED";
                case 2 -> "UNNEEDED";
                default -> "UNKNOWN(" + s + ")";
            });
        } catch (Throwable t) {
            throw NativeCall.rethrow(t);
        }
    }

    // ------------------------------------------------------------------ package-private for the registrar

    MemorySegment regMr(MemorySegment pd, long address, long length, int ibvAccess) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = NativeCall.errnoBuffer(arena);
            MemorySegment mr = (MemorySegment) regMr.invokeExact(errno, pd, MemorySegment.ofAddress(address), length,
                    ibvAccess);
            if (mr.address() == 0) {
                int e = NativeCall.errno(errno);
                throw new NativeException(String.format("ibv_reg_mr(0x%x, %d bytes, access 0x%x)", address, length,
                        ibvAccess), e == 0 ? Errno.EINVAL : e);
            }
            return mr;
        } catch (Throwable t) {
            throw NativeCall.rethrow(t);
        }
    }

    /** {@code ibv_reg_mr_iova2(pd, addr, length, iova, access)}: the region is addressed by {@code iova} at the NIC. */
    MemorySegment regMrIova2(MemorySegment pd, long address, long length, long iova, int ibvAccess) {
        MethodHandle h = iova2Handle();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = NativeCall.errnoBuffer(arena);
            MemorySegment mr = (MemorySegment) h.invokeExact(errno, pd, MemorySegment.ofAddress(address), length, iova,
                    ibvAccess);
            return checkMr(mr, errno, String.format("ibv_reg_mr_iova2(0x%x, %d bytes, iova 0x%x)", address, length,
                    iova));
        } catch (Throwable t) {
            throw NativeCall.rethrow(t);
        }
    }

    /**
     * {@code ibv_reg_dmabuf_mr(pd, offset, length, iova, fd, access)}: registers device memory (a GPU buffer)
     * exported as a dma-buf file descriptor.
     */
    MemorySegment regDmabufMr(MemorySegment pd, long offset, long length, long iova, int fd, int ibvAccess) {
        MethodHandle h = dmabufHandle();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = NativeCall.errnoBuffer(arena);
            MemorySegment mr = (MemorySegment) h.invokeExact(errno, pd, offset, length, iova, fd, ibvAccess);
            return checkMr(mr, errno, String.format("ibv_reg_dmabuf_mr(fd %d, offset %d, %d bytes)", fd, offset,
                    length));
        } catch (Throwable t) {
            throw NativeCall.rethrow(t);
        }
    }

    /** Binds the optional entry points now (throws UnsatisfiedLinkError naming a missing one). */
    void bindOptional() {
        iova2Handle();
        dmabufHandle();
    }

    private MethodHandle iova2Handle() {
        MethodHandle h = regMrIova2;
        if (h == null) {
            h = regMrIova2 = NativeCall.withErrno(lookup, LIBRARY, "libibverbs1 (rdma-core 29 or newer)",
                    "ibv_reg_mr_iova2", FunctionDescriptor.of(ADDRESS.withTargetLayout(IbvLayouts.IBV_MR), ADDRESS,
                            ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_INT));
        }
        return h;
    }

    private MethodHandle dmabufHandle() {
        MethodHandle h = regDmabufMr;
        if (h == null) {
            h = regDmabufMr = NativeCall.withErrno(lookup, LIBRARY, "libibverbs1 (rdma-core 34 or newer)",
                    "ibv_reg_dmabuf_mr", FunctionDescriptor.of(ADDRESS.withTargetLayout(IbvLayouts.IBV_MR), ADDRESS,
                            JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT));
        }
        return h;
    }

    private static MemorySegment checkMr(MemorySegment mr, MemorySegment errno, String call) {
        if (mr.address() == 0) {
            int e = NativeCall.errno(errno);
            throw new NativeException(call, e == 0 ? Errno.EINVAL : e);
        }
        return mr;
    }

    void deregMr(MemorySegment mr) {
        try {
            int rc = (int) deregMr.invokeExact(mr);
            if (rc != 0) {
                throw new NativeException("ibv_dereg_mr", rc);
            }
        } catch (Throwable t) {
            throw NativeCall.rethrow(t);
        }
    }

    void deallocPd(MemorySegment pd) {
        try {
            int rc = (int) deallocPd.invokeExact(pd);
            if (rc != 0) {
                throw new NativeException("ibv_dealloc_pd", rc);
            }
        } catch (Throwable t) {
            throw NativeCall.rethrow(t);
        }
    }

    void closeContext(MemorySegment ctx) {
        try {
            int rc = (int) closeDevice.invokeExact(ctx);
            if (rc != 0) {
                throw new NativeException("ibv_close_device", rc);
            }
        } catch (Throwable t) {
            throw NativeCall.rethrow(t);
        }
    }

    // ------------------------------------------------------------------ helpers

    private interface DeviceAction<T> {
        T apply(List<MemorySegment> devices) throws Throwable;
    }

    private <T> T withDevices(DeviceAction<T> action) {
        MemorySegment list;
        int count;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = NativeCall.errnoBuffer(arena);
            MemorySegment num = arena.allocate(JAVA_INT);
            list = (MemorySegment) getDeviceList.invokeExact(errno, num);
            if (list.address() == 0) {
                throw new NoRdmaDeviceException(NativeCall.errno(errno));
            }
            count = num.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw NativeCall.rethrow(t);
        }
        try {
            if (count == 0) {
                throw new NoRdmaDeviceException(0);
            }
            MemorySegment array = list.reinterpret(ADDRESS.byteSize() * count);
            List<MemorySegment> devices = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                devices.add(array.getAtIndex(ADDRESS, i));
            }
            return action.apply(devices);
        } catch (Throwable t) {
            throw NativeCall.rethrow(t);
        } finally {
            try {
                freeDeviceList.invokeExact(list);
            } catch (Throwable t) {
                throw NativeCall.rethrow(t);
            }
        }
    }

    private String name(MemorySegment device) throws Throwable {
        MemorySegment p = (MemorySegment) getDeviceName.invokeExact(device);
        return p.address() == 0 ? "?" : p.getString(0);
    }

    private MemorySegment open(MemorySegment device) throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = NativeCall.errnoBuffer(arena);
            MemorySegment ctx = (MemorySegment) openDevice.invokeExact(errno, device);
            if (ctx.address() == 0) {
                throw new NativeException("ibv_open_device(" + name(device) + ")", NativeCall.errno(errno));
            }
            return ctx;
        }
    }

    private MemorySegment allocPd(MemorySegment ctx) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = NativeCall.errnoBuffer(arena);
            MemorySegment pd = (MemorySegment) allocPd.invokeExact(errno, ctx);
            if (pd.address() == 0) {
                throw new NativeException("ibv_alloc_pd", NativeCall.errno(errno));
            }
            return pd;
        } catch (Throwable t) {
            throw NativeCall.rethrow(t);
        }
    }
}
