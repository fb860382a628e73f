package io.mrcache.verbs;


import io.mrcache.core.RegistrationException;

/** A native call that failed, with its errno and the errno's name. */
public class NativeException extends RegistrationException {
    public NativeException(String call, int errno) {
        super(call + " failed: " + Errno.describe(errno), errno);
    }

    public NativeException(String message, int errno, Throwable cause) {
        super(message, errno, cause);
    }
}
