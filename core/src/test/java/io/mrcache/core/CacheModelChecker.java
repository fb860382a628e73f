package io.mrcache.core;

import io.mrcache.core.testing.RecordingRegistrar;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletionStage;

/**
 * Runs one random operation sequence against a real {@link RegistrationCache} (over a
 * {@link RecordingRegistrar}) and checks, after every step, invariants I1 to I6 and the ledger (I4) against
 * a simple reference model: an invalidation log, the leases the model holds, and the registrar's ledger.
 *
 * <p>A sequence is generated from a seed, so the seed replays it; a failing sequence is shrunk by removing
 * operations while it still fails.
 */
final class CacheModelChecker {
    static final long PAGE = 4096;
    static final long BASE = 0x40_0000;
    static final int SPACE_PAGES = 12;
    static final int[] ACCESSES = {Access.LOCAL_READ, Access.LOCAL_WRITE, Access.LOCAL_READ | Access.LOCAL_WRITE,
        Access.REMOTE_READ, Access.REMOTE_WRITE | Access.LOCAL_WRITE,
        Access.REMOTE_READ | Access.REMOTE_WRITE | Access.LOCAL_WRITE};

    enum Kind {
        ACQUIRE, RELEASE, INVALIDATE, EVICT, CLOSE, BAD_INPUT
    }

    /** One step; {@code pick} chooses among held leases, so a step stays meaningful when others are removed. */
    record Op(Kind kind, long address, long length, int access, int pick) {
        @Override
        public String toString() {
            return switch (kind) {
                case ACQUIRE -> String.format("acquire(0x%x, %d, %s)", address, length, Access.describe(access));
                case RELEASE -> "release(held #" + pick + ")";
                case INVALIDATE -> String.format("invalidate(0x%x, %d)", address, length);
                case EVICT -> "evictIdle()";
                case CLOSE -> "closeAsync()";
                case BAD_INPUT -> String.format("acquire(0x%x, %d, %s) [bad input]", address, length,
                        Access.describe(access));
            };
        }
    }

    /** How a sequence's cache is configured. */
    record Config(Budget budget, MergePolicy merge) {
    }

    static Config config(Random rnd) {
        Budget budget = switch (rnd.nextInt(4)) {
            case 0 -> Budget.UNLIMITED;
            case 1 -> new Budget(Long.MAX_VALUE, 1 + rnd.nextInt(4));
            case 2 -> Budget.ofBytes((2 + rnd.nextInt(6)) * PAGE);
            default -> new Budget((3 + rnd.nextInt(6)) * PAGE, 2 + rnd.nextInt(3));
        };
        return new Config(budget, MergePolicy.values()[rnd.nextInt(MergePolicy.values().length)]);
    }

