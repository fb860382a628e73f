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
import java.util.List;
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
        description = {"Run the address-reuse fault injector against a naive registration cache and mrcache on",
            "the same seed: buffers are freed and their addresses reused with new pages at once, the NIC writes",
            "into them through the cached keys, and ground truth counts every write that went astray."},
        exitCodeListHeading = "%nExit status:%n",
        exitCodeList = {"0:mrcache showed no stale write, no corrupted buffer and no leak",
            "1:mrcache showed a stale write, a corrupted buffer or a leak (the seed is printed)",
            "2:invalid options"})
final class DemoCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--ops", defaultValue = "300000",
            description = "Buffer lifecycles per cache (default ${DEFAULT-VALUE}, about 30 s in all here).")
    long ops;

    @Option(names = "--threads", defaultValue = "2", description = "Worker threads (default ${DEFAULT-VALUE}; 1 replays"
            + " a seed exactly).")
    int threads;

    @Option(names = "--seed", description = "Seed (default: random, printed).")
    Long seed;

    @Option(names = "--faults", defaultValue = "all",
            description = "Comma list of faults: ${COMPLETION-CANDIDATES}; 'all' is every fault but drop-hooks, which"
                    + " breaks the cache's precondition and must be named; 'none' (default ${DEFAULT-VALUE}).",
            completionCandidates = FaultNames.class)
    String faults;

    @Option(names = "--no-generation-check", description = "Run mrcache without the per-allocation generation check"
            + " (defense in depth against lost free hooks).")
    boolean noGenerationCheck;

    static final class FaultNames extends ArrayList<String> {
        FaultNames() {
            for (Fault f : Fault.values()) {
                add(f.option());
            }
        }
    }

    @Override
    public Integer call() {
        EnumSet<Fault> faultSet;
        try {
            faultSet = Fault.parse(faults);
            new InjectorConfig(ops, threads, 0, faultSet, true); // validates ops and threads
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), "invalid value: " + e.getMessage()
                    + " (--ops, --threads, --faults)");
        }
        long runSeed = seed != null ? seed : new java.util.Random().nextLong();
        System.out.printf("mrcache demo: %,d buffer lifecycles per cache, %d threads, seed %d, faults %s%n", ops,
                threads, runSeed, faultSet.isEmpty() ? "none" : faultSet.stream().map(Fault::option).toList());
        System.out.println("Each lifecycle: allocate (freed addresses come back with new pages), acquire keys, the NIC"
                + " writes a pattern (locally or from a peer with the rkey), read it back, release, free.\n");
        List<InjectorReport> reports = new ArrayList<>();
        reports.add(run("naive cache (UNSAFE)", Caches.NAIVE, runSeed, faultSet, false, null));
        AtomicReference<MrcacheUnderTest> safe = new AtomicReference<>();
        boolean check = !noGenerationCheck;
        if (faultSet.contains(Fault.DROP_HOOKS) && check) {
            reports.add(run("mrcache without generation check", Caches.MRCACHE, runSeed, faultSet, false, null));
        }
        InjectorReport judged = run("mrcache" + (check ? "" : " (no generation check)"), Caches.MRCACHE, runSeed,
                faultSet, check, safe);
        reports.add(judged);
        printTable(reports);
        explain(faultSet, check, reports);
        printSavings(safe.get().cache().metrics(), judged);
        if (!judged.safe()) {
            System.out.printf("%nFAILED: mrcache let %,d stale writes, %,d corrupted buffers and %,d leaked"
                    + " registrations through. Replay: ./mrcache demo --threads 1 --seed %d --ops %d --faults %s%n",
                    judged.staleWrites(), judged.corruptedBuffers(), judged.leakedRegistrations(), runSeed, ops, faults);
            return 1;
        }
        System.out.println("\nmrcache: no stale write, no corrupted buffer, no leaked registration.");
        return 0;
    }

    private InjectorReport run(String label, AddressReuseInjector.CacheFactory factory, long runSeed,
            EnumSet<Fault> faultSet, boolean check, AtomicReference<MrcacheUnderTest> keep) {
        System.out.println("running " + label + " ...");
        AddressReuseInjector.CacheFactory capturing = (registrar, config) -> {
            var c = factory.create(registrar, config);
            if (keep != null) {
                keep.set((MrcacheUnderTest) c);
            }
            return c;
        };
        InjectorReport r = AddressReuseInjector.run(new InjectorConfig(ops, threads, runSeed, faultSet, check),
                capturing, line -> System.out.println("  " + line));
        return new InjectorReport(label, r.operations(), r.staleWrites(), r.writesAfterFree(), r.corruptedBuffers(),
                r.remoteRejected(), r.leakedRegistrations(), r.staleHitsCaught(), r.registrationErrors(),
                r.registrations(), r.seconds());
    }

    private static void printTable(List<InjectorReport> reports) {
        System.out.println();
        StringBuilder header = new StringBuilder(String.format("%-36s", ""));
        for (InjectorReport r : reports) {
            header.append(String.format(" %34s", r.cache()));
        }
        System.out.println(header);
        row(reports, "operations", InjectorReport::operations);
        row(reports, "stale writes (ground truth)", InjectorReport::staleWrites);
        row(reports, "corrupted buffers (read back)", InjectorReport::corruptedBuffers);
        row(reports, "writes after free (peer, no victim)", InjectorReport::writesAfterFree);
        row(reports, "remote writes rejected (dead key)", InjectorReport::remoteRejected);
        row(reports, "leaked registrations", InjectorReport::leakedRegistrations);
        row(reports, "stale hits caught (generation)", InjectorReport::staleHitsCaught);
        row(reports, "acquires failed (registration)", InjectorReport::registrationErrors);
        row(reports, "registrations", InjectorReport::registrations);
        row(reports, "throughput (ops/s)", r -> Math.round(r.opsPerSecond()));
    }

    private static void row(List<InjectorReport> reports, String label, ToLongFunction<InjectorReport> value) {
        StringBuilder sb = new StringBuilder(String.format("%-36s", label));
        for (InjectorReport r : reports) {
            sb.append(String.format(" %,34d", value.applyAsLong(r)));
        }
        System.out.println(sb);
    }

    private static void explain(EnumSet<Fault> faultSet, boolean check, List<InjectorReport> reports) {
        System.out.println("\nThe naive cache maps (address, length) to a registration and never hears of frees: after"
                + " reuse it hands out keys to the old pages, so the NIC's writes miss the new buffer.");
        System.out.println("mrcache invalidates on every free hook and the allocator reuses a range only when the"
                + " invalidation completes: old keys are dead at the NIC before the addresses come back.");
        if (faultSet.contains(Fault.DROP_HOOKS)) {
            System.out.println("\ndrop-hooks breaks that precondition: 5% of frees never reach the cache. Without a"
                    + " check, mrcache then serves the old registration like the naive cache (middle column)."
                    + (check ? " The generation check (each registration remembers the allocation it was made for;"
                            + " a hit for a different allocation is invalidated and retried) catches those stale"
                            + " hits. Keys already given out for a buffer whose free was lost stay alive until then:"
                            + " a peer writing with one reaches only the old, still pinned pages (a write after free),"
                            + " never another buffer." : ""));
        }
    }

    private static void printSavings(MetricsSnapshot m, InjectorReport judged) {
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
        System.out.printf("  the run's %,d registrations: model %.3f s, measured %.3f s (error %+.0f%%; the measured"
                + " time includes injected faults such as slow registration)%n", judged.registrations(),
                run.predictedRegistrationSeconds(), run.measuredRegistrationSeconds(), run.predictionError() * 100);
    }
}
