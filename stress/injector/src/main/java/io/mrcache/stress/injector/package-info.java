/**
 * The address-reuse fault injector: a reusing allocator with ground truth, a NIC that writes to the pages a
 * key pinned, seeded faults, detectors, and the {@link io.mrcache.stress.injector.CacheUnderTest} interface
 * to plug any cache in (mrcache, the deliberately naive cache, your own).
 *
 * <p>Depends on: {@code mrcache-core}, {@code mrcache-ffm-verbs}.
 */
@NullMarked
package io.mrcache.stress.injector;

import org.jspecify.annotations.NullMarked;
