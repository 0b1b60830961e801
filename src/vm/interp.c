/* SPDX-License-Identifier: MIT */
/*
 * interp.c - the bytecode interpreter (see interp.h and bytecode.h).
 *
 * Registers: fp (running frame), bp (its slot 0), sp (next free value slot),
 * ip, self, lits, sites. Before anything that may allocate (and so collect)
 * the interpreter stores sp into vm->sp: the collector scans the value stack
 * up to vm->sp and the frames up to vm->top.
 *
 * Frame publication order (frame.h): a new frame is fully written before
 * vm->top is advanced with a release store.
 *
 * Compiled code (jitabi.h).  An activation whose method has valid compiled
 * code is entered at `activate:` (jit_activate) and the result returned as
 * from an interpreted activation.  Compiled code sends through jit_rt_send
 * (jitrt.c), which runs a nested level of this loop (interp_run, IM_SEND)
 * whose base is the compiled frame: its fp->ip points to a private one-byte
 * instruction (BC__JITRET, never in a method's code) that ends the level with
 * the send's answer, whether the callee was activated and returned into the
 * compiled frame or was a primitive or a trivial method.  The interpreter
 * writes a compiled frame's ip (only ever to that instruction) but never its
 * bci, which compiled code keeps.  A deoptimization runs a level (IM_DEOPT)
 * over the rebuilt frames that ends when the deoptimized frame returns,
 * before popping it (its invoker pops it).  Levels and non-local returns:
 * interp.h.
 */
#include "interp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytecode.h"
#include "class.h"
#include "jitabi.h"
#include "num.h"
#include "prims.h"

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* A private instruction (not in SOM_BYTECODES: tools and the compiler never see it): the
 * resume point of a compiled frame while a nested level runs a send for it. */
enum {
    BC__JITRET = BC__COUNT,
    BC__ENTER_CALL,
    BC__ENTER_SEND,
    BC__ENTER_SEND_SEL,
    BC__ENTER_DEOPT,
    BC__NPRIVATE
};
/* Where interp_run starts, per InterpMode: one private instruction that sets the level up,
 * followed by BC__JITRET (the resume point a compiled base frame gets).  Entering through
 * the dispatch, like any instruction, keeps GCC compiling one indirect jump per handler
 * (a second way into the loop made it share one jump among all handlers). */
static const uint8_t enter_code[4][2] = {
    [IM_CALL] = {BC__ENTER_CALL, BC__JITRET},
    [IM_SEND] = {BC__ENTER_SEND, BC__JITRET},
    [IM_SEND_SEL] = {BC__ENTER_SEND_SEL, BC__JITRET},
    [IM_DEOPT] = {BC__ENTER_DEOPT, BC__JITRET},
};
/* Where a deoptimized block frame that may not be popped resumes after escapedBlock:. */
static const uint8_t retlocal_code[1] = {BC_RETURN_LOCAL};

static inline void publish_top(SomVM *vm, int32_t t) {
    __atomic_store_n(&vm->top, t, __ATOMIC_RELEASE);
}
#define PUBLISH(t) publish_top(vm, top = (t))

#define tf_kind som_tf_kind

/* Inline-cache miss: look in the other entries, then do a full lookup and
 * remember the result. Answers NULL when the selector is not understood. */
static SomMethod *ic_miss(SomVM *vm, CallSite *cs, SomClass *cls, SomClass *lookup_cls) {
    for (int i = 1; i < SOM_IC_SIZE; i++)
        if (cs->ic[i].cls == cls) {
            cs->ic[i].hits++;
            return cs->ic[i].method;
        }
    SomMethod *m = som_lookup(vm, lookup_cls, cs->selector);
    if (!m) return NULL;
    cs->misses++;
    for (int i = 0; i < SOM_IC_SIZE; i++)
        if (!cs->ic[i].cls) {
            cs->ic[i].cls = cls;
            cs->ic[i].method = m;
            cs->ic[i].hits = 1;
            return m;
        }
    cs->megamorphic = 1;
    return m;
}

