/**
 * The verdict over the jcstress races: every real race must pass and every broken variant must be caught.
 * The races live in {@code io.mrcache.jcstress.races}; their broken variants come from the cache's public
 * proofs-only seam, {@code RegistrationCache.Builder.withDeliberateBug}.
 *
 * <p>Depends on: jcstress.
 */
@NullMarked
package io.mrcache.jcstress;

import org.jspecify.annotations.NullMarked;
