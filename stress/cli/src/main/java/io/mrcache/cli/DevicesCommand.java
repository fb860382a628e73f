package io.mrcache.cli;

import io.mrcache.verbs.hooks.MemlockLimit;
import io.mrcache.verbs.ibv.DeviceInfo;
import io.mrcache.verbs.ibv.NoRdmaDeviceException;
import io.mrcache.verbs.ibv.Verbs;
import io.mrcache.verbs.ibv.VerbsUnavailableException;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/** Lists RDMA devices through the real libibverbs, or explains their absence. */
@Command(name = "devices", mixinStandardHelpOptions = true,
        description = "List the RDMA devices (through libibverbs) with their attributes, or explain why there"
                + " are none.",
        exitCodeListHeading = "%nExit status:%n",
        exitCodeList = {"0:at least one RDMA device was listed",
            "3:no RDMA device (or no libibverbs); mrcache then embeds its simulated HCA"})
final class DevicesCommand implements Callable<Integer> {
    static final int NO_DEVICE = 3;

    @Override
    public Integer call() {
        System.out.println(MemlockLimit.read());
        Verbs verbs;
        try {
            verbs = Verbs.load();
        } catch (VerbsUnavailableException e) {
            System.out.println(e.getMessage());
            return NO_DEVICE;
        }
        System.out.println(Verbs.LIBRARY + " loaded; ibv_reg_dmabuf_mr "
                + (verbs.exports("ibv_reg_dmabuf_mr") ? "available" : "missing") + ", ibv_reg_mr_iova2 "
                + (verbs.exports("ibv_reg_mr_iova2") ? "available" : "missing") + ", fork support "
                + verbs.forkState().orElse("unknown"));
        List<DeviceInfo> devices;
        try {
            devices = verbs.queryDevices();
        } catch (NoRdmaDeviceException e) {
            System.out.println(e.getMessage());
            return NO_DEVICE;
        }
        System.out.printf("%-12s %-16s %18s %10s %8s %6s %6s%n", "device", "firmware", "max_mr_size", "max_mr",
                "max_pd", "max_mw", "ports");
        for (DeviceInfo d : devices) {
            System.out.printf("%-12s %-16s %,18d %,10d %,8d %,6d %6d%n", d.name(), d.firmware(), d.maxMrSize(),
                    d.maxMr(), d.maxPd(), d.maxMw(), d.ports());
        }
        return 0;
    }
}
