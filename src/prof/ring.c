/* SPDX-License-Identifier: MIT */
/*
 * ring.c - SPSC ring (see ring.h).  The producer publishes a slot with a release store of
 * tail; the consumer frees it with a release store of head; each side acquires the other's.
 */
#include "ring.h"

#include <stdlib.h>

int prof_ring_init(ProfRing *r, uint32_t cap) {
    uint32_t c = 2;
    while (c < cap)
        c *= 2;
    r->slots = calloc(c, sizeof *r->slots);
    if (!r->slots) return -1;
    r->mask = c - 1;
    atomic_init(&r->head, 0);
    atomic_init(&r->tail, 0);
    atomic_init(&r->overflow, 0);
    return 0;
}

void prof_ring_fini(ProfRing *r) {
    free((void *)r->slots);
    r->slots = NULL;
}

int prof_ring_push(ProfRing *r, void *p) {
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    if (t - h > r->mask) {
        atomic_fetch_add_explicit(&r->overflow, 1, memory_order_relaxed);
        return -1;
    }
    atomic_store_explicit(&r->slots[t & r->mask], p, memory_order_relaxed);
    atomic_store_explicit(&r->tail, t + 1, memory_order_release);
    return 0;
}

void *prof_ring_pop(ProfRing *r) {
    uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (h == t) return NULL;
    void *p = atomic_load_explicit(&r->slots[h & r->mask], memory_order_relaxed);
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    return p;
}

uint32_t prof_ring_count(ProfRing *r) {
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
    uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    return (uint32_t)(t - h);
}