/* After a miss filled the first entry of site cs (of method m, whose quickened code runs):
 * a send to a trivial method or to Array>>at: / at:put: becomes the form that runs it in
 * place for that entry's class (interp_loop.h; the form falls back to the plain send for
 * any other receiver, so the rewrite is never undone).  Only the quickened copy changes. */
static void quicken_send(SomMethod *m, CallSite *cs) {
    if (cs < m->sites || cs >= m->sites + m->nsites || !m->qcode || cs->bci >= m->code_len)
        return; /* a site of another method (a compiled frame's send) */
    SomMethod *t = cs->ic[0].method;
    uint8_t *q = m->qcode;
    uint32_t bci = cs->bci;
    if (!t || !cs->ic[0].cls) return;
    bool at = t->prim_kind == PK_ARRAY_AT, atput = t->prim_kind == PK_ARRAY_AT_PUT;
    if (!t->trivial && !at && !atput) return;
    /* a POP next: the send is a statement (its _POP form drops the answer itself) */
    bool pop = bci + 3 < m->code_len && m->code[bci + 3] == BC_POP;
    /* the send may also run as the second half of a PUSH_LOCAL_SEND0/1 a k two bytes earlier
     * (when that PUSH_LOCAL is not itself the second half of another superinstruction):
     * both forms are rewritten, each still means what it meant */
    uint32_t pc = 0;
    while (pc + 2 < bci)
        pc += 1 + som_bc_len[m->code[pc]];
    if (pc + 2 == bci && q[pc] == BC_PUSH_LOCAL_SEND0) {
        if (t->trivial == TRIV_GETTER) q[pc] = BC_PUSH_LOCAL_SEND0_GET;
        if (t->trivial == TRIV_LITERAL) q[pc] = BC_PUSH_LOCAL_SEND0_LIT;
    } else if (pc + 2 == bci && q[pc] == BC_PUSH_LOCAL_SEND1 && at) {
        q[pc] = BC_PUSH_LOCAL_SEND1_AT;
    }
    if (q[bci] == BC_SEND0 && t->trivial == TRIV_GETTER)
        q[bci] = BC_SEND0_GET;
    else if (q[bci] == BC_SEND0 && t->trivial == TRIV_LITERAL)
        q[bci] = BC_SEND0_LIT;
    else if (q[bci] == BC_SEND1 && t->trivial == TRIV_SETTER)
        q[bci] = pop ? BC_SEND1_SET_POP : BC_SEND1_SET;
    else if (q[bci] == BC_SEND1 && at)
        q[bci] = BC_SEND1_AT;
    else if (q[bci] == BC_SEND2 && atput)
        q[bci] = pop ? BC_SEND2_ATPUT_POP : BC_SEND2_ATPUT;
}

static int interp_run_call(SomVM *vm, InterpEntry *e);
static int interp_run_call_lean(SomVM *vm, InterpEntry *e);

/* The handlers of both copies that run programs (the lean one's after the other's). */
int interp_labels(InterpLabel *out, int max) {
    InterpEntry e = {.mode = IM_CALL, .method = (SomMethod *)(void *)out, .nargs = max};
    int n = interp_run_call(NULL, &e);
    e.method = (SomMethod *)(void *)(out + n);
    e.nargs = max - n;
    return n + interp_run_call_lean(NULL, &e);
}

int interp_call(SomVM *vm, SomMethod *m, int nargs) {
    if (vm && !vm->cstack_limit) vm->cstack_limit = interp_cstack_limit();
    InterpEntry e = {.mode = IM_CALL, .method = m, .nargs = nargs};
    int r = interp_run(vm, &e);
    if (r == INTERP_EXIT) return vm->exit_status;
    return r;
}

/* An inlined activation prints exactly as an interpreted one would: the traceback of a
 * program does not depend on what the JIT did. */
