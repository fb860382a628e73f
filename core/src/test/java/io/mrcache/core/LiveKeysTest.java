package io.mrcache.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.testing.RecordingRegistrar;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** {@link LiveKeys}: a key is never handed out while it is live, also when the counter wraps. */
class LiveKeysTest {
    @Test
    void theCounterWrapsPastZeroAndSkipsLiveKeys() {
        LiveKeys keys = new LiveKeys(31, Integer.MAX_VALUE - 1);
        assertEquals(Integer.MAX_VALUE, keys.next());
        int one = keys.next();
        assertEquals(1, one, "wrapped, skipping 0");
        LiveKeys small = new LiveKeys(3, 0); // keys 1..7
        Set<Integer> taken = new HashSet<>();
        for (int i = 0; i < 7; i++) {
            assertTrue(taken.add(small.next()), "a live key handed out twice: " + taken);
        }
        RegistrationException full = assertThrows(RegistrationException.class, small::next);
        assertEquals(RegistrationException.ENOMEM, full.errno());
        small.release(5);
        assertEquals(5, small.next(), "the released key, and only it");
        assertEquals(7, small.liveCount());
    }

    @Test
    void badWidthsAndStartsAreRefusedNamingTheValue() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new LiveKeys(32, 0)).getMessage().contains("32"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new LiveKeys(1, 0)).getMessage().contains("1 bits"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new LiveKeys(3, 8)).getMessage().contains("0..7"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new LiveKeys(3, -1)).getMessage().contains("-1"));
    }

    /** The recording registrar, which every core test uses, keeps its keys unique among live registrations. */
    @Test
    void theRecordingRegistrarNeverHandsOutALiveKey() {
        RecordingRegistrar registrar = new RecordingRegistrar();
        Registration a = registrar.register(0x10000, 4096, Access.LOCAL_WRITE);
        Registration b = registrar.register(0x20000, 4096, Access.LOCAL_WRITE);
        registrar.deregister(a);
        Registration c = registrar.register(0x30000, 4096, Access.LOCAL_WRITE);
        assertTrue(c.lkey() != b.lkey() && c.rkey() != b.rkey());
        assertEquals(b.lkey() | 0x4000_0000, b.rkey());
        registrar.deregister(b);
        registrar.deregister(c);
    }
}
