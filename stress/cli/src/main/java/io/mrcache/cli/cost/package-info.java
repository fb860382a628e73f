/**
 * Measuring and drawing the cost model: {@link io.mrcache.cli.cost.RegistrationCalibrator} times a
 * registrar over several sizes and fits the registration cost; {@link io.mrcache.cli.cost.ChartSvg} draws
 * message time against size. Tools of the command line, not of the library.
 *
 * <p>Depends on: {@code io.mrcache.core}, {@code io.mrcache.core.cost}.
 */
@NullMarked
package io.mrcache.cli.cost;

import org.jspecify.annotations.NullMarked;
