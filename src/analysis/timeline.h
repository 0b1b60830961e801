/* SPDX-License-Identifier: MIT */
/*
 * timeline.h - the profile over time, as SVG: samples per time bucket stacked by thread
 * (the 8 busiest threads, the rest as "other"), the sampling interval as a step line on a
 * log scale (initial interval, then every self-tuner rate change), and marks for pauses,
 * resumes and dropped-sample events.  Deterministic output.  Not thread-safe per profile.
 */
#ifndef SAMPO_ANALYSIS_TIMELINE_H
#define SAMPO_ANALYSIS_TIMELINE_H

#include "profile.h"
#include "profile_io.h"

typedef struct {
    unsigned buckets; /* default 100 */
    unsigned width, height;
} SpTimelineOpts;

void sp_timeline_opts_default(SpTimelineOpts *o);
/* Returns 0, -1 on ENOMEM, -2 if the profile has neither samples nor events (err set). */
int sp_timeline_svg(const SpProfile *p, const SpTimelineOpts *o, SpBuf *out, char *err,
                    size_t errlen);

#endif
