package io.mrcache.cli;

import io.mrcache.ucx.transport.UcxPeer;
import java.net.ConnectException;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** The peer of {@code demo --transport ucx --listen PORT}, started by hand (on this machine or another). */
@Command(name = "ucx-peer", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Serve an owner started with './mrcache demo --transport ucx --listen PORT': connect, then do the",
            "RDMA writes and reads it asks for through jucx, one run per column (--runs)."},
        exitCodeListHeading = "%nExit status:%n",
        exitCodeList = {"0:every run was served to its end", "1:a run failed (the message says why)",
            "2:invalid options"})
final class UcxPeerCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--connect", required = true, paramLabel = "HOST:PORT",
            description = "The owner's address, as its demo printed it.")
    String connect;

    @Option(names = "--runs", defaultValue = "3", description = "Runs to serve (default ${DEFAULT-VALUE}: the demo's"
            + " three columns).")
    int runs;

    @Override
    public Integer call() throws Exception {
        int colon = connect.lastIndexOf(':');
        int port = -1;
        try {
            port = colon > 0 ? Integer.parseInt(connect.substring(colon + 1)) : -1;
        } catch (NumberFormatException e) {
            // reported below
        }
        if (port < 1 || port > 65535) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--connect " + connect
                    + ": give HOST:PORT, a port in 1..65535 (as the owner's demo printed it)");
        }
        Options.positive(spec, "--runs", runs);
        String host = connect.substring(0, colon);
        for (int run = 1; run <= runs; run++) {
            long deadline = System.nanoTime() + 60_000_000_000L;
            for (;;) {
                try {
                    long served = UcxPeer.run(host, port, System.err::println);
                    System.out.printf("ucx-peer: run %d of %d: served %,d operations%n", run, runs, served);
                    break;
                } catch (ConnectException e) {
                    if (System.nanoTime() > deadline) {
                        System.err.printf("ucx-peer: no owner listening on %s for 60 s: %s%n", connect, e.getMessage());
                        return 1;
                    }
                    Thread.sleep(200); // the owner opens its port again for each column
                }
            }
        }
        return 0;
    }
}
