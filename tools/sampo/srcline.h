/* SPDX-License-Identifier: MIT */
/*
 * srcline.h - per-PC source lines (with inlined functions) for `sampo export --pprof`, read
 * from the DWARF of the profiled objects when they are still on disk with the recorded build
 * ID.  Built with libdw when available (SAMPO_HAVE_LIBDW); otherwise it resolves nothing.
 * Not thread-safe.
 */
#ifndef SAMPO_TOOLS_SRCLINE_H
#define SAMPO_TOOLS_SRCLINE_H

#include "pprof.h"
#include "profile.h"

typedef struct SampoSrcLines SampoSrcLines;

/* A resolver for the mappings of p (opened lazily); NULL on ENOMEM. */
SampoSrcLines *sampo_srclines_new(const SpProfile *p);
void sampo_srclines_free(SampoSrcLines *s);
/* An SpLineFn: ctx is the SampoSrcLines. */
uint32_t sampo_srcline(void *ctx, const SpProfile *p, uint32_t m, uint64_t pc, SpSrcLine *out,
                       uint32_t max);

#endif
