package io.mrcache.stress.injector;

import java.util.Map;

/**
 * What one cache showed under the injector: its detectors, and how often the run exercised each hazard.
 *
 * @param cache                  the cache's name
 * @param operations             buffer lifecycles completed (allocate, one or more uses, free)
 * @param staleWrites            NIC writes that landed in pages no longer backing their address, or in bytes
 *                               another allocation than the key's owns now (ground truth)
 * @param corruptedBuffers       uses whose read-back did not show what the NIC was told to write
 * @param reusedWhileRegistered  bytes the allocator reused (after the cache said their free was complete) while a
 *                               registration made before that free still covered them at the NIC (I3)
 * @param leakedRegistrations    registrations still alive after the cache closed
 * @param doubleDeregistrations  deregistrations of a key that was already dead (H7)
 * @param deregisteredUnderLease deregistrations while a worker held a lease on the key (H2)
 * @param staleHits              acquires the oracle found serving pages that no longer back the buffer (H1);
 *                               with every free announced each one counts against the cache
 * @param oracleCaught           stale hits the oracle caught and corrected (oracle check on: drop-hooks only)
 * @param writesAfterFree        NIC writes accepted into freed, not yet reused bytes (a peer writing after the
 *                               free; no victim)
 * @param remoteRejected         remote writes the NIC rejected (dead key)
 * @param registrationErrors     acquires that failed because registration failed (injected ENOMEM)
 * @param registrations          registrations made
 * @param crossDomainAccepted    writes with a live key through the other tenant's protection domain that the NIC
 *                               accepted (I7; probed under {@link Fault#TWO_TENANTS} only)
 * @param coverage               how often each hazard was exercised (see {@link AddressReuseInjector})
 * @param seconds                wall time
 */
public record InjectorReport(String cache, long operations, long staleWrites, long corruptedBuffers,
        long reusedWhileRegistered, long leakedRegistrations, long doubleDeregistrations, long deregisteredUnderLease,
        long staleHits, long oracleCaught, long writesAfterFree, long remoteRejected, long registrationErrors, long registrations,
        long crossDomainAccepted, Map<String, Long> coverage, double seconds) {

    public InjectorReport {
        coverage = Map.copyOf(coverage);
    }

    public double opsPerSecond() {
        return seconds == 0 ? 0 : operations / seconds;
    }

    /** Every detector at zero. */
    public boolean safe() {
        return violations() == 0;
    }

    /** The sum of every detector that counts against the cache. */
    public long violations() {
        return staleWrites + corruptedBuffers + reusedWhileRegistered + leakedRegistrations + doubleDeregistrations
                + deregisteredUnderLease + staleHits + crossDomainAccepted;
    }

    /** The same report under another label (the demo names its columns). */
    public InjectorReport named(String label) {
        return new InjectorReport(label, operations, staleWrites, corruptedBuffers, reusedWhileRegistered,
                leakedRegistrations, doubleDeregistrations, deregisteredUnderLease, staleHits, oracleCaught,
                writesAfterFree,
                remoteRejected, registrationErrors, registrations, crossDomainAccepted, coverage, seconds);
    }
}
