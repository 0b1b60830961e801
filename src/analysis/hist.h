/* SPDX-License-Identifier: MIT */
/*
 * hist.h - Cog-style PC histogram over the address space, as SVG: bars = samples per address
 * bin, a line = cumulative share of samples, the hottest bins numbered and listed (symbol,
 * share) in a legend under the axis.
 * Zoom by an address range or to one symbol.  Without a zoom, addresses are grouped into
 * segments (split where consecutive sampled PCs are more than 16 MiB apart) that share the
 * x axis equally, so a program and its far-away libraries are all visible.
 * Deterministic output.  Not thread-safe per profile.
 */
#ifndef SAMPO_ANALYSIS_HIST_H
#define SAMPO_ANALYSIS_HIST_H

#include "profile.h"
#include "profile_io.h"

typedef struct {
    uint64_t lo, hi;    /* zoom range [lo, hi) when hi > lo */
    const char *symbol; /* zoom to this symbol (SYMS, else a native frame with a size) */
    unsigned bins;      /* default 200 */
    unsigned width, height;
    unsigned labels; /* number of hottest bins to label (default 8, at most 32) */
} SpHistOpts;

void sp_hist_opts_default(SpHistOpts *o);
/* Returns 0, -1 on ENOMEM, or -2 if the symbol is unknown / the range holds no samples
 * (err gets a message). */
int sp_hist_svg(const SpProfile *p, const SpHistOpts *o, SpBuf *out, char *err, size_t errlen);
/* Name for an address: symbol, else native frame, else "0x..."; writes into buf. */
const char *sp_pc_name(const SpProfile *p, uint64_t pc, char *buf, size_t len);

#endif
