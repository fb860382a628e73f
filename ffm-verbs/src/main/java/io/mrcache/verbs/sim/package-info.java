/**
 * The simulated HCA, for machines without an RDMA device: protection domains, registration that really pins
 * pages with {@code mlock}, generation-checked keys, and RDMA reads and writes checked as a NIC checks them.
 * Its keys are not valid on any NIC.
 *
 * <p>Depends on: {@code io.mrcache.core}, {@code io.mrcache.verbs}.
 */
@NullMarked
package io.mrcache.verbs.sim;

import org.jspecify.annotations.NullMarked;
