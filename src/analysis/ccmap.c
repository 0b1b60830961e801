/* SPDX-License-Identifier: MIT */
/*
 * ccmap.c - the CC-Map section of a profile (declared in profile.h): producer-supplied
 * entries and sp_ccmap_compute(), which derives per-method totals, caller->callee edges and
 * the calling context tree from the samples.
 *
 * Invariant kept: nodes are appended after their parent, so parent < index always holds.
 * Not thread-safe, not async-signal-safe.
 */
#include "profile.h"

#include <stdlib.h>
#include <string.h>

#include "u64map.h"

static int cc_grow(void **arr, uint32_t *cap, uint32_t need, size_t elsize) {
    if (need <= *cap) return 0;
    if (need >= UINT32_MAX / 2) return -1;
    uint32_t ncap = *cap ? *cap : 16;
    while (ncap < need)
        ncap *= 2;
    void *n = realloc(*arr, (size_t)ncap * elsize);
    if (!n) return -1;
    *arr = n;
    *cap = ncap;
    return 0;
}

int sp_cc_method_add(SpProfile *p, uint32_t frame, uint64_t self, uint64_t total, uint64_t self_ns,
                     uint64_t total_ns) {
    SpCcMap *c = &p->cc;
    if (frame >= p->nframes ||
        cc_grow((void **)&c->methods, &c->cap_methods, c->nmethods + 1, sizeof *c->methods))
        return -1;
    c->methods[c->nmethods++] = (SpCcMethod){
        .frame = frame, .self = self, .total = total, .self_ns = self_ns, .total_ns = total_ns};
    c->present = 1;
    return 0;
}

int sp_cc_edge_add(SpProfile *p, uint32_t caller, uint32_t callsite, uint32_t callee,
                   uint64_t count) {
    SpCcMap *c = &p->cc;
    if (caller >= p->nframes || callee >= p->nframes ||
        cc_grow((void **)&c->edges, &c->cap_edges, c->nedges + 1, sizeof *c->edges))
        return -1;
    c->edges[c->nedges++] =
        (SpCcEdge){.caller = caller, .callee = callee, .callsite = callsite, .count = count};
    c->present = 1;
    return 0;
}

uint32_t sp_cc_node_add(SpProfile *p, uint32_t parent, uint32_t frame, uint32_t callsite,
                        uint64_t self, uint64_t total, uint64_t time_ns) {
    SpCcMap *c = &p->cc;
    if (frame >= p->nframes || (parent != SP_NONE && parent >= c->nnodes) ||
        cc_grow((void **)&c->nodes, &c->cap_nodes, c->nnodes + 1, sizeof *c->nodes))
        return SP_NONE;
    c->nodes[c->nnodes] = (SpCcNode){.parent = parent,
                                     .frame = frame,
                                     .callsite = callsite,
                                     .self = self,
                                     .total = total,
                                     .time_ns = time_ns};
    c->present = 1;
    return c->nnodes++;
}

/* Per-method totals: self on the leaf; total once per sample (recursion counted once). */
static int cc_compute_methods(SpProfile *p) {
    uint32_t n = p->nframes;
    uint64_t *self = calloc(n ? n : 1, sizeof *self), *total = calloc(n ? n : 1, sizeof *total);
    uint32_t *stamp = calloc(n ? n : 1, sizeof *stamp);
    int rc = -1;
    if (!self || !total || !stamp) goto out;
    for (uint32_t s = 0; s < p->nsamples; s++) {
        const SpSample *sm = &p->samples[s];
        const uint32_t *st = sp_sample_stack(p, sm);
        if (sm->depth) self[st[0]] += sm->weight;
        for (uint32_t i = 0; i < sm->depth; i++)
            if (stamp[st[i]] != s + 1) {
                stamp[st[i]] = s + 1;
                total[st[i]] += sm->weight;
            }
    }
    rc = 0;
    for (uint32_t f = 0; f < n && rc == 0; f++)
        if (total[f]) rc = sp_cc_method_add(p, f, self[f], total[f], 0, 0);
out:
    free(self);
    free(total);
    free(stamp);
    return rc;
}

/* Per-thread cache of the previous sample's path, root first: consecutive samples of a
 * thread usually share a long prefix, whose tree nodes and edges need no hash lookups. */
typedef struct {
    uint32_t *frame, *node, *edge; /* per depth from the root */
    uint32_t len, cap;
} PathCache;

