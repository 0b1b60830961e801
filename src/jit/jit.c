/* SPDX-License-Identifier: MIT */
/*
 * jit.c - the controller of the optimizing tier (jit.h): the adaptive optimization system.
 *
 * Flow (docs/design/jit.md, "The controller"):
 *   VM thread, at the VM's jit_hook (a safe point): counters and loop counts name a method;
 *     the rule (controller_rule.c) weighs its sampled time (somprof's CC-Map) against the
 *     estimated compile time; a winner is built (jit_build must run on the VM thread: it
 *     reads inline caches and feedback) and its JitFunc queued.
 *   compiler thread (controller_queue.c): jit_optimize + jit_codegen, then the job goes back
 *     to its VM's `done` list and vm->jit_tick is set.
 *   VM thread, at its next hook: installs (m->jit = code) - installation only ever happens
 *     on the VM's own thread, so the interpreter never sees a method's code change under it
 *     except at its own safe points.
 *   The controller's clock (every tick_ms, on the compiler thread) sets jit_tick too: at the
 *     next hook the VM refreshes its view of the samples and evaluates the hottest methods.
 *
 * Methods are considered only once a counter or loop hook of this VM named them (the table
 * below): the CC-Map of an async session is process-wide, and another VM's methods must not
 * be built here.
 *
 * Threads: everything runs on the VM's thread except jv_job_done and jv_clock (compiler
 * thread), which touch only `mu`-guarded `done`, and the flags `tick_due` and vm->jit_tick.
 *
 * Readings of the frozen headers (the simplest for the other side):
 *  - SomJitCode.owner belongs to the backend; the controller never uses it.  It stamps
 *    `version` and `tier` (2) only if codegen left them 0 (a JitFunc carries no version).
 *  - Nothing frees a SomJitCode (compile.h has no call for it): every code, installed or
 *    not, stays in a process-wide list until exit, so frames running an invalidated version
 *    keep valid code and leak checkers see it reachable.
 *  - Deopts are counted here per version (the hook's calls), not read from code->deopts.
 *  - jit_hook's `m` may be NULL for SOM_JIT_TICK; primitives are never compiled.
 *  - Invalidation writes code->invalid through the hook's const pointer: the object is the
 *    backend's mutable allocation.
 */
#include "jit.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "class.h"
#include "controller.h"
#include "feedback.h"
#include "somprof.h"

typedef enum JitMState {
    JMS_NONE = 0, /* a candidate */
    JMS_QUEUED,   /* being built or compiled */
    JMS_INSTALLED,
    JMS_NEVER, /* failed too often, or too many versions */
} JitMState;

typedef struct JitMInfo {
    SomMethod *m;
    SomJitCode *code; /* installed now, or NULL */
    uint8_t state;    /* JitMState */
    uint32_t version; /* latest version built or being built (0: none) */
    uint32_t failures;
    uint32_t known_size;  /* bytes compiled by the latest build (root + inlined) */
    uint32_t measured;    /* bytes its first build would compile (jv_measure), 0 unknown */
    uint64_t deopts;      /* of the installed version */
    uint64_t loop_iters;  /* back edges, counted by the loop hook */
    uint64_t eligible_at; /* invocations + loop_iters from which it is considered again */
    uint64_t samples, total_samples;
    uint64_t edge_samples;     /* through hot edges to inlinable callees (JitCandidate) */
    uint64_t refresh_cnt;      /* invocations + loop_iters at the previous refresh */
    uint32_t edge_serial;      /* the refresh that summed edge_samples */
    uint32_t eval_serial;      /* the refresh that last looked at it */
    JitFbMethod fbm;           /* sampled feedback: the deopt-loop state */
    JitFbTable *fbt;           /* the installed version's sampled feedback, or NULL */
    uint64_t fb_phase_ns;      /* a quick sampled version is installed and its full-level
                                * successor queued: when the phase that caused it began */
    struct JitFbOverride *ovr; /* kinds the sampled versions compile sites for (until a
                                * deopt loop throws them away) */
    uint32_t novr;
    uint32_t vshift;   /* versions spent on quick versions (JitRuleParams.quick_first): the
                        * rule's version limits (traps, most versions, back-off) count the
                        * other versions only */
    uint64_t quick_ns; /* such a quick version is installed and its full-level successor
                        * queued: when the quick one was installed */
} JitMInfo;

typedef struct JitFbOverride {
    SomMethod *m;
    uint32_t site;
    bool send;      /* a send's receiver classes, else an arithmetic site's kinds */
    uint32_t kinds; /* arithmetic: the kinds to compile for */
    uint32_t ncls;  /* send: the receiver classes to guard (0: none, the inline cache rules) */
    SomClass *cls[JIT_FB_MAX_CLASSES];
    uint64_t hits[JIT_FB_MAX_CLASSES];
} JitFbOverride;

#define JV_FAIL_KINDS 16
#define JV_EDGES 256
#define JV_HOT 256

typedef struct JitVm {
    SomVM *vm;
    JitOptions o;
    JitRuleParams p;
    JitCalib calib;
    JitMInfo *tab; /* open addressing on the method pointer */
    uint32_t mask, count;
    pthread_mutex_t mu;
    JitJob *done; /* compiled, waiting for installation (mu) */
    atomic_int has_done;
    atomic_int tick_due;
    uint64_t cpu0;            /* the VM thread's CPU time at attach: sample_ns */
    uint32_t skip, skip_left; /* clock ticks to let pass between refreshes (their cost) */
    uint32_t serial;          /* refreshes so far */
    bool trace;               /* SOM_JIT_TRACE: each decision and installation on stderr */
    bool trace_inline;        /* SOM_JIT_TRACE_INLINE: the builder's inlining decisions */
    uint32_t inline_max;      /* the builder's max_inline_size (JitBuildOpts defaults) */
    double sample_ns;
    /* the profile handed to the builder (valid during one jit_build) */
    SomProfEdge edges[JV_EDGES];
    size_t nedges;
    JitProfile prof;
    /* statistics */
    JitStats st;
    uint64_t *ctimes, *lat;
    size_t nct, capct;
    struct {
        char reason[96];
        uint64_t n;
    } fails[JV_FAIL_KINDS];
    int nfails;
    /* sampled type feedback (feedback.h) */
    JitFbParams fb;
    JitFbTable **tables; /* every table made (freed at detach) */
    size_t ntables, captables;
    JitFbTable *ready; /* ready tables waiting for the next hook */
    bool fb_due;
    uint64_t *fblat, *fbdet; /* per sampled recompilation: phase -> installed, -> ready */
    size_t nfbl, capfbl;
    uint64_t *fbfull; /* per quick one: phase -> full level installed */
    size_t nfbf, capfbf;
    uint64_t *qgap; /* per quick first version: installed -> its full-level one installed */
    size_t nqg, capqg;
} JitVm;

static const char *const jdr_names[JDR_COUNT] = {
    "class", "type", "overflow", "bounds", "boolean", "global", "divzero", "unsupported", "stress",
};

const char *jit_deopt_reason_name(uint32_t r) {
    return r < JDR_COUNT ? jdr_names[r] : "?";
}

bool jit_parse_mode(const char *s, JitMode *out) {
    if (!strcmp(s, "off"))
        *out = JIT_OFF;
    else if (!strcmp(s, "on"))
        *out = JIT_ON;
    else if (!strcmp(s, "eager"))
        *out = JIT_EAGER;
    else
        return false;
    return true;
}

/* ---- every code installed in the process (code lives until exit) ---------------------- */

static pthread_mutex_t codes_mu = PTHREAD_MUTEX_INITIALIZER;
static SomJitCode **codes;
static size_t ncodes, capcodes;

