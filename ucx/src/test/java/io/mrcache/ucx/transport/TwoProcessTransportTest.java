package io.mrcache.ucx.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The transport between two JVMs on this machine (UCX over shared memory and TCP through jucx): the naive cache
 * lets a peer's write land in another buffer, mrcache never does, and a peer outside the protocol shows that
 * without revocation only the protocol protects.
 */
class TwoProcessTransportTest {
    static final long OPS = 3_000;

    static TransportReport run(UcxOwner.CacheKind kind, boolean violates, long seed,
            Function<Integer, @Nullable Process> launch) throws Exception {
        List<String> log = new ArrayList<>();
        TransportReport r = UcxOwner.run(UcxOwner.Config.local(OPS, seed, violates), kind, launch, log::add);
        System.out.println(r + " " + log);
        return r;
    }

    @Test
    void mrcacheHoldsReuseBackUntilThePeersCompletionAndNothingIsCorrupted() throws Exception {
        TransportReport r = run(UcxOwner.CacheKind.MRCACHE, false, 11, UcxPeer::launch);
        assertEquals(OPS, r.operations());
        assertEquals(0, r.corrupted(), r.toString());
        assertEquals(0, r.staleReads(), r.toString());
        assertTrue(r.earlyFrees() > 100, "frees while the peer's operation was outstanding: " + r);
        assertEquals(r.earlyFrees(), r.heldBack(), "each one held back by the free hook until the completion");
        assertTrue(r.registrations() < r.operations(), "hits on live buffers: " + r);
        assertFalse(r.peerLost());
    }

    @Test
    void theNaiveCacheLetsAPeersWriteLandInAnotherBuffer() throws Exception {
        TransportReport r = run(UcxOwner.CacheKind.NAIVE, false, 11, UcxPeer::launch);
        assertEquals(OPS, r.operations());
        assertTrue(r.corrupted() > 0, "silent corruption in the owner's memory: " + r);
        assertTrue(r.staleReads() > 0, "reads of another buffer's bytes: " + r);
        assertEquals(0, r.heldBack(), "it never holds a free back");
    }

    /** Outside the safety model: a peer that writes with keys after their completion; nothing revokes them here. */
    @Test
    void aPeerThatKeepsWritingAfterItsCompletionCorruptsEvenMrcachesBuffers() throws Exception {
        TransportReport r = run(UcxOwner.CacheKind.MRCACHE, true, 11, UcxPeer::launch);
        assertTrue(r.lateWrites() > 0, r.toString());
        assertTrue(r.corrupted() > 0, "without revocation by hardware only the protocol protects: " + r);
    }

    /**
     * The demo catches a broken protocol: an owner that releases an operation's keys when it sends the request
     * (not on the peer's completion) lets the free hook's stage complete while the peer may still write.
     */
    @Test
    void anOwnerThatReleasesKeysAtSendIsCaughtCorrupting() throws Exception {
        TransportReport r = UcxOwner.run(UcxOwner.Config.local(OPS, 11, false).releasingAtSend(),
                UcxOwner.CacheKind.MRCACHE, UcxPeer::launch, line -> { });
        assertTrue(r.cache().contains("BROKEN"), r.toString());
        assertTrue(r.corrupted() + r.staleReads() > 0, "the ground truth catches it: " + r);
    }

    /** A peer that dies mid-run: its keys are released once its endpoint is closed, and the cache closes clean. */
    @Test
    void aPeerThatDiesHasItsLeasesReleasedOnlyAfterItsEndpointClosed() throws Exception {
        List<String> log = new ArrayList<>();
        TransportReport r = UcxOwner.run(UcxOwner.Config.local(2_000_000, 5, false), UcxOwner.CacheKind.MRCACHE,
                port -> {
                    Process p = UcxPeer.launch(port);
                    Thread.ofPlatform().daemon().start(() -> {
                        try {
                            Thread.sleep(3_000);
                        } catch (InterruptedException e) {
                            return;
                        }
                        p.destroyForcibly(); // SIGKILL, mid-operation
                    });
                    return p;
                }, log::add);
        assertTrue(r.peerLost(), r.toString());
        assertTrue(r.operations() < 2_000_000, r.toString());
        assertEquals(0, r.corrupted(), r.toString());
        assertTrue(log.stream().anyMatch(l -> l.contains("released") && l.contains("after its endpoint closed")), log.toString());
    }
}
