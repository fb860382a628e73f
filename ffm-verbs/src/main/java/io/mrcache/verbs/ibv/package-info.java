/**
 * The real {@code libibverbs.so.1} through FFM: device list, contexts, protection domains, memory
 * registration, the struct layouts checked against {@code <infiniband/verbs.h>}, and
 * {@link io.mrcache.verbs.ibv.VerbsRegistrar}, the cache's registrar over a device.
 *
 * <p>Depends on: {@code io.mrcache.core}, {@code io.mrcache.verbs}.
 */
@NullMarked
package io.mrcache.verbs.ibv;

import org.jspecify.annotations.NullMarked;
