/* SPDX-License-Identifier: MIT */
/*
 * interp.h - the bytecode interpreter.
 *
 * Runs activations on the VM's value stack and frame array (frame.h) with
 * computed-goto dispatch, monomorphic-first polymorphic inline caches per
 * send site, small-integer and double fast paths, inline execution of
 * trivial methods (getters, setters, ^self, ^literal), and non-local return
 * by unwinding the frame array. Never recurses on the C stack.
 */
#ifndef SOM_INTERP_H
#define SOM_INTERP_H

#include "vm.h"

/* What interp_call / interp_run answer besides 0 (normal completion). */
#define INTERP_UNWIND (-1) /* a non-local return is unwinding below this level (see below) */
#define INTERP_EXIT (-2)   /* interp_run only: vm->exiting (error reported, or `system exit:`) */

/* Activates `m` with receiver and arguments already pushed on the value
 * stack (vm->sp points past them) and runs until that activation returns.
 * Answers 0 and leaves the result in place of the receiver, or answers the
 * exit status after an error (reported on vm->err) or `system exit:` (then
 * vm->exiting is set; the status may be 0, so test vm->exiting), or
 * INTERP_UNWIND (below).
 *
 * Levels and non-local returns.  The interpreter never recurses by itself, but
 * compiled code calls back into it (jit_rt_send), so several interpreter loops
 * ("levels") may be active on the C stack, each owning the frames above its
 * base.  A `^` whose home activation belongs to an outer level (or is the
 * compiled frame a level was started from) pops the level's own frames down to
 * its base - clearing each method's ctx->frame, publishing top - 1 and calling
 * on_exit per frame, in that order, as for a local non-local return - stores
 * the home's frame index in vm->nlr_target and the value in vm->nlr_value (a
 * GC root while nlr_target >= 0), sets vm->sp to the level's base and answers
 * INTERP_UNWIND.  Every level below does the same until the level owning the
 * home, which clears nlr_target and returns from the home with nlr_value.
 * Errors and exits do not unwind this way: each level pops its frames
 * without hooks and answers the exit (the backtrace was printed once, at the
 * error, with every frame on the stack). */
int interp_call(SomVM *vm, SomMethod *m, int nargs);

/* ---- internal: the compiled-code runtime (jitrt.c) enters the loop here ---- */
typedef enum InterpMode {
    IM_CALL,     /* activate `method` (receiver and nargs arguments below vm->sp) */
    IM_SEND,     /* send through `cs` from the compiled frame frames[vm->top]; the receiver
                  * and cs->nargs arguments at vm->sp[0..nargs]; `sender` holds cs */
    IM_SEND_SEL, /* send `sel` with nargs arguments at vm->sp[0..nargs] from the compiled
                  * frame frames[vm->top], looked up from `lookup_cls` */
    IM_DEOPT,    /* resume the rebuilt interpreter frames frames[base .. vm->top] (their ip
                  * set) until frames[base]'s activation returns (it is not popped) */
} InterpMode;

typedef struct InterpEntry {
    InterpMode mode;
    SomMethod *method;
    int nargs;
    CallSite *cs;
    SomMethod *sender;
    struct SomString *sel;
    SomClass *lookup_cls;
    int32_t base; /* IM_DEOPT: the index of the deoptimized frame */
    Value result; /* out (IM_SEND, IM_SEND_SEL, IM_DEOPT): the answer; vm->sp as at entry */
} InterpEntry;

/* Runs the interpreter as `e` says.  Answers 0 (result in e->result, or for IM_CALL in
 * place of the receiver), INTERP_UNWIND or INTERP_EXIT. */
int interp_run(SomVM *vm, InterpEntry *e);
/* The JIT's part of an activation, as at the interpreter's `activate:` (fp = frames[vm->top]
 * fully made: locals nil, context made, vm->sp above the locals): runs the vm.h hooks and,
 * if m->jit may be entered, the compiled activation (jitabi.h); fp is not popped.  Answers
 * INTERP_JIT_INTERPRET (not entered: interpret fp), INTERP_JIT_RETURN (*result is fp's
 * result, a non-local return to fp included), INTERP_JIT_EXIT or INTERP_JIT_UNWIND (a
 * non-local return to frames[*home] below fp, value *result; nlr_target already cleared). */
enum { INTERP_JIT_INTERPRET, INTERP_JIT_RETURN, INTERP_JIT_EXIT, INTERP_JIT_UNWIND };
int interp_jit_enter(SomVM *vm, SomFrame *fp, Value *result, int32_t *home);
/* m's quickened code (made on first use). */
const uint8_t *interp_qcode(SomMethod *m);
/* Allocations as the interpreter makes them (may collect; arguments must be rooted). */
SomContext *interp_new_context(SomVM *vm, uint32_t n);
SomBlock *interp_new_block(SomVM *vm, SomMethod *bm, SomContext *ctx, Value self);
/* The C stack address below which compiled code is not entered (vm->cstack_limit). */
char *interp_cstack_limit(void);
/* A named address inside the interpreter (bytecode handlers and the send,
 * activation, primitive and error paths), for PC histograms (Cog's
 * VM_LABEL).  They are those of the loop that runs programs (interp_call);
 * the nested levels of compiled code (interp_run) run a second copy of the
 * loop (interp_loop.h, function interp_run_jit) whose PCs are not listed. */
typedef struct InterpLabel {
    const char *name;
    const void *addr;
} InterpLabel;

/* Fills out with up to max labels (unsorted); answers how many. */
int interp_labels(InterpLabel *out, int max);

/* Prints the SOM call stack, innermost first, to f: one "  at Class>>selector (file:line)"
 * per logical activation (inlined ones of compiled code included). */
void interp_backtrace(SomVM *vm, FILE *f);
/* The same for a SOM-level error raised through the core library (Object>>error: and the
 * methods that call it for the VM: doesNotUnderstand:arguments:, escapedBlock:,
 * unknownGlobal:, System>>resolve:, subclassResponsibility): those innermost activations
 * are left out, so the trace starts at the code that failed. */
void interp_error_backtrace(SomVM *vm, FILE *f);

#endif
