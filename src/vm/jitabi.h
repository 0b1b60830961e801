/* SPDX-License-Identifier: MIT */
/*
 * jitabi.h - the contract between the VM and compiled code (the optimizing tier, src/jit).
 *
 * The VM knows compiled code only through this header: a method's current compiled version
 * (SomJitCode, published in SomMethod.jit), how it is entered, the runtime entry points it
 * calls, and the descriptors it leaves for stack walkers and deoptimization.  The JIT
 * (src/jit) never touches interpreter internals; it calls only what is declared here.
 *
 * Activation protocol.  Compiled code runs one activation that its invoker (the interpreter
 * or jit_rt_send) has already set up exactly as for the interpreter: frame record pushed and
 * published, receiver and arguments at bp[0..nargs], locals nil, own context made (nctx > 0),
 * vm->sp = bp + 1 + nargs + nlocals.  entry(vm, fp) runs the body and answers the result
 * Value; it does not pop fp: the invoker pops it exactly as after an interpreted return.
 * It answers 0 (never a valid Value) when the activation ended otherwise: the VM is exiting
 * (vm->exiting: an error was reported, or `system exit:`), or a non-local return is unwinding
 * through it (vm->nlr_target >= 0).  Compiled code that gets 0 from a runtime call returns 0
 * at once; the invoker of the activation that is the NLR's target answers vm->nlr_value as
 * that activation's result (and clears nlr_target); every other invoker pops and passes 0 on.
 *
 * GC.  The collector is precise and non-moving.  Compiled code keeps every heap reference it
 * still needs across a call that may collect (any jit_rt_* call)
 * in a value-stack slot between fp->bp and vm->sp (its own spill area: it raises vm->sp over
 * it at entry and fills it with nil first, so the collector never sees a stale slot; it
 * checks first that vm->stack_end leaves room, else it deoptimizes at entry).  Since
 * objects never move, nothing needs reloading after the call.
 *
 * Walkers.  A compiled activation's record has jit = its SomJitCode and jit_pos = the index of
 * its current position in jit->pos (JIT_POS_NONE: no inlined activation is running; fp->bci
 * is the position, as for the interpreter).  Compiled code stores jit_pos (and fp->bci, the
 * root method's bci) before every runtime call and at every inlined activation's start and
 * end, so a sampler sees logical SOM frames, inlined ones included.
 */
#ifndef SOM_JITABI_H
#define SOM_JITABI_H

#include <stdint.h>

#include "vm.h"

#define JIT_POS_NONE UINT32_MAX

/* One logical activation at a position of compiled code: `method` at `bci` (the send it is
 * in, as SomFrame.bci), called from position `parent` (JIT_POS_NONE: called by nothing inlined;
 * it is then the physical frame's own method, and bci is that frame's bci). */
typedef struct JitPos {
    SomMethod *method;
    uint32_t bci;
    uint32_t parent;
} JitPos;

/* How a deoptimization descriptor's value is made a Value (JitDeoptVal.kind). */
typedef enum JitValKind {
    JVK_VALUE = 0, /* raw is a Value */
    JVK_INT,       /* raw is an int64_t in the small-integer range */
    JVK_DOUBLE,    /* raw holds the bits of a double (boxed if not immediate) */
    JVK_BOOL,      /* raw is 0 or 1: false or true */
    JVK_CONST,     /* the Value is `cst` (raw unused) */
    JVK_VBLOCK,    /* a block closure never allocated: SomBlock(method=vmethod, ctx = value #
                    * vctx (or NULL when vctx < 0), self = value # vself); every mention of the
                    * same `vid` is the same object (made once) */
} JitValKind;

typedef struct JitDeoptVal {
    uint8_t kind;        /* JitValKind */
    int32_t raw;         /* index into the raw-value array passed to jit_rt_deopt (-1 for none) */
    Value cst;           /* JVK_CONST */
    SomMethod *vmethod;  /* JVK_VBLOCK */
    int32_t vctx, vself; /* JVK_VBLOCK: indexes into JitDeopt.vals, -1 = none */
    int32_t vid;         /* JVK_VBLOCK identity */
} JitDeoptVal;

/* One interpreter activation to rebuild.  Values are indexes into JitDeopt.vals.  slots[0] is
 * bp[0] (receiver, or the block for a block activation), then arguments, then locals
 * (nslots = 1 + nargs + nlocals); stack[] are the operand-stack values above them, bottom
 * first.  For every scope but the innermost, the receiver and arguments of the pending send
 * are NOT in `stack`: they are slots[0..nargs] of the next scope, which starts right above. */
