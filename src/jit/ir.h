/* SPDX-License-Identifier: MIT */
/*
 * ir.h - the optimizing tier's intermediate representation.
 *
 * One JitFunc per compilation: a control-flow graph of basic blocks holding instructions in
 * SSA form.  Built on the VM's thread from a method's bytecode and the interpreter's feedback
 * (build.c, with inlining), simplified (opt.c), then lowered to LLVM IR on the compiler thread
 * (llvm.c).  Instruction operands and phi inputs are instruction ids (JitRef); the graph holds
 * pointers to VM objects (methods, classes, symbols, call sites, literals), which the
 * collector never moves and the classes keep alive.
 *
 * Types: a JT_VALUE is a tagged word (value.h); JT_INT an unboxed int64 known to be in the
 * small-integer range; JT_DBL an unboxed double; JT_BOOL a 1-bit truth value; JT_PTR a raw
 * pointer (a heap object known to be one, or a VM structure).
 *
 * Guards.  An instruction with `deopt` >= 0 may leave compiled code: when its check fails the
 * code calls jit_rt_deopt with frame state fn->states[deopt] (jitabi.h) and returns what that
 * answers.  The state describes the interpreter activations as they are just BEFORE the
 * instruction's bytecode, so the interpreter re-executes it (resume_bci of the innermost
 * scope); values in the state are instruction ids (JitStateVal), boxed by their type.
 *
 * Calls.  JI_SEND and the allocating instructions are GC points (jitabi.h: live JT_VALUE and
 * JT_PTR heap references must be in spill slots); JI_SEND may answer 0, on which the code
 * returns 0 at once.  Every GC point and guard carries `pos` (an index into fn->pos, the
 * logical position stored into fp->jit_pos/fp->bci before the call): the backend stores
 * fp->bci = the bci of the chain's outermost entry (the root method's) and fp->jit_pos = pos,
 * or JIT_POS_NONE when the chain is that single entry.
 *
 * fn->states[0] is always the entry state (the root method at bci 0 with its arguments,
 * locals nil, empty stack): the backend deoptimizes there when the value stack has no room
 * for the spill area.  Value-stack layout of the physical frame: bp[0..nargs] receiver and
 * arguments, then the root's locals (their memory is not used by compiled code: locals are
 * SSA values; a deopt writes them back), then the spill area, then outgoing send arguments
 * at vm->sp.
 */
#ifndef SOM_JIT_IR_H
#define SOM_JIT_IR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "jitabi.h"

typedef int32_t JitRef; /* instruction id; -1 = none */

typedef enum JitType { JT_VOID = 0, JT_VALUE, JT_INT, JT_DBL, JT_BOOL, JT_PTR } JitType;

typedef enum JitCmp { JC_LT, JC_GT, JC_LE, JC_GE, JC_EQ, JC_NE } JitCmp;

