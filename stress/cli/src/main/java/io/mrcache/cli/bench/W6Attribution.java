package io.mrcache.cli.bench;

import com.google.gson.Gson;
import io.mrcache.core.Access;
import io.mrcache.core.Registrar;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationCache;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.HdrHistogram.Histogram;

/**
 * W6's slow samples, explained: one thread hits 1024 cached regions while another misses against a registrar
 * that takes 20 us, as in the JMH benchmark, but every hit is timed on its own and each one over
 * {@value #SLOW_NANOS} ns is attributed from a JFR recording of the same run (garbage-collection pauses,
 * other safepoints) and from the hitting thread's run-queue wait ({@code /proc/thread-self/schedstat}, read
 * every {@value #BATCH} hits: time the thread was runnable but had no CPU). A sample none of these explain is
 * counted as unexplained: that is where the cache's own code would show.
 *
 * <p>Run in its own JVM ({@code java -cp mrcache.jar io.mrcache.cli.bench.W6Attribution SECONDS}) with the
 * JMH fork's flags; prints one line of JSON.
 */
public final class W6Attribution {
    static final long SLOW_NANOS = 100_000;
    private static final int BATCH = 256;
    private static final int REGIONS = 1024;
    private static final long REGION_BYTES = 64 << 10;
    private static final long BASE = 0x100_0000_0000L;
    private static final long STRIDE = 128 << 10;
    private static final long MISS_BASE = 0x200_0000_0000L;
    private static final int MAX_SLOW = 100_000;

    private W6Attribution() {
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 10;
        System.out.println(new Gson().toJson(run(seconds)));
    }

    /** A registrar that spins for {@code nanos} and registers nothing (W6's slow registrar). */
    private static final class SlowRegistrar implements Registrar {
        private final long nanos;
        private final AtomicInteger keys = new AtomicInteger();

        SlowRegistrar(long nanos) {
            this.nanos = nanos;
        }

        @Override
        public Registration register(long address, long length, int access) {
            long end = System.nanoTime() + nanos;
            while (System.nanoTime() < end) {
                Thread.onSpinWait();
            }
            int key = keys.incrementAndGet();
            return new Registration(address, length, access, key, key, 0, key);
        }

        @Override
        public void deregister(Registration registration) {
        }
    }

    static Map<String, Object> run(double seconds) throws Exception {
        Path jfr = Files.createTempFile("mrcache-w6", ".jfr");
        long[] slowStart = new long[MAX_SLOW];
        long[] slowEnd = new long[MAX_SLOW];
        long[] slowWaitNanos = new long[MAX_SLOW]; // run-queue wait in the sample's batch
        int slow = 0;
        Histogram latency = new Histogram(3);
        try (RegistrationCache cache = RegistrationCache.builder(new SlowRegistrar(20_000)).build();
                Recording recording = new Recording();
                SchedStat sched = SchedStat.open()) {
            for (int i = 0; i < REGIONS; i++) {
                cache.acquire(BASE + i * STRIDE, REGION_BYTES, Access.LOCAL_WRITE).close();
            }
            recording.enable("jdk.GCPhasePause").withThreshold(Duration.ZERO);
            recording.enable("jdk.SafepointBegin").withThreshold(Duration.ZERO);
            recording.enable("jdk.SafepointEnd").withThreshold(Duration.ZERO);
            recording.enable("jdk.Deoptimization");
            AtomicBoolean stop = new AtomicBoolean();
            Thread misser = new Thread(() -> {
                for (long k = 0; !stop.get(); k++) {
                    long a = MISS_BASE + (k & 4095) * STRIDE;
                    cache.acquire(a, REGION_BYTES, Access.LOCAL_WRITE).close();
                    cache.invalidate(a, REGION_BYTES);
                }
            }, "w6-miss");
            misser.start();
            SplittableRandom rnd = new SplittableRandom(42);
            hitFor(cache, rnd, 2_000_000_000L); // warm-up: compiled before anything is recorded
            long nanoAtStart = System.nanoTime();
            Instant instantAtStart = Instant.now();
            recording.start();
            long deadline = System.nanoTime() + (long) (seconds * 1e9);
            long wait = sched.runQueueWaitNanos();
            int batchFirstSlow = 0;
            for (int n = 0; System.nanoTime() < deadline; n++) {
                long t0 = System.nanoTime();
                cache.acquire(BASE + rnd.nextInt(REGIONS) * STRIDE, REGION_BYTES, Access.LOCAL_WRITE).close();
                long t1 = System.nanoTime();
                latency.recordValue(t1 - t0);
                if (t1 - t0 > SLOW_NANOS && slow < MAX_SLOW) {
                    slowStart[slow] = t0 - nanoAtStart;
                    slowEnd[slow] = t1 - nanoAtStart;
                    slow++;
                }
                if ((n & (BATCH - 1)) == BATCH - 1) {
                    long now = sched.runQueueWaitNanos();
                    for (int s = batchFirstSlow; s < slow; s++) {
                        slowWaitNanos[s] = now - wait;
                    }
                    batchFirstSlow = slow;
                    wait = now;
                }
            }
            recording.stop();
            stop.set(true);
            misser.join();
            recording.dump(jfr);
            return attribute(jfr, instantAtStart, slowStart, slowEnd, slowWaitNanos, slow, latency);
        } finally {
            Files.deleteIfExists(jfr);
        }
    }

