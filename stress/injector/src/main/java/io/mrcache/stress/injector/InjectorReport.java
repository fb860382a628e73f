package io.mrcache.stress.injector;

/**
 * What one cache showed under the injector.
 *
 * @param cache              the cache's name
 * @param operations         buffer lifecycles completed
 * @param staleWrites        NIC writes through a key made for an earlier allocation of addresses that another live
 *                           allocation owns now (ground truth)
 * @param writesAfterFree    NIC writes accepted for addresses freed but not yet reused (a peer writing after the
 *                           free, before the hook's invalidation completed; no other buffer is touched)
 * @param corruptedBuffers   buffers whose content, read back after a NIC write, was not what was written
 * @param remoteRejected     remote writes the NIC rejected (dead key: the registration was gone)
 * @param leakedRegistrations registrations still alive after the cache closed
 * @param staleHitsCaught    hits the generation check found stale (it then invalidated and retried)
 * @param registrationErrors acquires that failed because registration failed
 * @param registrations      registrations made
 * @param seconds            wall time
 */
public record InjectorReport(String cache, long operations, long staleWrites, long writesAfterFree,
        long corruptedBuffers,
        long remoteRejected, long leakedRegistrations, long staleHitsCaught, long registrationErrors,
        long registrations, double seconds) {

    public double opsPerSecond() {
        return seconds == 0 ? 0 : operations / seconds;
    }

    /** No stale write, no corrupted buffer, no leak. */
    public boolean safe() {
        return staleWrites == 0 && corruptedBuffers == 0 && leakedRegistrations == 0;
    }
}
