/* SPDX-License-Identifier: MIT */
/*
 * compare.c - Pearson correlation and context-tree overlap (see compare.h).
 *
 * Names are hashed (64-bit FNV-1a) to match methods and paths across profiles; a path hash
 * chains the parent's hash with the node's name.  Collisions are astronomically unlikely at
 * profile sizes and would only merge two entries.
 */
#include "compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "u64map.h"

double sp_pearson(const double *x, const double *y, size_t n) {
    if (n < 2) return n == 1 && x[0] == y[0] ? 1.0 : 0.0;
    double mx = 0, my = 0;
    for (size_t i = 0; i < n; i++)
        mx += x[i], my += y[i];
    mx /= (double)n, my /= (double)n;
    double sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < n; i++) {
        double dx = x[i] - mx, dy = y[i] - my;
        sxy += dx * dy, sxx += dx * dx, syy += dy * dy;
    }
    if (sxx == 0 || syy == 0) {
        int same = 1;
        for (size_t i = 0; i < n; i++)
            same &= x[i] == y[i];
        return same ? 1.0 : 0.0;
    }
    return sxy / sqrt(sxx * syy);
}

static uint64_t cmp_hash(const char *s, uint64_t h) {
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (h ^ 0xff) * 1099511628211ull; /* terminator so "ab"+"c" != "a"+"bc" */
}

/* A name-keyed table of per-method counters for both profiles. */
typedef struct {
    U64Map idx;
    double *self[2], *total[2];
    uint32_t *frame[2]; /* a representative frame per side, for naming */
    size_t n, cap;
} MethodTab;

static int tab_slot(MethodTab *t, uint64_t key, uint32_t *slot) {
    uint32_t i = u64map_get(&t->idx, key);
    if (i != UINT32_MAX) {
        *slot = i;
        return 0;
    }
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 64;
        for (int s = 0; s < 2; s++) {
            double *a = realloc(t->self[s], nc * sizeof(double));
            if (a) t->self[s] = a;
            double *b = realloc(t->total[s], nc * sizeof(double));
            if (b) t->total[s] = b;
            uint32_t *c = realloc(t->frame[s], nc * sizeof(uint32_t));
            if (c) t->frame[s] = c;
            if (!a || !b || !c) return -1;
        }
        t->cap = nc;
    }
    for (int s = 0; s < 2; s++)
        t->self[s][t->n] = t->total[s][t->n] = 0, t->frame[s][t->n] = SP_NONE;
    *slot = (uint32_t)t->n;
    return u64map_put(&t->idx, key, (uint32_t)t->n++);
}

int sp_has_times(const SpProfile *p) {
    for (uint32_t i = 0; i < p->cc.nmethods; i++)
        if (p->cc.methods[i].self_ns || p->cc.methods[i].total_ns) return 1;
    for (uint32_t i = 0; i < p->cc.nnodes; i++)
        if (p->cc.nodes[i].time_ns) return 1;
    return 0;
}

static int tab_fill(MethodTab *t, const SpProfile *p, int side, int tw) {
    char name[64];
    tw = tw && sp_has_times(p);
    for (uint32_t i = 0; i < p->cc.nmethods; i++) {
        const SpCcMethod *m = &p->cc.methods[i];
        uint32_t slot;
        uint64_t key =
            cmp_hash(sp_frame_label(p, m->frame, name, sizeof name), 14695981039346656037ull);
        if (tab_slot(t, key, &slot)) return -1;
        t->self[side][slot] += (double)(tw ? m->self_ns : m->self);
        t->total[side][slot] += (double)(tw ? m->total_ns : m->total);
        t->frame[side][slot] = m->frame;
    }
    return 0;
}

static void tab_fini(MethodTab *t) {
    u64map_fini(&t->idx);
    for (int s = 0; s < 2; s++)
        free(t->self[s]), free(t->total[s]), free(t->frame[s]);
}