static void jv_keep_code(SomJitCode *c) {
    pthread_mutex_lock(&codes_mu);
    if (ncodes == capcodes) {
        size_t cap = capcodes ? capcodes * 2 : 64;
        SomJitCode **g = realloc(codes, cap * sizeof *g);
        if (g) codes = g, capcodes = cap;
    }
    if (ncodes < capcodes) codes[ncodes++] = c;
    pthread_mutex_unlock(&codes_mu);
}

/* ---- the method table ------------------------------------------------------------------ */

static uint32_t jv_hash(const SomMethod *m) {
    uint64_t x = (uint64_t)(uintptr_t)m;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(x >> 32);
}

static int jv_grow(JitVm *jv) {
    uint32_t cap = jv->tab ? (jv->mask + 1) * 2 : 256;
    JitMInfo *t = calloc(cap, sizeof *t);
    if (!t) return -1;
    for (uint32_t i = 0; jv->tab && i <= jv->mask; i++) {
        if (!jv->tab[i].m) continue;
        uint32_t h = jv_hash(jv->tab[i].m) & (cap - 1);
        while (t[h].m)
            h = (h + 1) & (cap - 1);
        t[h] = jv->tab[i];
    }
    free(jv->tab);
    jv->tab = t;
    jv->mask = cap - 1;
    return 0;
}

static JitMInfo *jv_find(JitVm *jv, const SomMethod *m) {
    if (!jv->tab) return NULL;
    for (uint32_t h = jv_hash(m) & jv->mask;; h = (h + 1) & jv->mask) {
        if (jv->tab[h].m == m) return &jv->tab[h];
        if (!jv->tab[h].m) return NULL;
    }
}

/* The entry of m, made if absent; NULL on ENOMEM. */
static JitMInfo *jv_info(JitVm *jv, SomMethod *m) {
    JitMInfo *x = jv_find(jv, m);
    if (x) return x;
    if ((!jv->tab || (jv->count + 1) * 2 > jv->mask + 1) && jv_grow(jv)) return NULL;
    uint32_t h = jv_hash(m) & jv->mask;
    while (jv->tab[h].m)
        h = (h + 1) & jv->mask;
    jv->tab[h] = (JitMInfo){.m = m};
    jv->count++;
    return &jv->tab[h];
}

/* ---- statistics ------------------------------------------------------------------------ */

static void jv_fail(JitVm *jv, const char *reason) {
    jv->st.failed++;
    /* the reason's kind: up to the first ':' or '(' (messages may name the method) */
    char kind[96];
    snprintf(kind, sizeof kind, "%.95s", reason && *reason ? reason : "unknown");
    kind[strcspn(kind, ":(")] = 0;
    for (int i = 0; i < jv->nfails; i++)
        if (!strcmp(jv->fails[i].reason, kind)) {
            jv->fails[i].n++;
            return;
        }
    int i = jv->nfails < JV_FAIL_KINDS ? jv->nfails++ : JV_FAIL_KINDS - 1;
    if (i == JV_FAIL_KINDS - 1 && jv->nfails == JV_FAIL_KINDS && jv->fails[i].n)
        snprintf(kind, sizeof kind, "other");
    snprintf(jv->fails[i].reason, sizeof jv->fails[i].reason, "%s", kind);
    jv->fails[i].n++;
}

/* Appends (x, y) to the two parallel arrays *a and *b (b may be NULL: x alone) of *n entries
 * (room for *cap); false when out of memory (nothing appended). */
static bool jv_push2(uint64_t **a, uint64_t **b, size_t *n, size_t *cap, uint64_t x, uint64_t y) {
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        uint64_t *na = realloc(*a, c * sizeof *na);
        if (na) *a = na;
        uint64_t *nb = b ? realloc(*b, c * sizeof *nb) : NULL;
        if (nb) *b = nb;
        if (!na || (b && !nb)) return false;
        *cap = c;
    }
    (*a)[*n] = x;
    if (b) (*b)[*n] = y;
    (*n)++;
    return true;
}

static void jv_time(JitVm *jv, uint64_t compile_ns, uint64_t latency_ns) {
    if (jv_push2(&jv->ctimes, &jv->lat, &jv->nct, &jv->capct, compile_ns, latency_ns))
        jv->st.compile_ns_total += compile_ns;
}

static int u64_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile (nearest rank) of n values, sorted in place. */
static uint64_t jv_quantile(uint64_t *v, size_t n, double q) {
    if (!n) return 0;
    qsort(v, n, sizeof *v, u64_cmp);
    size_t k = (size_t)(q * (double)n + 0.999999);
    return v[k ? k - 1 : 0];
}

/* ---- the profile for the builder ------------------------------------------------------- */

static uint64_t jv_edge_weight(void *arg, SomMethod *caller, uint32_t bci, SomMethod *callee) {
    JitVm *jv = arg;
    for (size_t i = 0; i < jv->nedges; i++)
        if (jv->edges[i].caller == caller && jv->edges[i].bci == bci &&
            jv->edges[i].callee == callee)
            return jv->edges[i].count;
    return 0;
}

static const JitProfile *jv_profile(JitVm *jv, JitMInfo *x) {
    jv->nedges = somprof_total_samples(jv->vm) ? somprof_hot_edges(jv->vm, jv->edges, JV_EDGES) : 0;
    if (!jv->nedges) return NULL;
    jv->prof = (JitProfile){jv, jv_edge_weight, x->total_samples};
    return &jv->prof;
}

/* Bytes compiled: the root's bytecode and each inlined activation's (a (method, parent)
 * pair of the position table is one activation). */
static uint32_t jv_compiled_bytes(const JitFunc *f) {
    uint64_t sum = f->method ? f->method->code_len : 0;
    uint32_t n = f->npos < 4096 ? f->npos : 4096;
    for (uint32_t i = 0; i < n; i++) {
        const JitPos *a = &f->pos[i];
        if (a->parent == JIT_POS_NONE || !a->method) continue;
        bool first = true;
        for (uint32_t k = 0; k < i && first; k++)
            first = !(f->pos[k].method == a->method && f->pos[k].parent == a->parent);
        if (first) sum += a->method->code_len;
    }
    return sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
}

/* ---- sampled type feedback (feedback.h) ------------------------------------------------ */

/* The kinds the next version compiles (m, site) for: the ready slots' observations when they
 * are narrower than the interpreter's feedback (builder callback, VM thread). */
/* The builder callbacks' argument: the overrides of the method being built. */
typedef struct JitFbBuild {
    SomVM *vm;
    const JitMInfo *x;
} JitFbBuild;

static uint32_t jv_fb_kinds(void *arg, SomMethod *m, uint32_t site, uint32_t argkinds) {
    const JitMInfo *x = ((const JitFbBuild *)arg)->x;
    for (uint32_t i = 0; i < x->novr; i++)
        if (x->ovr[i].m == m && x->ovr[i].site == site && !x->ovr[i].send) return x->ovr[i].kinds;
    return argkinds;
}

/* The inline cache of a send as the next version sees it: the sampled receiver classes with
 * their methods, hits as sampled (builder callback, VM thread). */
