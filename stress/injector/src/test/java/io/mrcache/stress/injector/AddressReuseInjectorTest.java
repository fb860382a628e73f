package io.mrcache.stress.injector;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.EnumSet;
import org.junit.jupiter.api.Test;

class AddressReuseInjectorTest {
    static final EnumSet<Fault> ALL = Fault.parse("all");

    static InjectorReport run(AddressReuseInjector.CacheFactory cache, long ops, int threads, long seed,
            EnumSet<Fault> faults, boolean check) {
        return AddressReuseInjector.run(new InjectorConfig(ops, threads, seed, faults, check), cache, line -> { });
    }

    @Test
    void mrcacheShowsNoStaleWriteNoCorruptionNoLeakUnderEveryFault() {
        InjectorReport r = run(Caches.MRCACHE, 30_000, 2, 11, ALL, true);
        assertEquals(30_000, r.operations());
        assertEquals(0, r.staleWrites(), r.toString());
        assertEquals(0, r.corruptedBuffers(), r.toString());
        assertEquals(0, r.leakedRegistrations(), r.toString());
        assertTrue(r.remoteRejected() > 0, "stale remote keys were presented and rejected: " + r);
        assertEquals(0, r.staleHitsCaught(), "with every free announced the generation check never fires: " + r);
    }

    @Test
    void theNaiveCacheWritesIntoStalePagesEveryRun() {
        for (long seed = 1; seed <= 3; seed++) {
            InjectorReport r = run(Caches.NAIVE, 5_000, 2, seed, EnumSet.of(Fault.IMMEDIATE_REUSE), false);
            assertTrue(r.staleWrites() > 0, r.toString());
            assertTrue(r.corruptedBuffers() > 0, r.toString());
            assertEquals(0, r.leakedRegistrations(), r.toString());
        }
    }

    @Test
    void withDroppedHooksTheGenerationCheckKeepsLiveBuffersSafeFromOldRkeys() {
        InjectorReport r = run(Caches.MRCACHE, 20_000, 1, 5, EnumSet.of(Fault.DROP_HOOKS, Fault.IMMEDIATE_REUSE,
                Fault.STALE_REMOTE_KEYS), true);
        assertEquals(0, r.staleWrites(), r.toString());
        assertEquals(0, r.corruptedBuffers(), r.toString());
        assertTrue(r.staleHitsCaught() > 0, r.toString());
        // keys of buffers whose free was lost stay alive until the check meets their range: a peer's write with
        // one lands in the old, still pinned pages (a write after free), never in another buffer
        assertTrue(r.writesAfterFree() + r.remoteRejected() > 0, r.toString());
    }

    @Test
    void droppedHooksBreakThePreconditionWithoutTheGenerationCheck() {
        InjectorReport unguarded = run(Caches.MRCACHE, 20_000, 1, 5, EnumSet.of(Fault.DROP_HOOKS,
                Fault.IMMEDIATE_REUSE), false);
        assertTrue(unguarded.staleWrites() > 0 && unguarded.corruptedBuffers() > 0,
                "lost free hooks do lead to stale hits: " + unguarded);
        InjectorReport guarded = run(Caches.MRCACHE, 20_000, 1, 5, EnumSet.of(Fault.DROP_HOOKS,
                Fault.IMMEDIATE_REUSE), true);
        assertEquals(0, guarded.staleWrites(), guarded.toString());
        assertTrue(guarded.staleHitsCaught() > 0, guarded.toString());
    }

    @Test
    void oneThreadReplaysTheSameCounts() {
        EnumSet<Fault> faults = EnumSet.of(Fault.IMMEDIATE_REUSE, Fault.DELAYED_HOOKS, Fault.STALE_REMOTE_KEYS,
                Fault.FAILING_REGISTRATION);
        InjectorReport a = run(Caches.NAIVE, 8_000, 1, 99, faults, false);
        InjectorReport b = run(Caches.NAIVE, 8_000, 1, 99, faults, false);
        assertEquals(a.staleWrites(), b.staleWrites());
        assertEquals(a.corruptedBuffers(), b.corruptedBuffers());
        assertEquals(a.remoteRejected(), b.remoteRejected());
        assertEquals(a.registrationErrors(), b.registrationErrors());
        InjectorReport c = run(Caches.MRCACHE, 8_000, 1, 99, faults, true);
        InjectorReport d = run(Caches.MRCACHE, 8_000, 1, 99, faults, true);
        assertEquals(c.remoteRejected(), d.remoteRejected());
        assertEquals(c.registrationErrors(), d.registrationErrors());
    }

    @Test
    void faultNamesParseAndUnknownOnesAreNamed() {
        assertEquals(EnumSet.complementOf(EnumSet.of(Fault.DROP_HOOKS)), Fault.parse("all"));
        assertEquals(EnumSet.allOf(Fault.class), Fault.parse("all,drop-hooks"));
        assertEquals(EnumSet.of(Fault.DROP_HOOKS, Fault.SLOW_REGISTRATION), Fault.parse("drop-hooks, slow-registration"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Fault.parse("drop-hook"));
        assertTrue(e.getMessage().contains("'drop-hook'") && e.getMessage().contains("drop-hooks"), e.getMessage());
    }
}
