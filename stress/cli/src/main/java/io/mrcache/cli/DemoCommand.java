package io.mrcache.cli;

import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.Lease;
import io.mrcache.core.MetricsSnapshot;
import io.mrcache.core.RegistrationCache;
import io.mrcache.core.testing.RecordingRegistrar;
import java.io.PrintStream;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CompletionStage;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The main job. Until the address-reuse fault injector lands it is a short, narrated demonstration of the
 * core cache: a hit, a free and reuse of the same addresses, a free racing an in-flight registration, and
 * eviction within a budget, over an in-memory registrar that takes a fixed time per registration.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Show the registration cache at work: hits, a free and address reuse, a free racing a"
                + " registration, eviction; exits non-zero if any safety check fails.")
final class DemoCommand implements Callable<Integer> {
    @Option(names = "--register-us", defaultValue = "20",
            description = "Simulated cost of one registration in microseconds (default: ${DEFAULT-VALUE}).")
    long registerMicros;

    @Option(names = "--hits", defaultValue = "2000000",
            description = "Hits to run for the throughput line (default: ${DEFAULT-VALUE}).")
    long hits;

    private final PrintStream out = System.out;
    private int failures;

    @Override
    public Integer call() throws Exception {
        if (registerMicros < 0 || hits < 0) {
            throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
                    "--register-us and --hits must be >= 0 (got " + registerMicros + ", " + hits + ")");
        }
        RecordingRegistrar registrar = new RecordingRegistrar(1, false);
        long spinNanos = registerMicros * 1000;
        registrar.duringRegister(() -> spin(spinNanos));
        long buffer = 0x7f00_0000_0000L;
        try (RegistrationCache cache = RegistrationCache.builder(registrar).budget(new Budget(64L << 20, 64))
                .build()) {
            out.println("mrcache core demonstration (in-memory registrar, " + registerMicros
                    + " us per registration)\n");

            out.println("1. A transport sends from a 64 KiB buffer twice.");
            Lease first = cache.acquire(buffer, 64 << 10, Access.LOCAL_WRITE);
            int oldLkey = first.lkey();
            out.printf("   first acquire: miss, registered, lkey=0x%x%n", first.lkey());
            first.close();
            Lease again = cache.acquire(buffer, 64 << 10, Access.LOCAL_WRITE);
            out.printf("   second acquire: hit, same lkey=0x%x, no registration%n", again.lkey());
            expect(again.lkey() == oldLkey, "the second acquire should hit");
            again.close();

            out.println("\n2. The allocator frees the buffer and hands its addresses to a new tensor.");
            CompletionStage<Void> freed = cache.invalidate(buffer, 64 << 10);
            out.printf("   free hook: invalidate -> completed=%s (the old keys are dead at the NIC)%n",
                    freed.toCompletableFuture().isDone());
            Lease reused = cache.acquire(buffer, 64 << 10, Access.LOCAL_WRITE);
            out.printf("   acquire on the reused addresses: lkey=0x%x (new registration, not the stale 0x%x)%n",
                    reused.lkey(), oldLkey);
            expect(reused.lkey() != oldLkey, "a stale registration was returned after the free (I1)");
            reused.close();

            out.println("\n3. A free arrives while another thread is still registering the same buffer (H4).");
            cache.invalidateAndWait(buffer, 64 << 10);
            CountDownLatch inRegister = new CountDownLatch(1);
            CountDownLatch proceed = new CountDownLatch(1);
            registrar.duringRegister(() -> {
                inRegister.countDown();
                await(proceed);
            });
            CompletableFuture<Lease> racing = CompletableFuture.supplyAsync(
                    () -> cache.acquire(buffer, 64 << 10, Access.LOCAL_WRITE));
            await(inRegister);
            registrar.duringRegister(() -> spin(spinNanos));
            CompletionStage<Void> racingFree = cache.invalidate(buffer, 64 << 10);
            proceed.countDown();
            Lease afterRace = racing.join();
            racingFree.toCompletableFuture().join();
            long discarded = cache.metrics().get(io.mrcache.core.CacheCounter.DISCARDED_IN_FLIGHT);
            out.printf("   the in-flight registration was discarded (%d), deregistered, and the acquire retried%n",
                    discarded);
            expect(discarded == 1, "the in-flight registration should have been discarded");
            afterRace.close();

            out.println("\n4. 200 one-off buffers pass through a cache budgeted for 64 regions.");
            for (int i = 0; i < 200; i++) {
                cache.acquire(buffer + ((long) (i + 1) << 20), 16 << 10, Access.LOCAL_READ).close();
            }
            out.printf("   regions cached: %d (budget 64), evictions: %d%n", cache.regionCount(),
                    cache.metrics().get(io.mrcache.core.CacheCounter.EVICTIONS));
            expect(cache.regionCount() <= 64, "the budget should bound the cached regions (I5)");

            out.printf("%n5. %,d hits on one cached buffer (one thread).%n", hits);
            long started = System.nanoTime();
            for (long i = 0; i < hits; i++) {
                cache.acquire(buffer + 128, 4096, Access.LOCAL_WRITE).close();
            }
            double ns = hits == 0 ? 0 : (System.nanoTime() - started) / (double) hits;
            out.printf("   %.1f ns per acquire+release (informational; see the benchmarks for claims)%n", ns);

            MetricsSnapshot m = cache.metrics();
            out.println("\nMetrics:");
            out.print(m.format());
        }
        registrar.assertBalanced();
        out.println("\nLedger after close: every registration deregistered exactly once.");
        if (failures > 0) {
            out.println("FAILED: " + failures + " safety check(s) failed");
            return 1;
        }
        out.println("All safety checks passed.");
        return 0;
    }

    private void expect(boolean ok, String failure) {
        if (!ok) {
            failures++;
            out.println("   FAILED: " + failure);
        }
    }

    private static void spin(long nanos) {
        long end = System.nanoTime() + nanos;
        while (System.nanoTime() < end) {
            Thread.onSpinWait();
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
