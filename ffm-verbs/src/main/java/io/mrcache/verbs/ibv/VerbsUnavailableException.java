package io.mrcache.verbs.ibv;

/** {@code libibverbs.so.1} cannot be loaded: the message names the library and the Debian packages. */
public final class VerbsUnavailableException extends RuntimeException {
    VerbsUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
