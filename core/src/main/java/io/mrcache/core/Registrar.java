package io.mrcache.core;

/**
 * What the cache calls to pin memory and obtain keys: {@code ibv_reg_mr}/{@code ibv_dereg_mr}, or a
 * simulated HCA. A registrar belongs to one protection domain; a cache uses one registrar, so a cache
 * never hands out a lease of another domain (invariant I7).
 *
 * <p>Implementations must be thread-safe: the cache calls {@code register} outside its locks, from many
 * threads at once.
 */
public interface Registrar extends AutoCloseable {

    /**
     * Registers {@code [address, address + length)} with the given {@link Access} rights.
     *
     * @throws RegistrationException carrying the errno on failure ({@link RegistrationException#ENOMEM} when
     *                               pinned memory is exhausted)
     */
    Registration register(long address, long length, int access);

    /**
     * Deregisters a registration this registrar returned. The cache calls it exactly once per registration,
     * only when no lease is held on it. It passes a record equal to the one {@link #register} returned (every
     * field, the attachment itself included), not necessarily that object: the cache keeps the fields, so
     * identify a registration by its {@link Registration#handle()}, its keys or its attachment, never by
     * {@code ==}.
     *
     * @throws RegistrationException carrying the errno on failure
     */
    void deregister(Registration registration);

    /** The protection domain all registrations of this registrar belong to. */
    default long protectionDomain() {
        return 0;
    }

    /** {@code RLIMIT_MEMLOCK} in bytes when the registrar knows it, else -1; quoted in ENOMEM messages. */
    default long memlockLimit() {
        return -1;
    }

    /**
     * Releases what the registrar owns (a device context, a protection domain); call it after everything it
     * registered is deregistered. A cache built with {@code ownsRegistrar(true)} calls it last in its close.
     * The default owns nothing.
     */
    @Override
    default void close() {
    }
}
