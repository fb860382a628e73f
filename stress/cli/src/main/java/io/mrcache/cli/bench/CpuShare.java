package io.mrcache.cli.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * How much of the machine's CPU other processes took while a benchmark ran: the machine's busy time
 * ({@code /proc/stat}) less this process's and its waited-for children's ({@code /proc/self/stat}), both in
 * the kernel's USER_HZ ticks (100 per second), over the wall time and the processor count. A repeat that
 * another process took more than {@link #DISTURBED_ABOVE} of the machine from is flagged and left out of
 * the medians, on both sides alike.
 */
public record CpuShare(long machineBusyTicks, long ownTicks, long nanos) {
    /** A tenth of the machine: on 2 cores, a fifth of one core taken by someone else. */
    public static final double DISTURBED_ABOVE = 0.10;
    private static final double TICKS_PER_SECOND = 100;

    /** Now; {@code null} where {@code /proc} cannot be read (then no repeat is flagged). */
    public static CpuShare now() {
        try {
            String[] cpu = Files.readAllLines(Path.of("/proc/stat")).getFirst().trim().split("\\s+");
            long busy = 0;
            for (int i = 1; i < cpu.length && i <= 8; i++) {
                if (i != 4 && i != 5) { // idle and iowait are not busy
                    busy += Long.parseLong(cpu[i]);
                }
            }
            String self = Files.readString(Path.of("/proc/self/stat"));
            String[] f = self.substring(self.lastIndexOf(')') + 2).trim().split("\\s+");
            // after the command name: state is field 0, utime 11, stime 12, cutime 13, cstime 14
            long own = Long.parseLong(f[11]) + Long.parseLong(f[12]) + Long.parseLong(f[13]) + Long.parseLong(f[14]);
            return new CpuShare(busy, own, System.nanoTime());
        } catch (IOException | RuntimeException e) {
            return new CpuShare(-1, -1, System.nanoTime());
        }
    }

    /** The share of the machine other processes used since {@code before}: 0 to 1, NaN when unknown. */
    public double othersSince(CpuShare before) {
        double capacity = capacitySince(before);
        return Double.isNaN(capacity) || capacity <= 0 ? Double.NaN : Math.max(0, othersTicksSince(before) / capacity);
    }

    /** Ticks the machine was busy since {@code before} with work not this process's or its children's. */
    private long othersTicksSince(CpuShare before) {
        return (machineBusyTicks - before.machineBusyTicks) - (ownTicks - before.ownTicks);
    }

    /** Ticks the machine's processors had since {@code before}; NaN when {@code /proc} could not be read. */
    private double capacitySince(CpuShare before) {
        if (machineBusyTicks < 0 || before.machineBusyTicks < 0) {
            return Double.NaN;
        }
        return (nanos - before.nanos) / 1e9 * TICKS_PER_SECOND * Runtime.getRuntime().availableProcessors();
    }

    /**
     * Other processes' share over several intervals together (one side's rows of a repeat, which alternate
     * with the other side's): their ticks over the processors' ticks, summed over the intervals.
     */
    public static final class Tally {
        private long othersTicks;
        private double capacity;
        private boolean unknown;

        public void add(CpuShare before, CpuShare after) {
            double c = after.capacitySince(before);
            if (Double.isNaN(c)) {
                unknown = true;
            } else {
                othersTicks += after.othersTicksSince(before);
                capacity += c;
            }
        }

        /** 0 to 1; NaN when an interval could not be read, or there was none. */
        public double share() {
            return unknown || capacity <= 0 ? Double.NaN : Math.max(0, othersTicks / capacity);
        }
    }

    public static boolean disturbed(double othersShare) {
        return othersShare > DISTURBED_ABOVE;
    }
}
