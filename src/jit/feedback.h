/* SPDX-License-Identifier: MIT */
/*
 * feedback.h - sampled type feedback in compiled code (Ř's answer to stale feedback).
 *
 * Compiled code records no type feedback: a site whose interpreter feedback was polluted
 * before compilation (a value that was a Double twice and an Integer ever after) stays
 * generic for ever.  So every site that the builder compiled generically *because of* its
 * feedback becomes a feedback slot of the code version: the code carries an FB_OBSERVE with
 * the site's operands, which costs one load and one untaken branch while nothing is armed.
 * Each profiler sample of the VM (cooperative or async: the sampler only stores
 * vm->jit_fb_armed = vm->jit_fb_burst, which is async-signal-safe) arms the next `burst`
 * executions of any slot of any compiled code; an armed FB_OBSERVE calls jit_fb_observe,
 * which reads the operands' kinds (no allocation, no lock: the values are the code's own,
 * on the VM thread) into the version's table.
 *
 * The rules (the thesis', each a parameter): a slot is ready after T1 observations; a
 * version is ready when at least `ready_share` of its slots are ready and at least one ready
 * slot's sampled kinds are narrower than the kinds it was compiled for in a way the builder
 * can use (integers only, or doubles only); a slot with more than T2 = t2_factor * T1
 * observations while its version is not ready is cleared (its early observations were
 * polluted too).  A ready version is recompiled with the sampled kinds in place of the
 * interpreter's at its narrower slots (jit.c).  Deoptimization loops (a recompiled version
 * whose speculation keeps failing) are broken by a growing cool-down or a growing ready
 * threshold (JitFbLoop).
 *
 * The rule functions are pure (a fake clock and fake observations in tests); jit_fb_observe
 * runs on the VM thread, called from compiled code.
 */
#ifndef SOM_JIT_FEEDBACK_H
#define SOM_JIT_FEEDBACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vm.h"

typedef enum JitFbLoop {
    JFB_LOOP_COOLDOWN = 0, /* after a deopt loop: no sampled recompilation for a cool-down
                            * that doubles with each loop */
    JFB_LOOP_THRESHOLD,    /* after each deopt that follows a sampled recompilation: T1 of
                            * the method's next versions grows by T1 */
    JFB_LOOP_NONE,         /* neither (the method's version limit is the only stop) */
} JitFbLoop;

typedef struct JitFbParams {
    bool on;              /* --jit-feedback-sampling (on) */
    uint32_t t1;          /* --jit-t1: observations that make a slot ready (20) */
    uint32_t t2_factor;   /* --jit-t2-factor: T2 = t2_factor * T1 (10) */
    double ready_share;   /* --jit-ready-share: share of ready slots a version needs (0.5) */
    uint32_t burst;       /* --jit-fb-burst: slot executions observed per sample, at most
                           * T1 of them at one slot (512; 1 = evenly spaced, one per sample) */
    uint32_t loop;        /* --jit-deopt-loop: JitFbLoop (threshold) */
    uint64_t cooldown_ns; /* first cool-down after a deopt loop (100 ms; doubles) */
} JitFbParams;

void jit_fb_defaults(JitFbParams *p);
bool jit_fb_parse_loop(const char *s, uint32_t *out);
const char *jit_fb_loop_name(uint32_t loop);

/* One site compiled generically because of its feedback (made by the builder): an
 * arithmetic site (its operands' kinds) or a send (its receiver's class). */
#define JIT_FB_SEND 0xff     /* JitFbSite.op of a send slot */
#define JIT_FB_MAX_CLASSES 4 /* receiver classes a send slot keeps (SOM_IC_SIZE) */
typedef struct JitFbSite {
    SomMethod *method; /* whose bytecode holds the site (an inlined method's too) */
    uint32_t site;     /* index into method->sites */
    uint8_t op;        /* the arithmetic bytecode (BC_ADD...), or JIT_FB_SEND */
    uint32_t compiled; /* arithmetic: the argkinds bits the code was compiled for; send: the
                        * receiver classes it was compiled for (more than max_poly: generic) */
    uint32_t max_poly; /* send: the classes a site may have and still be guarded */
} JitFbSite;