static bool jv_fb_send(void *arg, SomMethod *m, uint32_t site, const CallSite *cs, CallSite *view) {
    const JitFbBuild *fbb = arg;
    const JitMInfo *x = fbb->x;
    for (uint32_t i = 0; i < x->novr; i++) {
        const JitFbOverride *o = &x->ovr[i];
        if (o->m != m || o->site != site || !o->send || !o->ncls) continue;
        *view = *cs;
        view->megamorphic = 0;
        memset(view->ic, 0, sizeof view->ic);
        uint32_t n = 0;
        for (uint32_t k = 0; k < o->ncls && n < SOM_IC_SIZE; k++) {
            SomMethod *t = som_lookup(fbb->vm, o->cls[k], cs->selector);
            if (!t) return false; /* not understood: leave the site to the runtime */
            view->ic[n].cls = o->cls[k];
            view->ic[n].method = t;
            view->ic[n++].hits = o->hits[k] ? o->hits[k] : 1;
        }
        return n > 0;
    }
    return false;
}

/* x's override for a ready, narrower send slot: its classes (a union with an earlier one of
 * the same site, if it still fits the guards). */
/* x's override of site `site` of m (of a send or an arithmetic site), made empty if absent;
 * NULL when out of memory. */
static JitFbOverride *jv_fb_ovr(JitMInfo *x, SomMethod *m, uint32_t site, bool send) {
    for (uint32_t k = 0; k < x->novr; k++)
        if (x->ovr[k].m == m && x->ovr[k].site == site && x->ovr[k].send == send) return &x->ovr[k];
    JitFbOverride *o = realloc(x->ovr, (x->novr + 1) * sizeof *o);
    if (!o) return NULL;
    x->ovr = o;
    x->ovr[x->novr] = (JitFbOverride){.m = m, .site = site, .send = send};
    return &x->ovr[x->novr++];
}

static void jv_fb_merge_send(JitMInfo *x, const JitFbSlot *sl) {
    JitFbOverride *o = jv_fb_ovr(x, sl->s.method, sl->s.site, true);
    if (!o) return;
    for (uint32_t i = 0; i < sl->ncls; i++) {
        uint32_t j = 0;
        while (j < o->ncls && o->cls[j] != sl->cls[i])
            j++;
        if (j == o->ncls) {
            if (o->ncls == JIT_FB_MAX_CLASSES || o->ncls >= sl->s.max_poly) {
                o->ncls = 0; /* no longer fits: the site goes back to its inline cache */
                return;
            }
            o->cls[o->ncls] = sl->cls[i];
            o->hits[o->ncls++] = 0;
        }
        o->hits[j] += sl->cls_n[i];
    }
}

/* Adds the ready, narrower slots of t to x's overrides (the sites a sampled version compiles
 * for their sampled kinds; earlier sampled versions' sites keep theirs). */
static void jv_fb_merge(JitMInfo *x, const JitFbTable *t) {
    for (uint32_t i = 0; i < t->nslots; i++) {
        const JitFbSlot *sl = &t->slots[i];
        uint32_t site = sl->s.site;
        if (sl->s.op == JIT_FB_SEND) {
            if (sl->n >= t->t1 && jit_fb_slot_narrower(sl)) jv_fb_merge_send(x, sl);
            continue;
        }
        uint32_t argkinds = sl->s.method->sites[site].argkinds;
        if (sl->n < t->t1 || !jit_fb_narrower(sl->s.op, argkinds, sl->bits)) continue;
        JitFbOverride *o = jv_fb_ovr(x, sl->s.method, site, false);
        if (!o) return;
        /* two inlined copies of one site: the union of what each saw */
        o->kinds |= sl->bits | (argkinds & TF_OVERFLOWED);
    }
}

/* A table became ready (VM thread, inside compiled code: nothing may be built here). */
static void jv_fb_on_ready(JitFbTable *t) {
    JitVm *jv = t->owner;
    t->next_ready = jv->ready;
    jv->ready = t;
    jv->fb_due = true;
    jv->vm->jit_tick = 1;
}

/* The table for a new build of x with slots (or NULL: none, or no memory). */
static JitFbTable *jv_fb_table(JitVm *jv, JitMInfo *x, JitFunc *f, uint32_t version) {
    if (!f || !f->nfb_sites) return NULL;
    if (jv->ntables == jv->captables) {
        size_t cap = jv->captables ? jv->captables * 2 : 16;
        JitFbTable **a = realloc(jv->tables, cap * sizeof *a);
        if (!a) return NULL;
        jv->tables = a;
        jv->captables = cap;
    }
    JitFbTable *t = calloc(1, sizeof *t);
    JitFbSlot *sl = t ? calloc(f->nfb_sites, sizeof *sl) : NULL;
    if (!sl) {
        free(t);
        return NULL;
    }
    for (uint32_t i = 0; i < f->nfb_sites; i++)
        sl[i].s = f->fb_sites[i];
    *t = (JitFbTable){.vm = jv->vm,
                      .method = x->m,
                      .version = version,
                      .t1 = jit_fb_t1(&jv->fb, &x->fbm),
                      .nslots = f->nfb_sites,
                      .slots = sl,
                      .p = &jv->fb,
                      .on_ready = jv_fb_on_ready,
                      .owner = jv};
    jv->tables[jv->ntables++] = t;
    jv->st.fb_tables++;
    jv->st.fb_slots += f->nfb_sites;
    return t;
}

static void jv_compile(JitVm *jv, JitMInfo *x, bool sync, double priority, JitFbTable *from,
                       uint8_t stage);

/* Recompiles the methods whose tables became ready (VM thread, at a hook). */
static void jv_fb_recompile(JitVm *jv) {
    jv->fb_due = false;
    JitFbTable *t = jv->ready;
    jv->ready = NULL;
    uint64_t now = jitq_now_ns();
    for (JitFbTable *next; t; t = next) {
        next = t->next_ready;
        t->next_ready = NULL;
        JitMInfo *x = jv_find(jv, t->method);
        if (t->done || !x || x->fbt != t || x->state != JMS_INSTALLED) {
            t->done = true;
            continue;
        }
        /* quick first: on the compiler thread, and with a version left for the full one */
        bool quick = jv->p.quick_recompile > 0 && !jv->o.sync &&
                     jit_rule_version_ok(&jv->p, x->version - x->vshift + 3, NULL);
        /* one version is kept for the generic code a deopt loop falls back to */
        bool versions_left = jit_rule_version_ok(&jv->p, x->version - x->vshift + 2, NULL);
        if (!versions_left || !jit_fb_may_recompile(&jv->fb, &x->fbm, now)) {
            if (!versions_left) {
                t->done = true;
                continue;
            }
            t->ready = false; /* cooling down: gather afresh, ready again later */
            for (uint32_t i = 0; i < t->nslots; i++)
                t->slots[i].n = t->slots[i].bits = 0;
            continue;
        }
        if (jv->trace) {
            char name[160];
            class_method_name(t->method, name, sizeof name);
            fprintf(stderr,
                    "jit-trace: sampled feedback %s v%u ready (%u slots, %" PRIu64
                    " observations, T1 %u): recompile\n",
                    name, t->version, t->nslots, t->observations, t->t1);
        }
        jv_compile(jv, x, jv->o.sync, quick ? 2e9 : 1e9, t, quick ? JFS_QUICK : JFS_NONE);
    }
}

/* ---- compiling -------------------------------------------------------------------------- */

/* Sets the VM's jit_tick from the compiler thread.  The VM reads and clears it with plain
 * (volatile) accesses by design (vm.h): a word-sized flag whose late or lost store only delays
 * an installation to the next tick; so this store is hidden from TSan, as somprof's marks are. */
__attribute__((no_sanitize("thread"))) static void jv_flag(SomVM *vm) {
    __atomic_store_n(&vm->jit_tick, 1, __ATOMIC_RELEASE);
}

static void jv_job_done(JitJob *j) { /* compiler thread */
    JitVm *jv = j->owner;
    pthread_mutex_lock(&jv->mu);
    j->next = jv->done;
    jv->done = j;
    pthread_mutex_unlock(&jv->mu);
    atomic_store(&jv->has_done, 1);
    jv_flag(jv->vm);
}