static void backtrace_line(FILE *f, const char *name, SomMethod *m, uint32_t bci) {
    const char *file = m->holder && m->holder->file ? m->holder->file->bytes : "?";
    fprintf(f, "  at %s (%s:%u)\n", name, file, class_method_line(m, bci));
}

/* The core library's methods that only raise an error on their sender's behalf: a
 * traceback of a SOM-level error starts below them, at the code that failed. */
static bool raiser(const char *name) {
    static const char *const names[] = {
        "Object>>error:",        "Object>>doesNotUnderstand:arguments:",
        "Object>>escapedBlock:", "Object>>unknownGlobal:",
        "System>>resolve:",      "Object>>subclassResponsibility",
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(name, names[i])) return true;
    return false;
}

/* One logical activation: printed unless it is among the leading raisers to skip. */
static void backtrace_frame(FILE *f, SomMethod *m, uint32_t bci, bool *skipping) {
    char name[256];
    class_method_name(m, name, sizeof name);
    if (*skipping && raiser(name)) return;
    *skipping = false;
    backtrace_line(f, name, m, bci);
}

static void backtrace(SomVM *vm, FILE *f, bool skip_raisers) {
    fprintf(f, "Traceback (innermost first):\n");
    int shown = 0;
    bool skipping = skip_raisers;
    for (int32_t i = vm->top; i >= 0; i--) {
        SomFrame *fr = &vm->frames[i];
        if (fr->method == vm->boot_method) continue;
        if (shown == 40 && i > 10) {
            fprintf(f, "  ... %d more activations ...\n", i - 10);
            i = 10;
            continue;
        }
        const SomJitCode *code = fr->jit;
        uint32_t pos = code ? fr->jit_pos : JIT_POS_NONE;
        bool own = true; /* the frame's own method still to show */
        for (int guard = 0; pos != JIT_POS_NONE && pos < code->npos && guard < 64; guard++) {
            const JitPos *p = &code->pos[pos]; /* an inlined activation, innermost first */
            backtrace_frame(f, p->method, p->bci, &skipping);
            if (p->parent == JIT_POS_NONE && p->method == fr->method) own = false;
            pos = p->parent;
        }
        if (own) backtrace_frame(f, fr->method, fr->bci, &skipping);
        if (!skipping) shown++;
    }
}

void interp_backtrace(SomVM *vm, FILE *f) {
    backtrace(vm, f, false);
}

void interp_error_backtrace(SomVM *vm, FILE *f) {
    backtrace(vm, f, true);
}

static SomContext *new_context(SomVM *vm, uint32_t n) {
    SomContext *c = gc_alloc(vm, sizeof(SomContext) + n * sizeof(Value), OBJ_CONTEXT, NULL);
    c->nvars = n;
    for (uint32_t i = 0; i < n; i++)
        c->vars[i] = vm->nil;
    return c;
}

static SomBlock *new_block(SomVM *vm, SomMethod *bm, SomContext *ctx, Value self) {
    SomClass *cls = bm->nargs == 0   ? vm->block1Class
                    : bm->nargs == 1 ? vm->block2Class
                                     : vm->block3Class;
    SomBlock *b = gc_alloc(vm, sizeof(SomBlock), OBJ_BLOCK, cls);
    b->method = bm;
    b->ctx = ctx;
    b->self = self;
    return b;
}

SomContext *interp_new_context(SomVM *vm, uint32_t n) {
    return new_context(vm, n);
}
SomBlock *interp_new_block(SomVM *vm, SomMethod *bm, SomContext *ctx, Value self) {
    return new_block(vm, bm, ctx, self);
}

/* A 16-bit operand (little-endian in the code): one load where the host allows it. */
static inline __attribute__((always_inline)) unsigned u16_at(const uint8_t *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
#else
    return (unsigned)p[0] | ((unsigned)p[1] << 8);
#endif
}

static inline SomContext *ctx_at(SomContext *c, unsigned depth) {
    while (depth--)
        c = c->outer;
    return c;
}

