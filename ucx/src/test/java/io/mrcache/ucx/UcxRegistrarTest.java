package io.mrcache.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.CacheCounter;
import io.mrcache.core.ForwardingRegistrar;
import io.mrcache.core.Lease;
import io.mrcache.core.PinnedMemoryExhaustedException;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationCache;
import io.mrcache.core.RegistrationException;
import io.mrcache.core.DeregistrationException;
import io.mrcache.core.DeregistrationRetry;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.openucx.jucx.UcxException;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpRemoteKey;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;
import org.openucx.jucx.ucs.UcsConstants;

/**
 * {@link UcxRegistrar} on the real UCX (Debian's libucx0, through jucx): registrations that a peer writes through
 * with the packed key its lease carries, and every failure a caller can meet.
 */
class UcxRegistrarTest {
    final UcxRegistrar registrar = UcxRegistrar.open();
    final UcpWorker owner = registrar.context().newWorker(new UcpWorkerParams());
    final UcpWorker peer = registrar.context().newWorker(new UcpWorkerParams());
    final UcpEndpoint toOwner = peer.newEndpoint(new UcpEndpointParams().setUcpAddress(owner.getAddress()));
    final Arena arena = Arena.ofShared();

    @AfterEach
    void close() {
        toOwner.close();
        peer.close();
        owner.close();
        registrar.close();
        arena.close();
    }

    /** A put from the peer worker with {@code packedKey}, progressed until flushed. */
    private void peerPut(MemorySegment source, long remoteAddress, java.nio.ByteBuffer packedKey) throws Exception {
        UcpRemoteKey key = toOwner.unpackRemoteKey(packedKey);
        try {
            toOwner.putNonBlocking(source.address(), source.byteSize(), remoteAddress, key, null);
            UcpRequest flush = toOwner.flushNonBlocking(null);
            while (!flush.isCompleted()) {
                owner.progress(); // software RMA: the target's worker does the copy
                peer.progress();
            }
        } finally {
            key.close();
        }
    }

    /**
     * Keys never repeat a live one, also at the counter's wrap: with three keys (1..3) all taken, a fourth
     * registration fails with ENOMEM and unmaps its memory; a dead registration's key is the one handed out again.
     */
    @Test
    void keysAtTheWrapSkipLiveOnesAndNeverRepeatOne() {
        MemorySegment buffer = arena.allocate(4 * 4096, 4096);
        UcxRegistrar small = UcxRegistrar.withKeys(registrar.context(), new io.mrcache.core.LiveKeys(2, 2));
        Registration first = small.register(buffer.address(), 4096, Access.LOCAL_WRITE); // key 3, then the wrap
        Registration second = small.register(buffer.address() + 4096, 4096, Access.LOCAL_WRITE);
        Registration third = small.register(buffer.address() + 8192, 4096, Access.LOCAL_WRITE);
        assertEquals(java.util.List.of(3, 1, 2), java.util.List.of(first.lkey(), second.lkey(), third.lkey()));
        RegistrationException full = assertThrows(RegistrationException.class,
                () -> small.register(buffer.address() + 12288, 4096, Access.LOCAL_WRITE));
        assertEquals(RegistrationException.ENOMEM, full.errno());
        assertTrue(full.getMessage().contains("all 3 keys are live"), full.getMessage());
        small.deregister(second);
        Registration again = small.register(buffer.address() + 12288, 4096, Access.LOCAL_WRITE);
        assertEquals(1, again.lkey(), "the one dead key, not a live one");
        for (Registration r : java.util.List.of(first, third, again)) {
            small.deregister(r);
        }
    }

    @Test
    void aLeaseCarriesThePackedRemoteKeyAndAPeerWritesThroughIt() throws Exception {
        MemorySegment buffer = arena.allocate(64 * 1024, 4096);
        MemorySegment source = arena.allocate(256, 8).fill((byte) 0x5A);
        try (RegistrationCache cache = RegistrationCache.builder(registrar).build()) {
            try (Lease lease = cache.acquire(buffer.address(), buffer.byteSize(), Access.LOCAL_WRITE | Access.REMOTE_WRITE)) {
                UcxKeys keys = UcxKeys.of(lease);
                assertTrue(keys.packedRemoteKey().remaining() > 0, "a packed key");
                assertEquals(buffer.address(), keys.memory().getAddress());
                peerPut(source, buffer.address() + 4096, keys.packedRemoteKey());
                assertEquals((byte) 0x5A, buffer.get(ValueLayout.JAVA_BYTE, 4096 + 255), "the peer's put landed");
                try (Lease again = cache.acquire(buffer.address() + 4096, 4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE)) {
                    assertEquals(lease.registration(), again.registration(), "a hit carries the same keys");
                }
            }
            cache.invalidateAndWait(buffer.address(), buffer.byteSize());
            assertEquals(1, cache.metrics().get(CacheCounter.DEREGISTRATIONS));
        }
    }

