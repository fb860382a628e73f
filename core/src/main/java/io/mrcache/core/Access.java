package io.mrcache.core;

/**
 * Access rights of a registration, as a bit mask (an {@code int}, so the hit path allocates nothing).
 *
 * <p>The bits are mrcache's own; {@code ffm-verbs} maps them to {@code ibv_access_flags}. Local read is
 * explicit here (verbs grants it implicitly) so that an empty mask is an error rather than a silent
 * "local read only".
 *
 * <p>A mask with any {@link #REMOTE_MASK} bit is <em>remote</em>: its region's rkey is meant for peers,
 * so the cache registers it for exactly the requested bytes and never merges it (invariant I6).
 */
public final class Access {
    public static final int LOCAL_READ = 1;
    public static final int LOCAL_WRITE = 1 << 1;
    public static final int REMOTE_READ = 1 << 2;
    public static final int REMOTE_WRITE = 1 << 3;
    public static final int REMOTE_ATOMIC = 1 << 4;

    public static final int LOCAL_MASK = LOCAL_READ | LOCAL_WRITE;
    public static final int REMOTE_MASK = REMOTE_READ | REMOTE_WRITE | REMOTE_ATOMIC;
    public static final int ALL = LOCAL_MASK | REMOTE_MASK;

    private Access() {
    }

    public static boolean isRemote(int access) {
        return (access & REMOTE_MASK) != 0;
    }

    /** True when {@code granted} includes every right in {@code requested}. */
    public static boolean includes(int granted, int requested) {
        return (requested & ~granted) == 0;
    }

    /**
     * Rejects an empty mask or unknown bits.
     *
     * @throws IllegalArgumentException naming the mask and the valid bits
     */
    public static int validate(int access) {
        if (access == 0) {
            throw new IllegalArgumentException(
                    "access is empty (0): ask for at least Access.LOCAL_READ; valid bits are " + describe(ALL));
        }
        if ((access & ~ALL) != 0) {
            throw new IllegalArgumentException("access 0x" + Integer.toHexString(access) + " has unknown bits 0x"
                    + Integer.toHexString(access & ~ALL) + "; valid bits are " + describe(ALL));
        }
        return access;
    }

    /** {@code LOCAL_READ|REMOTE_WRITE} style text, for messages and reports. */
    public static String describe(int access) {
        if (access == 0) {
            return "NONE";
        }
        StringBuilder sb = new StringBuilder();
        append(sb, access, LOCAL_READ, "LOCAL_READ");
        append(sb, access, LOCAL_WRITE, "LOCAL_WRITE");
        append(sb, access, REMOTE_READ, "REMOTE_READ");
        append(sb, access, REMOTE_WRITE, "REMOTE_WRITE");
        append(sb, access, REMOTE_ATOMIC, "REMOTE_ATOMIC");
        int unknown = access & ~ALL;
        if (unknown != 0) {
            append(sb, unknown, unknown, "0x" + Integer.toHexString(unknown));
        }
        return sb.toString();
    }

    private static void append(StringBuilder sb, int access, int bit, String name) {
        if ((access & bit) != 0) {
            if (!sb.isEmpty()) {
                sb.append('|');
            }
            sb.append(name);
        }
    }
}