/*  name, result type; comment: operands (a[0], a[1], ...) and aux fields used */
#define JIT_OPS(X)                                                                                 \
    /* ---- constants and entry values */                                                          \
    X(CONST, VALUE)   /* cval: a Value (int, double, nil, literal, class...) */                    \
    X(CONST_INT, INT) /* ival */                                                                   \
    X(CONST_DBL, DBL) /* dval */                                                                   \
    X(CONST_PTR, PTR) /* pval */                                                                   \
    X(ARG, VALUE)     /* fp->bp[ival] at entry (0 = receiver/block, 1.. = arguments) */            \
    X(SELF, VALUE)    /* fp->self at entry */                                                      \
    X(FRAME_CTX, PTR) /* fp->ctx at entry (the own context if the method has one) */               \
    X(PHI, VALUE)     /* type set per instruction; inputs in phi[], one per predecessor */         \
    /* ---- tags and classes (no guard) */                                                         \
    X(IS_INT, BOOL)    /* a0 VALUE is a small integer */                                           \
    X(IS_DBL, BOOL)    /* a0 VALUE is a double (immediate or boxed) */                             \
    X(HAS_CLASS, BOOL) /* a0 VALUE's class is cls (integers, doubles, nil... included) */          \
    X(IS_KIND, BOOL)   /* a0 VALUE is a heap object of ObjKind ival */                             \
    X(GUARD, VOID)     /* a0 BOOL must be true, else deopt (deopt, reason) */                      \
    /* ---- boxing */                                                                              \
    X(UNBOX_INT, INT)       /* a0 VALUE known to be a small integer */                             \
    X(BOX_INT, VALUE)       /* a0 INT (in range) */                                                \
    X(UNBOX_DBL, DBL)       /* a0 VALUE known to be a double (immediate or boxed) */               \
    X(INT_TO_DBL, DBL)      /* a0 INT */                                                           \
    X(BOX_DBL, VALUE)       /* a0 DBL; GC point when not immediate (jit_rt_box_double) */          \
    X(BOOL_TO_VALUE, VALUE) /* a0 BOOL -> true/false */                                            \
    X(VALUE_TO_BOOL, BOOL)  /* a0 VALUE known to be true or false */                               \
    /* ---- arithmetic: guarded ops deopt (overflow out of the small range, zero divisor) */       \
    X(IADD, INT) /* a0 + a1, guarded */                                                            \
    X(ISUB, INT) /* a0 - a1, guarded */                                                            \
    X(IMUL, INT) /* a0 * a1, guarded */                                                            \
    X(IDIV, INT) /* a0 / a1 truncated, guarded (zero) */                                           \
    X(IMOD, INT) /* a0 \\ a1 floored (result has the divisor's sign), guarded (zero) */            \
    X(IREM, INT) /* a0 rem: a1 truncated, guarded (zero) */                                        \
    X(IAND, INT)                                                                                   \
    X(IOR, INT)                                                                                    \
    X(IXOR, INT)                                                                                   \
    X(ISHL, INT)  /* a0 << a1, guarded (a1 in 0..62, result in range) */                           \
    X(ISHR, INT)  /* a0 >> a1 arithmetic (a1 >= 0, clamped at 63) */                               \
    X(ICMP, BOOL) /* a0 cmp a1, cmp: JitCmp */                                                     \
    X(DADD, DBL)                                                                                   \
    X(DSUB, DBL)                                                                                   \
    X(DMUL, DBL)                                                                                   \
    X(DDIV, DBL)                                                                                   \
    X(DSQRT, DBL)                                                                                  \
    X(DCMP, BOOL) /* a0 cmp a1 (IEEE, false with NaN but NE) */                                    \
    X(D2I, INT)   /* truncation, guarded (result in the small range, not NaN) */                   \
    X(VEQ, BOOL)  /* a0 == a1 identity of two VALUEs */                                            \
    X(BNOT, BOOL)                                                                                  \
    X(SELECT, VALUE) /* a0 BOOL ? a1 : a2 (type set per instruction) */                            \
    /* ---- memory (object known to be of the right kind; index in range) */                       \
    X(LOAD_FIELD, VALUE)  /* a0 instance, ival field index */                                      \
    X(STORE_FIELD, VOID)  /* a0 instance, ival, a1 VALUE */                                        \
    X(ARRAY_LEN, INT)     /* a0 array */                                                           \
    X(ARRAY_LOAD, VALUE)  /* a0 array, a1 INT 0-based */                                           \
    X(ARRAY_STORE, VOID)  /* a0 array, a1 INT 0-based, a2 VALUE */                                 \
    X(FIELD_COUNT, INT)   /* a0 instance: nfields */                                               \
    X(STRING_LEN, INT)    /* a0 String or Symbol */                                                \
    X(CTX_OUTER, PTR)     /* a0 context: its outer */                                              \
    X(CTX_LOAD, VALUE)    /* a0 context, ival variable */                                          \
    X(CTX_STORE, VOID)    /* a0 context, ival, a1 VALUE */                                         \
    X(CFIELD_LOAD, VALUE) /* a0 class object, ival class-side field (cfields->items[ival]) */      \
    X(CFIELD_STORE, VOID) /* a0 class object, ival, a1 VALUE */                                    \
    X(GLOBAL_LOAD, VALUE) /* sym: the global's Value, 0 when unset (test with VEQ 0 / guard) */    \
    X(BLOCK_FIELD, VALUE) /* a0 block object: ival 0 = self, 1 = ctx (as a VALUE word) */          \
    /* ---- GC points */                                                                           \
    X(SEND, VALUE)      /* a0 receiver, a1.. args (nargs = cs->nargs); cs, method = sender */      \
    X(NEW_BLOCK, VALUE) /* method = block method, a0 ctx (PTR or -1 for NULL), a1 self;            \
                         * `virt` set by opt.c when it never escapes (then no code) */             \
    X(NEW_CONTEXT, PTR) /* method, a0 outer (PTR or -1), ival 1 = home frame is fp */              \
    X(SAFEPOINT, VOID)  /* if vm->poll > 0: jit_rt_safepoint(where = ival) */                      \
    X(NLR, VALUE)       /* jit_rt_nlr(a0 ctx, a1 value); the code then returns the result */       \
    X(SET_POS, VOID)    /* fp->jit_pos = pos (an inlined activation starts or ends) */             \
    X(FB_OBSERVE, VOID) /* if vm->jit_fb_armed: jit_fb_observe(fn->fb_table, ival = slot, a0, a1)  \
                         * (sampled type feedback; VALUEs; no GC, no deopt) */                     \
    /* ---- terminators */                                                                         \
    X(JUMP, VOID)        /* succ[0] */                                                             \
    X(BRANCH, VOID)      /* a0 BOOL ? succ[0] : succ[1] */                                         \
    X(RETURN, VOID)      /* a0 VALUE: the physical activation's result */                          \
    X(DEOPT, VOID)       /* unconditional: jit_rt_deopt(states[deopt]) and return its answer */    \
    X(RETURN_ZERO, VOID) /* return 0 (propagate an unwind/exit) */