    @Test
    void aLocalRegistrationPacksNoRemoteKeyAndSaysSo() {
        MemorySegment buffer = arena.allocate(8192, 4096);
        Registration r = registrar.register(buffer.address(), buffer.byteSize(), Access.LOCAL_WRITE);
        UcxKeys keys = UcxKeys.of(r);
        assertNull(keys.remoteKey());
        IllegalStateException e = assertThrows(IllegalStateException.class, keys::packedRemoteKey);
        assertTrue(e.getMessage().contains("REMOTE_WRITE"), e.getMessage());
        assertTrue(r.lkey() != 0 && r.lkey() == r.rkey(), "the registrar's own number for it");
        registrar.deregister(r);
    }

    /**
     * Address 0 with a length: UCX refuses it ("undefined address with nonzero length"), but a failed ucp_mem_map
     * through jucx is undefined behaviour (it crashed this test's JVM), so the registrar refuses it first.
     */
    @Test
    void aRangeUcxRefusesFailsTheAcquireWithEinvalAndLeavesNothingBehind() {
        try (RegistrationCache cache = RegistrationCache.builder(registrar).build()) {
            RegistrationException e = assertThrows(RegistrationException.class,
                    () -> cache.acquire(0, 4096, Access.LOCAL_WRITE));
            assertEquals(UcxStatus.EINVAL, e.errno());
            assertTrue(e.getMessage().contains("ucp_mem_map(0x0, 4096) refused before the call"), e.getMessage());
            assertEquals(0, cache.regionCount());
            assertEquals(0, cache.pinnedBytes());
            assertEquals(1, cache.metrics().get(CacheCounter.REGISTRATION_FAILURES));
        }
    }

    @Test
    void aSecondDeregistrationIsARegistrationExceptionNotANullPointer() {
        MemorySegment buffer = arena.allocate(4096, 4096);
        Registration r = registrar.register(buffer.address(), buffer.byteSize(), Access.LOCAL_WRITE);
        registrar.deregister(r);
        RegistrationException e = assertThrows(RegistrationException.class, () -> registrar.deregister(r));
        assertEquals(UcxStatus.EINVAL, e.errno());
        assertTrue(e.getMessage().contains("already deregistered"), e.getMessage());
    }

    /** A deregistration UCX fails: the cache keeps the registration quarantined, then its retry succeeds. */
    @Test
    void aFailedUnmapIsQuarantinedAndRetried() {
        AtomicInteger refusals = new AtomicInteger(1);
        ForwardingRegistrar busyOnce = new ForwardingRegistrar(registrar) {
            @Override
            public void deregister(Registration registration) {
                if (refusals.getAndDecrement() > 0) {
                    throw UcxStatus.failed("ucp_mem_unmap", registration.address(), registration.length(),
                            new UcxException("Device is busy", UcsConstants.STATUS.UCS_ERR_BUSY));
                }
                super.deregister(registration);
            }
        };
        MemorySegment buffer = arena.allocate(4096, 4096);
        try (RegistrationCache cache = RegistrationCache.builder(busyOnce)
                .deregistrationRetry(DeregistrationRetry.MANUAL).build()) {
            cache.acquire(buffer.address(), 4096, Access.LOCAL_WRITE).close();
            var stage = cache.invalidate(buffer.address(), 4096).toCompletableFuture();
            DeregistrationException e = assertThrows(java.util.concurrent.CompletionException.class, stage::join)
                    .getCause() instanceof DeregistrationException de ? de : null;
            assertNotNull(e);
            assertEquals(UcxStatus.EBUSY, e.errno());
            assertEquals(1, cache.quarantined().size(), "the keys are live: kept, not forgotten");
            assertEquals(0, cache.retryQuarantined());
        }
    }

