/* SPDX-License-Identifier: MIT */
/*
 * report.h - the text report of `sampo report`: run summary (trigger, mode, rates, dropped
 * samples), Cog-style flat profile (self %, cumulative %, total %, counts), call tree, top
 * call edges, per-thread view, VM-state split and events (self-tuner rate changes).
 * For exact profiles the counts are invocations and a time-weighted view is added when the
 * CC-Map carries times.  Deterministic output.  Not thread-safe per profile.
 */
#ifndef SAMPO_ANALYSIS_REPORT_H
#define SAMPO_ANALYSIS_REPORT_H

#include "pprof.h" /* SpLineFn */
#include "profile.h"
#include "profile_io.h"

typedef struct {
    /* The source position of a call site, shown after it (NULL: none): writes "file:line"
     * of position callsite in the method of frame caller to buf and answers 0, or answers
     * -1 when it is not known. */
    int (*site_line)(void *ctx, const SpProfile *p, uint32_t caller, uint32_t callsite, char *buf,
                     size_t len);
    void *site_ctx;
    unsigned limit;      /* rows in the flat profile and edge list (0 = all) */
    double tree_min;     /* hide call-tree nodes below this % of total */
    unsigned tree_depth; /* maximum call-tree depth shown (0 = unlimited) */
    int sections;        /* bitmask of SP_REPORT_* (0 = all) */
    int sort_total;      /* flat profile sorted by inclusive (cum) weight instead of self */
    double min_pct;      /* hide flat rows and edges whose sort weight is below this % */
    int lines;           /* add the source-line view (leaves at a known line) */
    SpLineFn linefn;     /* with lines: the line of a native leaf's PC, or NULL */
    void *linectx;
} SpReportOpts;

enum {
    SP_REPORT_SUMMARY = 1,
    SP_REPORT_FLAT = 2,
    SP_REPORT_TREE = 4,
    SP_REPORT_EDGES = 8,
    SP_REPORT_THREADS = 16,
    SP_REPORT_STATES = 32,
    SP_REPORT_EVENTS = 64,
};

void sp_report_opts_default(SpReportOpts *o);
int sp_report(SpProfile *p, const SpReportOpts *o, SpBuf *out);

/* Keeps the samples that have a frame whose label matches the POSIX extended regular
 * expression focus (if not NULL) and none that matches ignore (if not NULL), as pprof's
 * --focus and --ignore do.  Needs samples: a profile that has only a CC-Map (exact mode) is
 * refused.  Returns 0, -1 out of memory, -2 with a message in err (bad expression, no
 * samples). */
int sp_profile_filter_frames(SpProfile *p, const char *focus, const char *ignore, char *err,
                             size_t errlen);

#endif
