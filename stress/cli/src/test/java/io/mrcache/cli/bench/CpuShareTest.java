package io.mrcache.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class CpuShareTest {
    private static final long SECOND = 1_000_000_000L;
    private static final double TICKS = 100.0 * Runtime.getRuntime().availableProcessors();

    @Test
    void aTallyWeighsItsIntervalsByTheirLength() {
        CpuShare.Tally tally = new CpuShare.Tally();
        // one second in which others took 10% of the machine, then three seconds in which they took none
        tally.add(new CpuShare(0, 0, 0), new CpuShare(Math.round(TICKS * 0.1) + 50, 50, SECOND));
        tally.add(new CpuShare(1000, 500, 2 * SECOND), new CpuShare(1000 + 80, 580, 5 * SECOND));
        assertEquals(Math.round(TICKS * 0.1) / (4 * TICKS), tally.share(), 1e-9,
                "the busy second's share spread over four, not the mean of 10% and 0%");
        assertEquals(0.1, new CpuShare(Math.round(TICKS * 0.1) + 50, 50, SECOND).othersSince(new CpuShare(0, 0, 0)),
                0.01, "one interval alone");
    }

    @Test
    void aTallyWithAnUnreadableIntervalOrNoneIsUnknown() {
        assertTrue(Double.isNaN(new CpuShare.Tally().share()), "no interval");
        CpuShare.Tally tally = new CpuShare.Tally();
        tally.add(new CpuShare(0, 0, 0), new CpuShare(10, 0, SECOND));
        tally.add(new CpuShare(-1, -1, SECOND), new CpuShare(10, 0, 2 * SECOND));
        assertTrue(Double.isNaN(tally.share()), "/proc unreadable for one interval: not a partial share");
    }
}
