package io.mrcache.cli;

import io.mrcache.verbs.hooks.MemlockLimit;
import io.mrcache.verbs.ibv.DeviceInfo;
import io.mrcache.verbs.ibv.NoRdmaDeviceException;
import io.mrcache.verbs.ibv.Verbs;
import io.mrcache.verbs.ibv.VerbsUnavailableException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** Lists RDMA devices through the real libibverbs, or explains their absence. */
@Command(name = "devices", mixinStandardHelpOptions = true,
        description = "List the RDMA devices (through libibverbs) with their attributes, or explain why there"
                + " are none.",
        exitCodeListHeading = "%nExit status:%n",
        exitCodeList = {"0:at least one RDMA device was listed",
            "3:no RDMA device (or no libibverbs): DefaultRegistrar.device() fails here; use simulated() knowingly"})
final class DevicesCommand implements Callable<Integer> {
    static final int NO_DEVICE = 3;

    @Option(names = "--json", description = "Print one JSON object instead of text.")
    boolean json;

    @Override
    public Integer call() {
        if (json) {
            return callJson();
        }
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

    private int callJson() {
        Map<String, Object> out = new LinkedHashMap<>();
        MemlockLimit limit = MemlockLimit.read();
        out.put("memlockSoftBytes", limit.unlimited() ? null : limit.soft());
        try {
            Verbs verbs = Verbs.load();
            out.put("library", Verbs.LIBRARY);
            List<Map<String, Object>> list = new ArrayList<>();
            for (DeviceInfo d : verbs.queryDevices()) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("name", d.name());
                m.put("firmware", d.firmware());
                m.put("maxMrSize", d.maxMrSize());
                m.put("maxMr", d.maxMr());
                m.put("maxPd", d.maxPd());
                m.put("maxMw", d.maxMw());
                m.put("ports", d.ports());
                list.add(m);
            }
            out.put("devices", list);
            System.out.println(Json.write(out));
            return 0;
        } catch (VerbsUnavailableException | NoRdmaDeviceException e) {
            out.put("devices", List.of());
            out.put("error", e.getMessage());
            if (e instanceof NoRdmaDeviceException nd) {
                out.put("errno", nd.errno());
            }
            System.out.println(Json.write(out));
            return NO_DEVICE;
        }
    }
}
