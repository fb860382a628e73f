package io.mrcache.verbs.hooks;

import io.mrcache.core.Budget;
import io.mrcache.verbs.internal.Libc;

/**
 * {@code RLIMIT_MEMLOCK}, read with {@code getrlimit}: the most a process without {@code CAP_IPC_LOCK} may
 * pin. mrcache uses it for the default budget and quotes it in ENOMEM messages.
 *
 * @param soft the limit in force, bytes ({@link Long#MAX_VALUE} for unlimited)
 * @param hard the most the soft limit may be raised to
 */
public record MemlockLimit(long soft, long hard) {

    public static MemlockLimit read() {
        long[] r = Libc.getrlimit(Libc.RLIMIT_MEMLOCK);
        return new MemlockLimit(r[0] == Libc.RLIM_INFINITY ? Long.MAX_VALUE : r[0],
                r[1] == Libc.RLIM_INFINITY ? Long.MAX_VALUE : r[1]);
    }

    public boolean unlimited() {
        return soft == Long.MAX_VALUE;
    }

    /**
     * A default budget: the share {@code fraction} of the soft limit (leaving room for pinning the cache does
     * not own), or {@code fallback} when the limit is unlimited.
     */
    public Budget defaultBudget(double fraction, long fallback) {
        if (!(fraction > 0 && fraction <= 1)) {
            throw new IllegalArgumentException("fraction " + fraction + " must be in (0, 1]");
        }
        long bytes = unlimited() ? fallback : Math.max(4096, (long) (soft * fraction));
        return Budget.ofBytes(bytes);
    }

    @Override
    public String toString() {
        return "RLIMIT_MEMLOCK soft " + (unlimited() ? "unlimited" : soft + " bytes") + ", hard "
                + (hard == Long.MAX_VALUE ? "unlimited" : hard + " bytes");
    }
}
