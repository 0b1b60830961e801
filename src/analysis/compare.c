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

double sp_pearson(const double *x, const double *y, size_t n)
{
    if (n < 2)
        return n == 1 && x[0] == y[0] ? 1.0 : 0.0;
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

static uint64_t cmp_hash(const char *s, uint64_t h)
{
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

static int tab_slot(MethodTab *t, uint64_t key, uint32_t *slot)
{
    uint32_t i = u64map_get(&t->idx, key);
    if (i != UINT32_MAX) {
        *slot = i;
        return 0;
    }
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 64;
        for (int s = 0; s < 2; s++) {
            double *a = realloc(t->self[s], nc * sizeof(double));
            if (a)
                t->self[s] = a;
            double *b = realloc(t->total[s], nc * sizeof(double));
            if (b)
                t->total[s] = b;
            uint32_t *c = realloc(t->frame[s], nc * sizeof(uint32_t));
            if (c)
                t->frame[s] = c;
            if (!a || !b || !c)
                return -1;
        }
        t->cap = nc;
    }
    for (int s = 0; s < 2; s++)
        t->self[s][t->n] = t->total[s][t->n] = 0, t->frame[s][t->n] = SP_NONE;
    *slot = (uint32_t)t->n;
    return u64map_put(&t->idx, key, (uint32_t)t->n++);
}

static int tab_fill(MethodTab *t, const SpProfile *p, int side)
{
    char name[512];
    for (uint32_t i = 0; i < p->cc.nmethods; i++) {
        const SpCcMethod *m = &p->cc.methods[i];
        uint32_t slot;
        uint64_t key = cmp_hash(sp_frame_label(p, m->frame, name, sizeof name), 14695981039346656037ull);
        if (tab_slot(t, key, &slot))
            return -1;
        t->self[side][slot] += (double)m->self;
        t->total[side][slot] += (double)m->total;
        t->frame[side][slot] = m->frame;
    }
    return 0;
}

static void tab_fini(MethodTab *t)
{
    u64map_fini(&t->idx);
    for (int s = 0; s < 2; s++)
        free(t->self[s]), free(t->total[s]), free(t->frame[s]);
}

static int cmp_diff(const void *a, const void *b)
{
    const SpDiff *x = a, *y = b;
    double dx = fabs(x->pct_a - x->pct_b), dy = fabs(y->pct_a - y->pct_b);
    if (dx != dy)
        return dx < dy ? 1 : -1;
    return strcmp(x->name, y->name);
}

static double sum(const double *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    return s;
}

static int compare_diffs(MethodTab *t, SpProfile *a, SpProfile *b, SpCompare *r)
{
    r->diffs = calloc(t->n ? t->n : 1, sizeof *r->diffs);
    if (!r->diffs)
        return -1;
    double sa = sum(t->self[0], t->n), sb = sum(t->self[1], t->n);
    for (size_t i = 0; i < t->n; i++) {
        SpDiff *d = &r->diffs[i];
        if (t->frame[0][i] != SP_NONE)
            sp_frame_label(a, t->frame[0][i], d->name, sizeof d->name);
        else
            sp_frame_label(b, t->frame[1][i], d->name, sizeof d->name);
        d->pct_a = sa > 0 ? 100.0 * t->self[0][i] / sa : 0;
        d->pct_b = sb > 0 ? 100.0 * t->self[1][i] / sb : 0;
    }
    r->ndiffs = t->n;
    qsort(r->diffs, r->ndiffs, sizeof *r->diffs, cmp_diff);
    return 0;
}

int sp_compare(SpProfile *a, SpProfile *b, SpCompare *r)
{
    MethodTab t;
    memset(&t, 0, sizeof t);
    memset(r, 0, sizeof *r);
    u64map_init(&t.idx);
    int rc = -1;
    if (sp_ccmap_ensure(a) || sp_ccmap_ensure(b) || tab_fill(&t, a, 0) || tab_fill(&t, b, 1))
        goto out;
    r->nmethods = t.n;
    r->corr_self = sp_pearson(t.self[0], t.self[1], t.n);
    r->corr_total = sp_pearson(t.total[0], t.total[1], t.n);
    if (sp_overlap(a, b, &r->overlap) || compare_diffs(&t, a, b, r))
        goto out;
    rc = 0;
out:
    tab_fini(&t);
    if (rc)
        sp_compare_fini(r);
    return rc;
}

void sp_compare_fini(SpCompare *r)
{
    free(r->diffs);
    r->diffs = NULL;
    r->ndiffs = 0;
}

/* Path hash of every node of p's tree (parents come first, so one pass suffices). */
static uint64_t *path_hashes(const SpProfile *p)
{
    uint64_t *h = malloc((p->cc.nnodes ? p->cc.nnodes : 1) * sizeof *h);
    char name[512];
    if (!h)
        return NULL;
    for (uint32_t i = 0; i < p->cc.nnodes; i++) {
        const SpCcNode *n = &p->cc.nodes[i];
        uint64_t parent = n->parent == SP_NONE ? 14695981039346656037ull : h[n->parent];
        h[i] = cmp_hash(sp_frame_label(p, n->frame, name, sizeof name), parent);
    }
    return h;
}

static double tree_total(const SpProfile *p)
{
    double t = 0;
    for (uint32_t i = 0; i < p->cc.nnodes; i++)
        t += (double)p->cc.nodes[i].self;
    return t;
}

int sp_overlap(SpProfile *a, SpProfile *b, double *overlap)
{
    U64Map map;
    uint64_t *ha = NULL, *hb = NULL;
    double *wa = NULL;
    int rc = -1;
    u64map_init(&map);
    *overlap = 0;
    if (sp_ccmap_ensure(a) || sp_ccmap_ensure(b))
        return -1;
    ha = path_hashes(a), hb = path_hashes(b);
    wa = calloc(a->cc.nnodes ? a->cc.nnodes : 1, sizeof *wa);
    if (!ha || !hb || !wa)
        goto out;
    double ta = tree_total(a), tb = tree_total(b), ov = 0;
    /* Several nodes may share a path if a producer-supplied tree repeats one: sum them. */
    for (uint32_t i = 0; i < a->cc.nnodes; i++) {
        uint32_t slot = u64map_get(&map, ha[i]);
        if (slot == UINT32_MAX && u64map_put(&map, ha[i], slot = i))
            goto out;
        wa[slot] += ta > 0 ? (double)a->cc.nodes[i].self / ta : 0;
    }
    U64Map seen;
    u64map_init(&seen);
    double *wb = calloc(b->cc.nnodes ? b->cc.nnodes : 1, sizeof *wb);
    if (!wb)
        goto out;
    for (uint32_t i = 0; i < b->cc.nnodes; i++) {
        uint32_t slot = u64map_get(&seen, hb[i]);
        if (slot == UINT32_MAX && u64map_put(&seen, hb[i], slot = i))
            break;
        wb[slot] += tb > 0 ? (double)b->cc.nodes[i].self / tb : 0;
    }
    for (uint32_t i = 0; i < b->cc.nnodes; i++) {
        if (u64map_get(&seen, hb[i]) != i)
            continue;
        uint32_t s = u64map_get(&map, hb[i]);
        if (s != UINT32_MAX)
            ov += wa[s] < wb[i] ? wa[s] : wb[i];
    }
    free(wb);
    u64map_fini(&seen);
    *overlap = ov;
    rc = 0;
out:
    u64map_fini(&map);
    free(ha);
    free(hb);
    free(wa);
    return rc;
}
