/* SPDX-License-Identifier: MIT */
/*
 * capi.c - the compiler-controller queries of somprof.h: hot methods, hot call edges with
 * every calling context they occur in, and the targets of a call site.
 *
 * Async mode answers from a snapshot of libsampo's CC-Map of the VM's own thread
 * (sampo_ccmap_*: the Rotor queries; with --threads, another VM's methods never appear);
 * cooperative and exact modes from the VM's own calling-context tree (cct.h), where a context's
 * weight is the samples through it (coop) or its invocations (exact). An edge's weight counts each
 * sample once even when recursion puts the edge on its stack twice (a context below another context
 * of the same edge adds nothing), as libsampo does.
 *
 * On the VM's own thread, between somprof_attach and somprof_detach; allocates.
 */
#include <stdlib.h>
#include <string.h>

#include "capi.h"
#include "names.h"
#include "sampo.h"

static SomMethod *cap_m(uint64_t id) {
    return (SomMethod *)(uintptr_t)id;
}

static SomMethod *cap_node_m(const SpcTree *t, uint32_t i) {
    return (SomMethod *)(uintptr_t)t->n[i].method;
}

/* Per context: samples through it (coop: its subtree's samples) or invocations (exact).
 * Parents have smaller indices than their children (cct.h). */
static uint64_t *cap_through(const SpcTree *t) {
    uint64_t *w = malloc((size_t)t->len * sizeof *w);
    if (!w) return NULL;
    for (uint32_t i = 0; i < t->len; i++)
        w[i] = t->n[i].count;
    if (spr_session_mode() != SOMPROF_EXACT)
        for (uint32_t i = t->len; i-- > 1;)
            w[t->n[i].parent] += w[i];
    return w;
}

/* The edge into context i: (method of the parent context, call site, method); false at a
 * root (no caller). */
static bool cap_edge_of(const SpcTree *t, uint32_t i, const void **caller, uint32_t *site,
                        const void **callee) {
    uint32_t p = t->n[i].parent;
    if (i == SPC_ROOT || p == SPC_ROOT || p == SPC_NONE) return false;
    *caller = t->n[p].method;
    *site = t->n[i].callsite;
    *callee = t->n[i].method;
    return true;
}

static bool cap_is_edge(const SpcTree *t, uint32_t i, const void *caller, uint32_t site,
                        const void *callee) {
    const void *c, *e;
    uint32_t s;
    return cap_edge_of(t, i, &c, &s, &e) && c == caller && s == site && e == callee;
}

/* Whether an ancestor context of i enters through the same edge (recursion): then i's
 * samples are already counted there. */
static bool cap_nested(const SpcTree *t, uint32_t i) {
    const void *c, *e;
    uint32_t s;
    if (!cap_edge_of(t, i, &c, &s, &e)) return false;
    for (uint32_t a = t->n[i].parent; a != SPC_ROOT && a != SPC_NONE; a = t->n[a].parent)
        if (cap_is_edge(t, a, c, s, e)) return true;
    return false;
}

static int cap_hot_cmp(const void *a, const void *b) { /* hottest first */
    uint64_t x = ((const SomProfHot *)a)->self, y = ((const SomProfHot *)b)->self;
    return x < y ? 1 : x > y ? -1 : 0;
}

