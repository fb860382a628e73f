/**
 * The vocabulary every native part of the module shares: {@link io.mrcache.verbs.NativeException} (a failed
 * native call with its errno) and {@link io.mrcache.verbs.Errno} (errno names and descriptions).
 *
 * <p>Depends on: {@code io.mrcache.core} and the JDK. Nothing in {@code mrcache-ffm-verbs} may depend on the
 * stress modules.
 */
@NullMarked
package io.mrcache.verbs;

import org.jspecify.annotations.NullMarked;
