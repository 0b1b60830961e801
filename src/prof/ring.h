/* SPDX-License-Identifier: MIT */
/*
 * ring.h - bounded lock-free single-producer/single-consumer ring of pointers.
 *
 * Owns: ProfRing.  Used per sampled thread to hand empty sample batches from the manager
 * (producer) to the thread's signal handler (consumer).  Invariants: capacity is a power of
 * two; head and tail only grow; tail - head <= cap.  prof_ring_push/pop are lock-free and
 * async-signal-safe (plain atomics, no allocation); a full push fails and is counted.
 */
#ifndef PROF_RING_H
#define PROF_RING_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct ProfRing {
    _Atomic uint64_t head; /* next slot to pop (consumer) */
    _Atomic uint64_t tail; /* next slot to push (producer) */
    _Atomic uint64_t overflow;
    uint32_t mask;
    void *_Atomic *slots;
} ProfRing;

/* cap is rounded up to a power of two.  Returns 0 or -1 (ENOMEM).  Not signal-safe. */
int prof_ring_init(ProfRing *r, uint32_t cap);
void prof_ring_fini(ProfRing *r);
/* Producer side. Returns 0, or -1 when full (overflow counted). [signal-safe] */
int prof_ring_push(ProfRing *r, void *p);
/* Consumer side. Returns NULL when empty. [signal-safe] */
void *prof_ring_pop(ProfRing *r);
/* Approximate number of queued items (exact when both sides are quiescent). */
uint32_t prof_ring_count(ProfRing *r);

#endif
