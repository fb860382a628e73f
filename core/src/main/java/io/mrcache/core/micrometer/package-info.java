/**
 * The binding of a cache's metrics to Micrometer ({@link io.mrcache.core.micrometer.RegistrationCacheMetrics}),
 * for transports that export metrics that way.
 *
 * <p>Depends on: {@code io.mrcache.core} and Micrometer, an optional dependency of {@code mrcache-core}: add
 * {@code io.micrometer:micrometer-core} to use this package; nothing else in the library needs it.
 */
@NullMarked
package io.mrcache.core.micrometer;

import org.jspecify.annotations.NullMarked;
