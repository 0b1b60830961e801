/* SPDX-License-Identifier: MIT */
/*
 * cct.c - calling-context tree (see cct.h).  Children are found through one hash table
 * keyed by (parent, method, callsite); the tree never shrinks, so node indices are stable.
 */
#include "cct.h"

#include <stdlib.h>
#include <string.h>

static uint64_t spc_hash(uint32_t parent, const void *method, uint32_t callsite) {
    uint64_t h = (uint64_t)(uintptr_t)method * 0x9e3779b97f4a7c15ull;
    h ^= ((uint64_t)parent << 32 | callsite) * 0xc2b2ae3d27d4eb4full;
    return h ^ (h >> 29);
}

int spc_init(SpcTree *t) {
    memset(t, 0, sizeof *t);
    t->cap = 256;
    t->n = calloc(t->cap, sizeof *t->n);
    t->mask = 511;
    t->slots = calloc(t->mask + 1, sizeof *t->slots);
    if (!t->n || !t->slots) {
        spc_fini(t);
        return -1;
    }
    t->n[0] = (SpcNode){.parent = SPC_NONE, .first_child = SPC_NONE, .next_sibling = SPC_NONE};
    t->len = 1;
    t->max_nodes = SPC_MAX_NODES_DEFAULT;
    return 0;
}

void spc_fini(SpcTree *t) {
    free(t->n);
    free(t->slots);
    free(t->alias);
    memset(t, 0, sizeof *t);
}

