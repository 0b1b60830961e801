/* SPDX-License-Identifier: MIT */
/*
 * ccmap.c - CC-Map construction, partial-sample update, queries, pruning, snapshots.
 *
 * Owns the node arrays and one open-addressing hash table that finds a node from its
 * identity: (kind, a, b) -> index.  Not thread-safe, not signal-safe (see ccmap.h).
 */
#include "ccmap.h"

#include "u64map.h"

#include <stdlib.h>
#include <string.h>

enum { K_METHOD = 1, K_SITE, K_CALLEE, K_CTX, K_SITEREF, K_DESC };

/* ---- storage helpers ----------------------------------------------------------------- */

static int cc_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap) return 0;
    uint32_t ncap = *cap ? *cap * 2 : 64;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*arr, (size_t)ncap * elem);
    if (!p) return -1;
    *arr = p;
    *cap = ncap;
    return 0;
}

static uint64_t cc_hash(uint32_t kind, uint64_t a, uint64_t b) {
    uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;
    h ^= kind * 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h * 0xd6e8feb86659fd93ull;
}

static uint32_t cc_lookup(const ProfCCMap *m, uint32_t kind, uint64_t a, uint64_t b) {
    if (!m->tab_cap) return CC_NONE;
    uint32_t mask = m->tab_cap - 1;
    for (uint32_t i = (uint32_t)cc_hash(kind, a, b) & mask;; i = (i + 1) & mask) {
        const CcSlot *s = &m->tab[i];
        if (!s->kind) return CC_NONE;
        if (s->kind == kind && s->a == a && s->b == b) return s->idx;
    }
}

static void cc_put_raw(CcSlot *tab, uint32_t cap, const CcSlot *e) {
    uint32_t mask = cap - 1;
    uint32_t i = (uint32_t)cc_hash(e->kind, e->a, e->b) & mask;
    while (tab[i].kind)
        i = (i + 1) & mask;
    tab[i] = *e;
}

static int cc_insert(ProfCCMap *m, uint32_t kind, uint64_t a, uint64_t b, uint32_t idx) {
    if ((m->tab_n + 1) * 2 > m->tab_cap) {
        uint32_t ncap = m->tab_cap ? m->tab_cap * 2 : 256;
        CcSlot *nt = prof_zalloc((size_t)ncap * sizeof *nt); /* see u64map.h */
        if (!nt) return -1;
        for (uint32_t i = 0; i < m->tab_cap; i++)
            if (m->tab[i].kind) cc_put_raw(nt, ncap, &m->tab[i]);
        free(m->tab);
        m->tab = nt;
        m->tab_cap = ncap;
    }
    CcSlot e = {a, b, kind, idx};
    cc_put_raw(m->tab, m->tab_cap, &e);
    m->tab_n++;
    return 0;
}

/* ---- node creation --------------------------------------------------------------------- */

static uint32_t cc_method(ProfCCMap *m, uint64_t id) {
    uint32_t i = cc_lookup(m, K_METHOD, id, 0);
    if (i != CC_NONE) return i;
    if (cc_grow((void **)&m->m, &m->capm, m->nm + 1, sizeof *m->m)) return CC_NONE;
    i = m->nm;
    if (cc_insert(m, K_METHOD, id, 0, i)) return CC_NONE;
    m->m[i] = (CcMethod){.id = id, .first_site = CC_NONE, .first_ctx = CC_NONE};
    m->nm++;
    return i;
}

static uint32_t cc_site(ProfCCMap *m, uint32_t method, uint64_t pos) {
    uint32_t i = cc_lookup(m, K_SITE, method, pos);
    if (i != CC_NONE) return i;
    if (cc_grow((void **)&m->s, &m->caps, m->ns + 1, sizeof *m->s)) return CC_NONE;
    i = m->ns;
    if (cc_insert(m, K_SITE, method, pos, i)) return CC_NONE;
    m->s[i] = (CcSite){.method = method,
                       .pos = pos,
                       .next_site = m->m[method].first_site,
                       .first_callee = CC_NONE,
                       .first_ref = CC_NONE};
    m->m[method].first_site = i;
    m->ns++;
    return i;
}

