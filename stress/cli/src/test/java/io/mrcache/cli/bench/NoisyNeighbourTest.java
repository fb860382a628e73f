package io.mrcache.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The noisy-neighbour run in small: what it asserts does not depend on timing. Under the shared limit A's hot
 * set sits within its guarantee, so no request of B can evict it (A misses exactly its 64 first uses, as alone),
 * and the limit is reserved before the HCA pins, so the HCA never refuses.
 */
class NoisyNeighbourTest {

    @Test
    void theSharedLimitKeepsAsHitsAndTheLimitWhereTheAlternativesCannot() {
        NoisyNeighbour.Setup standard = NoisyNeighbour.Setup.standard(true);
        NoisyNeighbour.Setup s = new NoisyNeighbour.Setup(standard.limitBytes(), standard.bufferBytes(),
                standard.hotBuffers(), standard.aGuarantee(), standard.scanBuffers(), 20_000);
        List<String> progress = new ArrayList<>();
        Map<NoisyNeighbour.Config, List<NoisyNeighbour.Sample>> r = NoisyNeighbour.run(s, 1, progress::add);
        assertEquals(NoisyNeighbour.Config.values().length, progress.size(), "one progress line per run");
        NoisyNeighbour.Sample alone = r.get(NoisyNeighbour.Config.ALONE).get(0);
        NoisyNeighbour.Sample shared = r.get(NoisyNeighbour.Config.SHARED_LIMIT).get(0);
        assertEquals(1 - 64.0 / 20_000, alone.aHitRatio(), 1e-9, "A alone misses its 64 buffers once each");
        assertEquals(alone.aHitRatio(), shared.aHitRatio(), 1e-9, "B's scan evicted some of A's guaranteed hot set");
        assertTrue(shared.bUses() > 0, "B never ran");
        assertEquals(0, shared.enomem() + shared.overLimit() + shared.aRefused() + shared.bRefused());
        assertTrue(shared.peakPinned() <= s.limitBytes());
        NoisyNeighbour.Goals g = NoisyNeighbour.goals(s, r, NoisyNeighbour.Config.SHARED_LIMIT);
        assertTrue(g.allMet(), g.toString());
        String table = NoisyNeighbour.table(s, r, 1);
        assertTrue(table.contains("A keeps >= 95% of its hit ratio alone: met (100.0%)"), table);
        assertTrue(table.contains("one LRU shared by both tenants (Open MPI grdma)"), table);
        Map<String, Object> json = NoisyNeighbour.json(s, r);
        assertEquals(NoisyNeighbour.Config.values().length, ((List<?>) json.get("rows")).size());
    }
}
