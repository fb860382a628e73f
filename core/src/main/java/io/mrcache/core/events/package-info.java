/**
 * JDK Flight Recorder events of the cache (registration, invalidation, eviction). Public because JFR reads
 * their fields by reflection; they are not an API to call: record with {@code -XX:StartFlightRecording}.
 *
 * <p>Depends on: {@code jdk.jfr} only.
 */
@NullMarked
package io.mrcache.core.events;

import org.jspecify.annotations.NullMarked;
