/* SPDX-License-Identifier: MIT */
/*
 * u64map.h - small open-addressing hash map uint64 -> uint64 for the manager thread
 * (visited-frame tokens -> contexts, addresses -> frame ids).  Key 0 is reserved.
 * Also prof_zalloc, the zeroed allocation of the manager's hash tables.
 * Not thread-safe, not signal-safe.
 */
#ifndef PROF_U64MAP_H
#define PROF_U64MAP_H

#include <stddef.h>
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

/* n zeroed bytes whose pages are first touched by writes.  A large calloc is fresh zero
 * pages, and a probe loop that reads a slot before writing it takes a write-protect fault
 * per page, each flushing the TLB of every CPU running the process (an IPI; on these VMs
 * 2-3% of a deep recursion's run at 1 kHz).  (malloc + memset would not do: compilers turn
 * it into calloc.)  NULL on ENOMEM. */
void *prof_zalloc(size_t n);
void prof_u64map_fini(ProfU64Map *m);

#endif
