package io.mrcache.cli.bench;

import io.mrcache.core.Access;
import io.mrcache.core.Registrar;
import io.mrcache.core.Registration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;

/**
 * The alternative Open MPI's grdma gives: one least-recently-used list and one byte budget shared by every
 * tenant (each registering in its own domain through its own registrar), so that whoever misses evicts the
 * least recently used idle registration, whoever owns it. One lock around everything, registration included,
 * as a model of that order, not of grdma's speed; leased entries are never evicted.
 */
final class SharedLru implements AutoCloseable {
    private record Key(int tenant, long address) {
    }

    /** A cached registration and its leases. */
    static final class Entry {
        private final Registration registration;
        private final Registrar registrar;
        private int leases;

        private Entry(Registration registration, Registrar registrar) {
            this.registration = registration;
            this.registrar = registrar;
        }
    }

    private final long budgetBytes;
    private final LinkedHashMap<Key, Entry> lru = new LinkedHashMap<>(256, 0.75f, true);
    private long pinned;

    SharedLru(long budgetBytes) {
        this.budgetBytes = budgetBytes;
    }

    /** A lease on the registration of {@code [address, address + length)} for {@code tenant}. */
    synchronized Entry acquire(int tenant, Registrar registrar, long address, long length) {
        Key key = new Key(tenant, address);
        Entry e = lru.get(key); // moves it to the most recently used end
        if (e == null) {
            Iterator<Entry> oldestFirst = lru.values().iterator();
            while (pinned + length > budgetBytes && oldestFirst.hasNext()) {
                Entry victim = oldestFirst.next();
                if (victim.leases == 0) {
                    oldestFirst.remove();
                    victim.registrar.deregister(victim.registration);
                    pinned -= victim.registration.length();
                }
            }
            e = new Entry(registrar.register(address, length, Access.LOCAL_WRITE), registrar);
            pinned += length;
            lru.put(key, e);
        }
        e.leases++;
        return e;
    }

    synchronized void release(Entry e) {
        e.leases--;
    }

    @Override
    public synchronized void close() {
        List<Entry> all = new ArrayList<>(lru.values());
        lru.clear();
        for (Entry e : all) {
            e.registrar.deregister(e.registration);
        }
        pinned = 0;
    }
}
