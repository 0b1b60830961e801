/* SPDX-License-Identifier: MIT */
/*
 * somprof.c - the som profiler session and its three modes (see somprof.h).
 *
 * Invariants:
 *  - An activation counts as visited when frame->visited == the VM's current mark (never 0:
 *    the interpreter writes 0 on activation).  Async mode: libsampo keeps each visited
 *    frame's context, keyed by the frame slot's address (token); a reused slot starts
 *    unvisited, so the token always belongs to the live activation when its mark is set.
 *    Cooperative mode keeps the same thing in frame_ctx[frame index].
 *  - Exact mode: every on_enter is matched by one on_exit (also when non-local returns
 *    unwind), so the context stack mirrors the activations plus the running primitive.
 * Signal safety: only spa_frames() and spa_pending_push() run in the SIGPROF handler.
 */
#include "somprof.h"

#include <errno.h>
#include <math.h>
#include <semaphore.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "capi.h"
#include "jitabi.h"
#include "cct.h"
#include "interp.h"
#include "names.h"
#include "output.h"
#include "profile_io.h"
#include "sampo.h"

#define SOMPROF_MAX_VMS 256
#define SOMPROF_PENDING 64

typedef struct CoopSample {
    uint32_t ctx;
    uint8_t state;
    uint32_t weight; /* ticks it stands for: 1, or the ticks missed while the flag waited */
    uint64_t t_ns;
} CoopSample;

typedef struct ExactFrame {
    uint32_t node;
    uint64_t t0; /* TSC at the enter hook's start */
} ExactFrame;

/* A compiled code range and its name, kept for the profile's symbols (S.codes). */
typedef struct SprCode {
    uintptr_t start;
    uint64_t size;
    char *name;
} SprCode;

typedef struct SprKnown {
    uintptr_t method;
    const char *name; /* interned */
} SprKnown;

/* GC attribution (docs/design/vm-profiling.md, "Collections"): about SPG_PER_CYCLE
 * allocation samples per collection cycle, at least SPG_MIN_BYTES apart on average. */
#define SPG_SLOTS 32
#define SPG_DEPTH 250 /* below the engine's 255 frames of a record */
#define SPG_PER_CYCLE 24
#define SPG_MIN_BYTES (256u << 10)

typedef struct SpgCycle {
    uint32_t n[SPG_SLOTS], w[SPG_SLOTS]; /* frames and weight of each slot (n 0: unusable) */
    uint32_t slots;                      /* filled */
    uint64_t seen;  /* allocation samples of the cycle (the reservoir's count) */
    uint64_t wsum;  /* weights of the usable slots */
    uint64_t cycle; /* heap.stats.collections when they were taken (UINT64_MAX: none) */
} SpgCycle;

typedef struct VmProf {
    SomVM *vm;
    int no;
    uint32_t mark;
    SpnNames names;
    /* async: methods the handler saw unnamed, named at the next safe point */
    const SomMethod *pending[SOMPROF_PENDING];
    uint32_t npending;
    volatile int overflow;
    /* coop and exact */
    SpcTree tree;
    uint32_t *frame_ctx;
    const void **scr_m;
    uint32_t *scr_p, *scr_c, *scr_f;
    uint32_t scr_cap;
    CoopSample *samples;
    size_t nsamples, cap_samples;
    clockid_t cpu_clock; /* the VM thread's CPU clock, read by the marking thread */
    uint64_t tid;        /* the VM thread's OS id (its own CC-Map in async mode) */
    uint64_t cpu_ref;    /* the VM thread's CPU time at its latest sample, advanced by one
                            interval per missed tick counted (atomic: both threads) */
    uint32_t missed;     /* ticks that found the flag still set (marking thread adds) */
    /* The activation the marking thread saw on top when it set the flag: frame index and
     * method (spc_mark writes them before the flag, spc_hook reads them after taking it). */
    _Atomic int32_t tick_top;
    _Atomic(const SomMethod *) tick_method;
    /* A coop tick's own instant (spc_hook): the marking thread's TSC when it set the flag,
     * and while the VM thread waits for the instant it drew, that instant (TSC, 0: not
     * waiting) and the tick's sample, labelled with the state there when the wait ends. */
    _Atomic uint64_t tick_tsc;
    uint64_t instant;
    size_t instant_at;   /* the waiting tick's sample in samples[] */
    uint64_t instant_t0; /* TSC and thread CPU ns when the wait began */
    uint64_t instant_cpu;
    uint64_t wait_checks; /* places passed since the wait began, skipped ones included */
    /* all waits of this thread, summed into the profile's metadata at detach: the checks' own
     * time (state_check_ns), waits, places counted off, instants redrawn, unresolved */
    uint64_t check_ticks, waits, skipped, redrawn, unresolved;
    uint64_t rate_t0;   /* since when wait_checks counts */
    uint32_t redraws;   /* instants this tick drew again */
    uint64_t margin;    /* this thread's margin (TSC ticks; 0: SPC_MARGIN_NS) */
    uint32_t calm;      /* waits ended since a count last missed or the margin halved */
    uint32_t counts_ok; /* counts ended before the instant since then */
    uint32_t skip;      /* places being skipped (poll below -1), 0: each one checks */
    uint64_t rng;
    /* exact */
    ExactFrame *stk;
    uint32_t sp, cap_stk;
    uint64_t t_last;       /* TSC at the end of the latest enter/exit event (exact mode's self
                              time; in a sampled run, at its start: the hooks are seen) */
    uint64_t ck_t, ck_cpu; /* TSC and thread CPU ns at the latest descheduling check */
    uint64_t desched_ns;   /* time taken out of long intervals: the thread was not running */
    uint64_t t_attach;
    /* the exact state split (--prof-states): the state since the latest transition, the TSC
     * at that transition, and the ticks spent in each state (spx_state_to) */
    uint8_t st_cur;
    uint8_t prim_from; /* the state a primitive was called in (its end returns to it) */
    uint64_t st_t, st_ticks[VMS_COUNT];
    uint64_t st_ck_t, st_ck_cpu; /* TSC and thread CPU ns at its latest descheduling check */
    uint64_t cpu_attach;         /* the VM thread's CPU time at attach (load factor, spx_finish) */
    uint64_t state_ns[VMS_COUNT];
    /* async and coop: the allocation samples of the current collection cycle and of the
     * previous one (spg_*; a coop tick charges a collection after it has ended): each
     * SPG_SLOTS stacks of up to SPG_DEPTH frames (leaf first), weighted in sampling
     * intervals; a sample in a collection that an allocation needed takes one of them */
    const SomMethod **gc_m;
    uint32_t *gc_p;
    SpgCycle gc[2];     /* cycle c in gc[c & 1] */
    uint64_t gc_mean;   /* the mean distance between allocation samples, bytes */
    uint64_t gc_rng;    /* the hook's draws */
    uint64_t gc_hrng;   /* the handler's draws */
    uint64_t gc_walks;  /* allocation samples taken */
    uint64_t gc_spread; /* samples in collections that took an allocation's stack */
    uint64_t gc_own;    /* samples in such collections that kept their own (no usable slot) */
} VmProf;

static struct {
    SomProfOptions o;
    bool active;
    pthread_mutex_t mu;
    VmProf *vms[SOMPROF_MAX_VMS];
    int nvms;
    SpProfile *prof;  /* coop/exact: the profile being built */
    SpProfile *tprof; /* exact: the time-weighted profile */
    SpcTree merged;   /* coop/exact: name-keyed tree of all threads */
    pthread_t marker;
    sem_t marker_wake; /* posted at finish: the marker does not sleep out its interval */
    bool marker_running;
    atomic_int stop;
    atomic_int paused;
    _Atomic uint64_t interval_ns;
    atomic_ulong coop_samples, coop_repeats, coop_changes;
    int tune_dir;      /* coop tuning (marking thread only): latest change, +1 longer, -1 */
    bool tune_settled; /* coop tuning: a change would have undone the previous one */
    uint64_t t0;
    char out[4096];     /* --prof-out, absolute (empty: none) */
    char dump[4096];    /* --prof-dump, absolute (empty: none) */
    char lib_out[4200]; /* async: libsampo's own file, read back at finish and removed */
    bool out_tmp;
    uint64_t exact_state_ns[VMS_COUNT];
    bool have_exact_states;
    uint64_t long_ticks; /* exact mode: intervals longer than this are checked for descheduling */
    uint64_t base_ns;    /* exact mode: CPU time of the unprofiled run (SOMPROF_EXACT_BASE_NS) */
    double cost_scale;   /* exact mode: factor applied to the calibrated event costs */
    uint64_t win_ns;     /* exact mode: event cost in an interval that starts at an enter */
    uint64_t hook_ns;    /* exact mode: event cost in an interval that starts at an exit */
    InterpLabel labels[256]; /* sorted by address */
    int nlabels;
    bool coop_marker; /* coop: charge the activation the marking thread saw (SOMPROF_COOP_CHARGE) */
    /* coop: the tick's instant (spc_hook): its window and delay in TSC ticks (0 until the
     * marking thread has measured the TSC rate: no window), the window in ns */
    _Atomic uint64_t coop_win_ticks;
    _Atomic uint64_t coop_skew_ticks; /* 2 us: the cores' TSCs may differ by this much */
    uint64_t coop_win_ns;
    uint64_t coop_check_ticks; /* what one such check costs (spc_check_cost) */
    double coop_tick_ns;       /* ns per TSC tick (0 until measured: no window) */
    _Atomic uint64_t coop_delay_ticks;
    _Atomic uint64_t coop_margin_ticks; /* the checks nearer the instant than this all run */
    /* the detached VMs' VmProf counters of the same names (coop_check_total: check_ticks) */
    atomic_ulong coop_waits, coop_unresolved, coop_skipped, coop_redrawn, coop_check_total;
    bool late_names; /* tests: SOMPROF_LATE_NAMES=1 never tells libsampo the names, so every
                        frame takes the fix-up path at finish (the race's worst case) */
    SomVM *all[SOMPROF_MAX_VMS]; /* every attached VM (somprof_request_stop) */
    int nall;
    atomic_int stop_sig;   /* a stop was requested because of this signal (0: none) */
    uint32_t max_contexts; /* coop/exact trees: node bound (SOMPROF_MAX_CONTEXTS for tests) */
    uint64_t ctx_folded, ctx_merged; /* summed over the detached VMs' trees */
    struct SprKnown *known;       /* async: every method named by a detached VM (pointer, name) */
    _Atomic uint64_t compiler_ns; /* the JIT compiler thread's CPU time compiling */
    /* async: the compiler thread, all of whose CPU its samples label compiling (its start-up,
     * the job in hand at the end): its CPU clock and its CPU time at registration, and the
     * CPU time it spent registered (at unregistration, or read when the sampling stopped) */
    pthread_mutex_t jit_mu;
    bool jit_live;
    clockid_t jit_clock;
    uint64_t jit_cpu0, jit_cpu_ns;
    _Atomic uint64_t hook_cpu_ns;   /* JIT-only: CPU time the VM threads spent taking samples */
    _Atomic uint64_t vm_cpu_ns;     /* JIT-only: CPU time of the detached VM threads */
    _Atomic uint64_t marker_cpu_ns; /* JIT-only: the marking thread's CPU time, at its end */
    _Atomic int compiler_sampled;   /* it is registered with libsampo (async) */
    _Atomic uint64_t compiling;     /* the compiler thread's job: its frame id, 0 = none */
    struct SprCode *codes;          /* async: compiled code registered (symbols for hist) */
    size_t ncodes, capcodes;
    size_t nknown, capknown;
    /* async and coop: collections charged to the allocations of their cycle (spg_*;
     * SOMPROF_GC_SPREAD=0 turns it off), and the detached VMs' counters */
    bool gc_spread;
    uint64_t gc_walks, gc_spread_n, gc_own;
} S = {.mu = PTHREAD_MUTEX_INITIALIZER, .jit_mu = PTHREAD_MUTEX_INITIALIZER};

/* The exact mode's cheap clock: the TSC scaled to ns where there is one. */
static double spx_tick_ns = 0;

#if defined(__x86_64__)
#include <x86intrin.h>
static uint64_t spx_ticks(void) {
    return __rdtsc();
}
/* A clock read at a precise point of the instruction stream: everything before it has
 * completed and its stores are visible to other cores (the marking thread reads the VM
 * state), nothing after it has started. */
static uint64_t spx_ticks_fenced(void) {
    _mm_mfence();
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}
#else
static uint64_t spx_now(void);
static uint64_t spx_ticks(void) {
    return spx_now();
}
static uint64_t spx_ticks_fenced(void) {
    atomic_thread_fence(memory_order_seq_cst);
    return spx_now();
}
#endif

static uint64_t spx_thread_cpu(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t spx_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool somprof_parse_mode(const char *s, SomProfMode *out) {
    static const char *const names[] = {"off", "async", "coop", "exact"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, names[i])) {
            *out = (SomProfMode)i;
            return true;
        }
    return false;
}

/* ---- compiled frames ---------------------------------------------------------------------
 * A compiled activation (f->jit set) may be running inlined activations: f->jit_pos names the
 * innermost one's position, whose parent chain ends at the frame's own method (jitabi.h).
 * Walkers report them innermost first, before the frame itself.  The visited mark stays a
 * property of the physical frame: a mark on a compiled frame says that the frame's own
 * activation and its callers were recorded, not its inlined activations, which start and end
 * without the frame changing; so they are walked afresh by every sample, never marked, and
 * a partial sample that stops at a marked compiled frame still carries them, below the
 * frame's recorded context.  Only reads: async-signal-safe. */

uint32_t somprof_inlined(const SomFrame *f, SomProfLogical *out, uint32_t max) {
    const SomJitCode *c = f->jit;
    uint32_t pos = f->jit_pos;
    if (!c || pos == JIT_POS_NONE || !c->pos) return 0;
    const JitPos *t = c->pos;
    uint32_t npos = c->npos, depth = 0;
    for (uint32_t q = pos; q < npos && depth < npos && t[q].parent != JIT_POS_NONE; q = t[q].parent)
        depth++;
    /* deeper than max: the innermost are left out, their time goes to the nearest kept caller */
    uint32_t skip = depth > max ? depth - max : 0, n = 0;
    for (uint32_t q = pos, d = 0; d < depth; q = t[q].parent, d++)
        if (d >= skip) out[n++] = (SomProfLogical){t[q].method, t[q].bci};
    return n;
}

