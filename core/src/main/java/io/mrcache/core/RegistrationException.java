package io.mrcache.core;

/** A failed register or deregister, with the errno the registrar saw (0 when there was none). */
public class RegistrationException extends RuntimeException {
    public static final int EPERM = 1;
    public static final int EFAULT = 14;
    public static final int EINVAL = 22;
    public static final int ENOMEM = 12;
    public static final int ENOSYS = 38;

    private final int errno;

    public RegistrationException(String message, int errno) {
        super(message);
        this.errno = errno;
    }

    public RegistrationException(String message, int errno, Throwable cause) {
        super(message, cause);
        this.errno = errno;
    }

    public int errno() {
        return errno;
    }
}
