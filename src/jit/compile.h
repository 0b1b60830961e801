/* SPDX-License-Identifier: MIT */
/*
 * compile.h - the stages of one compilation, as the controller (jit.c) drives them:
 *
 *   VM thread, at a safe point:  jit_build  (bytecode + feedback -> IR, inlining decided)
 *   compiler thread:             jit_optimize, jit_codegen (IR -> LLVM IR -> machine code)
 *   VM thread, at a safe point:  install (m->jit = code), done by jit.c
 *
 * jit_build reads the VM (methods, inline caches, type feedback, the profile through
 * somprof's public API handed in as JitProfile callbacks); the later stages read only the
 * JitFunc, so they may run on another thread while the program goes on.
 */
#ifndef SOM_JIT_COMPILE_H
#define SOM_JIT_COMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "ir.h"
#include "jit.h"

/* What the builder may ask of the profile (the CC-Map), through the controller; any
 * callback may be NULL (no profile: decide from the inline caches alone). */
typedef struct JitProfile {
    void *arg;
    /* Weight (samples) of the call edge caller@bci -> callee, over all contexts. */
    uint64_t (*edge_weight)(void *arg, SomMethod *caller, uint32_t bci, SomMethod *callee);
    /* Total samples of the root method being compiled (the scale for edge weights). */
    uint64_t root_weight;
} JitProfile;

typedef struct JitBuildOpts {
    uint32_t max_inline_depth;    /* default 6 */
    uint32_t max_inline_size;     /* bytecode bytes of one inlined callee, default 120 */
    uint32_t max_total_size;      /* bytecode bytes inlined in all, default 2000 */
    uint32_t max_poly;            /* receiver classes of a guarded polymorphic site, default 4 */
    uint32_t max_recursion;       /* activations of one method in an inlining chain, default 2 */
    uint32_t max_recursion_small; /* the same for a small tree-recursive method, default 3 */
    uint32_t small_recursive;     /* "small": bytecode bytes, default 64 */
    uint32_t tiny_size;           /* bytecode bytes: a callee this small is inlined wherever it
                                   * is reached (its call costs more than its body), default 24 */
    uint64_t inline_hits;         /* cache hits that make a callee hot whatever its share of the
                                   * site's hits (default 1024) */
    uint32_t small_calls;         /* bytecode bytes: a callee this small with inline_hits cache
                                   * hits is inlined even where its sampled weight is surely
                                   * cold (the samples of an inlined callee cannot show the
                                   * calls it saves), default 48; 0: none */
    bool sampled_band;            /* a profile decides only where its samples are beyond their
                                   * noise; within it the inline cache does (default on) */
    bool inline_plan;             /* the budget (max_total_size) goes to the most frequent
                                   * inlined activations first, not in bytecode order: a first
                                   * pass inlines up to 4 times the budget and, when it used
                                   * more than the budget, a second keeps the chosen ones
                                   * (default on) */
    bool inline_blocks;           /* inline block literals into inlined callees (default on) */
    bool unreached_traps;         /* a send or branch never executed so far becomes a DEOPT
                                   * (uncommon trap) instead of code (default on; the controller
                                   * turns it off for a method that keeps deoptimizing) */
    uint32_t version;             /* the version being built (1, 2, ...) */
    bool trace;                   /* each inlining decision on stderr (SOM_JIT_TRACE_INLINE) */
    const JitProfile *profile;
    /* Sampled type feedback (feedback.h).  fb_slots: an arithmetic site compiled as a
     * generic send because its feedback mixes kinds, and a send compiled generically because
     * its receivers were of too many classes, get an FB_OBSERVE slot (f->fb_sites).
     * fb_kinds (may be NULL): the kinds to compile (m, site) for, given the interpreter's
     * (argkinds): the controller answers the sampled kinds of a ready slot. */
    bool fb_slots;
    uint32_t (*fb_kinds)(void *arg, SomMethod *m, uint32_t site, uint32_t argkinds);
    /* fb_send (may be NULL): fills *view with cs as the decisions should see it (the
     * receiver classes the samples saw, looked up) and answers true, or answers false. */
    bool (*fb_send)(void *arg, SomMethod *m, uint32_t site, const CallSite *cs, CallSite *view);
    void *fb_arg;
} JitBuildOpts;

