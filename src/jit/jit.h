/* SPDX-License-Identifier: MIT */
/*
 * jit.h - the optimizing tier of som, as the VM's embedder sees it (tools/som, somprof).
 *
 * jit_attach gives a VM the adaptive optimization system: the controller that picks hot
 * methods from the profiler's samples (with invocation counters for short runs), builds
 * their IR at a safe point, compiles them on a background thread and installs the code.
 * See docs/design/jit.md.
 */
#ifndef SOM_JIT_H
#define SOM_JIT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "feedback.h"
#include "jitabi.h"
#include "vm.h"

typedef enum JitMode { JIT_OFF = 0, JIT_ON, JIT_EAGER } JitMode;

typedef struct JitOptions {
    JitMode mode;
    uint64_t deopt_stress_seed; /* != 0: --jit-deopt-stress[=SEED] */
    bool stats;                 /* print statistics on stderr at detach (--jit-stats) */
    bool dump;                  /* print each function's IR on stderr (--jit-dump) */
    bool sync;                  /* compile on the VM's thread (tests; eager implies it) */
    /* Sampled type feedback (src/jit/feedback.h); fb_set false: the defaults. */
    bool fb_set;
    JitFbParams fb;
} JitOptions;

/* Parses "on", "off", "eager"; false if unknown. */
bool jit_parse_mode(const char *s, JitMode *out);
/* Checks the controller's SOM_JIT_* tunables in the environment: 0, or -1 with
 * "SOM_JIT_X: expected ..., got '...'" in err. */
int jit_check_env(char *err, size_t errlen);
/* Whether the JIT can run in this process (its engine is made on the first call; thread-safe);
 * false with the reason in err ("the JIT is not built yet", LLVM could not start). */
bool jit_available(char *err, size_t errlen);
/* Attaches the JIT to vm (on vm's thread, after som_vm_new).  Answers 0, or -1 with a
 * message in err (LLVM could not be initialised: the VM then runs interpreted). */
int jit_attach(SomVM *vm, const JitOptions *o, char *err, size_t errlen);
/* Stops compiling for vm (waits for its compilations), prints the statistics if asked. */
void jit_detach(SomVM *vm);
/* jit_detach for the process's last VM, just before the process ends: a compilation in
 * progress is not waited for (LLVM may need hundreds of milliseconds for code nobody would
 * run).  Answers true when one was left running: vm must then stay allocated (the compiler
 * thread may still read its methods) and the process must end with _exit after flushing its
 * output (LLVM's static destructors must not run under that thread). */
bool jit_detach_final(SomVM *vm);

/* Where a compilation's CPU time goes (the CPU clock of the thread
 * running each phase; JitStats.phase_ns). */
typedef enum JitPhase {
    JIT_PH_BUILD,    /* bytecode + feedback -> IR (jit_build, on the VM thread) */
    JIT_PH_OPTIMIZE, /* our IR passes (jit_optimize) */
    JIT_PH_LOWER,    /* IR -> LLVM IR, verified */
    JIT_PH_PASSES,   /* LLVM's IR pipeline */
    JIT_PH_MACHINE,  /* LLVM's code generation to an object file */
    JIT_PH_LINK,     /* linking into the engine, symbol lookup */
    JIT_PH_COUNT
} JitPhase;

typedef struct JitStats {
    uint64_t compiled, failed, invalidated, osr;
    uint64_t code_bytes;
    uint64_t compile_ns_total, compile_ns_median, compile_ns_p95;
    uint64_t phase_ns[JIT_PH_COUNT]; /* CPU time per phase, all compilations (failed ones too) */
    uint64_t deopts[JDR_COUNT];
    /* added by the controller (c-control) */
    uint64_t inlined;           /* inlined activations in the installed code */
    uint64_t versions_max;      /* highest version installed */
    uint64_t evaluations;       /* cost/benefit decisions taken */
    uint64_t measured;          /* methods whose size the rule measured by a build (jv_measure) */
    uint64_t never;             /* methods given up (failures, too many versions) */
    uint64_t latency_ns_median; /* queued -> compiled (wall) */
    uint64_t latency_ns_p95;
    double calib_ns_per_byte; /* the compile-cost rate as calibrated so far */
    double calib_fixed_ns;    /* the fixed compile cost as calibrated so far */
    /* sampled type feedback */
    uint64_t fb_tables;            /* versions compiled with feedback slots */
    uint64_t fb_slots;             /* their slots */
    uint64_t fb_observations;      /* operands observed */
    uint64_t fb_clears;            /* slots cleared as polluted (T2) */
    uint64_t fb_recompiled;        /* versions recompiled from sampled feedback */
    uint64_t fb_deopts_after;      /* deopts of versions built from sampled feedback */
    uint64_t fb_loops;             /* of those versions, invalidated (deopt loops) */
    uint64_t fb_latency_ns_median; /* phase change (first narrower observation) -> installed */
    uint64_t fb_latency_ns_max;
    uint64_t fb_detect_ns_median; /* phase change -> ready (the samples' part) */
    uint64_t fb_full;             /* quick sampled versions replaced by their full-level one */
    uint64_t fb_full_latency_ns_median; /* phase change -> the full-level one installed */
    uint64_t quick_first;      /* versions compiled quickly first (JitRuleParams.quick_first) */
    uint64_t quick_first_full; /* of them, replaced by their full-level version */
    uint64_t quick_first_gap_ns_median; /* quick one installed -> the full-level one installed */
} JitStats;
void jit_stats(SomVM *vm, JitStats *out);
void jit_print_stats(SomVM *vm, FILE *f);
/* The failures so far by kind (the reason up to its first ':'); answers how many written. */
size_t jit_failure_reasons(SomVM *vm, const char **reasons, uint64_t *counts, size_t n);
/* "class", "type", ... for a JitDeoptReason ("?" if out of range). */
const char *jit_deopt_reason_name(uint32_t reason);

#endif