/* Number of arguments a selector takes. */
static int selector_arity(const SomString *sel) {
    if (sel->len && strchr("~&|*/\\+=><,@%-", sel->bytes[0])) return 1;
    int n = 0;
    for (uint64_t i = 0; i < sel->len; i++)
        n += sel->bytes[i] == ':';
    return n;
}

/* Inlined double helpers for the arithmetic fast paths (num.h has the
 * general versions; these must stay equivalent). */
static inline __attribute__((always_inline)) double fast_double(Value v) {
    if (som_is_imm_double(v)) return som_imm_double(v);
    if (som_is_int(v)) return (double)som_int(v);
    return ((SomDouble *)v)->d;
}

static inline __attribute__((always_inline)) Value fast_new_double(SomVM *vm, double d) {
    Value imm;
    if (LIKELY(som_try_imm_double(d, &imm))) return imm;
    return num_new_double(vm, d);
}

/* Type feedback of the fast paths: the operand kinds a send site saw. */
#define TF_BIT(ka, kb) (1u << ((ka)*4 + (kb)))
static inline __attribute__((always_inline)) void feedback(uint32_t *fb, uint32_t bits) {
    if (fb && UNLIKELY(!(*fb & bits))) *fb |= bits; /* (fb: NULL in the lean copy) */
}

enum { AR_ADD, AR_SUB, AR_MUL };

/* The fast paths of ADD, SUB and MUL: small integers without overflow, and a
 * double receiver with a double or small-integer argument. Answers false when
 * the real send must run. vm->sp must cover a and b (boxing a double may
 * collect). With dout, two immediate doubles leave their result unencoded in
 * *dout and answer 2 (the loop's double chain takes it from there). */
static inline __attribute__((always_inline)) int
arith_fast_d(SomVM *vm, int op, Value a, Value b, uint32_t *fb, Value *out, double *dout) {
    if (LIKELY(a & b & 1)) {
        feedback(fb, TF_BIT(TF_INT, TF_INT));
        /* on the tagged words (2x+1, 2y+1): 64-bit overflow is 63-bit overflow */
        int64_t r;
        bool ovf;
        if (op == AR_ADD) {
            ovf = __builtin_add_overflow((int64_t)a, (int64_t)(b - 1), &r);
        } else if (op == AR_SUB) {
            ovf = __builtin_sub_overflow((int64_t)a, (int64_t)(b - 1), &r);
        } else {
            ovf = __builtin_mul_overflow(som_int(a), (int64_t)(b - 1), &r);
            r |= 1;
        }
        if (UNLIKELY(ovf)) {
            if (fb)
                *fb |= TF_OVERFLOWED; /* the compiler stops speculating on small integers here */
            return 0;
        }
        *out = (Value)r;
        return 1;
    }
    if (LIKELY((((a ^ 2) | (b ^ 2)) & 3) == 0)) { /* two immediate doubles */
        feedback(fb, TF_BIT(TF_DOUBLE, TF_DOUBLE));
        double x = som_imm_double(a), y = som_imm_double(b);
        double d = op == AR_ADD ? x + y : op == AR_SUB ? x - y : x * y;
        if (dout) {
            *dout = d;
            return 2;
        }
        *out = fast_new_double(vm, d);
        return 1;
    }
    if (num_is_double(a) && (num_is_double(b) || som_is_int(b))) {
        feedback(fb, TF_BIT(TF_DOUBLE, som_is_int(b) ? TF_INT : TF_DOUBLE));
        double x = fast_double(a), y = fast_double(b);
        *out = fast_new_double(vm, op == AR_ADD ? x + y : op == AR_SUB ? x - y : x * y);
        return 1;
    }
    return 0;
}

/* The instructions the loop's double chain (dchain in interp_loop.h) continues with, and the
 * arithmetic of each: one table load instead of a row of compares per step. */
