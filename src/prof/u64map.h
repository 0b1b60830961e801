/*
 * u64map.h - small open-addressing hash map uint64 -> uint64 for the manager thread
 * (visited-frame tokens -> contexts, addresses -> frame ids).  Key 0 is reserved.
 * Not thread-safe, not signal-safe.
 */
#ifndef PROF_U64MAP_H
#define PROF_U64MAP_H

#include <stdint.h>

typedef struct ProfU64Map {
    uint64_t *keys, *vals;
    uint32_t cap, n;
} ProfU64Map;

/* Returns 1 and sets *val if key is present. */
int prof_u64map_get(const ProfU64Map *m, uint64_t key, uint64_t *val);
/* Inserts or replaces; returns 0 or -1 (ENOMEM). */
int prof_u64map_put(ProfU64Map *m, uint64_t key, uint64_t val);
void prof_u64map_clear(ProfU64Map *m);
void prof_u64map_fini(ProfU64Map *m);

#endif