    static List<Op> ops(Random rnd, int count) {
        List<Op> ops = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int k = rnd.nextInt(100);
            long address = BASE + rnd.nextInt(SPACE_PAGES) * PAGE + (rnd.nextBoolean() ? 0 : rnd.nextInt((int) PAGE));
            long length = rnd.nextBoolean() ? (1 + rnd.nextInt(3)) * PAGE : 1 + rnd.nextInt((int) (3 * PAGE));
            Kind kind;
            if (k < 45) {
                kind = Kind.ACQUIRE;
            } else if (k < 75) {
                kind = Kind.RELEASE;
            } else if (k < 90) {
                kind = Kind.INVALIDATE;
            } else if (k < 95) {
                kind = Kind.EVICT;
            } else if (k < 98) {
                kind = Kind.BAD_INPUT;
            } else {
                kind = Kind.CLOSE;
            }
            if (kind == Kind.BAD_INPUT) {
                length = -rnd.nextInt(3); // 0 or negative
            }
            ops.add(new Op(kind, address, length, ACCESSES[rnd.nextInt(ACCESSES.length)], rnd.nextInt(1 << 20)));
        }
        return ops;
    }

    /** Runs the sequence; returns null when every check held, else what failed. */
    static String run(Config config, List<Op> ops, RegistrationCache.Fault... faults) {
        try {
            new Execution(config, faults).run(ops);
            return null;
        } catch (AssertionError | RuntimeException e) {
            return e.toString();
        }
    }

    /** Removes operations one at a time while the sequence still fails; returns the shortest found. */
    static List<Op> shrink(Config config, List<Op> failing, RegistrationCache.Fault... faults) {
        List<Op> current = new ArrayList<>(failing);
        boolean progress = true;
        while (progress) {
            progress = false;
            for (int i = current.size() - 1; i >= 0; i--) {
                List<Op> candidate = new ArrayList<>(current);
                candidate.remove(i);
                if (run(config, candidate, faults) != null) {
                    current = candidate;
                    progress = true;
                }
            }
        }
        return current;
    }

    /** One run: the cache, the registrar, and the reference model. */
    private static final class Execution {
        private final Config config;
        private final RecordingRegistrar registrar = new RecordingRegistrar(7, false);
        private final RegistrationCache cache;
        private final List<Lease> held = new ArrayList<>();
        /** Invalidation log: [from, to) and the sequence number it got. */
        private final List<long[]> invalidations = new ArrayList<>();
        /** For each registration (by handle): how many invalidations had begun when it was registered. */
        private final Map<Long, Integer> registeredAtSeq = new HashMap<>();
        /** Remote requests made: "address/length/access". */
        private final Set<String> remoteRequests = new HashSet<>();
        /** Invalidation stages not yet seen complete, with the registrations they must wait for. */
        private final List<Awaited> awaited = new ArrayList<>();
        private boolean closed;
        private CompletionStage<Void> closing;

        private record Awaited(String what, CompletionStage<Void> stage, List<Registration> mustDie) {
        }

        Execution(Config config, RegistrationCache.Fault... faults) {
            this.config = config;
            this.cache = RegistrationCache.builder(registrar).budget(config.budget()).mergePolicy(config.merge())
                    .faults(faults).build();
            registrar.onDeregister(reg -> {
                for (Lease l : held) {
                    check(l.registration() != reg, "I2: deregister of " + reg + " while a lease on it is held");
                }
            });
            registrar.duringRegister(() -> { });
        }

        void run(List<Op> ops) {
            for (Op op : ops) {
                step(op);
                checkAll(op);
            }
            // wind down: release everything, close, and the ledger must balance (I4)
            while (!held.isEmpty()) {
                held.remove(held.size() - 1).close();
            }
            CompletionStage<Void> done = cache.closeAsync();
            checkAll(null);
            check(done.toCompletableFuture().isDone(), "I4: close did not complete after every lease was released");
            registrar.assertBalanced();
            check(cache.pinnedBytes() == 0, "I4: pinned bytes " + cache.pinnedBytes() + " after close");
            check(cache.retiringCount() == 0, "retired regions left in the retiring index: " + cache.retiringCount());
        }

        private void step(Op op) {
            switch (op.kind()) {
                case ACQUIRE -> acquire(op);
                case RELEASE -> {
                    if (!held.isEmpty()) {
                        held.remove(op.pick() % held.size()).close();
                    }
                }
                case INVALIDATE -> {
                    long from = op.address();
                    long to = from + op.length();
                    invalidations.add(new long[] {from, to});
                    List<Registration> mustDie = new ArrayList<>();
                    for (Registration r : registrar.live()) {
                        if (r.address() < to && r.end() > from) {
                            mustDie.add(r);
                        }
                    }
                    awaited.add(new Awaited(op.toString(), cache.invalidate(from, op.length()), mustDie));
                }
                case EVICT -> cache.evictIdle();
                case CLOSE -> {
                    closing = cache.closeAsync();
                    List<Registration> all = registrar.live();
                    awaited.add(new Awaited(op.toString(), closing, all));
                    closed = true;
                }
                case BAD_INPUT -> {
                    int registered = registrar.registerCount();
                    int regions = cache.regionCount();
                    try {
                        cache.acquire(op.address(), op.length(), op.access());
                        throw new AssertionError("bad input accepted: " + op);
                    } catch (IllegalArgumentException expected) {
                        check(registrar.registerCount() == registered && cache.regionCount() == regions,
                                "bad input changed the cache: " + op);
                    }
                }
            }
        }

        private void acquire(Op op) {
            int registeredBefore = registrar.registerCount();
            Lease lease;
            try {
                lease = cache.acquire(op.address(), op.length(), op.access());
            } catch (IllegalStateException e) {
                check(closed, "acquire failed on an open cache: " + e);
                return;
            }
            check(!closed, "acquire succeeded on a closed cache");
            if (Access.isRemote(op.access())) {
                remoteRequests.add(op.address() + "/" + op.length() + "/" + op.access());
            }
            for (Registration r : registrar.live()) {
                registeredAtSeq.putIfAbsent(r.handle(), invalidations.size());
            }
            // newly registered this step: registered after every invalidation so far
            check(registrar.registerCount() - registeredBefore <= 1, "more than one registration for one miss");
            Registration reg = lease.registration();
            held.add(lease);
            // I1: no invalidation logged after the registration may overlap it
            check(registrar.isLive(reg), "I1/I2: lease on a deregistered registration " + reg);
            int seq = registeredAtSeq.get(reg.handle());
            for (int i = seq; i < invalidations.size(); i++) {
                long[] inv = invalidations.get(i);
                check(!(reg.address() < inv[1] && reg.end() > inv[0]),
                        "I1: stale hit " + reg + " overlaps invalidation #" + i + " made after it was registered");
            }
            // I6: covers the request with the rights; remote exposure exactly as requested
            long end = op.address() + op.length();
            check(reg.address() <= op.address() && reg.end() >= end, "I6: " + reg + " does not cover " + op);
            check(Access.includes(reg.access(), op.access()), "I6: " + reg + " lacks rights of " + op);
            if (Access.isRemote(op.access()) || Access.isRemote(reg.access())) {
                check((reg.access() & Access.REMOTE_MASK) == (op.access() & Access.REMOTE_MASK),
                        "I6: remote rights of " + reg + " differ from " + op);
                check(remoteRequests.contains(reg.address() + "/" + reg.length() + "/" + reg.access()),
                        "I6: remote " + reg + " is not exactly one request's range and rights");
            }
        }

        private void checkAll(Op after) {
            String where = after == null ? "at the end" : "after " + after;
            // I3: a completed stage means every registration it covered is dead, and vice versa
            for (var it = awaited.iterator(); it.hasNext();) {
                Awaited a = it.next();
                boolean allDead = a.mustDie().stream().noneMatch(registrar::isLive);
                boolean done = a.stage().toCompletableFuture().isDone();
                check(!done || allDead, "I3: " + a.what() + " completed while an overlapping registration lives, "
                        + where);
                check(!allDead || done, "I3: " + a.what() + " did not complete though all it covered is dead, "
                        + where);
                if (done) {
                    it.remove();
                }
            }
            // ledger: the cache's accounting matches the registrar's
            long pinned = 0;
            List<Registration> live = registrar.live();
            for (Registration r : live) {
                pinned += alignUp(r.end()) - (r.address() & -PAGE);
            }
            check(cache.pinnedBytes() == pinned, "ledger: cache pins " + cache.pinnedBytes() + ", registrar "
                    + pinned + ", " + where);
            check(registrar.violations().isEmpty(), "ledger: " + registrar.violations());
            // I5: over budget only while every registration is leased
            Budget b = config.budget();
            if (b.exceededBy(pinned, live.size())) {
                for (Registration r : live) {
                    check(held.stream().anyMatch(l -> l.registration() == r),
                            "I5: over budget (" + pinned + " bytes, " + live.size() + " regions) with idle " + r
                                    + " not evicted, " + where);
                }
            }
        }

        private static long alignUp(long a) {
            return (a + PAGE - 1) & -PAGE;
        }

        private static void check(boolean ok, String message) {
            if (!ok) {
                throw new AssertionError(message);
            }
        }
    }
}
