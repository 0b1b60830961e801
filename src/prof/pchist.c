/* SPDX-License-Identifier: MIT */
/*
 * pchist.c - raw PC ring and address-space histogram (see pchist.h).
 */
#include "pchist.h"

#include <stdlib.h>
#include <string.h>

int prof_pcring_init(ProfPcRing *r, uint32_t cap) {
    r->n = 0;
    r->cap = cap;
    r->pcs = cap ? calloc(cap, sizeof *r->pcs) : NULL;
    return cap && !r->pcs ? -1 : 0;
}

void prof_pcring_fini(ProfPcRing *r) {
    free(r->pcs);
    r->pcs = NULL;
    r->cap = 0;
}

void prof_pcring_add(ProfPcRing *r, uint64_t pc) {
    if (!r->cap) return;
    r->pcs[r->n % r->cap] = pc;
    r->n++;
}

uint64_t prof_pcring_hist(const ProfPcRing *r, uint64_t lo, uint64_t hi, uint64_t *bins,
                          uint32_t nbins, uint64_t *lo_out, uint64_t *hi_out) {
    uint64_t have = r->n < r->cap ? r->n : r->cap;
    if (!nbins || !bins || !have) return 0;
    memset(bins, 0, nbins * sizeof *bins);
    if (lo >= hi) {
        lo = UINT64_MAX, hi = 0;
        for (uint64_t i = 0; i < have; i++) {
            if (r->pcs[i] < lo) lo = r->pcs[i];
            if (r->pcs[i] >= hi) hi = r->pcs[i] + 1;
        }
    }
    if (lo_out) *lo_out = lo;
    if (hi_out) *hi_out = hi;
    uint64_t span = hi - lo, counted = 0;
    for (uint64_t i = 0; i < have; i++) {
        uint64_t pc = r->pcs[i];
        if (pc < lo || pc >= hi) continue;
        unsigned __int128 b = (unsigned __int128)(pc - lo) * nbins / span;
        bins[(uint32_t)b]++;
        counted++;
    }
    return counted;
}