/* A slot of one version: its site and what the samples saw. */
typedef struct JitFbSlot {
    JitFbSite s;
    uint32_t n;                     /* observations since the slot was last cleared */
    uint32_t bits;                  /* argkinds bits observed since then */
    uint64_t first_ns;              /* the clock at the first of them */
    uint32_t clears;                /* times cleared (pollution) */
    uint32_t burst_serial, burst_n; /* observations in the current sample's burst */
    /* send slots: the receiver classes seen since the last clear (many: more than fit) */
    SomClass *cls[JIT_FB_MAX_CLASSES];
    uint32_t cls_n[JIT_FB_MAX_CLASSES];
    uint8_t ncls, many;
} JitFbSlot;

/* The sampled feedback of one compiled version (one per compilation with slots; kept until
 * exit like the code, since a frame may still run a replaced version). */
typedef struct JitFbTable {
    SomVM *vm;
    SomMethod *method; /* the root */
    uint32_t version;
    uint32_t t1; /* the ready threshold in force for this version */
    uint32_t nslots;
    JitFbSlot *slots;
    const JitFbParams *p;
    void (*on_ready)(struct JitFbTable *t); /* the controller's (VM thread) */
    void *owner;                            /* the controller's per-VM state */
    bool ready; /* the rule said so; the controller recompiles at its next hook */
    bool done;  /* recompiled, replaced or invalidated: observations are ignored */
    uint64_t observations, clears;
    uint64_t ready_ns; /* when it became ready */
    uint64_t phase_ns; /* the latest first observation among its narrower slots */
    struct JitFbTable *next_ready;
} JitFbTable;

/* ---- the rules (pure) ---------------------------------------------------------------- */

/* The argkinds bit of one observation of (a, b): TF_BIT(kind(a), kind(b)). */
uint32_t jit_fb_kinds(Value a, Value b);
/* Whether bytecode op has an unboxed double form in the builder (+ - * comparisons). */
bool jit_fb_op_has_double(uint8_t op);
/* Whether observed kinds let the builder specialize a site compiled for `compiled`:
 * integers only, or (for ops with a double form) doubles only, and strictly fewer kinds. */
bool jit_fb_narrower(uint8_t op, uint32_t compiled, uint32_t observed);
/* Whether a site compiled for `kinds` could ever be narrowed (a slot is worth its check). */
bool jit_fb_slot_useful(uint8_t op, uint32_t kinds);
/* Records one observation at time now (kinds for an arithmetic slot; cls, the receiver's
 * class, for a send slot); clears the slot when it passed T2 while the table is not ready
 * (answers true then). */
bool jit_fb_record(const JitFbParams *p, JitFbTable *t, JitFbSlot *s, uint32_t kinds, SomClass *cls,
                   uint64_t now);
/* Whether a ready slot saw less than its site was compiled for, usably (either kind). */
bool jit_fb_slot_narrower(const JitFbSlot *s);
/* Whether t is ready (ready share and one narrower ready slot); sets phase_ns. */
bool jit_fb_table_ready(const JitFbParams *p, JitFbTable *t);
/* The kinds to compile slot s's site for in the next version: observed when s is ready and
 * narrower, else `compiled` (the overflow bit kept). */
uint32_t jit_fb_override(const JitFbTable *t, const JitFbSlot *s);

/* Per-method deopt-loop state (jit.c keeps one per method). */
typedef struct JitFbMethod {
    uint32_t sampled;         /* sampled recompilations so far */
    uint32_t loops;           /* sampled versions that deoptimized (the loops broken) */
    uint32_t t1_extra;        /* added to T1 (JFB_LOOP_THRESHOLD) */
    uint64_t cooldown_until;  /* no sampled recompilation before (JFB_LOOP_COOLDOWN) */
    uint32_t sampled_version; /* the latest version built from sampled feedback (0: none) */
} JitFbMethod;

/* T1 for the method's next version. */
uint32_t jit_fb_t1(const JitFbParams *p, const JitFbMethod *m);
/* A deoptimization of `version` of the method at time now; invalidated: the version was
 * thrown away for it.  Applies the break-out strategy when the version was built from
 * sampled feedback. */
void jit_fb_deopt(const JitFbParams *p, JitFbMethod *m, uint32_t version, bool invalidated,
                  uint64_t now);
/* Whether a ready table may be recompiled now (cool-down over, a version left). */
bool jit_fb_may_recompile(const JitFbParams *p, const JitFbMethod *m, uint64_t now);

/* ---- called by compiled code (VM thread) ------------------------------------------------ */
void jit_fb_observe(JitFbTable *t, uint32_t slot, Value a, Value b);

#endif
