package io.mrcache.verbs.internal;

import io.mrcache.verbs.NativeException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.function.Supplier;

/**
 * Looks up native functions once and calls them with errno captured per call.
 *
 * <p>errno is captured with {@code Linker.Option.captureCallState("errno")} into a segment the caller
 * allocates for that one call (see {@link #errnoBuffer}), never into a shared buffer: registration runs
 * on many threads at once.
 */
public final class NativeCall {
    static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(
            java.lang.foreign.MemoryLayout.PathElement.groupElement("errno"));

    private NativeCall() {
    }

    /** A buffer for one call's captured errno, from the caller's arena. */
    public static MemorySegment errnoBuffer(Arena arena) {
        return arena.allocate(CAPTURE_LAYOUT);
    }

    public static int errno(MemorySegment buffer) {
        return (int) ERRNO.get(buffer, 0L);
    }

    /**
     * A downcall handle whose first argument is the errno buffer.
     *
     * @throws UnsatisfiedLinkError naming the symbol, the library and the package that provides it
     */
    public static MethodHandle withErrno(SymbolLookup lookup, String library, String pkg, String symbol,
            FunctionDescriptor descriptor, Linker.Option... extra) {
        Linker.Option[] options = new Linker.Option[extra.length + 1];
        options[0] = Linker.Option.captureCallState("errno");
        System.arraycopy(extra, 0, options, 1, extra.length);
        return LINKER.downcallHandle(find(lookup, library, pkg, symbol), descriptor, options);
    }

    public static MethodHandle plain(SymbolLookup lookup, String library, String pkg, String symbol,
            FunctionDescriptor descriptor, Linker.Option... options) {
        return LINKER.downcallHandle(find(lookup, library, pkg, symbol), descriptor, options);
    }

    private static MemorySegment find(SymbolLookup lookup, String library, String pkg, String symbol) {
        return lookup.find(symbol).orElseThrow(() -> new UnsatisfiedLinkError("symbol " + symbol + " not found in "
                + library + " (provided by the Debian package " + pkg + "; a version too old may lack it)"));
    }

    /** One downcall given its errno buffer; returns the C result as a long (a pointer as its address). */
    @FunctionalInterface
    public interface Downcall {
        long call(MemorySegment errno) throws Throwable;
    }

    /**
     * Makes {@code call} with an errno buffer of its own and returns its result; the one check-and-throw of
     * every call whose failure is C's -1 (an int, a long or {@code MAP_FAILED}).
     *
     * @param what names the call and its arguments in the error; built only on failure
     * @throws NativeException with the call's errno when it returned -1
     */
    public static long checked(Supplier<String> what, Downcall call) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = errnoBuffer(arena);
            long rc = call.call(errno);
            if (rc == -1) {
                throw new NativeException(what.get(), errno(errno));
            }
            return rc;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Rethrows what a downcall threw; a MethodHandle invocation declares Throwable. */
    public static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException re) {
            throw re;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException(t);
    }
}