static uint32_t cc_callee(ProfCCMap *m, uint32_t site, uint32_t method) {
    uint32_t i = cc_lookup(m, K_CALLEE, site, method);
    if (i != CC_NONE) return i;
    if (cc_grow((void **)&m->c, &m->capc, m->nc + 1, sizeof *m->c)) return CC_NONE;
    i = m->nc;
    if (cc_insert(m, K_CALLEE, site, method, i)) return CC_NONE;
    m->c[i] = (CcCallee){.site = site,
                         .method = method,
                         .next_callee = m->s[site].first_callee,
                         .first_ref = CC_NONE};
    m->s[site].first_callee = i;
    m->nc++;
    return i;
}

static uint32_t cc_siteref(ProfCCMap *m, uint32_t ctx, uint32_t site) {
    uint32_t i = cc_lookup(m, K_SITEREF, ctx, site);
    if (i != CC_NONE) return i;
    if (cc_grow((void **)&m->r, &m->capr, m->nr + 1, sizeof *m->r)) return CC_NONE;
    i = m->nr;
    if (cc_insert(m, K_SITEREF, ctx, site, i)) return CC_NONE;
    m->r[i] = (CcSiteRef){.ctx = ctx,
                          .site = site,
                          .next_sr = m->x[ctx].first_sr,
                          .next_ref = m->s[site].first_ref,
                          .first_child = CC_NONE};
    m->x[ctx].first_sr = i;
    m->s[site].first_ref = i;
    m->nr++;
    return i;
}

/* A CalleeRef: method `method` entered through CallSiteRef sr (CC_NONE: a root). */
static uint32_t cc_ctx(ProfCCMap *m, uint32_t sr, uint32_t method, uint32_t callee) {
    uint64_t key_a = sr == CC_NONE ? UINT64_MAX : sr;
    uint32_t i = cc_lookup(m, K_CTX, key_a, method);
    if (i != CC_NONE) return i;
    if (cc_grow((void **)&m->x, &m->capx, m->nx + 1, sizeof *m->x)) return CC_NONE;
    i = m->nx;
    if (cc_insert(m, K_CTX, key_a, method, i)) return CC_NONE;
    CcCtx *x = &m->x[i];
    *x = (CcCtx){.parent_sr = sr,
                 .method = method,
                 .callee = callee,
                 .first_sr = CC_NONE,
                 .next_ref = CC_NONE,
                 .next_mref = m->m[method].first_ctx};
    m->m[method].first_ctx = i;
    if (sr == CC_NONE) {
        x->next_sibling = m->first_root;
        m->first_root = i;
    } else {
        x->next_sibling = m->r[sr].first_child;
        m->r[sr].first_child = i;
        x->depth = m->x[m->r[sr].ctx].depth + 1;
    }
    if (callee != CC_NONE) {
        x->next_ref = m->c[callee].first_ref;
        m->c[callee].first_ref = i;
    }
    m->nx++;
    return i;
}

/* ---- lifetime -------------------------------------------------------------------------- */

static uint32_t cc_default_max = PROF_CCMAP_MAX_CTX_DEFAULT;

void prof_ccmap_set_default_max(uint32_t max_ctx) {
    cc_default_max = max_ctx ? max_ctx : PROF_CCMAP_MAX_CTX_DEFAULT;
}

ProfCCMap *prof_ccmap_new(void) {
    ProfCCMap *m = calloc(1, sizeof *m);
    if (m) m->first_root = CC_NONE, m->max_ctx = cc_default_max;
    return m;
}

void prof_ccmap_clear(ProfCCMap *m) {
    m->nm = m->ns = m->nc = m->nx = m->nr = 0;
    m->first_root = CC_NONE;
    if (m->tab) memset(m->tab, 0, (size_t)m->tab_cap * sizeof *m->tab);
    m->tab_n = 0;
    m->names_len = 0;
    m->total = 0;
    m->folded = m->merged = 0;
}

