package io.mrcache.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code mrcache} command line. */
@Command(name = "mrcache", mixinStandardHelpOptions = true, versionProvider = Main.BuildVersion.class,
        description = "A safe, fast RDMA memory-registration cache for JVM transports.",
        subcommands = {DemoCommand.class, SoakCommand.class, TourCommand.class, CostCommand.class, BenchCommand.class,
            DevicesCommand.class, UcxPeerCommand.class},
        footer = {"", "Run './mrcache <command> --help' for a command's options."})
public final class Main implements Runnable {

    /** The version the build wrote into the jar's manifest ({@code Implementation-Version}). */
    static final class BuildVersion implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = Main.class.getPackage().getImplementationVersion();
            return new String[] {"mrcache " + (v != null ? v : "(not built by Maven: no version in the manifest)"),
                "Java " + Runtime.version()};
        }
    }

    public static void main(String[] args) {
        System.exit(run(args));
    }

    /** Runs the command line and returns its exit status (tests call this). */
    public static int run(String... args) {
        return new CommandLine(new Main()).execute(args);
    }

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }
}
