package io.mrcache.core.events;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** One registrar.register call made by the cache (a miss). */
@Name("io.mrcache.Registration")
@Label("Memory Registration")
@Category({"mrcache"})
@Description("A register call made by the registration cache on a miss")
public final class RegistrationEvent extends jdk.jfr.Event {
    @Label("Address")
    public long address;
    @Label("Length")
    @DataAmount
    public long length;
    @Label("Access")
    public String access = "";
    @Label("Outcome")
    @Description("published, discarded (an invalidation overlapped it), or failed")
    public String outcome = "";
}
