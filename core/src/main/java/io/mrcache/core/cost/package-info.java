/**
 * The cost model a transport can use at run time: message time on a link
 * ({@link io.mrcache.core.cost.NetworkModel}), a fitted registration cost
 * ({@link io.mrcache.core.cost.LinearCost}, {@link io.mrcache.core.cost.RegistrationCostModel}) and what a cache
 * saves, per message size or from a running cache's metrics ({@link io.mrcache.core.cost.Savings}). It
 * stays in the library because a transport can size its budget and report savings from it while it runs;
 * measuring the cost (calibration) and drawing it (the SVG chart) are tools of the command line.
 *
 * <p>Depends on: {@code io.mrcache.core} (metrics) and the JDK only.
 */
@NullMarked
package io.mrcache.core.cost;

import org.jspecify.annotations.NullMarked;
