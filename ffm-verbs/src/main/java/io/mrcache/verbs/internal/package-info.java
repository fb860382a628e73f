/**
 * Not API: the helpers every native call of this module goes through. {@link io.mrcache.verbs.internal.NativeCall}
 * looks each symbol up once and captures errno per call ({@code checked} is the one check-and-throw);
 * {@link io.mrcache.verbs.internal.Libc} binds the libc calls the module needs.
 * Public only so that the module's other packages can use them.
 *
 * <p>Depends on: the JDK and {@code io.mrcache.verbs} (its exception).
 */
@NullMarked
package io.mrcache.verbs.internal;

import org.jspecify.annotations.NullMarked;