static void jv_install_one(JitVm *jv, JitJob *j) {
    JitMInfo *x = jv_find(jv, j->method);
    uint64_t cnt = j->method->invocations + (x ? x->loop_iters : 0);
    for (int ph = 0; ph < JIT_PH_COUNT; ph++)
        jv->st.phase_ns[ph] += j->phase_ns[ph];
    if (j->code) jv_keep_code(j->code);
    if (!x || x->state != JMS_QUEUED || x->version != j->version) {
        free(j);
        return;
    }
    if (!j->code) {
        x->fb_phase_ns = x->quick_ns = 0;
        jv_fail(jv, j->err);
        x->version--;
        x->failures++;
        x->state = x->failures >= jv->p.max_failures ? JMS_NEVER : JMS_NONE;
        if (x->code) x->state = JMS_INSTALLED; /* a sampled recompilation: the old code stays */
        x->eligible_at = cnt + jit_rule_backoff(&jv->p, x->failures + 1);
        free(j);
        return;
    }
    /* the program's cost of the compilation: its build on the VM thread, and a share of
     * the compiler thread's time (JitRuleParams.bg_share) */
    uint64_t ns = j->build_ns + (uint64_t)((double)j->compile_ns * jv->p.bg_share);
    if (j->fb_stage != JFS_QUICK) /* the model is the full level's */
        jit_calib_update(&jv->calib, &jv->p, ns, j->root_bytes, j->total_bytes);
    jv_time(jv, ns, j->t_done - j->t_queued);
    if (jv->trace) {
        char name[160];
        class_method_name(j->method, name, sizeof name);
        fprintf(stderr,
                "jit-trace: installed %s v%u: %u bytes compiled, build %.2f ms, compile %.2f "
                "ms (lower %.2f, passes %.2f, machine code %.2f, link %.2f; level %d), latency "
                "%.2f ms\n",
                name, j->version, j->total_bytes, j->build_ns / 1e6, j->compile_ns / 1e6,
                j->phase_ns[JIT_PH_LOWER] / 1e6, j->phase_ns[JIT_PH_PASSES] / 1e6,
                j->phase_ns[JIT_PH_MACHINE] / 1e6, j->phase_ns[JIT_PH_LINK] / 1e6, j->cg.opt_level,
                (j->t_done - j->t_queued) / 1e6);
    }
    if (x->fbt) x->fbt->done = true;
    x->fbt = j->fb;
    if (j->fb_from) { /* built from sampled feedback */
        uint64_t now = jitq_now_ns();
        x->fbm.sampled++;
        x->fbm.sampled_version = j->version;
        jv->st.fb_recompiled++;
        jv_push2(&jv->fblat, &jv->fbdet, &jv->nfbl, &jv->capfbl, now - j->fb_from->phase_ns,
                 j->fb_from->ready_ns - j->fb_from->phase_ns);
        if (j->fb_stage == JFS_QUICK) x->fb_phase_ns = j->fb_from->phase_ns;
    } else if (j->fb_stage == JFS_QUICK) { /* a quick version (quick_first) */
        x->quick_ns = jitq_now_ns();
        x->vshift++;
        jv->st.quick_first++;
    } else if (j->fb_stage == JFS_FULL && x->quick_ns) { /* its full-level successor */
        jv_push2(&jv->qgap, NULL, &jv->nqg, &jv->capqg, jitq_now_ns() - x->quick_ns, 0);
        x->quick_ns = 0;
    } else if (j->fb_stage == JFS_FULL) {    /* the full-level successor of a quick version */
        x->fbm.sampled_version = j->version; /* deopts after it count as after a recompile */
        if (x->fb_phase_ns)
            jv_push2(&jv->fbfull, NULL, &jv->nfbf, &jv->capfbf, jitq_now_ns() - x->fb_phase_ns, 0);
        x->fb_phase_ns = 0;
    }
    x->code = j->code;
    x->deopts = 0;
    x->known_size = j->total_bytes;
    x->state = JMS_INSTALLED;
    j->method->jit = j->code;
    jv->st.compiled++;
    jv->st.code_bytes += j->code->code_size;
    jv->st.inlined += j->inlined;
    if (j->version > jv->st.versions_max) jv->st.versions_max = j->version;
    somprof_jit_register(jv->vm, j->code);
    bool full_next = j->fb_stage == JFS_QUICK;
    double full_priority = j->full_priority;
    free(j);
    /* the quick version runs; the full-level one is built from the same feedback (merged
     * into x's overrides) and replaces it when done */
    if (full_next) jv_compile(jv, x, false, full_priority, NULL, JFS_FULL);
}

/* Installs what the compiler thread finished (VM thread). */
static void jv_install(JitVm *jv) {
    if (!atomic_exchange(&jv->has_done, 0)) return;
    pthread_mutex_lock(&jv->mu);
    JitJob *j = jv->done;
    jv->done = NULL;
    pthread_mutex_unlock(&jv->mu);
    while (j) {
        JitJob *next = j->next;
        jv_install_one(jv, j);
        j = next;
    }
}

/* IR sizes (instructions as built, before jit_optimize) above which a function gets the
 * light pipeline (llvm.c: about half default<O2>'s compile time, loops ~10% slower; a large
 * function is mostly straight-line code of inlined calls), no LLVM IR passes at all (only
 * instruction selection: LLVM's passes are superlinear on a huge loop body, ~20 s for
 * tests/som/inlining/long_jumps.som), and above which it is not compiled. */
#define JIT_LARGE_INSTS 800u
#define JIT_BIG_INSTS 2500u
#define JIT_GIANT_INSTS 16000u

/* The builder's options for version `version` of x->m, as the rule's parameters set them. */
static void jv_build_opts(const JitVm *jv, const JitBackend *b, const JitMInfo *x, uint32_t version,
                          JitBuildOpts *bo) {
    b->build_defaults(bo);
    bo->version = version;
    if (jv->p.small_recursive >= 0) bo->small_recursive = (uint32_t)jv->p.small_recursive;
    if (jv->p.tiny_inline >= 0) bo->tiny_size = (uint32_t)jv->p.tiny_inline;
    bo->sampled_band = jv->p.inline_band >= 0.5;
    bo->inline_plan = jv->p.inline_plan >= 0.5;
    if (jv->p.inline_hits >= 0) bo->inline_hits = (uint64_t)jv->p.inline_hits;
    if (jv->p.small_calls >= 0) bo->small_calls = (uint32_t)jv->p.small_calls;
    bo->trace = jv->trace_inline;
    jit_rule_version_ok(&jv->p, version - x->vshift, &bo->unreached_traps);
}

/* x's IR with the options bo, the profile and x's sampled feedback (VM thread). */
static JitFunc *jv_build_ir(JitVm *jv, const JitBackend *b, JitMInfo *x, JitBuildOpts *bo,
                            char *err, size_t errlen) {
    bo->profile = jv_profile(jv, x);
    JitFbBuild fbb = {jv->vm, x};
    if (x->novr) {
        bo->fb_kinds = jv_fb_kinds;
        bo->fb_send = jv_fb_send;
        bo->fb_arg = &fbb;
    }
    return b->build(jv->vm, x->m, bo, err, errlen);
}

