/* SPDX-License-Identifier: MIT */
/*
 * u64map.c - linear-probing uint64 map (see u64map.h).
 */
#include "u64map.h"

#include <stdlib.h>
#include <string.h>

static uint32_t u64_slot(uint64_t k, uint32_t mask) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (uint32_t)k & mask;
}

int prof_u64map_get(const ProfU64Map *m, uint64_t key, uint64_t *val) {
    if (!m->cap || !key) return 0;
    for (uint32_t i = u64_slot(key, m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key) {
            *val = m->vals[i];
            return 1;
        }
        if (!m->keys[i]) return 0;
    }
}

static int u64_grow(ProfU64Map *m) {
    uint32_t ncap = m->cap ? m->cap * 2 : 64;
    uint64_t *k = prof_zalloc(ncap * sizeof *k), *v = malloc(ncap * sizeof *v);
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    for (uint32_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        uint32_t j = u64_slot(m->keys[i], ncap - 1);
        while (k[j])
            j = (j + 1) & (ncap - 1);
        k[j] = m->keys[i];
        v[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = k, m->vals = v, m->cap = ncap;
    return 0;
}

int prof_u64map_put(ProfU64Map *m, uint64_t key, uint64_t val) {
    if (!key) return -1;
    if ((m->n + 1) * 4 > m->cap * 3 && u64_grow(m)) return -1;
    uint32_t i = u64_slot(key, m->cap - 1);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) m->n++;
    m->keys[i] = key;
    m->vals[i] = val;
    return 0;
}

void prof_u64map_clear(ProfU64Map *m) {
    if (m->cap) {
        memset(m->keys, 0, m->cap * sizeof *m->keys);
        memset(m->vals, 0, m->cap * sizeof *m->vals);
    }
    m->n = 0;
}

void prof_u64map_fini(ProfU64Map *m) {
    free(m->keys);
    free(m->vals);
    *m = (ProfU64Map){0};
}

void *prof_zalloc(size_t n) {
    char *p = calloc(1, n);
    for (size_t i = 0; p && i < n; i += 4096)
        ((volatile char *)p)[i] = 0;
    return p;
}
