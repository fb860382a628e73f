/**
 * For tests only: {@link io.mrcache.core.testing.RecordingRegistrar}, an in-memory registrar that pins
 * nothing, keeps a ledger of every register and deregister, and fails on demand (register throwing any
 * throwable, ENOMEM, deregister failing), for the tests of the cache and of code that embeds it. Never a
 * registrar for production: its keys are not valid on any NIC.
 *
 * <p>Depends on: {@code io.mrcache.core} only.
 */
@NullMarked
package io.mrcache.core.testing;

import org.jspecify.annotations.NullMarked;
