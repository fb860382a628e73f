package io.mrcache.verbs.ibv;

import io.mrcache.verbs.Errno;

/**
 * libibverbs loaded, but there is no RDMA device to use: {@code ibv_get_device_list} failed (ENOSYS: no
 * uverbs support in this kernel or container) or listed none. The message says how to get one.
 */
public final class NoRdmaDeviceException extends RuntimeException {
    private final int errno;

    NoRdmaDeviceException(int errno) {
        super((errno == 0 ? "no RDMA device found (ibv_get_device_list listed 0 devices)"
                : "no RDMA device: ibv_get_device_list failed with " + Errno.describe(errno))
                + ". To get one: load a NIC's driver (mlx5_ib, ...), or create a soft-RoCE device with"
                + " 'modprobe rdma_rxe && rdma link add rxe0 type rxe netdev <interface>' (package rdma-core /"
                + " iproute2), and make /dev/infiniband visible to this process. Until then mrcache embeds its"
                + " simulated HCA.");
        this.errno = errno;
    }

    /** The errno of {@code ibv_get_device_list}, or 0 when it listed no device. */
    public int errno() {
        return errno;
    }
}
