/* SPDX-License-Identifier: MIT */
/*
 * jitt.h - helpers for the LLVM backend's tests: a JitFunc built by hand (t_* functions fill
 * the structs of ir.h directly; ir.c is not linked), and the recording test doubles of the
 * runtime entry points (rt_doubles.c).  Not thread-safe, except that the doubles may be
 * called from several threads when only jit_rt_send counts (atomically) what it saw.
 */
#ifndef SOM_JITT_H
#define SOM_JITT_H

#include <stdint.h>

#include "compile.h"

/* ---- hand-built IR ---- */
JitFunc *t_func(SomVM *vm, SomMethod *m);
void t_free(JitFunc *f);
int32_t t_block(JitFunc *f);
JitRef t_ins(JitFunc *f, int32_t b, JitOp op, JitType type);
JitRef t_op1(JitFunc *f, int32_t b, JitOp op, JitType type, JitRef a0);
JitRef t_op2(JitFunc *f, int32_t b, JitOp op, JitType type, JitRef a0, JitRef a1);
JitRef t_cint(JitFunc *f, int32_t b, int64_t v);
JitRef t_arg(JitFunc *f, int32_t b, int64_t i);
void t_edge(JitFunc *f, int32_t from, int32_t to);
void t_jump(JitFunc *f, int32_t b, int32_t to);
void t_branch(JitFunc *f, int32_t b, JitRef c, int32_t t, int32_t e);
void t_ret(JitFunc *f, int32_t b, JitRef v);
JitRef t_phi(JitFunc *f, int32_t b, JitType type, JitRef in0, JitRef in1);
/* A state of one scope (method f->method at bci): slots, then stack. */
int32_t t_state(JitFunc *f, uint32_t bci, JitRef self, uint32_t nslots, const JitRef *slots,
                uint32_t nstack, const JitRef *stack);
uint32_t t_pos(JitFunc *f, SomMethod *m, uint32_t bci, uint32_t parent);
/* A method record (not a heap object) with nargs/nlocals, for f->method. */
SomMethod *t_method(uint16_t nargs, uint16_t nlocals);
/* A zeroed, 16-byte aligned fake object of size bytes (freed by t_objects_free). */
void *t_object(SomClass *cls, int kind, size_t size);
void t_objects_free(void);

/* ---- runtime doubles ---- */
#define RT_MAX_DEOPTS 4096
typedef struct RtDeopt {
    const JitDeopt *d;
    uint64_t raw[16];
    uint32_t nraw;       /* the raw values the descriptor indexes */
    uint64_t raw_digest; /* sum over all of them of (index + 1) * value */
    uint32_t fp_bci, fp_jit_pos;
} RtDeopt;

typedef struct RtLog {
    /* jit_rt_send */
    uint64_t sends;
    Value send_answer;            /* what jit_rt_send answers */
    void (*send_hook)(SomVM *vm); /* called by jit_rt_send after recording (e.g. a GC) */
    Value send_args[8];
    CallSite *send_cs;
    SomMethod *send_sender;
    uint32_t send_bci, send_jit_pos;
    Value *send_sp;
    Value spilled[32]; /* bp[spill_base .. sp) at the last send (at most 32) */
    uint32_t nspilled;
    uint32_t spill_base;    /* set by the test: 1 + nargs + nlocals */
    Value spilled_at[4][8]; /* the spill area at sends 1..4 (counted from rt_reset) */
    uint32_t nspilled_at[4];
    /* jit_rt_deopt */
    uint32_t ndeopts;
    RtDeopt deopts[RT_MAX_DEOPTS];
    Value deopt_answer;
    /* others */
    uint64_t safepoints, boxes, new_blocks, new_contexts, nlrs;
    double box_arg;
    Value nlr_answer;
    /* jit_fb_observe */
    uint64_t observes;
    void *observe_table;
    uint32_t observe_slot;
    Value observe_a, observe_b;
} RtLog;

extern RtLog rt;
void rt_reset(void);
/* The SomDouble the box double made last (a fake object). */
extern SomDouble *rt_last_box;

#endif
