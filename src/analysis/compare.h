/* SPDX-License-Identifier: MIT */
/*
 * compare.h - agreement between two profiles, as in the Rotor paper's accuracy tables:
 * Pearson correlation of per-method counters and the Arnold-Ryder overlap of calling
 * context trees.
 *
 * Methods are matched by display name (so "Class>>selector" or a C function name matches
 * across runs and address spaces); tree nodes by their full root..node name path.
 * Overlap = sum over all context paths of min(wA(path), wB(path)) where w is a node's self
 * weight divided by the profile's total self weight (1.0 = identical, 0 = disjoint).  Paths
 * are compared with recursion folded (a repeated caller->callee edge on a path re-enters the
 * ancestor it names), as the som profiler's exact and coop trees are built, so that they
 * match the async samples' unfolded paths.
 * Not thread-safe per profile (computes missing CC-Maps); not async-signal-safe.
 */
#ifndef SAMPO_ANALYSIS_COMPARE_H
#define SAMPO_ANALYSIS_COMPARE_H

#include <stddef.h>

#include "profile.h"

/* Pearson correlation of x and y; 0 if n < 2 or either has zero variance... except that two
 * identical constant vectors give 1. */
double sp_pearson(const double *x, const double *y, size_t n);

typedef struct {
    char *name;          /* owned */
    double pct_a, pct_b; /* self weight as a percentage of each profile's total */
} SpDiff;

typedef struct {
    double corr_self;  /* Pearson over self counters of the union of methods */
    double corr_total; /* Pearson over total (inclusive) counters */
    double overlap;    /* Arnold-Ryder overlap of the context trees, 0..1 */
    size_t nmethods;   /* size of the union of methods */
    SpDiff *diffs;     /* all methods, sorted by |pct_a - pct_b| descending (owned) */
    size_t ndiffs;
} SpCompare;

/* Fills r; returns 0 or -1 on ENOMEM.  Release with sp_compare_fini. */
int sp_compare(SpProfile *a, SpProfile *b, SpCompare *r);
/* time_weighted: a profile that carries times (exact profiles: methods' self_ns/total_ns,
 * nodes' inclusive time_ns) is compared by time instead of by count - the fair comparison
 * of an exact (invocation-counting) profile with a sampled one.  Profiles without times
 * (sampled) use their counts, which already measure time. */
int sp_compare_ex(SpProfile *a, SpProfile *b, int time_weighted, SpCompare *r);
void sp_compare_fini(SpCompare *r);
/* Overlap alone. */
int sp_overlap(SpProfile *a, SpProfile *b, double *overlap);
int sp_overlap_ex(SpProfile *a, SpProfile *b, int time_weighted, double *overlap);
/* 1 if p's CC-Map carries a time-weighted view (any method self_ns or node time_ns). */
int sp_has_times(const SpProfile *p);

#endif