/* The bytes x's next version would compile (root and inlined), from its IR built now and
 * thrown away (VM thread; counted as compiling): the rule's cost of a method never built
 * before is otherwise its bytecode times the mean expansion of all compilations, which a few
 * drivers that inline 40x their bytes dominate - Havlak's SomDictionary>>transferEntries:
 * (144 bytes, nothing inlined, 2 + 20 ms to compile) was charged 30-110 ms and compiled after
 * 60 calls in some runs, 4000-7000 (250 ms interpreted) in others.  The measurement only
 * lowers the estimate (jv_size): charged its measured 2494 bytes (160 ms), Havlak's findLoops
 * was compiled after 38 calls instead of 17 and the run took 11% longer - the rule's
 * future (as long again as the past) understates what a driver called from the benchmark's
 * loop still has to run. */
static void jv_measure(JitVm *jv, JitMInfo *x) {
    SomVM *vm = jv->vm;
    const JitBackend *b = jit_backend();
    if (jitq_engine_failed()) return;
    JitBuildOpts bo;
    jv_build_opts(jv, b, x, x->version + 1, &bo);
    bo.trace = false;
    uint8_t state = vm->state;
    som_set_state(vm, VMS_COMPILE);
    uint64_t t0 = jitq_now_ns();
    char err[256] = "";
    JitFunc *f = jv_build_ir(jv, b, x, &bo, err, sizeof err);
    x->measured = f ? jv_compiled_bytes(f) : x->m->code_len;
    if (f) b->free_func(f);
    uint64_t t1 = jitq_now_ns();
    vm->compile_ns += t1 - t0;
    som_set_state(vm, state);
    jv->st.measured++;
    if (jv->trace) {
        char name[160];
        class_method_name(x->m, name, sizeof name);
        fprintf(stderr, "jit-trace: measure %s v%u: %u bytes, build %.2f ms\n", name,
                x->version + 1, x->measured, (t1 - t0) / 1e6);
    }
}

/* The compiled size the rule charges for x (0: bytecode times the mean expansion): its latest
 * build's, or the measured one where that is the smaller. */
static uint32_t jv_size(const JitVm *jv, const JitMInfo *x) {
    if (x->known_size || !x->measured) return x->known_size;
    double guess = (double)x->m->code_len * jv->calib.expansion;
    return (double)x->measured < guess ? x->measured : 0;
}

/* Builds version x->version + 1 of x->m and compiles it, in the background or (sync) now. */
static void jv_compile(JitVm *jv, JitMInfo *x, bool sync, double priority, JitFbTable *from,
                       uint8_t stage) {
    SomVM *vm = jv->vm;
    const JitBackend *b = jit_backend();
    if (jitq_engine_failed()) return; /* no backend (said once): the VM stays interpreted */
    uint32_t version = x->version + 1;
    JitBuildOpts bo;
    jv_build_opts(jv, b, x, version, &bo);
    JitJob *j = calloc(1, sizeof *j);
    if (!j) return;
    uint8_t state = vm->state;
    som_set_state(vm, VMS_COMPILE);
    uint64_t t0 = jitq_now_ns(), c0 = jit_thread_cpu_ns();
    bo.fb_slots = jv->fb.on;
    if (from) {
        jv_fb_merge(x, from);
        from->done = true;
    }
    char err[256] = "";
    JitFunc *f = jv_build_ir(jv, b, x, &bo, err, sizeof err);
    /* LLVM's time grows faster than the function: a huge method (thousands of guarded
     * statements) would keep the compiler thread busy for seconds.  Big functions get no
     * IR passes; giant ones stay interpreted. */
    int opt_level = 2;
    if (f && f->ninsts > JIT_GIANT_INSTS) {
        snprintf(err, sizeof err, "too big (%u IR instructions)", f->ninsts);
        b->free_func(f);
        f = NULL;
    } else if (f && f->ninsts > JIT_BIG_INSTS) {
        opt_level = 0;
    } else if (f && f->ninsts > JIT_LARGE_INSTS) {
        opt_level = 1;
    }
    double full_priority = priority;
    if (stage == JFS_QUICK && !from) {
        if (opt_level == 0)
            stage = JFS_NONE; /* a big function: the full level is the quick one */
        else
            priority = 1e9; /* quick first versions go ahead of every full-level one */
    }
    if (stage == JFS_QUICK) opt_level = 0;
    *j = (JitJob){.owner = jv,
                  .method = x->m,
                  .version = version,
                  .f = f,
                  .cg = {.opt_level = opt_level,
                         .stress_seed = jv->o.deopt_stress_seed,
                         .stress_permille = 20,
                         .version = version,
                         .dump_llvm = getenv("SOM_JIT_DUMP_LLVM") != NULL}, /* for tuning */
                  .dump = jv->o.dump,
                  .root_bytes = x->m->code_len,
                  .build_ns = jit_thread_cpu_ns() - c0,
                  .t_queued = t0,
                  .priority = priority,
                  .full_priority = full_priority,
                  .fb_stage = stage,
                  .done = jv_job_done};
    snprintf(j->err, sizeof j->err, "%s", err);
    if (!j->f && !j->err[0]) snprintf(j->err, sizeof j->err, "build failed");
    j->fb = jv_fb_table(jv, x, j->f, version);
    j->fb_from = from;
    if (j->f) j->f->fb_table = j->fb;
    x->state = JMS_QUEUED;
    x->version = version;
    if (j->f) j->total_bytes = jv_compiled_bytes(j->f);
    j->phase_ns[JIT_PH_BUILD] = j->build_ns;
    if (j->f && !sync) {
        vm->compile_ns += jitq_now_ns() - t0;
        som_set_state(vm, state);
        jitq_push(j);
        return;
    }
    if (j->f) jitq_run(j);
    j->t_done = jitq_now_ns();
    vm->compile_ns += j->t_done - t0;
    som_set_state(vm, state);
    jv_install_one(jv, j);
}

/* The rule for x now; compiles a winner. */
static void jv_evaluate(JitVm *jv, JitMInfo *x) {
    SomMethod *m = x->m;
    if (x->state != JMS_NONE || m->jit) return;
    uint64_t cnt = m->invocations + x->loop_iters;
    if (cnt < x->eligible_at) return;
    if (!jit_rule_version_ok(&jv->p, x->version - x->vshift + 1, NULL)) {
        x->state = JMS_NEVER;
        return;
    }
    JitCandidate c = {.samples = x->samples,
                      .edge_samples = x->edge_serial == jv->serial ? x->edge_samples : 0,
                      .sample_ns = jv->sample_ns,
                      .invocations = m->invocations,
                      .loop_iters = x->loop_iters,
                      .code_len = m->code_len,
                      .known_size = jv_size(jv, x)};
    JitEstimate e;
    jv->st.evaluations++;
    bool go = jit_rule_decide(&jv->p, &jv->calib, &c, &e);
    /* never built, its time in its own loops more than in its calls (a method whose time is
     * in its calls is better compiled inlined into its caller), and the benefit would pay
     * for its bytecode alone: its size, measured */
    if (!go && !x->known_size && !x->measured && jv->p.measure_size >= 0.5 &&
        x->loop_iters > m->invocations &&
        e.benefit_ns > jv->calib.fixed_ns + (double)m->code_len * jv->calib.ns_per_byte) {
        jv_measure(jv, x);
        c.known_size = jv_size(jv, x);
        go = jit_rule_decide(&jv->p, &jv->calib, &c, &e);
    }
    if (jv->trace && (go || x->samples || c.edge_samples)) {
        char name[160];
        class_method_name(m, name, sizeof name);
        fprintf(stderr,
                "jit-trace: %s %s v%u: samples %" PRIu64 " edge %" PRIu64 " calls %" PRIu64
                " loops %" PRIu64 " past %.2f ms (%s) benefit %.2f ms cost %.2f ms\n",
                go ? "compile" : "wait", name, x->version + 1, c.samples, c.edge_samples,
                c.invocations, c.loop_iters, e.past_ns / 1e6,
                e.from_samples ? "samples" : "counters", e.benefit_ns / 1e6, e.cost_ns / 1e6);
    }
    /* the queue serves the best benefit per unit of compile time first; a first version (at
     * quick_first 2, any version) is compiled quickly first (JitRuleParams.quick_first) */
    bool quick = jv->p.quick_first > 0 && !jv->o.sync &&
                 (x->version == 0 || jv->p.quick_first > 1) && jit_rule_version_ok(&jv->p, 2, NULL);
    if (go)
        jv_compile(jv, x, jv->o.sync, e.cost_ns > 0 ? e.benefit_ns / e.cost_ns : 1e9, NULL,
                   quick ? JFS_QUICK : JFS_NONE);
}