typedef enum JitOp {
#define JIT_OP_ENUM(name, type) JI_##name,
    JIT_OPS(JIT_OP_ENUM)
#undef JIT_OP_ENUM
        JI__COUNT
} JitOp;

extern const char *const jit_op_name[JI__COUNT];
extern const uint8_t jit_op_type[JI__COUNT]; /* default result type (JitType) */

#define JIT_MAX_ARGS 8 /* operands a[]; SEND with more arguments is not compiled */

typedef struct JitInst {
    uint16_t op;    /* JitOp */
    uint8_t type;   /* JitType of the result */
    uint8_t cmp;    /* JitCmp (ICMP/DCMP) */
    uint8_t virt;   /* NEW_BLOCK: scalar-replaced (no allocation; only frame states use it) */
    uint8_t reason; /* JitDeoptReason of a guard */
    uint8_t dead;   /* removed by opt.c (ignore) */
    uint8_t nargs;  /* operands used in a[] */
    int32_t block;  /* the basic block it is in */
    int32_t deopt;  /* frame state index, -1 = cannot deopt */
    uint32_t pos;   /* position (fn->pos index) or JIT_POS_NONE */
    JitRef a[JIT_MAX_ARGS];
    union {
        Value cval;
        int64_t ival;
        double dval;
        void *pval;
    };
    SomClass *cls;         /* HAS_CLASS; SEND with a target: the receiver class it expects (NULL:
                            * the target is right for every receiver the send can see) */
    SomMethod *method;     /* SEND: sender; NEW_BLOCK/NEW_CONTEXT: the method */
    SomMethod *target;     /* SEND: the method the send is expected to run (or NULL): the backend
                            * enters its compiled code directly when the receiver's class is cls */
    int32_t tic;           /* SEND with a target: the inline-cache entry whose hits it counts, -1 */
    CallSite *cs;          /* SEND */
    struct SomString *sym; /* GLOBAL_LOAD */
    JitRef *phi;           /* PHI inputs, one per predecessor of its block, in pred order */
} JitInst;

typedef struct JitBlock {
    JitRef *insts; /* instruction ids in order: phis first, terminator last */
    uint32_t ninsts, cap;
    int32_t succ[2];
    int32_t *preds;
    uint32_t npreds, pred_cap;
    uint32_t loop_depth; /* 0 = not in a loop */
    bool cold;           /* deopt-only or rarely run (placed out of line) */
} JitBlock;

/* A value of a frame state: instruction id (boxed by its type; a virtual NEW_BLOCK is
 * rebuilt), or -1 for nil. */
typedef JitRef JitStateVal;

typedef struct JitStateScope {
    SomMethod *method;
    uint32_t bci, resume_bci; /* as JitDeoptScope */
    JitStateVal self, ctx;    /* ctx -1 = NULL */
    uint32_t nslots, nstack;
    JitStateVal *slots, *stack;
} JitStateScope;

typedef struct JitState {
    uint32_t nscopes;
    JitStateScope *scopes; /* outermost first */
} JitState;

