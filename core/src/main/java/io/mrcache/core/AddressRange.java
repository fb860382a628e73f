package io.mrcache.core;

/**
 * Range checks and page alignment of requests. Every range the cache accepts ends at or below
 * {@link #USER_SPACE_END}, so a page-aligned end never overflows and a lease always covers its request.
 */
final class AddressRange {
    /**
     * Requests must end at or below this address: the top of user space on x86-64 with 5-level paging, the
     * widest of Linux's 64-bit layouts.
     */
    static final long USER_SPACE_END = 1L << 56;

    /** The page size of x86-64: the unit in which a registrar pins memory. */
    static final long PAGE_SIZE = 4096;

    private AddressRange() {
    }

    /**
     * The end of {@code [address, address + length)}, after checking that the range is non-empty and lies in
     * user space.
     *
     * @throws IllegalArgumentException naming the operation, the value and what to pass instead
     */
    static long checkedEnd(String op, long address, long length) {
        if (length <= 0) {
            throw new IllegalArgumentException(op + "(0x" + Long.toHexString(address) + ", " + length
                    + "): length " + length + " must be > 0");
        }
        if (address < 0) {
            throw new IllegalArgumentException(op + ": address " + address + " (0x" + Long.toHexString(address)
                    + ") is negative; user-space virtual addresses are below 2^63");
        }
        if (length > USER_SPACE_END - address) { // compared without forming the sum, which may overflow
            throw new IllegalArgumentException(String.format("%s(0x%x, %d): the range ends at %s, past 0x%x, the top"
                    + " of user-space virtual addresses (2^56); pass an address and length your allocator gave you",
                    op, address, length, length > Long.MAX_VALUE - address
                            ? "more than 2^63 (address + length overflows)" : "0x" + Long.toHexString(address + length),
                    USER_SPACE_END));
        }
        return address + length;
    }

    /** {@code [0xfrom, 0xto)}, as every message names a range. */
    static String describe(long from, long to) {
        return "[0x" + Long.toHexString(from) + ", 0x" + Long.toHexString(to) + ")";
    }

    /** {@code a} rounded down to a multiple of {@code alignment} (a power of two). */
    static long alignDown(long a, long alignment) {
        return a & -alignment;
    }

    /** {@code a} rounded up to a multiple of {@code alignment}; no overflow below {@link #USER_SPACE_END}. */
    static long alignUp(long a, long alignment) {
        return (a + alignment - 1) & -alignment;
    }

    /** Bytes of {@code [from, to)} widened to whole units of {@code alignment}: what a registration pins. */
    static long alignedSpan(long from, long to, long alignment) {
        return alignUp(to, alignment) - alignDown(from, alignment);
    }

    /** The unit in which a cache aligned to {@code alignment} counts pinned bytes: at least a whole page. */
    static long pinUnit(long alignment) {
        return Math.max(alignment, PAGE_SIZE);
    }

    /** {@code alignment}, checked: a power of two above zero. */
    static long checkedAlignment(long alignment) {
        if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
            throw new IllegalArgumentException("alignment " + alignment
                    + " must be a power of two > 0, usually the page size (4096)");
        }
        return alignment;
    }
}
