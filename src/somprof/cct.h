/* SPDX-License-Identifier: MIT */
/*
 * cct.h - calling-context tree of the som profiler's cooperative and exact modes.
 *
 * Owns: SpcTree, a tree of contexts keyed (parent, method, call site).  Node 0 is the
 * invisible root; every other node has a parent < its own index.  `method` is an opaque
 * identity (a SomMethod pointer in the VM); `callsite` is the bytecode index of the send in
 * the parent's method.  Counters: `count` (invocations in exact mode, samples ending here in
 * cooperative mode), `total_ns` (inclusive time, exact mode), `child_ns` (time spent in
 * callees) and `self_ns` (exact mode: the time between profiling events while this context
 * was the current one, less the calibrated cost of the events themselves).
 *
 * Also implements the Rotor partial-sample update (spc_add_sample): a sample walked only
 * down to the first visited activation is attached below that activation's context.
 *
 * Recursion is folded (spc_enter): a call from a context of method C at call site s to
 * method M re-enters the nearest ancestor context reached by the same call (C, s, M)
 * instead of opening a new level, as call-path profilers do; so the tree's depth is bounded
 * by the program's distinct call edges, not by the recursion depth, and a program without
 * recursion gets exactly the unfolded tree.  The tree is also bounded (max_nodes): a call
 * that would need a context beyond it is merged into its caller's context, and counted.
 *
 * Single-threaded (one tree per VM thread); not async-signal-safe (it allocates).
 */
#ifndef SOMPROF_CCT_H
#define SOMPROF_CCT_H

#include <stdint.h>

#define SPC_NONE UINT32_MAX
#define SPC_ROOT 0u

typedef struct SpcNode {
    const void *method; /* opaque method identity; NULL for the root */
    uint32_t parent;    /* SPC_NONE for the root */
    uint32_t callsite;  /* position in the parent's method */
    uint32_t first_child, next_sibling;
    uint32_t depth;    /* 0 for the root */
    uint64_t count;    /* invocations (exact) or samples ending here (sampled) */
    uint64_t total_ns; /* inclusive time (exact) */
    uint64_t child_ns; /* time in callees (exact) */
    uint64_t self_ns;  /* self time (exact; clock ticks until the VM detaches) */
    uint64_t calls;    /* calls made from this context (exact; folded ones included) */
    uint64_t merged;   /* calls merged into this context by the node bound (exact) */
    uint32_t active;   /* activations of this context open now (exact; > 1 when folded) */
} SpcNode;

/* A folded call: (parent, method, callsite) re-enters `target`, an ancestor context. */
typedef struct SpcAlias {
    const void *method;
    uint32_t parent, callsite, target;
} SpcAlias;

#define SPC_MAX_NODES_DEFAULT (1u << 20)

typedef struct SpcTree {
    SpcNode *n;
    uint32_t len, cap;
    uint32_t *slots; /* open addressing: node index + 1, 0 = empty */
    uint32_t mask;
    SpcAlias *alias; /* open addressing, method == NULL: empty (caches the ancestor walk) */
    uint32_t alias_len, alias_mask;
    uint32_t max_nodes; /* bound on len (SPC_MAX_NODES_DEFAULT unless set after spc_init) */
    uint64_t folded;    /* calls that re-entered an ancestor context (recursion) */
    uint64_t merged;    /* calls or sample frames merged into a caller: the bound was reached */
} SpcTree;

/* Initialises t with its root node.  Returns 0 or -1 on ENOMEM. */
int spc_init(SpcTree *t);
void spc_fini(SpcTree *t);
/* The child of parent for (method, callsite), created if absent; SPC_NONE on ENOMEM. */
uint32_t spc_child(SpcTree *t, uint32_t parent, const void *method, uint32_t callsite);
/* The context a call from parent at callsite to method enters: its child, or the ancestor
 * the same call opened (recursion, counted in t->folded), or - when the tree has max_nodes
 * nodes or memory runs out - parent itself (counted in t->merged; *merged set). */
uint32_t spc_enter(SpcTree *t, uint32_t parent, const void *method, uint32_t callsite, int *merged);

/* One sample, youngest frame first: methods[i] runs at position pos[i] (for i > 0 that is
 * the call site of frame i-1).  If start != SPC_NONE the sample is partial: frame n-1 is an
 * activation seen before, whose context is `start`; younger frames go below it.  Otherwise
 * frame n-1 is the outermost activation and hangs off the root.  ctx_out (n entries,
 * optional) receives each frame's context.  Adds `weight` to the leaf's count.  Returns the
 * leaf context or SPC_NONE (ENOMEM, or n == 0). */
uint32_t spc_add_sample(SpcTree *t, const void *const *methods, const uint32_t *pos, uint32_t n,
                        uint32_t start, uint64_t weight, uint32_t *ctx_out);

/* Writes the path root->ctx (excluding the root) leaf first into out (up to max); returns
 * its length. */
uint32_t spc_path(const SpcTree *t, uint32_t ctx, uint32_t *out, uint32_t max);

/* Self time of a context (exact mode). */
static inline uint64_t spc_self_ns(const SpcNode *x) {
    return x->self_ns;
}

#endif
