package io.mrcache.verbs.ibv;

/** What {@code ibv_query_device} reports of one RDMA device (the fields mrcache uses and shows). */
public record DeviceInfo(String name, String firmware, long maxMrSize, int maxMr, int maxPd, int maxMw, int ports,
        int vendorId, int vendorPartId, long pageSizeCap) {
}
