package io.mrcache.core.cost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.Access;
import io.mrcache.core.RegistrationCache;
import io.mrcache.core.testing.RecordingRegistrar;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class CostModelTest {

    @Test
    void theWorkedExampleHolds() {
        assertEquals(0.200005, NetworkModel.messageTimeSeconds(4e9, 400, 0.8, 2, 5e-6), 1e-12);
        assertEquals(20e9, new NetworkModel(400, 0.8, 2, 5e-6).effectiveBytesPerSecond(), 1e-3);
    }

    @Test
    void boundaryInputs() {
        assertEquals(5e-6, NetworkModel.messageTimeSeconds(0, 400, 0.8, 2, 5e-6), 0, "0 bytes costs the latency");
        assertEquals(4e9 / 50e9, NetworkModel.messageTimeSeconds(4e9, 400, 1, 1, 0), 1e-15,
                "efficiency 1, oversubscription 1: the nominal rate");
        assertEquals(0, NetworkModel.messageTimeSeconds(0, 1, 1, 1, 0), 0);
    }

    @Test
    void everyInvalidInputIsRejectedWithItsName() {
        assertInvalid("bytes", () -> NetworkModel.messageTimeSeconds(-1, 400, 0.8, 2, 0));
        assertInvalid("link_gbps", () -> NetworkModel.messageTimeSeconds(1, 0, 0.8, 2, 0));
        assertInvalid("link_gbps", () -> NetworkModel.messageTimeSeconds(1, -400, 0.8, 2, 0));
        assertInvalid("efficiency", () -> NetworkModel.messageTimeSeconds(1, 400, 0, 2, 0));
        assertInvalid("efficiency", () -> NetworkModel.messageTimeSeconds(1, 400, 1.01, 2, 0));
        assertInvalid("oversubscription", () -> NetworkModel.messageTimeSeconds(1, 400, 0.8, 0.99, 0));
        assertInvalid("latency", () -> NetworkModel.messageTimeSeconds(1, 400, 0.8, 2, -1e-6));
        assertInvalid("bytes", () -> NetworkModel.messageTimeSeconds(Double.NaN, 400, 0.8, 2, 0));
        assertInvalid("efficiency", () -> NetworkModel.messageTimeSeconds(1, 400, Double.NaN, 2, 0));
    }

    private static void assertInvalid(String name, Runnable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call::run);
        assertTrue(e.getMessage().startsWith(name), e.getMessage());
    }

    @Test
    void theFitRecoversKnownCoefficientsFromNoisyData() {
        double a = 3e-6;
        double b = 0.2e-6;
        Random rnd = new Random(42);
        List<LinearCost.Sample> samples = new ArrayList<>();
        for (long bytes = 4096; bytes <= 4 << 20; bytes *= 2) {
            for (int i = 0; i < 20; i++) {
                double noise = rnd.nextGaussian() * 0.3e-6;
                samples.add(new LinearCost.Sample(bytes, a + b * (bytes / 4096) + noise));
            }
        }
        LinearCost fit = LinearCost.fit(samples, 4096);
        assertEquals(a, fit.fixedSeconds(), 0.1e-6);
        assertEquals(b, fit.perPageSeconds(), 0.002e-6);
        assertEquals(0.3e-6, fit.residualRms(), 0.05e-6);
        assertEquals(4096, fit.minBytes());
        assertEquals(4 << 20, fit.maxBytes());
        // an outlier that would wreck plain least squares leaves the median fit alone
        samples.add(new LinearCost.Sample(4 << 20, 5e-3));
        LinearCost robust = LinearCost.fitMedians(samples, 4096);
        assertEquals(a, robust.fixedSeconds(), 0.3e-6);
        assertEquals(b, robust.perPageSeconds(), 0.002e-6);
        assertThrows(IllegalArgumentException.class,
                () -> LinearCost.fit(List.of(new LinearCost.Sample(4096, 1e-6), new LinearCost.Sample(4096, 2e-6)), 4096));
    }

    @Test
    void whatIfArithmeticOnAHandComputedCase() {
        // 1 MiB on 100 Gb/s, efficiency 1, oversubscription 1, latency 2 us:
        // network = 2e-6 + 1048576 / 12.5e9 = 85.886 us
        // register = 1 us + 0.1 us * 256 pages = 26.6 us; deregister = 0.5 us + 0.02 us * 256 = 5.62 us
        RegistrationCostModel reg = new RegistrationCostModel(LinearCost.of(1e-6, 0.1e-6, 4096),
                LinearCost.of(0.5e-6, 0.02e-6, 4096), "hand");
        Savings.WhatIf w = new Savings.WhatIf(new NetworkModel(100, 1, 1, 2e-6), reg, 0.9, 50e-9, 1e-6);
        Savings.Row r = Savings.row(w, 1 << 20);
        assertEquals(2e-6 + 1048576 / 12.5e9, r.network(), 1e-15);
        assertEquals(26.6e-6 + 5.62e-6, r.registration(), 1e-12);
        assertEquals(r.network() + 32.22e-6, r.withoutCache(), 1e-12);
        assertEquals(r.network() + 50e-9, r.cacheHit(), 1e-15);
        assertEquals(r.network() + 50e-9 + 0.1 * 32.22e-6, r.withCache(), 1e-12);
        assertEquals(0.9 * 32.22e-6 - 50e-9, r.saving(), 1e-12);
        assertEquals((0.9 * 32.22e-6 - 50e-9) / r.withoutCache(), r.savingShare(), 1e-12);
        assertEquals((1 << 20) / r.withoutCache(), r.bandwidthWithoutCache(), 1e-3);
        // break-even: (32.22 + 1) / (32.22 - 0.05) uses
        assertEquals(33.22 / 32.17, Savings.breakEvenUses(reg, 1 << 20, 50e-9, 1e-6), 1e-9);
        assertEquals(11, Savings.table(w).size(), "4 KiB to 4 GiB in powers of four");
    }

    @Test
    void aRunsSavingsComeFromItsMetrics() {
        RecordingRegistrar registrar = new RecordingRegistrar();
        long[] clock = {0};
        registrar.duringRegister(() -> clock[0] += 10_000); // every registration "takes" 10 us
        RegistrationCostModel reg = new RegistrationCostModel(LinearCost.of(2e-6, 0.5e-6, 4096),
                LinearCost.of(1e-6, 0, 4096), "hand");
        NetworkModel net = new NetworkModel(100, 1, 1, 0);
        try (RegistrationCache cache = RegistrationCache.builder(registrar).clock(() -> clock[0]).build()) {
            for (int i = 0; i < 4; i++) {
                cache.acquire(0x100000 + i * 0x10000L, 16384, Access.LOCAL_WRITE).close(); // 4 misses, 4 pages each
            }
            for (int i = 0; i < 12; i++) {
                cache.acquire(0x100000 + (i % 4) * 0x10000L, 16384, Access.LOCAL_WRITE).close(); // 12 hits
            }
            Savings.Run run = Savings.forRun(cache.metrics(), reg, net, 0);
            assertEquals(12, run.registrationsAvoided());
            double roundTrip = 2e-6 + 0.5e-6 * 4 + 1e-6; // 5 us
            assertEquals(12 * roundTrip, run.secondsSaved(), 1e-9);
            assertEquals(16 * (16384 / 12.5e9), run.communicationSeconds(), 1e-9);
            assertEquals(4 * 4e-6, run.predictedRegistrationSeconds(), 1e-9);
            assertEquals(4 * 10e-6, run.measuredRegistrationSeconds(), 1e-7);
            assertEquals(-0.6, run.predictionError(), 0.01);
        }
    }

}
