/**
 * JMH benchmarks of the cache (workloads W1 to W7), compared with UCX's registration cache by
 * {@code ./mrcache bench --vs-ucx}.
 *
 * <p>Depends on: {@code mrcache-core}, JMH.
 */
@NullMarked
package io.mrcache.bench;

import org.jspecify.annotations.NullMarked;