static int cmp_diff(const void *a, const void *b) {
    const SpDiff *x = a, *y = b;
    double dx = fabs(x->pct_a - x->pct_b), dy = fabs(y->pct_a - y->pct_b);
    if (dx != dy) return dx < dy ? 1 : -1;
    return strcmp(x->name, y->name);
}

static double sum(const double *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    return s;
}

static int compare_diffs(MethodTab *t, SpProfile *a, SpProfile *b, SpCompare *r) {
    r->diffs = calloc(t->n ? t->n : 1, sizeof *r->diffs);
    if (!r->diffs) return -1;
    r->ndiffs = t->n; /* names are freed by sp_compare_free even on a later failure */
    double sa = sum(t->self[0], t->n), sb = sum(t->self[1], t->n);
    for (size_t i = 0; i < t->n; i++) {
        SpDiff *d = &r->diffs[i];
        char buf[64];
        d->name =
            strdup(t->frame[0][i] != SP_NONE ? sp_frame_label(a, t->frame[0][i], buf, sizeof buf)
                                             : sp_frame_label(b, t->frame[1][i], buf, sizeof buf));
        if (!d->name) return -1;
        d->pct_a = sa > 0 ? 100.0 * t->self[0][i] / sa : 0;
        d->pct_b = sb > 0 ? 100.0 * t->self[1][i] / sb : 0;
    }
    r->ndiffs = t->n;
    if (r->ndiffs) qsort(r->diffs, r->ndiffs, sizeof *r->diffs, cmp_diff);
    return 0;
}

int sp_compare(SpProfile *a, SpProfile *b, SpCompare *r) {
    return sp_compare_ex(a, b, 0, r);
}

int sp_compare_ex(SpProfile *a, SpProfile *b, int tw, SpCompare *r) {
    MethodTab t;
    memset(&t, 0, sizeof t);
    memset(r, 0, sizeof *r);
    u64map_init(&t.idx);
    int rc = -1;
    if (sp_ccmap_ensure(a) || sp_ccmap_ensure(b) || tab_fill(&t, a, 0, tw) ||
        tab_fill(&t, b, 1, tw))
        goto out;
    r->nmethods = t.n;
    r->corr_self = sp_pearson(t.self[0], t.self[1], t.n);
    r->corr_total = sp_pearson(t.total[0], t.total[1], t.n);
    if (sp_overlap_ex(a, b, tw, &r->overlap) || compare_diffs(&t, a, b, r)) goto out;
    rc = 0;
out:
    tab_fini(&t);
    if (rc) sp_compare_fini(r);
    return rc;
}

void sp_compare_fini(SpCompare *r) {
    for (size_t i = 0; r->diffs && i < r->ndiffs; i++)
        free(r->diffs[i].name);
    free(r->diffs);
    r->diffs = NULL;
    r->ndiffs = 0;
}

/* Path hash of every node of p's tree (parents come first, so one pass suffices), with
 * recursion folded as the som profiler's trees fold it (docs/design/vm-profiling.md): a node
 * whose (caller, callee) names repeat an edge above it on its path takes that ancestor's
 * path.  A folded tree (exact, coop) and an unfolded one (async samples) of the same run
 * then have the same paths; without recursion nothing changes. */
