package io.mrcache.stress.injector;

import io.mrcache.core.Registrar;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationException;
import io.mrcache.verbs.sim.RemoteAccessException;
import io.mrcache.verbs.sim.SimulatedHca;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;

/**
 * The NIC as the injector sees it, and the ground truth of what it has registered.
 *
 * <p>As a {@link Registrar} it translates the allocator's virtual ranges to the physical run behind them and
 * registers that on the {@link SimulatedHca} (real {@code mlock}), remembering for each key what it pinned and
 * when its register call began (an epoch of the injector's clock). Local and remote RDMA writes go, as a
 * NIC's do, to the pages pinned at registration time.
 *
 * <p>Detectors: a write is <em>stale</em> when it lands in pages that no longer back its address, or in bytes
 * that another allocation than the one the key was handed out for owns now; a write to freed bytes is a
 * <em>write after free</em> (no victim). A deregistration of an unknown key is a <em>double deregistration</em>;
 * one while a worker holds a lease on the key is a <em>deregistration under lease</em>. The allocator asks
 * {@link #liveFromBefore} before it reuses bytes: a registration that began before their free and is still
 * live means the cache told the allocator "safe" too early (I3).
 */
final class InjectorNic implements Registrar {
    /**
     * What a key's registration pinned: the virtual range, the physical run, and when it began. It joins its
     * chunk's set before the HCA call (the reuse check must see a registration being made) and learns the
     * HCA's registration after: one set insertion per registration, not an entry for the call and another for
     * its result.
     */
    static final class Pinned {
        private static final VarHandle LEASES;

