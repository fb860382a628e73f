/**
 * UCX as a registrar ({@link io.mrcache.ucx.UcxRegistrar}, {@link io.mrcache.ucx.UcxKeys}), the UCX status codes
 * as errno values ({@link io.mrcache.ucx.UcxStatus}), and the one place that pins the jucx version and says what
 * not to call with it ({@link io.mrcache.ucx.UcxVersion}). Depends on core and jucx; nothing in core depends on it.
 */
@NullMarked
package io.mrcache.ucx;

import org.jspecify.annotations.NullMarked;