enum { DK_NONE, DK_STACK, DK_LOCAL2 };
static const uint8_t dchain_kind[256] = {
    [BC_ADD] = DK_STACK,
    [BC_SUB] = DK_STACK,
    [BC_MUL] = DK_STACK,
    [BC_ADD_STORE] = DK_STACK,
    [BC_SUB_STORE] = DK_STACK,
    [BC_MUL_STORE] = DK_STACK,
    [BC_PUSH_LOCAL2_ADD] = DK_LOCAL2,
    [BC_PUSH_LOCAL2_SUB] = DK_LOCAL2,
    [BC_PUSH_LOCAL2_MUL] = DK_LOCAL2,
};
_Static_assert(BC_PUSH_LOCAL_SEND1 == BC_PUSH_LOCAL_SEND0 + 1 && BC_SEND1 == BC_SEND0 + 1 &&
                   BC_SEND2 == BC_SEND0 + 2,
               "quicken picks the send forms by argument count");
_Static_assert(BC_PUSH_LOCAL_SUB == BC_PUSH_LOCAL_ADD + 1 &&
                   BC_PUSH_LOCAL_MUL == BC_PUSH_LOCAL_ADD + 2,
               "dchain tests PUSH_LOCAL_ADD/SUB/MUL as a range");
static const uint8_t dchain_arith[256] = {
    [BC_SUB] = AR_SUB,
    [BC_MUL] = AR_MUL,
    [BC_SUB_STORE] = AR_SUB,
    [BC_MUL_STORE] = AR_MUL,
    [BC_PUSH_LOCAL2_SUB] = AR_SUB,
    [BC_PUSH_LOCAL2_MUL] = AR_MUL, /* the others: AR_ADD (0) */
};
static inline __attribute__((always_inline)) double dchain_op(unsigned op, double x, double y) {
    unsigned a = dchain_arith[op];
    return a == AR_ADD ? x + y : a == AR_SUB ? x - y : x * y;
}

enum { CMP_LT, CMP_GT, CMP_LE, CMP_GE, CMP_EQ };

/* The fast paths of LT, GT, LE, GE and EQ (same operand kinds as arith_fast).
 * Answers -1 when the real send must run, else the truth of `a op b`. */
static inline __attribute__((always_inline)) int compare_fast(int op, Value a, Value b,
                                                              uint32_t *fb) {
    if (LIKELY(a & b & 1)) {
        feedback(fb, TF_BIT(TF_INT, TF_INT));
        int64_t x = (int64_t)a, y = (int64_t)b; /* tagging keeps the order */
        return op == CMP_LT   ? x < y
               : op == CMP_GT ? x > y
               : op == CMP_LE ? x <= y
               : op == CMP_GE ? x >= y
                              : x == y;
    }
    if (LIKELY((((a ^ 2) | (b ^ 2)) & 3) == 0)) { /* two immediate doubles */
        feedback(fb, TF_BIT(TF_DOUBLE, TF_DOUBLE));
        double x = som_imm_double(a), y = som_imm_double(b);
        return op == CMP_LT   ? x < y
               : op == CMP_GT ? x > y
               : op == CMP_LE ? x <= y
               : op == CMP_GE ? x >= y
                              : x == y;
    }
    if (num_is_double(a) && (num_is_double(b) || som_is_int(b))) {
        feedback(fb, TF_BIT(TF_DOUBLE, som_is_int(b) ? TF_INT : TF_DOUBLE));
        double x = fast_double(a), y = fast_double(b);
        return op == CMP_LT   ? x < y
               : op == CMP_GT ? x > y
               : op == CMP_LE ? x <= y
               : op == CMP_GE ? x >= y
                              : x == y;
    }
    return -1;
}

/* `a = b` at site cs whose first entry is a's class with the string primitive as its `=` (String,
 * Symbol): answered here as str_prim_eq answers it (no send, no primitive call; like Array>>at:
 * it counts as interpreting); -1 when that does not apply. */
