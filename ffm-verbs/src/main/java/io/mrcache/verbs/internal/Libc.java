package io.mrcache.verbs.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.mrcache.verbs.NativeException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * The few libc calls mrcache needs, through FFM: page pinning ({@code mlock}), limits ({@code getrlimit},
 * {@code sysconf}), mappings ({@code mmap}, {@code munmap}, {@code madvise}, {@code mremap}) and the
 * file-descriptor calls of the userfaultfd monitor. Each returns its result or throws {@link NativeException}
 * with the errno.
 */
public final class Libc {
    public static final int PROT_READ = 1;
    public static final int PROT_WRITE = 2;
    public static final int MAP_PRIVATE = 0x02;
    public static final int MAP_ANONYMOUS = 0x20;
    public static final int MAP_FIXED = 0x10;
    public static final int MAP_SHARED = 0x01;
    public static final int MAP_NORESERVE = 0x4000;
    /** Populate the page tables at mmap time: the pages are present (as a registration makes them). */
    public static final int MAP_POPULATE = 0x8000;
    public static final int PROT_NONE = 0;
    public static final int MADV_DONTNEED = 4;
    public static final int MREMAP_MAYMOVE = 1;
    public static final int MREMAP_FIXED = 2;
    public static final int RLIMIT_MEMLOCK = 8;
    public static final long RLIM_INFINITY = -1L;
    private static final int SC_PAGESIZE = 30;

    private static final String LIB = "libc.so.6";
    private static final String PKG = "libc6";
    private static final SymbolLookup C = NativeCall.LINKER.defaultLookup();

