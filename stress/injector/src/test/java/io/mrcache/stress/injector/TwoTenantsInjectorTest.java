package io.mrcache.stress.injector;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mrcache.core.CacheFault;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Two tenants in two protection domains sharing one pinned-memory limit under eviction-pressure: the real caches
 * keep every detector at zero while the limit makes room across tenants and every key is tried in the other
 * domain; a limit whose eviction takes leased regions is caught.
 */
class TwoTenantsInjectorTest {
    static final EnumSet<Fault> FAULTS = EnumSet.of(Fault.TWO_TENANTS, Fault.EVICTION_PRESSURE, Fault.IMMEDIATE_REUSE,
            Fault.DELAYED_HOOKS, Fault.SLOW_REGISTRATION, Fault.FAILING_REGISTRATION, Fault.FAILING_DEREGISTRATION,
            Fault.STALE_REMOTE_KEYS);

    static InjectorReport run(AddressReuseInjector.CacheFactory factory, long ops, int threads, long seed) {
        return AddressReuseInjector.run(new InjectorConfig(ops, threads, seed, FAULTS, false, false), factory,
                line -> { });
    }

    @Test
    void twoTenantsSharingALimitAreCleanAndKeepTheirDomainsApart() {
        for (long seed = 1; seed <= 3; seed++) {
            InjectorReport r = run(Caches.TWO_TENANTS, 60_000, 2, seed);
            assertEquals(0, r.violations(), "seed " + seed + ": " + r);
            assertEquals("mrcache, two tenants", r.cache());
            assertTrue(r.coverage().get(AddressReuseInjector.CROSS_DOMAIN_REJECTED) > 0, "no key was tried in the"
                    + " other domain: " + r.coverage());
            assertTrue(r.coverage().get(AddressReuseInjector.CROSS_TENANT_EVICTIONS) > 0, "the limit never made"
                    + " room across tenants: " + r.coverage());
        }
    }

    @Test
    void aLimitThatEvictsLeasedRegionsOfAnotherTenantIsCaught() {
        List<String> survived = new ArrayList<>();
        for (long seed = 1; seed <= 3; seed++) {
            InjectorReport r = run(Caches.twoTenantsBroken(CacheFault.LIMIT_EVICTS_LEASED), 60_000, 2, seed);
            System.out.println("LIMIT_EVICTS_LEASED seed " + seed + ": " + (r.safe() ? "SURVIVED " : "caught ") + r);
            if (r.safe()) {
                survived.add("seed " + seed + ": " + r);
            }
        }
        assertTrue(survived.isEmpty(), "the broken limit was judged safe: " + survived);
    }

    /** The I7 detectors fail when a transport registers both tenants' buffers in one domain. */
    @Test
    void tenantsSharingOneDomainAreCaught() {
        InjectorReport r = run(Caches.TWO_TENANTS_ONE_DOMAIN, 20_000, 2, 5);
        System.out.println("TWO_TENANTS_ONE_DOMAIN: " + r);
        assertTrue(r.crossDomainAccepted() > 0, "the other tenant's peer never got through: " + r);
        assertTrue(r.corruptedBuffers() > 0, "B's writes through its own domain never failed: " + r);
        assertTrue(!r.safe());
    }

    @Test
    void oneThreadReplaysTwoTenants() {
        InjectorReport a = run(Caches.TWO_TENANTS, 8_000, 1, 11);
        InjectorReport b = run(Caches.TWO_TENANTS, 8_000, 1, 11);
        assertEquals(0, a.violations(), a.toString());
        assertEquals(List.of(a.operations(), a.registrations(), a.coverage().get(AddressReuseInjector.CROSS_DOMAIN_REJECTED)),
                List.of(b.operations(), b.registrations(), b.coverage().get(AddressReuseInjector.CROSS_DOMAIN_REJECTED)));
    }

    @Test
    void twoTenantsMustBeNamedAllLeavesItOut() {
        assertTrue(!Fault.parse("all").contains(Fault.TWO_TENANTS));
        assertTrue(Fault.parse("all,two-tenants").contains(Fault.TWO_TENANTS));
    }
}
