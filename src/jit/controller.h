/* SPDX-License-Identifier: MIT */
/*
 * controller.h - the inside of the adaptive optimization system (jit.c, controller_*.c):
 * the cost/benefit rule as pure functions (controller_rule.c), the process-wide compiler
 * thread and its queue (controller_queue.c), and the stages the controller drives, replaceable
 * by test doubles (JitBackend).  Not for the embedder (jit.h is).  docs/design/jit.md,
 * "The controller", gives the rule with its formulas and defaults.
 *
 * Threads: the rule functions are pure (any thread); everything else says where it runs.
 */
#ifndef SOM_JIT_CONTROLLER_H
#define SOM_JIT_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "compile.h"
#include "jit.h"

/* ---- the rule (controller_rule.c) ------------------------------------------------------ */

/* Tunables; defaults from jit_rule_defaults, overridden by SOM_JIT_* (jit_rule_from_env). */
typedef struct JitRuleParams {
    double speedup;          /* SOM_JIT_SPEEDUP: compiled vs interpreted, per tier (4) */
    double fixed_ns;         /* SOM_JIT_COMPILE_FIXED_NS: initial compile time of any function
                              * (LLVM's pass and code-generation pipelines are set up per
                              * function: ~5 ms here, even for a 4-byte method) (5e6) */
    double ns_per_byte;      /* SOM_JIT_COMPILE_NS_PER_BYTE: initial compile rate per byte of
                              * bytecode compiled, inlined bytes included, beyond the fixed
                              * time (20000) */
    double expansion;        /* SOM_JIT_EXPANSION: initial (root + inlined bytes) / root
                              * bytes, before a build measured it (3) */
    double call_ns;          /* SOM_JIT_CALL_NS: interpreted cost of one activation (40) */
    double byte_ns;          /* SOM_JIT_BYTE_NS: interpreted cost per bytecode byte run (4) */
    uint32_t min_samples;    /* SOM_JIT_MIN_SAMPLES: samples trusted alone (3) */
    uint32_t threshold;      /* SOM_JIT_THRESHOLD: invocations between evaluations (1000) */
    uint32_t loop_threshold; /* SOM_JIT_LOOP_THRESHOLD: back edges between evaluations (1000) */
    uint32_t deopt_limit;    /* SOM_JIT_DEOPT_LIMIT: deopts of one version before it is
                              * invalidated (8) */
    uint32_t traps_off;      /* SOM_JIT_TRAPS_OFF_VERSION: from this version on, no uncommon
                              * traps for unreached code (4) */
    uint32_t max_versions;   /* SOM_JIT_MAX_VERSIONS: versions per method, then never (6) */
    uint32_t max_failures;   /* SOM_JIT_MAX_FAILURES: failed builds/codegens per method (2) */
    uint32_t tick_ms;        /* SOM_JIT_TICK_MS: the controller's clock (50) */
    uint32_t hz;             /* SOM_JIT_HZ: a fixed internal sampling rate (0: tuned) */
    double alpha;            /* SOM_JIT_CALIBRATION_ALPHA: least weight of a new measurement
                              * (0: a running mean, every measurement weighs the same) */
    double edge_share;       /* SOM_JIT_EDGE_SHARE: the share of the time spent through a hot
                              * call edge to an inlinable callee that compiling the caller (and
                              * inlining the callee there) counts as its own (0.5) */
    double bg_share;         /* SOM_JIT_BACKGROUND_SHARE: the share of the compiler thread's
                              * time the program pays for (it goes on meanwhile, on another
                              * core if there is one); the build on the VM thread counts
                              * fully (1) */
    double small_recursive;  /* SOM_JIT_SMALL_RECURSIVE: the builder's size bound of a small
                              * tree-recursive method, inlined a level deeper (-1: the
                              * builder's default, JitBuildOpts; 0: none) */
    double tiny_inline;      /* SOM_JIT_TINY_INLINE: bytecode bytes of a callee inlined
                              * wherever it was reached (-1: the builder's default, 24) */
    double inline_band;      /* SOM_JIT_INLINE_BAND: sampled edge weights decide inlining
                              * only beyond their noise, the inline cache within it (1; 0:
                              * the weight against 1/50 of the root's, however few samples) */
    double inline_plan;      /* SOM_JIT_INLINE_PLAN: the inlining budget goes to the most
                              * frequent inlined activations first (1; 0: in bytecode order) */
    double measure_size;     /* SOM_JIT_MEASURE_SIZE: a method never built whose benefit would
                              * pay for its bytecode alone has its compiled size measured by a
                              * build before the rule decides (1; 0: its bytecode times the
                              * mean expansion) */
    double inline_hits;      /* SOM_JIT_INLINE_HITS: cache hits that make a callee hot
                              * whatever its share of the site (-1: the builder's default) */
    double small_calls;      /* SOM_JIT_SMALL_CALLS: bytecode bytes of a callee inlined for
                              * its cache hits even where its samples say cold (-1: the
                              * builder's default, 48; 0: none) */
    double quick_recompile;  /* SOM_JIT_QUICK_RECOMPILE: a version recompiled from sampled
                              * feedback is compiled quickly first (no LLVM passes, fast
                              * instruction selection: a few ms), then at the full level as
                              * soon as the quick one is installed (1; 0: full level only) */
    double quick_first;      /* SOM_JIT_QUICK_FIRST: a method's first version is compiled the
                              * same way: quickly, then at the full level once the quick one
                              * runs (1; 0: the first version at the full level at once; 2:
                              * the versions after an invalidation as well) */
} JitRuleParams;

