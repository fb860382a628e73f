/**
 * mrcache's native side through the FFM API: libibverbs, the simulated HCA, free hooks and the page-frame check,
 * and the choice of a registrar. {@code io.mrcache.verbs.internal} (the native-call helpers and libc bindings) is
 * not exported. Run with {@code --enable-native-access=io.mrcache.verbs}.
 */
module io.mrcache.verbs {
    requires transitive io.mrcache.core;
    requires static org.jspecify;
    requires static com.google.errorprone.annotations;

    exports io.mrcache.verbs;
    exports io.mrcache.verbs.ibv;
    exports io.mrcache.verbs.sim;
    exports io.mrcache.verbs.hooks;
    exports io.mrcache.verbs.registrar;
}