/* xorshift64: the coop ticks' instants and the GC attribution's draws (signal-safe) */
static uint64_t spc_rand(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

/* ---- async mode ------------------------------------------------------------------------ */

static void spa_pending_push(VmProf *p, const SomMethod *m) {
    uint32_t k = __atomic_load_n(&p->npending, __ATOMIC_RELAXED);
    if (k >= SOMPROF_PENDING) {
        p->overflow = 1;
    } else {
        p->pending[k] = m;
        __atomic_store_n(&p->npending, k + 1, __ATOMIC_RELEASE);
    }
    p->vm->poll = 1;
}

/* ---- collections: charged to the allocations that needed them ---------------------------
 * A collection starts at the allocation that finds the budget spent, but the allocations of
 * the whole cycle since the previous one needed it.  Charging its samples (tens of them in a
 * row: DeltaBlue's collections take ~10 ms) to the one that started it makes a lottery of
 * them: the same program's runs put its time on different contexts (run to run, 8 points of
 * overlap lost with the JIT).  So the VM thread takes the stack of an allocation every
 * ~1/SPG_PER_CYCLE of the budget (byte-weighted: the distances are drawn from an
 * exponential, so that no allocation pattern can fall in step with them), keeps up to
 * SPG_SLOTS of the cycle's (a reservoir when more), and a sample in a collection that an
 * allocation needed takes one of them, drawn by weight: the same expectation, a much smaller
 * variance.  `System fullGC` keeps its caller's stack. */

/* The VM's frames, full (no marks), into slot i of cycle set c; n = 0 when deeper than
 * SPG_DEPTH.  Async names the methods now (its handler will report them). */
static void spg_walk(VmProf *p, uint32_t c, uint32_t i) {
    SomVM *vm = p->vm;
    size_t at = ((size_t)c * SPG_SLOTS + i) * SPG_DEPTH;
    const SomMethod **m = p->gc_m + at;
    uint32_t *pos = p->gc_p + at, n = 0;
    bool name = S.o.mode == SOMPROF_ASYNC;
    for (int32_t k = vm->top; k >= 0; k--) {
        SomFrame *f = &vm->frames[k];
        SomProfLogical in[SOMPROF_MAX_INLINED];
        uint32_t ni = somprof_inlined(f, in, SOMPROF_MAX_INLINED);
        if (n + ni + 1 > SPG_DEPTH) {
            n = 0;
            break;
        }
        for (uint32_t j = 0; j < ni; j++) {
            if (name) spn_name(&p->names, in[j].method);
            m[n] = in[j].method;
            pos[n++] = in[j].bci;
        }
        if (name) spn_name(&p->names, f->method);
        m[n] = f->method;
        pos[n++] = f->bci;
    }
    p->gc[c].n[i] = n;
}

/* A uniform draw in (0, 1]. */
static double spg_unit(uint64_t *rng) {
    return ((double)(spc_rand(rng) >> 11) + 1.0) / 9007199254740992.0;
}

/* vm->alloc_hook: an allocation sample (VM thread, not in a collection). */
static int64_t spg_alloc_hook(SomVM *vm) {
    VmProf *p = vm->prof_data;
    GcHeap *h = &vm->heap;
    if (!p || !p->gc_m) return INT64_MAX;
    uint64_t over = h->sample_left < 0 ? (uint64_t)-h->sample_left : 0;
    uint32_t c = (uint32_t)(h->stats.collections & 1);
    SpgCycle *g = &p->gc[c];
    if (g->cycle != h->stats.collections) { /* a new cycle (the previous one stays) */
        g->cycle = h->stats.collections;
        g->slots = 0;
        g->seen = 0;
        g->wsum = 0;
        uint64_t mean = h->threshold / SPG_PER_CYCLE;
        p->gc_mean = mean > SPG_MIN_BYTES ? mean : SPG_MIN_BYTES;
    }
    /* an allocation larger than the distance covers more than one interval */
    uint64_t w = 1 + over / p->gc_mean;
    if (w > UINT32_MAX) w = UINT32_MAX;
    uint64_t seen = ++g->seen;
    uint32_t slot = g->slots < SPG_SLOTS ? g->slots : SPG_SLOTS;
    if (slot == SPG_SLOTS) { /* full: keep a uniform choice of the cycle's samples */
        uint64_t r = spc_rand(&p->gc_rng) % seen;
        if (r >= SPG_SLOTS) goto next;
        slot = (uint32_t)r;
        g->wsum -= g->n[slot] ? g->w[slot] : 0;
    } else {
        g->slots++;
    }
    spg_walk(p, c, slot);
    g->w[slot] = (uint32_t)w;
    if (g->n[slot]) g->wsum += w;
    p->gc_walks++;
next:;
    double d = -log(spg_unit(&p->gc_rng)) * (double)p->gc_mean;
    return d < 1 ? 1 : d > 1e15 ? (int64_t)1e15 : (int64_t)d;
}

/* One of cycle `cycle`'s allocation stacks, drawn by weight: its frames (*m, *pos) and
 * count, 0 when there is none to take or it is longer than max (the sample keeps its own
 * stack; counted).  Async calls it from its handler, coop at the safe point after the
 * collection. */
static uint32_t spg_draw(VmProf *p, uint64_t cycle, uint32_t max, const SomMethod *const **m,
                         const uint32_t **pos) {
    uint32_t c = (uint32_t)(cycle & 1);
    const SpgCycle *g = &p->gc[c];
    if (!p->gc_m || !g->wsum || g->cycle != cycle) {
        p->gc_own++;
        return 0;
    }
    uint64_t r = spc_rand(&p->gc_hrng) % g->wsum;
    uint32_t i = 0;
    for (; i < g->slots; i++) {
        if (!g->n[i]) continue;
        if (r < g->w[i]) break;
        r -= g->w[i];
    }
    if (i == g->slots || g->n[i] > max) {
        p->gc_own++;
        return 0;
    }
    size_t at = ((size_t)c * SPG_SLOTS + i) * SPG_DEPTH;
    *m = p->gc_m + at;
    *pos = p->gc_p + at;
    p->gc_spread++;
    return g->n[i];
}

/* In the async handler, for a sample in a collection an allocation needed (0: none to take;
 * the sample walks as usual). */
static int spg_frames(VmProf *p, SampoFrameInfo *out, int max) {
    const SomMethod *const *m;
    const uint32_t *pos;
    uint32_t n = spg_draw(p, p->vm->heap.stats.collections, (uint32_t)max, &m, &pos);
    for (uint32_t k = 0; k < n; k++)
        out[k] = (SampoFrameInfo){(uint64_t)(uintptr_t)m[k], pos[k], 0, 0};
    return (int)n;
}

/* The frame callback: runs in the SIGPROF handler on the VM's own thread.  A compiled frame
 * stands for its inlined activations too (somprof_inlined): they come first, unmarked and
 * without a token (libsampo never looks them up: only a frame reported seen is). */
static int spa_frames(void *ctx, SampoFrameInfo *out, int max) {
    VmProf *p = ctx;
    SomVM *vm = p->vm;
    int32_t top = __atomic_load_n(&vm->top, __ATOMIC_ACQUIRE);
    uint32_t mark = p->mark;
    /* while the user's profile is paused the samples still feed the JIT's queries (the
     * thread's CC-Map, SomProfOptions.feed_jit): a full walk that leaves no marks */
    bool paused = sampo_vm_sample_paused();
    int n = 0;
    if (vm->jit_fb_burst) vm->jit_fb_armed = vm->jit_fb_burst; /* sampled type feedback */
    if (vm->state == VMS_GC && vm->heap.for_alloc && (n = spg_frames(p, out, max)) > 0) return n;
    SomProfLogical in[SOMPROF_MAX_INLINED];
    for (int32_t i = top; i >= 0 && n < max; i--) {
        SomFrame *f = &vm->frames[i];
        uint32_t k = somprof_inlined(f, in, SOMPROF_MAX_INLINED);
        for (uint32_t j = 0; j < k && n < max; j++) {
            out[n++] = (SampoFrameInfo){(uint64_t)(uintptr_t)in[j].method, in[j].bci, 0, 0};
            if (!spn_has(&p->names, in[j].method)) spa_pending_push(p, in[j].method);
        }
        if (n >= max) break;
        SomMethod *m = f->method;
        uint32_t seen = !paused && f->visited == mark;
        out[n++] = (SampoFrameInfo){(uint64_t)(uintptr_t)m, f->bci, seen, (uint64_t)(uintptr_t)f};
        if (seen) break;
        if (!paused) f->visited = mark;
        if (!spn_has(&p->names, m)) spa_pending_push(p, m);
    }
    return n;
}

/* Names what the handler saw (VM thread, at a safe point or at detach). */
static void spa_name_pending(VmProf *p) {
    uint32_t i = 0;
    for (;;) {
        uint32_t k = __atomic_load_n(&p->npending, __ATOMIC_ACQUIRE);
        for (; i < k; i++)
            spn_name(&p->names, p->pending[i]);
        if (__atomic_compare_exchange_n(&p->npending, &k, 0, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            break;
    }
    if (p->overflow) {
        p->overflow = 0;
        SomProfLogical in[SOMPROF_MAX_INLINED];
        for (int32_t f = 0; f <= p->vm->top; f++) {
            uint32_t k = somprof_inlined(&p->vm->frames[f], in, SOMPROF_MAX_INLINED);
            for (uint32_t j = 0; j < k; j++)
                spn_name(&p->names, in[j].method);
            spn_name(&p->names, p->vm->frames[f].method);
        }
    }
}

/* ---- stopping on a signal ---------------------------------------------------------------
 * somprof_request_stop (any thread) sets S.stop_sig and every attached VM's poll flag; each
 * VM's safepoint hook, on the VM's own thread at a point where the interpreter's state is
 * consistent, abandons the run (som_vm_abandon), so the normal detach and finish write what
 * was collected.  The signal handler itself is the embedder's (tools/som: a sigwait thread). */

/* Abandons the run if a stop was requested and this is an interpreter safe point. */
static void spr_stop_check(SomVM *vm, SomSafepoint where) {
    int sig = atomic_load(&S.stop_sig);
    if (sig && (where == SOM_SP_ENTRY || where == SOM_SP_RETURN || where == SOM_SP_LOOP))
        som_vm_abandon(vm, 128 + sig);
}

/* Exact mode's hook: only the stop (the exact hooks do the rest). */
static void spx_stop_hook(SomVM *vm, SomSafepoint where) {
    spr_stop_check(vm, where);
}

int somprof_request_stop(int sig) {
    atomic_store(&S.stop_sig, sig);
    pthread_mutex_lock(&S.mu);
    int n = S.nall;
    for (int i = 0; i < S.nall; i++)
        S.all[i]->poll = 1;
    pthread_mutex_unlock(&S.mu);
    return n;
}

static void spa_hook(SomVM *vm, SomSafepoint where) {
    spr_stop_check(vm, where);
    vm->poll = 0;
    spa_name_pending(vm->prof_data);
}

/* ---- cooperative mode ------------------------------------------------------------------ */

static int spc_scratch(VmProf *p, uint32_t n) {
    if (n <= p->scr_cap) return 0;
    uint32_t cap = n < 256 ? 256 : n * 2;
    const void **m = realloc(p->scr_m, cap * sizeof *m);
    if (m) p->scr_m = m;
    uint32_t *a = realloc(p->scr_p, cap * sizeof *a);
    if (a) p->scr_p = a;
    uint32_t *b = realloc(p->scr_c, cap * sizeof *b);
    if (b) p->scr_c = b;
    uint32_t *c = realloc(p->scr_f, cap * sizeof *c);
    if (c) p->scr_f = c;
    if (!m || !a || !b || !c) return -1;
    p->scr_cap = cap;
    return 0;
}

static int spc_push_sample(VmProf *p, uint32_t leaf, uint8_t state, uint32_t weight) {
    if (p->nsamples == p->cap_samples) {
        size_t cap = p->cap_samples ? p->cap_samples * 2 : 4096;
        CoopSample *s = realloc(p->samples, cap * sizeof *s);
        if (!s) return -1;
        p->samples = s;
        p->cap_samples = cap;
    }
    p->samples[p->nsamples++] = (CoopSample){leaf, state, weight, spx_now() - S.t0};
    return 0;
}

/* Walks down from frames[top] to the first visited activation and adds the (partial)
 * sample: one tick in `state`, and `missed` more ticks in `missed_state`.  With `gone`, the
 * leaf is that method, an activation called from frames[top] that has returned since. */
static void spc_take_sample(VmProf *p, int32_t top, uint8_t state, uint32_t missed,
                            uint8_t missed_state, const SomMethod *gone) {
    SomVM *vm = p->vm;
    if (vm->jit_fb_burst) vm->jit_fb_armed = vm->jit_fb_burst; /* sampled type feedback */
    if (top < 0 || spc_scratch(p, (uint32_t)top + 2)) return;
    uint32_t n = 0, start = SPC_NONE;
    int repeated = !gone && vm->frames[top].visited == p->mark;
    if (gone) {
        p->scr_m[n] = gone;
        p->scr_p[n] = 0;
        p->scr_f[n++] = UINT32_MAX; /* no frame to mark */
    }
    for (int32_t i = top; i >= 0; i--) {
        SomFrame *f = &vm->frames[i];
        SomProfLogical in[SOMPROF_MAX_INLINED];
        uint32_t k = somprof_inlined(f, in, SOMPROF_MAX_INLINED);
        if (k && spc_scratch(p, n + k + (uint32_t)i + 2)) return;
        for (uint32_t j = 0; j < k; j++) { /* never marked: they change under the frame */
            p->scr_m[n] = in[j].method;
            p->scr_p[n] = in[j].bci;
            p->scr_f[n++] = UINT32_MAX;
        }
        p->scr_m[n] = f->method;
        p->scr_p[n] = f->bci;
        p->scr_f[n++] = (uint32_t)i;
        if (f->visited == p->mark) {
            start = p->frame_ctx[i];
            break;
        }
    }
    uint32_t leaf = spc_add_sample(&p->tree, p->scr_m, p->scr_p, n, start, 1, p->scr_c);
    if (leaf == SPC_NONE) return;
    for (uint32_t k = 0; k < n; k++) {
        if (p->scr_f[k] == UINT32_MAX) continue;
        p->frame_ctx[p->scr_f[k]] = p->scr_c[k];
        vm->frames[p->scr_f[k]].visited = p->mark;
    }
    if (spc_push_sample(p, leaf, state, 1) ||
        (missed && spc_push_sample(p, leaf, missed_state, missed)))
        return;
    atomic_fetch_add(&S.coop_samples, 1);
    if (repeated) atomic_fetch_add(&S.coop_repeats, 1);
}

/* A tick that found the thread in a collection an allocation needed, and the `missed` ticks
 * after it in the same stretch: charged to allocation stacks of the cycle that collection
 * ended (spg_draw), not to this safe point's.  False when there are none (nothing added). */
static bool spc_gc_sample(VmProf *p, uint8_t state, uint32_t missed, uint8_t missed_state) {
    uint64_t done = p->vm->heap.stats.collections;
    if (!done) return false;
    for (uint32_t k = 0; k <= missed; k++) {
        const SomMethod *const *m;
        const uint32_t *pos;
        uint32_t n = spg_draw(p, done - 1, SPG_DEPTH, &m, &pos);
        if (!n || spc_scratch(p, n)) return k > 0;
        uint32_t leaf =
            spc_add_sample(&p->tree, (const void *const *)m, pos, n, SPC_NONE, 1, p->scr_c);
        if (leaf == SPC_NONE || spc_push_sample(p, leaf, k ? missed_state : state, 1)) return k > 0;
    }
    atomic_fetch_add(&S.coop_samples, 1);
    return true;
}

/* With --prof-states, a coop tick's state is the VM thread's at an instant drawn uniformly
 * from a window of SPC_WINDOW_NS that starts SPC_DELAY_NS after the marking thread set the
 * flag (spc_hook), and the exact split's transitions end the wait: samples and exact split
 * change state at the same point of a run that the exact split's clock reads slow down
 * (50-70% of Json's or Richards' time is theirs).  Without it the tick keeps the marking
 * thread's view, which is as close to perf's view of the same run as async's and costs no
 * wait: the VM thread's own instant leaned 1-8 points towards primitives there (its checks
 * lengthen the short stretches on both sides of every primitive by more than the instant
 * can skip; docs/design/vm-profiling.md).  SOMPROF_COOP_WINDOW_NS sets the window (0: the
 * marking thread's view) in either case. */
#define SPC_WINDOW_NS 8000ull
#define SPC_DELAY_NS 40000.0
/* The places nearer the instant than SPC_MARGIN_NS all check; a count covers at most 1 /
 * SPC_SKIP_PART of the time left before that, at the rate seen since the wait began, and at
 * least SPC_SKIP_MIN places (fewer are checked one by one). */
#define SPC_MARGIN_NS 2000.0
#define SPC_SKIP_PART 4.0
#define SPC_SKIP_MIN 16.0
/* A count that the instant passed in (a stretch between places longer than the margin began
 * in it) doubles the thread's margin, up to the whole delay; 32 counts in a row that ended in
 * time, or 32 waits without a miss (where the margin left no room to count), halve it again,
 * down to SPC_MARGIN_NS.  So threads with long stretches between dense places
 * (Strs.som: string primitives of tens of us) check every place near the instant, and the
 * others count most places off. */

/* Halves a thread's margin, down to SPC_MARGIN_NS (coop_margin_ticks). */
static void spc_margin_halve(VmProf *p) {
    uint64_t base = S.coop_margin_ticks;
    p->margin = p->margin / 2 > base ? p->margin / 2 : base;
}

/* xorshift64: the marking thread's jitter and the VM threads' instants. */

/* Ends the wait of a tick (spc_hook): it is labelled `state`, the flag is cleared.  The
 * instant is on the TSC, which runs on while the thread is descheduled, and the samples
 * count CPU time: if the thread lost the CPU during the wait (more than 2 us + 1/8 of it),
 * the instant may lie in that gap, and the tick keeps the marking thread's view (rare: 1-4
 * of ~2000 waits on Sieve, whose allocations fault pages in). */
static void spc_instant_end(SomVM *vm, VmProf *p, uint8_t state) {
    uint64_t wall = (uint64_t)((double)(spx_ticks() - p->instant_t0) * S.coop_tick_ns);
    uint64_t cpu = spx_thread_cpu() - p->instant_cpu;
    if (p->instant_at < p->nsamples && wall < cpu + 2000 + cpu / 8)
        p->samples[p->instant_at].state = state;
    p->instant = 0;
    p->waits++;
    int w = -1;
    __atomic_compare_exchange_n(&vm->poll, &w, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
    /* a stop request's flag may have been counted over (som_state_point): raise it again */
    if (atomic_load_explicit(&S.stop_sig, memory_order_relaxed)) vm->poll = 1;
}

/* While a tick waits, `poll` is -1: the VM calls the hook only where its state may change
 * (a primitive's call and end, som_set_state: som_state_point), and each such call reads the
 * TSC.  The first that finds the instant passed labels the tick with the state the thread has
 * been in since the previous call (none changed it in between).  With --prof-states the exact
 * split's own transitions decide instead (spx_state_to), at its clock read: the samples and
 * the exact split then change state at the same point (a fence before that read costs 20-100
 * ns depending on the stores pending, more on the way into a primitive than out of it, so
 * labels taken here put DeltaBlue's primitive share at 46% against 31% exact).
 *
 * A TSC read costs ~10 ns here (AMD EPYC), and primitive-heavy code passes such places every
 * ~30 ns (Json): reading it at all of them through a ~45 us wait cost Json 1.7-1.9% of its
 * CPU at 1 kHz.  So the places well before the instant are counted off instead: once 16 have
 * been checked, the rate at which the thread passed places since the wait began gives how
 * many fit in a quarter of the time left before the last SPC_MARGIN_NS, and `poll` counts that
 * many off inline (vm.h) before the hook reads the TSC again; nearer the instant, or where
 * fewer than SPC_SKIP_MIN places would be counted, every place checks.  If the instant has
 * passed when a count ends (a stretch between places far longer than the rate said: a loop
 * without primitives, a long primitive), the stretch it fell in is unknown.  The tick then
 * draws a new instant (up to 3 times; `state_instants_redrawn` in the profile's metadata);
 * a tick that still cannot tell, or whose wait a new flag ended while places were being
 * counted, takes the state now (`state_waits_unresolved`). */
static bool spc_instant_check(SomVM *vm, VmProf *p) {
    /* a positive poll: the next tick's flag came (the marking thread replaced the -1 or the
     * count); the thread may have run without state changes since, and this safe point need
     * not be one where the state may change: the instant has passed, in the state the thread
     * is in (unless places were being counted off: then one may have changed it) */
    int cur = vm->poll;
    bool next = cur > 0;
    if (!next && S.o.exact_states) { /* no clock read here (spx_state_to): a constant cost */
        p->instant += S.coop_check_ticks;
        return false;
    }
    /* a state change ends a count early (vm.h): the places left uncounted were not passed */
    uint32_t skipped = p->skip - (cur < -1 ? (uint32_t)(-1 - cur) : 0u);
    p->skip = 0;
    if (cur < -1) vm->poll = -1;
    p->wait_checks += 1 + (uint64_t)skipped;
    p->skipped += skipped;
    uint64_t now = spx_ticks();
    uint64_t base = S.coop_margin_ticks;
    if (p->margin < base) p->margin = base;
    if (skipped && !next && now >= p->instant) { /* the count missed */
        uint64_t most = S.coop_delay_ticks;
        p->margin = p->margin * 2 < most ? p->margin * 2 : most;
        p->calm = 0;
        p->counts_ok = 0;
    } else if (skipped && ++p->counts_ok >= 32) { /* 32 counts in a row ended in time */
        spc_margin_halve(p);
        p->counts_ok = 0;
    }
    if (!next && now < p->instant) {
        uint64_t left = p->instant - now, margin = p->margin;
        if (p->wait_checks >= 16 && left > 2 * margin && now > p->rate_t0) {
            double k = (double)p->wait_checks / (double)(now - p->rate_t0) *
                       (double)(left - margin) / SPC_SKIP_PART;
            if (k >= SPC_SKIP_MIN) {
                p->skip = k < 1e6 ? (uint32_t)k : 1000000u;
                vm->poll = -1 - (int)p->skip; /* counted up by this thread only (vm.h) */
            }
        }
        /* Each check's own time is no instant's: it would lengthen the short stretches on
         * both sides of every primitive alike, and where they last ~30 ns (Json, NBody's
         * Double primitives) that pulls the split towards 50/50.  So the instant moves on by
         * this check's time, measured here, plus the call's (spc_check_cost).  A constant
         * from a stand-in VM was not enough: each 10 ns of error moved Json's split by ~8
         * points, and the running VM's checks cost ~1.4 times the stand-in's. */
        uint64_t own = spx_ticks() - now + S.coop_check_ticks;
        p->instant += own;
        p->check_ticks += own;
        return false;
    }
    if (skipped && !next && p->redraws < 3) {
        /* The instant fell somewhere in the places just counted off.  Rather than a guess
         * (the state now: where places alternate, a coin toss between the primitive and its
         * caller), the tick draws a new instant, as far on as the first, and waits again (an
         * instant ~10 us after this place fell into the next long primitive of a loop that
         * builds strings: Strs.som without optimization, 35% primitive against 16%).  The
         * ticks redrawn are those whose instant fell in a long stretch between places,
         * so redrawing moves the split by at most their share times how much their states
         * differ from the rest's (measured: evaluation.md). */
        p->redraws++;
        p->redrawn++;
        uint64_t win = atomic_load_explicit(&S.coop_win_ticks, memory_order_relaxed);
        p->instant = now + S.coop_delay_ticks + 1 + spc_rand(&p->rng) % win;
        p->rate_t0 = now;
        p->wait_checks = 0;
        return false;
    }
    if (skipped) p->unresolved++;
    spc_instant_end(vm, p, vm->state);
    return next;
}

static void spc_hook(SomVM *vm, SomSafepoint where);

/* What a check of the instant costs beyond what it measures itself (spc_instant_check), in
 * TSC ticks: the call through a pointer as the VM makes it, its return, the reads before the
 * first clock read.  The fastest of 5 rounds of 2000 calls on a stand-in VM that waits
 * forever, less the time the checks measured.  With --prof-states the check reads no clock
 * and this is its whole cost. */
static uint64_t spc_check_cost(void) {
    SomVM *vm = calloc(1, sizeof *vm);
    VmProf *p = calloc(1, sizeof *p);
    if (!vm || !p) {
        free(vm);
        free(p);
        return 0;
    }
    vm->prof_data = p;
    vm->safepoint_hook = spc_hook;
    uint64_t save = S.coop_check_ticks, best = UINT64_MAX, start = UINT64_MAX / 2;
    S.coop_check_ticks = 0;
    for (int r = 0; r < 5; r++) {
        p->instant = start;
        uint64_t t0 = spx_ticks();
        for (int i = 0; i < 2000; i++) {
            p->wait_checks = 0; /* every call a check: none skipped */
            if (*(volatile int *)&vm->poll == 0 && vm->safepoint_hook)
                vm->safepoint_hook(vm, SOM_SP_PRIM_DONE);
        }
        uint64_t t = spx_ticks() - t0, inner = p->instant - start;
        uint64_t call = t > inner ? t - inner : 0;
        if (call < best) best = call;
    }
    S.coop_check_ticks = save;
    free(p);
    free(vm);
    return best / 2000;
}

static void spc_hook(SomVM *vm, SomSafepoint where) {
    spr_stop_check(vm, where);
    VmProf *p = vm->prof_data;
    if (p && p->instant && !spc_instant_check(vm, p))
        return; /* waiting for its own instant: the flag stays set meanwhile */
    int v = __atomic_exchange_n(&vm->poll, 0, __ATOMIC_ACQ_REL);
    if (v <= 0 || atomic_load(&S.paused)) return;
    /* One system call per flag: the thread's CPU time.  The marker flags once per interval
     * of wall time; each sample stands for one interval of the thread's CPU time, counted
     * in cpu_ref: a thread that has not used half an interval more than its samples stand
     * for (it was descheduled) skips this one, so the rate stays per CPU time.  cpu_ref
     * advances by whole intervals, not to the CPU time at the safe point: a flag taken late
     * (after a long primitive or GC) must not make the next one look early, or the ticks
     * right after long primitives, often in the next one, would be skipped (coop's state
     * split lost 4-12 points of primitive time that way). */
    uint64_t cpu = spx_thread_cpu();
    uint64_t iv = atomic_load(&S.interval_ns);
    uint32_t missed = __atomic_exchange_n(&p->missed, 0, __ATOMIC_ACQ_REL);
    uint64_t ref = __atomic_load_n(&p->cpu_ref, __ATOMIC_RELAXED);
    if (!missed && cpu + iv / 2 < ref + iv) return;
    ref += iv;
    if (cpu > ref + 2 * iv) ref = cpu - 2 * iv; /* no debt from a pause or a slower rate */
    __atomic_store_n(&p->cpu_ref, ref, __ATOMIC_RELAXED); /* the marker counts misses on it */
    /* The tick's VM state.  The marking thread's view of this thread from another core is
     * biased on these virtual machines for stretches of ~100 ns: its reads found the VM in a
     * primitive up to 45% less often than the primitive's share of the time, by an amount
     * that changed from run to run and with the virtual CPU, and the stretch in which the
     * flag is first seen was biased the other way (docs/evaluation.md, section 5).  So the
     * tick's state is this thread's own at an instant that lies SPC_DELAY_NS plus a uniform
     * draw from the window after the flag was set (the marking thread's TSC stamp, `set`):
     * as uniform in time as the ticks themselves, and past the cross-core effects (the
     * flag's way to this thread, this walk's cache misses: instants drawn right after the
     * walk found Json's primitives 3 points too rarely).  The instant is usually ahead: the
     * thread waits for it (spc_instant_check, spx_state_to).  If it has passed (the flag
     * was seen that late, after a long primitive or GC), no state change can have happened
     * since well before it (each one is a safe point), so the state now is the instant's.
     * Counting every tick at its instant matters: labelling only the ticks seen promptly
     * and the late ones by the marker counted long primitives twice (Sieve with the JIT:
     * 55% primitive against 36% exact). */
    uint64_t win = atomic_load_explicit(&S.coop_win_ticks, memory_order_acquire), set = 0;
    bool window = false;
    if (win && !missed && !S.coop_marker) {
        set = atomic_load_explicit(&p->tick_tsc, memory_order_relaxed);
        window = set != 0;
    }
    /* The flag is charged to the stretch of execution it arrived in, which this safe point
     * ends (SomSafepoint).  An activation's entry ends a stretch of its caller: charging
     * the callee would credit every tick that arrived in a loop to the next method it
     * calls (List: Object>>isNil 44-60% of the samples, its time 15-26%).  With
     * SOMPROF_COOP_CHARGE=marker the sample goes instead to the activation the marking
     * thread saw on top when it set the flag, if it is still on the stack (the same method
     * at that frame index: a later activation of the same method there is charged alike),
     * else to that method as a callee of the frame below it, if that one is still there.
     * The flag reaches this thread 0.2-0.5 us late, and on tiny activations called from
     * loops it is mostly seen after they returned (Grow.som: a copying block got 2-7% of
     * the samples by its stretch, 17-18% in async and by the marker); but the marker's
     * reads come from another core, and on AWFY they made runs less alike than the stretch
     * rule (List: Object>>isNil 4.5-33% from run to run), so the stretch is the default
     * (docs/evaluation.md).  Missed ticks happened while the flag waited, in the stretch
     * this safe point ends: they take this thread's state. */
    int32_t top = vm->top, seen = atomic_load_explicit(&p->tick_top, memory_order_relaxed);
    const SomMethod *gone = NULL,
                    *m = S.coop_marker ? atomic_load_explicit(&p->tick_method, memory_order_relaxed)
                                       : NULL;
    if (m && seen >= 0 && seen <= top && vm->frames[seen].method == m)
        top = seen;
    else if (m && seen >= 1 && seen - 1 <= top)
        top = seen - 1, gone = m;
    else if (where == SOM_SP_ENTRY && top > 0)
        top--;
    size_t at = p->nsamples;
    uint8_t state = (uint8_t)(v - 1);
    if (state != VMS_GC || !vm->heap.for_alloc || !p->gc_m ||
        !spc_gc_sample(p, state, missed, vm->state))
        spc_take_sample(p, top, state, missed, vm->state, gone);
    if (window && p->nsamples > at) { /* the marker's state stands in until the wait ends */
        uint64_t delay = atomic_load_explicit(&S.coop_delay_ticks, memory_order_relaxed);
        uint64_t instant = set + delay + 1 + spc_rand(&p->rng) % win;
        uint64_t now = spx_ticks();
        if (instant > now) {
            p->instant = instant;
            p->instant_at = at;
            p->instant_t0 = now;
            p->instant_cpu = spx_thread_cpu();
            p->wait_checks = 0;
            p->rate_t0 = now;
            p->skip = 0;
            p->redraws = 0;
            if (++p->calm >= 32) { /* no count missed in 32 waits: a margin half as wide */
                spc_margin_halve(p);
                p->calm = 0;
            }
            __atomic_store_n(&vm->poll, -1, __ATOMIC_RELEASE);
        } else { /* no state change since well before the instant: this one */
            p->samples[at].state = vm->state;
        }
    }
    if (S.o.jit_only) /* the JIT's sampling accounts for its own cost (--jit-stats) */
        atomic_fetch_add(&S.hook_cpu_ns, spx_thread_cpu() - cpu);
}

/* Rotor's tuning rule on the cooperative samples: too many repeated tops -> sample less, too
 * few -> more.  A change that would undo the previous one means the right interval lies
 * between the two: the tuner settles on the longer (cheaper) one and stops (Sieve went back
 * and forth between 0.25 and 0.5 ms 7 times in a 7 s run without this). */
static void spc_tune(uint64_t *last_s, uint64_t *last_r) {
    uint64_t s = atomic_load(&S.coop_samples), r = atomic_load(&S.coop_repeats);
    if (S.tune_settled || s - *last_s < 1000) return;
    double rate = (double)(r - *last_r) / (double)(s - *last_s);
    *last_s = s, *last_r = r;
    uint64_t iv = atomic_load(&S.interval_ns), nv = iv;
    /* a JIT-only session stays within 25-100 Hz (Jikes RVM's controller samples at its
     * 100 Hz thread switches): the controller needs few samples, and their cost - mostly the
     * marking thread's wake-ups, 40-70 us of CPU each on a loaded 2-core machine - is part of
     * the profiler's 1% budget (docs/design/jit.md, "The sampling that drives it") */
    uint64_t longest = S.o.jit_only ? 40000000ull : 100000000ull;
    uint64_t shortest = S.o.jit_only ? 10000000ull : 200000ull;
    if (rate > 0.15 && iv < longest)
        nv = iv * 2 < longest ? iv * 2 : longest;
    else if (rate < 0.01 && iv / 2 >= shortest)
        nv = iv / 2; /* at most 5 kHz */
    int dir = nv > iv ? 1 : nv < iv ? -1 : 0;
    if (dir && dir == -S.tune_dir) {
        S.tune_settled = true;
        if (dir < 0) return;
    }
    if (dir) {
        S.tune_dir = dir;
        atomic_store(&S.interval_ns, nv);
        atomic_fetch_add(&S.coop_changes, 1);
        if (S.prof)
            sp_event_add(S.prof, spx_now() - S.t0, SP_EVENT_RATE_CHANGE, (int64_t)iv, (int64_t)nv,
                         "coop tune");
    }
}

/* Flags one VM with the state it is in now, and with SOMPROF_COOP_CHARGE=marker notes the
 * activation on top (frame index and method).  The VM reads `poll` and writes `state`, `top` and
 * its frame records (an array allocated once) with plain (volatile) accesses, by design (vm.h,
 * frame.h): word-sized, individually atomic on the targets we support, and a stale value only
 * delays or mislabels one sample (spc_hook checks the noted activation against the stack).  So this
 * cross-thread access is hidden from TSan instead of reported on every run.
 * A flag still pending means no safe point since the last tick: the thread was in a GC or a
 * long primitive, or it was not running.  Only then is its CPU clock read (one system call),
 * and a tick counts as missed (the sample finally taken weighs one more, so long GC
 * stretches keep their share) for each full interval of CPU the thread used since its
 * latest sample: a descheduled thread misses nothing. */
__attribute__((no_sanitize("thread"))) static void spc_mark(VmProf *p, uint64_t iv) {
    SomVM *vm = p->vm;
    /* A flag can be set when none is pending: `poll` clear, or -1 with the instant the VM
     * thread waits for passed (spc_hook: in code without state changes the wait lasts until
     * a flag replaces the -1; the next safe point then ends it and takes this flag).  A tick
     * that comes while the instant is still ahead is skipped: a wait is ~45 us, so that is
     * ~5% of the ticks, at times that do not depend on what the VM thread is doing (ending
     * the wait early there put NBody's split 4.5 points off). */
    int cur = vm->poll, expected = cur > 0 ? 0 : cur;
    if (cur < 0 && spx_ticks() < __atomic_load_n(&p->instant, __ATOMIC_RELAXED) +
                                     atomic_load(&S.coop_skew_ticks))
        return;
    if (cur <= 0) /* only this thread sets a flag while none is pending */
        atomic_store_explicit(&p->tick_tsc, spx_ticks(), memory_order_relaxed);
    if (S.coop_marker && !cur) { /* only this thread sets the flag, the VM clears it */
        int32_t top = vm->top;
        atomic_store_explicit(&p->tick_top, top, memory_order_relaxed);
        atomic_store_explicit(&p->tick_method, top >= 0 ? vm->frames[top].method : NULL,
                              memory_order_relaxed);
    }
    for (int i = 0; i < 2; i++) { /* the VM may end its wait (-1 -> 0) in between */
        if (__atomic_compare_exchange_n(&vm->poll, &expected, 1 + (int)vm->state, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            return;
        if (expected > 0) break;
    }
    struct timespec c;
    if (clock_gettime(p->cpu_clock, &c)) return;
    uint64_t cpu = (uint64_t)c.tv_sec * 1000000000ull + (uint64_t)c.tv_nsec;
    uint64_t ref = __atomic_load_n(&p->cpu_ref, __ATOMIC_RELAXED);
    if (cpu >= ref + iv && __atomic_compare_exchange_n(&p->cpu_ref, &ref, ref + iv, false,
                                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        __atomic_fetch_add(&p->missed, 1, __ATOMIC_RELAXED);
}

/* The marking thread: wakes once per interval (+-20% jitter) on an absolute schedule, so
 * its own work and wake-up latency do not stretch the interval, and flags every live VM;
 * the VM samples itself at its next safe point.  Per tick: one clock_nanosleep and, per VM,
 * one compare-and-swap (plus a clock read only for a VM whose flag is still pending). */
static void *spc_marker(void *arg) {
    (void)arg;
    uint64_t rng = spx_now() | 1, last_s = 0, last_r = 0;
    uint64_t next = spx_now();
    uint64_t ns0 = next, tsc0 = spx_ticks(); /* the TSC's rate, for the in-thread window */
    while (!atomic_load(&S.stop)) {
        uint64_t iv = atomic_load(&S.interval_ns);
        next += iv - iv / 5 + spc_rand(&rng) % (iv / 5 * 2 + 1);
        struct timespec ts = {(time_t)(next / 1000000000ull), (long)(next % 1000000000ull)};
        while (sem_clockwait(&S.marker_wake, CLOCK_MONOTONIC, &ts) && errno == EINTR)
            ;
        if (atomic_load(&S.stop)) break;
        uint64_t now = spx_now();            /* vDSO: no system call */
        if (now > next + 4 * iv) next = now; /* overslept (stopped, overloaded): no burst */
        if (S.coop_win_ns && !atomic_load(&S.coop_win_ticks) && now - ns0 >= 20000000) {
            double rate = (double)(spx_ticks() - tsc0) / (double)(now - ns0);
            S.coop_tick_ns = 1.0 / rate; /* published by the release stores below */
            atomic_store(&S.coop_skew_ticks, (uint64_t)(rate * 2000.0));
            atomic_store(&S.coop_win_ticks, (uint64_t)(rate * (double)S.coop_win_ns) + 1);
            atomic_store(&S.coop_delay_ticks, (uint64_t)(rate * SPC_DELAY_NS));
            atomic_store(&S.coop_margin_ticks, (uint64_t)(rate * SPC_MARGIN_NS));
        }
        if (atomic_load(&S.paused)) continue;
        pthread_mutex_lock(&S.mu);
        for (int i = 0; i < S.nvms; i++)
            spc_mark(S.vms[i], iv);
        if (S.o.tune) spc_tune(&last_s, &last_r);
        pthread_mutex_unlock(&S.mu);
    }
    atomic_store(&S.marker_cpu_ns, spx_thread_cpu());
    return NULL;
}

/* Stops the marking thread at once (woken, not left to sleep out its interval: at the JIT's
 * 50 Hz that would add up to 24 ms to every run's end). */
static void spc_marker_stop(void) {
    atomic_store(&S.stop, 1);
    if (!S.marker_running) return;
    sem_post(&S.marker_wake);
    pthread_join(S.marker, NULL);
    sem_destroy(&S.marker_wake);
    S.marker_running = false;
}

/* ---- exact mode ------------------------------------------------------------------------ */

/* The send a primitive was called from: the frame's bci when it names a send (current
 * interpreter), else the last send before it (older interpreters recorded the position after
 * the send for primitives). */
static uint32_t spx_prim_site(const SomMethod *m, uint32_t bci) {
    uint32_t best = 0;
    for (uint32_t k = 0; k < m->nsites; k++) {
        if (m->sites[k].bci == bci) return bci;
        if (m->sites[k].bci < bci && m->sites[k].bci >= best) best = m->sites[k].bci;
    }
    return best;
}

/* Self time, event-based: each hook reads the clock at its start, and the time since the
 * previous event goes to the context that was current in between.  In exact mode a hook also
 * reads the clock at its end, so its own work (the context lookup in a hash table as large as
 * the tree, with its cache misses) is left out by measurement, not by a calibrated constant:
 * an interval then holds only the end of one clock read and the return from its hook, and the
 * call into the next hook and the start of its read.  Those are per-event constants,
 * calibrated at start and taken off at detach (spx_fold_calibration).  (A sampled run with
 * the exact time of its own execution keeps one read per hook: its samples see the hooks.) */
static void spx_desched(VmProf *p, uint64_t t, uint64_t *dt);

static inline void spx_charge(VmProf *p, uint32_t node, uint64_t t) {
    uint64_t dt = p->t_last ? t - p->t_last : 0;
    if (dt > S.long_ticks) spx_desched(p, t, &dt);
    if (node != SPC_NONE) p->tree.n[node].self_ns += dt;
    p->t_last = t;
}

/* The clock is wall time.  An interval longer than S.long_ticks (200 us) may hold a stretch
 * in which the thread was descheduled (a loaded machine): the thread's CPU clock (one system
 * call, only for such intervals) says how much wall time since the previous check was not
 * CPU time, and that much, at most the interval, is taken out of it. */
static void spx_desched(VmProf *p, uint64_t t, uint64_t *dt) {
    uint64_t cpu = spx_thread_cpu();
    double wall = (double)(t - p->ck_t) * spx_tick_ns;
    double off = wall - (double)(cpu - p->ck_cpu);
    if (off > 0) {
        uint64_t k = (uint64_t)(off / spx_tick_ns);
        if (k > *dt) k = *dt;
        *dt -= k;
        p->desched_ns += (uint64_t)((double)k * spx_tick_ns);
    }
    p->ck_t = t;
    p->ck_cpu = cpu;
}

/* The exact VM-state split (--prof-states) is timed from the transitions of vm->state:
 * som_set_state's hook (interpreting, compiled code, GC, compiling, native) and the
 * primitive hooks.  Each transition reads the fenced clock and then stores the state, so
 * the samples' view of the state changes right at the clock read: the hook's work before it
 * (the call, the fence) is the old state's in both views, the work after the store the new
 * state's.  (Storing first and reading after, as the primitive hooks did until stop 19, left
 * a window between store and read that the samples saw in the new state and the clock in
 * the old one; the fence's cost differs between transitions, so the windows of a pair did not
 * cancel: on DeltaBlue with the JIT, millions of interpreter <-> compiled code transitions,
 * the split was 14 points off.)  A second fence after the store makes it visible to the coop
 * marking thread at once.  The time since the previous transition goes to the state left.
 * So compiled code, which calls no method hooks, is timed as exactly as primitives are, and
 * a GC inside a primitive or in compiled code is GC.  Only the VM thread calls these. */
static void spx_state_to(VmProf *p, SomVM *vm, uint8_t s) {
    if (s == p->st_cur) {
        vm->state = s;
        return;
    }
    uint64_t t = spx_ticks_fenced(), dt = t - p->st_t;
    if (p->instant && t >= p->instant) { /* a coop tick's instant fell in the state left */
        spc_instant_end(vm, p, p->st_cur);
    }
    vm->state = s;
    atomic_thread_fence(memory_order_seq_cst);
    /* The clock is wall time, the samples count CPU time.  An interval longer than
     * S.long_ticks (200 us) may hold a stretch in which the thread was descheduled (a loaded
     * machine: ms at a time, so the stretches are few and large, and in proportion to the
     * states only on average): the thread's CPU clock (one system call, for such intervals
     * only) says how much wall time since the previous check was not CPU time, and that
     * much, at most the interval, is taken out of it. */
    if (dt > S.long_ticks) {
        uint64_t cpu = spx_thread_cpu();
        double off = (double)(t - p->st_ck_t) * spx_tick_ns - (double)(cpu - p->st_ck_cpu);
        if (off > 0) {
            uint64_t k = (uint64_t)(off / spx_tick_ns);
            dt -= k < dt ? k : dt;
        }
        p->st_ck_t = t;
        p->st_ck_cpu = cpu;
    }
    if (p->st_cur < VMS_COUNT) p->st_ticks[p->st_cur] += dt;
    p->st_cur = s;
    p->st_t = t;
}

static void spx_state_hook(SomVM *vm, uint8_t state) {
    VmProf *p = vm->prof_data;
    if (p)
        spx_state_to(p, vm, state);
    else
        vm->state = state;
}

/* Whether an event builds the exact tree: exact mode (not primitives when lean), or a sampled
 * run that also times its own execution exactly (the frames a sampler sees: no primitives). */
static inline bool spx_tree(bool is_prim) {
    if (S.o.mode == SOMPROF_EXACT) return !(is_prim && S.o.lean);
    return S.o.exact_time && !is_prim;
}

static void spx_push(VmProf *p, ExactFrame f) {
    if (p->sp == p->cap_stk) {
        uint32_t cap = p->cap_stk ? p->cap_stk * 2 : 1024;
        ExactFrame *s = realloc(p->stk, cap * sizeof *s);
        if (!s) abort(); /* the exact stack must mirror the activations */
        p->stk = s;
        p->cap_stk = cap;
    }
    p->stk[p->sp++] = f;
}

/* The hooks run where a sampler's view changes (vm.h): a method's enter after its frame is
 * published, its exit after the frame is popped.  A primitive's state window (exact states)
 * starts with the VM state store and then a fenced clock read, and ends the same way: an
 * unfenced read's value is taken somewhere within a long instruction (~25 ns here), at a
 * point that depends on the code before it, so a window of two plain reads differed from
 * what the samples saw by 4-10 points of the split (-4 with back-to-back reads at the
 * enter, +7..+10 without), and by < 1 point fenced (docs/evaluation.md, section 5). */
static void spx_enter(SomVM *vm, SomMethod *callee, bool is_prim) {
    bool tree = spx_tree(is_prim), states = is_prim && S.o.exact_states;
    VmProf *p = vm->prof_data;
    if (states) p->prim_from = vm->state; /* its end returns there */
    if (!tree) {
        if (states) spx_state_to(p, vm, VMS_PRIMITIVE);
        return;
    }
    /* no clock read unless the tree needs one (fewer reads, less distortion); in a sampled
     * run every read is fenced, so that it splits time where the samples' view changes */
    uint64_t t = !tree ? 0 : S.o.exact_time ? spx_ticks_fenced() : spx_ticks();
    int32_t top = vm->top;
    uint32_t node = SPC_NONE;
    if (tree) {
        uint32_t site =
            is_prim ? (top >= 0 ? spx_prim_site(vm->frames[top].method, vm->frames[top].bci) : 0)
                    : (top >= 1 ? vm->frames[top - 1].bci : 0);
        uint32_t parent = p->sp ? p->stk[p->sp - 1].node : SPC_ROOT;
        spx_charge(p, parent, t);
        int merged = 0;
        node = parent == SPC_NONE ? SPC_NONE : spc_enter(&p->tree, parent, callee, site, &merged);
        if (node != SPC_NONE) {
            SpcNode *x = &p->tree.n[node];
            x->active++;
            if (!atomic_load(&S.paused)) {
                if (merged)
                    x->merged++; /* the bound: the callee's time stays with its caller */
                else
                    x->count++;
                p->tree.n[parent].calls++;
            }
        }
    }
    spx_push(p, (ExactFrame){node, t});
    if (states) spx_state_to(p, vm, VMS_PRIMITIVE);
    if (tree && S.o.mode == SOMPROF_EXACT) p->t_last = spx_ticks(); /* the hook's end */
}

static void spx_exit(SomVM *vm, SomMethod *callee, bool is_prim) {
    VmProf *p = vm->prof_data;
    if (is_prim && S.o.exact_states) /* back to the caller's: interpreting or compiled code */
        spx_state_to(p, vm, p->prim_from == VMS_COMPILED ? VMS_COMPILED : VMS_INTERP);
    if (!spx_tree(is_prim)) return;
    uint64_t t1 = S.o.exact_time ? spx_ticks_fenced() : spx_ticks();
    (void)callee;
    if (!p->sp) return;
    ExactFrame *e = &p->stk[--p->sp];
    if (e->node == SPC_NONE) return;
    uint64_t dt = (uint64_t)((double)(t1 - e->t0) * spx_tick_ns);
    spx_charge(p, e->node, t1);
    /* a folded context open several times takes the inclusive time of its outermost
     * activation only (it holds the others) */
    if (--p->tree.n[e->node].active == 0) {
        p->tree.n[e->node].total_ns += dt;
        if (p->sp && p->stk[p->sp - 1].node != SPC_NONE)
            p->tree.n[p->stk[p->sp - 1].node].child_ns += dt;
    }
    if (S.o.mode == SOMPROF_EXACT) p->t_last = spx_ticks(); /* the hook's end */
}

/* Turns the self-time ticks into ns and takes off the events' own cost: an interval that
 * starts at an enter hook holds S.win_ns of hook work, one that starts at an exit hook
 * S.hook_ns, so a context loses win_ns per invocation and hook_ns per call it made (the
 * sums match for every context, whatever the order of its calls). */
static void spx_fold_calibration(SpcTree *t, double load) {
    uint64_t *kids = calloc(t->len, sizeof *kids);
    if (!kids) return;
    for (uint32_t i = 0; i < t->len; i++) /* folded calls return to no child: counted apart */
        kids[i] = t->n[i].calls;
    double raw = 0;
    for (uint32_t i = 0; i < t->len; i++)
        raw += (double)t->n[i].self_ns * spx_tick_ns;
    /* With the unprofiled run's time given (SOMPROF_EXACT_BASE_NS), the profile's total is
     * made to equal it: what the instrumentation costs beyond the stand-in's figures (the
     * program's own code running slower after each hook: caches and branch predictors) is
     * charged to the intervals that start at an enter hook, the callee's first stretch.
     * Measured against the sampled profiles (docs/evaluation.md, section 2), this put
     * DeltaBlue and Towers closer than charging both kinds of interval alike.  Otherwise the
     * stand-in's costs times the load factor. */
    double sw = load, sh = load, nc = 0, nk = 0;
    for (uint32_t i = 0; i < t->len; i++)
        nc += (double)(t->n[i].count + t->n[i].merged), nk += (double)kids[i];
    if (S.base_ns && nc > 0 && S.win_ns) {
        sh = 1;
        sw = (raw - (double)S.base_ns - (double)S.hook_ns * nk) / ((double)S.win_ns * nc);
        sw = sw < 0 ? 0 : sw > 50 ? 50 : sw;
    }
    S.cost_scale = sw;
    for (uint32_t i = 0; i < t->len; i++) {
        SpcNode *x = &t->n[i];
        uint64_t ns = (uint64_t)((double)x->self_ns * spx_tick_ns);
        uint64_t c = (uint64_t)(sw * (double)(S.win_ns * (x->count + x->merged)) +
                                sh * (double)(S.hook_ns * kids[i]));
        x->self_ns = ns > c ? ns - c : 0;
    }
    free(kids);
}

/* The tree's times come from a wall clock with the descheduled stretches that the thread's
 * CPU clock saw taken out (spx_desched); on a loaded machine stretches in intervals too short
 * to be checked remain, and the total came out above the thread's CPU time (2% with two test
 * suites running side by side, where the samples of the same run counted the CPU time).  As
 * the state split is, the tree is then scaled down to the CPU time. */
static void spx_fit_cpu(SpcTree *t, uint64_t cpu) {
    double sum = 0;
    for (uint32_t i = 0; i < t->len; i++)
        sum += (double)t->n[i].self_ns;
    if (!cpu || sum <= (double)cpu) return;
    double k = (double)cpu / sum;
    for (uint32_t i = 0; i < t->len; i++) {
        SpcNode *x = &t->n[i];
        x->self_ns = (uint64_t)((double)x->self_ns * k);
        x->total_ns = (uint64_t)((double)x->total_ns * k);
        x->child_ns = (uint64_t)((double)x->child_ns * k);
    }
}

/* Closes activations still open at detach (error exit) and computes the state split. */
static void spx_finish(VmProf *p) {
    while (p->sp)
        spx_exit(p->vm, NULL, false);
    uint64_t run = spx_now() - p->t_attach;
    /* The clock is wall time: on a loaded machine a thread is descheduled part of the time,
     * and on average every measured interval, the events' own included, stretches by
     * wall / CPU.  The calibrated (CPU) event costs are scaled by it before they are taken off. */
    uint64_t cpu = spx_thread_cpu() - p->cpu_attach;
    uint64_t seen = run > p->desched_ns ? run - p->desched_ns : 0; /* not yet taken out */
    double load = cpu && seen > cpu ? (double)seen / (double)cpu : 1.0;
    if (load > 20) load = 20;
    if (S.o.mode == SOMPROF_EXACT || S.o.exact_time) {
        spx_fold_calibration(&p->tree, load);
        spx_fit_cpu(&p->tree, cpu);
    }
    if (!S.o.exact_states && !(S.o.mode == SOMPROF_EXACT && !S.o.lean)) return;
    /* The state split is the one of this run, hooks included, as its samples see it: every
     * state's time is bounded by the state stores (spx_state_to), nothing is taken off.  The
     * clock is wall time with the descheduled stretches taken out (spx_state_to); what
     * remains (stretches under 200 us) is assumed to fall into the states in proportion,
     * and the split is scaled to the thread's CPU time, so that it adds up with other
     * threads' CPU time (the JIT compiler thread's). */
    uint8_t last = p->vm->state;
    spx_state_to(p, p->vm, VMS_COUNT); /* the last state's time */
    p->vm->state = last;
    double wall = 0;
    for (int s = 0; s < VMS_COUNT; s++)
        wall += (double)p->st_ticks[s] * spx_tick_ns;
    double scale = cpu && wall > (double)cpu ? (double)cpu / wall : 1.0;
    for (int s = 0; s < VMS_COUNT; s++)
        p->state_ns[s] = (uint64_t)((double)p->st_ticks[s] * spx_tick_ns * scale);
}

/* The cheap clock's ns per tick, against the monotonic clock over 5 ms. */
static void spx_clock_init(void) {
    uint64_t w0 = spx_now(), k0 = spx_ticks();
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
    uint64_t w1 = spx_now(), k1 = spx_ticks();
    spx_tick_ns = k1 > k0 ? (double)(w1 - w0) / (double)(k1 - k0) : 1.0;
}

/* Times the events on a stand-in VM, empty callees inside an outer activation: the callee's
 * intervals (enter -> exit) give S.win_ns, the outer one's (exit -> next enter) S.hook_ns. */
static void spx_hook_cost(void) {
    static SomVM fake;
    static SomFrame frames[2];
    static SomMethod m1, m2;
    VmProf p = {0};
    if (spc_init(&p.tree)) return;
    memset(&fake, 0, sizeof fake);
    frames[0].method = &m1;
    frames[1].method = &m2;
    fake.frames = frames;
    fake.top = 1;
    fake.prof_data = &p;
    double win = -1, hook = -1;
    spx_enter(&fake, &m1, false);
    uint32_t outer = p.stk[0].node;
    for (int round = 0; round < 7 && outer != SPC_NONE; round++) {
        uint32_t inner = spc_child(&p.tree, outer, &m2, 0);
        if (inner == SPC_NONE) break;
        uint64_t o0 = p.tree.n[outer].self_ns, c0 = p.tree.n[inner].self_ns;
        for (int i = 0; i < 2000; i++) {
            spx_enter(&fake, &m2, false);
            spx_exit(&fake, &m2, false);
        }
        double w = (double)(p.tree.n[inner].self_ns - c0) * spx_tick_ns / 2000;
        double h = (double)(p.tree.n[outer].self_ns - o0) * spx_tick_ns / 2000;
        if (win < 0 || w < win) win = w;
        if (hook < 0 || h < hook) hook = h;
    }
    spx_exit(&fake, &m1, false);
    spc_fini(&p.tree);
    free(p.stk);
    S.win_ns = win > 0 ? (uint64_t)(win + 0.5) : 0;
    S.hook_ns = hook > 0 ? (uint64_t)(hook + 0.5) : 0;
}

/* ---- System primitives ------------------------------------------------------------------ */

static int sp_control(SomVM *vm, const char *op, int64_t arg) {
    (void)vm;
    bool async = S.o.mode == SOMPROF_ASYNC;
    if (!strcmp(op, "start") || !strcmp(op, "resume")) {
        atomic_store(&S.paused, 0);
        return async ? (sampo_resume() ? -1 : 0) : 0;
    }
    if (!strcmp(op, "stop") || !strcmp(op, "pause")) {
        atomic_store(&S.paused, 1);
        return async ? (sampo_pause() ? -1 : 0) : 0;
    }
    if (!strcmp(op, "rate")) {
        if (arg < 1 || arg > 100000) return -1;
        if (async) return sampo_set_rate((uint32_t)arg) ? -1 : 0;
        atomic_store(&S.interval_ns, 1000000000ull / (uint64_t)arg);
        S.o.tune = false;
        return S.o.mode == SOMPROF_COOP ? 0 : -1;
    }
    if (!strcmp(op, "running")) return S.active && !atomic_load(&S.paused) ? 0 : -1;
    return -1;
}

/* ---- session ------------------------------------------------------------------------------ */

static int spr_label_cmp(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const InterpLabel *)a)->addr,
              y = (uintptr_t)((const InterpLabel *)b)->addr;
    return x < y ? -1 : x > y;
}

/* Names the interpreter's regions (bytecode handlers, send/activation paths) as code ranges,
 * so the PC histogram (`sampo hist`) shows where the interpreter spends its time (Cog's
 * VM_LABEL).  A region runs from its label to the next one; the last gets 256 bytes. */
static void spr_register_labels(void) {
    InterpLabel *l = S.labels;
    int n = S.nlabels = interp_labels(l, 256);
    qsort(l, (size_t)n, sizeof *l, spr_label_cmp);
    for (int i = 0; i < n; i++) {
        uintptr_t a = (uintptr_t)l[i].addr, next = i + 1 < n ? (uintptr_t)l[i + 1].addr : a + 256;
        if (!a || next <= a) continue;
        char name[96];
        snprintf(name, sizeof name, "%s%s", strncmp(l[i].name, "interp:", 7) ? "bc:" : "",
                 l[i].name);
        sampo_jit_register(a, next - a, name);
    }
}

static int spr_start_async(const SomProfOptions *o, char *err, size_t errlen) {
    SampoConfig c;
    sampo_config_default(&c);
    /* the VM's kernel time (the page faults of fresh allocations, Sieve's Array new:) lands
     * on the state and frame that spent it; som's own system calls restart (SA_RESTART).
     * SAMPO_COUNT_KERNEL=0 leaves it out. */
    c.count_kernel = 1;
    if (sampo_config_from_env(&c, err, errlen)) return -1;
    if (o->hz) c.hz = o->hz;
    c.tune = o->tune || !o->hz;
    c.feed_paused = o->feed_jit;
    c.max_depth = 255;
    c.perf_map = 0;
    c.out_path = S.lib_out; /* a private file, read back at finish: the user's path gets
                               one write, by sp_profile_write (FIFOs, devices, symlinks) */
    int rc = sampo_start(&c);
    if (rc) {
        snprintf(err, errlen, "cannot start the sampling profiler (status %d)", rc);
        return -1;
    }
    spr_register_labels();
    if (o->paused) sampo_pause();
    return 0;
}

/* Checks, before the program runs, that path+suffix (an output of option opt) can be
 * written without side effects: an existing file, FIFO or device must be writable and not
 * a directory; a new file needs a writable directory.  A relative path is made absolute
 * (the program may change directory); abs (4096 bytes, optional) receives path so.
 * Answers 0, or -1 with "OPT PATH: errno text" in err. */
static int spr_check_out(const char *opt, const char *path, const char *suffix, char *abs,
                         char *err, size_t errlen) {
    char full[4096], dir[4096];
    char cwd[4096] = "";
    if (path[0] != '/' && !getcwd(cwd, sizeof cwd)) {
        snprintf(err, errlen, "%s %s: cannot resolve a relative path: %s", opt, path,
                 strerror(errno));
        return -1;
    }
    int n = snprintf(full, sizeof full, "%s%s%s%s", cwd, *cwd ? "/" : "", path, suffix);
    if (!*path || n < 0 || (size_t)n >= sizeof full) {
        snprintf(err, errlen, "%s '%s': expected a file path", opt, path);
        return -1;
    }
    struct stat st;
    int e = 0;
    if (stat(full, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            e = EISDIR;
        else if (access(full, W_OK))
            e = errno;
    } else if (errno != ENOENT) {
        e = errno;
    } else {
        snprintf(dir, sizeof dir, "%s", full);
        char *slash = strrchr(dir, '/');
        if (slash == dir)
            slash[1] = 0;
        else
            *slash = 0;
        if (stat(dir, &st))
            e = errno;
        else if (!S_ISDIR(st.st_mode))
            e = ENOTDIR;
        else if (access(dir, W_OK | X_OK))
            e = errno;
    }
    if (e) {
        snprintf(err, errlen, "%s %s%s: %s", opt, path, suffix, strerror(e));
        return -1;
    }
    if (abs) snprintf(abs, 4096, "%s", full);
    return 0;
}

int somprof_session_start(const SomProfOptions *user, char *err, size_t errlen) {
    SomProfOptions jo;
    const SomProfOptions *o = user;
    if (user->jit_only) { /* cooperative: no signals, and a tree per VM (--threads) */
        /* a rate given is kept (SOM_JIT_HZ, 25-1000 Hz); by default 50 Hz, self-tuned
         * within 25-100 Hz (spc_tune) */
        jo = (SomProfOptions){.mode = SOMPROF_COOP, .jit_only = true, .tune = !user->hz};
        jo.hz = user->hz ? user->hz : 50;
        if (jo.hz < 25) jo.hz = 25;
        if (jo.hz > 1000) jo.hz = 1000;
        o = &jo;
    }
    if (S.active) {
        snprintf(err, errlen, "profiler already started");
        return -1;
    }
    if (o->exact_time && o->mode != SOMPROF_ASYNC) {
        snprintf(err, errlen, "--prof-exact-time: needs --prof=async (exact mode times itself)");
        return -1;
    }
    const char *charge = getenv("SOMPROF_COOP_CHARGE");
    if (charge && strcmp(charge, "stretch") && strcmp(charge, "marker")) {
        snprintf(err, errlen, "SOMPROF_COOP_CHARGE: expected stretch or marker, got '%s'", charge);
        return -1;
    }
    S.coop_marker = charge && !strcmp(charge, "marker");
    const char *win = getenv("SOMPROF_COOP_WINDOW_NS");
    char *wend = NULL;
    unsigned long long wv = win ? strtoull(win, &wend, 10) : SPC_WINDOW_NS;
    if (win && (!*win || *wend || wv > 1000000)) {
        snprintf(err, errlen, "SOMPROF_COOP_WINDOW_NS: expected 0 to 1000000 (ns), got '%s'", win);
        return -1;
    }
    /* the JIT reads no states: no waits for its ticks; without --prof-states the marking
     * thread's view unless the window is asked for */
    S.coop_win_ns = o->jit_only || (!win && !o->exact_states) ? 0 : wv;
    atomic_store(&S.coop_win_ticks, 0);
    S.o = *o;
    S.coop_check_ticks = S.coop_win_ns && o->mode == SOMPROF_COOP ? spc_check_cost() : 0;
    atomic_store(&S.coop_waits, 0);
    atomic_store(&S.coop_unresolved, 0);
    atomic_store(&S.coop_skipped, 0);
    atomic_store(&S.coop_redrawn, 0);
    atomic_store(&S.coop_check_total, 0);
    atomic_store(&S.compiler_ns, 0);
    pthread_mutex_lock(&S.jit_mu);
    S.jit_cpu_ns = 0;
    pthread_mutex_unlock(&S.jit_mu);
    atomic_store(&S.hook_cpu_ns, 0);
    atomic_store(&S.vm_cpu_ns, 0);
    atomic_store(&S.marker_cpu_ns, 0);
    atomic_store(&S.compiler_sampled, 0);
    atomic_store(&S.stop_sig, 0);
    S.out_tmp = !o->out;
    S.out[0] = S.dump[0] = 0;
    if (o->out && spr_check_out("--prof-out", o->out, "", S.out, err, errlen)) return -1;
    if (o->out && (o->mode == SOMPROF_EXACT || o->exact_time) &&
        spr_check_out("--prof-out", o->out, ".time", NULL, err, errlen))
        return -1;
    if (o->dump && spr_check_out("--prof-dump", o->dump, "", S.dump, err, errlen)) return -1;
    S.o.out = o->out ? S.out : NULL;
    S.o.dump = o->dump ? S.dump : NULL;
    S.t0 = spx_now();
    S.late_names = getenv("SOMPROF_LATE_NAMES") && !strcmp(getenv("SOMPROF_LATE_NAMES"), "1");
    const char *spread = getenv("SOMPROF_GC_SPREAD");
    S.gc_spread =
        (o->mode == SOMPROF_ASYNC || o->mode == SOMPROF_COOP) && !(spread && !strcmp(spread, "0"));
    S.gc_walks = S.gc_spread_n = S.gc_own = 0;
    bool timed = o->exact_states || o->exact_time || o->mode == SOMPROF_EXACT;
    if (timed) spx_clock_init();
    S.win_ns = S.hook_ns = 0;
    S.long_ticks = UINT64_MAX; /* the stand-in calibration never checks */
    const char *maxc = getenv("SOMPROF_MAX_CONTEXTS");
    S.max_contexts = maxc && strtoul(maxc, NULL, 10) >= 2 ? (uint32_t)strtoul(maxc, NULL, 10)
                                                          : SPC_MAX_NODES_DEFAULT;
    S.ctx_folded = S.ctx_merged = 0;
    const char *base = getenv("SOMPROF_EXACT_BASE_NS");
    S.base_ns = base ? strtoull(base, NULL, 10) : 0;
    S.cost_scale = 1;
    if (o->mode == SOMPROF_EXACT) spx_hook_cost();
    S.long_ticks = spx_tick_ns > 0 ? (uint64_t)(200000.0 / spx_tick_ns) : UINT64_MAX;
    atomic_store(&S.stop, 0);
    atomic_store(&S.paused, o->paused ? 1 : 0);
    const char *tmpdir = getenv("TMPDIR");
    snprintf(S.lib_out, sizeof S.lib_out, "%s/som-prof-%d.prof",
             tmpdir && *tmpdir == '/' ? tmpdir : "/tmp", (int)getpid());
    if (o->mode == SOMPROF_ASYNC) {
        if (spr_start_async(o, err, errlen)) return -1;
    } else {
        S.prof = sp_profile_new(o->mode == SOMPROF_EXACT ? SP_FLAVOUR_EXACT : SP_FLAVOUR_SAMPLED);
        if (!S.prof || spc_init(&S.merged)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    if (o->mode == SOMPROF_EXACT || o->exact_time) {
        S.tprof = sp_profile_new(SP_FLAVOUR_SAMPLED);
        if (!S.tprof) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    if (o->mode == SOMPROF_COOP) {
        S.o.tune = o->tune || !o->hz;
        atomic_store(&S.interval_ns, 1000000000ull / (o->hz ? o->hz : 1000));
        S.tune_dir = 0;
        S.tune_settled = false;
        if (sem_init(&S.marker_wake, 0, 0)) {
            snprintf(err, errlen, "cannot start the marking thread");
            return -1;
        }
        if (pthread_create(&S.marker, NULL, spc_marker, NULL)) {
            sem_destroy(&S.marker_wake);
            snprintf(err, errlen, "cannot start the marking thread");
            return -1;
        }
        S.marker_running = true;
    }
    S.active = true;
    return 0;
}

/* Collections charged to the allocations (spg_*): the slots and the VM's hook. */
static int spg_attach(VmProf *p) {
    if (!S.gc_spread) return 0;
    p->gc_m = calloc((size_t)2 * SPG_SLOTS * SPG_DEPTH, sizeof *p->gc_m);
    p->gc_p = calloc((size_t)2 * SPG_SLOTS * SPG_DEPTH, sizeof *p->gc_p);
    if (!p->gc_m || !p->gc_p) return -1;
    p->gc_rng = (p->rng * 0x9E3779B97F4A7C15ull) | 1;
    p->gc_hrng = (p->rng ^ 0xD1B54A32D192ED03ull) | 1;
    p->gc[0].cycle = p->gc[1].cycle = UINT64_MAX; /* the first sample starts a cycle */
    p->vm->heap.sample_left = SPG_MIN_BYTES;
    p->vm->alloc_hook = spg_alloc_hook;
    return 0;
}

static int spr_attach_mode(VmProf *p, int thread_no) {
    SomVM *vm = p->vm;
    if (S.o.mode == SOMPROF_ASYNC) {
        char name[32];
        snprintf(name, sizeof name, "som-%d", thread_no);
        if (sampo_thread_register(name) || sampo_vm_set_frame_callback(spa_frames, p) ||
            sampo_vm_set_state_ptr(&vm->state))
            return -1;
        vm->safepoint_hook = spa_hook;
        if (spg_attach(p)) return -1;
        if (!S.o.exact_time) return 0;
        if (spc_init(&p->tree)) return -1;
        p->tree.max_nodes = S.max_contexts;
        return 0;
    }
    if (spc_init(&p->tree)) return -1;
    p->tree.max_nodes = S.max_contexts;
    if (S.o.mode == SOMPROF_COOP) {
        p->frame_ctx = calloc(vm->max_frames, sizeof *p->frame_ctx);
        if (!p->frame_ctx || pthread_getcpuclockid(pthread_self(), &p->cpu_clock)) return -1;
        p->cpu_ref = spx_thread_cpu();
        if (spg_attach(p)) return -1;
        vm->safepoint_hook = spc_hook;
        pthread_mutex_lock(&S.mu);
        int full = S.nvms == SOMPROF_MAX_VMS;
        if (!full) S.vms[S.nvms++] = p;
        pthread_mutex_unlock(&S.mu);
        return full ? -1 : 0;
    }
    vm->no_trivial = !S.o.lean;
    vm->safepoint_hook = spx_stop_hook;
    return 0;
}

int somprof_attach(SomVM *vm, int thread_no) {
    if (!S.active) return -1;
    VmProf *p = calloc(1, sizeof *p);
    if (!p) return -1;
    p->vm = vm;
    p->no = thread_no;
    p->rng = (spx_ticks() ^ ((uint64_t)(uintptr_t)p << 17)) | 1;
    p->tid = (uint64_t)syscall(SYS_gettid);
    p->mark = 1;
    if (spn_init(&p->names, S.o.mode == SOMPROF_ASYNC && !S.late_names)) goto fail;
    vm->prof_data = p;
    vm->prof_control = S.o.jit_only ? NULL : sp_control; /* the JIT's samples are not the
                                                            program's to pause */
    if (spr_attach_mode(p, thread_no)) goto fail;
    pthread_mutex_lock(&S.mu);
    if (S.nall < SOMPROF_MAX_VMS) S.all[S.nall++] = vm;
    if (atomic_load(&S.stop_sig)) vm->poll = 1;
    pthread_mutex_unlock(&S.mu);
    p->t_attach = spx_now();
    p->cpu_attach = p->ck_cpu = spx_thread_cpu();
    p->ck_t = spx_ticks();
    p->st_cur = vm->state;
    p->st_t = p->st_ck_t = spx_ticks_fenced();
    p->st_ck_cpu = spx_thread_cpu();
    if (S.o.mode == SOMPROF_EXACT || S.o.exact_states || S.o.exact_time) {
        vm->on_enter = spx_enter;
        vm->on_exit = spx_exit;
        /* primitives are timed for the state split and counted by the full exact mode;
         * otherwise they cost what they cost unprofiled.  Only the full exact mode turns
         * the fast paths off (every primitive a context); for the state split a fast path
         * is interpreting, as it is unprofiled (with them off, Queens' array accesses made
         * it 40% primitive against 0.7% by perf, and its hooks most of the run) */
        vm->prim_hooks = S.o.exact_states || (S.o.mode == SOMPROF_EXACT && !S.o.lean);
        vm->prims_all = S.o.mode == SOMPROF_EXACT && !S.o.lean;
        /* the method hooks only where a tree is timed: they keep compiled code from being
         * entered (jitabi.h), and the state split needs only the transitions */
        vm->exact_hooks = S.o.mode == SOMPROF_EXACT || S.o.exact_time;
        if (S.o.exact_states || (S.o.mode == SOMPROF_EXACT && !S.o.lean))
            vm->state_hook = spx_state_hook;
    }
    return 0;
fail:
    vm->prof_data = NULL;
    vm->prof_control = NULL;
    vm->safepoint_hook = NULL;
    vm->alloc_hook = NULL;
    spn_fini(&p->names);
    free(p->gc_m);
    free(p->gc_p);
    free(p);
    return -1;
}

/* The time-weighted exact view (FILE.time) as a sampler sees the program: primitives and
 * trivial methods have no frame when not instrumented (primitives the interpreter runs with
 * frames, such as loops with blocks, keep theirs), so their time goes to the nearest
 * caller that has one.  Self times exclude the hooks' work (measured by the hooks, plus the
 * calibrated remainder folded in by spx_fold_calibration). */
static void spr_time_view(VmProf *p, const uint32_t *fid, uint32_t *stack, uint32_t tthr) {
    const SpcTree *t = &p->tree;
    uint64_t *self = calloc(t->len, sizeof *self);
    uint32_t *vis = calloc(t->len, sizeof *vis); /* nearest visible node at or above; 0 none */
    if (!self || !vis) goto out;
    for (uint32_t i = 1; i < t->len; i++) {
        const SpcNode *x = &t->n[i];
        const SomMethod *m = x->method;
        bool frameless = (m->kind == MK_PRIMITIVE && m->prim_kind == PK_PLAIN) || m->trivial;
        vis[i] = frameless ? vis[x->parent] : i;
        if (vis[i]) self[vis[i]] += spc_self_ns(x);
    }
    for (uint32_t i = 1; i < t->len; i++) {
        if (vis[i] != i || !self[i]) continue; /* ns: deep trees have many ~1 us contexts */
        uint32_t d = 0;
        for (uint32_t j = i; j != SPC_ROOT; j = t->n[j].parent)
            if (vis[j] == j) stack[d++] = fid[j];
        sp_sample_add(S.tprof, tthr, 0, stack, d, 0, self[i], SP_VM_INTERPRETING);
    }
out:
    free(self);
    free(vis);
}

/* Adds one VM's tree and samples to the session (S.mu held). */
static void spr_merge(VmProf *p) {
    SpcTree *t = &p->tree;
    uint32_t *m = calloc(t->len, sizeof *m), *fid = calloc(t->len, sizeof *fid);
    uint32_t *stack = malloc(sizeof *stack * (t->len + 1));
    char tname[32];
    snprintf(tname, sizeof tname, "som-%d", p->no);
    uint32_t thr = sp_thread_add(S.prof, (uint64_t)p->no, tname);
    uint32_t tthr = S.tprof ? sp_thread_add(S.tprof, (uint64_t)p->no, tname) : 0;
    if (!m || !fid || !stack || thr == SP_NONE || tthr == SP_NONE) goto out;
    for (uint32_t i = 1; i < t->len; i++) {
        const SpcNode *x = &t->n[i];
        const char *name = spn_name(&p->names, x->method);
        m[i] = spc_child(&S.merged, m[x->parent], name, x->callsite);
        if (m[i] == SPC_NONE) goto out;
        S.merged.n[m[i]].count += x->count;
        S.merged.n[m[i]].total_ns += x->total_ns;
        S.merged.n[m[i]].child_ns += x->child_ns;
        S.merged.n[m[i]].self_ns += x->self_ns;
        fid[i] = spn_frame(S.prof, name);
        if (S.tprof) spn_frame(S.tprof, name);
    }
    for (size_t k = 0; k < p->nsamples; k++) { /* cooperative samples */
        uint32_t d = spc_path(t, p->samples[k].ctx, stack, t->len);
        for (uint32_t j = 0; j < d; j++)
            stack[j] = fid[stack[j]];
        sp_sample_add(S.prof, thr, p->samples[k].t_ns, stack, d, 0, p->samples[k].weight,
                      (SpVmState)p->samples[k].state);
    }
    for (uint32_t i = 1; S.o.mode == SOMPROF_EXACT && i < t->len; i++) { /* exact contexts */
        const SpcNode *x = &t->n[i];
        uint32_t d = spc_path(t, i, stack, t->len);
        for (uint32_t j = 0; j < d; j++)
            stack[j] = fid[stack[j]];
        if (x->count) sp_sample_add(S.prof, thr, 0, stack, d, 0, x->count, SP_VM_INTERPRETING);
    }
    if (S.o.mode == SOMPROF_EXACT) spr_time_view(p, fid, stack, tthr);
out:
    free(m);
    free(fid);
    free(stack);
}

/* Async run with exact_time: adds the VM's exact tree as the time view of its own
 * execution (S.mu held). */
static void spr_merge_time(VmProf *p) {
    SpcTree *t = &p->tree;
    uint32_t *fid = calloc(t->len, sizeof *fid);
    uint32_t *stack = malloc(sizeof *stack * (t->len + 1));
    char tname[32];
    snprintf(tname, sizeof tname, "som-%d", p->no);
    uint32_t tthr = sp_thread_add(S.tprof, (uint64_t)p->no, tname);
    if (!fid || !stack || tthr == SP_NONE) goto out;
    for (uint32_t i = 1; i < t->len; i++)
        fid[i] = spn_frame(S.tprof, spn_name(&p->names, t->n[i].method));
    spr_time_view(p, fid, stack, tthr);
out:
    free(fid);
    free(stack);
}

/* Remembers the VM's method names for the fix-up at finish (S.mu held). */
static void spr_keep_names(VmProf *p) {
    const SpnTable *t = atomic_load(&p->names.cur);
    for (uint32_t i = 0; t && i <= t->mask; i++) {
        if (!t->e[i].method) continue;
        if (S.nknown == S.capknown) {
            size_t cap = S.capknown ? S.capknown * 2 : 1024;
            SprKnown *k = realloc(S.known, cap * sizeof *k);
            if (!k) return;
            S.known = k;
            S.capknown = cap;
        }
        S.known[S.nknown++] = (SprKnown){(uintptr_t)t->e[i].method, t->e[i].name};
    }
}

void somprof_detach(SomVM *vm) {
    VmProf *p = vm->prof_data;
    if (!p) return;
    if (S.o.mode == SOMPROF_ASYNC) {
        sampo_vm_set_frame_callback(NULL, NULL);
        sampo_vm_set_state_ptr(NULL);
        /* the VM's teardown (heap freeing) is no part of the SOM program: unsampled, since
         * its native stack has an unnamed root whose address differs from run to run */
        sampo_thread_unregister();
        spa_name_pending(p);
    }
    if (p->instant) spc_instant_end(vm, p, vm->state); /* a tick still waiting */
    if (S.o.mode == SOMPROF_EXACT || S.o.exact_states || S.o.exact_time) spx_finish(p);
    vm->exact_hooks = false;
    vm->prim_hooks = false;
    vm->prims_all = false;
    vm->state_hook = NULL;
    vm->safepoint_hook = NULL;
    vm->prof_control = NULL;
    vm->alloc_hook = NULL;
    pthread_mutex_lock(&S.mu);
    S.gc_walks += p->gc_walks;
    S.gc_spread_n += p->gc_spread;
    S.gc_own += p->gc_own;
    for (int i = 0; i < S.nvms; i++)
        if (S.vms[i] == p) S.vms[i] = S.vms[--S.nvms];
    for (int i = 0; i < S.nall; i++)
        if (S.all[i] == vm) S.all[i] = S.all[--S.nall];
    S.ctx_folded += p->tree.folded;
    S.ctx_merged += p->tree.merged;
    atomic_fetch_add(&S.coop_check_total, p->check_ticks);
    atomic_fetch_add(&S.coop_waits, p->waits);
    atomic_fetch_add(&S.coop_skipped, p->skipped);
    atomic_fetch_add(&S.coop_redrawn, p->redrawn);
    atomic_fetch_add(&S.coop_unresolved, p->unresolved);
    atomic_fetch_add(&S.vm_cpu_ns, spx_thread_cpu() - p->cpu_attach);
    if (S.o.jit_only) {
        /* the controller's samples only: nothing to merge */
    } else if (S.o.mode != SOMPROF_ASYNC) {
        spr_merge(p);
    } else {
        spr_keep_names(p);
        if (S.o.exact_time) spr_merge_time(p);
    }
    if (S.o.exact_states || (S.o.mode == SOMPROF_EXACT && !S.o.lean)) {
        for (int s = 0; s < VMS_COUNT; s++)
            S.exact_state_ns[s] += p->state_ns[s];
        S.have_exact_states = true;
    }
    pthread_mutex_unlock(&S.mu);
    vm->prof_data = NULL;
    spn_fini(&p->names);
    spc_fini(&p->tree);
    free(p->frame_ctx);
    free(p->scr_m);
    free(p->scr_p);
    free(p->scr_c);
    free(p->scr_f);
    free(p->samples);
    free(p->stk);
    free(p->gc_m);
    free(p->gc_p);
    free(p);
}

/* ---- finish ----------------------------------------------------------------------------- */

static const char *const spr_state_names[VMS_COUNT] = {
    "none", "interpreting", "primitive", "native", "gc", "compiling", "idle", "compiled"};

static void spr_print_states(FILE *f, const char *what, const uint64_t *w, uint64_t total) {
    fprintf(f, "somprof: %s states:", what);
    for (int s = 1; s < VMS_COUNT; s++)
        fprintf(f, " %s=%.2f%%", spr_state_names[s],
                total ? 100.0 * (double)w[s] / (double)total : 0);
    fprintf(f, "\n");
}

/* The compiler thread's exact time: async samples label all of its CPU compiling, so its
 * CPU clock while it was sampled (its start-up and the job in hand at the end included: the
 * jobs' own times missed up to a whole large compilation at the end of a short run, 2-11
 * points of DeltaBlue's split); else the jobs' compile times. */
static uint64_t spr_compiler_ns(void) {
    pthread_mutex_lock(&S.jit_mu);
    uint64_t cpu = S.jit_cpu_ns;
    pthread_mutex_unlock(&S.jit_mu);
    return S.o.mode == SOMPROF_ASYNC && cpu ? cpu : atomic_load(&S.compiler_ns);
}

/* The compiler thread's share: its samples (async: the thread named "som-jit") and its own
 * CPU clock.  In async mode both are in the splits too, as "compiling"; coop samples only
 * the VM threads, so there it is printed apart only. */
static void spr_compiler_states(SpProfile *p) {
    uint64_t ns = spr_compiler_ns();
    if (!ns && !atomic_load(&S.compiler_sampled)) return;
    uint64_t n = 0, total = 0;
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const SpSample *s = &p->samples[i];
        total += s->weight;
        if (s->thread < p->nthreads && !strcmp(sp_str(p, p->threads[s->thread].name), "som-jit"))
            n += s->weight;
    }
    fprintf(stderr, "somprof: JIT compiler thread: compiling %.1f ms exact (its CPU clock)",
            (double)ns / 1e6);
    if (S.o.mode == SOMPROF_ASYNC)
        fprintf(stderr, ", %llu samples sampled (%.2f%% of all)", (unsigned long long)n,
                total ? 100.0 * (double)n / (double)total : 0);
    fprintf(stderr, "\n");
    sp_meta_setu(p, "jit_compiler_thread_ns", ns);
}

static void spr_states(SpProfile *p) {
    uint64_t w[(int)VMS_COUNT > (int)SP_VM_STATE_COUNT ? (int)VMS_COUNT : (int)SP_VM_STATE_COUNT] =
        {0};
    if (S.o.mode != SOMPROF_EXACT) {
        uint64_t total = spo_state_weights(p, w);
        spr_print_states(stderr, "sampled", w, total);
    }
    spr_compiler_states(p);
    if (!S.have_exact_states) return;
    /* the compiler thread is sampled in async mode only: coop's samples and so its split are
     * the VM threads' (its exact time is printed apart above) */
    if (S.o.mode == SOMPROF_ASYNC) S.exact_state_ns[VMS_COMPILE] += spr_compiler_ns();
    uint64_t total = 0;
    for (int s = 0; s < VMS_COUNT; s++)
        total += S.exact_state_ns[s];
    spr_print_states(stderr, "exact", S.exact_state_ns, total);
    for (int s = 1; s < VMS_COUNT; s++) {
        char key[64];
        snprintf(key, sizeof key, "exact_state_%s_ns", spr_state_names[s]);
        sp_meta_setu(p, key, S.exact_state_ns[s]);
    }
}

/* How the contexts were bounded (docs/profile-format.md, metadata): recursive calls folded
 * into the context the same call opened, calls merged into their caller at the bound. */
static void spr_tree_meta(SpProfile *p) {
    sp_meta_setu(p, "contexts_folded", S.ctx_folded);
    sp_meta_setu(p, "contexts_merged", S.ctx_merged);
    sp_meta_setu(p, "contexts_max", S.max_contexts);
}

static void spr_meta(SpProfile *p) {
    static const char *const modes[] = {"off", "async", "coop", "exact"};
    sp_meta_set(p, "engine", "somprof");
    sp_meta_set(p, "som_profiler_mode", modes[S.o.mode]);
    sp_meta_setu(p, "duration_ns", spx_now() - S.t0);
    if (S.o.mode == SOMPROF_COOP) {
        sp_meta_set(p, "trigger", "coop-safepoint");
        sp_meta_set(p, "tune", S.o.tune ? "on" : "off");
        sp_meta_set(p, "coop_charge", S.coop_marker ? "marker" : "stretch");
        sp_meta_setu(p, "hz_requested", S.o.hz);
        sp_meta_setu(p, "interval_ns", atomic_load(&S.interval_ns));
        sp_meta_setu(p, "samples", atomic_load(&S.coop_samples));
        sp_meta_setu(p, "repeated_tops", atomic_load(&S.coop_repeats));
        sp_meta_setu(p, "rate_changes", atomic_load(&S.coop_changes));
        if (S.coop_win_ns) { /* the ticks' own instants (spc_instant_check) */
            sp_meta_setu(p, "state_waits", atomic_load(&S.coop_waits));
            sp_meta_setu(p, "state_waits_unresolved", atomic_load(&S.coop_unresolved));
            sp_meta_setu(p, "state_checks_skipped", atomic_load(&S.coop_skipped));
            sp_meta_setu(p, "state_instants_redrawn", atomic_load(&S.coop_redrawn));
            sp_meta_setu(p, "state_check_ns",
                         (uint64_t)((double)atomic_load(&S.coop_check_total) * S.coop_tick_ns));
        }
    }
    if (S.o.mode == SOMPROF_ASYNC || S.o.mode == SOMPROF_COOP) {
        sp_meta_set(p, "gc_attribution", S.gc_spread ? "allocations" : "trigger");
        if (S.gc_spread) {
            sp_meta_setu(p, "gc_alloc_samples", S.gc_walks);
            sp_meta_setu(p, "gc_samples_spread", S.gc_spread_n);
            sp_meta_setu(p, "gc_samples_own", S.gc_own);
        }
    }
    if (S.o.mode == SOMPROF_EXACT) sp_meta_set(p, "unit", "invocations");
    if (S.o.mode != SOMPROF_ASYNC) spr_tree_meta(p);
}

/* Adds the interpreter regions as symbols of the profile, for `sampo hist` (the engine
 * symbolizes native frames only, and VM samples carry none). */
static void spr_label_symbols(SpProfile *p) {
    for (int i = 0; i < S.nlabels; i++) {
        uintptr_t a = (uintptr_t)S.labels[i].addr;
        uintptr_t next = i + 1 < S.nlabels ? (uintptr_t)S.labels[i + 1].addr : a + 256;
        if (!a || next <= a) continue;
        char name[96];
        snprintf(name, sizeof name, "%s%s", strncmp(S.labels[i].name, "interp:", 7) ? "bc:" : "",
                 S.labels[i].name);
        sp_symbol_add(p, a, next - a, name, sp_mapping_find(p, a));
    }
    for (size_t i = 0; i < S.ncodes; i++)
        sp_symbol_add(p, S.codes[i].start, S.codes[i].size, S.codes[i].name,
                      sp_mapping_find(p, S.codes[i].start));
}

static int spr_known_cmp(const void *a, const void *b) {
    uintptr_t x = ((const SprKnown *)a)->method, y = ((const SprKnown *)b)->method;
    return x < y ? -1 : x > y;
}

static void spr_remap_frame(SpProfile *p, uint32_t from, uint32_t to) {
    for (uint32_t i = 0; i < p->nstack; i++)
        if (p->stack_ids[i] == from) p->stack_ids[i] = to;
    for (uint32_t i = 0; i < p->cc.nmethods; i++)
        if (p->cc.methods[i].frame == from) p->cc.methods[i].frame = to;
    for (uint32_t i = 0; i < p->cc.nedges; i++) {
        if (p->cc.edges[i].caller == from) p->cc.edges[i].caller = to;
        if (p->cc.edges[i].callee == from) p->cc.edges[i].callee = to;
    }
    for (uint32_t i = 0; i < p->cc.nnodes; i++)
        if (p->cc.nodes[i].frame == from) p->cc.nodes[i].frame = to;
}

/* The VM method frame named name among the first n, or SP_NONE: the one the engine made
 * once the method had its name (and its file and line). */
static uint32_t spr_named_frame(const SpProfile *p, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (p->frames[i].kind == SP_FRAME_VM_METHOD && !strcmp(sp_str(p, p->frames[i].name), name))
            return i;
    return SP_NONE;
}

/* Frames the engine named "method@0x..." because their sample reached the manager before
 * the VM thread named the method: give them their names (see vm-profiling.md). */
static void spr_fix_names(SpProfile *p) {
    if (!S.nknown) return;
    qsort(S.known, S.nknown, sizeof *S.known, spr_known_cmp);
    uint32_t n = p->nframes;
    for (uint32_t i = 0; i < n; i++) {
        const char *nm = sp_str(p, p->frames[i].name);
        if (p->frames[i].kind != SP_FRAME_VM_METHOD || strncmp(nm, "method@0x", 9)) continue;
        SprKnown key = {(uintptr_t)strtoull(nm + 9, NULL, 16), NULL};
        const SprKnown *k = bsearch(&key, S.known, S.nknown, sizeof key, spr_known_cmp);
        if (!k) continue;
        uint32_t j = spr_named_frame(p, n, k->name);
        if (j == SP_NONE) j = spn_frame(p, k->name);
        if (j != SP_NONE && j != i) spr_remap_frame(p, i, j);
    }
}

static void spj_cpu_at_stop(void);

/* Builds or reads back the session's profile into *out (owned). */
static int spr_collect(SpProfile **out, char *err, size_t errlen) {
    if (S.o.mode == SOMPROF_ASYNC) {
        if (sampo_stop()) {
            snprintf(err, errlen, "stopping the sampling profiler failed");
            return -1;
        }
        spj_cpu_at_stop();
        return sp_profile_read(S.lib_out, out, err, errlen);
    }
    spc_marker_stop();
    if (spo_ccmap_from_tree(S.prof, &S.merged, S.o.mode == SOMPROF_EXACT)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *out = S.prof;
    S.prof = NULL;
    return 0;
}

static int spr_write_time(SpProfile *p, char *err, size_t errlen) {
    char path[4200];
    snprintf(path, sizeof path, "%s.time", S.out);
    sp_meta_set(S.tprof, "engine", "somprof");
    sp_meta_set(S.tprof, "som_profiler_mode",
                S.o.exact_time ? "exact-time-same-run" : "exact-time");
    sp_meta_set(S.tprof, "unit", "nanoseconds of self time");
    sp_meta_set(S.tprof, "view",
                S.o.exact_time ? "the sampled run's own execution, hooks included, as its samples "
                                 "see it: primitives and trivial methods folded into their caller"
                               : "primitives and trivial methods folded into their caller");
    spr_tree_meta(S.tprof);
    sp_meta_setu(S.tprof, "event_ns_subtracted_per_invocation", S.win_ns);
    sp_meta_setu(S.tprof, "event_ns_subtracted_per_call_made", S.hook_ns);
    char sc[32];
    snprintf(sc, sizeof sc, "%.3f", S.cost_scale);
    sp_meta_set(S.tprof, "event_cost_scale", sc);
    if (S.base_ns) sp_meta_setu(S.tprof, "unprofiled_run_ns", S.base_ns);
    (void)p;
    return sp_profile_write(S.tprof, path, err, errlen);
}

int somprof_session_finish(char *err, size_t errlen) {
    if (!S.active) return 0;
    if (S.o.jit_only) { /* nothing to write */
        spc_marker_stop();
        sp_profile_free(S.prof);
        S.prof = NULL;
        spc_fini(&S.merged);
        S.active = false;
        return 0;
    }
    SpProfile *p = NULL;
    int rc = spr_collect(&p, err, errlen);
    if (rc) goto out;
    spr_meta(p);
    if (S.o.mode == SOMPROF_ASYNC) {
        spr_fix_names(p);
        spr_label_symbols(p);
    }
    if (S.o.exact_states || S.o.report) spr_states(p);
    if (!S.out_tmp && (rc = sp_profile_write(p, S.out, err, errlen))) goto out;
    if (!S.out_tmp && S.tprof && (rc = spr_write_time(p, err, errlen))) goto out;
    if (S.o.dump && (rc = spo_write_dump(p, S.o.dump, err, errlen))) goto out;
    if (S.o.report) spo_print_report(p, stderr);
out:
    if (S.o.mode == SOMPROF_ASYNC) unlink(S.lib_out);
    sp_profile_free(p);
    sp_profile_free(S.prof);
    sp_profile_free(S.tprof);
    S.prof = S.tprof = NULL;
    spc_fini(&S.merged);
    free(S.known);
    S.known = NULL;
    S.nknown = S.capknown = 0;
    for (size_t i = 0; i < S.ncodes; i++)
        free(S.codes[i].name);
    free(S.codes);
    S.codes = NULL;
    S.ncodes = S.capcodes = 0;
    S.active = false;
    return rc;
}

/* ---- for the C API (capi.c) ------------------------------------------------------------- */

SomProfMode spr_session_mode(void) {
    return S.active ? S.o.mode : SOMPROF_OFF;
}

const SpcTree *spr_vm_tree(SomVM *vm) {
    VmProf *p = vm->prof_data;
    return p && (S.o.mode != SOMPROF_ASYNC) ? &p->tree : NULL;
}

uint64_t spr_vm_tid(SomVM *vm) {
    VmProf *p = vm->prof_data;
    return p ? p->tid : 0;
}

const char *spr_vm_name(SomVM *vm, const SomMethod *m) {
    VmProf *p = vm->prof_data;
    return p ? spn_name(&p->names, m) : NULL;
}

bool spr_vm_knows(SomVM *vm, const void *id) {
    VmProf *p = vm->prof_data;
    return p && spn_has(&p->names, id);
}

/* ---- compiled code ---------------------------------------------------------------------- */

/* Whether the environment asks for perf's files: then JIT code is registered even when no
 * profile is being taken (libsampo writes the perf map, and the jitdump with SAMPO_JITDUMP=1). */
static bool spr_env_on(const char *name) {
    const char *v = getenv(name);
    return v && !strcmp(v, "1");
}

void somprof_jit_register(SomVM *vm, const struct SomJitCode *code) {
    (void)vm;
    if (!code || !code->code_size || !code->method) return;
    bool user = S.active && !S.o.jit_only;
    if (!user && !spr_env_on("SAMPO_PERF_MAP") && !spr_env_on("SAMPO_JITDUMP")) return;
    char name[320];
    spn_format(code->method, name, 256);
    size_t n = strlen(name);
    snprintf(name + n, sizeof name - n, " [jit t%u v%u]", code->tier, code->version);
    sampo_jit_register((uint64_t)code->code_start, code->code_size, name);
    if (!user || S.o.mode != SOMPROF_ASYNC) return;
    /* the engine names sampled PCs in JIT code only in native frames (and VM samples carry
     * none): the range becomes a symbol of the profile at finish, for `sampo hist` */
    pthread_mutex_lock(&S.mu);
    if (S.ncodes == S.capcodes) {
        size_t cap = S.capcodes ? S.capcodes * 2 : 64;
        SprCode *c = realloc(S.codes, cap * sizeof *c);
        if (c) S.codes = c, S.capcodes = cap;
    }
    char *copy = S.ncodes < S.capcodes ? strdup(name) : NULL;
    if (copy) S.codes[S.ncodes++] = (SprCode){code->code_start, code->code_size, copy};
    pthread_mutex_unlock(&S.mu);
}

/* ---- the JIT's compiler thread ---------------------------------------------------------- */

/* The compiler thread's frame callback (in its signal handler): one frame naming the method
 * being compiled, or none between jobs (the native stack then). */
static int spj_frames(void *ctx, SampoFrameInfo *out, int max) {
    (void)ctx;
    uint64_t id = atomic_load_explicit(&S.compiling, memory_order_acquire);
    if (!id || max < 1) return 0;
    out[0] = (SampoFrameInfo){id, 0, 0, 0};
    return 1;
}

void somprof_compiler_job(const SomMethod *m) {
    if (!atomic_load(&S.compiler_sampled)) return;
    if (!m) {
        atomic_store_explicit(&S.compiling, 0, memory_order_release);
        return;
    }
    /* an id no method has: methods are aligned, the id is odd (the compiler thread has a
     * CC-Map of its own, which the JIT's queries never read: they ask for the VM's thread) */
    uint64_t id = (uint64_t)(uintptr_t)m + 1;
    char name[320];
    spn_format(m, name, 256);
    size_t n = strlen(name);
    snprintf(name + n, sizeof name - n, " [jit compile]");
    sampo_vm_name_method(id, name); /* before a sample can see the id */
    atomic_store_explicit(&S.compiling, id, memory_order_release);
}

void somprof_compiler_thread(bool start) {
    if (!S.active || S.o.jit_only || S.o.mode != SOMPROF_ASYNC) return;
    if (start) {
        if (sampo_thread_register("som-jit")) return;
        sampo_vm_set_state(SAMPO_VM_COMPILING);
        sampo_vm_set_frame_callback(spj_frames, NULL);
        pthread_mutex_lock(&S.jit_mu);
        S.jit_live = !pthread_getcpuclockid(pthread_self(), &S.jit_clock);
        S.jit_cpu0 = spx_thread_cpu();
        pthread_mutex_unlock(&S.jit_mu);
        atomic_store(&S.compiler_sampled, 1);
    } else {
        pthread_mutex_lock(&S.jit_mu);
        if (S.jit_live) S.jit_cpu_ns += spx_thread_cpu() - S.jit_cpu0;
        S.jit_live = false;
        pthread_mutex_unlock(&S.jit_mu);
        sampo_thread_unregister();
    }
}

/* The compiler thread's CPU time while sampled, read when the sampling has stopped (under
 * jit_mu: the thread cannot exit meanwhile, its unregistration takes the lock first). */
static void spj_cpu_at_stop(void) {
    pthread_mutex_lock(&S.jit_mu);
    struct timespec ts;
    if (S.jit_live && !clock_gettime(S.jit_clock, &ts)) {
        uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
        S.jit_cpu_ns += now > S.jit_cpu0 ? now - S.jit_cpu0 : 0;
    }
    S.jit_live = false; /* no samples after this: its unregistration adds nothing */
    pthread_mutex_unlock(&S.jit_mu);
}

void somprof_compiler_ns(uint64_t ns) {
    if (S.active && !S.o.jit_only) atomic_fetch_add(&S.compiler_ns, ns);
}

/* ---- the JIT-only session's own cost ------------------------------------------------------ */

int somprof_jit_sampling_cost(SomProfCost *out) {
    memset(out, 0, sizeof *out);
    if (!S.active || !S.o.jit_only) return -1;
    out->samples = atomic_load(&S.coop_samples);
    out->hz = (uint32_t)(1000000000ull / atomic_load(&S.interval_ns));
    out->hook_ns = atomic_load(&S.hook_cpu_ns);
    out->vm_ns = atomic_load(&S.vm_cpu_ns);
    out->marker_ns = atomic_load(&S.marker_cpu_ns);
    if (S.marker_running && !out->marker_ns) { /* still running: its clock now */
        clockid_t c;
        struct timespec ts;
        if (!pthread_getcpuclockid(S.marker, &c) && !clock_gettime(c, &ts))
            out->marker_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    }
    return 0;
}
