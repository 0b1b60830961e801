/* SPDX-License-Identifier: MIT */
/*
 * flamehtml.h - interactive flame graph: a self-contained HTML page (no network) with zoom
 * (click a frame; "Reset zoom"), search by regular expression with the matched share of the
 * total, hover details, and a differential mode for two profiles.  Weights are those of
 * `sampo export --collapsed` (nanoseconds for sampled and time profiles, calls for exact).
 * Deterministic output.  Not thread-safe per profile.
 */
#ifndef SAMPO_ANALYSIS_FLAMEHTML_H
#define SAMPO_ANALYSIS_FLAMEHTML_H

#include "flame.h"
#include "profile.h"
#include "profile_io.h"

/* The page for p; with base (may be NULL) the differential view: widths from p, colours
 * from the change of each frame's share between base and p (red grew, blue shrank).
 * Uses o->title.  Returns 0 or -1 on ENOMEM. */
int sp_flame_html(SpProfile *p, SpProfile *base, const SpFlameOpts *o, SpBuf *out);

#endif
