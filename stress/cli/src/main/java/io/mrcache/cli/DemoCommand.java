package io.mrcache.cli;

import io.mrcache.cli.cost.RegistrationCalibrator;
import io.mrcache.core.MetricsSnapshot;
import io.mrcache.core.cost.NetworkModel;
import io.mrcache.core.cost.RegistrationCostModel;
import io.mrcache.core.cost.Savings;
import io.mrcache.stress.injector.AddressReuseInjector;
import io.mrcache.stress.injector.Caches;
import io.mrcache.stress.injector.Fault;
import io.mrcache.stress.injector.InjectorConfig;
import io.mrcache.stress.injector.InjectorReport;
import io.mrcache.stress.injector.MrcacheUnderTest;
import io.mrcache.verbs.sim.SimulatedHca;
import io.mrcache.verbs.sim.SimulatedRegistrar;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.ToLongFunction;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine;

/**
 * The main job: the address-reuse fault injector runs a naive cache (no invalidation) and mrcache on the same
 * seed and faults, and prints what each let through, side by side, then what caching saved in mrcache's run.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Run the address-reuse fault injector on a naive cache and on mrcache, side by side.",
            "Both get the same seed and faults:",
            "the same seed: buffers are freed and their addresses reused with new pages at once, the NIC writes",
            "into them through the cached keys, and ground truth counts every write that went astray."},
        exitCodeListHeading = "%nExit status:%n",
        exitCodeList = {"0:mrcache showed no stale write, no corrupted buffer and no leak",
            "1:mrcache showed a stale write, a corrupted buffer or a leak (the seed is printed); with --frees gc,"
                    + " owner-bound mrcache served a stale registration",
            "2:invalid options",
            "3:--transport ucx: the peer was lost (it died or disconnected); the table shows the columns that ran,"
                    + " which one ended early and why"})
final class DemoCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--ops", defaultValue = "300000",
            description = "Buffer lifecycles per cache (default ${DEFAULT-VALUE}, about 30 s in all here).")
    long ops;

    @Option(names = "--threads", defaultValue = "2", description = "Worker threads (default ${DEFAULT-VALUE}). 1 replays"
            + " a seed: every detector and count, except mrcache's counts under eviction-pressure (Caffeine breaks some"
            + " admission ties with a random draw no seed reaches; its detectors still replay).")
    int threads;

    @Option(names = "--seed", converter = Options.SeedConverter.class,
            description = "Seed, decimal or 0x hex as printed (default: random, printed).")
    Long seed;

    @Option(names = "--faults", defaultValue = "all",
            description = "Comma list of faults: ${COMPLETION-CANDIDATES}; 'all' is every fault but drop-hooks, which"
                    + " breaks the cache's precondition and must be named; 'none' (default ${DEFAULT-VALUE}).",
            completionCandidates = FaultNames.class)
    String faults;

    @Option(names = "--json", description = "Print one JSON object (every column's detectors and coverage) instead of"
            + " the tables; progress goes to standard error.")
    boolean json;

    @Option(names = "--transport", defaultValue = "injector", paramLabel = "injector|ucx",
            description = "injector (default): the address-reuse fault injector on the simulated HCA. ucx: a real"
                    + " transport, two JVMs over UCX through jucx (shared memory and TCP here); --ops then counts"
                    + " operations (default 20000), and --threads and --faults do not apply.")
    String transport;

    @Option(names = "--frees", defaultValue = "hooks", paramLabel = "hooks|gc",
            description = "hooks (default): the allocator calls the free hook. gc: buffers the JVM frees (auto-arena"
                    + " segments, direct buffers) with no free hook, through the naive cache, the address-keyed API"
                    + " and the owner-bound API; --ops then counts buffers (default 50000), and --threads and --faults"
                    + " do not apply.")
    String frees;

    @Option(names = "--listen", paramLabel = "PORT", description = "With --transport ucx: listen on PORT (all"
            + " interfaces) for a peer started by hand, './mrcache ucx-peer --connect HOST:PORT', instead of starting"
            + " one on this machine.")
    Integer listen;

    /** Operations per column of the ucx demo when --ops is not given. */
    static final long UCX_DEFAULT_OPS = 20_000;
    /** Buffers per column of the GC demo when --ops is not given. */
    static final long GC_DEFAULT_OPS = 50_000;

    static final class FaultNames extends ArrayList<String> {
        FaultNames() {
            for (Fault f : Fault.values()) {
                add(f.option());
            }
        }
    }

    @Override
    public Integer call() {
        if (!transport.equals("injector") && !transport.equals("ucx")) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--transport " + transport
                    + ": give 'injector' (the fault injector, the default) or 'ucx' (two JVMs over UCX)");
        }
        if (!frees.equals("hooks") && !frees.equals("gc")) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--frees " + frees
                    + ": give 'hooks' (the allocator's free hook, the default) or 'gc' (the JVM frees, no hook)");
        }
        if (frees.equals("gc")) {
            if (transport.equals("ucx") || listen != null) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--frees gc runs on the injector alone:"
                        + " leave out --transport ucx and --listen");
            }
            long buffers = spec.commandLine().getParseResult().hasMatchedOption("--ops") ? ops : GC_DEFAULT_OPS;
            Options.positive(spec, "--ops", buffers);
            return GcDemo.run(buffers, seed != null ? seed : new java.util.Random().nextLong(), json);
        }
        if (transport.equals("ucx")) {
            boolean opsGiven = spec.commandLine().getParseResult().hasMatchedOption("--ops");
            long ucxOps = opsGiven ? ops : UCX_DEFAULT_OPS;
            Options.positive(spec, "--ops", ucxOps);
            if (listen != null && (listen < 1 || listen > 65535)) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--listen " + listen
                        + ": give a port in 1..65535");
            }
            return UcxDemo.run(ucxOps, seed != null ? seed : new java.util.Random().nextLong(), json, listen);
        }
        if (listen != null) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--listen " + listen
                    + ": only with --transport ucx");
        }
        EnumSet<Fault> faultSet = Options.faults(spec, faults);
        Options.positive(spec, "--ops", ops);
        Options.threads(spec, threads);
        long runSeed = seed != null ? seed : new java.util.Random().nextLong();
        boolean hooksLost = faultSet.contains(Fault.DROP_HOOKS);
        java.io.PrintStream info = json ? System.err : System.out;
        info.printf("mrcache demo: %,d buffer lifecycles per cache, %d threads, seed %d, faults %s%n", ops,
                threads, runSeed, faultSet.isEmpty() ? "none" : faultSet.stream().map(Fault::option).toList());
        info.printf("Workers share allocations of 64 B to 64 KiB packed like a malloc (several to a page);"
                + " any worker uses any buffer (alone or with its neighbours),%nfrees any buffer nobody uses, and"
                + " whole chunks are unmapped and mapped again with new pages. Each use: acquire keys, the NIC writes"
                + " a pattern%n(locally, or from a peer with the rkey), read it back. Reuse waits for the free hook's"
                + " stage, and first asks the NIC what is still registered.%n%n");
        List<InjectorReport> reports = new ArrayList<>();
        reports.add(run("naive cache (UNSAFE)", Caches.NAIVE, runSeed, faultSet, false, null));
        AtomicReference<MrcacheUnderTest> safe = new AtomicReference<>();
        InjectorReport judged = run(hooksLost ? "mrcache alone" : "mrcache", Caches.MRCACHE, runSeed, faultSet,
                false, safe);
        reports.add(judged);
        if (hooksLost) {
            reports.add(run("mrcache + page-frame check", Caches.MRCACHE_PAGE_FRAME_CHECK, runSeed, faultSet, false,
                    null));
            reports.add(run("mrcache + injector ORACLE", Caches.MRCACHE, runSeed, faultSet, true, null));
        }
        if (json) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("seed", runSeed);
            out.put("faults", faultSet.stream().map(Fault::option).toList());
            List<Object> columns = new ArrayList<>();
            for (InjectorReport r : reports) {
                Map<String, Object> c = new LinkedHashMap<>();
                c.put("cache", r.cache());
                c.put("operations", r.operations());
                c.put("staleWrites", r.staleWrites());
                c.put("corruptedBuffers", r.corruptedBuffers());
                c.put("reusedWhileRegistered", r.reusedWhileRegistered());
                c.put("leakedRegistrations", r.leakedRegistrations());
                c.put("doubleDeregistrations", r.doubleDeregistrations());
                c.put("deregisteredUnderLease", r.deregisteredUnderLease());
                c.put("staleHits", r.staleHits());
                c.put("oracleCaught", r.oracleCaught());
                c.put("writesAfterFree", r.writesAfterFree());
                c.put("remoteRejected", r.remoteRejected());
                c.put("registrations", r.registrations());
                c.put("lifecyclesPerSecond", r.opsPerSecond());
                c.put("coverage", new LinkedHashMap<>(r.coverage()));
                columns.add(c);
            }
            out.put("columns", columns);
            out.put("judged", hooksLost ? "not judged: drop-hooks breaks the precondition" : judged.safe() ? "safe"
                    : "UNSAFE");
            System.out.println(Json.write(out));
            return hooksLost || judged.safe() ? 0 : 1;
        }
        printTable(reports);
        printCoverage(judged);
        explain(faultSet, hooksLost);
        printSavings(safe.get().cache().metrics(), judged, faultSet.contains(Fault.SLOW_REGISTRATION));
        if (hooksLost) {
            System.out.printf("%nNot judged: drop-hooks breaks the cache's precondition (every free announced), so the"
                    + " detectors above show what lost hooks do, not a fault of the cache.%n");
            return 0;
        }
        if (!judged.safe()) {
            System.out.printf("%nFAILED: mrcache's detectors counted %,d violations (stale writes %,d, corrupted %,d,"
                    + " reused while registered %,d, leaked %,d, double deregistrations %,d, deregistered under lease"
                    + " %,d, stale hits %,d, cross-domain writes accepted %,d). Replay: ./mrcache demo --threads 1 --seed %d --ops %d --faults %s%n",
                    judged.violations(), judged.staleWrites(), judged.corruptedBuffers(), judged.reusedWhileRegistered(),
                    judged.leakedRegistrations(), judged.doubleDeregistrations(), judged.deregisteredUnderLease(),
                    judged.staleHits(), judged.crossDomainAccepted(), runSeed, ops, faults);
            return 1;
        }
        System.out.println("\nmrcache: zero on every detector.");
        return 0;
    }

    private InjectorReport run(String label, AddressReuseInjector.CacheFactory factory, long runSeed,
            EnumSet<Fault> faultSet, boolean oracle, AtomicReference<MrcacheUnderTest> keep) {
        (json ? System.err : System.out).println("running " + label + " ...");
        AddressReuseInjector.CacheFactory capturing = (registrar, config) -> {
            var c = factory.create(registrar, config);
            if (keep != null && c instanceof MrcacheUnderTest m) {
                keep.set(m);
            }
            return c;
        };
        return AddressReuseInjector.run(new InjectorConfig(ops, threads, runSeed, faultSet, oracle, false), capturing,
                line -> (json ? System.err : System.out).println("  " + line)).named(label);
    }

    private static void printTable(List<InjectorReport> reports) {
        System.out.println();
        StringBuilder header = new StringBuilder(String.format("%-40s", ""));
        for (InjectorReport r : reports) {
            header.append(String.format(" %28s", r.cache()));
        }
        System.out.println(header);
        row(reports, "operations", InjectorReport::operations);
        System.out.println("detectors (each must be 0):");
        row(reports, "stale writes (ground truth)", InjectorReport::staleWrites);
        row(reports, "corrupted buffers (read back)", InjectorReport::corruptedBuffers);
        row(reports, "reused while registered (I3)", InjectorReport::reusedWhileRegistered);
        row(reports, "leaked registrations", InjectorReport::leakedRegistrations);
        row(reports, "double deregistrations", InjectorReport::doubleDeregistrations);
        row(reports, "deregistered under lease (H2)", InjectorReport::deregisteredUnderLease);
        row(reports, "stale hits served (H1)", InjectorReport::staleHits);
        System.out.println("for information:");
        row(reports, "remaps caught by the page-frame check",
                r -> r.coverage().getOrDefault(AddressReuseInjector.PFN_CAUGHT, 0L));
        row(reports, "stale hits caught by the ORACLE", InjectorReport::oracleCaught);
        row(reports, "writes after free (peer, no victim)", InjectorReport::writesAfterFree);
        row(reports, "remote writes rejected (dead key)", InjectorReport::remoteRejected);
        row(reports, "acquires failed (injected ENOMEM)", InjectorReport::registrationErrors);
        row(reports, "registrations", InjectorReport::registrations);
        row(reports, "throughput (lifecycles/s)", r -> Math.round(r.opsPerSecond()));
    }

    private static void row(List<InjectorReport> reports, String label, ToLongFunction<InjectorReport> value) {
        Columns.row(reports, label, value, 40, 28);
    }

    private static void printCoverage(InjectorReport r) {
        System.out.printf("%nHazards exercised in %s's run (a hazard met zero times is not tested by this run):%n",
                r.cache());
        for (String hazard : AddressReuseInjector.COVERAGE) {
            long n = r.coverage().getOrDefault(hazard, 0L);
            System.out.printf("  %-44s %,14d%s%n", hazard, n, n == 0 ? "   NOT EXERCISED" : "");
        }
    }

    private static void explain(EnumSet<Fault> faultSet, boolean hooksLost) {
        System.out.println("\nThe naive cache maps (address, length) to a registration and never hears of frees:"
                + " after reuse it hands out keys to the old pages, so the NIC's writes miss the new buffer.");
        System.out.println("mrcache invalidates on every free hook and the allocator reuses a range only when the"
                + " invalidation's stage completes: old keys are dead at the NIC before the addresses come back.");
        if (hooksLost) {
            System.out.println("\ndrop-hooks breaks that precondition: 5% of frees and unmaps never reach the cache."
                    + " 'mrcache alone' then serves registrations older than the free (stale hits) and the allocator"
                    + " reuses bytes still registered. 'mrcache + page-frame check' is the library's own defense: it"
                    + " compares the page frames behind each hit with those recorded at registration"
                    + " (/proc/self/pagemap) and re-registers on a change, so NIC writes reach the buffer's current"
                    + " pages; a free whose memory stayed mapped keeps its pages, which it cannot (and need not) see,"
                    + " so stale hits on unchanged pages remain. The last column is the injector's ORACLE (its ground"
                    + " truth), not a defense the library has. Better than any check: free through InvalidatingArena"
                    + " (no window), or let the userfaultfd UnmapMonitor announce unmaps.");
        }
    }

    private static void printSavings(MetricsSnapshot m, InjectorReport judged, boolean slowRegistration) {
        SimulatedHca hca = new SimulatedHca();
        RegistrationCostModel model = RegistrationCalibrator.calibrate(SimulatedRegistrar.onNewDomain(hca),
                "the simulated HCA (real mlock pinning)", RegistrationCalibrator.DEFAULT_SIZES, 20, line -> { });
        NetworkModel net = new NetworkModel(400, 0.8, 1, 2e-6);
        Savings.Run run = Savings.forRun(m, model, net, 0);
        System.out.printf("%nCost model for mrcache's run (registration cost %s: register %s):%n", model.source(),
                model.register());
        System.out.printf("  hit ratio %.1f%%; registrations avoided %,d; registration time saved %.3f s, %.1f%% of"
                + " the no-cache time for these messages on a 400 Gb/s link (efficiency 0.8, 2 us latency)%n",
                m.hitRatio() * 100, run.registrationsAvoided(), run.secondsSaved(), run.shareSaved() * 100);
        System.out.printf("  the run's %,d registrations: model %.3f s, measured %.3f s (error %+.0f%%%s)%n",
                judged.registrations(), run.predictedRegistrationSeconds(), run.measuredRegistrationSeconds(),
                run.predictionError() * 100, slowRegistration ? "; the measured time includes the injected 20 us of"
                        + " slow-registration per call" : "");
    }
}
