/* SPDX-License-Identifier: MIT */
/*
 * u64map.c - open-addressing (linear probing) uint64 -> uint32 map; load factor <= 1/2.
 */
#include "u64map.h"

#include <stdlib.h>

static uint32_t u64map_slot(uint64_t key, uint32_t cap) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (uint32_t)key & (cap - 1);
}

void u64map_init(U64Map *m) {
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
}

void u64map_fini(U64Map *m) {
    free(m->keys);
    free(m->vals);
    u64map_init(m);
}

uint32_t u64map_get(const U64Map *m, uint64_t key) {
    if (!m->cap) return UINT32_MAX;
    for (uint32_t i = u64map_slot(key, m->cap); m->vals[i]; i = (i + 1) & (m->cap - 1))
        if (m->keys[i] == key) return m->vals[i] - 1;
    return UINT32_MAX;
}

static int u64map_resize(U64Map *m, uint32_t ncap) {
    uint64_t *k = malloc((size_t)ncap * sizeof *k);
    uint32_t *v = calloc(ncap, sizeof *v);
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    for (uint32_t j = 0; j < m->cap; j++) {
        if (!m->vals[j]) continue;
        uint32_t i = u64map_slot(m->keys[j], ncap);
        while (v[i])
            i = (i + 1) & (ncap - 1);
        k[i] = m->keys[j];
        v[i] = m->vals[j];
    }
    free(m->keys);
    free(m->vals);
    m->keys = k;
    m->vals = v;
    m->cap = ncap;
    return 0;
}

int u64map_put(U64Map *m, uint64_t key, uint32_t val) {
    if ((uint64_t)(m->n + 1) * 2 > m->cap && u64map_resize(m, m->cap ? m->cap * 2 : 64)) return -1;
    uint32_t i = u64map_slot(key, m->cap);
    for (; m->vals[i]; i = (i + 1) & (m->cap - 1))
        if (m->keys[i] == key) {
            m->vals[i] = val + 1;
            return 0;
        }
    m->keys[i] = key;
    m->vals[i] = val + 1;
    m->n++;
    return 0;
}
