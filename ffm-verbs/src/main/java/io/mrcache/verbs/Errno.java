package io.mrcache.verbs;

import java.util.Map;

/** Names of the errno values mrcache's native calls report. */
public final class Errno {
    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int EINTR = 4;
    public static final int EAGAIN = 11;
    public static final int ENOMEM = 12;
    public static final int EACCES = 13;
    public static final int EFAULT = 14;
    public static final int EBUSY = 16;
    public static final int ENODEV = 19;
    public static final int EINVAL = 22;
    public static final int ENOSYS = 38;
    public static final int EOPNOTSUPP = 95;

    private static final Map<Integer, String> NAMES = Map.ofEntries(Map.entry(EPERM, "EPERM (operation not permitted)"),
            Map.entry(ENOENT, "ENOENT (no such file or directory)"), Map.entry(EINTR, "EINTR (interrupted)"),
            Map.entry(EAGAIN, "EAGAIN (try again)"), Map.entry(ENOMEM, "ENOMEM (out of memory or over a limit)"),
            Map.entry(EACCES, "EACCES (permission denied)"), Map.entry(EFAULT, "EFAULT (bad address)"),
            Map.entry(EBUSY, "EBUSY (busy)"), Map.entry(ENODEV, "ENODEV (no such device)"),
            Map.entry(EINVAL, "EINVAL (invalid argument)"), Map.entry(ENOSYS, "ENOSYS (function not implemented)"),
            Map.entry(EOPNOTSUPP, "EOPNOTSUPP (operation not supported)"));

    private Errno() {
    }

    /** "ENOMEM (out of memory or over a limit), errno 12". */
    public static String describe(int errno) {
        return NAMES.getOrDefault(errno, "errno") + (NAMES.containsKey(errno) ? ", errno " : " ") + errno;
    }
}