void jit_build_defaults(JitBuildOpts *o);
/* Builds the IR of m (a method or a block body) with the feedback seen so far.  Answers NULL
 * with a reason in err when m is not compiled (unsupported construct, too big...). */
JitFunc *jit_build(SomVM *vm, SomMethod *m, const JitBuildOpts *o, char *err, size_t errlen);

/* Simplifies f in place: constant folding, guard elimination, dead code, block
 * scalar replacement (NEW_BLOCK.virt), and keeps f valid for jit_verify. */
void jit_optimize(JitFunc *f);

/* ---- the backend (llvm.c) ------------------------------------------------------------ */
typedef struct JitEngine JitEngine; /* one LLVM ORC LLJIT per process, shared by the VMs */

JitEngine *jit_engine_new(char *err, size_t errlen);
void jit_engine_free(JitEngine *e);

typedef struct JitCodegenOpts {
    int opt_level;            /* 0..3, default 2 */
    uint64_t stress_seed;     /* != 0: guards fail at random (--jit-deopt-stress) */
    uint32_t stress_permille; /* failure probability per guard execution, default 20 */
    bool dump_llvm;           /* print the optimized LLVM IR on stderr */
    uint32_t version;         /* SomJitCode.version of the answer (0 = 1); added by g-llvm */
    uint64_t *phase_ns;       /* NULL, or [JIT_PH_COUNT]: jit_codegen adds the CPU ns of its
                               * phases (LOWER .. LINK) */
} JitCodegenOpts;

/* Lowers f to machine code.  Thread-safe (any thread; the engine serialises what must be).
 * The answer owns copies of everything the code and walkers need (positions, deopt
 * descriptors); f may be freed after.  NULL with a reason in err on failure. */
SomJitCode *jit_codegen(JitEngine *e, const JitFunc *f, const JitCodegenOpts *o, char *err,
                        size_t errlen);

/* The calling thread's CPU time in ns (0 if unreadable).  Inline: the backend module and
 * the controller both use it, and the module calls nothing of the VM's but the runtime. */
static inline uint64_t jit_thread_cpu_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the backend module -----------------------------------------------------------------
 * The LLVM backend (llvm.c, llvm_engine.c, llvm_module.c) is a module of its own,
 * libsomjit_llvm.so, loaded (dlopen) by the controller when the first engine is made - on
 * the compiler thread, in the background - not linked into som: loading libLLVM (its
 * relocations and static constructors) takes ~15 ms, most of a short run's start.  The module
 * exports one function, which answers its entry points; `abi` guards against a module from
 * another build (the structures it shares with the VM are compiled into both). */
#define JIT_LLVM_MODULE_SYMBOL "som_jit_llvm_module"
typedef struct JitLlvmModule {
    uint64_t abi; /* JIT_LLVM_ABI of the module's build */
    JitEngine *(*engine_new)(char *err, size_t errlen);
    SomJitCode *(*codegen)(JitEngine *e, const JitFunc *f, const JitCodegenOpts *o, char *err,
                           size_t errlen);
} JitLlvmModule;
#define JIT_LLVM_ABI                                                                               \
    ((uint64_t)sizeof(JitFunc) << 48 ^ (uint64_t)sizeof(JitInst) << 32 ^                           \
     (uint64_t)sizeof(SomVM) << 16 ^ (uint64_t)sizeof(JitCodegenOpts) ^ 1u)
typedef const JitLlvmModule *(*JitLlvmModuleFn)(void);

#endif
