/**
 * The {@code mrcache} command line (picocli): demo, tour, cost, devices, bench.
 *
 * <p>Depends on: every other module; nothing depends on it.
 */
@NullMarked
package io.mrcache.cli;

import org.jspecify.annotations.NullMarked;
