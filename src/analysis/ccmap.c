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

/* Caller -> callee totals, each distinct pair counted once per sample. */
static int cc_compute_edges(SpProfile *p) {
    U64Map map;
    uint32_t *stamp = NULL, cap_stamp = 0;
    int rc = -1;
    u64map_init(&map);
    for (uint32_t s = 0; s < p->nsamples; s++) {
        const SpSample *sm = &p->samples[s];
        const uint32_t *st = sp_sample_stack(p, sm);
        for (uint32_t i = 0; i + 1 < sm->depth; i++) {
            uint64_t key = (uint64_t)st[i + 1] << 32 | st[i];
            uint32_t e = u64map_get(&map, key);
            if (e == UINT32_MAX) {
                e = p->cc.nedges;
                if (sp_cc_edge_add(p, st[i + 1], 0, st[i], 0) || u64map_put(&map, key, e) ||
                    cc_grow((void **)&stamp, &cap_stamp, e + 1, sizeof *stamp))
                    goto out;
                stamp[e] = 0;
            }
            if (stamp[e] != s + 1) {
                stamp[e] = s + 1;
                p->cc.edges[e].count += sm->weight;
            }
        }
    }
    rc = 0;
out:
    u64map_fini(&map);
    free(stamp);
    return rc;
}

/* The calling context tree: one path per sample from the outermost frame to the leaf. */
static int cc_compute_tree(SpProfile *p) {
    U64Map map;
    int rc = -1;
    u64map_init(&map);
    for (uint32_t s = 0; s < p->nsamples; s++) {
        const SpSample *sm = &p->samples[s];
        const uint32_t *st = sp_sample_stack(p, sm);
        uint32_t node = SP_NONE;
        for (uint32_t i = sm->depth; i-- > 0;) {
            uint64_t key = (uint64_t)node << 32 | st[i];
            uint32_t child = u64map_get(&map, key);
            if (child == UINT32_MAX) {
                child = sp_cc_node_add(p, node, st[i], 0, 0, 0, 0);
                if (child == SP_NONE || u64map_put(&map, key, child)) goto out;
            }
            p->cc.nodes[child].total += sm->weight;
            node = child;
        }
        if (node != SP_NONE) p->cc.nodes[node].self += sm->weight;
    }
    rc = 0;
out:
    u64map_fini(&map);
    return rc;
}

int sp_ccmap_compute(SpProfile *p) {
    sp_ccmap_clear(p);
    if (cc_compute_methods(p) || cc_compute_edges(p) || cc_compute_tree(p)) {
        sp_ccmap_clear(p);
        return -1;
    }
    p->cc.present = 1;
    return 0;
}

int sp_ccmap_ensure(SpProfile *p) {
    return p->cc.present ? 0 : sp_ccmap_compute(p);
}
