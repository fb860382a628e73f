package io.mrcache.cli;

import io.mrcache.cli.cost.RegistrationCalibrator;
import io.mrcache.core.Access;
import io.mrcache.core.Budget;
import io.mrcache.core.ForwardingRegistrar;
import io.mrcache.core.Lease;
import io.mrcache.core.MetricsSnapshot;
import io.mrcache.core.Registrar;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationCache;
import io.mrcache.core.cost.NetworkModel;
import io.mrcache.core.cost.RegistrationCostModel;
import io.mrcache.core.cost.Savings;
import io.mrcache.verbs.registrar.DefaultRegistrar;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * A short, narrated walk through the core cache over the embedded registrar (a real RDMA device, else the simulated HCA, which pins pages with
 * mlock): a hit, a free and reuse of the same addresses, a free racing an in-flight registration, and
 * eviction within a budget.
 */
@Command(name = "tour", mixinStandardHelpOptions = true,
        exitCodeListHeading = "%nExit status:%n",
        exitCodeList = {"0:every safety check of the tour held", "1:a safety check failed (it is named)",
            "2:invalid options"},
        description = "Show the registration cache at work: hits, a free and address reuse, a free racing a"
                + " registration, eviction; exits non-zero if any safety check fails.")
final class TourCommand implements Callable<Integer> {
    @Option(names = "--hits", defaultValue = "2000000",
            description = "Hits to run for the throughput line (default: ${DEFAULT-VALUE}).")
    long hits;

    private final PrintStream out = System.out;
    private int failures;

    @Override
    public Integer call() throws Exception {
        if (hits < 0) {
            throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
                    "--hits must be >= 0 (got " + hits + ")");
        }
        DefaultRegistrar chosen = DefaultRegistrar.deviceOrSimulated();
        PausableRegistrar registrar = new PausableRegistrar(chosen.registrar());
        try (Arena memory = Arena.ofShared();
                RegistrationCache cache = RegistrationCache.builder(registrar).budget(new Budget(64L << 20, 64))
                        .build()) {
            long buffer = memory.allocate(64 << 10, 4096).address();
            long oneOffs = memory.allocate(200L * (64 << 10), 4096).address();
            out.println("mrcache core demonstration on the " + chosen.why().replaceFirst(", because:.*", "") + "\n");

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
            registrar.pauseNext(inRegister, proceed);
            CompletableFuture<Lease> racing = CompletableFuture.supplyAsync(
                    () -> cache.acquire(buffer, 64 << 10, Access.LOCAL_WRITE));
            await(inRegister);
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
                cache.acquire(oneOffs + (long) i * (64 << 10), 16 << 10, Access.LOCAL_READ).close();
            }
            out.printf("   regions cached: %d (budget 64), evictions: %d%n", cache.regionCount(),
                    cache.metrics().get(io.mrcache.core.CacheCounter.EVICTIONS));
            expect(cache.regionCount() <= 64, "the budget should bound the cached regions (I5)");

            long warmUp = Math.min(hits, 200_000);
            out.printf("%n5. %,d hits on one cached buffer (one thread), timed after %,d warm-up hits.%n", hits,
                    warmUp);
            for (long i = 0; i < warmUp; i++) { // let the JIT compile the hit path before timing it
                cache.acquire(buffer + 128, 4096, Access.LOCAL_WRITE).close();
            }
            long started = System.nanoTime();
            for (long i = 0; i < hits; i++) {
                cache.acquire(buffer + 128, 4096, Access.LOCAL_WRITE).close();
            }
            double ns = hits == 0 ? 0 : (System.nanoTime() - started) / (double) hits;
            out.printf("   %.1f ns per acquire+release%s (informational; see the benchmarks for claims)%n", ns,
                    warmUp < 200_000 ? ", cold: too few hits to warm up first" : "");

            MetricsSnapshot m = cache.metrics();
            out.println("\nMetrics:");
            out.print(m.format());
            printSavings(chosen, m, ns);
        }
        out.printf("%nLedger after close: %d registrations, %d deregistrations.%n", registrar.registered.get(),
                registrar.deregistered.get());
        expect(registrar.registered.get() == registrar.deregistered.get(), "the ledger does not balance (I4)");
        if (failures > 0) {
            out.println("FAILED: " + failures + " safety check(s) failed");
            return 1;
        }
        out.println("All safety checks passed.");
        return 0;
    }

    /** The cost model's account of this run: what the hits saved, and how well it predicts the misses. */
    private void printSavings(DefaultRegistrar chosen, MetricsSnapshot m, double hitNanos) {
        RegistrationCostModel model = RegistrationCalibrator.calibrate(chosen.registrar(),
                chosen.why().replaceFirst(", because:.*", ""), RegistrationCalibrator.DEFAULT_SIZES, 20, line -> { });
        NetworkModel net = new NetworkModel(400, 0.8, 1, 2e-6);
        Savings.Run run = Savings.forRun(m, model, net, hitNanos * 1e-9);
        out.println("\nCost model (registration cost " + model.source() + "):");
        out.println("  register   " + model.register());
        out.println("  deregister " + model.deregister());
        out.printf("  registrations avoided: %,d; time saved: %.3f s (%.1f%% of the no-cache time on a 400 Gb/s"
                + " link, efficiency 0.8, 2 us latency)%n", run.registrationsAvoided(), run.secondsSaved(),
                run.shareSaved() * 100);
        out.printf("  this run's registrations: predicted %.3f ms, measured %.3f ms (error %+.0f%%)%n",
                run.predictedRegistrationSeconds() * 1e3, run.measuredRegistrationSeconds() * 1e3,
                run.predictionError() * 100);
    }

    private void expect(boolean ok, String failure) {
        if (!ok) {
            failures++;
            out.println("   FAILED: " + failure);
        }
    }

    /** Passes calls through, counting them; can hold the next register call to stage a race. */
    static final class PausableRegistrar extends ForwardingRegistrar {
        final AtomicLong registered = new AtomicLong();
        final AtomicLong deregistered = new AtomicLong();
        private final AtomicReference<CountDownLatch[]> pause = new AtomicReference<>();

        PausableRegistrar(Registrar delegate) {
            super(delegate);
        }

        void pauseNext(CountDownLatch entered, CountDownLatch proceed) {
            pause.set(new CountDownLatch[] {entered, proceed});
        }

        @Override
        public Registration register(long address, long length, int access) {
            CountDownLatch[] p = pause.getAndSet(null);
            if (p != null) {
                p[0].countDown();
                await(p[1]);
            }
            Registration r = super.register(address, length, access);
            registered.incrementAndGet();
            return r;
        }

        @Override
        public void deregister(Registration registration) {
            super.deregister(registration);
            deregistered.incrementAndGet();
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