void jit_rule_defaults(JitRuleParams *p);
/* Applies the SOM_JIT_* variables set in the environment; -1 with "SOM_JIT_X: expected ...,
 * got '...'" in err for a bad value (p unchanged then). */
int jit_rule_from_env(JitRuleParams *p, char *err, size_t errlen);

/* The compile-cost model, calibrated online from measured compilations. */
typedef struct JitCalib {
    double fixed_ns;        /* compile time of any function, however small */
    double ns_per_byte;     /* compile time per compiled byte (root + inlined), beyond fixed_ns */
    double expansion;       /* compiled bytes per root byte */
    uint32_t n;             /* measurements so far (expansion) */
    uint32_t nfixed, nrate; /* of them small, larger */
} JitCalib;

void jit_calib_init(JitCalib *c, const JitRuleParams *p);
/* One compilation took compile_ns for root_bytes of root bytecode, total_bytes compiled: a
 * small one (<= JIT_CALIB_SMALL_BYTES) measures the fixed time, a larger one the rate. */
#define JIT_CALIB_SMALL_BYTES 32
void jit_calib_update(JitCalib *c, const JitRuleParams *p, uint64_t compile_ns, uint32_t root_bytes,
                      uint32_t total_bytes);

typedef struct JitCandidate {
    uint64_t samples;      /* self samples of the method so far */
    uint64_t edge_samples; /* samples through its hot call edges to callees the builder would
                            * inline (their time saved by compiling it: JitRuleParams.edge_share) */
    double sample_ns;      /* time one sample stands for (0: no samples yet) */
    uint64_t invocations;  /* activations so far */
    uint64_t loop_iters;   /* back edges taken so far (as counted by the loop hook) */
    uint32_t code_len;     /* bytecode bytes of the method */
    uint32_t known_size;   /* bytes compiled by an earlier build (root + inlined), 0 unknown */
} JitCandidate;

typedef struct JitEstimate {
    double past_ns, future_ns, benefit_ns, cost_ns;
    bool from_samples; /* the past time came from samples, not from counters */
    bool compile;      /* benefit > cost */
} JitEstimate;

/* The decision for one method (Jikes RVM AOS): future = past; benefit = future * (1 - 1 /
 * speedup); cost = size * ns_per_byte; compile when benefit > cost.  Answers e->compile. */
bool jit_rule_decide(const JitRuleParams *p, const JitCalib *c, const JitCandidate *x,
                     JitEstimate *e);
/* Whether a version that deoptimized `deopts` times is invalidated. */
bool jit_rule_invalidate(const JitRuleParams *p, uint64_t deopts);
/* Whether `version` may be built, and with uncommon traps or not. */
bool jit_rule_version_ok(const JitRuleParams *p, uint32_t version, bool *unreached_traps);
/* Activations plus back edges to wait after `version` was invalidated, before the next one is
 * considered (the interpreter's feedback grows meanwhile): threshold * 2^(version - 1). */
uint64_t jit_rule_backoff(const JitRuleParams *p, uint32_t version);

/* Clock ticks to let pass between two sample refreshes, given the ticks let pass so far and
 * the CPU cost of the latest refresh: doubled (2k + 1) while a refresh costs more than 1% of
 * the time it stands for ((skip + 1) * tick_ms), halved below 0.25%; at most 1023. */
uint32_t jit_rule_pace(const JitRuleParams *p, uint32_t skip, uint64_t cost_ns);

/* ---- the stages (real by default; test doubles through jit_set_backend) ----------------- */

