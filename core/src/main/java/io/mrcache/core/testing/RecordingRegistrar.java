package io.mrcache.core.testing;

import io.mrcache.core.LiveKeys;
import io.mrcache.core.Registrar;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * An in-memory {@link Registrar} that pins nothing and records every register and deregister, for tests of
 * the cache and of code that embeds it. It keeps the ledger (invariant I4): a deregister of an unknown or
 * already deregistered registration is recorded as a violation and throws.
 *
 * <p>Hooks let a test slow registration down, fail it with an errno, or check a condition at the moment of
 * a deregistration (for example that no lease is held: invariant I2). Thread-safe.
 */
public final class RecordingRegistrar implements Registrar {
    /** What happened, in order. */
    public record Event(Kind kind, Registration registration) {
    }

    public enum Kind {
        REGISTER, DEREGISTER
    }

    /** Decides whether a register call fails; returns 0 to succeed or an errno to fail with. */
    @FunctionalInterface
    public interface FailureInjector {
        int errnoFor(long address, long length, int access);
    }

    /** Decides whether a register call throws; returns null to go on, or what to throw (any throwable). */
    @FunctionalInterface
    public interface RegisterThrower {
        @Nullable Throwable throwableFor(long address, long length, int access);
    }

    /**
     * Decides whether a deregister call fails; returns null to succeed, or what to throw. A failed
     * deregistration leaves the registration live, as a failed {@code ibv_dereg_mr} leaves the MR.
     */
    @FunctionalInterface
    public interface DeregisterFailureInjector {
        @Nullable Throwable failureFor(Registration registration);
    }

    private final long protectionDomain;
    /** 30 bits: the rkey is the lkey with bit 30 set, so that neither is ever a live registration's. */
    private final LiveKeys keys = new LiveKeys(30, 0);
    private final AtomicLong nextHandle = new AtomicLong(1);
    private final Map<Long, Registration> live = new ConcurrentHashMap<>();
    private final Map<Long, Registration> dead = new ConcurrentHashMap<>();
    private final List<Event> events = new CopyOnWriteArrayList<>();
    private final List<String> violations = new CopyOnWriteArrayList<>();
    private final AtomicLong liveBytes = new AtomicLong();
    private volatile Runnable duringRegister = () -> { };
    private volatile FailureInjector failures = (a, l, x) -> 0;
    private volatile RegisterThrower throwers = (a, l, x) -> null;
    private volatile DeregisterFailureInjector deregisterFailures = r -> null;
    private final AtomicInteger failedDeregistrations = new AtomicInteger();
    private volatile Consumer<Registration> onDeregister = r -> { };
    private volatile long memlockLimit = -1;
    private final boolean recordEvents;
    private volatile boolean closed;

    public RecordingRegistrar() {
        this(7, true);
    }

    /**
     * @param protectionDomain the id reported as the registrations' protection domain
     * @param recordEvents     false to keep no event list (long soak runs)
     */
    public RecordingRegistrar(long protectionDomain, boolean recordEvents) {
        this.protectionDomain = protectionDomain;
        this.recordEvents = recordEvents;
    }

    @Override
    public Registration register(long address, long length, int access) {
        duringRegister.run();
        Throwable thrown = throwers.throwableFor(address, length, access);
        if (thrown != null) {
            throw RecordingRegistrar.<RuntimeException>sneaky(thrown);
        }
        int errno = failures.errnoFor(address, length, access);
        if (errno != 0) {
            throw new RegistrationException("simulated register failure errno " + errno + " for [0x"
                    + Long.toHexString(address) + ", +" + length + ")", errno);
        }
        int key = keys.next();
        Registration r = new Registration(address, length, access, key, key | 0x4000_0000, protectionDomain,
                nextHandle.getAndIncrement());
        live.put(r.handle(), r);
        liveBytes.addAndGet(length);
        if (recordEvents) {
            events.add(new Event(Kind.REGISTER, r));
        }
        return r;
    }

    @Override
    public void deregister(Registration registration) {
        onDeregister.accept(registration);
        Throwable failure = live.containsKey(registration.handle())
                ? deregisterFailures.failureFor(registration) : null;
        if (failure != null) {
            failedDeregistrations.incrementAndGet();
            throw RecordingRegistrar.<RuntimeException>sneaky(failure); // the registration stays live
        }
        if (live.remove(registration.handle()) == null) {
            String what = dead.containsKey(registration.handle()) ? "twice" : "that was never registered";
            String v = "deregister " + what + ": " + registration;
            violations.add(v);
            throw new IllegalStateException(v);
        }
        dead.put(registration.handle(), registration);
        keys.release(registration.lkey());
        liveBytes.addAndGet(-registration.length());
        if (recordEvents) {
            events.add(new Event(Kind.DEREGISTER, registration));
        }
    }

    @Override
    public long protectionDomain() {
        return protectionDomain;
    }

    @Override
    public long memlockLimit() {
        return memlockLimit;
    }

    /** Records the close; a registration still live at close is a violation (the cache closed it too early). */
    @Override
    public void close() {
        if (!live.isEmpty()) {
            violations.add("registrar closed with " + live.size() + " registrations live");
        }
        closed = true;
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return closed;
    }

    public void setMemlockLimit(long bytes) {
        this.memlockLimit = bytes;
    }

    /** Runs inside every register call, before the failure check (a delay, a latch, a counter). */
    public void duringRegister(Runnable hook) {
        this.duringRegister = hook;
    }

    public void failures(FailureInjector injector) {
        this.failures = injector;
    }

    /** Makes register calls throw whatever {@code thrower} returns (an {@code Error} too), before registering. */
    public void registerThrows(RegisterThrower thrower) {
        this.throwers = thrower;
    }

    /** Makes deregister calls fail as {@code injector} says; a failed call leaves the registration live. */
    public void deregisterFailures(DeregisterFailureInjector injector) {
        this.deregisterFailures = injector;
    }

    /** Deregister calls that failed through {@link #deregisterFailures}. */
    public int failedDeregistrationCount() {
        return failedDeregistrations.get();
    }

    @SuppressWarnings("unchecked")
    private static <T extends Throwable> T sneaky(Throwable t) throws T {
        throw (T) t;
    }

    /** Runs at the start of every deregister call, with the registration being deregistered. */
    public void onDeregister(Consumer<Registration> hook) {
        this.onDeregister = hook;
    }

    public int registerCount() {
        return live.size() + dead.size();
    }

    public int deregisterCount() {
        return dead.size();
    }

    public List<Registration> live() {
        return new ArrayList<>(live.values());
    }

    public boolean isLive(Registration r) {
        return live.containsKey(r.handle());
    }

    public long liveBytes() {
        return liveBytes.get();
    }

    public List<Event> events() {
        return List.copyOf(events);
    }

    public List<String> violations() {
        return List.copyOf(violations);
    }

    /**
     * Checks the ledger: every registration deregistered exactly once and no violation seen.
     *
     * @throws IllegalStateException naming what is unbalanced
     */
    public void assertBalanced() {
        if (!violations.isEmpty()) {
            throw new IllegalStateException("ledger violations: " + violations);
        }
        if (!live.isEmpty()) {
            throw new IllegalStateException(live.size() + " registrations never deregistered (leaked): "
                    + live.values().stream().limit(5).toList());
        }
    }
}
