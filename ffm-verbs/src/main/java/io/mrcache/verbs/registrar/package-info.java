/**
 * Which registrar a cache gets: {@link io.mrcache.verbs.registrar.DefaultRegistrar} picks the real device
 * through libibverbs where there is one, else the simulated HCA, and builds a cache whose budget comes from
 * {@code RLIMIT_MEMLOCK}.
 *
 * <p>Depends on: {@code io.mrcache.core}, {@code io.mrcache.verbs.ibv}, {@code io.mrcache.verbs.sim},
 * {@code io.mrcache.verbs.hooks}.
 */
@NullMarked
package io.mrcache.verbs.registrar;

import org.jspecify.annotations.NullMarked;