static inline __attribute__((always_inline)) int str_eq_fast(const SomVM *vm, const CallSite *cs,
                                                             Value a, Value b) {
    if (!som_is_obj(a) || som_hdr(a)->cls != cs->ic[0].cls || vm->prims_all) return -1;
    unsigned ka = som_hdr(a)->kind;
    if ((ka != OBJ_STRING && ka != OBJ_SYMBOL) || cs->ic[0].method->prim != str_prim_eq) return -1;
    if (a == b) return 1;
    if (!som_is_obj(b)) return 0;
    unsigned kb = som_hdr(b)->kind;
    if (kb != OBJ_STRING && kb != OBJ_SYMBOL) return 0;
    return som_string_equal((const SomString *)a, (const SomString *)b);
}

/* The number of arguments of the SEND at s (its call site's); 255 when unknown. */
static unsigned send_nargs(const SomMethod *m, const uint8_t *s) {
    unsigned k = u16_at(s + 1);
    return m->sites && k < m->nsites ? m->sites[k].nargs : 255;
}

/* Makes m's quickened copy of its code (bytecode.h: only the first opcode of
 * a fused sequence changes). Answers it. */
static const uint8_t *quicken(SomMethod *m) {
    const uint8_t *c = m->code;
    uint32_t len = m->code_len;
    uint8_t *q = malloc(len ? len : 1);
    if (!q) abort();
    memcpy(q, c, len);
    for (uint32_t pc = 0; pc < len; pc += 1 + som_bc_len[c[pc]]) {
        uint32_t p1 = pc + 1 + som_bc_len[c[pc]];
        int b = p1 < len ? c[p1] : -1;
        uint32_t p2 = b >= 0 ? p1 + 1 + som_bc_len[b] : len;
        int d = p2 < len ? c[p2] : -1;
        switch (c[pc]) {
        case BC_PUSH_LOCAL:
            if (b == BC_PUSH_INT && (d == BC_ADD || d == BC_SUB) && p2 + 3 < len &&
                c[p2 + 3] == BC_STORE_LOCAL) /* `x := y + c` */
                q[pc] = d == BC_ADD ? BC_PUSH_LOCAL_ADDI_ST : BC_PUSH_LOCAL_SUBI_ST;
            else if (b == BC_PUSH_INT && d == BC_ADD)
                q[pc] = BC_PUSH_LOCAL_ADDI;
            else if (b == BC_PUSH_INT && d == BC_SUB)
                q[pc] = BC_PUSH_LOCAL_SUBI;
            else if (b == BC_PUSH_INT)
                q[pc] = BC_PUSH_LOCAL_INT;
            else if (b == BC_PUSH_LOCAL && (d == BC_ADD || d == BC_SUB) && p2 + 3 < len &&
                     c[p2 + 3] == BC_STORE_LOCAL) /* `x := y + z` */
                q[pc] = d == BC_ADD ? BC_PUSH_LOCAL2_ADD_ST : BC_PUSH_LOCAL2_SUB_ST;
            else if (b == BC_PUSH_LOCAL && (d == BC_ADD || d == BC_SUB || d == BC_MUL))
                q[pc] = d == BC_ADD   ? BC_PUSH_LOCAL2_ADD
                        : d == BC_SUB ? BC_PUSH_LOCAL2_SUB
                                      : BC_PUSH_LOCAL2_MUL;
            else if (b == BC_PUSH_LOCAL && d >= BC_LT && d <= BC_EQ && p2 + 3 < len &&
                     c[p2 + 3] == BC_JUMP_IF_FALSE)
                q[pc] = BC_PUSH_LOCAL2_CJF;
            else if (b == BC_PUSH_LOCAL && !(d == BC_PUSH_INT && p2 + 2 < len &&
                                             (c[p2 + 2] == BC_ADD || c[p2 + 2] == BC_SUB)))
                q[pc] = BC_PUSH_LOCAL2; /* unless the next one starts PUSH_LOCAL_ADDI/SUBI */
            else if (b == BC_SEND)
                q[pc] = send_nargs(m, c + p1) < 2
                            ? (uint8_t)(BC_PUSH_LOCAL_SEND0 + send_nargs(m, c + p1))
                            : BC_PUSH_LOCAL_SEND;
            else if (b == BC_ADD)
                q[pc] = BC_PUSH_LOCAL_ADD;
            else if (b == BC_SUB)
                q[pc] = BC_PUSH_LOCAL_SUB;
            else if (b == BC_MUL)
                q[pc] = BC_PUSH_LOCAL_MUL;
            else if (b == BC_JUMP_IF_FALSE)
                q[pc] = BC_PUSH_LOCAL_JF;
            break;
        case BC_PUSH_NIL:
            if (b == BC_STORE_LOCAL) q[pc] = BC_PUSH_NIL_STORE;
            break;
        case BC_JUMP: { /* to a return: return here (`^c ifTrue: [..] ifFalse: [..]`) */
            uint32_t t = pc + 3 + u16_at(c + pc + 1);
            if (t < len && c[t] == BC_RETURN_LOCAL) q[pc] = BC_JUMP_RETURN;
            break;
        }
        case BC_SEND:
            if (send_nargs(m, c + pc) <= 2) q[pc] = (uint8_t)(BC_SEND0 + send_nargs(m, c + pc));
            break;
        case BC_STORE_LOCAL:
            if (b == BC_PUSH_LOCAL) q[pc] = BC_STORE_PUSH_LOCAL;
            break;
        case BC_ADD:
        case BC_SUB:
        case BC_MUL:
            if (b == BC_STORE_LOCAL)
                q[pc] = c[pc] == BC_ADD   ? BC_ADD_STORE
                        : c[pc] == BC_SUB ? BC_SUB_STORE
                                          : BC_MUL_STORE;
            break;
        case BC_LT:
        case BC_GT:
        case BC_LE:
        case BC_GE:
        case BC_EQ:
            if (b == BC_JUMP_IF_FALSE) {
                q[pc] = (uint8_t)(BC_LT_JF + (c[pc] - BC_LT));
            } else if (b == BC_JUMP && p1 + 2 < len) {
                uint32_t t = p1 + 3 + u16_at(c + p1 + 1); /* the jump's target */
                if (t < len && c[t] == BC_JUMP_IF_FALSE)
                    q[pc] = (uint8_t)(BC_LT_JJF + (c[pc] - BC_LT));
            }
            break;
        default:
            break;
        }
    }
    m->qcode = q;
    return q;
}

