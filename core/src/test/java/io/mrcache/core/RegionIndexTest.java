package io.mrcache.core;

import static io.mrcache.core.Access.LOCAL_READ;
import static io.mrcache.core.Access.LOCAL_WRITE;
import static io.mrcache.core.Access.REMOTE_READ;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The persistent B+-tree against a plain sorted list: every query of the tree must answer as a linear scan of
 * the list does, through growth (splits), shrinking (emptied leaves, collapsed roots, rebuilds of a sparse
 * tree) and duplicate starts that straddle leaves; and an old index must be untouched by a newer one's
 * changes (path copying shares nodes, it never edits them).
 */
class RegionIndexTest {
    private static final long PAGE = 4096;
    private static final int[] RIGHTS = {LOCAL_READ, LOCAL_WRITE, LOCAL_READ | LOCAL_WRITE,
            LOCAL_READ | LOCAL_WRITE | REMOTE_READ};

    /** The model: regions in insertion order within equal starts, as the tree keeps them. */
    private final List<Region> model = new ArrayList<>();

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3})
    void everyQueryAgreesWithALinearScanThroughGrowthAndShrinking(long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        RegionIndex idx = RegionIndex.EMPTY;
        int maxHeight = 0;
        for (int step = 0; step < 12_000; step++) {
            // grow to a few thousand, then shrink to nearly nothing, then grow again
            boolean growing = step < 5_000 || step > 9_000;
            if (model.isEmpty() || rnd.nextInt(100) < (growing ? 75 : 20)) {
                long start = rnd.nextInt(400) * PAGE; // few distinct starts: many duplicates
                Region r = EdgesTest.region(start, (1 + rnd.nextInt(rnd.nextInt(20) == 0 ? 200 : 4)) * PAGE,
                        RIGHTS[rnd.nextInt(RIGHTS.length)]);
                idx = idx.with(r, List.of());
                int at = 0;
                while (at < model.size() && model.get(at).start <= start) {
                    at++;
                }
                model.add(at, r);
            } else {
                Region gone = model.remove(rnd.nextInt(model.size()));
                RegionIndex before = idx;
                List<Region> beforeAll = before.all();
                idx = idx.with(null, List.of(gone));
                assertEquals(beforeAll, before.all(), "the old index is unchanged by the new one");
                assertTrue(before.contains(gone) && !idx.contains(gone));
            }
            maxHeight = Math.max(maxHeight, idx.height());
            assertEquals(model.size(), idx.size());
            if (step % 7 == 0) {
                assertEquals(model, idx.all(), "in start order, equal starts in insertion order");
            }
            for (int q = 0; q < 4; q++) {
                long from = rnd.nextInt(420 * 4) * (PAGE / 4);
                long to = from + (1 + rnd.nextInt(8)) * (PAGE / 4);
                int access = RIGHTS[rnd.nextInt(RIGHTS.length)];
                boolean widen = rnd.nextBoolean();
                assertSame(modelFind(from, to, access, widen), idx.findServingUnchecked(from, to, access, widen),
                        () -> "find [" + from + ", " + to + ")");
                assertSame(modelFind(from, to, access, widen), idx.findServing(from, to, access, widen));
                assertEquals(modelOverlapping(from, to), idx.overlapping(from, to));
                assertEquals(!modelOverlapping(from, to).isEmpty(), idx.overlapsAny(from, to));
            }
        }
        assertTrue(maxHeight >= 3, "the run grew the tree past two levels: " + maxHeight);
    }

    @Test
    void heightGrowsLogarithmicallyAndASparseTreeIsRebuilt() {
        RegionIndex idx = RegionIndex.EMPTY;
        List<Region> all = new ArrayList<>();
        for (int i = 0; i < 65_536; i++) {
            Region r = EdgesTest.region(i * PAGE, PAGE, LOCAL_WRITE);
            all.add(r);
            idx = idx.with(r, List.of());
            if (i == 1023) {
                assertEquals(2, idx.height(), "ascending insertions fill their nodes: 1024 = 32 full leaves");
            }
        }
        // leaves hold at least FANOUT / 2 after a split, inner nodes too: 65,536 regions fit in 4 levels
        assertTrue(idx.height() <= 4, "height " + idx.height());
        for (int i = 0; i < all.size(); i++) {
            if (i % 64 != 0) {
                idx = idx.with(null, List.of(all.get(i)));
            }
        }
        assertEquals(1024, idx.size());
        assertTrue(idx.height() <= 3, "rebuilt when sparse: height " + idx.height());
        assertSame(all.get(64 * 100), idx.findServingUnchecked(6400 * PAGE, 6401 * PAGE, LOCAL_WRITE, false));
        assertFalse(idx.overlapsAny(6401 * PAGE, 6464 * PAGE));
    }

    @Test
    void aLoneChildReplacesTheRootAndASparseTreeIsRebuiltBelowAQuarterFull() {
        List<Region> all = ascending(64);
        RegionIndex idx = insertAll(all);
        assertEquals(2, idx.leaves());
        assertEquals(2, idx.height());
        idx = idx.with(null, all.subList(0, 32));
        assertEquals(1, idx.height(), "a root left with one child gives way to it");

        // 32 full leaves; removing 24 of each leaf's 32 leaves exactly a quarter: kept as it is
        all = ascending(1024);
        idx = insertAll(all);
        assertEquals(32, idx.leaves());
        List<Region> removed = new ArrayList<>();
        for (int i = 0; i < all.size(); i++) {
            if (i % 32 >= 8) {
                removed.add(all.get(i));
            }
        }
        idx = idx.with(null, removed);
        assertEquals(256, idx.size());
        assertEquals(32, idx.leaves(), "a quarter full is not yet sparse");
        idx = idx.with(null, List.of(all.get(0)));
        assertEquals(255, idx.size());
        assertEquals(11, idx.leaves(), "below a quarter: rebuilt, 24 to a leaf (255 = 10 x 24 + 15)");
        assertEquals(2, idx.height());
    }

    @Test
    void aRebuildPacksTwentyFourToANodeWithNoEmptyNodeAtAnExactMultiple() {
        for (int target : new int[] {240, 576}) {
            int leaves = target * 4 / 32 + 8; // enough full leaves that the target is below a quarter of them
            List<Region> all = ascending(leaves * 32);
            RegionIndex idx = insertAll(all);
            assertEquals(leaves, idx.leaves());
            List<Region> removed = new ArrayList<>();
            int keep = 0;
            for (int leaf = 0; leaf < leaves; leaf++) { // keep at least one region in every leaf
                int here = target * (leaf + 1) / leaves - keep;
                keep += here;
                removed.addAll(all.subList(leaf * 32 + here, leaf * 32 + 32));
            }
            idx = idx.with(null, removed);
            assertEquals(target, idx.size());
            assertEquals(target / 24, idx.leaves(), target + " regions rebuilt: full leaves of 24, no empty one");
            assertEquals(target <= 24 * 24 ? 2 : 3, idx.height(), "24 leaves fit under one inner node");
        }
    }

    private static List<Region> ascending(int n) {
        List<Region> all = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            all.add(EdgesTest.region(i * PAGE, PAGE, LOCAL_WRITE));
        }
        return all;
    }

    private static RegionIndex insertAll(List<Region> regions) {
        RegionIndex idx = RegionIndex.EMPTY;
        for (Region r : regions) {
            idx = idx.with(r, List.of());
        }
        return idx;
    }

    @Test
    void aLongRegionInAnEarlierLeafIsFoundFromALaterOne() {
        Region longOne = EdgesTest.region(0, 10_000 * PAGE, LOCAL_WRITE);
        RegionIndex idx = RegionIndex.EMPTY.with(longOne, List.of());
        for (int i = 1; i < 2_000; i++) {
            idx = idx.with(EdgesTest.region(i * 4 * PAGE, PAGE, LOCAL_READ), List.of());
        }
        assertTrue(idx.height() >= 2);
        assertSame(longOne, idx.findServingUnchecked(7_000 * PAGE, 7_001 * PAGE, LOCAL_WRITE, false));
        assertSame(longOne, idx.findServing(7_000 * PAGE + 1, 7_003 * PAGE, LOCAL_WRITE, false));
        assertEquals(List.of(longOne), idx.overlapping(8_001 * PAGE, 8_002 * PAGE));

        longOne.retire(); // found the same way: through the search of the earlier subtree
        assertSame(longOne, idx.findServingUnchecked(7_000 * PAGE, 7_001 * PAGE, LOCAL_WRITE, false),
                "the hit path's lookup leaves liveness to the lease attempt");
        assertSame(null, idx.findServing(7_000 * PAGE + 1, 7_003 * PAGE, LOCAL_WRITE, false), "no longer live");
    }

    /**
     * A leaf of disjoint regions keeps its ends as their running maximum (one array for both); a region that
     * breaks the rise, inserted in the middle or removed from it, must give the leaf a running maximum of its
     * own, or a lookup that starts from a later entry stops before the region that serves it.
     */
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aRegionThatBreaksTheRisingEndsOfALeafIsStillFoundFromALaterEntry(boolean reachesPastTheNext) {
        RegionIndex idx = RegionIndex.EMPTY;
        for (int i = 0; i < 8; i++) {
            idx = idx.with(EdgesTest.region(i * 10 * PAGE, 4 * PAGE, LOCAL_READ), List.of());
        }
        // past the next: [32, 70) pages, which the short regions at 40, 50 and 60 do not reach;
        // inside the one before: [3, 3.5) pages after [0, 4), whose end is the later one
        Region breaking = reachesPastTheNext ? EdgesTest.region(32 * PAGE, 38 * PAGE, LOCAL_READ | LOCAL_WRITE)
                : EdgesTest.region(3 * PAGE, PAGE / 2, LOCAL_READ | LOCAL_WRITE);
        Region covering = reachesPastTheNext ? breaking : idx.all().getFirst();
        long from = reachesPastTheNext ? 65 * PAGE : 3 * PAGE + PAGE / 2 + 8;
        idx = idx.with(breaking, List.of());
        assertSame(covering, idx.findServingUnchecked(from, from + 16, LOCAL_READ, false));
        assertEquals(List.of(covering), idx.overlapping(from, from + 16));
        // removing a short region keeps the breaking one findable; removing the breaking one restores the rise
        idx = idx.with(null, List.of(idx.all().getLast()));
        assertSame(covering, idx.findServingUnchecked(from, from + 16, LOCAL_READ, false));
        idx = idx.with(null, List.of(breaking));
        assertSame(reachesPastTheNext ? null : covering, idx.findServingUnchecked(from, from + 16, LOCAL_READ, false));
    }

    @Test
    void anIndexOfOneRegionHoldsItWithoutANodeAndAnswersEveryQuery() {
        Region a = EdgesTest.region(10 * PAGE, 2 * PAGE, LOCAL_WRITE);
        RegionIndex one = RegionIndex.EMPTY.with(a, List.of());
        assertEquals(List.of(), one.leafNodesForTest(), "no node for one region");
        assertEquals(List.of(a), one.all());
        assertEquals(1, one.size());
        assertEquals(1, one.height());
        assertEquals(1, one.leaves());
        assertTrue(one.contains(a));
        assertSame(a, one.findServingUnchecked(10 * PAGE, 12 * PAGE, LOCAL_WRITE, false));
        assertSame(a, one.findServing(11 * PAGE, 11 * PAGE + 1, LOCAL_WRITE, false));
        assertSame(null, one.findServingUnchecked(10 * PAGE - 1, 11 * PAGE, LOCAL_WRITE, false), "starts earlier");
        assertSame(null, one.findServingUnchecked(10 * PAGE, 12 * PAGE + 1, LOCAL_WRITE, false), "ends later");
        assertSame(null, one.findServingUnchecked(10 * PAGE, 11 * PAGE, REMOTE_READ, false), "rights it lacks");
        assertTrue(one.overlapsAny(12 * PAGE - 1, 12 * PAGE) && one.overlapsAny(9 * PAGE, 10 * PAGE + 1));
        assertFalse(one.overlapsAny(12 * PAGE, 13 * PAGE) || one.overlapsAny(9 * PAGE, 10 * PAGE),
                "a range that only touches it does not overlap");
        assertEquals(List.of(a), one.overlapping(11 * PAGE, 20 * PAGE));
        assertEquals(List.of(), one.overlapping(12 * PAGE, 20 * PAGE));

        assertSame(one, one.with(null, List.of(EdgesTest.region(10 * PAGE, 2 * PAGE, LOCAL_WRITE))),
                "removing a region it does not hold changes nothing");
        assertSame(RegionIndex.EMPTY, one.with(null, List.of(a)));
        Region b = EdgesTest.region(20 * PAGE, PAGE, LOCAL_READ);
        assertSame(b, one.with(b, List.of(a)).all().getFirst(), "one region replaced by another");
        assertEquals(List.of(), one.with(b, List.of(a)).leafNodesForTest());

        Region earlier = EdgesTest.region(5 * PAGE, PAGE, LOCAL_READ);
        Region sameStart = EdgesTest.region(10 * PAGE, PAGE, LOCAL_READ);
        assertEquals(List.of(earlier, a), one.with(earlier, List.of()).all(), "in start order");
        assertEquals(List.of(a, sameStart), one.with(sameStart, List.of()).all(), "equal starts: after it");
        RegionIndex two = one.with(b, List.of());
        assertEquals(List.of(), two.leafNodesForTest(), "two young regions: still no tree node");
        assertEquals(1, two.settledForTest().leafNodesForTest().size(), "settled: one leaf of the tree");
        assertEquals(List.of(b), two.with(null, List.of(a)).all());
        assertEquals(List.of(b), two.settledForTest().with(null, List.of(a)).all());

        a.retire();
        assertSame(null, one.findServing(10 * PAGE, 11 * PAGE, LOCAL_WRITE, false), "a retired region is not live");
        assertSame(a, one.findServingUnchecked(10 * PAGE, 11 * PAGE, LOCAL_WRITE, false),
                "the hit path's lookup leaves liveness to the lease attempt");
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aRegionPastEitherEndOfAFullTreeSharesEveryOldLeafAndLeavesNothingBehind(boolean ascending) {
        int n = RegionIndex.FANOUT * RegionIndex.FANOUT; // every leaf and the root full
        RegionIndex full = RegionIndex.EMPTY;
        for (int i = 0; i < n; i++) {
            Region r = EdgesTest.region((ascending ? 1 + i : n - i) * PAGE, PAGE, LOCAL_WRITE);
            full = full.with(r, List.of());
            model.add(ascending ? model.size() : 0, r);
        }
        full = full.settledForTest(); // the tree's own insertions are what this test is about
        List<Object> leaves = full.leafNodesForTest();
        assertEquals(RegionIndex.FANOUT, leaves.size(), "an ordered fill packs every leaf");
        assertEquals(2, full.height());

        Region past = EdgesTest.region(ascending ? (n + 1) * PAGE : 0, PAGE, LOCAL_WRITE);
        RegionIndex grown = full.with(past, List.of()).settledForTest();
        List<Object> grownLeaves = grown.leafNodesForTest();
        assertEquals(RegionIndex.FANOUT + 1, grownLeaves.size());
        List<Object> kept = ascending ? grownLeaves.subList(0, RegionIndex.FANOUT)
                : grownLeaves.subList(1, RegionIndex.FANOUT + 1);
        for (int i = 0; i < RegionIndex.FANOUT; i++) {
            assertSame(leaves.get(i), kept.get(i), "leaf " + i + " is shared, not copied");
        }
        assertEquals(3, grown.height());
        model.add(ascending ? model.size() : 0, past);
        assertEquals(model, grown.all());
        assertSame(past, grown.findServingUnchecked(past.start, past.end, LOCAL_WRITE, false));

        RegionIndex shrunk = grown.with(null, List.of(past));
        assertEquals(2, shrunk.height(), "the root the insertion added goes again");
        assertNotNull(full.rootNodeForTest());
        assertSame(full.rootNodeForTest(), shrunk.rootNodeForTest(), "and the full root is the root again, uncopied");
        List<Object> shrunkLeaves = shrunk.leafNodesForTest();
        for (int i = 0; i < RegionIndex.FANOUT; i++) {
            assertSame(leaves.get(i), shrunkLeaves.get(i));
        }
        model.remove(past);
        assertEquals(model, shrunk.all());
        assertFalse(shrunk.overlapsAny(past.start, past.end));
    }

    /** The pattern that misses most: a buffer registered and freed soon after, beside many others cached. */
    @Test
    void aRegionAddedAndRemovedSoonCopiesNoNodeOfTheTree() {
        RegionIndex full = insertAll(ascending(RegionIndex.FANOUT * RegionIndex.FANOUT)).settledForTest();
        Object root = full.rootNodeForTest();
        assertNotNull(root);
        List<Object> leaves = full.leafNodesForTest();
        Region buffer = EdgesTest.region(10_000 * PAGE, PAGE, LOCAL_WRITE);

        RegionIndex grown = full.with(buffer, List.of());
        assertSame(root, grown.rootNodeForTest(), "the insertion went to the young regions, not the tree");
        assertEquals(1, grown.youngForTest());
        assertEquals(full.size() + 1, grown.size());
        assertSame(buffer, grown.findServing(buffer.start, buffer.end, LOCAL_WRITE, false));
        assertSame(buffer, grown.findServingUnchecked(buffer.start, buffer.end, LOCAL_WRITE, false));
        assertTrue(grown.contains(buffer) && grown.overlapsAny(buffer.start, buffer.start + 1));
        assertEquals(List.of(buffer), grown.overlapping(buffer.start - PAGE, buffer.end));

        RegionIndex freed = grown.with(null, List.of(buffer));
        assertSame(root, freed.rootNodeForTest(), "and so did the removal");
        assertEquals(leaves, freed.leafNodesForTest());
        assertEquals(0, freed.youngForTest());
        assertFalse(freed.contains(buffer) || freed.overlapsAny(buffer.start, buffer.end));
        assertEquals(full.all(), freed.all());
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void theYoungRegionsMoveIntoTheTreeTogetherWhenOneMoreArrives(boolean treeEmptyBefore) {
        RegionIndex idx = treeEmptyBefore ? RegionIndex.EMPTY : insertAll(ascending(100)).settledForTest();
        @Nullable Object root = idx.rootNodeForTest();
        List<Region> young = new ArrayList<>();
        for (int i = 0; i < RegionIndex.YOUNG; i++) { // descending: each one lands first among the young
            Region r = EdgesTest.region((1_000 - i) * PAGE, PAGE, LOCAL_READ);
            young.addFirst(r);
            idx = idx.with(r, List.of());
        }
        assertEquals(RegionIndex.YOUNG, idx.youngForTest());
        assertSame(root, idx.rootNodeForTest(), "up to " + RegionIndex.YOUNG + " young regions stay out of the tree");
        assertEquals(young, idx.all().subList(idx.size() - RegionIndex.YOUNG, idx.size()), "in start order");

        Region next = EdgesTest.region(2_000 * PAGE, PAGE, LOCAL_READ);
        RegionIndex moved = idx.with(next, List.of());
        assertEquals(1, moved.youngForTest(), "the young regions moved into the tree; the new one is young");
        assertEquals(idx.size() + 1, moved.size());
        assertEquals(treeEmptyBefore ? 1 : 4, moved.leaves(), "a leaf of eight, or the last of four grown by them");
        RegionIndex withoutNew = moved.with(null, List.of(next));
        for (Region r : young) {
            assertSame(r, withoutNew.findServing(r.start, r.end, LOCAL_READ, false), "found in the tree");
            assertTrue(withoutNew.contains(r));
        }
        assertEquals(idx.all(), withoutNew.all());
        assertEquals(0, withoutNew.youngForTest());
    }

    /**
     * The young regions enter the tree in one pass: eight that land inside one full leaf (the first, one in the
     * middle, the last) split it once, evenly, and the full root splits once too; every other leaf is shared.
     */
    @ParameterizedTest
    @ValueSource(ints = {0, 5, 31})
    void youngRegionsLandingInOneFullLeafSplitItOnceAndShareEveryOtherLeaf(int target) {
        int n = RegionIndex.FANOUT * RegionIndex.FANOUT; // every leaf and the root full
        List<Region> tree = ascending(n);
        RegionIndex full = insertAll(tree).settledForTest();
        List<Object> leaves = full.leafNodesForTest();
        assertEquals(RegionIndex.FANOUT, leaves.size());
        model.addAll(tree);
        int after = target * 32 + 10; // the young ones start between this region and the next, in the target leaf
        RegionIndex idx = full;
        for (int k = RegionIndex.YOUNG; k >= 1; k--) { // descending: the young array sorts them
            Region r = EdgesTest.region(after * PAGE + k * (PAGE / 16), PAGE / 32, LOCAL_READ);
            idx = idx.with(r, List.of());
            model.add(after + 1, r);
        }
        RegionIndex settled = idx.settledForTest();
        assertEquals(model, settled.all(), "in start order");
        List<Object> leavesAfter = settled.leafNodesForTest();
        assertEquals(RegionIndex.FANOUT + 1, leavesAfter.size(), "one leaf split in two");
        for (int i = 0; i < RegionIndex.FANOUT; i++) {
            if (i != target) {
                assertSame(leaves.get(i), leavesAfter.get(i < target ? i : i + 1), "leaf " + i + " is shared");
            }
        }
        assertEquals(3, settled.height(), "the full root split in two under a new one");
        assertEquals(n + RegionIndex.YOUNG, settled.size());
        for (Region r : model) {
            assertSame(r, settled.findServing(r.start, r.end, r.access, false));
        }
        // the split leaf's halves hold twenty each: removing the first twenty of them empties exactly one
        List<Region> firstHalf = model.subList(target * 32, target * 32 + 20);
        RegionIndex emptied = settled.with(null, List.copyOf(firstHalf));
        assertEquals(RegionIndex.FANOUT, emptied.leaves(), "the first half was a leaf of its own");
    }

    /**
     * Two children of a full root change in one pass: the first grows a new first leaf (a region before every
     * other) and a later one, with room, takes a region without splitting. Neither keeps the root whole.
     */
    @Test
    void aRootWhoseFirstLeafGrowsAndAnotherChangesKeepsBothChanges() {
        List<Region> tree = new ArrayList<>();
        for (int i = 0; i < RegionIndex.FANOUT * RegionIndex.FANOUT; i++) {
            tree.add(EdgesTest.region((1 + i) * PAGE, PAGE, LOCAL_WRITE));
        }
        RegionIndex idx = insertAll(tree).settledForTest();
        Region gap = tree.get(5 * 32 + 3); // leaf 5 gets room for one
        idx = idx.with(null, List.of(gap)).settledForTest();
        model.addAll(tree);
        model.remove(gap);
        Region first = EdgesTest.region(0, PAGE, LOCAL_READ);
        Region refill = EdgesTest.region(gap.start, PAGE, LOCAL_READ);
        idx = idx.with(first, List.of()).with(refill, List.of());
        model.addFirst(first);
        model.add(5 * 32 + 4, refill);
        RegionIndex settled = idx.settledForTest();
        assertEquals(model, settled.all());
        assertSame(first, settled.findServing(0, PAGE, LOCAL_READ, false));
        assertSame(refill, settled.findServing(gap.start, gap.end, LOCAL_READ, false));
        assertEquals(RegionIndex.FANOUT + 1, settled.leaves());
    }

    /** Young regions starting where a full last leaf's last region starts come after it, in a leaf of their own. */
    @Test
    void youngRegionsStartingWithAFullLeafsLastRegionFollowItInANewLeaf() {
        List<Region> tree = ascending(RegionIndex.FANOUT * 2);
        RegionIndex full = insertAll(tree).settledForTest();
        List<Object> leaves = full.leafNodesForTest();
        assertEquals(2, leaves.size(), "two full leaves");
        model.addAll(tree);
        long lastStart = tree.getLast().start;
        RegionIndex idx = full;
        for (int k = 0; k < RegionIndex.YOUNG; k++) {
            Region r = EdgesTest.region(lastStart, (k + 2) * PAGE, LOCAL_READ);
            idx = idx.with(r, List.of());
            model.add(r);
        }
        RegionIndex settled = idx.settledForTest();
        assertEquals(model, settled.all(), "equal starts in insertion order: the tree's region first");
        List<Object> after = settled.leafNodesForTest();
        assertEquals(3, after.size());
        assertSame(leaves.get(0), after.get(0));
        assertSame(leaves.get(1), after.get(1), "the full leaf is kept, not copied and split");
        assertSame(model.getLast(), settled.findServing(lastStart, lastStart + PAGE, LOCAL_READ, false),
                "the latest of equal starts answers");
    }

    /** A tree region and a young one: the later start answers, and on equal starts the young one (the newer). */
    @Test
    void aYoungRegionAnswersBeforeATreeRegionOnlyWhenItStartsAtOrAfterIt() {
        Region old = EdgesTest.region(10 * PAGE, 4 * PAGE, LOCAL_WRITE);
        Region oldLater = EdgesTest.region(30 * PAGE, 4 * PAGE, LOCAL_WRITE);
        RegionIndex tree = RegionIndex.EMPTY.withAll(List.of(old, oldLater)).settledForTest();
        Region sameStart = EdgesTest.region(10 * PAGE, 2 * PAGE, LOCAL_WRITE);
        Region earlier = EdgesTest.region(25 * PAGE, 10 * PAGE, LOCAL_WRITE); // starts before oldLater, covers it
        RegionIndex idx = tree.with(sameStart, List.of()).with(earlier, List.of());
        assertEquals(2, idx.youngForTest());

        assertSame(sameStart, idx.findServing(10 * PAGE, 11 * PAGE, LOCAL_WRITE, false), "equal starts: the young");
        assertSame(sameStart, idx.findServingUnchecked(10 * PAGE, 11 * PAGE, LOCAL_WRITE, false));
        assertSame(old, idx.findServing(10 * PAGE, 13 * PAGE, LOCAL_WRITE, false), "only the old one reaches");
        assertSame(oldLater, idx.findServing(31 * PAGE, 32 * PAGE, LOCAL_WRITE, false), "the tree's starts later");
        assertSame(oldLater, idx.findServingUnchecked(31 * PAGE, 32 * PAGE, LOCAL_WRITE, false));
        assertSame(earlier, idx.findServingUnchecked(26 * PAGE, 27 * PAGE, LOCAL_WRITE, false), "only it serves");
        assertEquals(List.of(sameStart, old), idx.overlapping(10 * PAGE, 11 * PAGE), "latest first, young first");
        assertEquals(List.of(oldLater, earlier), idx.overlapping(30 * PAGE, 31 * PAGE));
        assertEquals(List.of(old, sameStart, earlier, oldLater), idx.all(), "equal starts: the tree's first");

        sameStart.retire();
        assertSame(old, idx.findServing(10 * PAGE, 11 * PAGE, LOCAL_WRITE, false), "a retired young one is passed");
        assertSame(sameStart, idx.findServingUnchecked(10 * PAGE, 11 * PAGE, LOCAL_WRITE, false),
                "the hit path's lookup leaves liveness to the lease attempt");
    }

    /** The young regions' span: its first start and its greatest end, which need not be the last one's. */
    @Test
    void aRangeInsideTheYoungRegionsSpanIsScannedAndOneOutsideItOverlapsNothing() {
        Region wide = EdgesTest.region(10 * PAGE, 30 * PAGE, LOCAL_WRITE); // [10, 40) pages
        Region narrow = EdgesTest.region(20 * PAGE, PAGE, LOCAL_WRITE); // [20, 21): ends before wide does
        Region apart = EdgesTest.region(60 * PAGE, PAGE, LOCAL_WRITE); // [60, 61)
        RegionIndex idx = RegionIndex.EMPTY.withAll(List.of(wide, narrow, apart));
        assertEquals(3, idx.youngForTest());
        assertTrue(idx.overlapsAny(39 * PAGE, 45 * PAGE), "past the last start, before the greatest end");
        assertSame(wide, idx.findServing(30 * PAGE, 40 * PAGE, LOCAL_WRITE, false));
        assertSame(wide, idx.findServingUnchecked(30 * PAGE, 40 * PAGE, LOCAL_WRITE, false));
        assertEquals(List.of(wide), idx.overlapping(38 * PAGE, 45 * PAGE));
        assertFalse(idx.overlapsAny(45 * PAGE, 60 * PAGE), "inside the span, between regions");
        assertEquals(List.of(), idx.overlapping(45 * PAGE, 60 * PAGE));
        assertFalse(idx.overlapsAny(61 * PAGE, 70 * PAGE) || idx.overlapsAny(0, 10 * PAGE),
                "ranges that touch the span's ends");
        assertTrue(idx.overlapsAny(61 * PAGE - 1, 70 * PAGE) && idx.overlapsAny(0, 10 * PAGE + 1));
        assertSame(null, idx.findServing(9 * PAGE, 11 * PAGE, LOCAL_WRITE, false), "starts before the span");
        assertSame(null, idx.findServingUnchecked(60 * PAGE, 62 * PAGE, LOCAL_WRITE, false), "ends past it");
        assertSame(apart, idx.findServingUnchecked(60 * PAGE, 61 * PAGE, LOCAL_WRITE, false), "its very ends");
        assertEquals(List.of(apart, narrow, wide), idx.overlapping(0, 100 * PAGE), "latest start first");
    }

    @Test
    void aRemovalLeavesAnInnerBoundHighAndEveryQueryStillAgrees() {
        // regions in order, then one reaching far to the right in the first leaf, then that one removed: the
        // inner nodes keep its end as their bound; lookups to the right must still answer as the list does
        RegionIndex idx = RegionIndex.EMPTY;
        for (int i = 0; i < 3 * RegionIndex.FANOUT; i++) {
            Region r = EdgesTest.region(i * 4 * PAGE, PAGE, LOCAL_READ);
            idx = idx.with(r, List.of());
            model.add(r);
        }
        Region far = EdgesTest.region(PAGE, 1_000 * PAGE, LOCAL_WRITE);
        idx = idx.with(far, List.of()).with(null, List.of(far));
        for (long from = 0; from < 400 * PAGE; from += PAGE / 2) {
            long f = from;
            assertSame(modelFind(from, from + PAGE, LOCAL_WRITE, false),
                    idx.findServingUnchecked(from, from + PAGE, LOCAL_WRITE, false));
            assertSame(modelFind(from, from + 1, LOCAL_READ, false), idx.findServing(from, from + 1, LOCAL_READ, false),
                    () -> "find at " + f);
            assertEquals(!modelOverlapping(from, from + PAGE / 4).isEmpty(), idx.overlapsAny(from, from + PAGE / 4));
            assertEquals(modelOverlapping(from, from + 3 * PAGE), idx.overlapping(from, from + 3 * PAGE));
        }
    }

    @Test
    void aLeafEmptiedByARemovalLeavesItsParentCountingTheRestAndATouchingRangeOverlapsNothing() {
        // two full leaves (an ordered fill packs them), then a region past the last: a third leaf of one entry
        // under the same root; removing it empties that leaf, and the root that stays must count what is left
        RegionIndex idx = RegionIndex.EMPTY;
        for (int i = 0; i < 2 * RegionIndex.FANOUT; i++) {
            Region r = EdgesTest.region((1 + 2 * i) * PAGE, PAGE, LOCAL_WRITE); // a page's gap after each
            idx = idx.with(r, List.of());
            model.add(r);
        }
        Region past = EdgesTest.region(1_000 * PAGE, PAGE, LOCAL_WRITE);
        RegionIndex grown = idx.settledForTest().with(past, List.of()).settledForTest(); // all in the tree
        assertEquals(3, grown.leaves());
        assertEquals(2, grown.height());
        RegionIndex shrunk = grown.with(null, List.of(past));
        assertEquals(2, shrunk.leaves(), "the emptied leaf is gone");
        assertEquals(2 * RegionIndex.FANOUT, shrunk.size(), "and the root counts the two leaves left");
        assertEquals(model, shrunk.all());
        for (Region r : model) { // each region's own end and start, seen from the gap beside it
            assertFalse(shrunk.overlapsAny(r.end, r.end + PAGE), "a range starting at a region's end");
            assertFalse(shrunk.overlapsAny(r.start - PAGE, r.start), "a range ending at a region's start");
            assertTrue(shrunk.overlapsAny(r.end - 1, r.end + PAGE));
        }
    }

    private @Nullable Region modelFind(long from, long to, int access, boolean widen) {
        for (int i = model.size() - 1; i >= 0; i--) {
            Region r = model.get(i);
            if (r.start <= from && r.end >= to && Region.grants(r.access, access, widen)) {
                return r;
            }
        }
        return null;
    }

    private List<Region> modelOverlapping(long from, long to) {
        List<Region> out = new ArrayList<>();
        for (int i = model.size() - 1; i >= 0; i--) {
            Region r = model.get(i);
            if (r.start < to && r.end > from) {
                out.add(r);
            }
        }
        return out;
    }
}
