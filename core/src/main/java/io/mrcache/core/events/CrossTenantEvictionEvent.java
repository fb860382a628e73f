package io.mrcache.core.events;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** One tenant's request evicted another tenant's idle regions to stay within a shared pinned-memory limit. */
@Name("io.mrcache.CrossTenantEviction")
@Label("Cross-Tenant Eviction")
@Category({"mrcache"})
@Description("Idle registrations of one tenant evicted to make room for another tenant's registration")
public final class CrossTenantEvictionEvent extends jdk.jfr.Event {
    @Label("Requesting Tenant")
    public String requester = "";
    @Label("Evicted Tenant")
    public String victim = "";
    @Label("Regions")
    public int regions;
    @Label("Bytes")
    @DataAmount
    public long bytes;
    @Label("Victim Pinned After")
    @DataAmount
    public long victimPinnedAfter;
}