typedef struct JitBackend {
    JitEngine *(*engine_new)(char *err, size_t errlen);
    void (*build_defaults)(JitBuildOpts *o);
    JitFunc *(*build)(SomVM *vm, SomMethod *m, const JitBuildOpts *o, char *err, size_t errlen);
    void (*optimize)(JitFunc *f);
    SomJitCode *(*codegen)(JitEngine *e, const JitFunc *f, const JitCodegenOpts *o, char *err,
                           size_t errlen);
    void (*print)(const JitFunc *f, FILE *out);
    void (*free_func)(JitFunc *f);
    /* Whether engine_new can be expected to work, cheaply (without making the engine: the
     * real backend's is made on the compiler thread, in the background); NULL: make it. */
    bool (*available)(char *err, size_t errlen);
} JitBackend;

/* The real stages (compile.h, ir.h). */
extern const JitBackend jit_real_backend;
/* Replaces the stages (tests; NULL = the real ones).  Only while no VM is attached: it also
 * forgets the process's engine, so the next attach makes one with the new backend. */
void jit_set_backend(const JitBackend *b);
const JitBackend *jit_backend(void);

/* ---- the compiler thread and its queue (controller_queue.c) ----------------------------- */

typedef struct JitJob JitJob;
typedef void (*JitJobDone)(JitJob *j); /* on the compiler thread, after the stages */

/* One compilation handed to the compiler thread.  `f` is built; the thread runs optimize and
 * codegen, sets code (or err), the times, and calls done(j), which passes it back to its VM. */
/* A compilation in two steps: a sampled recompilation (JitRuleParams.quick_recompile) or a
 * method's first version (quick_first). */
typedef enum JitFbStage {
    JFS_NONE,  /* in a single step */
    JFS_QUICK, /* the quick version (fb_from set if a sampled recompilation) */
    JFS_FULL   /* the full-level version that follows it */
} JitFbStage;

struct JitJob {
    JitJob *next;
    void *owner; /* the VM's controller state (queue cancellation matches on it) */
    SomMethod *method;
    uint32_t version;
    JitFunc *f;
    JitCodegenOpts cg;
    bool dump;
    uint32_t root_bytes, total_bytes, inlined;
    uint64_t build_ns;               /* on the VM thread */
    uint64_t compile_ns;             /* optimize + codegen, compiler thread's CPU time */
    uint64_t phase_ns[JIT_PH_COUNT]; /* build_ns and compile_ns by phase */
    uint64_t t_queued, t_done;
    double priority;       /* the queue serves the highest first (the rule's benefit per cost) */
    double full_priority;  /* a quick version's: the priority of the full-level one after it */
    struct JitFbTable *fb; /* the new version's sampled-feedback table, or NULL */
    struct JitFbTable *fb_from; /* built from this table's sampled feedback, or NULL */
    uint8_t fb_stage;           /* JitFbStage */
    SomJitCode *code;
    char err[256];
    JitJobDone done;
};

/* The path of the LLVM backend module once loaded (NULL before, or if it could not be). */
const char *jit_backend_path(void);
/* Whether the JIT can be expected to run: the backend's cheap check, or, without one, its
 * engine (made now); false with the reason.  Answers false once making the engine failed. */
bool jitq_available(char *err, size_t errlen);
/* Making the engine was tried and failed (nothing will compile). */
bool jitq_engine_failed(void);
/* The process's engine, made once by the backend (thread-safe); NULL with the reason.  The
 * first failure is reported on stderr (it is found on the compiler thread, in the middle of
 * the run: the VM then stops compiling and runs interpreted). */
JitEngine *jitq_engine(char *err, size_t errlen);
/* Starts the compiler thread for one more user (VM); -1 if it cannot start. */
int jitq_retain(void);
/* One user less; the last one stops and joins the thread. */
void jitq_release(void);
/* Queues j behind the jobs of at least its priority (FIFO among equals; any thread holding
 * no JIT lock). */
void jitq_push(JitJob *j);
/* Removes owner's queued jobs and waits until none of them runs; answers them as a list
 * (their done was not called).  With `left` (the process ends after this owner, its last
 * user): an owner's job that is running, or the backend being loaded, is not waited for -
 * *left says whether there was one; the compiler thread then finishes it, never hands it
 * back, and waits for the process's _exit (jitq_release does not join it). */
JitJob *jitq_cancel(void *owner, bool *left);
/* Runs the stages of j on the calling thread (the compiler thread, or the VM's for sync). */
void jitq_run(JitJob *j);
/* Calls fn(arg) every `ms` milliseconds on the compiler thread while it runs (the
 * controller's clock); one per owner, removed by jitq_cancel. */
void jitq_set_clock(void *owner, uint32_t ms, void (*fn)(void *arg), void *arg);
uint64_t jitq_now_ns(void);

#endif