/* Edge id for caller -> callee, created on first use. */
static uint32_t cc_edge_id(SpProfile *p, U64Map *map, uint32_t caller, uint32_t callee,
                           uint32_t **stamp, uint32_t *cap_stamp) {
    uint64_t key = (uint64_t)caller << 32 | callee;
    uint32_t e = u64map_get(map, key);
    if (e != UINT32_MAX) return e;
    e = p->cc.nedges;
    if (sp_cc_edge_add(p, caller, 0, callee, 0) || u64map_put(map, key, e) ||
        cc_grow((void **)stamp, cap_stamp, e + 1, sizeof **stamp))
        return SP_NONE;
    (*stamp)[e] = 0;
    return e;
}

/* Node id for (parent, frame), created on first use. */
static uint32_t cc_node_id(SpProfile *p, U64Map *map, uint32_t parent, uint32_t frame) {
    uint64_t key = (uint64_t)parent << 32 | frame;
    uint32_t n = u64map_get(map, key);
    if (n != UINT32_MAX) return n;
    n = sp_cc_node_add(p, parent, frame, 0, 0, 0, 0);
    if (n == SP_NONE || u64map_put(map, key, n)) return SP_NONE;
    return n;
}

static int cache_reserve(PathCache *c, uint32_t depth) {
    if (depth <= c->cap) return 0;
    uint32_t nc = c->cap ? c->cap : 64;
    while (nc < depth)
        nc *= 2;
    uint32_t *f = realloc(c->frame, nc * sizeof *f);
    if (f) c->frame = f;
    uint32_t *n = realloc(c->node, nc * sizeof *n);
    if (n) c->node = n;
    uint32_t *e = realloc(c->edge, nc * sizeof *e);
    if (e) c->edge = e;
    if (!f || !n || !e) return -1;
    c->cap = nc;
    return 0;
}

/* One sample: walks (and extends) the tree root to leaf and counts each distinct edge once. */
static int cc_sample(SpProfile *p, uint32_t s, PathCache *c, U64Map *nodes, U64Map *edges,
                     uint32_t **stamp, uint32_t *cap_stamp) {
    const SpSample *sm = &p->samples[s];
    const uint32_t *st = sp_sample_stack(p, sm);
    uint32_t d = 0, node = SP_NONE;
    if (cache_reserve(c, sm->depth)) return -1;
    for (; d < sm->depth && d < c->len && c->frame[d] == st[sm->depth - 1 - d]; d++)
        ; /* shared prefix with the previous sample of this thread */
    c->len = d;
    for (uint32_t k = d; k < sm->depth; k++) {
        uint32_t f = st[sm->depth - 1 - k], par = k ? c->node[k - 1] : SP_NONE;
        c->frame[k] = f;
        c->node[k] = cc_node_id(p, nodes, par, f);
        c->edge[k] = k ? cc_edge_id(p, edges, c->frame[k - 1], f, stamp, cap_stamp) : SP_NONE;
        if (c->node[k] == SP_NONE || (k && c->edge[k] == SP_NONE)) return -1;
        c->len = k + 1;
    }
    for (uint32_t k = 0; k < sm->depth; k++) {
        node = c->node[k];
        p->cc.nodes[node].total += sm->weight;
        uint32_t e = c->edge[k];
        if (k && (*stamp)[e] != s + 1) {
            (*stamp)[e] = s + 1;
            p->cc.edges[e].count += sm->weight;
        }
    }
    if (node != SP_NONE) p->cc.nodes[node].self += sm->weight;
    return 0;
}

/* Caller -> callee totals (each distinct pair once per sample) and the calling context tree
 * (one path per sample from the outermost frame to the leaf). */
static int cc_compute_edges_tree(SpProfile *p) {
    U64Map nodes, edges;
    uint32_t *stamp = NULL, cap_stamp = 0;
    PathCache *cache = calloc(p->nthreads ? p->nthreads : 1, sizeof *cache);
    int rc = -1;
    u64map_init(&nodes);
    u64map_init(&edges);
    if (!cache) goto out;
    for (uint32_t s = 0; s < p->nsamples; s++)
        if (cc_sample(p, s, &cache[p->samples[s].thread], &nodes, &edges, &stamp, &cap_stamp))
            goto out;
    rc = 0;
out:
    for (uint32_t t = 0; cache && t < p->nthreads; t++)
        free(cache[t].frame), free(cache[t].node), free(cache[t].edge);
    free(cache);
    free(stamp);
    u64map_fini(&nodes);
    u64map_fini(&edges);
    return rc;
}

int sp_ccmap_compute(SpProfile *p) {
    sp_ccmap_clear(p);
    if (cc_compute_methods(p) || cc_compute_edges_tree(p)) {
        sp_ccmap_clear(p);
        return -1;
    }
    p->cc.present = 1;
    return 0;
}

int sp_ccmap_ensure(SpProfile *p) {
    return p->cc.present ? 0 : sp_ccmap_compute(p);
}