    private static void hitFor(RegistrationCache cache, SplittableRandom rnd, long nanos) {
        long end = System.nanoTime() + nanos;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1000; i++) {
                cache.acquire(BASE + rnd.nextInt(REGIONS) * STRIDE, REGION_BYTES, Access.LOCAL_WRITE).close();
            }
        }
    }

    /** An interval of the recording, in nanoseconds since the start of the measured run. */
    private record Pause(String what, long from, long to) {
    }

    private static Map<String, Object> attribute(Path jfr, Instant start, long[] from, long[] to, long[] waits,
            int slow, Histogram latency) throws IOException {
        List<Pause> pauses = new ArrayList<>();
        Map<Long, Long> safepointBegins = new LinkedHashMap<>();
        for (RecordedEvent e : RecordingFile.readAllEvents(jfr)) {
            long f = Duration.between(start, e.getStartTime()).toNanos();
            long t = Duration.between(start, e.getEndTime()).toNanos();
            switch (e.getEventType().getName()) {
                case "jdk.GCPhasePause" -> pauses.add(new Pause("GC pause (" + e.getString("name") + ")", f, t));
                case "jdk.SafepointBegin" -> safepointBegins.put(e.getLong("safepointId"), f);
                case "jdk.SafepointEnd" -> {
                    Long b = safepointBegins.get(e.getLong("safepointId"));
                    if (b != null) {
                        pauses.add(new Pause("safepoint", b, t));
                    }
                }
                case "jdk.Deoptimization" -> pauses.add(new Pause("deoptimization", f, Math.max(t, f + 1)));
                default -> {
                }
            }
        }
        // GC pauses are safepoints too: name the GC where both match
        pauses.sort((a, b) -> Boolean.compare(b.what.startsWith("GC"), a.what.startsWith("GC")));
        Map<String, Integer> causes = new LinkedHashMap<>();
        long maxNanos = 0;
        String maxCause = "-";
        long margin = 20_000; // JFR's clock and System.nanoTime are mapped through one Instant: allow 20 us
        for (int s = 0; s < slow; s++) {
            String cause = null;
            for (Pause p : pauses) {
                if (p.from - margin < to[s] && p.to + margin > from[s]) {
                    cause = p.what.startsWith("GC") ? "GC pause" : p.what;
                    break;
                }
            }
            if (cause == null && waits[s] >= (to[s] - from[s]) / 2) {
                cause = "descheduled (runnable, no CPU: the other thread, the JIT, the OS)";
            }
            if (cause == null) {
                cause = "unexplained";
            }
            causes.merge(cause, 1, Integer::sum);
            if (to[s] - from[s] > maxNanos) {
                maxNanos = to[s] - from[s];
                maxCause = cause;
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("hits", latency.getTotalCount());
        out.put("p50Ns", latency.getValueAtPercentile(50));
        out.put("p99Ns", latency.getValueAtPercentile(99));
        out.put("p999Ns", latency.getValueAtPercentile(99.9));
        out.put("maxNs", latency.getMaxValue());
        out.put("slowerThanNs", SLOW_NANOS);
        out.put("slow", slow);
        out.put("causes", causes);
        out.put("maxCause", maxCause);
        return out;
    }

    /** The calling thread's run-queue wait from {@code /proc/thread-self/schedstat}, read without allocating. */
    private static final class SchedStat implements AutoCloseable {
        private final FileChannel channel;
        private final ByteBuffer buffer = ByteBuffer.allocate(128);

        private SchedStat(FileChannel channel) {
            this.channel = channel;
        }

        static SchedStat open() throws IOException {
            return new SchedStat(FileChannel.open(Path.of("/proc/thread-self/schedstat"), StandardOpenOption.READ));
        }

        /** Second field: nanoseconds spent runnable on a run queue. */
        long runQueueWaitNanos() {
            try {
                buffer.clear();
                channel.read(buffer, 0);
                int i = 0;
                while (buffer.get(i) != ' ') {
                    i++;
                }
                long v = 0;
                for (i++; i < buffer.position() && Character.isDigit(buffer.get(i)); i++) {
                    v = v * 10 + (buffer.get(i) - '0');
                }
                return v;
            } catch (IOException e) {
                return 0;
            }
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }

    static String describe(Map<String, Object> r) {
        return String.format(Locale.ROOT, "%d hits timed one by one: p50 %d ns, p99 %d ns, p99.9 %d ns, max %.1f us;"
                + " %d over %d us: %s; the max: %s", n(r, "hits"), n(r, "p50Ns"), n(r, "p99Ns"), n(r, "p999Ns"),
                n(r, "maxNs") / 1e3, n(r, "slow"), SLOW_NANOS / 1000, causes(r.get("causes")), r.get("maxCause"));
    }

    private static long n(Map<String, Object> r, String key) {
        return ((Number) r.get(key)).longValue();
    }

    private static String causes(Object causes) {
        List<String> out = new ArrayList<>();
        if (causes instanceof Map<?, ?> m) {
            m.forEach((k, v) -> out.add(k + " " + ((Number) v).longValue()));
        }
        return out.isEmpty() ? "none" : String.join(", ", out);
    }
}