    private static final MethodHandle MLOCK = NativeCall.withErrno(C, LIB, PKG, "mlock",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle MUNLOCK = NativeCall.withErrno(C, LIB, PKG, "munlock",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle GETRLIMIT = NativeCall.withErrno(C, LIB, PKG, "getrlimit",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle SYSCONF = NativeCall.plain(C, LIB, PKG, "sysconf",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT));
    private static final MethodHandle MMAP = NativeCall.withErrno(C, LIB, PKG, "mmap",
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG));
    private static final MethodHandle MEMFD_CREATE = NativeCall.withErrno(C, LIB, PKG, "memfd_create",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle FTRUNCATE = NativeCall.withErrno(C, LIB, PKG, "ftruncate",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG));
    private static final MethodHandle MUNMAP = NativeCall.withErrno(C, LIB, PKG, "munmap",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle MADVISE = NativeCall.withErrno(C, LIB, PKG, "madvise",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    // void *mremap(void *old, size_t old_size, size_t new_size, int flags, ... /* void *new_address */)
    private static final MethodHandle MREMAP = NativeCall.withErrno(C, LIB, PKG, "mremap",
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_INT, ADDRESS),
            Linker.Option.firstVariadicArg(4));
    // long syscall(long number, ...): userfaultfd(int flags)
    private static final MethodHandle SYSCALL1 = NativeCall.withErrno(C, LIB, PKG, "syscall",
            FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_INT), Linker.Option.firstVariadicArg(1));
    // int ioctl(int fd, unsigned long request, ... /* void *arg */)
    private static final MethodHandle IOCTL = NativeCall.withErrno(C, LIB, PKG, "ioctl",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS), Linker.Option.firstVariadicArg(2));
    private static final MethodHandle READ = NativeCall.withErrno(C, LIB, PKG, "read",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle CLOSE = NativeCall.withErrno(C, LIB, PKG, "close",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle POLL = NativeCall.withErrno(C, LIB, PKG, "poll",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));

    private Libc() {
    }

    public static long pageSize() {
        try {
            return (long) SYSCONF.invokeExact(SC_PAGESIZE);
        } catch (Throwable t) {
            throw NativeCall.rethrow(t);
        }
    }

    /** Pins {@code [address, address + length)} in RAM. */
    public static void mlock(long address, long length) {
        call("mlock", MLOCK, address, length);
    }

    public static void munlock(long address, long length) {
        call("munlock", MUNLOCK, address, length);
    }

    /** {@code getrlimit(resource)}: {soft, hard}; {@link #RLIM_INFINITY} for no limit. */
    public static long[] getrlimit(int resource) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = NativeCall.errnoBuffer(arena);
            MemorySegment rlimit = arena.allocate(16, 8);
            int rc = (int) GETRLIMIT.invokeExact(errno, resource, rlimit);
            if (rc != 0) {
                throw new NativeException("getrlimit(" + resource + ")", NativeCall.errno(errno));
            }
            return new long[] {rlimit.get(JAVA_LONG, 0), rlimit.get(JAVA_LONG, 8)};
        } catch (Throwable t) {
            throw NativeCall.rethrow(t);
        }
    }

    /** An anonymous private read-write mapping of {@code length} bytes; returns its address. */
    public static long mmapAnonymous(long length) {
        return NativeCall.checked(() -> "mmap(" + length + " bytes)",
                errno -> ((MemorySegment) MMAP.invokeExact(errno, MemorySegment.NULL, length, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L)).address());
    }

    /** {@code mmap(address, length, prot, flags, fd, offset)}; returns the mapping's address. */
    public static long mmap(long address, long length, int prot, int flags, int fd, long offset) {
        return NativeCall.checked(() -> String.format("mmap(0x%x, %d, prot %d, flags 0x%x, fd %d, offset %d)", address,
                length, prot, flags, fd, offset),
                errno -> ((MemorySegment) MMAP.invokeExact(errno, MemorySegment.ofAddress(address), length, prot, flags,
                        fd, offset)).address());
    }

    /** An anonymous file in memory ({@code memfd_create}) of {@code length} bytes; returns its descriptor. */
    public static int memfd(String name, long length) {
        int fd;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cName = arena.allocateFrom(name);
            fd = (int) NativeCall.checked(() -> "memfd_create(" + name + ")",
                    errno -> (int) MEMFD_CREATE.invokeExact(errno, cName, 0));
        }
        NativeCall.checked(() -> "ftruncate(" + fd + ", " + length + ")",
                errno -> (int) FTRUNCATE.invokeExact(errno, fd, length));
        return fd;
    }

    /** A new anonymous mapping exactly at {@code address} (MAP_FIXED): the addresses get new pages. */
    public static long mmapAnonymousAt(long address, long length) {
        return NativeCall.checked(() -> "mmap(0x" + Long.toHexString(address) + ", " + length + " bytes, MAP_FIXED)",
                errno -> ((MemorySegment) MMAP.invokeExact(errno, MemorySegment.ofAddress(address), length,
                        PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0L)).address());
    }

    public static void munmap(long address, long length) {
        call("munmap", MUNMAP, address, length);
    }

    public static void madvise(long address, long length, int advice) {
        NativeCall.checked(() -> "madvise(0x" + Long.toHexString(address) + ", " + length + ", " + advice + ")",
                errno -> (int) MADVISE.invokeExact(errno, MemorySegment.ofAddress(address), length, advice));
    }

    /** {@code mremap}; with {@link #MREMAP_FIXED} the mapping moves to {@code newAddress}. Returns the new address. */
    public static long mremap(long oldAddress, long oldSize, long newSize, int flags, long newAddress) {
        return NativeCall.checked(() -> "mremap(0x" + Long.toHexString(oldAddress) + ")",
                errno -> ((MemorySegment) MREMAP.invokeExact(errno, MemorySegment.ofAddress(oldAddress), oldSize,
                        newSize, flags, MemorySegment.ofAddress(newAddress))).address());
    }

    /** {@code syscall(number, arg)} returning the result; throws on -1. */
    public static long syscall(String name, long number, int arg) {
        return NativeCall.checked(() -> name, errno -> (long) SYSCALL1.invokeExact(errno, number, arg));
    }

    public static void ioctl(String name, int fd, long request, MemorySegment arg) {
        NativeCall.checked(() -> name, errno -> (int) IOCTL.invokeExact(errno, fd, request, arg));
    }

    /** {@code read(fd, buf, buf.byteSize())}; returns bytes read, or -errno (EAGAIN, EINTR) without throwing. */
    public static long readOrErrno(int fd, MemorySegment buf) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = NativeCall.errnoBuffer(arena);
            long n = (long) READ.invokeExact(errno, fd, buf, buf.byteSize());
            return n >= 0 ? n : -NativeCall.errno(errno);
        } catch (Throwable t) {
            throw NativeCall.rethrow(t);
        }
    }

    /** {@code poll} on one fd for POLLIN; returns true when readable. */
    public static boolean pollIn(int fd, int timeoutMillis) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = NativeCall.errnoBuffer(arena);
            MemorySegment pfd = arena.allocate(8, 4);
            pfd.set(JAVA_INT, 0, fd);
            pfd.set(java.lang.foreign.ValueLayout.JAVA_SHORT, 4, (short) 1); // POLLIN
            int rc = (int) POLL.invokeExact(errno, pfd, 1L, timeoutMillis);
            if (rc < 0) {
                int e = NativeCall.errno(errno);
                if (e == 4) { // EINTR
                    return false;
                }
                throw new NativeException("poll", e);
            }
            return rc > 0;
        } catch (Throwable t) {
            throw NativeCall.rethrow(t);
        }
    }

    public static void close(int fd) {
        NativeCall.checked(() -> "close(" + fd + ")", errno -> (int) CLOSE.invokeExact(errno, fd));
    }

    private static void call(String name, MethodHandle h, long address, long length) {
        NativeCall.checked(() -> name + "(0x" + Long.toHexString(address) + ", " + length + ")",
                errno -> (int) h.invokeExact(errno, MemorySegment.ofAddress(address), length));
    }
}
