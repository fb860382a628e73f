package io.mrcache.ucx.transport;

import org.jspecify.annotations.Nullable;

/**
 * What one run of the transport showed. The ground truth is the owner's bytes: every live buffer holds what its
 * owner wrote or what the peer's completed write put there, and a read returns what the buffer held when the
 * operation was posted.
 *
 * @param cache          the cache's name (and the peer's behaviour, for the violating column)
 * @param operations     operations completed (RDMA writes and reads by the peer)
 * @param corrupted      checks of a live buffer that found bytes nobody wrote there: a peer's write that
 *                       landed after its buffer was freed and reused (silent corruption of another buffer)
 * @param staleReads     reads whose bytes were not the buffer's at the time of the request: the peer read the
 *                       memory's next owner's data
 * @param earlyFrees     buffers the application freed while the peer's operation on them was outstanding
 * @param heldBack       of those frees, how many the cache's free hook held back until the peer's completion
 * @param lateWrites     writes the peer made with keys after their completion message (violating peer only)
 * @param registrations  registrations made (cache misses)
 * @param lostBecause    why the peer was lost before the end (it disconnected or died), or null when it was not:
 *                       then the run ended early, after {@code operations} of the operations asked for
 * @param seconds        wall time
 */
public record TransportReport(String cache, long operations, long corrupted, long staleReads, long earlyFrees,
        long heldBack, long lateWrites, long registrations, @Nullable String lostBecause, double seconds) {

    /** Whether the peer disconnected or died before the end: the run ended early. */
    public boolean peerLost() {
        return lostBecause != null;
    }

    /** Every ground-truth detector at zero. */
    public boolean safe() {
        return corrupted == 0 && staleReads == 0;
    }
}
