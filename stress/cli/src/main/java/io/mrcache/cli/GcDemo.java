package io.mrcache.cli;

import io.mrcache.stress.injector.GcFreedInjector;
import io.mrcache.stress.injector.GcFreedInjector.Column;
import io.mrcache.stress.injector.GcFreedInjector.Report;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;

/**
 * {@code demo --frees gc}: buffers the JVM frees (GC-collected auto-arena segments and direct buffers, no free hook),
 * through the naive cache, mrcache's address-keyed API (a user who forgot that the GC frees) and mrcache's
 * owner-bound API, on one seed.
 */
final class GcDemo {
    static final List<Column> COLUMNS = List.of(Column.NAIVE, Column.ADDRESS_KEYED, Column.OWNER_BOUND);

    private GcDemo() {
    }

    /** Runs the columns; exit status 1 when owner-bound mrcache served any stale registration. */
    static int run(long buffers, long seed, boolean json) {
        PrintStream info = json ? System.err : System.out;
        info.printf("mrcache demo --frees gc: %,d buffers per cache, seed %d%n", buffers, seed);
        info.printf("Each buffer is a segment of its own Arena.ofAuto() (1 to 16 pages) or a ByteBuffer.allocateDirect"
                + " of 64 or 256 KiB, acquired when new%nand now and then while it lives; the newest 32 are kept, the"
                + " rest dropped for the GC, which frees them. No free hook is called.%nA stale hit is a lease whose"
                + " registration was made for a buffer already dropped: its memory was freed, and the new buffer lies"
                + " on it.%n%n");
        List<Report> reports = new ArrayList<>();
        for (Column c : COLUMNS) {
            reports.add(GcFreedInjector.run(c, buffers, seed, info::println));
        }
        Report owned = reports.get(2);
        if (json) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("frees", "gc");
            out.put("seed", seed);
            List<Object> columns = new ArrayList<>();
            for (Report r : reports) {
                Map<String, Object> c = new LinkedHashMap<>();
                c.put("cache", r.column().title());
                c.put("buffers", r.buffers());
                c.put("acquires", r.acquires());
                c.put("staleHits", r.staleHits());
                c.put("reusedAddresses", r.reusedAddresses());
                c.put("registrations", r.registrations());
                c.put("deregistrations", r.deregistrations());
                c.put("ownersGone", r.ownersGone());
                c.put("gcs", r.gcs());
                c.put("seconds", r.seconds());
                columns.add(c);
            }
            out.put("columns", columns);
            long[] d = owned.delayMicros();
            if (d.length > 0) {
                out.put("collectedToDeregisteredMicros", Map.of("count", d.length, "min", d[0], "median", d[d.length / 2],
                        "max", d[d.length - 1]));
            }
            out.put("judged", owned.safe() ? "safe" : "UNSAFE");
            System.out.println(Json.write(out));
            return owned.safe() ? 0 : 1;
        }
        System.out.println();
        StringBuilder header = new StringBuilder(String.format("%-50s", ""));
        for (Report r : reports) {
            header.append(String.format(" %24s", r.column().title()));
        }
        System.out.println(header);
        row(reports, "buffers (each freed by the GC once dropped)", Report::buffers);
        row(reports, "acquires", Report::acquires);
        row(reports, "new buffers at an address used before", Report::reusedAddresses);
        System.out.println("detector (must be 0 for owner-bound mrcache):");
        row(reports, "stale hits (registration of a freed buffer)", Report::staleHits);
        System.out.println("for information:");
        row(reports, "registrations", Report::registrations);
        row(reports, "deregistrations during the run", Report::deregistrations);
        row(reports, "owner-bound regions retired, owner collected", Report::ownersGone);
        row(reports, "System.gc() calls", Report::gcs);
        long[] d = owned.delayMicros();
        if (d.length > 0) {
            System.out.printf("%nOwner-bound: from the GC's notice that an owner was unreachable (a phantom reference"
                    + " enqueued) to its registration's%nderegistration, over %,d owners: min %,d us, median %,d us,"
                    + " p99 %,d us, max %,d us.%n", d.length, d[0], d[d.length / 2], d[(int) Math.min(d.length - 1,
                            Math.ceil(d.length * 0.99) - 1)], d[d.length - 1]);
        }
        System.out.printf("%nThe naive cache and the address-keyed API hear of no free: the GC frees a dropped buffer,"
                + " the allocator gives its addresses%nto a new one, and the cache serves the old registration (on an"
                + " RDMA device its pinned pages no longer back the new buffer,%nor its rkey opens the new owner's"
                + " bytes). acquire(MemorySegment) and acquire(ByteBuffer) bind each registration to its owner,%nwhich"
                + " a lease holds: a registration is served only to its own owner, and a collected owner's is"
                + " deregistered.%n");
        if (!owned.safe()) {
            System.out.printf("%nFAILED: owner-bound mrcache served %,d stale registrations. Replay: ./mrcache demo"
                    + " --frees gc --seed %d --ops %d%n", owned.staleHits(), seed, buffers);
            return 1;
        }
        System.out.printf("%nowner-bound mrcache: zero stale hits.%n");
        return 0;
    }

    private static void row(List<Report> reports, String label, ToLongFunction<Report> value) {
        Columns.row(reports, label, value, 50, 24);
    }
}