/* A refresh reads the whole CC-Map (a snapshot in async mode, the VM's tree in coop mode):
 * its cost is kept under 1% of the VM thread's time by letting clock ticks pass (doubling
 * while one refresh costs more than 1% of the interval it stands for, halving below 0.25%).
 * Compiling is not counted: that is the point of the refresh. */
static void jv_pace(JitVm *jv, uint64_t cost_ns) {
    jv->skip = jit_rule_pace(&jv->p, jv->skip, cost_ns);
    jv->skip_left = jv->skip;
}

static void jv_refresh_now(JitVm *jv, uint64_t cpu);

/* Reads the samples into the table and evaluates the hottest methods (the clock's tick). */
static void jv_refresh(JitVm *jv) {
    if (jv->skip_left) {
        jv->skip_left--;
        return;
    }
    uint64_t c0 = jit_thread_cpu_ns();
    uint64_t compile0 = jv->vm->compile_ns;
    jv_refresh_now(jv, c0);
    uint64_t c1 = jit_thread_cpu_ns(), compiled = jv->vm->compile_ns - compile0;
    jv_pace(jv, c1 - c0 > compiled ? c1 - c0 - compiled : 0);
    if (jv->trace)
        fprintf(stderr, "jit-trace: refresh %u: %.3f ms (compiling %.3f ms), skip %u\n", jv->serial,
                (c1 - c0) / 1e6, compiled / 1e6, jv->skip);
}

/* A callee the builder may inline (build.c: can_inline_method, at its default size). */
static bool jv_inlinable(const JitVm *jv, const SomMethod *t) {
    return t->kind == MK_METHOD && !t->has_nlr_blocks && t->code_len <= jv->inline_max;
}

/* Looks at x once per refresh, if it ran interpreted since the previous one: a method whose
 * counters stood still is not running interpreted - its recent samples come from copies
 * inlined into compiled code (samples name inlined activations too), which compiling it
 * alone would not speed. */
static void jv_consider(JitVm *jv, JitMInfo *x) {
    if (x->eval_serial == jv->serial) return;
    x->eval_serial = jv->serial;
    uint64_t cnt = x->m->invocations + x->loop_iters;
    bool moved = cnt != x->refresh_cnt;
    x->refresh_cnt = cnt;
    if (moved) jv_evaluate(jv, x);
}

static void jv_refresh_now(JitVm *jv, uint64_t now_cpu) {
    SomVM *vm = jv->vm;
    uint64_t total = somprof_total_samples(vm);
    if (!total) return;
    uint64_t cpu = now_cpu - jv->cpu0;
    jv->sample_ns = (double)cpu / (double)total;
    jv->serial++;
    SomProfHot hot[JV_HOT];
    size_t n = somprof_hot_methods(vm, true, hot, JV_HOT);
    for (size_t i = 0; i < n; i++) {
        JitMInfo *x = jv_find(jv, hot[i].method);
        if (x) x->total_samples = hot[i].total;
    }
    /* the callers of hot edges to inlinable callees: their share of the edges' samples */
    size_t ne = somprof_hot_edges(vm, jv->edges, JV_EDGES);
    jv->nedges = 0;               /* the buffer is the builder's only during a build */
    SomMethod *callers[JV_EDGES]; /* methods: jv_info may move the table */
    size_t nc = 0;
    for (size_t i = 0; i < ne; i++) {
        const SomProfEdge *e = &jv->edges[i];
        if (!e->caller || !e->callee || !jv_inlinable(jv, e->callee) || e->caller->jit ||
            e->caller->kind == MK_PRIMITIVE)
            continue;
        JitMInfo *x = jv_info(jv, e->caller);
        /* a caller activated or looping often: there the calls cost; a method that runs
         * once (a harness, a main loop's setup) gains nothing from inlining a long callee */
        if (!x || e->caller->invocations + x->loop_iters < jv->p.threshold) continue;
        if (x->edge_serial != jv->serial) {
            x->edge_serial = jv->serial;
            x->edge_samples = 0;
            callers[nc++] = e->caller;
        }
        x->edge_samples += e->count;
    }
    n = somprof_hot_methods(vm, false, hot, JV_HOT);
    for (size_t i = 0; i < n; i++) {
        JitMInfo *x = jv_find(jv, hot[i].method);
        if (!x) continue;
        x->samples = hot[i].self;
        jv_consider(jv, x);
    }
    for (size_t i = 0; i < nc; i++) {
        JitMInfo *x = jv_find(jv, callers[i]);
        if (x) jv_consider(jv, x);
    }
}

/* ---- the VM's hooks ------------------------------------------------------------------- */

static void jv_hook(SomVM *vm, SomMethod *m, int why) {
    JitVm *jv = vm->jit;
    if (!jv) return;
    jv_install(jv);
    if (jv->fb_due) jv_fb_recompile(jv);
    if (why == SOM_JIT_TICK) {
        if (atomic_exchange(&jv->tick_due, 0)) jv_refresh(jv);
        return;
    }
    if (!m || m->jit || m->kind == MK_PRIMITIVE) return;
    JitMInfo *x = jv_info(jv, m);
    if (!x) return;
    if (why == SOM_JIT_EAGER) {
        if (x->state == JMS_NONE && jit_rule_version_ok(&jv->p, x->version + 1, NULL))
            jv_compile(jv, x, true, 0, NULL, JFS_NONE);
        return;
    }
    if (why == SOM_JIT_LOOP) x->loop_iters += vm->jit_loop_threshold;
    jv_evaluate(jv, x);
}

static void jv_deopt(SomVM *vm, const SomJitCode *code, uint32_t reason) {
    JitVm *jv = vm->jit;
    if (!jv || !code) return;
    jv->st.deopts[reason < JDR_COUNT ? reason : JDR_UNSUPPORTED]++;
    JitMInfo *x = jv_find(jv, code->method);
    if (!x || x->code != code) return;
    bool inval = jit_rule_invalidate(&jv->p, ++x->deopts);
    if (x->fbm.sampled_version && code->version == x->fbm.sampled_version) {
        jv->st.fb_deopts_after++;
        jv->st.fb_loops += inval;
        jit_fb_deopt(&jv->fb, &x->fbm, code->version, inval, jitq_now_ns());
    }
    if (!inval) return;
    if (x->fbt) x->fbt->done = true;
    x->fbt = NULL;
    x->novr = 0; /* the next version starts from the interpreter's feedback again */
    x->fb_phase_ns = x->quick_ns = 0;  /* a full-level successor still queued is dropped at its
                                        * install */
    ((SomJitCode *)code)->invalid = 1; /* the backend's allocation: const only in the hook */
    if (code->method->jit == code) code->method->jit = NULL;
    x->code = NULL;
    x->state = JMS_NONE;
    x->eligible_at = code->method->invocations + x->loop_iters +
                     jit_rule_backoff(&jv->p, x->version - x->vshift);
    jv->st.invalidated++;
}

