/* SPDX-License-Identifier: MIT */
/*
 * gc.h - the heap and the garbage collector of som.
 *
 * A precise, non-moving, non-recursive mark-sweep collector. Small objects
 * (<= GC_MAX_SMALL bytes) are carved from 64 KiB chunks, one size class per
 * chunk (16-byte steps), with a free list per class; large objects are
 * malloc'ed and kept on a list. Marking uses an explicit mark stack, so deep
 * object graphs never recurse on the C stack. Roots: the value stack, the
 * frame records, globals, symbols, the classes, the temporary root slots
 * (som_root_push), the VM's well-known objects and the value of a non-local
 * return unwinding across interpreter levels (vm->nlr_value while
 * vm->nlr_target >= 0). Compiled code (jitabi.h) needs nothing more: a
 * compiled frame is a frame record like any other (method, self, ctx), and
 * every heap reference it keeps across a call that may collect lives in its
 * spill slots, which are value-stack slots below vm->sp; the methods its
 * position table names are held by their classes.
 *
 * Sweeping is lazy: after marking, the chunks of each size class are swept
 * one at a time when that class's free list runs dry (the cells are about to
 * be reused, so they are in cache), and whatever is left is swept before the
 * next marking. Invariant: a swept chunk has every cell either live with its
 * mark bit clear or free (kind OBJ_FREE, on a free list); an unswept chunk
 * has live cells marked and dead cells unmarked and not yet finalised.
 * GC-stress mode (opts.gc_stress) collects at every allocation, or at every N-th with
 * opts.gc_stress_every = N (besides the collections the threshold asks for).
 * Allocation never runs in a signal handler.
 */
#ifndef SOM_GC_H
#define SOM_GC_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

typedef struct SomVM SomVM;
typedef struct ObjHeader ObjHeader;
typedef struct SomClass SomClass;

#define GC_GRANULE 16
#define GC_MAX_SMALL 512
#define GC_NCLASSES (GC_MAX_SMALL / GC_GRANULE)
#define GC_CHUNK_SIZE (64 * 1024)

typedef struct GcChunk {
    struct GcChunk *next;       /* all chunks */
    struct GcChunk *next_class; /* chunks of the same size class */
    uint32_t cell_size;
    uint32_t ncells;
    uint64_t pad; /* keeps the cells that follow 16-byte aligned */
} GcChunk;
_Static_assert(sizeof(GcChunk) % 16 == 0, "GcChunk must keep cells 16-byte aligned");

typedef struct GcLarge {
    struct GcLarge *next;
    size_t size;
    /* object follows, aligned to 16 */
} GcLarge;
_Static_assert(sizeof(GcLarge) % 16 == 0, "GcLarge must keep objects 16-byte aligned");

typedef struct GcStats {
    uint64_t collections;
    uint64_t ns_total;
    uint64_t bytes_allocated; /* total since start */
    uint64_t bytes_live;      /* after the last collection */
} GcStats;

typedef struct GcHeap {
    void *free[GC_NCLASSES + 1];        /* free lists by size class (index = size/16) */
    GcChunk *by_class[GC_NCLASSES + 1]; /* chunks of each size class */
    GcChunk *unswept[GC_NCLASSES + 1];  /* next chunk of the class still to sweep */
    GcChunk *chunks;
    GcLarge *large;
    size_t heap_bytes; /* chunk + large bytes in use */
    size_t allocated_since_gc;
    size_t threshold; /* collect when allocated_since_gc exceeds it */
    ObjHeader **mark_stack;
    size_t mark_top, mark_cap;
    int inhibit;           /* >0: no collection (bootstrap, compiler) */
    uint64_t stress_count; /* allocations counted for opts.gc_stress_every */
    /* Allocation sampling: bytes left before gc_try_alloc calls vm->alloc_hook (which
     * answers the next distance; INT64_MAX without a hook).  The hook may read how far
     * below 0 the allocation took it.  `for_alloc` is nonzero while a collection runs
     * because an allocation needed it (not `System fullGC`): its time is the allocations'. */
    int64_t sample_left;
    volatile uint8_t for_alloc;
    GcStats stats;
    /* Out of memory: where a failed allocation that cannot answer NULL
     * unwinds to (set by som_vm_new / som_vm_run around their work; also
     * som_vm_abandon's target), and the size that failed. Without a target
     * the process aborts. */
    jmp_buf *oom_jmp;
    size_t oom_bytes;
} GcHeap;

void gc_init(SomVM *vm);
void gc_fini(SomVM *vm);
/* Allocates a zeroed object of `size` bytes with the given kind and class.
 * May collect first. Never returns NULL: out of memory unwinds to
 * heap.oom_jmp (som_vm_run then reports it and answers status 1). */
void *gc_alloc(SomVM *vm, size_t size, int kind, SomClass *cls);
/* Like gc_alloc, but a large object (> GC_MAX_SMALL) that malloc refuses
 * answers NULL, so a primitive can report a SOM-level error. */
void *gc_try_alloc(SomVM *vm, size_t size, int kind, SomClass *cls);
void gc_collect(SomVM *vm);
/* Checks heap invariants (every reachable slot holds a valid value); returns
 * the number of problems found (used by tests and the stress mode). */
size_t gc_verify(SomVM *vm);

#endif