const uint8_t *interp_qcode(SomMethod *m) {
    return m->qcode ? m->qcode : quicken(m);
}

/* ---- the JIT's part of the loop (vm.h hooks, jitabi.h entry), out of line so that the
 * loop's register allocation stays as it is without a JIT ---- */

/* What the loop does after jit_activation. */
enum { JA_INTERPRET, JA_RETURN, JA_EXIT, JA_UNWIND };
typedef struct JitAct {
    int32_t action;
    int32_t home; /* JA_UNWIND: the frame index the non-local return goes to */
    Value value;  /* JA_RETURN: the activation's result; JA_UNWIND: the ^'s value */
} JitAct;

/* At an activation (fp = frames[vm->top], context made, vm->sp above its locals): runs the
 * JIT hooks and, when m->jit may be entered (jitabi.h), runs the compiled activation and
 * says how it ended.  A non-local return arriving here is taken over (nlr_target cleared). */
static __attribute__((noinline)) JitAct jit_activation(SomVM *vm, SomFrame *fp) {
    SomMethod *m = fp->method;
    fp->backedges = 0;
    if (vm->jit_hook) {
        if (vm->jit_tick) {
            vm->jit_tick = 0;
            vm->jit_hook(vm, m, SOM_JIT_TICK);
        }
        if (vm->jit_eager && !m->jit)
            vm->jit_hook(vm, m, SOM_JIT_EAGER);
        else if (!m->jit && vm->jit_threshold && m->invocations % vm->jit_threshold == 0)
            vm->jit_hook(vm, m, SOM_JIT_COUNT);
    }
    const SomJitCode *code = m->jit;
    if (!code || !vm->jit || code->invalid || vm->exact_hooks ||
        (char *)__builtin_frame_address(0) < vm->cstack_limit)
        return (JitAct){JA_INTERPRET, -1, 0};
    fp->jit_pos = JIT_POS_NONE;
    fp->jit = code;
    som_set_state(vm, VMS_COMPILED);
    Value r = code->entry(vm, fp);
    som_set_state(vm, VMS_INTERP);
    if (r) return (JitAct){JA_RETURN, -1, r};
    if (vm->exiting) return (JitAct){JA_EXIT, -1, 0};
    /* a non-local return is unwinding (jitabi.h): to this activation or below it */
    int32_t home = vm->nlr_target;
    vm->nlr_target = -1;
    return (JitAct){home == (int32_t)(fp - vm->frames) ? JA_RETURN : JA_UNWIND, home,
                    vm->nlr_value};
}

