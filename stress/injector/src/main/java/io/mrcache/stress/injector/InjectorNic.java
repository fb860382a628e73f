package io.mrcache.stress.injector;

import io.mrcache.core.Registrar;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationException;
import io.mrcache.verbs.sim.RemoteAccessException;
import io.mrcache.verbs.sim.SimulatedHca;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * The NIC as the injector sees it: a {@link Registrar} that translates the allocator's virtual ranges to the
 * physical runs behind them and registers those on the {@link SimulatedHca} (real mlock), remembering for
 * each key what it pinned; and local and remote RDMA writes that go, as a NIC's do, to the pages pinned at
 * registration time, counted as stale when those pages no longer belong to the allocation the key was made
 * for (ground truth).
 */
final class InjectorNic implements Registrar {
    /** What a key's registration pinned: the virtual range, its physical run, and the owning allocation. */
    record Pinned(long address, long length, long physical, long run, long owner, int sizeClass,
            Registration hcaRegistration) {
    }

    private final SimulatedHca hca;
    private final long pd;
    private final ReusingAllocator allocator;
    private final boolean slow;
    private final boolean failing;
    private final ConcurrentHashMap<Integer, Pinned> byKey = new ConcurrentHashMap<>();
    private final ThreadLocal<SplittableRandom> faultRandom;
    final LongAdder staleWrites = new LongAdder();
    final LongAdder writesAfterFree = new LongAdder();
    final LongAdder rejectedRemote = new LongAdder();
    final LongAdder rejectedLocal = new LongAdder();
    final LongAdder registrations = new LongAdder();
    final LongAdder injectedFailures = new LongAdder();

    InjectorNic(SimulatedHca hca, ReusingAllocator allocator, boolean slow, boolean failing,
            ThreadLocal<SplittableRandom> faultRandom) {
        this.hca = hca;
        this.pd = hca.allocProtectionDomain();
        this.allocator = allocator;
        this.slow = slow;
        this.failing = failing;
        this.faultRandom = faultRandom;
    }

    @Override
    public Registration register(long address, long length, int access) {
        if (failing && faultRandom.get().nextInt(100) < 2) {
            injectedFailures.increment();
            throw new RegistrationException("injected ENOMEM", RegistrationException.ENOMEM);
        }
        if (slow) {
            long end = System.nanoTime() + 20_000;
            while (System.nanoTime() < end) {
                Thread.onSpinWait();
            }
        }
        long owner = allocator.ownerOf(address);
        long run = allocator.pin(address, length);
        long physical = allocator.physical(address);
        Registration hcaReg;
        try {
            hcaReg = hca.register(pd, physical, length, access);
        } catch (RuntimeException e) {
            allocator.unpin(run, ReusingAllocator.classOf(address));
            throw e;
        }
        registrations.increment();
        byKey.put(hcaReg.lkey(), new Pinned(address, length, physical, run, owner, ReusingAllocator.classOf(address),
                hcaReg));
        return new Registration(address, length, access, hcaReg.lkey(), hcaReg.rkey(), pd, hcaReg.handle());
    }

    @Override
    public void deregister(Registration registration) {
        Pinned p = byKey.get(registration.lkey());
        hca.deregister(p.hcaRegistration());
        byKey.remove(registration.lkey()); // after: a write holding p now meets a dead key at the HCA
        allocator.unpin(p.run(), p.sizeClass());
    }

    @Override
    public long protectionDomain() {
        return pd;
    }

    /** The allocation a key's registration was made for (0 if unknown). */
    long ownerOfKey(int key) {
        Pinned p = byKey.get(key);
        return p == null ? 0 : p.owner();
    }

    /** The NIC writes {@code data} at virtual {@code address} with {@code lkey}: a receive or a read response. */
    void localWrite(int lkey, long address, MemorySegment data) {
        write(lkey, address, data, false);
    }

    /** A peer's RDMA write with {@code rkey} to virtual {@code address}. Returns false when rejected. */
    boolean remoteWrite(int rkey, long address, MemorySegment data) {
        return write(rkey, address, data, true);
    }

    private boolean write(int key, long address, MemorySegment data, boolean remote) {
        Pinned p = byKey.get(key);
        if (p == null) {
            (remote ? rejectedRemote : rejectedLocal).increment();
            return false;
        }
        long target = p.physical() + (address - p.address());
        // Classify by who owns the address before the write: addresses are reused only after the key's
        // deregistration, which the HCA orders after any write it accepted, so an accepted write's
        // classification cannot be overtaken by a reuse (reading after the write could be).
        long owner = allocator.ownerOf(address);
        try {
            if (remote) {
                hca.rdmaWrite(pd, key, target, data);
            } else {
                hca.localWrite(pd, key, target, data);
            }
        } catch (RemoteAccessException e) {
            (remote ? rejectedRemote : rejectedLocal).increment();
            return false;
        }
        // Stale when the address belongs to another live allocation: the key outlived its buffer into the next
        // one (allocation ids are never reused). A write to a freed, not yet reused address is the peer's
        // use-after-free, counted apart.
        if (owner == 0) {
            writesAfterFree.increment();
        } else if (owner != p.owner()) {
            staleWrites.increment();
        }
        return true;
    }

    SimulatedHca hca() {
        return hca;
    }
}