static int spc_rehash(SpcTree *t) {
    uint32_t mask = t->mask * 2 + 1;
    /* pages touched by writes first: the probe loop's read-then-write on calloc's fresh zero
     * pages would take a write-protect fault per page, each a TLB-flush IPI to every CPU
     * running the process (the marking thread's too) */
    size_t bytes = ((size_t)mask + 1) * sizeof(uint32_t);
    uint32_t *slots = calloc(1, bytes);
    if (!slots) return -1;
    for (size_t i = 0; i < bytes; i += 4096)
        ((volatile char *)slots)[i] = 0;
    for (uint32_t i = 1; i < t->len; i++) {
        const SpcNode *x = &t->n[i];
        uint64_t h = spc_hash(x->parent, x->method, x->callsite);
        while (slots[h & mask])
            h++;
        slots[h & mask] = i + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->mask = mask;
    return 0;
}

static uint32_t spc_new(SpcTree *t, uint32_t parent, const void *method, uint32_t callsite) {
    if (t->len == t->cap) {
        SpcNode *n = realloc(t->n, (size_t)t->cap * 2 * sizeof *n);
        if (!n) return SPC_NONE;
        t->n = n;
        t->cap *= 2;
    }
    if ((t->len + 1) * 2 > t->mask && spc_rehash(t)) return SPC_NONE;
    uint32_t i = t->len++;
    SpcNode *p = &t->n[parent];
    t->n[i] = (SpcNode){.method = method,
                        .parent = parent,
                        .callsite = callsite,
                        .first_child = SPC_NONE,
                        .next_sibling = p->first_child,
                        .depth = p->depth + 1};
    p->first_child = i;
    uint64_t h = spc_hash(parent, method, callsite);
    while (t->slots[h & t->mask])
        h++;
    t->slots[h & t->mask] = i + 1;
    return i;
}

uint32_t spc_child(SpcTree *t, uint32_t parent, const void *method, uint32_t callsite) {
    if (parent >= t->len) return SPC_NONE;
    for (uint64_t h = spc_hash(parent, method, callsite);; h++) {
        uint32_t s = t->slots[h & t->mask];
        if (!s) break;
        const SpcNode *x = &t->n[s - 1];
        if (x->parent == parent && x->method == method && x->callsite == callsite) return s - 1;
    }
    return spc_new(t, parent, method, callsite);
}

/* ---- recursion folding ------------------------------------------------------------ */

static SpcAlias *spc_alias_find(const SpcTree *t, uint32_t parent, const void *method,
                                uint32_t callsite) {
    if (!t->alias) return NULL;
    for (uint64_t h = spc_hash(parent, method, callsite);; h++) {
        SpcAlias *a = &t->alias[h & t->alias_mask];
        if (!a->method) return NULL;
        if (a->parent == parent && a->method == method && a->callsite == callsite) return a;
    }
}

/* Remembers a folded call; failing (memory) only costs the ancestor walk next time. */
static void spc_alias_add(SpcTree *t, uint32_t parent, const void *method, uint32_t callsite,
                          uint32_t target) {
    if (!t->alias || (t->alias_len + 1) * 2 > t->alias_mask) {
        if (t->alias_len >= t->max_nodes) return; /* bounded like the tree */
        uint32_t mask = t->alias ? t->alias_mask * 2 + 1 : 255;
        SpcAlias *na = calloc((size_t)mask + 1, sizeof *na);
        if (!na) return;
        for (uint32_t i = 0; t->alias && i <= t->alias_mask; i++) {
            const SpcAlias *a = &t->alias[i];
            if (!a->method) continue;
            uint64_t h = spc_hash(a->parent, a->method, a->callsite);
            while (na[h & mask].method)
                h++;
            na[h & mask] = *a;
        }
        free(t->alias);
        t->alias = na;
        t->alias_mask = mask;
    }
    uint64_t h = spc_hash(parent, method, callsite);
    while (t->alias[h & t->alias_mask].method)
        h++;
    t->alias[h & t->alias_mask] = (SpcAlias){method, parent, callsite, target};
    t->alias_len++;
}

/* The nearest context on parent's path (parent included) opened by the same call: same
 * callee, same call site, and a caller running the same method. */
static uint32_t spc_fold_target(const SpcTree *t, uint32_t parent, const void *method,
                                uint32_t callsite) {
    const void *caller = t->n[parent].method;
    for (uint32_t a = parent; a != SPC_ROOT && a != SPC_NONE; a = t->n[a].parent)
        if (t->n[a].method == method && t->n[a].callsite == callsite &&
            t->n[t->n[a].parent].method == caller)
            return a;
    return SPC_NONE;
}

uint32_t spc_enter(SpcTree *t, uint32_t parent, const void *method, uint32_t callsite,
                   int *merged) {
    *merged = 0;
    if (parent >= t->len) return SPC_NONE;
    for (uint64_t h = spc_hash(parent, method, callsite);; h++) {
        uint32_t s = t->slots[h & t->mask];
        if (!s) break;
        const SpcNode *x = &t->n[s - 1];
        if (x->parent == parent && x->method == method && x->callsite == callsite) return s - 1;
    }
    const SpcAlias *a = spc_alias_find(t, parent, method, callsite);
    if (a) {
        t->folded++;
        return a->target;
    }
    uint32_t target = spc_fold_target(t, parent, method, callsite);
    if (target != SPC_NONE) {
        spc_alias_add(t, parent, method, callsite, target);
        t->folded++;
        return target;
    }
    uint32_t c = t->len < t->max_nodes ? spc_new(t, parent, method, callsite) : SPC_NONE;
    if (c != SPC_NONE) return c;
    t->merged++;
    *merged = 1;
    return parent;
}

uint32_t spc_add_sample(SpcTree *t, const void *const *methods, const uint32_t *pos, uint32_t n,
                        uint32_t start, uint64_t weight, uint32_t *ctx_out) {
    if (!n) return SPC_NONE;
    uint32_t ctx, i = n - 1;
    int merged;
    if (start != SPC_NONE && start < t->len && t->n[start].method == methods[i]) {
        ctx = start; /* the visited activation keeps the context recorded for it */
    } else {
        ctx = spc_enter(t, SPC_ROOT, methods[i], 0, &merged);
        if (ctx == SPC_NONE || merged) return SPC_NONE;
    }
    if (ctx_out) ctx_out[i] = ctx;
    while (i-- > 0) {
        ctx = spc_enter(t, ctx, methods[i], pos[i + 1], &merged);
        if (ctx == SPC_NONE) return SPC_NONE;
        if (ctx_out) ctx_out[i] = ctx;
    }
    t->n[ctx].count += weight;
    return ctx;
}

uint32_t spc_path(const SpcTree *t, uint32_t ctx, uint32_t *out, uint32_t max) {
    uint32_t d = 0;
    for (; ctx != SPC_NONE && ctx != SPC_ROOT && ctx < t->len && d < max; ctx = t->n[ctx].parent)
        out[d++] = ctx;
    return d;
}