int interp_jit_enter(SomVM *vm, SomFrame *fp, Value *result, int32_t *home) {
    JitAct a = jit_activation(vm, fp);
    *result = a.value;
    *home = a.home;
    return a.action == JA_INTERPRET ? INTERP_JIT_INTERPRET
           : a.action == JA_RETURN  ? INTERP_JIT_RETURN
           : a.action == JA_EXIT    ? INTERP_JIT_EXIT
                                    : INTERP_JIT_UNWIND;
}

/* At a back edge of an interpreted activation (fp->bci the loop head, vm->sp saved). */
static __attribute__((noinline)) void jit_backedge_hooks(SomVM *vm, SomFrame *fp) {
    if (!vm->jit_hook) return;
    if (vm->jit_tick) {
        vm->jit_tick = 0;
        vm->jit_hook(vm, fp->method, SOM_JIT_TICK);
    }
    if (vm->jit_loop_threshold && ++fp->backedges >= vm->jit_loop_threshold) {
        fp->backedges = 0;
        vm->jit_hook(vm, fp->method, SOM_JIT_LOOP);
    }
}

static bool is_symbol(Value v) {
    return som_is_obj(v) && som_hdr(v)->kind == OBJ_SYMBOL;
}
static bool is_array(Value v) {
    return som_is_obj(v) && som_hdr(v)->kind == OBJ_ARRAY;
}

#define INTERP_FEEDBACK 1
#define INTERP_FN interp_run_call
#define INTERP_JIT_ENTRIES 0
#include "interp_loop.h"
#undef INTERP_FN
#undef INTERP_JIT_ENTRIES

#define INTERP_FN interp_run_jit
#define INTERP_JIT_ENTRIES 1
#include "interp_loop.h"
#undef INTERP_FN
#undef INTERP_JIT_ENTRIES
#undef INTERP_FEEDBACK

/* The lean copy: records no type feedback and no inline-cache hit counts, for a VM whose
 * options say nobody reads them (SomOptions.no_feedback, without a JIT).  About 3% fewer
 * instructions on AWFY, 11% on Mandelbrot (docs/performance.md). */
#define INTERP_FEEDBACK 0
#define INTERP_FN interp_run_call_lean
#define INTERP_JIT_ENTRIES 0
#include "interp_loop.h"
#undef INTERP_FN
#undef INTERP_JIT_ENTRIES
#undef INTERP_FEEDBACK

static bool interp_lean(const SomVM *vm) {
    return vm && vm->opts.no_feedback && !vm->opts.dump_feedback && !vm->jit && !vm->jit_hook;
}

int interp_run(SomVM *vm, InterpEntry *e) {
    if (e->mode != IM_CALL) return interp_run_jit(vm, e);
    return interp_lean(vm) ? interp_run_call_lean(vm, e) : interp_run_call(vm, e);
}