typedef struct JitDeoptScope {
    SomMethod *method;
    uint32_t bci;        /* SomFrame.bci to show (the pending send for callers) */
    uint32_t resume_bci; /* where the interpreter goes on: the instruction to (re)execute for
                          * the innermost scope, the one after the send for callers */
    int32_t self;        /* value index of self */
    int32_t ctx;         /* value index of the context register (a SomContext* as JVK_VALUE),
                          * -1 = NULL */
    uint32_t nslots, nstack;
    const int32_t *slots; /* nslots value indexes */
    const int32_t *stack; /* nstack value indexes */
} JitDeoptScope;

/* Why compiled code deoptimized (counted per reason; --jit-stats). */
typedef enum JitDeoptReason {
    JDR_CLASS = 0,   /* receiver class guard (inlined or devirtualized send) */
    JDR_TYPE,        /* operand kind guard (not a small integer / double) */
    JDR_OVERFLOW,    /* small-integer overflow */
    JDR_BOUNDS,      /* array index */
    JDR_BOOLEAN,     /* a conditional saw a non-boolean */
    JDR_GLOBAL,      /* unknown global */
    JDR_DIVZERO,     /* division by zero */
    JDR_UNSUPPORTED, /* something compiled code leaves to the interpreter */
    JDR_STRESS,      /* --jit-deopt-stress */
    JDR_COUNT
} JitDeoptReason;

/* The frame state of one guard: scopes outermost first (scopes[0] is the physical frame's
 * method).  After rebuilding, the interpreter resumes the innermost scope. */
typedef struct JitDeopt {
    uint32_t reason; /* JitDeoptReason */
    uint32_t nscopes, nvals;
    const JitDeoptScope *scopes;
    const JitDeoptVal *vals;
} JitDeopt;

/* One compiled version of one method.  Lives until the VM is freed (a frame may still run an
 * invalidated version). */
typedef struct SomJitCode {
    Value (*entry)(SomVM *vm, SomFrame *fp);
    SomMethod *method;
    uint32_t version;     /* 1, 2, ... per method */
    uint32_t tier;        /* 2 = the optimizing tier */
    volatile int invalid; /* set when invalidated: the VM no longer enters it */
    uint32_t npos;
    const JitPos *pos;    /* positions for walkers */
    uintptr_t code_start; /* machine code range (for symbolization) */
    uint64_t code_size;
    uint64_t deopts; /* deoptimizations taken in this version */
    void *owner;     /* the JIT's own data */
} SomJitCode;

/* ---- runtime entry points called by compiled code (implemented in src/vm) ------------ */

/* Sends cs->selector from compiled code.  The receiver and cs->nargs arguments are at
 * vm->sp[0 .. nargs]; `sender` is the method whose bytecode holds cs (the holder whose super
 * a super send uses: an inlined method's, not the physical frame's).  Everything a send does
 * in the interpreter happens (inline caches, trivial methods, primitives, blocks' value,
 * perform, doesNotUnderstand:, compiled callees, stack-overflow errors).  vm->sp is as before
 * on return.  Answers the result, or 0 (see the protocol above). */
Value jit_rt_send(SomVM *vm, SomFrame *fp, CallSite *cs, SomMethod *sender);

/* Ends a callee activation that compiled code entered itself (a direct call: the frame
 * record nf = fp + 1 set up and published as rt_send_compiled in jitrt.c does, entry(vm, nf)
 * called) when the fast return does not apply: the callee answered r == 0 (unwinding or
 * exiting, as for any invoker above) or vm->poll is set (the return's safepoint).  Pops nf
 * and answers the send's result or 0, as jit_rt_send would have. */
Value jit_rt_call_end(SomVM *vm, SomFrame *nf, Value r);

/* Leaves compiled code at a failed guard: rebuilds the interpreter activations of d (raw[]:
 * the raw values d->vals index), replaces fp's compiled execution by the interpreter and runs
 * until fp's own activation returns.  Answers fp's result or 0, which compiled code returns
 * at once. Counts the deopt (d->reason) and may invalidate the code version. */
Value jit_rt_deopt(SomVM *vm, SomFrame *fp, const JitDeopt *d, const uint64_t *raw);

/* A loop back edge or entry saw vm->poll set: runs the safepoint hook (where = SomSafepoint). */
void jit_rt_safepoint(SomVM *vm, SomFrame *fp, int where);

/* Allocations (may collect). */
Value jit_rt_box_double(SomVM *vm, double d);
Value jit_rt_new_block(SomVM *vm, SomMethod *block_method, SomContext *ctx, Value self);
/* A context of m's nctx variables, nil-filled; frame: the home frame for a method's own
 * context (non-local returns find it), NULL for a block's or an inlined method's. */