/* The controller's clock (compiler thread): only flags. */
static void jv_clock(void *arg) {
    JitVm *jv = arg;
    atomic_store(&jv->tick_due, 1);
    jv_flag(jv->vm);
}

/* System>>jitOption:[put:] (vm.h: jit_option).  T1 and the ready share apply to the
 * versions compiled from then on; turning sampling off stops every observation at once. */
static int jv_option(SomVM *vm, const char *name, bool set, int64_t *val) {
    JitVm *jv = vm->jit;
    if (!jv) return -1;
    JitFbParams *p = &jv->fb;
    int64_t v = *val;
    if (!strcmp(name, "feedback-sampling")) {
        if (!set) return *val = p->on, 0;
        if (v != 0 && v != 1) return -1;
        p->on = v == 1;
    } else if (!strcmp(name, "t1")) {
        if (!set) return *val = p->t1, 0;
        if (v < 1 || v > 100000) return -1;
        p->t1 = (uint32_t)v;
    } else if (!strcmp(name, "t2-factor")) {
        if (!set) return *val = p->t2_factor, 0;
        if (v < 1 || v > 1000) return -1;
        p->t2_factor = (uint32_t)v;
    } else if (!strcmp(name, "ready-share")) {
        if (!set) return *val = (int64_t)(p->ready_share * 100 + 0.5), 0;
        if (v < 1 || v > 100) return -1;
        p->ready_share = (double)v / 100;
    } else if (!strcmp(name, "burst")) {
        if (!set) return *val = p->burst, 0;
        if (v < 1 || v > 100000) return -1;
        p->burst = (uint32_t)v;
    } else if (!strcmp(name, "deopt-loop")) {
        if (!set) return *val = p->loop, 0;
        if (v < 0 || v > JFB_LOOP_NONE) return -1;
        p->loop = (uint32_t)v;
    } else {
        return -1;
    }
    vm->jit_fb_burst = p->on ? p->burst : 0;
    vm->jit_fb_armed = 0;
    return 0;
}

/* ---- attach / detach ------------------------------------------------------------------- */

int jit_check_env(char *err, size_t errlen) {
    JitRuleParams p;
    jit_rule_defaults(&p);
    return jit_rule_from_env(&p, err, errlen);
}

bool jit_available(char *err, size_t errlen) {
    return jitq_available(err, errlen);
}

