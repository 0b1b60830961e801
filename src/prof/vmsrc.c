/* SPDX-License-Identifier: MIT */
/*
 * vmsrc.c - VM method sources (see vmsrc.h): a method -> index map into one growing array.
 */
#include "vmsrc.h"

#include <stdlib.h>
#include <string.h>

#include "u64map.h"

static struct {
    ProfU64Map index; /* method -> position in srcs + 1 */
    ProfVmSrc *srcs;
    uint32_t n, cap;
} vs;

static ProfVmSrc *vs_slot(uint64_t method) {
    uint64_t v;
    if (prof_u64map_get(&vs.index, method, &v)) return &vs.srcs[v - 1];
    if (vs.n == vs.cap) {
        uint32_t cap = vs.cap ? vs.cap * 2 : 256;
        ProfVmSrc *s = realloc(vs.srcs, cap * sizeof *s);
        if (!s) return NULL;
        vs.srcs = s, vs.cap = cap;
    }
    if (prof_u64map_put(&vs.index, method, (uint64_t)vs.n + 1)) return NULL;
    ProfVmSrc *s = &vs.srcs[vs.n++];
    memset(s, 0, sizeof *s);
    return s;
}

int prof_vmsrc_set(uint64_t method, const char *file, uint32_t first_line, const SampoLine *lines,
                   uint32_t n) {
    if (!method || (n && !lines)) return SAMPO_EINVAL;
    for (uint32_t i = 1; i < n; i++)
        if (lines[i].pos < lines[i - 1].pos) return SAMPO_EINVAL;
    char *f = file ? strdup(file) : NULL;
    SampoLine *l = n ? malloc(n * sizeof *l) : NULL;
    ProfVmSrc *s = (file && !f) || (n && !l) ? NULL : vs_slot(method);
    if (!s) {
        free(f);
        free(l);
        return SAMPO_ENOMEM;
    }
    if (n) memcpy(l, lines, n * sizeof *l);
    free(s->file);
    free(s->lines);
    *s = (ProfVmSrc){f, first_line, n, l};
    return SAMPO_OK;
}

const ProfVmSrc *prof_vmsrc_get(uint64_t method) {
    uint64_t v;
    return prof_u64map_get(&vs.index, method, &v) ? &vs.srcs[v - 1] : NULL;
}

uint32_t prof_vmsrc_line(const ProfVmSrc *s, uint64_t pos) {
    if (!s || !s->n || pos < s->lines[0].pos) return 0;
    uint32_t lo = 0, hi = s->n; /* the last entry with pos <= pos is in [lo, hi) */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->lines[mid].pos <= pos)
            lo = mid;
        else
            hi = mid;
    }
    return s->lines[lo].line;
}