        static {
            try {
                LEASES = MethodHandles.lookup().findVarHandle(Pinned.class, "leases", int.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private final long address;
        private final long length;
        private final long run;
        private final long physical;
        private final long beganAt;
        /** Null until the HCA registered it (a write looks keys up only after). */
        private volatile @Nullable Registration hca;
        /** Leases the workers hold on this registration now (it dies with it: a soak makes 10^8). */
        @SuppressWarnings("unused") // through LEASES
        private volatile int leases;

        /** The protection domain the registration was made in. */
        final long pd;

        Pinned(long address, long length, long run, long physical, long beganAt, long pd) {
            this.pd = pd;
            this.address = address;
            this.length = length;
            this.run = run;
            this.physical = physical;
            this.beganAt = beganAt;
        }

        long address() {
            return address;
        }

        long run() {
            return run;
        }

        /** Where the NIC reaches virtual {@code at} (inside this registration) through the pages it pinned. */
        long physicalOf(long at) {
            return physical + (at - address);
        }

        @Nullable Registration hca() {
            return hca;
        }

        /** Whether a register call that began before {@code epoch} made it (the oracle's I1 check). */
        boolean beganBefore(long epoch) {
            return beganAt < epoch;
        }

        int leases() {
            return leases;
        }

        /** Equality stays identity; this spares each new registration the JVM's identity-hash slow path. */
        @Override
        public int hashCode() {
            return Long.hashCode((physical + beganAt) * 0x9E3779B97F4A7C15L);
        }

        boolean overlaps(long from, long to) {
            return address < to && address + length > from;
        }

        @Override
        public String toString() {
            return String.format("Pinned[0x%x,+%d) run 0x%x physical 0x%x began %d %s", address, length, run,
                    physical, beganAt, hca);
        }
    }

    private final SimulatedHca hca;
    private final long pd;
    /** A second protection domain, for a second tenant ({@link Fault#TWO_TENANTS}); see {@link #secondDomain}. */
    private final long pd2;
    private final AtomicLong clock;
    /** One registration in this many spins 20 us more; 0: none. */
    private final int slowEvery;
    private final boolean failingRegistration;
    private volatile boolean failingDeregistration;
    private final ThreadLocal<SplittableRandom> faultRandom;
    private MallocArena arena;
    /**
     * Live registrations by their key's slot at the HCA (no two live keys share one; an entry's key is checked on
     * lookup): one array slot written per registration, where a map wrote its nodes and its size counter, lines
     * the two workers handed back and forth.
     */
    private final AtomicReferenceArray<Pinned> byKey = new AtomicReferenceArray<>(SimulatedHca.MAX_SLOTS);
    /** Per chunk: registrations over it, live or being made (added before the HCA call). */
    private final List<Set<Pinned>> byChunk = Stream.<Set<Pinned>>generate(ConcurrentHashMap::newKeySet)
            .limit(MallocArena.CHUNKS).toList();
    final LongAdder staleWrites = new LongAdder();
    final LongAdder writesAfterFree = new LongAdder();
    final LongAdder rejectedRemote = new LongAdder();
    final LongAdder rejectedLocal = new LongAdder();
    final LongAdder registrations = new LongAdder();
    final LongAdder slowed = new LongAdder();
    final LongAdder doubleDeregistrations = new LongAdder();
    final LongAdder deregisteredUnderLease = new LongAdder();
    final LongAdder injectedDeregistrationFailures = new LongAdder();
    /** Writes with a live key, made in the other tenant's domain, that the HCA accepted (I7 broken). */
    final LongAdder crossDomainAccepted = new LongAdder();
    final LongAdder crossDomainRejected = new LongAdder();

    InjectorNic(SimulatedHca hca, AtomicLong clock, int slowEvery, boolean failingRegistration,
            boolean failingDeregistration, ThreadLocal<SplittableRandom> faultRandom) {
        this.hca = hca;
        this.pd = hca.allocProtectionDomain();
        this.pd2 = hca.allocProtectionDomain();
        this.clock = clock;
        this.slowEvery = slowEvery;
        this.failingRegistration = failingRegistration;
        this.failingDeregistration = failingDeregistration;
        this.faultRandom = faultRandom;
    }

    void attach(MallocArena arena) {
        this.arena = arena;
    }

    /** Stops injecting deregistration failures (for the end of a run: close must be able to finish). */
    void stopFailingDeregistrations() {
        failingDeregistration = false;
    }

    @Override
    public Registration register(long address, long length, int access) {
        return register(pd, address, length, access);
    }

    /**
     * The same NIC, registering in a second protection domain: a second tenant's registrar. Its keys are used in
     * their own domain, and probed in the other ({@link #crossDomainWrite}).
     */
    Registrar secondDomain() {
        return new Registrar() {
            @Override
            public Registration register(long address, long length, int access) {
                return InjectorNic.this.register(pd2, address, length, access);
            }

            @Override
            public void deregister(Registration registration) {
                InjectorNic.this.deregister(registration);
            }

            @Override
            public long protectionDomain() {
                return pd2;
            }
        };
    }

    private Registration register(long domain, long address, long length, int access) {
        long began = clock.get();
        if (failingRegistration && faultRandom.get().nextInt(100) < 2) {
            throw new RegistrationException("injected ENOMEM", RegistrationException.ENOMEM);
        }
        // every registration (1) draws nothing, so the demo's seeds replay as before
        if (slowEvery == 1 || (slowEvery > 1 && faultRandom.get().nextInt(slowEvery) == 0)) {
            slowed.increment();
            long end = System.nanoTime() + 20_000;
            while (System.nanoTime() < end) {
                Thread.onSpinWait();
            }
        }
        long run = arena.pin(address, length);
        long physical = run + (address - arena.chunkAddress(arena.chunkOf(address)));
        Set<Pinned> chunk = byChunk.get(arena.chunkOf(address));
        Pinned p = new Pinned(address, length, run, physical, began, domain);
        chunk.add(p); // visible to the reuse check before the HCA pins anything
        Registration hcaReg;
        try {
            hcaReg = hca.register(domain, physical, length, access);
        } catch (RuntimeException e) {
            chunk.remove(p);
            arena.unpin(run);
            throw e;
        }
        p.hca = hcaReg;
        byKey.set(SimulatedHca.slotOf(hcaReg.lkey()), p);
        registrations.increment();
        return new Registration(address, length, access, hcaReg.lkey(), hcaReg.rkey(), domain, hcaReg.handle());
    }

    @Override
    public void deregister(Registration registration) {
        Pinned p = pinned(registration.lkey());
        if (p == null) {
            doubleDeregistrations.increment();
            if (AddressReuseInjector.DEBUG) {
                System.err.println("DOUBLE DEREGISTRATION " + registration);
            }
            throw new RegistrationException("deregister of an unknown or dead key " + registration, 22);
        }
        if (p.leases() > 0) {
            deregisteredUnderLease.increment();
            if (AddressReuseInjector.DEBUG) {
                System.err.println("DEREGISTERED UNDER LEASE " + registration);
            }
        }
        if (failingDeregistration && faultRandom.get().nextInt(100) < 1) {
            injectedDeregistrationFailures.increment();
            throw new RegistrationException("injected EBUSY from ibv_dereg_mr", 16); // the key stays live
        }
        try {
            hca.deregister(p.hca());
        } catch (RuntimeException e) {
            if (AddressReuseInjector.DEBUG) {
                System.err.println("HCA DEREGISTER FAILED " + registration + ": " + e);
            }
            throw e;
        }
        // after: a write holding p now meets a dead key at the HCA; a compare-and-set, because the HCA may have
        // given the slot to another thread's registration already
        byKey.compareAndSet(SimulatedHca.slotOf(registration.lkey()), p, null);
        byChunk.get(arena.chunkOf(p.address())).remove(p);
        arena.unpin(p.run());
    }

    @Override
    public long protectionDomain() {
        return pd;
    }

    /** Registrations over {@code [address, address + length)} that began before {@code freeEpoch}. */
    int liveFromBefore(long address, long length, long freeEpoch) {
        int c = arena.chunkOf(address);
        if (c < 0) {
            return 0;
        }
        int n = 0;
        for (Pinned p : byChunk.get(c)) {
            if (p.beganBefore(freeEpoch) && p.overlaps(address, address + length)) {
                n++;
                if (AddressReuseInjector.DEBUG) {
                    System.err.printf("REUSED WHILE REGISTERED [0x%x,+%d) freed at %d: %s%n", address, length,
                            freeEpoch, p);
                }
            }
        }
        return n;
    }

    /**
     * The registration behind a live {@code lkey}, or null for a dead or unknown key: one lookup per use, for
     * the oracle's checks and the lease count ({@link #leased}).
     */
    @Nullable Pinned pinned(int lkey) {
        Pinned p = byKey.get(SimulatedHca.slotOf(lkey));
        Registration r = p == null ? null : p.hca(); // set before the entry is
        return r != null && r.lkey() == lkey ? p : null;
    }

    /** A worker took (+1) or released (-1) a lease on {@code p}'s keys (null: a dead key, nothing to count). */
    static void leased(@Nullable Pinned p, int delta) {
        if (p != null) {
            Pinned.LEASES.getAndAdd(p, delta);
        }
    }

    /**
     * The oracle's view of a hit: whether {@code p} pinned pages that no longer back {@code address}, which
     * {@code backing} backs now (its chunk was unmapped and mapped again since). No library can see this; the
     * injector's ground truth can.
     */
    static boolean pinsOldPages(Pinned p, long address, long backing) {
        return p.physicalOf(address) != backing;
    }

    /** The NIC writes {@code data} at virtual {@code address} with {@code lkey}, for allocation {@code intended}. */
    boolean localWrite(int lkey, long address, MemorySegment data, long intended) {
        return write(lkey, address, data, false, intended, 0);
    }

    /** As {@link #localWrite}, posted through protection domain {@code via} (0: the key's own). */
    boolean localWrite(int lkey, long address, MemorySegment data, long intended, long via) {
        return write(lkey, address, data, false, intended, via);
    }

    /** A peer's RDMA write with {@code rkey} at virtual {@code address}, meant for allocation {@code intended}. */
    boolean remoteWrite(int rkey, long address, MemorySegment data, long intended) {
        return write(rkey, address, data, true, intended, 0);
    }

    /** As {@link #remoteWrite}, through a queue pair of protection domain {@code via} (0: the key's own). */
    boolean remoteWrite(int rkey, long address, MemorySegment data, long intended, long via) {
        return write(rkey, address, data, true, intended, via);
    }

    private boolean write(int key, long address, MemorySegment data, boolean remote, long intended, long via) {
        Pinned p = pinned(key);
        if (p == null) {
            (remote ? rejectedRemote : rejectedLocal).increment();
            return false;
        }
        long target = p.physicalOf(address);
        // Classify by the owner and the pages before the write: bytes are reused only after the key's
        // deregistration, which the HCA orders after any write it accepted, so an accepted write's
        // classification cannot be overtaken by a reuse (reading after the write could be).
        MallocArena.Meets before = arena.classify(address, intended, target);
        try {
            long domain = via == 0 ? p.pd : via;
            if (remote) {
                hca.rdmaWrite(domain, key, target, data);
            } else {
                hca.localWrite(domain, key, target, data);
            }
        } catch (RemoteAccessException e) {
            (remote ? rejectedRemote : rejectedLocal).increment();
            return false;
        }
        if (before == MallocArena.Meets.FREE) {
            writesAfterFree.increment();
        } else if (before == MallocArena.Meets.OTHER) {
            staleWrites.increment();
            if (AddressReuseInjector.DEBUG) {
                System.err.printf("STALE WRITE key 0x%x at 0x%x intended %d target 0x%x remote %b pinned %s%n", key,
                        address, intended, target, remote, p);
            }
        }
        return true;
    }

    /**
     * The other tenant's peer writes with {@code rkey}, which a tenant posts through domain {@code via}, through a
     * queue pair of its own domain (the other one): the HCA must reject it (I7). Counts the outcome; true when the
     * write was (wrongly) accepted, as it is when the key was registered in the other tenant's domain.
     */
    boolean crossDomainWrite(int rkey, long address, MemorySegment data, long via) {
        Pinned p = pinned(rkey);
        if (p == null) {
            return false; // dead already: nothing to probe
        }
        long other = via == pd ? pd2 : pd;
        try {
            hca.rdmaWrite(other, rkey, p.physicalOf(address), data);
        } catch (RemoteAccessException e) {
            crossDomainRejected.increment();
            return false;
        }
        crossDomainAccepted.increment();
        return true;
    }

    SimulatedHca hca() {
        return hca;
    }
}
