package io.mrcache.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * An immutable interval index: a persistent B+-tree of regions ordered by start address (overlaps allowed;
 * remote regions are exact and never merged), each node keeping the running maximum of the ends below it so
 * that a lookup stops going left as soon as nothing earlier can reach far enough.
 *
 * <p>Readers use a published instance without locks and without allocating. Writers build a new one under
 * the cache's index lock by path copying: an insertion or removal copies the nodes from the root to one leaf
 * (at most {@value #FANOUT} entries each), O(log n), and shares every other node with the old index. A tree
 * left sparse by removals (on average under a quarter full) is rebuilt, which costs O(n) once per Omega(n)
 * removals. An index of one region holds it without a node: a miss and its invalidation on an otherwise empty
 * cache (a buffer registered, used and freed) then build no node at all.
 */
final class RegionIndex {
    static final RegionIndex EMPTY = new RegionIndex(null, null);
    /** Most entries of a leaf and children of an inner node. */
    static final int FANOUT = 32;
    /** How full a rebuild packs its nodes: room for insertions before the next split. */
    private static final int PACKED = FANOUT * 3 / 4;

    private final @Nullable Node root;
    /** The only region, when the index holds exactly one (and {@link #root} is null). */
    private final @Nullable Region single;

    private RegionIndex(@Nullable Node root, @Nullable Region single) {
        this.root = root;
        this.single = single;
    }

    private static RegionIndex of(@Nullable Node root) {
        if (root == null) {
            return EMPTY;
        }
        while (!root.isLeaf && root.children.length == 1) {
            root = root.children[0]; // a removal left a root with one child
        }
        if (root.isLeaf && root.size == 1) {
            return new RegionIndex(null, root.regions[0]);
        }
        if (!root.isLeaf && root.size * 4 < root.leaves * FANOUT) { // (a lone leaf is as packed as it gets)
            return new RegionIndex(build(root.all()), null);
        }
        return new RegionIndex(root, null);
    }

    int size() {
        return root != null ? root.size : single != null ? 1 : 0;
    }

    /** Height of the tree (0 when empty, 1 for a single leaf or region): for tests of the O(log n) shape. */
    int height() {
        int h = single != null ? 1 : 0;
        for (Node n = root; n != null; n = n.isLeaf ? null : n.children[0]) {
            h++;
        }
        return h;
    }

    /** Leaves of the tree (a lone region counts as one): for tests of how full its nodes are kept. */
    int leaves() {
        return root != null ? root.leaves : single != null ? 1 : 0;
    }

    /** The leaf nodes in order, as opaque objects (none for one region): which nodes an update shares. */
    List<Object> leafNodesForTest() {
        List<Object> out = new ArrayList<>();
        if (root != null) {
            root.addLeaves(out);
        }
        return out;
    }

    /** The root node as an opaque object (null for none): whether an update kept it. */
    @Nullable Object rootNodeForTest() {
        return root;
    }

    /** A live region serving the request, or null. Allocation-free. */
    @Nullable Region findServing(long from, long to, int access, boolean widenRemote) {
        if (root == null) {
            Region r = singleServing(from, to, access, widenRemote);
            return r != null && r.isLive() ? r : null;
        }
        return root.find(from, to, access, widenRemote, true);
    }

    /** The lone region if there is one and its range and rights serve the request (liveness unchecked). */
    private @Nullable Region singleServing(long from, long to, int access, boolean widenRemote) {
        Region r = single;
        return r != null && r.serves(from, to, access, widenRemote) ? r : null;
    }

    /** Whether the lone region, if there is one, overlaps {@code [from, to)}. */
    private boolean singleOverlaps(long from, long to) {
        Region r = single;
        return r != null && r.start < to && r.end > from;
    }

    /**
     * The hit path's lookup: like {@link #findServing} but reads only the index's arrays, leaving the region's
     * lease word (the one cache line threads write) to the compare-and-set that follows, which fails on a
     * retired region anyway. Walks straight down to the leaf holding the last start at or before {@code from}
     * and scans it; only when that fails and an earlier subtree can still reach {@code to} does it search the
     * tree.
     */
    @Nullable Region findServingUnchecked(long from, long to, int access, boolean widenRemote) {
        Node top = root;
        if (top == null) {
            return singleServing(from, to, access, widenRemote);
        }
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
            if (n.ends[i] >= to && Region.grants(r.access, access, widenRemote)) { // the lease reads r next anyway
                return r;
            }
        }
        return earlierMayServe ? top.find(from, to, access, widenRemote, false) : null;
    }

    /** Whether any region overlaps {@code [from, to)}. Allocation-free: the free hooks' fast path. */
    boolean overlapsAny(long from, long to) {
        return root == null ? singleOverlaps(from, to) : root.overlapsAny(from, to);
    }

    /** Every region overlapping {@code [from, to)} (start < to and end > from), latest start first. */
    List<Region> overlapping(long from, long to) {
        if (root == null) { // no node: an immutable answer, half the bytes of a list (a free allocates it)
            return singleOverlaps(from, to) ? List.of(single) : List.of();
        }
        List<Region> out = new ArrayList<>(2);
        root.collectOverlapping(from, to, out);
        return out;
    }

    boolean contains(Region region) {
        return root != null ? root.contains(region) : single == region;
    }

    /** A new index with {@code added} (may be null) and without {@code removed}. O(log n) per region. */
    RegionIndex with(@Nullable Region added, List<Region> removed) {
        if (root == null) {
            return withoutNode(added, removed);
        }
        Node r = root;
        for (int i = 0; i < removed.size() && r != null; i++) { // no iterator: a miss and a free each come here
            r = r.remove(removed.get(i));
        }
        if (added != null) {
            r = r == null ? Node.leaf(new Region[] {added}) : r.insertSplittingRoot(added);
        }
        return r == root ? this : of(r);
    }

    /** {@link #with} on an index of at most one region: a node only when two regions remain. */
    private RegionIndex withoutNode(@Nullable Region added, List<Region> removed) {
        Region kept = single != null && !removed.contains(single) ? single : null;
        if (added == null) {
            return kept == single ? this : EMPTY;
        }
        if (kept == null) {
            return new RegionIndex(null, added);
        }
        // after every region starting at or before it, as an insertion into a leaf puts it
        Region[] pair = added.start >= kept.start ? new Region[] {kept, added} : new Region[] {added, kept};
        return new RegionIndex(Node.leaf(pair), null);
    }

    /** A new index that also holds {@code added}. */
    RegionIndex withAll(List<Region> added) {
        RegionIndex r = this;
        for (int i = 0; i < added.size(); i++) {
            r = r.with(added.get(i), List.of());
        }
        return r;
    }

    /** Every region, in start order. */
    List<Region> all() {
        if (root == null) {
            return single == null ? List.of() : List.of(single);
        }
        return Collections.unmodifiableList(root.all());
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
        @Nullable Region find(long from, long to, int access, boolean widenRemote, boolean checkLive) {
            for (int i = lastAtOrBefore(starts, from); i >= 0 && maxEnds[i] >= to; i--) {
                if (ends[i] < to) {
                    continue;
                }
                if (!isLeaf) {
                    Region r = children[i].find(from, to, access, widenRemote, checkLive);
                    if (r != null) {
                        return r;
                    }
                } else if (Region.grants(regions[i].access, access, widenRemote)
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

        /** This subtree with {@code r} inserted after every region starting at or before it, as a new root. */
        Node insertSplittingRoot(Region r) {
            @Nullable Node[] overflow = new Node[1];
            Node replacement = insert(r, overflow);
            Node right = overflow[0];
            return right == null ? replacement : inner(new Node[] {replacement, right});
        }

        /**
         * The node replacing this one; when it overflowed, the left of the two, with the right one left in
         * {@code overflow[0]} (one holder per insertion instead of an array returned from every level).
         */
        private Node insert(Region r, @Nullable Node[] overflow) {
            if (isLeaf) {
                int at = lastAtOrBefore(starts, r.start) + 1;
                if (regions.length < FANOUT) {
                    return withEntry(at, r); // copies this leaf's arrays, reads no other region
                }
                if (at == regions.length || at == 0) { // past either end: the new region alone beside this leaf
                    Node alone = leaf(new Region[] {r});
                    return split(at == 0 ? alone : this, at == 0 ? this : alone, overflow);
                }
                Region[] rs = insertAt(regions, at, r);
                int cut = splitPoint(at, rs.length);
                return split(leaf(Arrays.copyOf(rs, cut)), leaf(Arrays.copyOfRange(rs, cut, rs.length)), overflow);
            }
            int i = Math.max(0, lastAtOrBefore(starts, r.start));
            Node left = children[i].insert(r, overflow);
            Node right = overflow[0];
            if (right == null) {
                return withChild(i, left);
            }
            overflow[0] = null;
            if (children.length >= FANOUT) { // this node overflows too; checked first so as to copy nothing
                if (i == children.length - 1 && left == children[i]) { // its last child grew a new last
                    return split(this, inner(new Node[] {right}), overflow);
                }
                if (i == 0 && right == children[0]) { // ... or its first child grew a new first
                    return split(inner(new Node[] {left}), this, overflow);
                }
            }
            Node[] cs = insertAt(children, i + 1, right);
            cs[i] = left;
            if (cs.length <= FANOUT) {
                return withSplitChild(i, left, right, cs);
            }
            int cut = splitPoint(i + 1, cs.length);
            return split(inner(Arrays.copyOf(cs, cut)), inner(Arrays.copyOfRange(cs, cut, cs.length)), overflow);
        }

        private static Node split(Node left, Node right, @Nullable Node[] overflow) {
            overflow[0] = right;
            return left;
        }

        /**
         * Where an overflowing node of {@code length} entries splits after an insertion at {@code at}: in the
         * middle, except that an insertion at either end leaves the full side whole, so that ascending (or
         * descending) addresses, the common order of a buffer pool, fill nodes instead of leaving them half
         * empty. ({@link #insert} keeps the full side itself at either end instead of copying it, so a region
         * added past the last of a full tree, and removed again, copies no full node.)
         */
        private static int splitPoint(int at, int length) {
            return at == length - 1 ? length - 1 : at == 0 ? 1 : length / 2;
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

        private Node withEntry(int at, Region r) {
            long[] ss = insertAt(starts, at, r.start);
            long[] es = insertAt(ends, at, r.end);
            boolean stillRising = maxEnds == ends && (at == 0 || ends[at - 1] <= r.end)
                    && (at == ends.length || r.end <= ends[at]);
            return new Node(ss, es, stillRising ? es : prefixMax(es), insertAt(regions, at, r), NO_CHILDREN,
                    size + 1, 1);
        }

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

        /** Child {@code i} split into {@code a} and {@code b}; {@code cs} is the new children array. */
        private Node withSplitChild(int i, Node a, Node b, Node[] cs) {
            long[] ss = insertAt(starts, i + 1, b.starts[0]);
            long[] es = insertAt(ends, i + 1, b.maxEnd());
            ss[i] = a.starts[0];
            es[i] = a.maxEnd();
            Node old = children[i];
            return new Node(ss, es, NO_REGIONS, cs, size - old.size + a.size + b.size,
                    leaves - old.leaves + a.leaves + b.leaves);
        }

        private Node withoutChild(int i) {
            Node old = children[i];
            return new Node(removeAt(starts, i), removeAt(ends, i), NO_REGIONS, removeAt(children, i),
                    size - old.size, leaves - old.leaves);
        }

        long maxEnd() {
            return maxEnds[maxEnds.length - 1];
        }

        private static long[] insertAt(long[] a, int at, long x) {
            long[] out = new long[a.length + 1];
            System.arraycopy(a, 0, out, 0, at);
            System.arraycopy(a, at, out, at + 1, a.length - at);
            out[at] = x;
            return out;
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

        private static <T> T[] insertAt(T[] a, int at, T x) {
            T[] out = Arrays.copyOf(a, a.length + 1);
            System.arraycopy(a, at, out, at + 1, a.length - at);
            out[at] = x;
            return out;
        }

        private static <T> T[] removeAt(T[] a, int at) {
            T[] out = Arrays.copyOf(a, a.length - 1);
            System.arraycopy(a, at + 1, out, at, a.length - at - 1);
            return out;
        }
    }
}
