package io.mrcache.core;

import io.mrcache.core.testing.RecordingRegistrar;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * For the model-checking tests' I1 and I3 checks: a registrar over a {@link RecordingRegistrar} that numbers
 * every registration by when it began (a sequence taken before the registrar's own work).
 */
class StartRecordingRegistrar extends ForwardingRegistrar {
    private final AtomicLong sequence = new AtomicLong();
    private final ConcurrentHashMap<Long, Long> began = new ConcurrentHashMap<>();
    private final RecordingRegistrar recording;

    StartRecordingRegistrar(RecordingRegistrar recording) {
        super(recording);
        this.recording = recording;
    }

    @Override
    public Registration register(long address, long length, int access) {
        long s = sequence.incrementAndGet(); // begun: before the registrar's own work
        Registration r = super.register(address, length, access);
        began.put(r.handle(), s);
        return r;
    }

    /** The sequence now: a registration that began later has a larger number. */
    long now() {
        return sequence.get();
    }

    /** When {@code r}, which this registrar returned, began. */
    long began(Registration r) {
        return began.get(r.handle());
    }

    /** The live registrations overlapping [from, to) that began at or before {@code s}. */
    List<Registration> liveBegunBy(long s, long from, long to) {
        List<Registration> found = new ArrayList<>();
        for (Registration live : recording.live()) {
            // a registration whose start is not recorded yet is between the registrar's return and began.put: one
            // in flight since before s would have been waited for (doomed, an invalidation's stage waits for its
            // settlement, which comes after began.put), so it began after (stress mode found a check that
            // counted it as before)
            if (live.address() < to && live.end() > from && began.getOrDefault(live.handle(), Long.MAX_VALUE) <= s) {
                found.add(live);
            }
        }
        return found;
    }
}
