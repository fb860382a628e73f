package io.mrcache.stress.injector;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.mrcache.verbs.sim.SimulatedHca;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class InjectorNicTest {
    @Test
    void aKeysLeaseCountIsForgottenWhenItReturnsToZeroSoASoakDoesNotGrow() {
        InjectorNic nic = new InjectorNic(new SimulatedHca().accountOnly(), new AtomicLong(), 0, false, false,
                ThreadLocal.withInitial(() -> new SplittableRandom(1)));
        nic.leased(7, 1);
        nic.leased(7, 1);
        nic.leased(9, 1);
        nic.leased(7, -1);
        assertEquals(2, nic.leasedKeys());
        nic.leased(7, -1);
        nic.leased(9, -1);
        assertEquals(0, nic.leasedKeys(), "every lease was released: no key should stay tracked");
    }
}
