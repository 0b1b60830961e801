/* SPDX-License-Identifier: MIT */
/*
 * ccmap.h - the Rotor Call Context Map (CC-Map), generic over 64-bit method identities.
 *
 * Owns: struct SampoCCMap (public opaque type of sampo.h) and its node arrays:
 *   CcMethod  (MethodProfile)  self/total samples of one method;
 *   CcSite    (CallSite)       caller method + call-site position;
 *   CcCallee  (Callee)         call site -> callee method, totals in any context;
 *   CcCtx     (CalleeRef)      a method in one calling context (CCT node), context counts;
 *   CcSiteRef (CallSiteRef)    a call site in one context, parent of the callees' CalleeRefs.
 * Every general node lists its in-context nodes (first_ref/next_ref) and every in-context node
 * points back at its general node: the bidirectional links of the paper.
 *
 * Invariants: nodes are referred to by uint32 index (so a snapshot is a flat copy); a context
 * is always created after its parent, so parent index < child index; counts only grow except
 * through prune/reset; "total" counts a sample once per node even under recursion (stamps).
 *
 * Recursion is folded as in the som profiler's trees (src/somprof/cct.h): a call from a
 * context of method C at position p to method M re-enters the nearest context on the path
 * (the calling context included) that the same call (the same general Callee C@p->M) opened,
 * instead of opening a new level; no context has an ancestor with the same Callee.  The
 * number of contexts is bounded (max_ctx, PROF_CCMAP_MAX_CTX_DEFAULT): a frame that would
 * need a context beyond it stays in its caller's context.  Both are counted (folded,
 * merged).  The general nodes (methods, sites, callees) are credited from the sample's
 * frames, not from contexts, so folding and merging change the context tree only.  A
 * context's total is the samples whose leaf context lies in its subtree (its path is the
 * sample's stack when nothing was folded).
 *
 * Not thread-safe, not signal-safe (allocates): used by the manager thread and by owners of
 * snapshots / standalone maps.
 */
#ifndef PROF_CCMAP_H
#define PROF_CCMAP_H

#include "sampo.h"

#include <stddef.h>
#include <stdint.h>

#define CC_NONE UINT32_MAX

typedef struct CcMethod {
    uint64_t id;
    uint64_t self, total;
    uint64_t stamp;      /* last sample that credited total */
    uint32_t first_site; /* CallSites in this method */
    uint32_t first_ctx;  /* CalleeRefs of this method (chain via CcCtx.next_mref) */
    uint32_t name;       /* offset+1 into names, 0 = unnamed */
} CcMethod;

typedef struct CcSite {
    uint32_t method; /* caller */
    uint32_t next_site;
    uint64_t pos;
    uint64_t count, stamp;
    uint32_t first_callee; /* Callee nodes (targets) */
    uint32_t first_ref;    /* CallSiteRefs of this site */
} CcSite;

typedef struct CcCallee {
    uint32_t site, method; /* method = callee */
    uint32_t next_callee;  /* next target of the same site */
    uint32_t first_ref;    /* CalleeRefs of this edge */
    uint64_t count, stamp;
} CcCallee;

typedef struct CcCtx {
    uint32_t parent_sr; /* CallSiteRef or CC_NONE at a root */
    uint32_t method;
    uint32_t callee;       /* general Callee or CC_NONE at a root */
    uint32_t first_sr;     /* CallSiteRefs in this context */
    uint32_t next_sibling; /* next child of the same CallSiteRef (or next root) */
    uint32_t next_ref;     /* next CalleeRef of the same Callee */
    uint32_t next_mref;    /* next CalleeRef of the same method */
    uint32_t depth;
    uint64_t self, total;
} CcCtx;

typedef struct CcSiteRef {
    uint32_t ctx, site;
    uint32_t next_sr;     /* next CallSiteRef of the same context */
    uint32_t next_ref;    /* next CallSiteRef of the same general site */
    uint32_t first_child; /* CalleeRefs */
    uint32_t pad;
    uint64_t count;
} CcSiteRef;

typedef struct CcSlot {
    uint64_t a, b;
    uint32_t kind; /* 0 = empty */
    uint32_t idx;
} CcSlot;

struct SampoCCMap {
    CcMethod *m;
    CcSite *s;
    CcCallee *c;
    CcCtx *x;
    CcSiteRef *r;
    uint32_t nm, ns, nc, nx, nr;
    uint32_t capm, caps, capc, capx, capr;
    uint32_t first_root;
    CcSlot *tab;
    uint32_t tab_cap, tab_n;
    char *names;
    uint32_t names_len, names_cap;
    uint64_t total, stamp;
    uint32_t max_ctx;        /* bound on nx (PROF_CCMAP_MAX_CTX_DEFAULT unless set) */
    uint64_t folded, merged; /* sample frames folded into an ancestor / merged at the bound */
};

/* Default bound on a map's contexts; SAMPO_MAX_CONTEXTS=N sets it for a run (read once, by
 * prof_ccmap_set_default_max, when the profiler starts). */
#define PROF_CCMAP_MAX_CTX_DEFAULT (1u << 18)

typedef struct SampoCCMap ProfCCMap;

/* Bound given to maps created from now on (0: PROF_CCMAP_MAX_CTX_DEFAULT). */
void prof_ccmap_set_default_max(uint32_t max_ctx);
ProfCCMap *prof_ccmap_new(void);
void prof_ccmap_free(ProfCCMap *m);
void prof_ccmap_clear(ProfCCMap *m);
ProfCCMap *prof_ccmap_clone(const ProfCCMap *m);
/* See sampo_ccmap_add(). */
int prof_ccmap_add(ProfCCMap *m, const uint64_t *methods, const uint64_t *pos, uint32_t n,
                   uint64_t weight, uint32_t start_ctx, uint32_t *ctx_out);
/* Method index of id, or CC_NONE. */
uint32_t prof_ccmap_find_method(const ProfCCMap *m, uint64_t id);
/* Sets a method's display name (creates the method node if absent). */
int prof_ccmap_set_name(ProfCCMap *m, uint64_t id, const char *name);
const char *prof_ccmap_name(const ProfCCMap *m, uint32_t method_idx);
/* Position of the call site through which ctx was entered (0 at a root). */
uint64_t prof_ccmap_ctx_pos(const ProfCCMap *m, uint32_t ctx);
/* Parent context of ctx or CC_NONE. */
uint32_t prof_ccmap_ctx_parent(const ProfCCMap *m, uint32_t ctx);

#endif
