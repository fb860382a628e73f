package io.mrcache.ucx;

/**
 * The jucx this module is built and tested with, and what it may not do over the UCX that Debian ships. The
 * version is pinned in the build ({@code jucx.version}); the facts below were measured here with jucx 1.15.0 and
 * 1.16.0 over Debian's {@code libucx0} 1.13.1 on JDK 25, and this class is where they live.
 *
 * <ul>
 * <li>jucx 1.16.0 is the newest on Maven Central (1.13, 1.14 and 1.19 are not there). Its native library asks for
 * UCP API 1.16 and UCX prints {@code UCP API version is incompatible: required >= 1.16, actual 1.13.1} once per
 * context; every call this module makes works regardless.
 * <li>A {@code ucp_mem_map} that fails is undefined behaviour through jucx: its native code throws the
 * {@code UcxException} but goes on to query the uninitialized handle ({@code ucp_mem_query}), which crashed the
 * JVM here with SIGSEGV (a null address, in a test; the same call alone happened to throw). {@link UcxRegistrar}
 * therefore refuses what UCX refuses (a null address, an empty range) itself, before the call; a failure it
 * cannot foresee (UCX out of memory) may still take the JVM down. A jucx that returns after the throw fixes it.
 * <li>A second {@code UcpMemory.deregister()} throws a {@code NullPointerException}; {@link UcxRegistrar} reports
 * it as a {@code RegistrationException} (EINVAL) instead.
 * <li>Never call {@code UcpMemory.getExportedMkeyBuffer()}: UCX 1.13.1 lacks {@code ucp_memh_pack} and the JVM
 * dies on the undefined symbol.
 * <li>Never run with {@code LD_BIND_NOW=1}: loading jucx's library then fails on that same symbol.
 * <li>Never set {@code UCX_TLS=cma} alone with the active-message feature: {@code ucp_worker_query} aborts.
 * <li>Tagged receives: jucx's default memory type ({@code UCS_MEMORY_TYPE_UNKNOWN}, 6 in 1.16) is refused by
 * 1.13.1 ({@code invalid memory type parameter: 6}); pass {@link #HOST_MEMORY} explicitly.
 * <li>Without an RDMA device, RMA is emulated in software (shared memory, CMA, TCP): the target's worker copies
 * the data, so the owner must progress its worker, and {@code UcpMemory.deregister()} revokes nothing: a peer's
 * put with an old packed key still lands in whatever is at that address. Only the transport's protocol protects
 * memory there (see docs/SAFETY-MODEL.md, "Remote keys").
 * </ul>
 */
public final class UcxVersion {
    /** The jucx version the build pins. */
    public static final String JUCX = "1.16.0";
    /** The UCX that Debian ships and that the tests run over. */
    public static final String DEBIAN_UCX = "1.13.1";
    /** {@code UCS_MEMORY_TYPE_HOST}: the memory type to pass wherever jucx would otherwise send its default. */
    public static final int HOST_MEMORY = 0;

    private UcxVersion() {
    }
}
