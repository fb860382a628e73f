package io.mrcache.core;

/** Which local-only regions a miss folds into its new registration (remote regions never merge, I6). */
public enum MergePolicy {
    /** Never merge; a region lacking the requested rights is still replaced by the union (access upgrade). */
    NONE,
    /** Merge local-only regions that overlap the request into one registration, as UCX does. */
    OVERLAPPING,
    /** Also merge local-only regions that touch the request end to start. */
    OVERLAPPING_AND_ADJACENT
}
