package io.mrcache.stress.injector;

import io.mrcache.core.RegistrationException;
import io.mrcache.stress.injector.MallocArena.Allocation;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * Before the main run: caches closed while registrations are in flight. None may publish into a closed cache;
 * what the NIC still has registered after a close that completed normally is a leak.
 */
final class CloseRace {
    private static final int ROUNDS = 12;

    private CloseRace() {
    }

    /** Runs the rounds on {@code run}'s NIC and allocator, counting into its detectors. */
    static void run(InjectorRun run) {
        SplittableRandom rnd = new SplittableRandom(run.config.seed() ^ 0xC105EL);
        for (int round = 0; round < ROUNDS && !run.stop.get(); round++) {
            CacheUnderTest c = run.factory.create(run.nic, run.config);
            List<Allocation> mine = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                Allocation a = run.arena.allocate(3 + rnd.nextInt(2)); // 4 KiB and 16 KiB: page-sized requests
                if (a != null) {
                    mine.add(a);
                }
            }
            Thread[] racers = new Thread[2];
            for (int t = 0; t < racers.length; t++) {
                long seed = rnd.nextLong();
                racers[t] = Thread.ofPlatform().start(() -> raceClose(c, mine, new SplittableRandom(seed)));
            }
            try {
                Thread.sleep(1 + rnd.nextInt(2));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            boolean closedNormally = InjectorRun.closeQuietly(c);
            for (Thread t : racers) {
                InjectorRun.join(t, 10_000);
            }
            run.closeDoomed.addAndGet(c.coverage().getOrDefault(AddressReuseInjector.DOOMED, 0L));
            // this cache is the only one: what the NIC still has registered is its own. A close that
            // completed normally must have left nothing; one that reported failed deregistrations gets time
            // for the cache's retries
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(closedNormally ? 0 : 10);
            while (run.hca.liveRegistrations() > 0 && System.nanoTime() < deadline) {
                InjectorRun.sleep(1);
            }
            if (run.hca.liveRegistrations() > 0) {
                run.leakedAtCloseRace.addAndGet(run.hca.liveRegistrations());
                if (AddressReuseInjector.DEBUG) {
                    System.err.println("LEAKED at close race round " + round + ": " + run.hca.liveRegistrations()
                            + (closedNormally ? " after a normal close" : " 10 s after a failed close"));
                }
                break; // the NIC keeps them: later rounds could not tell theirs apart
            }
            for (Allocation a : mine) {
                run.arena.free(a, run.clock.incrementAndGet());
                run.arena.reusable(a, false);
            }
        }
    }

    private static void raceClose(CacheUnderTest c, List<Allocation> mine, SplittableRandom rnd) {
        if (mine.isEmpty()) {
            return;
        }
        for (int i = 0; i < 10_000; i++) {
            Allocation a = mine.get(rnd.nextInt(mine.size()));
            long pages = a.length() / MallocArena.PAGE;
            long first = rnd.nextLong(pages);
            long length = (1 + rnd.nextLong(pages - first)) * MallocArena.PAGE - rnd.nextInt(64);
            try {
                CacheUnderTest.Handle h = c.acquire(a.address() + first * MallocArena.PAGE, length,
                        InjectorRun.ACCESS[rnd.nextInt(InjectorRun.ACCESS.length)]);
                c.release(h);
            } catch (IllegalStateException closed) {
                return;
            } catch (RegistrationException e) {
                // injected ENOMEM: go on
            }
        }
    }
}
