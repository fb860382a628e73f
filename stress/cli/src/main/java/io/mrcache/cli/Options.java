package io.mrcache.cli;

import io.mrcache.stress.injector.Fault;
import java.util.EnumSet;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/** Checks of the options several commands share; each error names the option, in its own units, and the value. */
final class Options {
    private Options() {
    }

    static EnumSet<Fault> faults(CommandSpec spec, String list) {
        try {
            return Fault.parse(list);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--faults '" + list + "': " + e.getMessage());
        }
    }

    static void positive(CommandSpec spec, String option, long value) {
        if (value <= 0) {
            throw new CommandLine.ParameterException(spec.commandLine(), option + " " + value + ": must be > 0");
        }
    }

    static void threads(CommandSpec spec, int threads) {
        if (threads < 1 || threads > 64) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--threads " + threads
                    + ": must be in 1..64");
        }
    }

    /** Seeds as the project prints them: decimal, or 0x hex (up to 16 digits, the full unsigned range). */
    static final class SeedConverter implements CommandLine.ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            String v = value.trim();
            try {
                if (v.startsWith("0x") || v.startsWith("0X")) {
                    return Long.parseUnsignedLong(v.substring(2), 16);
                }
                if (v.startsWith("-0x") || v.startsWith("-0X")) {
                    return -Long.parseUnsignedLong(v.substring(3), 16);
                }
                return Long.parseLong(v);
            } catch (NumberFormatException e) {
                throw new CommandLine.TypeConversionException("'" + value + "' is not a seed: give a decimal number or"
                        + " 0x followed by up to 16 hex digits");
            }
        }
    }
}
