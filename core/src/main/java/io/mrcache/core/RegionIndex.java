package io.mrcache.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * An immutable interval index: a persistent B+-tree of regions ordered by start address (overlaps allowed;
 * remote regions are exact and never merged), each node keeping the running maximum of the ends below it so
 * that a lookup stops going left as soon as nothing earlier can reach far enough; and beside it a short array
 * of the regions added since the tree last took any (at most {@value #YOUNG}: the young regions).
 *
 * <p>Readers use a published instance without locks and without allocating. Writers build a new one under the cache's
 * index lock by path copying: a removal copies the nodes from the root to one leaf (at most {@value #FANOUT} entries
 * each), O(log n), the young regions' move into the tree copies each node they reach once, and every other node is
 * shared with the old index. A tree left sparse by removals (on average under a quarter full) is rebuilt, which costs
 * O(n) once per Omega(n) removals.
 *
 * <p>Why young regions: a buffer registered, used and freed soon after (the pattern that misses most) would otherwise
 * cost two path copies, in and out of a tree whose height grows with everything else cached (at a million regions a
 * miss and its free copied about 1,600 bytes of nodes). An insertion copies the young array instead, and a removal of a
 * young region copies it again; only when it is full do its regions move into the tree, all at once, in one pass that
 * copies each node they reach once (eight regions bound for one leaf cost about one path copy, not eight). A lookup
 * reads the tree and the young regions and, where both serve, takes the later start; on equal starts the young region,
 * which is the newer (every region in the tree was added before every young one): the same answer as one tree holding
 * them all, in which equal starts keep their insertion order.
 */
final class RegionIndex {
    static final RegionIndex EMPTY = new RegionIndex(null, null);
    /** Most entries of a leaf and children of an inner node. */
    static final int FANOUT = 32;
    /** Most young regions: few enough that scanning them all costs less than the path copy they save. */
    static final int YOUNG = 8;
    /** How full a rebuild packs its nodes: room for insertions before the next split. */
    private static final int PACKED = FANOUT * 3 / 4;

    private final @Nullable Node root;
    /**
     * The regions added since the tree last took any, in start order (equal starts in insertion order), null when
     * none: a plain array, scanned whole (no node: one region on an otherwise empty cache costs one short array).
     */
    private final Region @Nullable [] young;
    /**
     * The young regions' first start and greatest end (or an empty span): a range outside it is answered
     * without reading a young region, as the free hooks' fast path mostly is.
     */
    private final long youngLow;
    private final long youngHigh;

    private RegionIndex(@Nullable Node root, Region @Nullable [] young) {
        this.root = root;
        this.young = young;
        long high = Long.MIN_VALUE;
        if (young != null) {
            for (Region r : young) {
                high = Math.max(high, r.end);
            }
        }
        this.youngLow = young != null ? young[0].start : Long.MAX_VALUE;
        this.youngHigh = high;
    }

    private static RegionIndex of(@Nullable Node root, Region @Nullable [] young) {
        if (root != null) {
            while (!root.isLeaf && root.children.length == 1) {
                root = root.children[0]; // a removal left a root with one child
            }
            if (!root.isLeaf && root.size * 4 < root.leaves * FANOUT) { // (a lone leaf is as packed as it gets)
                root = build(root.all());
            }
        }
        return root == null && young == null ? EMPTY : new RegionIndex(root, young);
    }

    int size() {
        return (root != null ? root.size : 0) + (young != null ? young.length : 0);
    }

    /** Height of the tree (0 when empty; 1 for a lone leaf, or only young regions): for tests of its shape. */
    int height() {
        int h = root == null && young != null ? 1 : 0;
        for (Node n = root; n != null; n = n.isLeaf ? null : n.children[0]) {
            h++;
        }
        return h;
    }

    /** Leaves of the tree (only young regions count as one): for tests of how full its nodes are kept. */
    int leaves() {
        return root != null ? root.leaves : young != null ? 1 : 0;
    }

    /** The tree's leaf nodes in order, as opaque objects (no young region): which nodes an update shares. */
    List<Object> leafNodesForTest() {
        List<Object> out = new ArrayList<>();
        if (root != null) {
            root.addLeaves(out);
        }
        return out;
    }

    /** The tree's root node as an opaque object (null for none): whether an update kept it. */
    @Nullable Object rootNodeForTest() {
        return root;
    }

    /** This index with its young regions moved into the tree now: for tests of the tree's own shape. */
    RegionIndex settledForTest() {
        Region[] y = young;
        return y == null ? this : of(withYoung(root, y), null);
    }

    /** How many young regions there are: for tests of when they move into the tree. */
    int youngForTest() {
        return young != null ? young.length : 0;
    }

    /** A live region serving the request, or null. Allocation-free. */
    @Nullable Region findServing(long from, long to, int access, boolean widenRemote) {
        return findServing(from, to, access, widenRemote, null);
    }

    /** A live region serving the request of {@code owner} (null: address-keyed), or null. Allocation-free. */
    @Nullable Region findServing(long from, long to, int access, boolean widenRemote, @Nullable Object owner) {
        Region old = root != null ? root.find(from, to, access, widenRemote, true, owner) : null;
        Region recent = young != null && youngSpans(from, to)
                ? youngServing(young, from, to, access, widenRemote, true, owner) : null;
        return later(old, recent);
    }

    /** Of a region from the tree and a young one, the later start; the young one on equal starts. */
    private static @Nullable Region later(@Nullable Region old, @Nullable Region recent) {
        return recent != null && (old == null || recent.start >= old.start) ? recent : old;
    }

    /**
     * The hit path's lookup: like {@link #findServing} but reads only the tree's arrays (and the young regions'
     * ranges where the request lies in their span), leaving the region's lease word (the one cache line threads
     * write) to the compare-and-set that follows, which fails on a retired region anyway.
     */
    @Nullable Region findServingUnchecked(long from, long to, int access, boolean widenRemote) {
        return findServingUnchecked(from, to, access, widenRemote, null);
    }

    /** {@link #findServingUnchecked(long, long, int, boolean)} for a request of {@code owner} (null: address-keyed). */
    @Nullable Region findServingUnchecked(long from, long to, int access, boolean widenRemote,
            @Nullable Object owner) {
        Region recent = young != null && youngSpans(from, to)
                ? youngServing(young, from, to, access, widenRemote, false, owner) : null;
        Node top = root;
        return top == null ? recent
                : later(treeServingUnchecked(top, from, to, access, widenRemote, owner), recent);
    }

    /**
     * Walks straight down to the leaf holding the last start at or before {@code from} and scans it; only when
     * that fails and an earlier subtree can still reach {@code to} does it search the tree.
     */
    private static @Nullable Region treeServingUnchecked(Node top, long from, long to, int access,
            boolean widenRemote, @Nullable Object owner) {
        Node n = top;
        boolean earlierMayServe = false;
        while (!n.isLeaf) {
            int i = lastAtOrBefore(n.starts, from);
            if (i < 0) {
                return null;
            }
            earlierMayServe |= i > 0 && n.maxEnds[i - 1] >= to;
            n = n.children[i];
        }
        for (int i = lastAtOrBefore(n.starts, from); i >= 0 && n.maxEnds[i] >= to; i--) {
            Region r = n.regions[i];
            if (n.ends[i] >= to && Region.grants(r.access, access, widenRemote) // the lease reads r next anyway
                    && r.ownedBy(owner)) {
                return r;
            }
        }
        return earlierMayServe ? top.find(from, to, access, widenRemote, false, owner) : null;
    }

    /** Whether any region overlaps {@code [from, to)}. Allocation-free: the free hooks' fast path. */
    boolean overlapsAny(long from, long to) {
        return (young != null && youngSpanOverlaps(from, to) && youngOverlaps(young, from, to))
                || (root != null && root.overlapsAny(from, to));
    }

    /** Every region overlapping {@code [from, to)} (start < to and end > from), latest start first. */
    List<Region> overlapping(long from, long to) {
        List<Region> recent = young != null && youngSpanOverlaps(from, to) ? youngOverlapping(young, from, to)
                : List.of();
        if (root == null) {
            return recent;
        }
        List<Region> out = new ArrayList<>(2);
        out.addAll(recent);
        root.collectOverlapping(from, to, out);
        if (!recent.isEmpty() && out.size() > recent.size()) {
            out.sort(LATEST_START_FIRST); // stable: on equal starts the young regions (the newer) stay first
        }
        return out;
    }

    private static final Comparator<Region> LATEST_START_FIRST = (a, b) -> Long.compare(b.start, a.start);

    boolean contains(Region region) {
        return (young != null && indexOf(young, region) >= 0) || (root != null && root.contains(region));
    }

    /**
     * A new index with {@code added} (may be null) and without {@code removed}. O(log n) per region removed
     * from the tree; a young region's removal, and an insertion, copy the young array (and, when it is full,
     * move its regions into the tree first).
     */
    RegionIndex with(@Nullable Region added, List<Region> removed) {
        Node r = root;
        Region[] y = young;
        for (int i = 0; i < removed.size(); i++) { // no iterator: a miss and a free each come here
            Region gone = removed.get(i);
            int at = y != null ? indexOf(y, gone) : -1;
            if (y != null && at >= 0) {
                y = y.length == 1 ? null : Node.removeAt(y, at);
            } else if (r != null) {
                r = r.remove(gone);
            }
        }
        if (added != null) {
            if (y != null && y.length >= YOUNG) {
                r = withYoung(r, y);
                y = null;
            }
            y = y == null ? new Region[] {added} : withYoungRegion(y, added);
        }
        return r == root && y == young ? this : of(r, y);
    }

    /** A new index that also holds {@code added}. */
    RegionIndex withAll(List<Region> added) {
        RegionIndex r = this;
        for (int i = 0; i < added.size(); i++) {
            r = r.with(added.get(i), List.of());
        }
        return r;
    }

    /** Every region, in start order (equal starts in insertion order). */
    List<Region> all() {
        List<Region> old = root != null ? root.all() : List.of();
        if (young == null) {
            return Collections.unmodifiableList(old);
        }
        List<Region> out = new ArrayList<>(old.size() + young.length);
        int i = 0;
        for (Region y : young) {
            while (i < old.size() && old.get(i).start <= y.start) { // the tree's first on equal starts
                out.add(old.get(i++));
            }
            out.add(y);
        }
        out.addAll(old.subList(i, old.size()));
        return Collections.unmodifiableList(out);
    }

    // ------------------------------------------------------------------ the young regions: scanned whole

    /** Whether the young regions' span holds {@code [from, to)} (where one of them may serve it). */
    private boolean youngSpans(long from, long to) {
        return youngLow <= from && youngHigh >= to;
    }

    /** Whether the young regions' span overlaps {@code [from, to)} (where one of them may overlap it). */
    private boolean youngSpanOverlaps(long from, long to) {
        return youngLow < to && youngHigh > from;
    }

    /** The young region with the latest start serving the request (live only when {@code checkLive}). */
    private static @Nullable Region youngServing(Region[] young, long from, long to, int access,
            boolean widenRemote, boolean checkLive, @Nullable Object owner) {
        for (int i = young.length - 1; i >= 0; i--) { // latest start first, the newer of equal starts first
            Region r = young[i];
            if (r.serves(from, to, access, widenRemote) && r.ownedBy(owner) && (!checkLive || r.isLive())) {
                return r;
            }
        }
        return null;
    }

    private static boolean youngOverlaps(Region[] young, long from, long to) {
        for (Region r : young) {
            if (overlaps(r, from, to)) {
                return true;
            }
        }
        return false;
    }

    /** Whether {@code r} overlaps {@code [from, to)}: a range that only touches it does not. */
    private static boolean overlaps(Region r, long from, long to) {
        return r.start < to && r.end > from;
    }

    /** The young regions overlapping {@code [from, to)}, latest start first; no list made for none or one. */
    private static List<Region> youngOverlapping(Region[] young, long from, long to) {
        Region first = null;
        List<Region> more = null;
        for (int i = young.length - 1; i >= 0; i--) {
            Region r = young[i];
            if (!overlaps(r, from, to)) {
                continue;
            }
            if (first == null) {
                first = r;
            } else {
                if (more == null) {
                    more = new ArrayList<>(4);
                    more.add(first);
                }
                more.add(r);
            }
        }
        return more != null ? more : first != null ? List.of(first) : List.of();
    }

    private static int indexOf(Region[] young, Region region) {
        for (int i = 0; i < young.length; i++) {
            if (young[i] == region) {
                return i;
            }
        }
        return -1;
    }

    /** {@code young} with {@code added} after every region starting at or before it. */
    private static Region[] withYoungRegion(Region[] young, Region added) {
        int at = young.length;
        while (at > 0 && young[at - 1].start > added.start) {
            at--;
        }
        return Node.insertAt(young, at, added);
    }

    /** The tree with every young region moved into it (in start order: equal starts keep their order). */
    private static Node withYoung(@Nullable Node root, Region[] young) {
        return root == null ? Node.leaf(young) : root.withAll(young);
    }

    /** A packed tree over regions already in start order. */
    private static @Nullable Node build(List<Region> sorted) {
        if (sorted.isEmpty()) {
            return null;
        }
        List<Node> level = new ArrayList<>();
        for (int i = 0; i < sorted.size(); i += PACKED) {
            level.add(Node.leaf(sorted.subList(i, Math.min(sorted.size(), i + PACKED)).toArray(Region[]::new)));
        }
        while (level.size() > 1) {
            List<Node> up = new ArrayList<>();
            for (int i = 0; i < level.size(); i += PACKED) {
                up.add(Node.inner(level.subList(i, Math.min(level.size(), i + PACKED)).toArray(Node[]::new)));
            }
            level = up;
        }
        return level.getFirst();
    }

    /**
     * Index of the last key at or before {@code address}, or -1. Branch-free halving (the comparison becomes a
     * conditional move), because a hit's lookup otherwise pays a mispredicted branch per level.
     */
    private static int lastAtOrBefore(long[] keys, long address) {
        int n = keys.length;
        if (keys[0] > address) {
            return -1;
        }
        int base = 0;
        while (n > 1) {
            int half = n >>> 1;
            base = keys[base + half] <= address ? base + half : base;
            n -= half;
        }
        return base;
    }

    /** Index of the last key before {@code address}, or -1 (addresses are never negative). */
    private static int lastBefore(long[] keys, long address) {
        return lastAtOrBefore(keys, address - 1);
    }

    @Override
    public String toString() {
        return all().toString();
    }

    /**
     * One immutable node. A leaf holds regions ({@link #regions}; no children); an inner node holds children
     * ({@link #children}; no regions). One class for both, so that the hit path's loads see a single type. A
     * leaf keeps its regions' starts and ends in arrays of its own (a lookup searches them without touching a
     * region) but not their rights: those are read from the one region whose range serves, which the lease
     * that follows reads anyway, and an array of them would be 4 more bytes per cached region.
     */
    private static final class Node {
        private static final Node[] NO_CHILDREN = {};
        private static final Region[] NO_REGIONS = {};

        final boolean isLeaf;
        /** Leaf: each region's start. Inner: each child's first start. Never empty. */
        final long[] starts;
        /**
         * Leaf: each region's end. Inner: a bound on the greatest end in each child, exact when the node is built
         * and never lowered by a path copy ({@link #withChild}): a lookup may then look into a child that cannot
         * serve, never past one that can, and a removal (or an insertion below the bound) shares this array
         * and {@link #maxEnds} with the node it copies instead of copying them. A rebuild or split makes it exact.
         */
        final long[] ends;
        /**
         * maxEnds[i] = max(ends[0..i]): {@link #ends} itself where the ends never fall (disjoint regions, the
         * common case), so that a node of them allocates, fills and reads one array fewer.
         */
        final long[] maxEnds;
        final Region[] regions;
        final Node[] children;
        /** Regions and leaves below this node. */
        final int size;
        final int leaves;

        private Node(long[] starts, long[] ends, Region[] regions, Node[] children, int size, int leaves) {
            this(starts, ends, prefixMax(ends), regions, children, size, leaves);
        }

        private Node(long[] starts, long[] ends, long[] maxEnds, Region[] regions, Node[] children, int size,
                int leaves) {
            this.isLeaf = children.length == 0;
            this.starts = starts;
            this.ends = ends;
            this.maxEnds = maxEnds;
            this.regions = regions;
            this.children = children;
            this.size = size;
            this.leaves = leaves;
        }

        private static long[] prefixMax(long[] ends) {
            int rise = 1;
            while (rise < ends.length && ends[rise - 1] <= ends[rise]) {
                rise++;
            }
            if (rise >= ends.length) {
                return ends; // nondecreasing: every end is the maximum so far (the arrays are never written)
            }
            long[] out = new long[ends.length];
            long max = Long.MIN_VALUE;
            for (int i = 0; i < ends.length; i++) {
                max = Math.max(max, ends[i]);
                out[i] = max;
            }
            return out;
        }

        static Node leaf(Region[] regions) {
            int n = regions.length;
            long[] starts = new long[n];
            long[] ends = new long[n];
            for (int i = 0; i < n; i++) {
                starts[i] = regions[i].start;
                ends[i] = regions[i].end;
            }
            return new Node(starts, ends, regions, NO_CHILDREN, n, 1);
        }

        static Node inner(Node[] children) {
            int n = children.length;
            long[] starts = new long[n];
            long[] ends = new long[n];
            int size = 0;
            int leaves = 0;
            for (int i = 0; i < n; i++) {
                starts[i] = children[i].starts[0];
                ends[i] = children[i].maxEnd();
                size += children[i].size;
                leaves += children[i].leaves;
            }
            return new Node(starts, ends, NO_REGIONS, children, size, leaves);
        }

        /** The region with the latest start serving the request (live only when {@code checkLive}). */
        @Nullable Region find(long from, long to, int access, boolean widenRemote, boolean checkLive,
                @Nullable Object owner) {
            for (int i = lastAtOrBefore(starts, from); i >= 0 && maxEnds[i] >= to; i--) {
                if (ends[i] < to) {
                    continue;
                }
                if (!isLeaf) {
                    Region r = children[i].find(from, to, access, widenRemote, checkLive, owner);
                    if (r != null) {
                        return r;
                    }
                } else if (Region.grants(regions[i].access, access, widenRemote) && regions[i].ownedBy(owner)
                        && (!checkLive || regions[i].isLive())) {
                    return regions[i];
                }
            }
            return null;
        }

        boolean overlapsAny(long from, long to) {
            for (int i = lastBefore(starts, to); i >= 0 && maxEnds[i] > from; i--) {
                if (ends[i] > from && (isLeaf || children[i].overlapsAny(from, to))) {
                    return true;
                }
            }
            return false;
        }

        void collectOverlapping(long from, long to, List<Region> out) {
            for (int i = lastBefore(starts, to); i >= 0 && maxEnds[i] > from; i--) {
                if (ends[i] <= from) {
                    continue;
                }
                if (!isLeaf) {
                    children[i].collectOverlapping(from, to, out);
                } else {
                    out.add(regions[i]);
                }
            }
        }

        boolean contains(Region region) {
            for (int i = lastAtOrBefore(starts, region.start); i >= 0; i--) {
                if (isLeaf ? regions[i] == region : children[i].contains(region)) {
                    return true;
                }
                if (starts[i] < region.start) {
                    return false; // nothing further left starts at region.start
                }
            }
            return false;
        }

        /**
         * This subtree with {@code sorted} (in start order) inserted, each after every region of the tree starting
         * at or before it, as a new root. One pass: each node the regions reach is copied once for all of them,
         * where inserting them in turn copied a root-to-leaf path per region.
         */
        Node withAll(Region[] sorted) {
            Node[] parts = insertRun(sorted, 0, sorted.length);
            return parts.length == 1 ? parts[0] : inner(parts); // the root split: a new level above its halves
        }

        /**
         * The nodes replacing this one once {@code sorted[from, to)} is inserted: one, or two where it overflowed
         * (never more: a run adds at most {@value #YOUNG} entries, no more than {@value #FANOUT}, to a node of at
         * most {@value #FANOUT}, so each of its children splits in two at most and its own entries fit in two).
         */
        private Node[] insertRun(Region[] sorted, int from, int to) {
            return isLeaf ? leafWithRun(sorted, from, to) : innerWithRun(sorted, from, to);
        }

        private Node[] leafWithRun(Region[] sorted, int from, int to) {
            int n = regions.length;
            int added = to - from;
            long[] ss = new long[n + added];
            long[] es = new long[n + added];
            Region[] rs = new Region[n + added];
            int i = 0;
            int k = 0;
            for (int j = from; j < to; j++) { // a merge by start; this leaf's regions first on equal starts
                Region r = sorted[j];
                while (i < n && starts[i] <= r.start) {
                    ss[k] = starts[i];
                    es[k] = ends[i];
                    rs[k++] = regions[i++];
                }
                ss[k] = r.start;
                es[k] = r.end;
                rs[k++] = r;
            }
            System.arraycopy(starts, i, ss, k, n - i);
            System.arraycopy(ends, i, es, k, n - i);
            System.arraycopy(regions, i, rs, k, n - i);
            int length = n + added;
            if (length <= FANOUT) {
                return new Node[] {new Node(ss, es, rs, NO_CHILDREN, length, 1)};
            }
            // where the run lies past either end, this leaf's entries stay one node: this one, not a copy
            int kept = sorted[from].start >= starts[n - 1] ? n : sorted[to - 1].start < starts[0] ? -n : 0;
            int cut = cut(length, kept);
            Node left = kept == n ? this : new Node(Arrays.copyOf(ss, cut), Arrays.copyOf(es, cut),
                    Arrays.copyOf(rs, cut), NO_CHILDREN, cut, 1);
            Node right = kept == -n ? this : new Node(Arrays.copyOfRange(ss, cut, length),
                    Arrays.copyOfRange(es, cut, length), Arrays.copyOfRange(rs, cut, length), NO_CHILDREN,
                    length - cut, 1);
            return new Node[] {left, right};
        }

        private Node[] innerWithRun(Region[] sorted, int from, int to) {
            Node[][] replaced = new Node[children.length][];
            int grown = 0;
            int first = -1;
            int last = -1;
            for (int j = from; j < to;) { // sorted: each child's regions are a run of their own
                int i = Math.max(0, lastAtOrBefore(starts, sorted[j].start));
                int end = j + 1;
                while (end < to && (i + 1 == starts.length || sorted[end].start < starts[i + 1])) {
                    end++;
                }
                replaced[i] = children[i].insertRun(sorted, j, end);
                grown += replaced[i].length - 1;
                first = first < 0 ? i : first;
                last = i;
                j = end;
            }
            if (grown == 0) { // no child split: a path copy per changed child (usually one), arrays shared
                Node copy = this;
                for (int i = first; i <= last; i++) {
                    if (replaced[i] != null) {
                        copy = copy.withChild(i, replaced[i][0]);
                    }
                }
                return new Node[] {copy};
            }
            Node[] cs = new Node[children.length + grown];
            int k = 0;
            for (int i = 0; i < children.length; i++) {
                if (replaced[i] == null) {
                    cs[k++] = children[i];
                } else {
                    System.arraycopy(replaced[i], 0, cs, k, replaced[i].length);
                    k += replaced[i].length;
                }
            }
            int n = children.length;
            if (cs.length <= FANOUT) {
                return new Node[] {inner(cs)};
            }
            // this node kept whole where only its last child grew new last children (or its first new first ones)
            int kept = first != last ? 0 : first == n - 1 && cs[n - 1] == children[n - 1] ? n
                    : first == 0 && cs[cs.length - n] == children[0] ? -n : 0;
            int cut = cut(cs.length, kept);
            return new Node[] {kept == n ? this : inner(Arrays.copyOf(cs, cut)),
                kept == -n ? this : inner(Arrays.copyOfRange(cs, cut, cs.length))};
        }

        /**
         * Where an overflowing node of {@code length} entries splits in two. With {@code kept} = n > 0 after its
         * first n entries (the node's own: the new ones all lie past them), with -n before its last n, so that
         * the node itself is kept whole: ascending (or descending) addresses, the common order of a buffer pool,
         * then fill nodes instead of leaving them half empty, and regions added past the last of a full tree, and
         * removed again, copy no full node. With 0 in the middle.
         */
        private static int cut(int length, int kept) {
            return kept > 0 ? kept : kept < 0 ? length + kept : length / 2;
        }

        /** This subtree without {@code r}: itself when {@code r} is absent, null when nothing is left. */
        @Nullable Node remove(Region r) {
            for (int i = lastAtOrBefore(starts, r.start); i >= 0; i--) {
                if (isLeaf) {
                    if (regions[i] == r) {
                        return regions.length == 1 ? null : withoutEntry(i);
                    }
                } else {
                    Node child = children[i];
                    Node changed = child.remove(r);
                    if (changed != child) {
                        if (changed != null) {
                            return withChild(i, changed);
                        }
                        return children.length == 1 ? null : withoutChild(i);
                    }
                }
                if (starts[i] < r.start) {
                    break; // nothing further left starts at r.start
                }
            }
            return this;
        }

        // Copies with one entry or child changed: System.arraycopy of this node's arrays, so that an update
        // reads no region and no sibling node (at 65,536 regions those reads are cache misses).

        private Node withoutEntry(int at) {
            long[] es = removeAt(ends, at);
            return new Node(removeAt(starts, at), es, maxEnds == ends ? es : prefixMax(es), removeAt(regions, at),
                    NO_CHILDREN, size - 1, 1);
        }

        /** Child {@code i} replaced; the arrays that do not change (see {@link #ends}) are shared. */
        private Node withChild(int i, Node child) {
            Node[] cs = children.clone();
            cs[i] = child;
            long first = child.starts[0];
            long[] ss = starts[i] == first ? starts : withValue(starts, i, first);
            long end = Math.max(ends[i], child.maxEnd()); // a bound: never lowered here
            long[] es = end == ends[i] ? ends : withValue(ends, i, end);
            Node old = children[i];
            return new Node(ss, es, es == ends ? maxEnds : prefixMax(es), NO_REGIONS, cs,
                    size - old.size + child.size, leaves - old.leaves + child.leaves);
        }

        private static long[] withValue(long[] a, int i, long x) {
            long[] out = a.clone();
            out[i] = x;
            return out;
        }

        private Node withoutChild(int i) {
            Node old = children[i];
            return new Node(removeAt(starts, i), removeAt(ends, i), NO_REGIONS, removeAt(children, i),
                    size - old.size, leaves - old.leaves);
        }

        long maxEnd() {
            return maxEnds[maxEnds.length - 1];
        }

        private static long[] removeAt(long[] a, int at) {
            long[] out = new long[a.length - 1];
            System.arraycopy(a, 0, out, 0, at);
            System.arraycopy(a, at + 1, out, at, out.length - at);
            return out;
        }

        List<Region> all() {
            List<Region> out = new ArrayList<>(size);
            addAll(out);
            return out;
        }

        private void addLeaves(List<Object> out) {
            if (isLeaf) {
                out.add(this);
            } else {
                for (Node c : children) {
                    c.addLeaves(out);
                }
            }
        }

        private void addAll(List<Region> out) {
            if (isLeaf) {
                out.addAll(Arrays.asList(regions));
            } else {
                for (Node c : children) {
                    c.addAll(out);
                }
            }
        }

        static <T> T[] insertAt(T[] a, int at, T x) {
            T[] out = Arrays.copyOf(a, a.length + 1);
            System.arraycopy(a, at, out, at + 1, a.length - at);
            out[at] = x;
            return out;
        }

        static <T> T[] removeAt(T[] a, int at) {
            T[] out = Arrays.copyOf(a, a.length - 1);
            System.arraycopy(a, at + 1, out, at, a.length - at - 1);
            return out;
        }
    }
}
