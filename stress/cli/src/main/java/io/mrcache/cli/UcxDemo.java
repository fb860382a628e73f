package io.mrcache.cli;

import io.mrcache.ucx.UcxVersion;
import io.mrcache.ucx.transport.TransportReport;
import io.mrcache.ucx.transport.UcxOwner;
import io.mrcache.ucx.transport.UcxPeer;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
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

    /** Runs the three columns; the exit status (1 when mrcache with a well-behaved peer showed any corruption). */
    static int run(long ops, long seed, boolean json, @Nullable Integer listenPort) {
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
        reports.add(column(ops, seed, UcxOwner.CacheKind.NAIVE, false, listenPort, info));
        TransportReport judged = column(ops, seed, UcxOwner.CacheKind.MRCACHE, false, listenPort, info);
        reports.add(judged);
        reports.add(column(ops, seed, UcxOwner.CacheKind.MRCACHE, true, listenPort, info));
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
            out.put("judged", judged.safe() ? "safe" : "UNSAFE");
            System.out.println(Json.write(out));
            return judged.safe() ? 0 : 1;
        }
        printTable(reports);
        System.out.printf("%nThe naive cache never hears of frees: the allocator reuses a buffer while the peer's"
                + " operation on it is outstanding, and the peer's write%nlands in the buffer's next owner"
                + " (its read returns the next owner's bytes). mrcache's free hook is invalidate(): its stage"
                + " completes%nonly when the peer's completion released the lease, so the address comes back only"
                + " after the last write through the old key.%n");
        System.out.printf("The third column is OUTSIDE the safety model's precondition: the peer keeps writing with"
                + " keys after its completion message. Here%nderegistration revokes nothing (UCX's software RMA"
                + " writes through the virtual address), so only the protocol protects; on an RDMA%ndevice,"
                + " ibv_dereg_mr would make those writes fail instead.%n");
        if (!judged.safe()) {
            System.out.printf("%nFAILED: mrcache showed %,d corrupted buffers and %,d stale reads. Replay: ./mrcache demo"
                    + " --transport ucx --seed %d --ops %d%n", judged.corrupted(), judged.staleReads(), seed, ops);
            return 1;
        }
        System.out.printf("%nmrcache: zero corrupted buffers and zero stale reads in the other process's memory.%n");
        return 0;
    }

    private static TransportReport column(long ops, long seed, UcxOwner.CacheKind kind, boolean violates,
            @Nullable Integer listenPort, PrintStream info) {
        InetSocketAddress listen = listenPort == null ? new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)
                : new InetSocketAddress(listenPort);
        UcxOwner.Config config = new UcxOwner.Config(ops, seed, violates, listen);
        Function<Integer, @Nullable Process> launch = listenPort != null ? port -> null : UcxPeer::launch;
        try {
            return UcxOwner.run(config, kind, launch, info::println);
        } catch (IOException e) {
            throw new UncheckedIOException("the " + kind + " column's transport failed: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private static void printTable(List<TransportReport> reports) {
        System.out.println();
        StringBuilder header = new StringBuilder(String.format("%-48s", ""));
        String[] names = {"naive cache (UNSAFE)", "mrcache", "mrcache, violating peer"};
        for (String n : names) {
            header.append(String.format(" %24s", n));
        }
        System.out.println(header);
        System.out.printf("%-48s %24s %24s %24s%n", "", "", "", "(outside the model)");
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
        StringBuilder sb = new StringBuilder(String.format("%-48s", "  " + label));
        for (TransportReport r : reports) {
            sb.append(String.format(" %,24d", value.applyAsLong(r)));
        }
        System.out.println(sb);
    }
}
