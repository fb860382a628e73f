package io.mrcache.core.events;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** An invalidate call that unlinked something (the empty fast path records nothing). */
@Name("io.mrcache.Invalidation")
@Label("Registration Invalidation")
@Category({"mrcache"})
@Description("An invalidate call that unlinked regions or doomed in-flight registrations")
public final class InvalidationEvent extends jdk.jfr.Event {
    @Label("Address")
    public long address;
    @Label("Length")
    @DataAmount
    public long length;
    @Label("Regions")
    public int regions;
    @Label("In-flight Registrations")
    public int inFlight;
}
