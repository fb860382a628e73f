package io.mrcache.core;

import io.mrcache.core.events.EvictionEvent;
import io.mrcache.core.events.InvalidationEvent;
import io.mrcache.core.events.RegistrationEvent;

/** Commits the cache's JFR events; each costs one {@code shouldCommit} check when recording is off. */
final class CacheEvents {
    private CacheEvents() {
    }

    /** A started registration event; {@link #registered} commits it. */
    static RegistrationEvent registrationStarted() {
        RegistrationEvent event = new RegistrationEvent();
        event.begin();
        return event;
    }

    static void registered(RegistrationEvent event, PendingRegistration p, String outcome) {
        if (event.shouldCommit()) {
            event.address = p.start;
            event.length = p.end - p.start;
            event.access = Access.describe(p.access);
            event.outcome = outcome;
            event.commit();
        }
    }

    /** A started invalidation event; {@link #invalidated} commits it. */
    static InvalidationEvent invalidationStarted() {
        InvalidationEvent event = new InvalidationEvent();
        event.begin();
        return event;
    }

    static void invalidated(InvalidationEvent event, long address, long end, int regions, int inFlight) {
        if (event.shouldCommit()) {
            event.address = address;
            event.length = end - address;
            event.regions = regions;
            event.inFlight = inFlight;
            event.commit();
        }
    }

    static void evicted(Region r, String reason) {
        EvictionEvent event = new EvictionEvent();
        if (event.shouldCommit()) {
            event.address = r.start;
            event.length = r.end - r.start;
            event.reason = reason;
            event.commit();
        }
    }
}