SomContext *jit_rt_new_context(SomVM *vm, SomMethod *m, SomContext *outer, SomFrame *frame);

/* `^ v` in a compiled block whose home is not in the same compiled code: starts the unwind
 * to the home activation (through ctx's outermost context) and answers 0, or, when the home
 * has returned, does what the interpreter does (escapedBlock:) and answers the block
 * activation's result. */
Value jit_rt_nlr(SomVM *vm, SomFrame *fp, SomContext *ctx, Value v);

/* ---- what the VM guarantees (src/vm: interp.c, jitrt.c), added by the runtime ------- */
/*
 * Entering.  The interpreter enters m->jit at an activation (after the frame is published,
 * its locals are nil and its own context is made; after the JIT hooks of vm.h ran) only when
 * vm->jit != NULL, the code is not `invalid`, vm->exact_hooks is false and the C stack is
 * above vm->cstack_limit (deeper, the activation is interpreted: compiled recursion never
 * overflows the C stack).  Before the call: fp->jit_pos = JIT_POS_NONE, fp->jit = code,
 * vm->sp as in the protocol above, vm->state = VMS_COMPILED (som_set_state); after it,
 * VMS_INTERP again.  Every runtime entry point is called in VMS_COMPILED and returns in it.
 *
 * Unwinding (the protocol above, precisely).  A `^` whose home activation is frames[h]:
 *  - the interpreter level that owns frames[h] (it pushed it, or it is the frame a
 *    deoptimization rebuilt) pops the frames above h and returns from h with the value;
 *  - every other interpreter level pops its own frames (ctx->frame = NULL for a method's
 *    own context, top published one lower, exact on_exit hook, per frame, innermost first),
 *    sets vm->nlr_target = h and vm->nlr_value, and ends (interp.h: INTERP_UNWIND); the
 *    runtime call that ran it (jit_rt_send, jit_rt_deopt) answers 0;
 *  - compiled code that gets 0 returns 0 at once (it pops nothing itself);
 *  - the invoker of a compiled activation frames[i] that answered 0: if vm->exiting, it
 *    leaves as after an error; else if nlr_target == i, it clears nlr_target (-1) and
 *    returns nlr_value from frames[i] as an ordinary return; else it pops frames[i] and
 *    goes on unwinding as above.  jit_rt_nlr only starts this (it stores nlr_target and
 *    nlr_value and answers 0).  vm->nlr_value is a GC root while nlr_target >= 0.
 * A home h equal to the compiled frame that called jit_rt_send is "below" the nested level:
 * jit_rt_send answers 0 with nlr_target == that frame's index.  Errors and `system exit:`
 * do not use nlr_target: vm->exiting is set, the backtrace was printed once at the error
 * (all frames, compiled ones with their inlined positions), every level pops its frames
 * without hooks and every runtime call answers 0.
 *
 * jit_rt_send.  fp must be frames[vm->top]; the callee runs in a nested interpreter level
 * whose base is fp.  The interpreter writes fp->ip (a private resume point) but never fp->bci
 * or fp->jit_pos.  The receiver's class, the inline caches, the arithmetic feedback and the
 * invocation counters are updated as by the interpreter's own send of cs.  `restart` sent
 * from compiled code is a SOM-level error ("restart from compiled code").
 *
 * jit_rt_nlr, escaped home.  The block's frame fp stays while escapedBlock: is sent (to the
 * self of fp's caller, frames[fp - 1], as the interpreter does) from fp; the answer is the
 * block activation's result, and fp's invoker pops fp as after any return.
 *
 * jit_rt_deopt.  d->scopes[0].method must be fp->method, and a scope of a method with a
 * context (kind method, nctx > 0) must give it (ctx >= 0); else the deopt reports a SOM-level
 * error ("bad deoptimization state") and answers 0.  A value index < 0 stands for nil.
 * The values are made first (those that allocate nothing, then boxed doubles one at a time,
 * then virtual blocks once per vid) in value-stack slots above the rebuilt activations, so
 * nothing compiled code still holds needs to be in its spill slots at the call (raw[] is
 * read before anything allocates); the spill area is overwritten.  A scope with a method's
 * own context (method kind, nctx > 0, ctx >= 0) gets ctx->frame = its rebuilt frame.  Too
 * little room on the value stack or the frame array is a SOM-level stack-overflow error.
 * After the rebuild fp->jit is NULL: the rest of fp's activation is interpreted.
 *
 * Allocations.  jit_rt_new_block and jit_rt_new_context keep their reference arguments
 * alive themselves (the caller need not spill a value it only passes to them).
 */

#endif
