/**
 * The registration cache: {@link io.mrcache.core.RegistrationCache} (the API, the design comment with the
 * concurrency argument, the acquire/invalidate/close protocol), the lifecycle of each cached registration
 * ({@link io.mrcache.core.Region}, package-private), the immutable interval index, the miss planner, the
 * deregistrar with its quarantine, the eviction policy over Caffeine, metrics and the {@link io.mrcache.core.Registrar}
 * interface a transport implements or picks from {@code mrcache-ffm-verbs}.
 *
 * <p>Depends on: the JDK (no native access), Caffeine, HdrHistogram, JSpecify and Error Prone annotations.
 * Nothing here may depend on {@code io.mrcache.verbs} or on the stress modules (an ArchUnit test checks).
 * Public types are the API; everything else is package-private.
 */
@NullMarked
package io.mrcache.core;

import org.jspecify.annotations.NullMarked;
