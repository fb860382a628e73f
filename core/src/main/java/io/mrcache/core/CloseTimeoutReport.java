package io.mrcache.core;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/** The exception {@link RegistrationCache#close(Duration)} throws when it times out, naming what it waits for. */
final class CloseTimeoutReport {
    private CloseTimeoutReport() {
    }

    /**
     * What a close that timed out still waits for: leases, registrations in flight, deregistrations under way
     * (those not in {@code quarantine}, which close already reported). A {@link LeasesStillHeldException} when
     * a lease is held, with the tracked acquire stacks attached.
     */
    static CloseTimedOutException of(Duration timeout, RegionTables tables, List<Registration> quarantine,
            @Nullable LeakDetector leakDetector) {
        List<String> held = new ArrayList<>();
        List<String> inFlight = new ArrayList<>();
        List<String> deregistering = new ArrayList<>();
        tables.lock.lock();
        try {
            for (PendingRegistration p : tables.pending()) {
                inFlight.add(AddressRange.describe(p.start, p.end) + " " + Access.describe(p.access));
            }
            for (Region r : tables.retiringRegions()) {
                long leases = r.leases();
                String what = AddressRange.describe(r.start, r.end) + " " + Access.describe(r.access);
                if (leases > 0) {
                    held.add(what + ": " + leases + " lease(s)");
                } else if (!r.deregistration().isDone() && !quarantine.contains(r.registration())) {
                    deregistering.add(what);
                }
            }
        } finally {
            tables.lock.unlock();
        }
        StringBuilder m = new StringBuilder("close did not finish within " + timeout + ": ");
        if (held.isEmpty()) {
            m.append("no lease is held; ");
        } else {
            m.append(held.size()).append(" region(s) still leased ").append(held).append(leakDetector == null
                    ? " (build the cache with leakDetection(LeakDetection.EVERY_LEASE) to see where they were acquired)"
                    : " (the acquire stacks of the tracked ones are attached)").append("; ");
        }
        if (!inFlight.isEmpty()) {
            m.append(inFlight.size()).append(" registration(s) in flight ").append(inFlight)
                    .append(", whose registrar call has not returned (close deregisters what they register); ");
        }
        if (!deregistering.isEmpty()) {
            m.append(deregistering.size()).append(" deregistration(s) under way ").append(deregistering)
                    .append(", whose registrar call has not returned; ");
        }
        m.append("the cache stays closed to acquires and finishes closing when they are done");
        if (held.isEmpty()) {
            return new CloseTimedOutException(m.toString(), held, inFlight, deregistering);
        }
        LeasesStillHeldException ex = new LeasesStillHeldException(m.toString(), held, inFlight, deregistering);
        if (leakDetector != null) {
            leakDetector.heldAcquires().forEach(ex::addSuppressed);
        }
        return ex;
    }
}
