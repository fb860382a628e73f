/**
 * The verdict over the jcstress races: every real race must pass and every broken variant must be caught.
 * The races themselves live in package {@code io.mrcache.core} of this module, to reach the package-private
 * fault seam of the cache.
 *
 * <p>Depends on: jcstress.
 */
@NullMarked
package io.mrcache.jcstress;

import org.jspecify.annotations.NullMarked;
