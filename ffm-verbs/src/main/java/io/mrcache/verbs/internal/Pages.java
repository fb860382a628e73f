package io.mrcache.verbs.internal;

/** Rounds byte ranges out to whole pages, as the kernel and an HCA pin and watch them (page size a power of two). */
public final class Pages {
    private Pages() {
    }

    /** The start of the page that holds {@code address}. */
    public static long firstPage(long address, long pageSize) {
        return address & -pageSize;
    }

    /** The end of the last page that {@code [address, address + length)} touches. */
    public static long pagesEnd(long address, long length, long pageSize) {
        return (address + length + pageSize - 1) & -pageSize;
    }
}