static uint64_t *path_hashes(const SpProfile *p) {
    uint32_t n = p->cc.nnodes;
    uint64_t *h = malloc((n ? n : 1) * sizeof *h);
    uint64_t *lh = malloc((n ? n : 1) * sizeof *lh);
    uint32_t *canon = malloc((n ? n : 1) * sizeof *canon);
    char name[512];
    if (!h || !lh || !canon) goto fail;
    for (uint32_t i = 0; i < n; i++) {
        const SpCcNode *x = &p->cc.nodes[i];
        const char *nm = sp_frame_label(p, x->frame, name, sizeof name);
        lh[i] = cmp_hash(nm, 0);
        canon[i] = i;
        if (x->parent == SP_NONE) {
            h[i] = cmp_hash(nm, 14695981039346656037ull);
            continue;
        }
        uint32_t up = canon[x->parent]; /* the caller, folded */
        for (uint32_t a = up; a != SP_NONE;
             a = p->cc.nodes[a].parent == SP_NONE ? SP_NONE : canon[p->cc.nodes[a].parent]) {
            uint32_t ap = p->cc.nodes[a].parent == SP_NONE ? SP_NONE : canon[p->cc.nodes[a].parent];
            if (lh[a] == lh[i] && ap != SP_NONE && lh[ap] == lh[up]) {
                canon[i] = a;
                break;
            }
        }
        h[i] = canon[i] != i ? h[canon[i]] : cmp_hash(nm, h[up]);
    }
    free(lh);
    free(canon);
    return h;
fail:
    free(h);
    free(lh);
    free(canon);
    return NULL;
}

/* Per-node weight: self count, or (time-weighted) self time = inclusive time minus the
 * children's inclusive times, clamped at 0.  Returns a malloc'ed array, *total = its sum. */
static double *node_weights(const SpProfile *p, int tw, double *total) {
    uint32_t n = p->cc.nnodes;
    double *w = calloc(n ? n : 1, sizeof *w);
    if (!w) return NULL;
    tw = tw && sp_has_times(p);
    for (uint32_t i = 0; i < n; i++)
        w[i] = (double)(tw ? p->cc.nodes[i].time_ns : p->cc.nodes[i].self);
    if (tw)
        for (uint32_t i = 0; i < n; i++)
            if (p->cc.nodes[i].parent != SP_NONE)
                w[p->cc.nodes[i].parent] -= (double)p->cc.nodes[i].time_ns;
    *total = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (w[i] < 0) w[i] = 0;
        *total += w[i];
    }
    return w;
}

int sp_overlap(SpProfile *a, SpProfile *b, double *overlap) {
    return sp_overlap_ex(a, b, 0, overlap);
}

/* Sums normalized node weights per distinct path hash into map/acc. */
static int path_sums(const SpProfile *p, int tw, U64Map *map, double **acc) {
    double total;
    uint64_t *h = path_hashes(p);
    double *w = node_weights(p, tw, &total);
    *acc = calloc(p->cc.nnodes ? p->cc.nnodes : 1, sizeof **acc);
    int rc = -1;
    if (!h || !w || !*acc) goto out;
    for (uint32_t i = 0; i < p->cc.nnodes; i++) {
        uint32_t slot = u64map_get(map, h[i]);
        if (slot == UINT32_MAX && u64map_put(map, h[i], slot = i)) goto out;
        (*acc)[slot] += total > 0 ? w[i] / total : 0;
    }
    rc = 0;
out:
    free(h);
    free(w);
    return rc;
}

int sp_overlap_ex(SpProfile *a, SpProfile *b, int tw, double *overlap) {
    U64Map ma, mb;
    double *wa = NULL, *wb = NULL;
    int rc = -1;
    *overlap = 0;
    if (sp_ccmap_ensure(a) || sp_ccmap_ensure(b)) return -1;
    u64map_init(&ma);
    u64map_init(&mb);
    if (path_sums(a, tw, &ma, &wa) || path_sums(b, tw, &mb, &wb)) goto out;
    double ov = 0;
    for (uint32_t j = 0; j < mb.cap; j++) { /* every distinct path of b */
        if (!mb.vals[j]) continue;
        uint32_t sb = mb.vals[j] - 1, sa = u64map_get(&ma, mb.keys[j]);
        if (sa != UINT32_MAX) ov += wa[sa] < wb[sb] ? wa[sa] : wb[sb];
    }
    *overlap = ov;
    rc = 0;
out:
    u64map_fini(&ma);
    u64map_fini(&mb);
    free(wa);
    free(wb);
    return rc;
}
