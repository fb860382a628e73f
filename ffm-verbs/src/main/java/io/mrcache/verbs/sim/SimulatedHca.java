package io.mrcache.verbs.sim;

import io.mrcache.core.Access;
import io.mrcache.core.Registration;
import io.mrcache.core.RegistrationException;
import io.mrcache.verbs.Errno;
import io.mrcache.verbs.NativeException;
import io.mrcache.verbs.internal.Libc;
import io.mrcache.verbs.internal.Pages;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * A host channel adapter in software: protection domains, memory registration that really pins pages
 * ({@code mlock} through FFM, reference-counted per page as the kernel does for RDMA pins), keys, and RDMA
 * reads and writes checked the way a NIC checks them. It is mrcache's embedded default where no RDMA device
 * exists.
 *
 * <p><b>Keys.</b> A key is {@code slot << 8 | generation}: a slot is reused only with the next generation,
 * and a slot whose generation would wrap is never reused, so a dead key is never taken for a live one. The
 * lkey and rkey of a region are equal (as on many HCAs).
 *
 * <p><b>Checks.</b> {@link #rdmaWrite}/{@link #rdmaRead} (a peer's request, by rkey) and
 * {@link #localWrite} (the NIC writing into a local buffer, by lkey) reject a dead key, a key of another
 * protection domain, a range that leaves the region, and a missing right; a rejected access writes nothing.
 * An access and the deregistration of its region are serialized, as a NIC finishes in-flight DMA before
 * {@code ibv_dereg_mr} returns.
 *
 * <p><b>Pinning.</b> Where {@code mlock} is refused (over {@code RLIMIT_MEMLOCK} without
 * {@code CAP_IPC_LOCK}), the HCA says so once through its warning listener and then only accounts. An
 * optional {@link #memlockLimit} makes it fail registrations with {@code ENOMEM} past a number of pinned
 * bytes, as {@code ibv_reg_mr} does past the limit.
 */
public final class SimulatedHca {
    /** Keys this HCA can have live at once: a key's slot ({@link #slotOf}) is below this. */
    public static final int MAX_SLOTS = 1 << 20;

    /** A registered region as the HCA sees it. */
    private static final class Mr {
        final int key;
        final long pd;
        final long address;
        final long length;
        final int access;
        boolean alive = true; // guarded by this

        Mr(int key, long pd, long address, long length, int access) {
            this.key = key;
            this.pd = pd;
            this.address = address;
            this.length = length;
            this.access = access;
        }
    }

    private final long pageSize = Libc.pageSize();
    private final AtomicReferenceArray<Mr> slots = new AtomicReferenceArray<>(MAX_SLOTS);
    /**
     * Guards keys, pins and counts together: a registration or a deregistration takes it once. (With a lock for
     * keys, one for pins and atomic counters, the two threads of a soak passed five cache lines back and forth
     * per registration.)
     */
    private final Object lock = new Object();
    private final int[] generations = new int[MAX_SLOTS]; // guarded by lock
    private final ArrayDeque<Integer> freeSlots = new ArrayDeque<>(); // guarded by lock
    private int nextSlot = 1; // guarded by lock; slot 0 unused so that key 0 is never valid
    private final Map<Long, Integer> pinsPerPage = new HashMap<>(); // guarded by lock
    private long pinnedBytes; // guarded by lock
    private long registeredBytes; // guarded by lock
    private long registrations; // guarded by lock
    private long deregistrations; // guarded by lock
    private volatile boolean pinningRefused;
    private volatile boolean pinning = true;
    private final AtomicLong nextPd = new AtomicLong(1);
    private volatile long memlockLimit = Long.MAX_VALUE;
    private volatile Consumer<String> warnings =
            w -> System.getLogger(SimulatedHca.class.getName()).log(System.Logger.Level.WARNING, w);

    /** Allocates a protection domain; registrations and accesses are checked against it (I7). */
    public long allocProtectionDomain() {
        return nextPd.getAndIncrement();
    }

    /** Fails registrations with ENOMEM once this many bytes would be pinned (emulates RLIMIT_MEMLOCK). */
    public SimulatedHca memlockLimit(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("memlock limit " + bytes + " must be > 0");
        }
        this.memlockLimit = bytes;
        return this;
    }

    public long memlockLimit() {
        return memlockLimit == Long.MAX_VALUE ? -1 : memlockLimit;
    }

    /**
     * Accounts pinned pages without calling {@code mlock} (for long soak runs, where {@code mlock} bounds the
     * rate): keys, range and rights checks and the accounting are unchanged; only the kernel's pinning is left
     * out.
     */
    public SimulatedHca accountOnly() {
        this.pinning = false;
        return this;
    }

    public SimulatedHca warnings(Consumer<String> listener) {
        this.warnings = listener;
        return this;
    }

    /**
     * Registers {@code [address, address + length)} in protection domain {@code pd}: pins its pages and
     * issues a key.
     *
     * @throws RegistrationException ENOMEM past the memlock limit or when out of keys, EINVAL on bad input
     */
    public Registration register(long pd, long address, long length, int access) {
        if (length <= 0 || address <= 0 || address + length < 0) {
            throw new RegistrationException("simulated ibv_reg_mr: bad range address 0x" + Long.toHexString(address)
                    + " length " + length, Errno.EINVAL);
        }
        Access.validate(access);
        long first = Pages.firstPage(address, pageSize);
        long end = Pages.pagesEnd(address, length, pageSize);
        int key;
        synchronized (lock) {
            pin(first, end);
            try {
                key = allocateKey();
            } catch (RegistrationException e) {
                unpin(first, end);
                throw e;
            }
            registrations++;
            registeredBytes += length;
        }
        slots.set(slotOf(key), new Mr(key, pd, address, length, access));
        return new Registration(address, length, access, key, key, pd, key);
    }

    /** Deregisters; the key is dead when this returns (in-flight accesses to it have finished). */
    public void deregister(Registration registration) {
        int key = (int) registration.handle();
        Mr mr = slot(key);
        if (mr == null) {
            throw new RegistrationException("simulated ibv_dereg_mr: key 0x" + Integer.toHexString(key)
                    + " is not registered (already deregistered?)", Errno.EINVAL);
        }
        synchronized (mr) {
            if (!mr.alive) {
                throw new RegistrationException("simulated ibv_dereg_mr: key 0x" + Integer.toHexString(key)
                        + " already deregistered", Errno.EINVAL);
            }
            mr.alive = false;
        }
        int slot = slotOf(key);
        slots.compareAndSet(slot, mr, null);
        synchronized (lock) {
            if (generations[slot] < 255) {
                freeSlots.add(slot);
            } // else retired for good: its next generation would wrap onto dead keys
            unpin(Pages.firstPage(mr.address, pageSize), Pages.pagesEnd(mr.address, mr.length, pageSize));
            deregistrations++;
            registeredBytes -= mr.length;
        }
    }

    /** A peer's RDMA write of {@code data} to {@code remoteAddress} with {@code rkey}, from a QP in {@code pd}. */
    public void rdmaWrite(long pd, int rkey, long remoteAddress, MemorySegment data) {
        Mr mr = checked(pd, rkey, remoteAddress, data.byteSize(), Access.REMOTE_WRITE, "RDMA write");
        synchronized (mr) {
            recheck(mr, rkey);
            MemorySegment.ofAddress(remoteAddress).reinterpret(data.byteSize()).copyFrom(data);
        }
    }

    /** A peer's RDMA read into {@code into} from {@code remoteAddress} with {@code rkey}. */
    public void rdmaRead(long pd, int rkey, long remoteAddress, MemorySegment into) {
        Mr mr = checked(pd, rkey, remoteAddress, into.byteSize(), Access.REMOTE_READ, "RDMA read");
        synchronized (mr) {
            recheck(mr, rkey);
            into.copyFrom(MemorySegment.ofAddress(remoteAddress).reinterpret(into.byteSize()));
        }
    }

    /** The NIC writing into a local buffer with {@code lkey} (a receive, or a read response landing). */
    public void localWrite(long pd, int lkey, long address, MemorySegment data) {
        Mr mr = checked(pd, lkey, address, data.byteSize(), Access.LOCAL_WRITE, "local write");
        synchronized (mr) {
            recheck(mr, lkey);
            MemorySegment.ofAddress(address).reinterpret(data.byteSize()).copyFrom(data);
        }
    }

    /** Whether {@code key} names a live registration. */
    public boolean isAlive(int key) {
        Mr mr = slot(key);
        if (mr == null) {
            return false;
        }
        synchronized (mr) {
            return mr.alive;
        }
    }

    /** Distinct bytes pinned now (pages under at least one registration). */
    public long pinnedBytes() {
        synchronized (lock) {
            return pinnedBytes;
        }
    }

    /** Bytes under live registrations, counted once per registration. */
    public long registeredBytes() {
        synchronized (lock) {
            return registeredBytes;
        }
    }

    public long registrations() {
        synchronized (lock) {
            return registrations;
        }
    }

    public long deregistrations() {
        synchronized (lock) {
            return deregistrations;
        }
    }

    public long liveRegistrations() {
        synchronized (lock) {
            return registrations - deregistrations;
        }
    }

    /** True when mlock was refused and the HCA only accounts pins. */
    public boolean pinningRefused() {
        return pinningRefused;
    }

    public long pageSize() {
        return pageSize;
    }

    private Mr checked(long pd, int key, long address, long length, int right, String what) {
        Mr mr = slot(key);
        if (mr == null || mr.key != key) {
            throw new RemoteAccessException(RemoteAccessException.Reason.DEAD_KEY, what + " with key 0x"
                    + Integer.toHexString(key) + ": no live registration has this key (dead or never issued)");
        }
        if (mr.pd != pd) {
            throw new RemoteAccessException(RemoteAccessException.Reason.WRONG_PROTECTION_DOMAIN, what + " with key 0x"
                    + Integer.toHexString(key) + ": the key belongs to protection domain " + mr.pd + ", the queue pair to "
                    + pd);
        }
        if (length < 0 || address < mr.address || address + length > mr.address + mr.length) {
            throw new RemoteAccessException(RemoteAccessException.Reason.OUT_OF_RANGE, String.format(
                    "%s of %d bytes at 0x%x with key 0x%x leaves the region [0x%x, 0x%x)", what, length, address, key,
                    mr.address, mr.address + mr.length));
        }
        if ((mr.access & right) == 0) {
            throw new RemoteAccessException(RemoteAccessException.Reason.ACCESS_DENIED, what + " with key 0x"
                    + Integer.toHexString(key) + ": the region grants " + Access.describe(mr.access) + ", not "
                    + Access.describe(right));
        }
        return mr;
    }

    private static void recheck(Mr mr, int key) {
        if (!mr.alive) {
            throw new RemoteAccessException(RemoteAccessException.Reason.DEAD_KEY, "key 0x" + Integer.toHexString(key)
                    + " was deregistered before the access ran");
        }
    }

    /** The slot of {@code key}, in {@code [0, MAX_SLOTS)}: no two live keys share one. */
    public static int slotOf(int key) {
        return key >>> 8;
    }

    private @Nullable Mr slot(int key) {
        int slot = slotOf(key);
        if (slot <= 0 || slot >= MAX_SLOTS) {
            return null;
        }
        Mr mr = slots.get(slot);
        return mr != null && mr.key == key ? mr : null;
    }

    /** Under {@link #lock}. */
    private int allocateKey() {
        int slot;
        if (!freeSlots.isEmpty()) {
            slot = freeSlots.poll();
            generations[slot]++;
        } else if (nextSlot < MAX_SLOTS) {
            slot = nextSlot++;
        } else {
            throw new RegistrationException("simulated HCA is out of keys (" + MAX_SLOTS + " slots)", Errno.ENOMEM);
        }
        return slot << 8 | generations[slot];
    }

    /** Under {@link #lock}. */
    private void pin(long first, long end) {
        long newly = 0;
        for (long page = first; page < end; page += pageSize) {
            if (!pinsPerPage.containsKey(page)) {
                newly += pageSize;
            }
        }
        if (pinnedBytes + newly > memlockLimit) {
            throw new RegistrationException(String.format("simulated ibv_reg_mr: pinning %,d more bytes would"
                    + " exceed the memlock limit of %,d bytes (%,d pinned)", newly, memlockLimit, pinnedBytes),
                    Errno.ENOMEM);
        }
        long runStart = -1;
        for (long page = first; page < end; page += pageSize) {
            int n = pinsPerPage.merge(page, 1, Integer::sum);
            if (n == 1 && runStart < 0) {
                runStart = page;
            } else if (n > 1 && runStart >= 0) {
                mlock(runStart, page - runStart);
                runStart = -1;
            }
        }
        if (runStart >= 0) {
            mlock(runStart, end - runStart);
        }
        pinnedBytes += newly;
    }

    /** Under {@link #lock}. */
    private void unpin(long first, long end) {
        long runStart = -1;
        for (long page = first; page < end; page += pageSize) {
            int n = pinsPerPage.merge(page, -1, Integer::sum);
            if (n == 0) {
                pinsPerPage.remove(page);
                pinnedBytes -= pageSize;
                if (runStart < 0) {
                    runStart = page;
                }
            } else if (runStart >= 0) {
                munlock(runStart, page - runStart);
                runStart = -1;
            }
        }
        if (runStart >= 0) {
            munlock(runStart, end - runStart);
        }
    }

    private void mlock(long address, long length) {
        if (pinningRefused || !pinning) {
            return;
        }
        try {
            Libc.mlock(address, length);
        } catch (NativeException e) {
            if (e.errno() == Errno.ENOMEM || e.errno() == Errno.EPERM || e.errno() == Errno.EAGAIN) {
                pinningRefused = true;
                warnings.accept("mrcache simulated HCA: mlock refused (" + e.getMessage() + "); RLIMIT_MEMLOCK"
                        + " is too low for real pinning, so registrations are only accounted from now on."
                        + " Raise it with 'ulimit -l' to pin for real.");
                return;
            }
            throw e;
        }
    }

    private void munlock(long address, long length) {
        if (!pinningRefused && pinning) {
            try {
                Libc.munlock(address, length);
            } catch (NativeException e) {
                // ENOMEM: the range is no longer mapped (freed before deregistration); nothing stays locked
                if (e.errno() != Errno.ENOMEM) {
                    throw e;
                }
            }
        }
    }
}
