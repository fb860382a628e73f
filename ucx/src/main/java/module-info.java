/**
 * mrcache on UCX through jucx, UCX's Java API: {@code UcxRegistrar} (a registrar over {@code ucp_mem_map}, whose
 * packed remote keys ride on each registration) and a small transport on jucx that embeds the cache. Run with
 * {@code --enable-native-access} for {@code jucx} (it loads its JNI library itself).
 */
module io.mrcache.ucx {
    requires transitive io.mrcache.core;
    requires transitive jucx;
    requires static org.jspecify;
    requires static com.google.errorprone.annotations;

    exports io.mrcache.ucx;
    exports io.mrcache.ucx.transport;
}
