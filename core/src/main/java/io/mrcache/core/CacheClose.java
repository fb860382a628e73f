package io.mrcache.core;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * A cache's close: in one hold of the cache's lock it marks the cache closed, unlinks every published region
 * and dooms every registration in flight; then it deregisters the idle regions, waits for the leased, retiring
 * and in-flight ones, and closes an owned registrar once, when nothing it registered is live (I4). The orders
 * it relies on (a closed cache publishes nothing; a region leaves the index before it is retired) are argued
 * in {@link RegistrationCache}'s concurrency comment; this class only carries them out.
 */
final class CacheClose {
    private final RegionTables tables;
    private final Deregistrar deregistrar;
    private final EvictionPolicy eviction;
    private final Registrar registrar;
    private final boolean ownsRegistrar;
    private final @Nullable Tenant tenant;
    private final @Nullable LeakDetector leakDetector;
    private final int faults;
    /** Written under the cache's lock; read under it by the miss path, and without it by {@link #isClosed()}. */
    private volatile boolean closed;
    @GuardedBy("tables.lock")
    private @Nullable CompletableFuture<Void> completion;
    /** Close's stage failed (keys were live): the owned registrar is closed by the retry that ends it. */
    private volatile boolean metAFailedDeregistration;
    /** The owned registrar was closed (exactly once). */
    private final AtomicBoolean registrarClosed = new AtomicBoolean();

    CacheClose(RegionTables tables, Deregistrar deregistrar, EvictionPolicy eviction, Registrar registrar,
            boolean ownsRegistrar, @Nullable Tenant tenant, @Nullable LeakDetector leakDetector, int faults) {
        this.tables = tables;
        this.deregistrar = deregistrar;
        this.eviction = eviction;
        this.registrar = registrar;
        this.ownsRegistrar = ownsRegistrar;
        this.tenant = tenant;
        this.leakDetector = leakDetector;
        this.faults = faults;
    }

    boolean isClosed() {
        return closed;
    }

    /** {@link RegistrationCache#closeAsync()}: the first call starts the close, every call gets its stage. */
    CompletionStage<Void> start() {
        List<Region> toDeregister;
        List<Region> gone;
        CompletableFuture<Void> deregistered;
        CompletableFuture<Void> done;
        tables.lock.lock();
        try {
            if (completion != null) {
                return completion.minimalCompletionStage();
            }
            tables.dropDeregistered();
            closed = true;
            RegionTables.Unlinked unlinked = tables.unlinkAll();
            gone = unlinked.gone();
            toDeregister = unlinked.idle();
            List<CompletableFuture<Void>> waits = new ArrayList<>();
            for (Region r : tables.retiringRegions()) { // quarantined ones too: close retries them once below
                waits.add(r.deregistration());
            }
            if (!CacheFault.CLOSE_SKIPS_PENDING.in(faults)) {
                for (PendingRegistration p : tables.pending()) {
                    p.doomed = true;
                    waits.add(p.settledForWaiter());
                }
            }
            deregistered = Stages.allDeregistered(() -> "close", waits).toCompletableFuture();
            done = new CompletableFuture<>();
            completion = done;
        } finally {
            tables.lock.unlock();
        }
        if (tenant != null) {
            tenant.limit.closing(tenant); // its guarantee returns now, its pinned bytes as they are deregistered
        }
        // attached outside the lock: a stage already complete runs this here, and the registrar's close must
        // never run under the cache's lock (a slow one would block metrics() and everything else that takes it)
        deregistered.whenComplete((ok, failure) -> {
            if (failure != null) {
                metAFailedDeregistration = true; // a later successful retry closes the owned registrar
            }
            Throwable registrarFailure = closeRegistrarIfAllDeregistered();
            Stages.completeLike(done, failure != null ? failure : registrarFailure);
        });
        eviction.unlinked(gone);
        deregistrar.deregisterAll(toDeregister);
        eviction.drainEvicted();
        deregistrar.retryQuarantined(); // so that close reports, rather than waits for, a registrar that keeps failing
        return done.minimalCompletionStage();
    }

    /**
     * A deregistration succeeded: after a close that met a failed one, the retry that ends the quarantine
     * closes the owned registrar. Called by the deregistrar after the region left the retiring index.
     */
    void deregistered() {
        if (metAFailedDeregistration) { // read after the hand-off: pairs with close's write, then check
            Throwable t = closeRegistrarIfAllDeregistered();
            if (t != null) { // close() already reported the failed deregistration; this is the only report left
                System.getLogger(RegistrationCache.class.getName()).log(System.Logger.Level.WARNING,
                        "closing the owned registrar " + registrar + " after the last retried deregistration failed", t);
            }
        }
    }

    /**
     * Closes an owned registrar, once, when the cache is closed and nothing it registered is live: no
     * registration in flight, nothing retired and not yet deregistered (leased, under way or quarantined).
     * Called when close's stage completes and, once that stage met a failed deregistration, after each
     * successful deregistration (the retry that ends the quarantine). Never under the lock.
     *
     * @return what the registrar's close threw, or null
     */
    private @Nullable Throwable closeRegistrarIfAllDeregistered() {
        if (!ownsRegistrar || !closed || registrarClosed.get()) {
            return null;
        }
        boolean allDead;
        tables.lock.lock();
        try {
            allDead = tables.allDeregistered();
        } finally {
            tables.lock.unlock();
        }
        if (allDead && registrarClosed.compareAndSet(false, true)) {
            try {
                registrar.close();
            } catch (Throwable t) {
                return t;
            }
        }
        return null;
    }

    /** {@link RegistrationCache#close(Duration)}: starts the close and waits at most {@code timeout}. */
    void await(Duration timeout) {
        CompletionStage<Void> closing = start();
        try {
            closing.toCompletableFuture().get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw CloseTimeoutReport.of(timeout, tables, deregistrar.quarantined(), leakDetector);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while closing", e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw new IllegalStateException(e.getCause());
        }
    }
}
