package io.mrcache.cli;

import io.mrcache.ucx.UcxVersion;
import io.mrcache.ucx.transport.TransportReport;
import io.mrcache.ucx.transport.UcxOwner;
import io.mrcache.ucx.transport.UcxPeer;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.ToLongFunction;
import org.jspecify.annotations.Nullable;

/**
 * {@code demo --transport ucx}: the stale-registration risk on a real data path. Two JVMs, UCX through jucx (over
 * shared memory and TCP here): an owner whose allocator frees and reuses buffers, and a peer that writes and reads
 * them with the packed remote keys the owner sends. The same seeded workload runs through a naive cache, through
 * mrcache, and through mrcache with a peer that keeps using keys after its completion message.
 */
final class UcxDemo {
    private UcxDemo() {
    }

    /** Exit status when the peer was lost: the table shows the columns that ran and which one ended early. */
    static final int PEER_LOST = 3;

    /** One column of the demo: which cache, and whether the peer violates the protocol. */
    record Column(String title, UcxOwner.CacheKind kind, boolean violates) {
    }

    static final List<Column> COLUMNS = List.of(new Column("naive cache (UNSAFE)", UcxOwner.CacheKind.NAIVE, false),
            new Column("mrcache", UcxOwner.CacheKind.MRCACHE, false),
            new Column("mrcache, violating peer", UcxOwner.CacheKind.MRCACHE, true));

    /** Runs one column's transport (the real one: {@link #column}; a test's stand-in). */
    @FunctionalInterface
    interface ColumnRunner {
        TransportReport run(Column column) throws IOException, InterruptedException;
    }

    /** Runs the three columns; the exit status (1 when mrcache with a well-behaved peer showed any corruption). */
    static int run(long ops, long seed, boolean json, @Nullable Integer listenPort) {
        PrintStream info = json ? System.err : System.out;
        return run(ops, seed, json, listenPort, c -> column(ops, seed, c, listenPort, info));
    }