static int cap_edge_cmp(const void *a, const void *b) {
    uint64_t x = ((const SomProfEdge *)a)->count, y = ((const SomProfEdge *)b)->count;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* ---- hot methods ------------------------------------------------------------------------ */

static size_t cap_hot_async(uint64_t tid, bool by_total, SomProfHot *out, size_t n) {
    SampoCCMap *m = sampo_ccmap_snapshot(tid);
    SampoMethodStat *st = m ? calloc(n, sizeof *st) : NULL;
    size_t k = st ? sampo_ccmap_hot_methods(m, by_total ? 1 : 0, st, n) : 0;
    for (size_t i = 0; i < k; i++)
        out[i] = (SomProfHot){cap_m(st[i].method), st[i].name ? spn_intern(st[i].name) : NULL,
                              st[i].self, st[i].total};
    free(st);
    sampo_ccmap_free(m);
    return k;
}

size_t somprof_hot_methods(SomVM *vm, bool by_total, SomProfHot *out, size_t n) {
    if (!vm->prof_data || !n) return 0;
    const SpcTree *t = spr_vm_tree(vm);
    if (!t) return cap_hot_async(spr_vm_tid(vm), by_total, out, n);
    /* tree modes: per-method count of contexts ending in it (self == total here) */
    size_t k = 0;
    for (uint32_t i = 1; i < t->len; i++) {
        uint64_t v = t->n[i].count;
        if (!v) continue;
        size_t j = 0;
        while (j < k && out[j].method != cap_node_m(t, i))
            j++;
        if (j == k) {
            if (k == n) continue;
            out[k++] = (SomProfHot){cap_node_m(t, i), spr_vm_name(vm, cap_node_m(t, i)), 0, 0};
        }
        out[j].self += v;
        out[j].total += v;
    }
    qsort(out, k, sizeof *out, cap_hot_cmp);
    return k;
}

/* ---- call sites ------------------------------------------------------------------------- */

size_t somprof_site_targets(SomVM *vm, SomMethod *caller, uint32_t bci, SomMethod **out, size_t n) {
    if (!vm->prof_data) return 0;
    const SpcTree *t = spr_vm_tree(vm);
    if (t) { /* the VM's own tree: children at (caller, bci) */
        size_t k = 0;
        for (uint32_t i = 1; i < t->len; i++) {
            const SpcNode *x = &t->n[i];
            if (x->callsite != bci || t->n[x->parent].method != caller) continue;
            size_t j = 0;
            while (j < k && out[j] != cap_node_m(t, i))
                j++;
            if (j == k && k < n) out[k++] = cap_node_m(t, i);
        }
        return k;
    }
    uint64_t tid = spr_vm_tid(vm);
    SampoCCMap *m = sampo_ccmap_snapshot(tid);
    uint64_t *ids = m ? calloc(n ? n : 1, sizeof *ids) : NULL;
    size_t k = ids ? sampo_ccmap_site_targets(m, (uint64_t)(uintptr_t)caller, bci, ids, n) : 0;
    for (size_t i = 0; i < k; i++)
        out[i] = cap_m(ids[i]);
    free(ids);
    sampo_ccmap_free(m);
    return k;
}

/* ---- hot edges -------------------------------------------------------------------------- */

/* The hottest edges between two SOM methods: an async CC-Map also holds native frames (a
 * primitive's C code under its SOM caller), whose ids are code addresses, not methods. */
static size_t cap_edges_async(SomVM *vm, SomProfEdge *out, size_t n) {
    SampoCCMap *m = sampo_ccmap_snapshot(spr_vm_tid(vm));
    size_t want = n * 2 + 16; /* room for the native edges left out */
    SampoEdgeStat *st = m ? calloc(want, sizeof *st) : NULL;
    size_t k = st ? sampo_ccmap_hot_edges(m, st, want) : 0, j = 0;
    for (size_t i = 0; i < k && j < n; i++) {
        if (!spr_vm_knows(vm, (const void *)(uintptr_t)st[i].caller) ||
            !spr_vm_knows(vm, (const void *)(uintptr_t)st[i].callee))
            continue;
        out[j++] = (SomProfEdge){cap_m(st[i].caller), (uint32_t)st[i].pos, cap_m(st[i].callee),
                                 st[i].count};
    }
    free(st);
    sampo_ccmap_free(m);
    return j;
}

/* Adds weight w to edge (c, s, e) in the k-entry list all (grown as needed); -1 on ENOMEM. */
static int cap_edge_add(SomProfEdge **all, size_t *k, size_t *cap, SomMethod *c, uint32_t s,
                        SomMethod *e, uint64_t w) {
    for (size_t j = 0; j < *k; j++)
        if ((*all)[j].caller == c && (*all)[j].bci == s && (*all)[j].callee == e) {
            (*all)[j].count += w;
            return 0;
        }
    if (*k == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        SomProfEdge *g = realloc(*all, nc * sizeof *g);
        if (!g) return -1;
        *all = g;
        *cap = nc;
    }
    (*all)[(*k)++] = (SomProfEdge){c, s, e, w};
    return 0;
}

size_t somprof_hot_edges(SomVM *vm, SomProfEdge *out, size_t n) {
    if (!vm->prof_data || !n) return 0;
    const SpcTree *t = spr_vm_tree(vm);
    if (!t) return cap_edges_async(vm, out, n);
    uint64_t *w = cap_through(t);
    SomProfEdge *all = NULL;
    size_t k = 0, cap = 0;
    bool exact = spr_session_mode() == SOMPROF_EXACT;
    for (uint32_t i = 1; w && i < t->len; i++) {
        const void *c, *e;
        uint32_t s;
        if (!w[i] || !cap_edge_of(t, i, &c, &s, &e) || (!exact && cap_nested(t, i))) continue;
        if (cap_edge_add(&all, &k, &cap, (SomMethod *)(uintptr_t)c, s, (SomMethod *)(uintptr_t)e,
                         w[i]))
            break;
    }
    if (k) qsort(all, k, sizeof *all, cap_edge_cmp);
    if (k > n) k = n;
    if (k) memcpy(out, all, k * sizeof *out);
    free(all);
    free(w);
    return k;
}

/* ---- the contexts of an edge ------------------------------------------------------------ */

/* Calls fn for one async context (a callee context of the edge): its path up to the root. */
static int cap_ctx_async(const SampoCCMap *m, uint32_t ctx, SomProfContextFn fn, void *arg) {
    SampoCtxInfo leaf;
    if (sampo_ccmap_ctx_info(m, ctx, &leaf)) return -1;
    uint32_t cap = leaf.depth + 1, d = 0;
    SomMethod **ms = malloc(cap * sizeof *ms);
    uint32_t *sites = malloc(cap * sizeof *sites);
    SampoCtxInfo x = leaf;
    for (uint32_t c = ctx; ms && sites && d < cap && c != SAMPO_CTX_NONE; c = x.parent) {
        if (sampo_ccmap_ctx_info(m, c, &x)) break;
        ms[d] = cap_m(x.method);
        sites[d++] = x.parent == SAMPO_CTX_NONE ? 0 : (uint32_t)x.pos;
    }
    if (ms && sites) fn(arg, ms, sites, d, leaf.total);
    free(ms);
    free(sites);
    return ms && sites ? 0 : -1;
}

static size_t cap_contexts_async(uint64_t tid, SomMethod *caller, uint32_t bci, SomMethod *callee,
                                 SomProfContextFn fn, void *arg) {
    SampoCCMap *m = sampo_ccmap_snapshot(tid);
    size_t cap = 256, k = 0;
    uint32_t *ids = NULL;
    while (m) {
        uint32_t *g = realloc(ids, cap * sizeof *g);
        if (!g) break;
        ids = g;
        k = sampo_ccmap_edge_contexts(m, (uint64_t)(uintptr_t)caller, bci,
                                      (uint64_t)(uintptr_t)callee, ids, cap);
        if (k < cap) break;
        cap *= 2;
    }
    size_t done = 0;
    for (size_t i = 0; ids && i < k; i++)
        done += cap_ctx_async(m, ids[i], fn, arg) == 0;
    free(ids);
    sampo_ccmap_free(m);
    return done;
}

size_t somprof_edge_contexts(SomVM *vm, SomMethod *caller, uint32_t bci, SomMethod *callee,
                             SomProfContextFn fn, void *arg) {
    if (!vm->prof_data || !fn) return 0;
    const SpcTree *t = spr_vm_tree(vm);
    if (!t) return cap_contexts_async(spr_vm_tid(vm), caller, bci, callee, fn, arg);
    uint64_t *w = cap_through(t);
    uint32_t *path = malloc(sizeof *path * t->len);
    SomMethod **ms = malloc(sizeof *ms * t->len);
    uint32_t *sites = malloc(sizeof *sites * t->len);
    size_t done = 0;
    for (uint32_t i = 1; w && path && ms && sites && i < t->len; i++) {
        if (!w[i] || !cap_is_edge(t, i, caller, bci, callee)) continue;
        uint32_t d = spc_path(t, i, path, t->len);
        for (uint32_t j = 0; j < d; j++) {
            ms[j] = cap_node_m(t, path[j]);
            sites[j] = j + 1 < d ? t->n[path[j]].callsite : 0;
        }
        fn(arg, ms, sites, d, w[i]);
        done++;
    }
    free(w);
    free(path);
    free(ms);
    free(sites);
    return done;
}

/* ---- the samples' total ----------------------------------------------------------------- */

uint64_t somprof_total_samples(SomVM *vm) {
    if (!vm->prof_data || spr_session_mode() == SOMPROF_EXACT) return 0;
    const SpcTree *t = spr_vm_tree(vm);
    if (t) {
        uint64_t sum = 0;
        for (uint32_t i = 1; i < t->len; i++)
            sum += t->n[i].count;
        return sum;
    }
    SampoCCMap *m = sampo_ccmap_snapshot(spr_vm_tid(vm));
    uint64_t total = m ? sampo_ccmap_total(m) : 0;
    sampo_ccmap_free(m);
    return total;
}
