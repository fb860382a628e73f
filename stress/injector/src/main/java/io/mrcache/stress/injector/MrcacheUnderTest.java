package io.mrcache.stress.injector;

import io.mrcache.core.CacheCounter;
import io.mrcache.core.Lease;
import io.mrcache.core.MetricsSnapshot;
import io.mrcache.core.RegistrationCache;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import io.mrcache.verbs.hooks.PageFrameCheck;
import org.jspecify.annotations.Nullable;

/** mrcache's {@link RegistrationCache} as a {@link CacheUnderTest}. */
public final class MrcacheUnderTest implements CacheUnderTest {
    /** The cache's counters the injector prints as coverage, with their names there. */
    static final Map<String, CacheCounter> COVERAGE = new LinkedHashMap<>();

    static {
        COVERAGE.put(AddressReuseInjector.DOOMED, CacheCounter.DISCARDED_IN_FLIGHT);
        COVERAGE.put(AddressReuseInjector.JOINS, CacheCounter.SINGLE_FLIGHT_JOINS);
        COVERAGE.put(AddressReuseInjector.MERGES, CacheCounter.MERGES);
        COVERAGE.put(AddressReuseInjector.UPGRADES, CacheCounter.ACCESS_UPGRADES);
        COVERAGE.put(AddressReuseInjector.DEFERRED, CacheCounter.DEFERRED_DEREGISTRATIONS);
        COVERAGE.put(AddressReuseInjector.EVICTIONS, CacheCounter.EVICTIONS);
        COVERAGE.put(AddressReuseInjector.WITHDRAWN, CacheCounter.EVICTIONS_WITHDRAWN);
        COVERAGE.put(AddressReuseInjector.DEREG_FAILURES, CacheCounter.DEREGISTRATION_FAILURES);
    }

    private final String name;
    private final RegistrationCache cache;
    private final PageFrameCheck.@Nullable Guard guard;
    private final @Nullable PageFrameCheck check;

    public MrcacheUnderTest(RegistrationCache cache) {
        this("mrcache", cache);
    }

    public MrcacheUnderTest(String name, RegistrationCache cache) {
        this(name, cache, null, null);
    }

    /** mrcache acquiring through the library's page-frame check ({@code guard}, over {@code check}). */
    public MrcacheUnderTest(String name, RegistrationCache cache, PageFrameCheck.@Nullable Guard guard,
            @Nullable PageFrameCheck check) {
        this.name = name;
        this.cache = cache;
        this.guard = guard;
        this.check = check;
    }

    private record LeaseHandle(Lease lease) implements Handle {
        @Override
        public int lkey() {
            return lease.lkey();
        }

        @Override
        public int rkey() {
            return lease.rkey();
        }
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Handle acquire(long address, long length, int access) {
        return new LeaseHandle(guard == null ? cache.acquire(address, length, access)
                : guard.acquire(address, length, access));
    }

    @Override
    public void release(Handle handle) {
        ((LeaseHandle) handle).lease().close();
    }

    @Override
    public CompletionStage<Void> free(long address, long length) {
        return cache.invalidate(address, length);
    }

    @Override
    public Map<String, Long> coverage() {
        MetricsSnapshot m = cache.metrics();
        Map<String, Long> out = new LinkedHashMap<>();
        COVERAGE.forEach((label, counter) -> out.put(label, m.get(counter)));
        out.put(AddressReuseInjector.HITS, m.get(CacheCounter.HITS));
        if (guard != null) {
            out.put(AddressReuseInjector.PFN_CAUGHT, guard.remapsCaught());
        }
        return out;
    }

    @Override
    public void retryFailedDeregistrations() {
        cache.retryQuarantined();
    }

    public RegistrationCache cache() {
        return cache;
    }

    @Override
    public boolean readsPageFrames() {
        return check != null;
    }

    @Override
    public void close() {
        try {
            cache.close();
        } finally {
            if (check != null) {
                check.close();
            }
        }
    }
}
