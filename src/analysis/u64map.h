/* SPDX-License-Identifier: MIT */
/*
 * u64map.h - a small open-addressing hash map from uint64 keys to uint32 values, used by
 * the analysis code to deduplicate (parent, frame) pairs, edges and addresses.
 * Not thread-safe.  Memory: owned by the map; _init/_fini pair.
 */
#ifndef SAMPO_ANALYSIS_U64MAP_H
#define SAMPO_ANALYSIS_U64MAP_H

#include <stdint.h>

typedef struct {
    uint64_t *keys;
    uint32_t *vals; /* value + 1; 0 marks an empty slot */
    uint32_t cap;   /* power of two */
    uint32_t n;
} U64Map;

void u64map_init(U64Map *m);
void u64map_fini(U64Map *m);
/* Returns the value for key or UINT32_MAX if absent. */
uint32_t u64map_get(const U64Map *m, uint64_t key);
/* Inserts or replaces; returns 0 or -1 on ENOMEM.  val must be < UINT32_MAX. */
int u64map_put(U64Map *m, uint64_t key, uint32_t val);

#endif
