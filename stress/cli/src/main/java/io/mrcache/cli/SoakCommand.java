package io.mrcache.cli;

import io.mrcache.stress.injector.AddressReuseInjector;
import io.mrcache.stress.injector.Caches;
import io.mrcache.stress.injector.Fault;
import io.mrcache.stress.injector.InjectorConfig;
import io.mrcache.stress.injector.InjectorReport;
import java.util.EnumSet;
import java.util.concurrent.Callable;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Volume: the address-reuse injector on mrcache alone for many buffer lifecycles, with progress, the same
 * detectors and the same verdict as the demo; stops at the first violation.
 */
@Command(name = "soak", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Run the address-reuse injector on mrcache alone for many buffer lifecycles (default 10^8).",
            "Every fault is on; progress every 10 s, then the detectors, the hazards exercised and the rate."},
        exitCodeListHeading = "%nExit status:%n",
        exitCodeList = {"0:zero on every detector", "1:a detector counted (the seed and a replay command are printed)",
            "2:invalid options"})
final class SoakCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--lifecycles", defaultValue = "100000000", description = "Buffer lifecycles (default ${DEFAULT-VALUE}).")
    long lifecycles;

    @Option(names = "--threads", defaultValue = "2", description = "Worker threads (default ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--seed", converter = Options.SeedConverter.class,
            description = "Seed, decimal or 0x hex as printed (default: random, printed).")
    Long seed;

    @Option(names = "--faults", defaultValue = "all", description = "Comma list of faults (see demo; default ${DEFAULT-VALUE}).")
    String faults;

    @Option(names = "--pinning", defaultValue = "account",
            description = "mlock: pin every registration with mlock as the demo does; account (default): count pins"
                    + " without mlock, which otherwise bounds the rate. The detectors are the same either way.")
    String pinning;

    @Option(names = "--slow-every", defaultValue = "32",
            description = "slow-registration makes one registration in this many (at random) 20 us slower"
                    + " (default ${DEFAULT-VALUE}; 1 makes every one slow, as the demo does: the spin is CPU time and"
                    + " then bounds the rate).")
    int slowEvery;

    @Override
    public Integer call() {
        EnumSet<Fault> faultSet = Options.faults(spec, faults);
        Options.positive(spec, "--lifecycles", lifecycles);
        Options.threads(spec, threads);
        Options.positive(spec, "--slow-every", slowEvery);
        if (!pinning.equals("mlock") && !pinning.equals("account")) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--pinning " + pinning
                    + ": must be mlock or account");
        }
        long runSeed = seed != null ? seed : new java.util.Random().nextLong();
        System.out.printf("mrcache soak: %,d buffer lifecycles, %d threads, seed %d, faults %s, pinning %s%s%n",
                lifecycles, threads, runSeed, faultSet.stream().map(Fault::option).toList(), pinning,
                faultSet.contains(Fault.SLOW_REGISTRATION) ? ", slow registration 1 in " + slowEvery : "");
        AtomicLong lines = new AtomicLong();
        InjectorReport r = AddressReuseInjector.run(new InjectorConfig(lifecycles, threads, runSeed, faultSet, false,
                true, pinning.equals("account"), slowEvery),
                faultSet.contains(Fault.TWO_TENANTS) ? Caches.TWO_TENANTS : Caches.MRCACHE, line -> {
                    if (lines.incrementAndGet() % 10 == 0) {
                        System.out.println("  " + line);
                    }
                });
        System.out.printf("%n%,d lifecycles in %.0f s: %,.0f lifecycles/s%n", r.operations(), r.seconds(),
                r.opsPerSecond());
        System.out.printf("detectors: stale writes %,d, corrupted buffers %,d, reused while registered %,d, leaked %,d,"
                + " double deregistrations %,d, deregistered under lease %,d, stale hits %,d%s%n", r.staleWrites(),
                r.corruptedBuffers(), r.reusedWhileRegistered(), r.leakedRegistrations(), r.doubleDeregistrations(),
                r.deregisteredUnderLease(), r.staleHits(), faultSet.contains(Fault.TWO_TENANTS)
                        ? String.format(", cross-domain writes accepted %,d", r.crossDomainAccepted()) : "");
        System.out.println("hazards exercised:");
        for (String hazard : AddressReuseInjector.COVERAGE) {
            long n = r.coverage().getOrDefault(hazard, 0L);
            System.out.printf("  %-44s %,16d%s%n", hazard, n, n == 0 ? "   NOT EXERCISED" : "");
        }
        if (faultSet.contains(Fault.TWO_TENANTS)) {
            for (String hazard : List.of(AddressReuseInjector.CROSS_DOMAIN_REJECTED,
                    AddressReuseInjector.CROSS_TENANT_EVICTIONS)) {
                long n = r.coverage().getOrDefault(hazard, 0L);
                System.out.printf("  %-44s %,16d%s%n", hazard, n, n == 0 ? "   NOT EXERCISED" : "");
            }
        }
        if (faultSet.contains(Fault.SLOW_REGISTRATION)) {
            System.out.printf("registrations slowed by 20 us: %,d of %,d%n",
                    r.coverage().getOrDefault(AddressReuseInjector.SLOWED, 0L),
                    r.coverage().getOrDefault(AddressReuseInjector.REGISTRATIONS, 0L));
        }
        System.out.printf("acquires served from the cache (hits): %,d; registrations made: %,d%n",
                r.coverage().getOrDefault(AddressReuseInjector.HITS, 0L),
                r.coverage().getOrDefault(AddressReuseInjector.REGISTRATIONS, 0L));
        if (!r.safe()) {
            System.out.printf("FAILED after %,d lifecycles. Replay: ./mrcache soak --threads 1 --seed %d --lifecycles"
                    + " %d --faults %s --pinning %s --slow-every %d%n", r.operations(), runSeed, lifecycles, faults, pinning,
                    slowEvery);
            return 1;
        }
        System.out.println("mrcache: zero on every detector.");
        return 0;
    }
}
