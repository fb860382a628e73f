package io.mrcache.stress.injector;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.mrcache.core.Access;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationException;
import io.mrcache.verbs.sim.SimulatedHca;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class InjectorNicTest {
    private final InjectorNic nic = new InjectorNic(new SimulatedHca().accountOnly(), new AtomicLong(), 0, false,
            false, ThreadLocal.withInitial(() -> new SplittableRandom(1)));
    private final MallocArena arena = new MallocArena(false, nic::liveFromBefore);

    @BeforeEach
    void attach() {
        nic.attach(arena);
    }

    @AfterEach
    void close() {
        arena.close();
    }

    @Test
    void aDeregistrationWhileAWorkerHoldsALeaseIsCountedAndTheKeyIsForgottenAfter() {
        MallocArena.Allocation a = arena.allocate(0);
        assertNotNull(a);
        Registration leasedThrough = nic.register(a.address(), a.length(), Access.LOCAL_WRITE);
        InjectorNic.Pinned p = nic.pinned(leasedThrough.lkey());
        assertNotNull(p);
        InjectorNic.leased(p, 1);
        InjectorNic.leased(p, 1);
        InjectorNic.leased(p, -1);
        nic.deregister(leasedThrough); // one lease still held
        assertEquals(1, nic.deregisteredUnderLease.sum());
        assertNull(nic.pinned(leasedThrough.lkey()), "a dead key leaves the NIC's records, lease count and all");

        Registration released = nic.register(a.address(), a.length(), Access.LOCAL_WRITE);
        InjectorNic.Pinned q = nic.pinned(released.lkey());
        InjectorNic.leased(q, 1);
        InjectorNic.leased(q, -1);
        InjectorNic.leased(null, 1); // a dead key's lease: nothing to count, nothing kept
        nic.deregister(released);
        assertEquals(1, nic.deregisteredUnderLease.sum(), "every lease on it was released first");
        assertEquals(0, nic.doubleDeregistrations.sum());
    }

    @Test
    void aDeadKeyIsNotTakenForTheLiveKeyThatReusedItsSlot() {
        MallocArena.Allocation a = arena.allocate(0);
        assertNotNull(a);
        Registration dead = nic.register(a.address(), a.length(), Access.LOCAL_WRITE);
        nic.deregister(dead);
        Registration live = nic.register(a.address(), a.length(), Access.LOCAL_WRITE);
        assertEquals(SimulatedHca.slotOf(dead.lkey()), SimulatedHca.slotOf(live.lkey()), "the HCA reused the slot");
        InjectorNic.Pinned p = nic.pinned(live.lkey());
        assertNotNull(p);
        assertNull(nic.pinned(dead.lkey()), "the old generation's key is dead");

        assertThrows(RegistrationException.class, () -> nic.deregister(dead));
        assertEquals(1, nic.doubleDeregistrations.sum());
        assertSame(p, nic.pinned(live.lkey()), "deregistering the dead key again leaves the live one");
        nic.deregister(live);
        assertNull(nic.pinned(live.lkey()));
        assertEquals(1, nic.doubleDeregistrations.sum());
    }
}
