package io.mrcache.ucx;

import io.mrcache.core.RegistrationException;
import org.openucx.jucx.UcxException;

/**
 * UCX status codes ({@code ucs_status_t}) as the errno values a {@link RegistrationException} carries, so that the
 * cache treats UCX's failures as it treats the kernel's: {@code UCS_ERR_NO_MEMORY} is ENOMEM (evict idle regions
 * and retry once), {@code UCS_ERR_BUSY} is EBUSY, and so on. A status with no errno counterpart maps to EIO.
 */
public final class UcxStatus {
    static final int EPERM = 1;
    static final int EIO = 5;
    static final int EAGAIN = 11;
    static final int ENOMEM = 12;
    static final int EFAULT = 14;
    static final int EBUSY = 16;
    static final int EEXIST = 17;
    static final int ENODEV = 19;
    static final int EINVAL = 22;
    static final int ERANGE = 34;
    static final int ENOSYS = 38;
    static final int EOPNOTSUPP = 95;
    static final int ECONNRESET = 104;
    static final int ENOTCONN = 107;
    static final int ETIMEDOUT = 110;
    static final int ECANCELED = 125;

    private UcxStatus() {
    }

    /** The errno for UCX status {@code status} (negative, as {@code ucs_status_t}). */
    public static int errno(int status) {
        return switch (status) {
            case -2 -> EAGAIN;      // UCS_ERR_NO_RESOURCE
            case -3 -> EIO;         // UCS_ERR_IO_ERROR
            case -4 -> ENOMEM;      // UCS_ERR_NO_MEMORY
            case -5 -> EINVAL;      // UCS_ERR_INVALID_PARAM
            case -7 -> EFAULT;      // UCS_ERR_INVALID_ADDR
            case -8 -> ENOSYS;      // UCS_ERR_NOT_IMPLEMENTED
            case -14 -> ENODEV;     // UCS_ERR_NO_DEVICE
            case -15 -> EBUSY;      // UCS_ERR_BUSY
            case -16 -> ECANCELED;  // UCS_ERR_CANCELED
            case -18 -> EEXIST;     // UCS_ERR_ALREADY_EXISTS
            case -19 -> ERANGE;     // UCS_ERR_OUT_OF_RANGE
            case -20 -> ETIMEDOUT;  // UCS_ERR_TIMED_OUT
            case -21 -> ENOMEM;     // UCS_ERR_EXCEEDS_LIMIT
            case -22 -> EOPNOTSUPP; // UCS_ERR_UNSUPPORTED
            case -23 -> EPERM;      // UCS_ERR_REJECTED
            case -24 -> ENOTCONN;   // UCS_ERR_NOT_CONNECTED
            case -25 -> ECONNRESET; // UCS_ERR_CONNECTION_RESET
            default -> EIO;
        };
    }

    /**
     * A {@link RegistrationException} for a failed UCX call: the call, the range, UCX's status and message, and
     * the errno the cache acts on.
     */
    static RegistrationException failed(String call, long address, long length, UcxException e) {
        int status = e.getStatus();
        return new RegistrationException(call + "(0x" + Long.toHexString(address) + ", " + length + ") failed: UCX status "
                + status + " (" + e.getMessage() + "), errno " + errno(status)
                + (errno(status) == ENOMEM ? ": UCX could not pin or map more memory; free registrations or raise"
                        + " RLIMIT_MEMLOCK" : ""), errno(status), e);
    }
}
