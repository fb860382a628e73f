package io.mrcache.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The W6 attribution run: every slow hit it counts is given exactly one cause, and the percentiles are sane. */
class W6AttributionTest {

    @Test
    void everySlowHitGetsOneCause() throws Exception {
        Map<String, Object> r = W6Attribution.run(1.0);
        long hits = ((Number) r.get("hits")).longValue();
        long slow = ((Number) r.get("slow")).longValue();
        long p50 = ((Number) r.get("p50Ns")).longValue();
        long p99 = ((Number) r.get("p99Ns")).longValue();
        long max = ((Number) r.get("maxNs")).longValue();
        assertTrue(hits > 100_000, "hits " + hits);
        assertTrue(p50 > 0 && p50 <= p99 && p99 <= max, r.toString());
        long attributed = 0;
        for (Object n : ((Map<?, ?>) r.get("causes")).values()) {
            attributed += ((Number) n).longValue();
        }
        assertEquals(slow, attributed, "each slow hit has one cause: " + r);
        assertTrue(slow == 0 || !r.get("maxCause").equals("-"), r.toString());
        assertTrue(W6Attribution.describe(r).contains("hits timed one by one: p50 " + p50 + " ns"),
                W6Attribution.describe(r));
    }
}