typedef struct JitFunc {
    SomVM *vm;         /* for well-known objects only (nil, true, false, classes) */
    SomMethod *method; /* the root (physical frame's) method */
    JitInst *insts;
    uint32_t ninsts, inst_cap;
    JitBlock *blocks; /* blocks[0] is the entry */
    uint32_t nblocks, block_cap;
    JitState *states;
    uint32_t nstates, state_cap;
    JitPos *pos;
    uint32_t npos, pos_cap;
    uint32_t nspill;  /* filled by the backend */
    uint32_t inlined; /* inlined activations (stats) */
    /* Sampled type feedback (feedback.h): the sites whose code is generic because of their
     * feedback, one per FB_OBSERVE slot, and the controller's table they report into (set
     * before code generation; NULL: FB_OBSERVE emits nothing). */
    struct JitFbSite *fb_sites;
    uint32_t nfb_sites, fb_cap;
    void *fb_table;
    struct JitArena *arena; /* every allocation of the function */
    char name[160];         /* "Class>>selector" */
} JitFunc;

/* ---- ir.c: construction and checking ------------------------------------------------- */
JitFunc *jit_func_new(SomVM *vm, SomMethod *m);
void jit_func_free(JitFunc *f);
void *jit_alloc(JitFunc *f, size_t size); /* zeroed, freed with the function */
int32_t jit_block_new(JitFunc *f);
JitRef jit_emit(JitFunc *f, int32_t block, JitOp op); /* appends; answers the id */
void jit_add_edge(JitFunc *f, int32_t from, int32_t to);
/* Checks SSA form, types, terminators, phi arity and frame states; answers the number of
 * problems, with the first described in err. */
int jit_verify(const JitFunc *f, char *err, size_t errlen);
/* Prints the function readably (for tests, --jit-dump and docs/design/jit.md). */
void jit_print(const JitFunc *f, FILE *out);

/* ---- additions by the IR builder (b-build); append-only ------------------------------- */
/* Conventions of build.c / opt.c that the backend may rely on:
 *  - Boxing is explicit: every operand whose op wants a VALUE (SEND, RETURN, stores, VEQ,
 *    phis of type VALUE...) is a VALUE-typed instruction; the builder inserts BOX_INT,
 *    BOX_DBL and BOOL_TO_VALUE.  Only frame states name unboxed values (INT, DBL, BOOL), to be
 *    boxed by type at deoptimization.  There is no BOOL constant: true/false merged into a
 *    BOOL phi are ICMP.eq / ICMP.ne of a CONST_INT with itself.
 *  - A phi's type is its inputs' (INT and DBL phis are common in loops); PTR phis never occur.
 *  - Frame-state values are never -1 except ctx (NULL); nil is a CONST.  After jit_optimize
 *    every state in fn->states is states[0] or used by a live instruction, and names only
 *    live instructions.  A JVK_VBLOCK is a NEW_BLOCK with virt set.
 *  - Positions: the root's have parent JIT_POS_NONE; SET_POS starts an inlined activation
 *    (its pos is the callee at bci 0) and ends it (the caller's pos at the send).
 *  - Conditionals on a VALUE are VEQ tests against the true/false constants (no
 *    VALUE_TO_BOOL); a non-boolean reaches a DEOPT (JDR_BOOLEAN) at the conditional.
 *  - Blocks ending in DEOPT are marked cold; loop_depth counts natural loops (after opt). */
/* Inserts a new instruction just before block's terminator (appends when it has none). */
JitRef jit_emit_before_term(JitFunc *f, int32_t block, JitOp op);
/* A new frame state of nscopes zeroed scopes (their arrays made by the caller with
 * jit_alloc); answers its index. */
int32_t jit_state_new(JitFunc *f, uint32_t nscopes);
/* A new position (fn->pos entry); answers its index. */
uint32_t jit_pos_new(JitFunc *f, SomMethod *m, uint32_t bci, uint32_t parent);
/* "value", "int", "dbl", "bool", "ptr", "void". */
const char *jit_type_name(int t);
/* Instructions that may leave compiled code through a frame state (deopt >= 0 required). */
bool jit_op_can_deopt(int op);
/* GC points (SEND, NEW_BLOCK unless virt, NEW_CONTEXT, SAFEPOINT, NLR, BOX_DBL). */
bool jit_op_is_gc_point(int op);

#endif
