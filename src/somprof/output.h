/* SPDX-License-Identifier: MIT */
/*
 * output.h - what the som profiler writes: the CC-Map section of a profile built from a
 * name-keyed calling-context tree, the JSON CC-Map dump (schema in docs/profile-format.md,
 * "CC-Map JSON dump"), and the text report.  Runs on the main thread at exit; not
 * signal-safe.
 */
#ifndef SOMPROF_OUTPUT_H
#define SOMPROF_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "cct.h"
#include "profile.h"

/* Fills p's CC-Map section from tree t whose node methods are interned names (const char *).
 * exact: node counts are invocations (edges count calls); else samples.  Returns 0 or -1. */
int spo_ccmap_from_tree(SpProfile *p, const SpcTree *t, bool exact);
/* Writes p's CC-Map section (computed from the samples if absent) as JSON to path. */
int spo_write_dump(SpProfile *p, const char *path, char *err, size_t errlen);
/* Prints the report of p to f (sp_report, every section). */
int spo_print_report(SpProfile *p, FILE *f);
/* Weight per VM state of p's samples, into w[SP_VM_STATE_COUNT]; answers the total. */
uint64_t spo_state_weights(const SpProfile *p, uint64_t *w);

#endif