    /** UCX out of memory is ENOMEM to the cache: it evicts idle regions and retries once, then names the limit. */
    @Test
    void ucxOutOfMemoryMakesTheCacheEvictAndRetry() {
        AtomicInteger refusalsLeft = new AtomicInteger(1);
        ForwardingRegistrar tight = new ForwardingRegistrar(registrar) {
            @Override
            public Registration register(long address, long length, int access) {
                if (refusalsLeft.getAndDecrement() > 0) {
                    throw UcxStatus.failed("ucp_mem_map", address, length,
                            new UcxException("Out of memory", UcsConstants.STATUS.UCS_ERR_NO_MEMORY));
                }
                return super.register(address, length, access);
            }
        };
        MemorySegment idle = arena.allocate(4096, 4096);
        MemorySegment wanted = arena.allocate(4096, 4096);
        try (RegistrationCache cache = RegistrationCache.builder(tight).budget(new Budget(1L << 30, 64)).build()) {
            refusalsLeft.set(0);
            cache.acquire(idle.address(), 4096, Access.LOCAL_WRITE).close();
            refusalsLeft.set(1); // UCX refuses once: the cache evicts the idle region and retries
            try (Lease l = cache.acquire(wanted.address(), 4096, Access.LOCAL_WRITE)) {
                assertEquals(wanted.address(), l.registration().address());
            }
            assertEquals(1, cache.metrics().get(CacheCounter.ENOMEM_RECOVERIES));
            assertEquals(1, cache.metrics().get(CacheCounter.EVICTIONS), "the idle region made room");

            refusalsLeft.set(2); // refused again after the eviction: the error names ENOMEM
            PinnedMemoryExhaustedException e = assertThrows(PinnedMemoryExhaustedException.class,
                    () -> cache.acquire(idle.address(), 4096, Access.LOCAL_WRITE));
            assertEquals(UcxStatus.ENOMEM, e.errno());
            assertTrue(e.getMessage().contains("ENOMEM") || e.getMessage().contains("pinned"), e.getMessage());
        }
    }

    /** A failure UCX reports safely (here: rkey packing's, simulated) names the call, the range and the status. */
    @Test
    void aUcxExceptionBecomesARegistrationExceptionWithStatusAndErrno() {
        RegistrationException e = UcxStatus.failed("ucp_rkey_pack", 0x1000, 4096,
                new UcxException("No resources are available", UcsConstants.STATUS.UCS_ERR_NO_RESOURCE));
        assertEquals(UcxStatus.EAGAIN, e.errno());
        assertTrue(e.getMessage().contains("ucp_rkey_pack(0x1000, 4096) failed: UCX status -2 (No resources are"
                + " available), errno 11"), e.getMessage());
        assertTrue(e.getCause() instanceof UcxException);
    }

    @Test
    void everyUcxStatusMapsToTheErrnoTheCacheActsOn() {
        assertEquals(UcxStatus.ENOMEM, UcxStatus.errno(UcsConstants.STATUS.UCS_ERR_NO_MEMORY));
        assertEquals(UcxStatus.ENOMEM, UcxStatus.errno(UcsConstants.STATUS.UCS_ERR_EXCEEDS_LIMIT));
        assertEquals(UcxStatus.EINVAL, UcxStatus.errno(UcsConstants.STATUS.UCS_ERR_INVALID_PARAM));
        assertEquals(UcxStatus.EBUSY, UcxStatus.errno(UcsConstants.STATUS.UCS_ERR_BUSY));
        assertEquals(UcxStatus.EAGAIN, UcxStatus.errno(UcsConstants.STATUS.UCS_ERR_NO_RESOURCE));
        assertEquals(UcxStatus.EFAULT, UcxStatus.errno(UcsConstants.STATUS.UCS_ERR_INVALID_ADDR));
        assertEquals(UcxStatus.ENODEV, UcxStatus.errno(UcsConstants.STATUS.UCS_ERR_NO_DEVICE));
        assertEquals(UcxStatus.EOPNOTSUPP, UcxStatus.errno(UcsConstants.STATUS.UCS_ERR_UNSUPPORTED));
        assertEquals(UcxStatus.ECONNRESET, UcxStatus.errno(UcsConstants.STATUS.UCS_ERR_CONNECTION_RESET));
        assertEquals(UcxStatus.ETIMEDOUT, UcxStatus.errno(UcsConstants.STATUS.UCS_ERR_TIMED_OUT));
        assertEquals(UcxStatus.EIO, UcxStatus.errno(UcsConstants.STATUS.UCS_ERR_IO_ERROR));
        assertEquals(UcxStatus.EIO, UcxStatus.errno(UcsConstants.STATUS.UCS_ERR_SHMEM_SEGMENT), "no counterpart: EIO");
    }

    /** The version the facts in UcxVersion are about is the jucx on the class path (the build pins it). */
    @Test
    void theJucxOnTheClassPathIsTheOneUcxVersionDescribes() throws Exception {
        java.util.Properties p = new java.util.Properties();
        try (var in = UcxException.class.getResourceAsStream("/META-INF/maven/org.openucx/jucx/pom.properties")) {
            assertNotNull(in, "jucx's pom.properties");
            p.load(in);
        }
        assertEquals(UcxVersion.JUCX, p.getProperty("version"), "update UcxVersion's facts with the version");
    }

    @Test
    void rightsMapToUcxsProtectionFlags() {
        long remoteWrite = UcxRegistrar.protection(Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        assertTrue((remoteWrite & org.openucx.jucx.ucp.UcpConstants.UCP_MEM_MAP_PROT_REMOTE_WRITE) != 0);
        assertEquals(0, UcxRegistrar.protection(Access.LOCAL_READ) & org.openucx.jucx.ucp.UcpConstants.UCP_MEM_MAP_PROT_REMOTE_WRITE);
    }
}