void prof_ccmap_free(ProfCCMap *m) {
    if (!m) return;
    free(m->m);
    free(m->s);
    free(m->c);
    free(m->x);
    free(m->r);
    free(m->tab);
    free(m->names);
    free(m);
}

static void *cc_dup(const void *p, size_t n) {
    if (!n) return NULL;
    void *q = malloc(n);
    if (q) memcpy(q, p, n);
    return q;
}

ProfCCMap *prof_ccmap_clone(const ProfCCMap *m) {
    ProfCCMap *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    *c = *m;
    c->capm = m->nm, c->caps = m->ns, c->capc = m->nc, c->capx = m->nx, c->capr = m->nr;
    c->names_cap = m->names_len;
    c->m = cc_dup(m->m, (size_t)m->nm * sizeof *m->m);
    c->s = cc_dup(m->s, (size_t)m->ns * sizeof *m->s);
    c->c = cc_dup(m->c, (size_t)m->nc * sizeof *m->c);
    c->x = cc_dup(m->x, (size_t)m->nx * sizeof *m->x);
    c->r = cc_dup(m->r, (size_t)m->nr * sizeof *m->r);
    c->tab = cc_dup(m->tab, (size_t)m->tab_cap * sizeof *m->tab);
    c->names = cc_dup(m->names, m->names_len);
    if ((m->nm && !c->m) || (m->ns && !c->s) || (m->nc && !c->c) || (m->nx && !c->x) ||
        (m->nr && !c->r) || (m->tab_cap && !c->tab) || (m->names_len && !c->names)) {
        prof_ccmap_free(c);
        return NULL;
    }
    return c;
}

/* ---- update ------------------------------------------------------------------------------ */

/* Credits one sample (weight w) to a frame of method mi entered through general Callee
 * callee (CC_NONE: the outermost frame): once per sample and node (stamps). */
static void cc_credit(ProfCCMap *m, uint32_t mi, uint32_t callee, uint64_t w) {
    CcMethod *me = &m->m[mi];
    if (me->stamp != m->stamp) me->stamp = m->stamp, me->total += w;
    if (callee == CC_NONE) return;
    CcCallee *c = &m->c[callee];
    if (c->stamp != m->stamp) c->stamp = m->stamp, c->count += w;
    CcSite *s = &m->s[c->site];
    if (s->stamp != m->stamp) s->stamp = m->stamp, s->count += w;
}

/* Key of the descent cache: (pos, callee id) mixed into one word; entries are checked on use
 * (cc_desc_is), so a collision only costs the slow path. */
static uint64_t cc_desc_key(uint64_t pos, uint64_t id) {
    return cc_hash(K_DESC, pos, id);
}

/* Whether context c was entered by the call from method caller at pos to method id. */
static int cc_desc_is(const ProfCCMap *m, uint32_t c, uint32_t caller, uint64_t pos, uint64_t id) {
    const CcCtx *x = &m->x[c];
    if (x->callee == CC_NONE || m->m[x->method].id != id) return 0;
    const CcSite *s = &m->s[m->c[x->callee].site];
    return s->method == caller && s->pos == pos;
}

/* The nearest context on ctx's path (ctx included) entered through Callee e, or CC_NONE.
 * Short: no path holds a Callee twice, so the tree is as deep as the distinct call edges. */
static uint32_t cc_fold_target(const ProfCCMap *m, uint32_t ctx, uint32_t e) {
    for (uint32_t a = ctx; a != CC_NONE; a = prof_ccmap_ctx_parent(m, a))
        if (m->x[a].callee == e) return a;
    return CC_NONE;
}

/* Descends one call: from context ctx, where method caller runs (ctx's own method unless the
 * caller was merged into ctx), through position pos into callee method id.  Returns the context the
 * frame gets - ctx's child, or the ancestor the same call opened (recursion: folded), or ctx itself
 * when the map holds max_ctx contexts (merged) - and its general Callee in *callee; CC_NONE on
 * ENOMEM.  A known descent takes one lookup (K_DESC, a cache over the lookups below): partial
 * samples of code that creates new activations all the time (a parser) descend 10-20 frames per
 * sample. */