int jit_attach(SomVM *vm, const JitOptions *o, char *err, size_t errlen) {
    if (o->mode == JIT_OFF) return 0;
    JitRuleParams p;
    jit_rule_defaults(&p);
    if (jit_rule_from_env(&p, err, errlen)) return -1;
    if (!jitq_available(err, errlen)) return -1;
    JitVm *jv = calloc(1, sizeof *jv);
    if (!jv || pthread_mutex_init(&jv->mu, NULL)) {
        free(jv);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (jitq_retain()) {
        pthread_mutex_destroy(&jv->mu);
        free(jv);
        snprintf(err, errlen, "cannot start the compiler thread");
        return -1;
    }
    jv->vm = vm;
    jv->o = *o;
    jv->o.sync = o->sync || o->mode == JIT_EAGER;
    jv->p = p;
    jit_calib_init(&jv->calib, &p);
    jv->cpu0 = jit_thread_cpu_ns();
    jv->trace = getenv("SOM_JIT_TRACE") != NULL;
    jv->trace_inline = getenv("SOM_JIT_TRACE_INLINE") != NULL;
    JitBuildOpts bo;
    jit_backend()->build_defaults(&bo);
    jv->inline_max = bo.max_inline_size;
    if (o->fb_set)
        jv->fb = o->fb;
    else
        jit_fb_defaults(&jv->fb);
    vm->jit_fb_burst = jv->fb.on ? jv->fb.burst : 0;
    if (jv->fb.on && getenv("SOM_JIT_FB_ALWAYS")) /* testing: every slot execution is observed
                                                     (one endless burst: T1 per slot) */
        vm->jit_fb_burst = vm->jit_fb_armed = UINT32_MAX;
    vm->jit_threshold = p.threshold;
    vm->jit_loop_threshold = p.loop_threshold;
    vm->jit_eager = o->mode == JIT_EAGER;
    vm->jit_hook = jv_hook;
    vm->jit_deopt_hook = jv_deopt;
    vm->jit_option = jv_option;
    vm->jit = jv;
    if (o->mode == JIT_ON) jitq_set_clock(jv, p.tick_ms, jv_clock, jv);
    return 0;
}

static bool jit_detach_ex(SomVM *vm, bool final) {
    JitVm *jv = vm->jit;
    if (!jv) return false;
    const JitBackend *b = jit_backend();
    bool left = false;
    for (JitJob *j = jitq_cancel(jv, final ? &left : NULL), *next; j; j = next) {
        next = j->next;
        if (j->f) b->free_func(j->f);
        free(j);
    }
    for (JitJob *j = jv->done, *next; j; j = next) { /* compiled too late: never installed */
        next = j->next;
        if (j->code) jv_keep_code(j->code);
        free(j);
    }
    jv->done = NULL;
    for (size_t i = 0; jv->trace && i < jv->ntables; i++) { /* each table's slots */
        const JitFbTable *t = jv->tables[i];
        char name[160];
        class_method_name(t->method, name, sizeof name);
        fprintf(stderr, "jit-trace: feedback table %s v%u%s:", name, t->version,
                t->ready ? " ready" : "");
        for (uint32_t k = 0; k < t->nslots; k++) {
            const JitFbSlot *sl = &t->slots[k];
            if (sl->s.op == JIT_FB_SEND)
                fprintf(stderr, " [%u: send n %u classes %u%s compiled %u%s]", k, sl->n, sl->ncls,
                        sl->many ? "+" : "", sl->s.compiled,
                        jit_fb_slot_narrower(sl) ? " narrower" : "");
            else
                fprintf(stderr, " [%u: n %u seen %#x compiled %#x%s]", k, sl->n, sl->bits,
                        sl->s.compiled, jit_fb_slot_narrower(sl) ? " narrower" : "");
        }
        fprintf(stderr, "\n");
    }
    if (jv->o.stats) { /* one write: the blocks of several VMs do not interleave */
        char *buf = NULL;
        size_t len = 0;
        FILE *mf = open_memstream(&buf, &len);
        if (mf) {
            jit_print_stats(vm, mf);
            if (left) /* a compilation, or loading the backend */
                fprintf(mf, "jit: the compiler thread was still busy at exit (not waited for)\n");
            fclose(mf);
            fwrite(buf, 1, len, stderr);
            free(buf);
        }
    }
    vm->jit_hook = NULL;
    vm->jit_deopt_hook = NULL;
    vm->jit_eager = false;
    vm->jit_fb_burst = 0;
    vm->jit_fb_armed = 0;
    vm->jit_option = NULL;
    vm->jit = NULL;
    jitq_release();
    if (left)
        return true; /* the compiler thread is still busy (a job of jv's, or loading
                      * the backend): jv and its VM stay */
    pthread_mutex_destroy(&jv->mu);
    for (size_t i = 0; i < jv->ntables; i++) {
        free(jv->tables[i]->slots);
        free(jv->tables[i]);
    }
    free(jv->tables);
    for (uint32_t i = 0; jv->tab && i <= jv->mask; i++)
        free(jv->tab[i].ovr);
    free(jv->fblat);
    free(jv->fbdet);
    free(jv->fbfull);
    free(jv->qgap);
    free(jv->tab);
    free(jv->ctimes);
    free(jv->lat);
    free(jv);
    return false;
}

void jit_detach(SomVM *vm) {
    (void)jit_detach_ex(vm, false);
}

bool jit_detach_final(SomVM *vm) {
    return jit_detach_ex(vm, true);
}

/* ---- statistics ------------------------------------------------------------------------ */

void jit_stats(SomVM *vm, JitStats *out) {
    JitVm *jv = vm->jit;
    memset(out, 0, sizeof *out);
    if (!jv) return;
    *out = jv->st;
    uint64_t *v = malloc((jv->nct ? jv->nct : 1) * sizeof *v);
    if (!v) return;
    if (jv->nct) memcpy(v, jv->ctimes, jv->nct * sizeof *v); /* ctimes is NULL when none */
    out->compile_ns_median = jv_quantile(v, jv->nct, 0.5);
    out->compile_ns_p95 = jv_quantile(v, jv->nct, 0.95);
    if (jv->nct) memcpy(v, jv->lat, jv->nct * sizeof *v);
    out->latency_ns_median = jv_quantile(v, jv->nct, 0.5);
    out->latency_ns_p95 = jv_quantile(v, jv->nct, 0.95);
    free(v);
    for (size_t i = 0; i < jv->ntables; i++) {
        out->fb_observations += jv->tables[i]->observations;
        out->fb_clears += jv->tables[i]->clears;
    }
    if (jv->nfbl && (v = malloc(jv->nfbl * sizeof *v))) {
        memcpy(v, jv->fblat, jv->nfbl * sizeof *v);
        out->fb_latency_ns_median = jv_quantile(v, jv->nfbl, 0.5);
        out->fb_latency_ns_max = v[jv->nfbl - 1];
        memcpy(v, jv->fbdet, jv->nfbl * sizeof *v);
        out->fb_detect_ns_median = jv_quantile(v, jv->nfbl, 0.5);
        free(v);
    }
    if (jv->nfbf && (v = malloc(jv->nfbf * sizeof *v))) {
        memcpy(v, jv->fbfull, jv->nfbf * sizeof *v);
        out->fb_full_latency_ns_median = jv_quantile(v, jv->nfbf, 0.5);
        free(v);
    }
    out->fb_full = jv->nfbf;
    out->quick_first_full = jv->nqg;
    if (jv->nqg && (v = malloc(jv->nqg * sizeof *v))) {
        memcpy(v, jv->qgap, jv->nqg * sizeof *v);
        out->quick_first_gap_ns_median = jv_quantile(v, jv->nqg, 0.5);
        free(v);
    }
    out->calib_ns_per_byte = jv->calib.ns_per_byte;
    out->calib_fixed_ns = jv->calib.fixed_ns;
    for (uint32_t i = 0; i <= jv->mask && jv->tab; i++)
        out->never += jv->tab[i].m && jv->tab[i].state == JMS_NEVER;
}

size_t jit_failure_reasons(SomVM *vm, const char **reasons, uint64_t *counts, size_t n) {
    JitVm *jv = vm->jit;
    size_t k = 0;
    for (int i = 0; jv && i < jv->nfails && k < n; i++, k++) {
        reasons[k] = jv->fails[i].reason;
        counts[k] = jv->fails[i].n;
    }
    return k;
}

void jit_print_stats(SomVM *vm, FILE *f) {
    JitVm *jv = vm->jit;
    if (!jv) return;
    JitStats s;
    jit_stats(vm, &s);
    fprintf(f,
            "jit: methods compiled %llu, failed %llu, invalidated %llu, not compiled again %llu, "
            "highest version %llu\n",
            (unsigned long long)s.compiled, (unsigned long long)s.failed,
            (unsigned long long)s.invalidated, (unsigned long long)s.never,
            (unsigned long long)s.versions_max);
    const char *mod = jit_backend_path();
    if (mod) fprintf(f, "jit: backend %s\n", mod); /* loaded at the first compilation */
    if (jv->nfails) {
        fprintf(f, "jit: failed by reason:");
        for (int i = 0; i < jv->nfails; i++)
            fprintf(f, "%s %s=%llu", i ? "," : "", jv->fails[i].reason,
                    (unsigned long long)jv->fails[i].n);
        fprintf(f, "\n");
    }
    fprintf(f,
            "jit: compile time total %.3f ms, median %.3f ms, p95 %.3f ms; latency median "
            "%.3f ms, p95 %.3f ms\n",
            (double)s.compile_ns_total / 1e6, (double)s.compile_ns_median / 1e6,
            (double)s.compile_ns_p95 / 1e6, (double)s.latency_ns_median / 1e6,
            (double)s.latency_ns_p95 / 1e6);
    fprintf(f,
            "jit: compile CPU by phase: build %.1f ms, optimize %.1f ms, lower %.1f ms, LLVM "
            "passes %.1f ms, machine code %.1f ms, link %.1f ms\n",
            s.phase_ns[JIT_PH_BUILD] / 1e6, s.phase_ns[JIT_PH_OPTIMIZE] / 1e6,
            s.phase_ns[JIT_PH_LOWER] / 1e6, s.phase_ns[JIT_PH_PASSES] / 1e6,
            s.phase_ns[JIT_PH_MACHINE] / 1e6, s.phase_ns[JIT_PH_LINK] / 1e6);
    fprintf(f,
            "jit: code bytes %llu, inlined activations %llu, evaluations %llu (sizes measured "
            "%llu), compile cost %.2f ms + %.0f ns/byte\n",
            (unsigned long long)s.code_bytes, (unsigned long long)s.inlined,
            (unsigned long long)s.evaluations, (unsigned long long)s.measured,
            s.calib_fixed_ns / 1e6, s.calib_ns_per_byte);
    uint64_t total = 0;
    for (int r = 0; r < JDR_COUNT; r++)
        total += s.deopts[r];
    if (jv->fb.on)
        fprintf(f,
                "jit: sampled feedback: %llu versions with %llu slots, %llu observations, %llu "
                "slots cleared; recompiled %llu (latency median %.2f ms, max %.2f ms; detection "
                "median %.2f ms), deopts after them %llu, loops %llu (%s, T1 %u, burst %u); "
                "quick first: %llu replaced at full level (median %.2f ms after the phase "
                "change)\n",
                (unsigned long long)s.fb_tables, (unsigned long long)s.fb_slots,
                (unsigned long long)s.fb_observations, (unsigned long long)s.fb_clears,
                (unsigned long long)s.fb_recompiled, s.fb_latency_ns_median / 1e6,
                s.fb_latency_ns_max / 1e6, s.fb_detect_ns_median / 1e6,
                (unsigned long long)s.fb_deopts_after, (unsigned long long)s.fb_loops,
                jit_fb_loop_name(jv->fb.loop), jv->fb.t1, jv->fb.burst,
                (unsigned long long)s.fb_full, s.fb_full_latency_ns_median / 1e6);
    else
        fprintf(f, "jit: sampled feedback: off\n");
    if (jv->p.quick_first > 0)
        fprintf(f,
                "jit: quick first versions %llu, replaced at full level %llu (median %.2f ms "
                "after the quick one)\n",
                (unsigned long long)s.quick_first, (unsigned long long)s.quick_first_full,
                s.quick_first_gap_ns_median / 1e6);
    fprintf(f, "jit: deopts %llu", (unsigned long long)total);
    for (int r = 0, first = 1; r < JDR_COUNT; r++) {
        if (!s.deopts[r]) continue;
        fprintf(f, "%s %s=%llu", first ? ":" : ",", jdr_names[r], (unsigned long long)s.deopts[r]);
        first = 0;
    }
    fprintf(f, "\n");
}