    /**
     * Runs the columns through {@code runner} and reports them. A lost peer ends the run in order: the columns that
     * ran are shown, the one that ended early is named with the reason, the rest are not run, and the exit status
     * is {@link #PEER_LOST} (1 still wins when mrcache's column showed corruption).
     */
    static int run(long ops, long seed, boolean json, @Nullable Integer listenPort, ColumnRunner runner) {
        PrintStream info = json ? System.err : System.out;
        info.printf("mrcache demo --transport ucx: %,d operations per column, seed %d, jucx %s over UCX (software RMA:"
                + " deregistration revokes nothing here)%n", ops, seed, UcxVersion.JUCX);
        info.printf("The owner's allocator packs buffers of 64 B to 64 KiB into 64 KiB chunks and reuses freed"
                + " addresses at once (last freed, first reused).%nFor each operation it takes keys from the cache,"
                + " sends the peer (address, length, packed rkey); the peer writes or reads through jucx and sends a"
                + "%ncompletion, on which the owner releases the keys. A quarter of the buffers are freed while the"
                + " peer's operation is outstanding.%nGround truth is the bytes: each buffer must hold what its owner,"
                + " or the peer's completed write, put there.%n%n");
        if (listenPort != null) {
            info.printf("Waiting on port %d for a peer: ./mrcache ucx-peer --connect <this host>:%d --runs 3%n",
                    listenPort, listenPort);
        }
        List<TransportReport> reports = new ArrayList<>();
        String endedEarly = null;
        for (Column c : COLUMNS) {
            try {
                TransportReport r = runner.run(c);
                reports.add(r);
                if (r.peerLost()) {
                    endedEarly = String.format("the '%s' column ended early, after %,d of %,d operations: the peer was"
                            + " lost (%s)", c.title(), r.operations(), ops, r.lostBecause());
                    break;
                }
            } catch (IOException e) {
                endedEarly = String.format("the '%s' column did not run: %s", c.title(), e.getMessage());
                break;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                endedEarly = String.format("the '%s' column was interrupted", c.title());
                break;
            }
        }
        TransportReport judged = reports.size() > 1 ? reports.get(1) : null; // mrcache with a well-behaved peer
        boolean unsafe = judged != null && !judged.safe();
        int status = unsafe ? 1 : endedEarly != null ? PEER_LOST : 0;
        if (json) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("transport", "ucx");
            out.put("seed", seed);
            out.put("jucx", UcxVersion.JUCX);
            List<Object> columns = new ArrayList<>();
            for (TransportReport r : reports) {
                Map<String, Object> c = new LinkedHashMap<>();
                c.put("cache", r.cache());
                c.put("operations", r.operations());
                c.put("corruptedBuffers", r.corrupted());
                c.put("staleReads", r.staleReads());
                c.put("freesWhileOutstanding", r.earlyFrees());
                c.put("heldBack", r.heldBack());
                c.put("lateWrites", r.lateWrites());
                c.put("registrations", r.registrations());
                c.put("peerLost", r.peerLost());
                c.put("operationsPerSecond", r.operations() / Math.max(1e-9, r.seconds()));
                columns.add(c);
            }
            out.put("columns", columns);
            out.put("endedEarly", endedEarly);
            out.put("judged", unsafe ? "UNSAFE" : judged == null ? "not run" : endedEarly != null ? "incomplete"
                    : "safe");
            System.out.println(Json.write(out));
            return status;
        }
        printTable(reports);
        if (endedEarly != null) {
            System.out.printf("%nENDED EARLY: %s.%nThe table shows the %d column(s) that ran;", endedEarly,
                    reports.size());
            for (Column c : COLUMNS.subList(reports.size(), COLUMNS.size())) {
                System.out.printf(" '%s' did not run;", c.title());
            }
            System.out.printf(" exit status %d.%n", PEER_LOST);
        } else {
            System.out.printf("%nThe naive cache never hears of frees: the allocator reuses a buffer while the peer's"
                    + " operation on it is outstanding, and the peer's write%nlands in the buffer's next owner"
                    + " (its read returns the next owner's bytes). mrcache's free hook is invalidate(): its stage"
                    + " completes%nonly when the peer's completion released the lease, so the address comes back only"
                    + " after the last write through the old key.%n");
            System.out.printf("The third column is OUTSIDE the safety model's precondition: the peer keeps writing with"
                    + " keys after its completion message. Here%nderegistration revokes nothing (UCX's software RMA"
                    + " writes through the virtual address), so only the protocol protects; on an RDMA%ndevice,"
                    + " ibv_dereg_mr would make those writes fail instead.%n");
        }
        if (unsafe) {
            System.out.printf("%nFAILED: mrcache showed %,d corrupted buffers and %,d stale reads. Replay: ./mrcache demo"
                    + " --transport ucx --seed %d --ops %d%n", judged.corrupted(), judged.staleReads(), seed, ops);
        } else if (judged != null && endedEarly == null) {
            System.out.printf("%nmrcache: zero corrupted buffers and zero stale reads in the other process's memory.%n");
        } else if (judged != null) {
            System.out.printf("%nmrcache: zero corrupted buffers and zero stale reads in the %,d operations it ran.%n",
                    judged.operations());
        }
        return status;
    }

    private static TransportReport column(long ops, long seed, Column column, @Nullable Integer listenPort,
            PrintStream info) throws IOException, InterruptedException {
        InetSocketAddress listen = listenPort == null ? new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)
                : new InetSocketAddress(listenPort);
        UcxOwner.Config config = new UcxOwner.Config(ops, seed, column.violates(), listen);
        Function<Integer, @Nullable Process> launch = listenPort != null ? port -> null : UcxPeer::launch;
        return UcxOwner.run(config, column.kind(), launch, info::println);
    }

    private static void printTable(List<TransportReport> reports) {
        System.out.println();
        StringBuilder header = new StringBuilder(String.format("%-48s", ""));
        StringBuilder under = new StringBuilder(String.format("%-48s", ""));
        for (int i = 0; i < reports.size(); i++) {
            header.append(String.format(" %24s", COLUMNS.get(i).title()));
            under.append(String.format(" %24s", reports.get(i).peerLost() ? "(ENDED EARLY)"
                    : COLUMNS.get(i).violates() ? "(outside the model)" : ""));
        }
        System.out.println(header);
        System.out.println(under);
        row(reports, "operations (peer writes and reads)", TransportReport::operations);
        System.out.println("detectors, the other process's bytes (each must be 0 for mrcache):");
        row(reports, "corrupted buffers (bytes nobody wrote there)", TransportReport::corrupted);
        row(reports, "stale reads (another buffer's bytes)", TransportReport::staleReads);
        System.out.println("for information:");
        row(reports, "frees while the peer's operation was out", TransportReport::earlyFrees);
        row(reports, "  held back by the free hook until completion", TransportReport::heldBack);
        row(reports, "peer writes after their completion", r -> Math.max(0, r.lateWrites()));
        row(reports, "registrations", TransportReport::registrations);
        row(reports, "throughput (operations/s)", r -> Math.round(r.operations() / Math.max(1e-9, r.seconds())));
    }

    private static void row(List<TransportReport> reports, String label, ToLongFunction<TransportReport> value) {
        Columns.row(reports, label, value, 48, 24);
    }
}
