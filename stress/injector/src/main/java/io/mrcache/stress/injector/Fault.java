package io.mrcache.stress.injector;

import java.util.EnumSet;
import java.util.Locale;

/** The faults the injector can switch on, each seeded from the run's seed. */
public enum Fault {
    /** The allocator hands out the most recently freed range first (as caching allocators do). */
    IMMEDIATE_REUSE("immediate-reuse"),
    /** Free hooks reach the cache some operations after the free; safe reuse still waits for them. */
    DELAYED_HOOKS("delayed-hooks"),
    /**
     * 5% of chunk mappings are memory the JVM never hears about: none of their frees and not their unmap reach
     * the cache. Breaks the cache's precondition; shows what lost hooks do and what a check on hit catches.
     */
    DROP_HOOKS("drop-hooks"),
    /** Each registration takes 20 us more, widening the register-vs-free race (H4) and single flight. */
    SLOW_REGISTRATION("slow-registration"),
    /** 2% of registrations fail with ENOMEM. */
    FAILING_REGISTRATION("failing-registration"),
    /** 1% of deregistrations fail with EBUSY (the key stays live until the cache's retry succeeds). */
    FAILING_DEREGISTRATION("failing-deregistration"),
    /** The safe cache's budget is 8 regions, far below the working set: constant eviction. */
    EVICTION_PRESSURE("eviction-pressure"),
    /** Peers keep writing with rkeys of buffers already freed. */
    STALE_REMOTE_KEYS("stale-remote-keys"),
    /**
     * Not a fault but a setup, named like one: two caches (tenants) in two protection domains share one pinned-memory
     * limit, each buffer going to one of them by its address, each free to both; every remote write is also tried
     * with the key in the other domain, which the NIC must reject (I7). Must be named: {@code all} leaves it out.
     */
    TWO_TENANTS("two-tenants");

    private final String option;

    Fault(String option) {
        this.option = option;
    }

    public String option() {
        return option;
    }

    /**
     * Parses a comma list of fault names; {@code none} for none; {@code all} for every fault that keeps the
     * cache's precondition (every free is announced), that is all but {@code drop-hooks}, which must be named:
     * it shows what happens when the precondition is broken; and not {@code two-tenants}, a setup rather than a
     * fault, named when wanted.
     *
     * @throws IllegalArgumentException naming an unknown fault and listing the known ones
     */
    public static EnumSet<Fault> parse(String list) {
        EnumSet<Fault> faults = EnumSet.noneOf(Fault.class);
        if (list.isBlank()) {
            throw new IllegalArgumentException("no fault named; say 'none' for no faults, or list them: " + known());
        }
        for (String raw : list.split(",", -1)) {
            String name = raw.trim().toLowerCase(Locale.ROOT);
            if (name.isEmpty()) {
                throw new IllegalArgumentException("an empty name in the list (a stray or trailing comma); known: "
                        + known() + ", all, none");
            }
            if (name.equals("none")) {
                continue;
            }
            if (name.equals("all")) {
                faults.addAll(EnumSet.complementOf(EnumSet.of(DROP_HOOKS, TWO_TENANTS)));
                continue;
            }
            Fault found = null;
            for (Fault f : values()) {
                if (f.option.equals(name)) {
                    found = f;
                }
            }
            if (found == null) {
                throw new IllegalArgumentException("unknown fault '" + raw.trim() + "'; known: " + known() + ", all, none");
            }
            faults.add(found);
        }
        return faults;
    }

    public static String known() {
        StringBuilder sb = new StringBuilder();
        for (Fault f : values()) {
            sb.append(sb.isEmpty() ? "" : ", ").append(f.option);
        }
        return sb.toString();
    }
}
