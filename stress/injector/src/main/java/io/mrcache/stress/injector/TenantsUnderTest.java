package io.mrcache.stress.injector;

import io.mrcache.core.PinnedMemoryLimit;
import io.mrcache.core.TenantMetrics;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Two mrcache caches, tenants of one {@link PinnedMemoryLimit}, each over its own protection domain: a buffer
 * goes to the tenant its start page names (even pages A, odd pages B), and every free reaches both, as an
 * allocator's free hook reaches every cache in a process. The stage of a free completes when both caches' do.
 */
final class TenantsUnderTest implements CacheUnderTest {
    private final String name;
    private final MrcacheUnderTest a;
    private final MrcacheUnderTest b;
    private final PinnedMemoryLimit limit;
    private final long domainA;
    private final long domainB;

    /**
     * @param domainA the protection domain tenant A posts its keys through (its registrar's, unless a proof
     *                says otherwise); likewise {@code domainB}
     */
    TenantsUnderTest(String name, MrcacheUnderTest a, MrcacheUnderTest b, PinnedMemoryLimit limit, long domainA,
            long domainB) {
        this.name = name;
        this.domainA = domainA;
        this.domainB = domainB;
        this.a = a;
        this.b = b;
        this.limit = limit;
    }

    private record TenantHandle(MrcacheUnderTest tenant, Handle inner, long domain) implements Handle {
        @Override
        public int lkey() {
            return inner.lkey();
        }

        @Override
        public int rkey() {
            return inner.rkey();
        }
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Handle acquire(long address, long length, int access) {
        boolean first = ((address >>> 12) & 1) == 0;
        MrcacheUnderTest tenant = first ? a : b;
        return new TenantHandle(tenant, tenant.acquire(address, length, access), first ? domainA : domainB);
    }

    @Override
    public void release(Handle handle) {
        TenantHandle h = (TenantHandle) handle;
        h.tenant().release(h.inner());
    }

    @Override
    public CompletionStage<Void> free(long address, long length) {
        CompletableFuture<Void> first = a.free(address, length).toCompletableFuture();
        CompletableFuture<Void> second = b.free(address, length).toCompletableFuture();
        if (first.isDone() && second.isDone() && !first.isCompletedExceptionally()) {
            return second; // the common case, nothing overlapped: no combined stage to allocate
        }
        return CompletableFuture.allOf(first, second);
    }

    @Override
    public Map<String, Long> coverage() {
        Map<String, Long> out = new LinkedHashMap<>(a.coverage());
        b.coverage().forEach((k, v) -> out.merge(k, v, Long::sum));
        out.put(AddressReuseInjector.CROSS_TENANT_EVICTIONS,
                limit.tenants().stream().mapToLong(TenantMetrics::evictionsSuffered).sum());
        return out;
    }

    /** Both tenants' holdings now (they must add up to at most the limit). */
    List<TenantMetrics> tenants() {
        return limit.tenants();
    }

    @Override
    public void retryFailedDeregistrations() {
        a.retryFailedDeregistrations();
        b.retryFailedDeregistrations();
    }

    @Override
    public void close() {
        try {
            a.close();
        } finally {
            b.close();
        }
    }
}
