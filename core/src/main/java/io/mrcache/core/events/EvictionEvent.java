package io.mrcache.core.events;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** An idle region retired to keep within the budget, or on ENOMEM. */
@Name("io.mrcache.Eviction")
@Label("Registration Eviction")
@Category({"mrcache"})
@Description("An idle cached registration retired by the eviction policy")
public final class EvictionEvent extends jdk.jfr.Event {
    @Label("Address")
    public long address;
    @Label("Length")
    @DataAmount
    public long length;
    @Label("Reason")
    public String reason = "";
}
