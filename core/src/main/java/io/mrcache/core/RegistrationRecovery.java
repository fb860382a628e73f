package io.mrcache.core;

import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Calls the registrar for a planned registration and recovers what can be recovered: {@code ENOMEM} evicts idle
 * regions and retries once (I8); a widened plan (merged range, or union of rights) that the registrar refuses
 * with anything else falls back to the request's own range and rights. Also says when a result cannot serve
 * its request.
 */
final class RegistrationRecovery {
    private final Registrar registrar;
    private final CacheMetrics metrics;
    private final Budget budget;
    private final MissPlanner planner;
    /** The cache's lock: the plan's range is narrowed under it, where other misses and invalidations read it. */
    private final ReentrantLock lock;
    /** Evicts every idle region; returns how many. */
    private final IntSupplier evictIdle;
    /** What each tenant of the cache's shared limit holds, for the ENOMEM message; null without a limit. */
    private final @Nullable Supplier<String> limitHoldings;

    RegistrationRecovery(Registrar registrar, CacheMetrics metrics, Budget budget, MissPlanner planner,
            ReentrantLock lock, IntSupplier evictIdle, @Nullable Supplier<String> limitHoldings) {
        this.limitHoldings = limitHoldings;
        this.registrar = registrar;
        this.metrics = metrics;
        this.budget = budget;
        this.planner = planner;
        this.lock = lock;
        this.evictIdle = evictIdle;
    }

    /**
     * Registers plan {@code p} made for a request of {@code [address, end)} with {@code access}, falling back
     * to the request alone when the registrar refuses the widening. Outside the lock.
     *
     * @throws RegistrationException or whatever else the registrar threw, from the last attempt (the refused
     *                               widening attached as suppressed)
     */
    Registration register(PendingRegistration p, long address, long end, int access) {
        Registration reg;
        try {
            reg = registerRecoveringEnomem(p);
        } catch (RegistrationException e) {
            if (e.errno() == RegistrationException.ENOMEM || !narrowToRequest(p, address, end, access)) {
                throw e;
            }
            try {
                reg = registerRecoveringEnomem(p);
            } catch (RuntimeException | Error again) {
                again.addSuppressed(e);
                throw again;
            }
        }
        if (reg == null) {
            throw new IllegalStateException("registrar " + registrar.getClass().getName() + " returned null for [0x"
                    + Long.toHexString(p.start) + ", 0x" + Long.toHexString(p.end) + ") " + Access.describe(p.access)
                    + ": register must return a registration or throw");
        }
        return reg;
    }

    /**
     * Falls back from a widened plan (merged range, or union of rights) to the request's own range and rights,
     * under the lock; counts it. Returns false, changing nothing, when the plan is the request's own already.
     */
    boolean narrowToRequest(PendingRegistration p, long address, long end, int access) {
        long ownFrom = planner.ownStart(address, access);
        long ownTo = planner.ownEnd(end, access);
        lock.lock();
        try {
            if (!p.widerThan(ownFrom, ownTo, access)) {
                return false;
            }
            p.narrowTo(ownFrom, ownTo, access);
        } finally {
            lock.unlock();
        }
        metrics.increment(CacheCounter.WIDENING_FALLBACKS);
        return true;
    }

    private Registration registerRecoveringEnomem(PendingRegistration p) {
        long length = p.end - p.start;
        try {
            return registrar.register(p.start, length, p.access);
        } catch (RegistrationException e) {
            if (e.errno() != RegistrationException.ENOMEM) {
                throw e;
            }
            int evictedCount = evictIdle.getAsInt();
            try {
                Registration reg = registrar.register(p.start, length, p.access);
                metrics.increment(CacheCounter.ENOMEM_RECOVERIES);
                return reg;
            } catch (RegistrationException again) {
                if (again.errno() != RegistrationException.ENOMEM) {
                    throw again;
                }
                throw new PinnedMemoryExhaustedException(exhaustedMessage(p, evictedCount),
                        metrics.pinnedBytes.get(), again);
            }
        }
    }

    private String exhaustedMessage(PendingRegistration p, int evictedCount) {
        long limit = registrar.memlockLimit();
        return String.format("registering %,d bytes at 0x%x (%s) failed with ENOMEM, also after evicting %d idle"
                + " regions and retrying: this cache holds %,d bytes pinned in %,d regions (budget %s bytes, %s"
                + " regions), RLIMIT_MEMLOCK is %s%s. Raise RLIMIT_MEMLOCK (ulimit -l, or 'memlock' in"
                + " /etc/security/limits.conf), set the cache budget below it, or release leases sooner.",
                p.end - p.start, p.start, Access.describe(p.access), evictedCount, metrics.pinnedBytes.get(),
                metrics.regions.get(), bound(budget.maxPinnedBytes()), bound(budget.maxRegions()),
                limit < 0 ? "unknown to this registrar" : String.format("%,d bytes", limit),
                limitHoldings == null ? "" : "; the shared pinned-memory limit: " + limitHoldings.get());
    }

    private static String bound(long v) {
        return v == Long.MAX_VALUE || v == Integer.MAX_VALUE ? "unlimited" : String.format("%,d", v);
    }

    /**
     * Why {@code reg} cannot serve the request or the plan (the request's own range and rights are checked,
     * never only the plan), or null when it can.
     */
    @Nullable String wrongResult(PendingRegistration p, long address, long end, int access, Registration reg) {
        if (reg.address() <= address && reg.end() >= end && reg.address() <= p.start && reg.end() >= p.end
                && Access.includes(reg.access(), p.access) && Access.includes(reg.access(), access)) {
            // (covering a request of at least one byte, it has a length > 0)
            return null;
        }
        return "registrar " + registrar.getClass().getName() + " returned " + reg + " for a request of [0x"
                + Long.toHexString(address) + ", 0x" + Long.toHexString(end) + ") " + Access.describe(access)
                + " (planned [0x" + Long.toHexString(p.start) + ", 0x" + Long.toHexString(p.end) + ") "
                + Access.describe(p.access) + "): a registration must cover the range with the rights;"
                + " the cache deregistered it and fails this acquire";
    }
}
