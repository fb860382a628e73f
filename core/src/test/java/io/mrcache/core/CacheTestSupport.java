package io.mrcache.core;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.testing.RecordingRegistrar;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;

/** What the cache's behaviour tests share: a recording registrar whose ledger must stay clean, a pool, waits. */
abstract class CacheTestSupport {
    static final long KB = 1024;
    static final long PAGE = 4096;
    static final long BASE = 0x10_0000;

    final RecordingRegistrar registrar = new RecordingRegistrar();
    final ExecutorService pool = Executors.newCachedThreadPool();

    @AfterEach
    void shutdownAndCheckTheLedger() {
        pool.shutdownNow();
        assertTrue(registrar.violations().isEmpty(), () -> "ledger violations: " + registrar.violations());
    }

    /**
     * Makes the registrar's first register call signal {@code entered} and then wait for {@code proceed}, to
     * hold a registration in flight while the test acts; later calls run at once.
     */
    void holdFirstRegister(CountDownLatch entered, CountDownLatch proceed) {
        AtomicInteger calls = new AtomicInteger();
        registrar.duringRegister(() -> {
            if (calls.getAndIncrement() == 0) {
                entered.countDown();
                await(proceed);
            }
        });
    }

    static void await(CountDownLatch latch) {
        try {
            if (!latch.await(10, TimeUnit.SECONDS)) {
                throw new IllegalStateException("latch timed out");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    static void waitFor(BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("condition not reached in 5 s");
            }
            Thread.sleep(1);
        }
    }
}
