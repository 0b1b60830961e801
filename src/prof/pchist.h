/* SPDX-License-Identifier: MIT */
/*
 * pchist.h - Cog-style raw PC ring ("pay as you go": a bigger ring keeps a longer history)
 * and a histogram over the whole address space built from it.
 *
 * Owns: ProfPcRing.  Written by the manager thread only (never by the handler); read under
 * the engine mutex.  Invariant: holds the last min(n, cap) PCs in arrival order.
 * Not signal-safe.
 */
#ifndef PROF_PCHIST_H
#define PROF_PCHIST_H

#include <stdint.h>

typedef struct ProfPcRing {
    uint64_t *pcs;
    uint32_t cap;
    uint64_t n; /* total ever added */
} ProfPcRing;

int prof_pcring_init(ProfPcRing *r, uint32_t cap);
void prof_pcring_fini(ProfPcRing *r);
void prof_pcring_add(ProfPcRing *r, uint64_t pc);
/* Histogram of the PCs in [lo, hi) into nbins (lo == hi: span of the data, which is then
 * written to lo_out, hi_out when non-NULL).  Returns the PCs counted. */
uint64_t prof_pcring_hist(const ProfPcRing *r, uint64_t lo, uint64_t hi, uint64_t *bins,
                          uint32_t nbins, uint64_t *lo_out, uint64_t *hi_out);

#endif
