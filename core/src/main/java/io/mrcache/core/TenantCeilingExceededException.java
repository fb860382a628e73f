package io.mrcache.core;

/**
 * A single registration larger than its tenant's ceiling: refused at once, before anything is evicted or
 * registered. The message names the tenant, its ceiling, its pinned bytes and the request.
 */
public final class TenantCeilingExceededException extends RegistrationException {
    private final String tenant;

    TenantCeilingExceededException(String message, String tenant) {
        super(message, ENOMEM);
        this.tenant = tenant;
    }

    /** The tenant whose ceiling the request exceeds. */
    public String tenant() {
        return tenant;
    }
}