static uint32_t cc_descend(ProfCCMap *m, uint32_t ctx, uint32_t caller, uint64_t pos, uint64_t id,
                           uint32_t *callee) {
    uint64_t key = cc_desc_key(pos, id);
    uint32_t hit = cc_lookup(m, K_DESC, ctx, key);
    if (hit != CC_NONE && cc_desc_is(m, hit, caller, pos, id)) {
        *callee = m->x[hit].callee;
        if (m->r[m->x[hit].parent_sr].ctx != ctx) m->folded++;
        return hit;
    }
    uint32_t mi = cc_method(m, id);
    if (mi == CC_NONE) return CC_NONE;
    uint32_t site = cc_site(m, caller, pos);
    if (site == CC_NONE) return CC_NONE;
    uint32_t e = cc_callee(m, site, mi);
    if (e == CC_NONE) return CC_NONE;
    *callee = e;
    uint32_t sr = cc_lookup(m, K_SITEREF, ctx, site);
    uint32_t c = sr == CC_NONE ? CC_NONE : cc_lookup(m, K_CTX, sr, mi);
    if (c == CC_NONE) {
        c = cc_fold_target(m, ctx, e);
        if (c != CC_NONE) m->folded++;
    }
    if (c == CC_NONE && (m->nx >= m->max_ctx || caller != m->x[ctx].method)) {
        m->merged++;
        return ctx;
    }
    if (c == CC_NONE) {
        sr = cc_siteref(m, ctx, site);
        c = sr == CC_NONE ? CC_NONE : cc_ctx(m, sr, mi, e);
    }
    if (c != CC_NONE && hit == CC_NONE && cc_insert(m, K_DESC, ctx, key, c)) return CC_NONE;
    return c;
}

int prof_ccmap_add(ProfCCMap *m, const uint64_t *methods, const uint64_t *pos, uint32_t n,
                   uint64_t weight, uint32_t start_ctx, uint32_t *ctx_out) {
    if (!m || !methods || n == 0) return SAMPO_EINVAL;
    uint32_t ctx, mi;
    if (start_ctx == CC_NONE) {
        mi = cc_method(m, methods[n - 1]);
        if (mi == CC_NONE) return SAMPO_ENOMEM;
        ctx = cc_ctx(m, CC_NONE, mi, CC_NONE); /* roots are not bounded: one per method */
        if (ctx == CC_NONE) return SAMPO_ENOMEM;
    } else {
        if (start_ctx >= m->nx || m->m[m->x[start_ctx].method].id != methods[n - 1])
            return SAMPO_EINVAL;
        ctx = start_ctx;
        mi = m->x[ctx].method;
    }
    m->stamp++;
    m->total += weight;
    /* The visited frame and its callers: the general nodes of its context path. */
    for (uint32_t a = ctx; a != CC_NONE; a = prof_ccmap_ctx_parent(m, a))
        cc_credit(m, m->x[a].method, m->x[a].callee, weight);
    if (ctx_out) ctx_out[n - 1] = ctx;
    for (uint32_t i = n - 1; i-- > 0;) {
        uint32_t e;
        ctx = cc_descend(m, ctx, mi, pos ? pos[i + 1] : 0, methods[i], &e);
        if (ctx == CC_NONE) return SAMPO_ENOMEM;
        mi = m->c[e].method;
        cc_credit(m, mi, e, weight);
        if (ctx_out) ctx_out[i] = ctx;
    }
    m->x[ctx].self += weight;
    m->m[mi].self += weight;
    /* Contexts: the leaf's path (the sample's stack, less what recursion folded). */
    for (uint32_t a = ctx; a != CC_NONE; a = prof_ccmap_ctx_parent(m, a)) {
        m->x[a].total += weight;
        if (m->x[a].parent_sr != CC_NONE) m->r[m->x[a].parent_sr].count += weight;
    }
    return SAMPO_OK;
}

/* ---- names --------------------------------------------------------------------------- */

