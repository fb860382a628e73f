package io.mrcache.verbs.ibv;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.lang.invoke.VarHandle;

/**
 * The {@code libibverbs} structs mrcache reads, defined once, verified against {@code <infiniband/verbs.h>}
 * by {@code IbvLayoutsTest} (which compiles a C program printing {@code offsetof}/{@code sizeof}).
 */
final class IbvLayouts {
    private IbvLayouts() {
    }

    /**
     * <pre>
     * struct ibv_mr {                 offset
     *     struct ibv_context *context;   0
     *     struct ibv_pd      *pd;        8
     *     void               *addr;     16
     *     size_t              length;   24
     *     uint32_t            handle;   32
     *     uint32_t            lkey;     36
     *     uint32_t            rkey;     40
     * };                               48 (4 bytes of tail padding)
     * </pre>
     */
    public static final StructLayout IBV_MR = MemoryLayout.structLayout(
            ADDRESS.withName("context"),
            ADDRESS.withName("pd"),
            ADDRESS.withName("addr"),
            JAVA_LONG.withName("length"),
            JAVA_INT.withName("handle"),
            JAVA_INT.withName("lkey"),
            JAVA_INT.withName("rkey"),
            MemoryLayout.paddingLayout(4)).withName("ibv_mr");

    /**
     * <pre>
     * struct ibv_device_attr {                     offset
     *     char     fw_ver[64];                        0
     *     __be64   node_guid, sys_image_guid;        64, 72
     *     uint64_t max_mr_size, page_size_cap;       80, 88
     *     uint32_t vendor_id, vendor_part_id, hw_ver; 96, 100, 104
     *     int      max_qp ... max_srq_sge;          108 .. 220 (29 ints; device_cap_flags unsigned,
     *                                                           atomic_cap an enum)
     *     uint16_t max_pkeys;                       224
     *     uint8_t  local_ca_ack_delay, phys_port_cnt; 226, 227
     * };                                            232
     * </pre>
     */
    public static final StructLayout IBV_DEVICE_ATTR = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(64, JAVA_BYTE).withName("fw_ver"),
            JAVA_LONG.withName("node_guid"),
            JAVA_LONG.withName("sys_image_guid"),
            JAVA_LONG.withName("max_mr_size"),
            JAVA_LONG.withName("page_size_cap"),
            JAVA_INT.withName("vendor_id"),
            JAVA_INT.withName("vendor_part_id"),
            JAVA_INT.withName("hw_ver"),
            JAVA_INT.withName("max_qp"),
            JAVA_INT.withName("max_qp_wr"),
            JAVA_INT.withName("device_cap_flags"),
            JAVA_INT.withName("max_sge"),
            JAVA_INT.withName("max_sge_rd"),
            JAVA_INT.withName("max_cq"),
            JAVA_INT.withName("max_cqe"),
            JAVA_INT.withName("max_mr"),
            JAVA_INT.withName("max_pd"),
            JAVA_INT.withName("max_qp_rd_atom"),
            JAVA_INT.withName("max_ee_rd_atom"),
            JAVA_INT.withName("max_res_rd_atom"),
            JAVA_INT.withName("max_qp_init_rd_atom"),
            JAVA_INT.withName("max_ee_init_rd_atom"),
            JAVA_INT.withName("atomic_cap"),
            JAVA_INT.withName("max_ee"),
            JAVA_INT.withName("max_rdd"),
            JAVA_INT.withName("max_mw"),
            JAVA_INT.withName("max_raw_ipv6_qp"),
            JAVA_INT.withName("max_raw_ethy_qp"),
            JAVA_INT.withName("max_mcast_grp"),
            JAVA_INT.withName("max_mcast_qp_attach"),
            JAVA_INT.withName("max_total_mcast_qp_attach"),
            JAVA_INT.withName("max_ah"),
            JAVA_INT.withName("max_fmr"),
            JAVA_INT.withName("max_map_per_fmr"),
            JAVA_INT.withName("max_srq"),
            JAVA_INT.withName("max_srq_wr"),
            JAVA_INT.withName("max_srq_sge"),
            JAVA_SHORT.withName("max_pkeys"),
            JAVA_BYTE.withName("local_ca_ack_delay"),
            JAVA_BYTE.withName("phys_port_cnt"),
            MemoryLayout.paddingLayout(4)).withName("ibv_device_attr");

    static final VarHandle MR_LKEY = field(IBV_MR, "lkey");
    static final VarHandle MR_RKEY = field(IBV_MR, "rkey");
    static final VarHandle MR_ADDR = field(IBV_MR, "addr");
    static final VarHandle MR_LENGTH = field(IBV_MR, "length");
    static final VarHandle ATTR_MAX_MR_SIZE = field(IBV_DEVICE_ATTR, "max_mr_size");
    static final VarHandle ATTR_MAX_MR = field(IBV_DEVICE_ATTR, "max_mr");
    static final VarHandle ATTR_MAX_PD = field(IBV_DEVICE_ATTR, "max_pd");
    static final VarHandle ATTR_MAX_MW = field(IBV_DEVICE_ATTR, "max_mw");
    static final VarHandle ATTR_PORTS = field(IBV_DEVICE_ATTR, "phys_port_cnt");
    static final VarHandle ATTR_VENDOR = field(IBV_DEVICE_ATTR, "vendor_id");
    static final VarHandle ATTR_PART = field(IBV_DEVICE_ATTR, "vendor_part_id");
    static final VarHandle ATTR_PAGE_SIZE_CAP = field(IBV_DEVICE_ATTR, "page_size_cap");

    private static VarHandle field(StructLayout layout, String name) {
        return layout.varHandle(MemoryLayout.PathElement.groupElement(name)).withInvokeExactBehavior();
    }
}
