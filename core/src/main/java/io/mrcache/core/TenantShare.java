package io.mrcache.core;

import java.util.Objects;

/**
 * What a cache asks of a {@link PinnedMemoryLimit} when it joins it as a tenant
 * ({@link RegistrationCache.Builder#tenant}).
 *
 * @param name           names the tenant in errors, metrics and events; unique among the limit's open caches
 * @param guaranteeBytes pinned bytes the tenant can always reach, however busy the others are: the limit holds
 *                       them back for it, and no other tenant's request evicts it below them
 * @param ceilingBytes   the most the tenant may pin ({@link Long#MAX_VALUE}: up to the limit)
 */
public record TenantShare(String name, long guaranteeBytes, long ceilingBytes) {

    public TenantShare {
        Objects.requireNonNull(name, "name");
        if (name.isBlank()) {
            throw new IllegalArgumentException("a tenant needs a name (it appears in errors and metrics); got a blank one");
        }
        if (guaranteeBytes < 0) {
            throw new IllegalArgumentException("tenant '" + name + "': guarantee " + guaranteeBytes
                    + " bytes must be >= 0");
        }
        if (ceilingBytes <= 0 || ceilingBytes < guaranteeBytes) {
            throw new IllegalArgumentException(String.format("tenant '%s': ceiling %,d bytes must be > 0 and at least"
                    + " its guarantee of %,d bytes", name, ceilingBytes, guaranteeBytes));
        }
    }

    /** A tenant with no guarantee that may pin up to the whole limit: it competes for what others leave. */
    public static TenantShare bestEffort(String name) {
        return new TenantShare(name, 0, Long.MAX_VALUE);
    }

    /** A tenant guaranteed {@code guaranteeBytes} that may pin up to the whole limit. */
    public static TenantShare guaranteed(String name, long guaranteeBytes) {
        return new TenantShare(name, guaranteeBytes, Long.MAX_VALUE);
    }
}