uint32_t prof_ccmap_find_method(const ProfCCMap *m, uint64_t id) {
    return cc_lookup(m, K_METHOD, id, 0);
}

int prof_ccmap_set_name(ProfCCMap *m, uint64_t id, const char *name) {
    uint32_t mi = cc_method(m, id);
    if (mi == CC_NONE || !name) return SAMPO_ENOMEM;
    size_t len = strlen(name) + 1;
    if (cc_grow((void **)&m->names, &m->names_cap, m->names_len + (uint32_t)len, 1))
        return SAMPO_ENOMEM;
    memcpy(m->names + m->names_len, name, len);
    m->m[mi].name = m->names_len + 1;
    m->names_len += (uint32_t)len;
    return SAMPO_OK;
}

const char *prof_ccmap_name(const ProfCCMap *m, uint32_t mi) {
    if (mi >= m->nm || !m->m[mi].name) return NULL;
    return m->names + m->m[mi].name - 1;
}

uint64_t prof_ccmap_ctx_pos(const ProfCCMap *m, uint32_t ctx) {
    uint32_t sr = m->x[ctx].parent_sr;
    return sr == CC_NONE ? 0 : m->s[m->r[sr].site].pos;
}

uint32_t prof_ccmap_ctx_parent(const ProfCCMap *m, uint32_t ctx) {
    uint32_t sr = m->x[ctx].parent_sr;
    return sr == CC_NONE ? CC_NONE : m->r[sr].ctx;
}

/* ---- public queries -------------------------------------------------------------------- */

SampoCCMap *sampo_ccmap_new(void) {
    return prof_ccmap_new();
}
void sampo_ccmap_free(SampoCCMap *m) {
    prof_ccmap_free(m);
}
uint64_t sampo_ccmap_total(const SampoCCMap *m) {
    return m ? m->total : 0;
}

int sampo_ccmap_add(SampoCCMap *m, const uint64_t *methods, const uint64_t *pos, uint32_t n,
                    uint64_t weight, uint32_t start_ctx, uint32_t *ctx_out) {
    return prof_ccmap_add(m, methods, pos, n, weight, start_ctx, ctx_out);
}

typedef struct CcSortCtx {
    const ProfCCMap *map;
    int by_total;
} CcSortCtx;

