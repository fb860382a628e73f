/**
 * Free hooks: the sources of invalidations. {@link io.mrcache.verbs.hooks.InvalidatingArena} binds
 * invalidation to an FFM arena's lifetime (no window); {@link io.mrcache.verbs.hooks.UnmapMonitor} turns
 * userfaultfd unmap events into invalidations (a net for frees the JVM does not see);
 * {@link io.mrcache.verbs.hooks.MemlockLimit} reads {@code RLIMIT_MEMLOCK} for budgets and messages.
 *
 * <p>Depends on: {@code io.mrcache.core}, {@code io.mrcache.verbs}.
 */
@NullMarked
package io.mrcache.verbs.hooks;

import org.jspecify.annotations.NullMarked;