static int cc_cmp_method(const void *a, const void *b, void *arg) {
    const CcSortCtx *k = arg;
    const CcMethod *x = &k->map->m[*(const uint32_t *)a];
    const CcMethod *y = &k->map->m[*(const uint32_t *)b];
    uint64_t kx = k->by_total ? x->total : x->self;
    uint64_t ky = k->by_total ? y->total : y->self;
    if (kx != ky) return kx < ky ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int cc_cmp_edge(const void *a, const void *b, void *arg) {
    const CcSortCtx *k = arg;
    const CcCallee *x = &k->map->c[*(const uint32_t *)a];
    const CcCallee *y = &k->map->c[*(const uint32_t *)b];
    if (x->count != y->count) return x->count < y->count ? 1 : -1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static uint32_t *cc_sorted(const SampoCCMap *m, uint32_t cnt, int by_total,
                           int (*cmp)(const void *, const void *, void *)) {
    CcSortCtx k = {m, by_total};
    uint32_t *idx = malloc(((size_t)cnt + 1) * sizeof *idx);
    if (!idx) return NULL;
    for (uint32_t i = 0; i < cnt; i++)
        idx[i] = i;
    qsort_r(idx, cnt, sizeof *idx, cmp, &k);
    return idx;
}

size_t sampo_ccmap_hot_methods(const SampoCCMap *m, int by_total, SampoMethodStat *out, size_t n) {
    if (!m || !out) return 0;
    uint32_t *idx = cc_sorted(m, m->nm, by_total, cc_cmp_method);
    if (!idx) return 0;
    size_t k = 0;
    for (; k < n && k < m->nm; k++) {
        const CcMethod *e = &m->m[idx[k]];
        out[k] = (SampoMethodStat){e->id, e->self, e->total, prof_ccmap_name(m, idx[k])};
    }
    free(idx);
    return k;
}

size_t sampo_ccmap_hot_edges(const SampoCCMap *m, SampoEdgeStat *out, size_t n) {
    if (!m || !out) return 0;
    uint32_t *idx = cc_sorted(m, m->nc, 0, cc_cmp_edge);
    if (!idx) return 0;
    size_t k = 0;
    for (; k < n && k < m->nc; k++) {
        const CcCallee *c = &m->c[idx[k]];
        const CcSite *s = &m->s[c->site];
        out[k] = (SampoEdgeStat){m->m[s->method].id, s->pos, m->m[c->method].id, c->count};
    }
    free(idx);
    return k;
}

static uint32_t cc_find_site(const SampoCCMap *m, uint64_t caller, uint64_t pos) {
    uint32_t mi = cc_lookup(m, K_METHOD, caller, 0);
    return mi == CC_NONE ? CC_NONE : cc_lookup(m, K_SITE, mi, pos);
}

size_t sampo_ccmap_edge_contexts(const SampoCCMap *m, uint64_t caller, uint64_t pos,
                                 uint64_t callee, uint32_t *out, size_t n) {
    if (!m) return 0;
    uint32_t site = cc_find_site(m, caller, pos);
    uint32_t ci = cc_lookup(m, K_METHOD, callee, 0);
    if (site == CC_NONE || ci == CC_NONE) return 0;
    uint32_t e = cc_lookup(m, K_CALLEE, site, ci);
    if (e == CC_NONE) return 0;
    size_t k = 0;
    for (uint32_t x = m->c[e].first_ref; x != CC_NONE; x = m->x[x].next_ref, k++)
        if (out && k < n) out[k] = x;
    return k;
}

size_t sampo_ccmap_site_targets(const SampoCCMap *m, uint64_t caller, uint64_t pos, uint64_t *out,
                                size_t n) {
    if (!m) return 0;
    uint32_t site = cc_find_site(m, caller, pos);
    if (site == CC_NONE) return 0;
    size_t k = 0;
    for (uint32_t c = m->s[site].first_callee; c != CC_NONE; c = m->c[c].next_callee, k++)
        if (out && k < n) out[k] = m->m[m->c[c].method].id;
    return k;
}

int sampo_ccmap_ctx_info(const SampoCCMap *m, uint32_t ctx, SampoCtxInfo *out) {
    if (!m || !out || ctx >= m->nx) return SAMPO_ENOTFOUND;
    const CcCtx *x = &m->x[ctx];
    *out = (SampoCtxInfo){prof_ccmap_ctx_parent(m, ctx),
                          m->m[x->method].id,
                          prof_ccmap_ctx_pos(m, ctx),
                          x->self,
                          x->total,
                          x->depth};
    return SAMPO_OK;
}

size_t sampo_ccmap_ctx_children(const SampoCCMap *m, uint32_t ctx, uint32_t *out, size_t n) {
    if (!m || ctx >= m->nx) return 0;
    size_t k = 0;
    for (uint32_t sr = m->x[ctx].first_sr; sr != CC_NONE; sr = m->r[sr].next_sr)
        for (uint32_t c = m->r[sr].first_child; c != CC_NONE; c = m->x[c].next_sibling, k++)
            if (out && k < n) out[k] = c;
    return k;
}

size_t sampo_ccmap_roots(const SampoCCMap *m, uint32_t *out, size_t n) {
    if (!m) return 0;
    size_t k = 0;
    for (uint32_t c = m->first_root; c != CC_NONE; c = m->x[c].next_sibling, k++)
        if (out && k < n) out[k] = c;
    return k;
}

int sampo_ccmap_method(const SampoCCMap *m, uint64_t method, SampoMethodStat *out) {
    if (!m || !out) return SAMPO_EINVAL;
    uint32_t mi = cc_lookup(m, K_METHOD, method, 0);
    if (mi == CC_NONE) {
        *out = (SampoMethodStat){method, 0, 0, NULL};
        return SAMPO_ENOTFOUND;
    }
    *out = (SampoMethodStat){method, m->m[mi].self, m->m[mi].total, prof_ccmap_name(m, mi)};
    return SAMPO_OK;
}

/* ---- pruning ------------------------------------------------------------------------- */

/* Copies surviving context ctx of `from` (its parent already copied, map[] holds the new
 * indices) into `to`, with its counts. */
static int cc_copy_ctx(ProfCCMap *to, const ProfCCMap *from, uint32_t *map, uint32_t xi) {
    const CcCtx *x = &from->x[xi];
    uint64_t id = from->m[x->method].id;
    uint32_t nx;
    if (x->parent_sr == CC_NONE) {
        uint32_t mi = cc_method(to, id);
        nx = mi == CC_NONE ? CC_NONE : cc_ctx(to, CC_NONE, mi, CC_NONE);
    } else {
        const CcSiteRef *sr = &from->r[x->parent_sr];
        uint32_t e;
        uint32_t caller = to->x[map[sr->ctx]].method;
        nx = cc_descend(to, map[sr->ctx], caller, from->s[sr->site].pos, id, &e);
        if (nx != CC_NONE) {
            uint32_t nsr = to->x[nx].parent_sr;
            to->r[nsr].count = sr->count;
        }
    }
    if (nx == CC_NONE) return -1;
    to->x[nx].self = x->self;
    to->x[nx].total = x->total;
    map[xi] = nx;
    return 0;
}

/* Copies the general counts of nodes that survived. */
static void cc_copy_general(ProfCCMap *to, const ProfCCMap *from) {
    for (uint32_t i = 0; i < to->nm; i++) {
        uint32_t fi = cc_lookup(from, K_METHOD, to->m[i].id, 0);
        to->m[i].self = from->m[fi].self;
        to->m[i].total = from->m[fi].total;
        to->m[i].name = 0;
        const char *nm = prof_ccmap_name(from, fi);
        if (nm) prof_ccmap_set_name(to, to->m[i].id, nm);
    }
    for (uint32_t i = 0; i < to->ns; i++) {
        uint32_t fm = cc_lookup(from, K_METHOD, to->m[to->s[i].method].id, 0);
        to->s[i].count = from->s[cc_lookup(from, K_SITE, fm, to->s[i].pos)].count;
    }
    for (uint32_t i = 0; i < to->nc; i++) {
        const CcSite *s = &to->s[to->c[i].site];
        uint32_t fm = cc_lookup(from, K_METHOD, to->m[s->method].id, 0);
        uint32_t fs = cc_lookup(from, K_SITE, fm, s->pos);
        uint32_t fc = cc_lookup(from, K_METHOD, to->m[to->c[i].method].id, 0);
        to->c[i].count = from->c[cc_lookup(from, K_CALLEE, fs, fc)].count;
    }
}

size_t sampo_ccmap_prune(SampoCCMap *m, double min_fraction) {
    if (!m || m->nx == 0) return 0;
    uint64_t thr = (uint64_t)(min_fraction * (double)m->total);
    ProfCCMap *to = prof_ccmap_new();
    if (to) to->max_ctx = m->max_ctx;
    uint32_t *map = malloc((size_t)m->nx * sizeof *map);
    size_t removed = 0;
    if (!to || !map) goto out_fail;
    for (uint32_t i = 0; i < m->nx; i++) {
        uint32_t parent = prof_ccmap_ctx_parent(m, i);
        map[i] = CC_NONE;
        if (m->x[i].total < thr || (parent != CC_NONE && map[parent] == CC_NONE)) {
            removed++;
            continue;
        }
        if (cc_copy_ctx(to, m, map, i)) goto out_fail;
    }
    cc_copy_general(to, m);
    to->total = m->total;
    to->stamp = m->stamp;
    to->folded = m->folded;
    to->merged = m->merged;
    ProfCCMap tmp = *m;
    *m = *to;
    *to = tmp;
    prof_ccmap_free(to);
    free(map);
    return removed;
out_fail:
    prof_ccmap_free(to);
    free(map);
    return 0;
}
