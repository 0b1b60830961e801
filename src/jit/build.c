/* SPDX-License-Identifier: MIT */
/*
 * build.c - bytecode + feedback -> SSA IR, with inlining (compile.h: jit_build).
 *
 * Each activation being compiled (the root and every inlined method or block body) is a
 * Scope: an abstract interpretation of its bytecode over an array of IR values, slots first
 * (receiver or block, arguments, locals) then the operand stack.  Instructions are visited in
 * bci order; basic blocks start at jump targets.  Every edge into a block records a snapshot
 * of the values (Pend); a block with several predecessors gets phis where they differ, a
 * loop header (target of JUMP_BACK / INC_LOCAL_JLE) gets a phi for every value at once,
 * its back-edge inputs filled when the back edge is translated.  Trivial phis are removed at
 * the end.  Captured variables live in heap contexts, so a scope's SSA values are only its
 * own slots and stack: a caller's values stay fixed while an inlined callee is translated.
 *
 * Conventions chosen where ir.h leaves room (also in the report):
 *  - Unboxed values stay unboxed: PUSH_INT and integer literals are CONST_INT, integer fast
 *    paths answer JT_INT, double ones JT_DBL, comparisons JT_BOOL.  Values are boxed
 *    explicitly (BOX_INT, BOX_DBL, BOOL_TO_VALUE) by the builder where a VALUE is needed
 *    (send operands, stores, RETURN, phis of mixed types): the backend never boxes, except
 *    that frame states name unboxed values directly (boxed by type at deoptimization).
 *  - Phis: at a merge, a phi has the type of its inputs when they all agree, else VALUE with
 *    the inputs boxed at the end of the predecessors.  A loop-header phi takes the type of
 *    its forward inputs (INT or DBL stay unboxed, BOOL becomes VALUE); when a back edge then
 *    brings another type the whole build restarts with that phi forced to VALUE.
 *  - Frame states: the slot value -1 is never used; nil is the entry block's CONST nil.
 *    A state's innermost scope has bci = resume_bci = the instruction that deoptimizes;
 *    callers have bci = the pending send and resume_bci = the next instruction.
 *  - Positions: one per (scope, bci) used; the root's have parent JIT_POS_NONE; an inlined
 *    scope's parent is its caller's position at the send.  SET_POS at an inlined
 *    activation's start (callee, bci 0) and after its end (the caller at the send).
 *  - An inlined method with nctx > 0 makes its context with NEW_CONTEXT (ival 0, outer -1);
 *    an inlined block with nctx > 0 with NEW_CONTEXT(outer = the closure's context).
 *
 * Inlining rule (hotness): a callee at an inline-cache entry is inlined when it is tiny
 * (<= tiny_size, 24 bytecode bytes: the call costs more than the body) or hot in this
 * context: with a profile of at least 20 samples of the root, its edge weight caller@bci ->
 * callee is surely (beyond sampling noise, sampled_hot) at least 1/50 of the root's weight;
 * without one, with too few samples, or with a weight too close to 1/50 to tell, its cache
 * entry has at least 1/8 of the site's hits or inline_hits (1024) of them: a share alone
 * follows the program's phase at the moment of compiling.  A small callee (<= small_calls,
 * 48 bytes) with inline_hits cache hits is inlined even where its samples say cold: its
 * samples were taken in code that had it inlined (or cheap), so they cannot show the calls
 * that inlining saves (Richards' TaskState>>isWaitingWithPacket, 29 bytes, 194000 calls,
 * 14 of 1328 samples: a send in 2 of 8 runs, which then ran 20% longer).  Size, depth and recursion
 * limits always apply; the total budget is spent on the most frequent activations first
 * (plan_inlining).  SOM_JIT_TRACE_INLINE prints each decision with its reason (trace_decision).
 */
#include "compile.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytecode.h"
#include "class.h"
#include "feedback.h"

#define MAX_RESTARTS 16

typedef struct Pend {
    int32_t block;
    uint32_t sp, pos;
    JitRef *vals;
    struct Pend *next;
} Pend;

typedef struct Merge {
    int32_t target;
    uint32_t n, cap, pos;
    JitRef *vals;
    int32_t *preds;
} Merge;

typedef struct Scope {
    struct Scope *caller, *home; /* home: the method scope a block's ^ returns from */
    SomMethod *m;
    uint32_t serial, depth;
    JitRef self, ctx, blk; /* blk: the block object (slot 0) of a block scope, else -1 */
    SomClass *self_cls;    /* the receiver's class when known, else NULL */
    uint32_t nslots, cap;
    JitRef *vals, *pre; /* current values, and as they were at the instruction's start */
    uint32_t sp, pre_sp;
    uint32_t bci, next_bci;
    int32_t cur;        /* current block, -1 = unreachable */
    int32_t state_memo; /* frame state of the current instruction, -1 = none yet */
    uint32_t *posmemo;  /* per bci */
    uint32_t pos_parent;
    uint32_t send_nargs, send_bci, send_resume; /* the pending send while a callee runs */
    int32_t *bb;                                /* per bci: its block, -1 = none yet */
    uint8_t *leader, *loophead, *started;
    uint16_t *nback;   /* back edges into a loop header */
    uint32_t *loopend; /* loop header: the last back edge's bci */
    uint32_t *hsp;     /* loop header: operand stack depth */
    uint64_t *live;    /* per bci, 4 words: locals read before written from there on */
    JitRef **hphi;     /* loop header's phis */
    Pend **pend, **pend_tail;
    Merge ret;
    bool active, is_block, root;
    uint64_t key; /* the inlining path from the root (inline_key), 0 for the root */
    double freq;  /* estimated activations per activation of the root (1 for the root) */
    int32_t cand; /* its entry in B.cands, -1 for the root */
} Scope;

/* An inlined activation seen by the first pass of a build whose inlining outgrew the budget
 * (plan_inlining). */
typedef struct Cand {
    uint64_t key;
    const SomMethod *m;
    int32_t parent; /* index of the caller's Cand, -1 = the root */
    uint32_t bytes;
    int bin; /* freq_bin(freq) */
    double freq;
} Cand;

typedef struct B {
    SomVM *vm;
    JitFunc *f;
    const JitBuildOpts *o;
    char *err;
    size_t errlen;
    bool failed, restart;
    JitRef nil, tru, fls, zero;
    uint32_t serial, total;
    uint64_t *forced;
    uint32_t nforced, forced_cap;
    Scope **blk_scope; /* NEW_BLOCK id -> the scope that made it */
    uint32_t blk_cap;
    /* The inlining budget (max_total_size) spent by frequency: the first pass inlines up to
     * a multiple of it, recording cands; the second inlines only the keys of plan. */
    uint32_t cap;
    Cand *cands;
    uint32_t ncands, cands_cap;
    uint64_t *plan; /* sorted */
    uint32_t nplan;
    char *tbuf; /* SOM_JIT_TRACE_INLINE lines of the current pass, printed for the last one */
    size_t tlen;
    FILE *tr;
    char *pbuf; /* and plan_inlining's, printed before them */
    size_t plen;
} B;

static void fail(B *b, const char *reason) {
    if (!b->failed) snprintf(b->err, b->errlen, "%s", reason);
    b->failed = true;
}

static inline unsigned w_at(const uint8_t *c) {
    return (unsigned)c[0] | ((unsigned)c[1] << 8);
}

/* ---- emission helpers --------------------------------------------------------------------- */

static JitInst *I(B *b, JitRef r) {
    return &b->f->insts[r];
}

static int ty(B *b, JitRef r) {
    return b->f->insts[r].type;
}

static JitRef emit(B *b, Scope *s, JitOp op, int n, JitRef a0, JitRef a1, JitRef a2) {
    JitRef r = jit_emit(b->f, s->cur, op);
    JitInst *in = I(b, r);
    in->nargs = (uint8_t)n;
    in->a[0] = a0;
    in->a[1] = a1;
    in->a[2] = a2;
    return r;
}

static uint32_t cur_pos(B *b, Scope *s) {
    if (s->posmemo[s->bci] == JIT_POS_NONE)
        s->posmemo[s->bci] = jit_pos_new(b->f, s->m, s->bci, s->pos_parent);
    return s->posmemo[s->bci];
}

static JitRef const_val(B *b, Scope *s, Value v) {
    if (som_is_int(v)) {
        JitRef r = emit(b, s, JI_CONST_INT, 0, -1, -1, -1);
        I(b, r)->ival = som_int(v);
        return r;
    }
    if (som_is_imm_double(v)) { /* a boxed literal stays CONST: its identity is visible */
        JitRef r = emit(b, s, JI_CONST_DBL, 0, -1, -1, -1);
        I(b, r)->dval = som_imm_double(v);
        return r;
    }
    if (v == b->vm->nil) return b->nil;
    if (v == b->vm->true_) return b->tru;
    if (v == b->vm->false_) return b->fls;
    JitRef r = emit(b, s, JI_CONST, 0, -1, -1, -1);
    I(b, r)->cval = v;
    return r;
}

/* v as a tagged VALUE, boxed here when it is unboxed. */
static JitRef as_value(B *b, Scope *s, JitRef v) {
    JitInst *in = I(b, v);
    switch (in->type) {
    case JT_INT:
        if (in->op == JI_CONST_INT) {
            JitRef r = emit(b, s, JI_CONST, 0, -1, -1, -1);
            I(b, r)->cval = som_mkint(I(b, v)->ival);
            return r;
        }
        return emit(b, s, JI_BOX_INT, 1, v, -1, -1);
    case JT_DBL: {
        Value imm;
        if (in->op == JI_CONST_DBL && som_try_imm_double(in->dval, &imm)) {
            JitRef r = emit(b, s, JI_CONST, 0, -1, -1, -1);
            I(b, r)->cval = imm;
            return r;
        }
        JitRef r = emit(b, s, JI_BOX_DBL, 1, v, -1, -1);
        I(b, r)->pos = cur_pos(b, s);
        return r;
    }
    case JT_BOOL:
        return emit(b, s, JI_BOOL_TO_VALUE, 1, v, -1, -1);
    default:
        return v;
    }
}

/* Boxes v at the end of block blk (before its terminator). */
static JitRef box_in(B *b, int32_t blk, JitRef v, uint32_t pos) {
    int t = ty(b, v);
    if (t == JT_VALUE) return v;
    JitOp op = t == JT_INT ? JI_BOX_INT : t == JT_DBL ? JI_BOX_DBL : JI_BOOL_TO_VALUE;
    JitRef r = jit_emit_before_term(b->f, blk, op);
    JitInst *in = I(b, r);
    in->nargs = 1;
    in->a[0] = v;
    if (op == JI_BOX_DBL) in->pos = pos;
    return r;
}

/* A truth value as a BOOL at the end of block blk: v is BOOL, or the constant true/false
 * (there is no BOOL constant: ICMP of a constant with itself, which folds). */
static JitRef bool_in(B *b, int32_t blk, JitRef v) {
    if (ty(b, v) == JT_BOOL) return v;
    JitRef z = jit_emit_before_term(b->f, blk, JI_CONST_INT);
    JitRef c = jit_emit_before_term(b->f, blk, JI_ICMP);
    JitInst *in = I(b, c);
    in->nargs = 2;
    in->a[0] = in->a[1] = z;
    in->cmp = v == b->tru ? JC_EQ : JC_NE;
    return c;
}

/* Can v be merged as a BOOL (a BOOL, or the constant true or false)? */
static bool boolish(B *b, JitRef v) {
    return ty(b, v) == JT_BOOL || v == b->tru || v == b->fls;
}

static int32_t new_block(B *b) {
    return jit_block_new(b->f);
}

static void jump(B *b, Scope *s, int32_t to) {
    emit(b, s, JI_JUMP, 0, -1, -1, -1);
    jit_add_edge(b->f, s->cur, to);
    s->cur = -1;
}

static void branch(B *b, Scope *s, JitRef cond, int32_t t, int32_t f) {
    emit(b, s, JI_BRANCH, 1, cond, -1, -1);
    jit_add_edge(b->f, s->cur, t);
    jit_add_edge(b->f, s->cur, f);
    s->cur = -1;
}

/* ---- frame states ------------------------------------------------------------------------ */

static JitStateVal *copy_vals(B *b, const JitRef *v, uint32_t n) {
    JitStateVal *o = jit_alloc(b->f, (n ? n : 1) * sizeof *o);
    memcpy(o, v, n * sizeof *o);
    return o;
}

static int32_t make_state(B *b, Scope *s) {
    if (s->state_memo >= 0) return s->state_memo;
    uint32_t n = 0;
    for (Scope *x = s; x; x = x->caller)
        n++;
    int32_t id = jit_state_new(b->f, n);
    JitState *st = &b->f->states[id];
    uint32_t k = n;
    for (Scope *x = s; x; x = x->caller) {
        JitStateScope *sc = &st->scopes[--k];
        sc->method = x->m;
        sc->self = x->self;
        sc->ctx = x->ctx;
        sc->nslots = x->nslots;
        sc->slots = copy_vals(b, x->pre, x->nslots);
        if (x == s) {
            sc->bci = sc->resume_bci = x->bci;
            sc->nstack = x->pre_sp;
        } else {
            sc->bci = x->send_bci;
            sc->resume_bci = x->send_resume;
            sc->nstack = x->pre_sp - x->send_nargs;
        }
        sc->stack = copy_vals(b, x->pre + x->nslots, sc->nstack);
    }
    return s->state_memo = id;
}

static JitRef guard(B *b, Scope *s, JitRef cond, int reason) {
    JitRef g = emit(b, s, JI_GUARD, 1, cond, -1, -1);
    JitInst *in = I(b, g);
    in->deopt = make_state(b, s);
    in->reason = (uint8_t)reason;
    in->pos = cur_pos(b, s);
    return g;
}

static void deopt_here(B *b, Scope *s, int reason) {
    JitRef d = emit(b, s, JI_DEOPT, 0, -1, -1, -1);
    JitInst *in = I(b, d);
    in->deopt = make_state(b, s);
    in->reason = (uint8_t)reason;
    in->pos = cur_pos(b, s);
    s->cur = -1;
}

/* A guarded integer operation (overflow or zero divisor deoptimizes). */
static JitRef guarded_op(B *b, Scope *s, JitOp op, JitRef x, JitRef y, int reason) {
    JitRef r = emit(b, s, op, 2, x, y, -1);
    JitInst *in = I(b, r);
    in->deopt = make_state(b, s);
    in->reason = (uint8_t)reason;
    in->pos = cur_pos(b, s);
    return r;
}

/* Replaces old by new in the scope's current values (after a guard proved them equal). */
static void refine(Scope *s, JitRef old, JitRef new) {
    for (uint32_t j = 0; j < s->nslots + s->sp; j++)
        if (s->vals[j] == old) s->vals[j] = new;
}

static JitRef as_int(B *b, Scope *s, JitRef v) {
    if (ty(b, v) == JT_INT) return v;
    JitInst *in = I(b, v);
    if (in->op == JI_CONST && som_is_int(in->cval)) return const_val(b, s, in->cval);
    JitRef vv = as_value(b, s, v);
    guard(b, s, emit(b, s, JI_IS_INT, 1, vv, -1, -1), JDR_TYPE);
    JitRef u = emit(b, s, JI_UNBOX_INT, 1, vv, -1, -1);
    refine(s, v, u);
    return u;
}

/* v as a double; may_int / may_dbl: what the feedback says it can be when it is a VALUE. */
static JitRef as_dbl(B *b, Scope *s, JitRef v, bool may_int, bool may_dbl) {
    if (ty(b, v) == JT_DBL) return v;
    if (ty(b, v) == JT_INT) return emit(b, s, JI_INT_TO_DBL, 1, v, -1, -1);
    JitRef vv = as_value(b, s, v);
    if (may_int && !may_dbl) {
        JitRef i = as_int(b, s, vv);
        return emit(b, s, JI_INT_TO_DBL, 1, i, -1, -1);
    }
    if (!may_int) {
        guard(b, s, emit(b, s, JI_IS_DBL, 1, vv, -1, -1), JDR_TYPE);
        JitRef u = emit(b, s, JI_UNBOX_DBL, 1, vv, -1, -1);
        refine(s, v, u);
        return u;
    }
    /* either: test for an integer first */
    int32_t ti = new_block(b), td = new_block(b), j = new_block(b);
    branch(b, s, emit(b, s, JI_IS_INT, 1, vv, -1, -1), ti, td);
    s->cur = ti;
    JitRef a = emit(b, s, JI_INT_TO_DBL, 1, emit(b, s, JI_UNBOX_INT, 1, vv, -1, -1), -1, -1);
    jump(b, s, j);
    s->cur = td;
    guard(b, s, emit(b, s, JI_IS_DBL, 1, vv, -1, -1), JDR_TYPE);
    JitRef d = emit(b, s, JI_UNBOX_DBL, 1, vv, -1, -1);
    jump(b, s, j);
    s->cur = j;
    JitRef p = emit(b, s, JI_PHI, 0, -1, -1, -1);
    I(b, p)->type = JT_DBL;
    I(b, p)->phi = jit_alloc(b->f, 2 * sizeof(JitRef));
    I(b, p)->phi[0] = a;
    I(b, p)->phi[1] = d;
    return p;
}

/* ---- merges inside one bytecode instruction (returns, polymorphic sends, and:/or:) --------- */

static void merge_add(B *b, Scope *s, Merge *m, JitRef v) {
    if (s->cur < 0) return;
    if (m->target < 0) m->target = new_block(b);
    if (m->n == m->cap) {
        uint32_t nc = m->cap ? m->cap * 2 : 4;
        JitRef *nv = jit_alloc(b->f, nc * sizeof *nv);
        int32_t *np = jit_alloc(b->f, nc * sizeof *np);
        if (m->n) {
            memcpy(nv, m->vals, m->n * sizeof *nv);
            memcpy(np, m->preds, m->n * sizeof *np);
        }
        m->vals = nv;
        m->preds = np;
        m->cap = nc;
    }
    m->vals[m->n] = v;
    m->preds[m->n++] = s->cur;
    m->pos = cur_pos(b, s);
    jump(b, s, m->target);
}

/* Continues in the merge block (s->cur = -1 when nothing reached it); answers the value. */
static JitRef merge_finish(B *b, Scope *s, Merge *m) {
    if (!m->n) {
        s->cur = -1;
        return b->nil;
    }
    s->cur = m->target;
    int t = ty(b, m->vals[0]);
    bool same = true, bools = true;
    for (uint32_t i = 0; i < m->n; i++) {
        if (ty(b, m->vals[i]) != t) t = JT_VALUE;
        same &= m->vals[i] == m->vals[0];
        bools &= boolish(b, m->vals[i]);
    }
    if (same) return m->vals[0];
    if (bools) t = JT_BOOL;
    JitRef p = emit(b, s, JI_PHI, 0, -1, -1, -1);
    JitRef *in = jit_alloc(b->f, m->n * sizeof *in);
    for (uint32_t i = 0; i < m->n; i++)
        in[i] = t == JT_VALUE  ? box_in(b, m->preds[i], m->vals[i], m->pos)
                : t == JT_BOOL ? bool_in(b, m->preds[i], m->vals[i])
                               : m->vals[i];
    I(b, p)->type = (uint8_t)t;
    I(b, p)->phi = in;
    return p;
}

/* ---- edges between bytecode blocks ------------------------------------------------------- */

static bool is_forced(B *b, uint64_t key) {
    for (uint32_t i = 0; i < b->nforced; i++)
        if (b->forced[i] == key) return true;
    return false;
}

static uint64_t phi_key(Scope *s, uint32_t bci, uint32_t j) {
    return ((uint64_t)s->serial << 40) | ((uint64_t)bci << 16) | j;
}

static void force(B *b, uint64_t key) {
    if (b->nforced == b->forced_cap) {
        b->forced_cap = b->forced_cap ? b->forced_cap * 2 : 16;
        b->forced = realloc(b->forced, b->forced_cap * sizeof *b->forced);
        if (!b->forced) abort();
    }
    b->forced[b->nforced++] = key;
    b->restart = true;
}

static int32_t block_for(B *b, Scope *s, uint32_t bci) {
    if (s->bb[bci] < 0) s->bb[bci] = new_block(b);
    return s->bb[bci];
}

/* Ends the current block with a jump to bytecode `target`. */
static void jump_bci(B *b, Scope *s, uint32_t target) {
    if (s->cur < 0) return;
    uint32_t n = s->nslots + s->sp;
    if (s->started[target]) { /* a back edge into a loop header */
        if (!s->loophead[target]) {
            fail(b, "irreducible control flow");
            return;
        }
        JitRef *phis = s->hphi[target];
        JitBlock *hb = &b->f->blocks[s->bb[target]];
        if (s->hsp[target] != s->sp) {
            fail(b, "stack depth differs at a loop header");
            return;
        }
        JitRef *in = jit_alloc(b->f, (n ? n : 1) * sizeof *in);
        for (uint32_t j = 0; j < n; j++) {
            JitRef v = s->vals[j];
            if (phis[j] < 0) continue;
            int pt = ty(b, phis[j]);
            if (ty(b, v) != pt) {
                if (pt != JT_VALUE) {
                    force(b, phi_key(s, target, j));
                    return;
                }
                v = as_value(b, s, v);
            }
            in[j] = v;
        }
        uint32_t k = hb->npreds;
        jump(b, s, s->bb[target]);
        for (uint32_t j = 0; j < n; j++)
            if (phis[j] >= 0) I(b, phis[j])->phi[k] = in[j];
        return;
    }
    if (target < s->bci || target >= s->m->code_len) {
        fail(b, "irreducible control flow");
        return;
    }
    Pend *p = jit_alloc(b->f, sizeof *p);
    p->sp = s->sp;
    p->vals = copy_vals(b, s->vals, n);
    p->pos = cur_pos(b, s);
    p->block = s->cur;
    if (s->pend_tail[target])
        s->pend_tail[target]->next = p;
    else
        s->pend[target] = p;
    s->pend_tail[target] = p;
    jump(b, s, block_for(b, s, target));
}

/* Which slots the loop starting at bci may change (STORE_LOCAL, INC_LOCAL_JLE). */
static uint8_t *loop_writes(B *b, Scope *s, uint32_t bci) {
    uint8_t *w = jit_alloc(b->f, s->nslots + 1);
    const uint8_t *c = s->m->code;
    for (uint32_t pc = bci; pc <= s->loopend[bci] && pc < s->m->code_len;
         pc += 1 + som_bc_len[c[pc]]) {
        if (c[pc] == BC_STORE_LOCAL && c[pc + 1] < s->nslots) w[c[pc + 1]] = 1;
        if (c[pc] == BC_INC_LOCAL_JLE && c[pc + 1] < s->nslots) w[c[pc + 1]] = 1;
    }
    return w;
}

static bool live_at(Scope *s, uint32_t bci, uint32_t j) {
    return (s->live[bci * 4 + j / 64] >> (j % 64)) & 1;
}

/* Backward liveness of the slots over the bytecode (a local that is written before it is
 * read needs no phi: at a merge its value is nil in the frame states). */
static void liveness(B *b, Scope *s) {
    const uint8_t *c = s->m->code;
    uint32_t len = s->m->code_len, n = 0;
    uint32_t *pcs = jit_alloc(b->f, (len + 1) * sizeof *pcs);
    s->live = jit_alloc(b->f, (len + 1) * 4 * sizeof *s->live);
    for (uint32_t pc = 0; pc < len; pc += 1 + som_bc_len[c[pc]])
        pcs[n++] = pc;
    bool changed = true;
    while (changed) {
        changed = false;
        for (uint32_t k = n; k-- > 0;) {
            uint32_t pc = pcs[k], next = pc + 1 + som_bc_len[c[pc]];
            uint64_t out[4] = {0}, in[4];
            uint32_t succ[4];
            int ns = 0;
            switch (c[pc]) {
            case BC_JUMP:
                succ[ns++] = next + w_at(c + pc + 1);
                break;
            case BC_JUMP_IF_FALSE:
            case BC_JUMP_IF_TRUE: /* and the end of the construct, after not_boolean's send */
                succ[ns++] = s->m->sites[w_at(c + pc + 3)].bci;
                /* fall through */
            case BC_JUMP_IF_NIL:
            case BC_JUMP_IF_NOT_NIL:
                succ[ns++] = next;
                succ[ns++] = next + w_at(c + pc + 1);
                break;
            case BC_JUMP_BACK:
                succ[ns++] = next - w_at(c + pc + 1);
                break;
            case BC_INC_LOCAL_JLE:
                succ[ns++] = next;
                succ[ns++] = next - w_at(c + pc + 3);
                succ[ns++] = next + SOM_TODO_TAIL;
                break;
            case BC_RETURN_LOCAL:
            case BC_RETURN_SELF:
            case BC_RETURN_NLR:
                break;
            default:
                succ[ns++] = next;
                break;
            }
            for (int i = 0; i < ns; i++)
                if (succ[i] < len)
                    for (int w = 0; w < 4; w++)
                        out[w] |= s->live[succ[i] * 4 + w];
            memcpy(in, out, sizeof in);
            unsigned j = som_bc_len[c[pc]] ? c[pc + 1] : 0;
            if (c[pc] == BC_STORE_LOCAL) in[j / 64] &= ~(1ull << (j % 64));
            if (c[pc] == BC_PUSH_LOCAL || c[pc] == BC_INC_LOCAL_JLE) in[j / 64] |= 1ull << (j % 64);
            if (c[pc] == BC_INC_LOCAL_JLE) {
                unsigned l = c[pc + 2];
                in[l / 64] |= 1ull << (l % 64);
            }
            if (memcmp(in, &s->live[pc * 4], sizeof in)) {
                memcpy(&s->live[pc * 4], in, sizeof in);
                changed = true;
            }
        }
    }
}

static void start_block(B *b, Scope *s, uint32_t bci) {
    Pend *first = s->pend[bci];
    uint32_t npreds = 0;
    for (Pend *p = first; p; p = p->next) {
        npreds++;
        if (p->sp != first->sp) {
            fail(b, "stack depth differs at a merge");
            return;
        }
    }
    s->cur = s->bb[bci];
    s->sp = first->sp;
    s->started[bci] = 1;
    uint32_t n = s->nslots + s->sp;
    bool loop = s->loophead[bci];
    uint8_t *written = NULL;
    if (loop) {
        s->hphi[bci] = jit_alloc(b->f, (n ? n : 1) * sizeof(JitRef));
        s->hsp[bci] = s->sp;
        b->f->blocks[s->cur].loop_depth = 1;
        written = loop_writes(b, s, bci);
    }
    for (uint32_t j = 0; j < n; j++) {
        JitRef v0 = first->vals[j];
        if (j > s->m->nargs && j < s->nslots && !live_at(s, bci, j)) {
            s->vals[j] = b->nil;
            if (loop) s->hphi[bci][j] = -1;
            continue;
        }
        int t = ty(b, v0);
        bool same = true, bools = boolish(b, v0);
        for (Pend *p = first->next; p; p = p->next) {
            if (ty(b, p->vals[j]) != t) t = JT_VALUE;
            same &= p->vals[j] == v0;
            bools &= boolish(b, p->vals[j]);
        }
        if (!loop && bools && !same) t = JT_BOOL;
        if (same && (!loop || (j < s->nslots && !written[j]))) {
            s->vals[j] = v0;
            if (loop) s->hphi[bci][j] = -1;
            continue;
        }
        if (loop && (t == JT_BOOL || t == JT_PTR || is_forced(b, phi_key(s, bci, j)))) t = JT_VALUE;
        JitRef ph = emit(b, s, JI_PHI, 0, -1, -1, -1);
        I(b, ph)->type = (uint8_t)t;
        JitRef *in = jit_alloc(b->f, (npreds + (loop ? s->nback[bci] : 0)) * sizeof *in);
        uint32_t k = 0;
        for (Pend *p = first; p; p = p->next, k++)
            in[k] = t == JT_VALUE  ? box_in(b, p->block, p->vals[j], p->pos)
                    : t == JT_BOOL ? bool_in(b, p->block, p->vals[j])
                                   : p->vals[j];
        I(b, ph)->phi = in;
        s->vals[j] = ph;
        if (loop) s->hphi[bci][j] = ph;
    }
}

/* ---- scopes ----------------------------------------------------------------------------- */

static Scope *scope_new(B *b, SomMethod *m, Scope *caller) {
    Scope *s = jit_alloc(b->f, sizeof *s);
    uint32_t len = m->code_len + 1;
    s->m = m;
    s->caller = caller;
    s->serial = b->serial++;
    s->depth = caller ? caller->depth + 1 : 0;
    s->nslots = 1u + m->nargs + m->nlocals;
    s->cap = s->nslots + m->maxstack + 4;
    s->vals = jit_alloc(b->f, s->cap * sizeof *s->vals);
    s->pre = jit_alloc(b->f, s->cap * sizeof *s->pre);
    s->posmemo = jit_alloc(b->f, len * sizeof *s->posmemo);
    s->bb = jit_alloc(b->f, len * sizeof *s->bb);
    for (uint32_t i = 0; i < len; i++) {
        s->posmemo[i] = JIT_POS_NONE;
        s->bb[i] = -1;
    }
    s->leader = jit_alloc(b->f, len);
    s->loophead = jit_alloc(b->f, len);
    s->started = jit_alloc(b->f, len);
    s->nback = jit_alloc(b->f, len * sizeof *s->nback);
    s->loopend = jit_alloc(b->f, len * sizeof *s->loopend);
    s->hsp = jit_alloc(b->f, len * sizeof *s->hsp);
    s->hphi = jit_alloc(b->f, len * sizeof *s->hphi);
    s->pend = jit_alloc(b->f, len * sizeof *s->pend);
    s->pend_tail = jit_alloc(b->f, len * sizeof *s->pend_tail);
    s->ret.target = -1;
    s->blk = -1;
    s->ctx = -1;
    s->state_memo = -1;
    s->pos_parent = JIT_POS_NONE;
    s->active = true;
    s->is_block = m->kind == MK_BLOCK;
    return s;
}

/* Leaders, loop headers and back-edge counts. */
static void prescan(B *b, Scope *s) {
    const uint8_t *c = s->m->code;
    uint32_t len = s->m->code_len;
    s->leader[0] = 1;
    for (uint32_t pc = 0; pc < len;) {
        int op = c[pc];
        if (op >= BC__NBASE) {
            fail(b, "bad bytecode");
            return;
        }
        uint32_t next = pc + 1 + som_bc_len[op];
        int64_t t = -1, t2 = -1;
        bool back = op == BC_JUMP_BACK || op == BC_INC_LOCAL_JLE;
        bool end = false;
        switch (op) {
        case BC_JUMP:
            t = next + w_at(c + pc + 1);
            end = true;
            break;
        case BC_JUMP_IF_FALSE:
        case BC_JUMP_IF_TRUE:
        case BC_JUMP_IF_NIL:
        case BC_JUMP_IF_NOT_NIL:
            t = next + w_at(c + pc + 1);
            end = true;
            break;
        case BC_JUMP_BACK:
            t2 = (int64_t)next - w_at(c + pc + 1);
            end = true;
            break;
        case BC_INC_LOCAL_JLE:
            t2 = (int64_t)next - w_at(c + pc + 3);
            t = next + SOM_TODO_TAIL;
            end = true;
            break;
        case BC_RETURN_LOCAL:
        case BC_RETURN_SELF:
        case BC_RETURN_NLR:
            end = true;
            break;
        default:
            break;
        }
        if (t > (int64_t)len || (back && (t2 < 0 || t2 >= (int64_t)next))) {
            fail(b, "bad jump");
            return;
        }
        if (t >= 0 && t < (int64_t)len) s->leader[t] = 1;
        if (back) {
            s->leader[t2] = 1;
            s->loophead[t2] = 1;
            s->nback[t2]++;
            if (pc > s->loopend[t2]) s->loopend[t2] = pc;
        }
        if (end && next < len) s->leader[next] = 1;
        pc = next;
    }
}

static bool has_nlr_code(const SomMethod *m) {
    for (uint32_t pc = 0; pc < m->code_len; pc += 1 + som_bc_len[m->code[pc]])
        if (m->code[pc] == BC_RETURN_NLR) return true;
    return false;
}

static bool sends_restart(const SomMethod *m) {
    for (uint32_t i = 0; i < m->nsites; i++)
        if (!strcmp(m->sites[i].selector->bytes, "restart")) return true;
    return false;
}

static void translate_body(B *b, Scope *s);

/* ---- sends ------------------------------------------------------------------------------ */

static SomClass *block_class(B *b, const SomMethod *bm) {
    return bm->nargs == 0   ? b->vm->block1Class
           : bm->nargs == 1 ? b->vm->block2Class
                            : b->vm->block3Class;
}

static SomClass *known_class(B *b, Scope *s, JitRef v) {
    JitInst *in = I(b, v);
    switch (in->type) {
    case JT_INT:
        return b->vm->integerClass;
    case JT_DBL:
        return b->vm->doubleClass;
    default:
        break;
    }
    if (in->op == JI_CONST && in->cval) return som_class_of(b->vm, in->cval);
    if (in->op == JI_NEW_BLOCK) return block_class(b, in->method);
    if (v == s->self && s->self_cls) return s->self_cls;
    return NULL;
}

/* Are instances of cls OBJ_INSTANCE objects (no builtin layout up the chain)? */
static bool instance_kind(B *b, SomClass *cls) {
    SomVM *vm = b->vm;
    if (cls->is_meta) return false;
    for (SomClass *c = cls; c; c = c->super)
        if (c == vm->integerClass || c == vm->doubleClass || c == vm->arrayClass ||
            c == vm->stringClass || c == vm->symbolClass || c == vm->blockClass ||
            c == vm->methodClass || c == vm->primitiveClass || c == vm->classClass ||
            c == vm->metaclassClass)
            return false;
    return true;
}

enum { TK_SEND, TK_TRIVIAL, TK_INTRINSIC, TK_AT, TK_ATPUT, TK_INLINE };
enum { IN_NONE, IN_ARRAY_LENGTH, IN_STRING_LENGTH, IN_IDENTICAL, IN_INT_AS_DOUBLE, IN_DBL_SQRT };

/* Primitives reproduced exactly (checked against prim_object.c, prim_string.c and
 * prim_number.c): holder class name, selector, what they become. */
static const struct {
    const char *cls, *sel;
    int which;
} intrinsics[] = {
    {"Array", "length", IN_ARRAY_LENGTH}, {"String", "length", IN_STRING_LENGTH},
    {"Object", "==", IN_IDENTICAL},       {"Integer", "asDouble", IN_INT_AS_DOUBLE},
    {"Double", "sqrt", IN_DBL_SQRT},
};

static int intrinsic_of(const SomMethod *t) {
    if (t->kind != MK_PRIMITIVE || !t->holder) return IN_NONE;
    for (size_t i = 0; i < sizeof intrinsics / sizeof *intrinsics; i++)
        if (!strcmp(t->holder->name->bytes, intrinsics[i].cls) &&
            !strcmp(t->signature->bytes, intrinsics[i].sel))
            return intrinsics[i].which;
    return IN_NONE;
}

static uint32_t occurrences(Scope *s, SomMethod *m) {
    uint32_t n = 0;
    for (; s; s = s->caller)
        n += s->m == m;
    return n;
}

/* Whether the sampled edge weight w says for sure that the edge's share of the root's weight
 * is above 1/50 (answers 1) or below (0), or cannot tell (-1).  A count of samples is
 * Poisson-distributed: the edge's expected count lies within about w +- 2 sqrt(w) (w + 2
 * sqrt(w + 1) + 1 above, so that w = 0 still leaves room for 3).  A decision inside that band
 * would follow the noise, and two runs of one program would inline differently. */
static int sampled_hot(uint64_t w, uint64_t root) {
    double t = (double)root / 50, x = (double)w;
    if (x - 2 * sqrt(x) >= t) return 1;
    if (x + 2 * sqrt(x + 1) + 1 < t) return 0;
    return -1;
}

/* SOM_JIT_TRACE_INLINE: one line per decision on a send, with its reason:
 * "jit-inline: ROOT vN: CALLER@BCI dDEPTH -> CALLEE: inline|send|trap (why x/y)". */
static const char *holder_name(const SomMethod *m) {
    return m->holder ? m->holder->name->bytes : "?";
}

static void trace_send(B *b, Scope *s, const char *callee, const char *what) {
    const SomMethod *r = b->f->method;
    fprintf(b->tr ? b->tr : stderr, "jit-inline: %s>>%s v%u: %s>>%s@%u d%u -> %s: %s\n",
            holder_name(r), r->signature->bytes, b->o->version, holder_name(s->m),
            s->m->signature->bytes, s->bci, s->depth, callee, what);
}

static void trace_decision(B *b, Scope *s, SomMethod *t, const char *what, const char *why,
                           uint64_t x, uint64_t y) {
    if (!b->o->trace) return;
    char callee[256], how[128];
    snprintf(callee, sizeof callee, "%s>>%s", holder_name(t), t->signature->bytes);
    snprintf(how, sizeof how, "%s (%s %" PRIu64 "/%" PRIu64 ")", what, why, x, y);
    trace_send(b, s, callee, how);
}

static bool hot(B *b, Scope *s, SomMethod *t, uint64_t hits, uint64_t total) {
    if (t->code_len <= b->o->tiny_size) {
        trace_decision(b, s, t, "inline", "tiny", t->code_len, b->o->tiny_size);
        return true;
    }
    const JitProfile *p = b->o->profile;
    if (p && p->edge_weight && p->root_weight >= 20) {
        uint64_t w = p->edge_weight(p->arg, s->m, s->bci, t);
        if (!b->o->sampled_band) return w * 50 >= p->root_weight;
        int h = sampled_hot(w, p->root_weight);
        if (h == 0 && t->code_len <= b->o->small_calls && hits >= b->o->inline_hits) {
            /* cold by its samples, but a small callee called this often: its samples were
             * taken where it was inlined or cheap, and the calls it saves are what count */
            trace_decision(b, s, t, "inline", "calls", hits, w);
            return true;
        }
        if (h >= 0) {
            trace_decision(b, s, t, h ? "inline" : "send", h ? "hot" : "cold", w, p->root_weight);
            return h;
        }
    }
    bool h = hits > 0 && (hits * 8 >= total || hits >= b->o->inline_hits);
    trace_decision(b, s, t, h ? "inline" : "send", "cache", hits, total);
    return h;
}

/* Call sites of t whose inline cache has seen t itself (its recursive calls so far). */
static uint32_t self_sites(const SomMethod *t) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->nsites; i++)
        for (int k = 0; k < SOM_IC_SIZE; k++)
            if (t->sites[i].ic[k].method == t && t->sites[i].ic[k].hits) {
                n++;
                break;
            }
    return n;
}

/* How many activations of t one inlining chain may hold.  A small method that calls itself
 * at two or more sites (tree recursion, as nfib) gets one more: its call costs as much
 * as its body, and each extra level takes the calls left down by the branching factor (nfib:
 * 3 activations per call with two levels, 7 with three: 1.36x the calls per second).  Linear
 * recursion (List's length, isShorter:than:) gains less (2 -> 3 activations per call) and
 * measured slower to warm up with it (List total +6-19%, steady state equal), so it keeps two. */
static uint32_t recursion_limit(const JitBuildOpts *o, const SomMethod *t) {
    return t->code_len <= o->small_recursive && self_sites(t) >= 2 ? o->max_recursion_small
                                                                   : o->max_recursion;
}

/* ---- the inlining budget, spent by frequency --------------------------------------------
 * Inlining decisions are taken in bytecode order, depth first.  Were the budget
 * (max_total_size) spent in that order, the first sites would take it whether they run often
 * or not: Havlak's findLoops inlined SomDictionary>>resize (36 calls in 37000 at:put:) deep
 * under initAllNodes, then had no bytes left for the forEach: that runs 235000 times further
 * down, in runs that compiled it from few samples.  So a build first inlines up to plan_cap
 * times the budget.  When that pass stayed within the budget it is the result; otherwise
 * plan_inlining chooses, from the inlined activations it saw, the most frequent ones first
 * (each with its caller: the inlining tree grows from the root by frequency) while the bytes
 * fit, and a second pass inlines only those.  An activation's frequency is its calls per
 * activation of the root, estimated from the interpreter's counters: the product, along the
 * inlining path, of each site's cache hits for the callee over its method's invocations. */

enum { PLAN_CAP = 4 };

static uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The key of the activation of t (for receivers of class cls; NULL: a block) inlined at
 * s's current send: the same in both passes for the same path from the root. */
static uint64_t inline_key(const Scope *s, const SomMethod *t, const SomClass *cls) {
    uint64_t h = mix64(s->key + 0x9e3779b97f4a7c15ull * (s->bci + 1));
    h = mix64(h ^ (uint64_t)(uintptr_t)t);
    return mix64(h ^ (uint64_t)(uintptr_t)cls);
}

/* Calls of the send at s's current bci, for receivers of class cls (NULL: all of them), per
 * activation of s's method, from the inline cache's hits and the method's invocations. */
static double site_rate(const Scope *s, const CallSite *cs, const SomClass *cls) {
    uint64_t all = 0, mine = 0;
    for (int i = 0; i < SOM_IC_SIZE; i++) {
        all += cs->ic[i].hits;
        if (!cls || cs->ic[i].cls == cls) mine += cs->ic[i].hits;
    }
    if (!all) return 1; /* never counted here: assume once per activation */
    uint64_t inv = s->m->invocations;
    return (double)(mine ? mine : 1) / (double)(inv ? inv : 1);
}

static int key_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Whether t may take bytes more of the budget at s's current send. */
static bool budget_allows(B *b, const Scope *s, const SomMethod *t, const SomClass *cls,
                          uint32_t bytes) {
    if (!b->plan) return b->total + bytes <= b->cap;
    uint64_t k = inline_key(s, t, cls);
    return bsearch(&k, b->plan, b->nplan, sizeof k, key_cmp) != NULL;
}

/* Frequencies compared by their power of two: two runs of one program count calls at
 * slightly different moments, and near-equal activations must not swap places for that. */
static int freq_bin(double f) {
    return f > 0 ? (int)floor(log2(f)) : INT32_MIN;
}

/* Records the inlined activation c (first pass) with its frequency. */
static void note_inlined(B *b, Scope *s, Scope *c, const SomClass *cls, double rate) {
    c->key = inline_key(s, c->m, cls);
    c->freq = s->freq * rate;
    c->cand = -1;
    if (b->plan) return;
    if (b->ncands == b->cands_cap) {
        b->cands_cap = b->cands_cap ? 2 * b->cands_cap : 64;
        b->cands = realloc(b->cands, b->cands_cap * sizeof *b->cands);
        if (!b->cands) abort();
    }
    c->cand = (int32_t)b->ncands;
    b->cands[b->ncands++] = (Cand){.key = c->key,
                                   .m = c->m,
                                   .parent = s->cand,
                                   .bytes = c->m->code_len,
                                   .bin = freq_bin(c->freq),
                                   .freq = c->freq};
}

/* The keys the second pass inlines: from the root's callees, repeatedly the most frequent
 * activation whose caller is chosen (by freq_bin; ties: the earlier), while its bytes fit the
 * budget.  SOM_JIT_TRACE_INLINE lists the activations left out (not those under them). */
static void plan_inlining(B *b) {
    uint32_t n = b->ncands, used = 0;
    uint8_t *st = calloc(n ? n : 1, 1); /* 0 waiting, 1 chosen, 2 left out */
    b->plan = malloc((n ? n : 1) * sizeof *b->plan);
    if (!st || !b->plan) abort();
    b->nplan = 0;
    for (;;) {
        int32_t best = -1;
        for (uint32_t i = 0; i < n; i++) {
            const Cand *c = &b->cands[i];
            if (st[i] || (c->parent >= 0 && st[c->parent] != 1)) continue;
            if (best < 0 || c->bin > b->cands[best].bin) best = (int32_t)i;
        }
        if (best < 0) break;
        const Cand *c = &b->cands[best];
        if (used + c->bytes <= b->o->max_total_size) {
            st[best] = 1;
            used += c->bytes;
            b->plan[b->nplan++] = c->key;
        } else {
            st[best] = 2;
        }
    }
    FILE *t = b->o->trace ? open_memstream(&b->pbuf, &b->plen) : NULL;
    if (t) { /* the activations left out (not those under them) */
        const SomMethod *r = b->f->method;
        fprintf(t, "jit-inline: %s>>%s v%u: plan: %u of %u activations, %u of %u bytes\n",
                holder_name(r), r->signature->bytes, b->o->version, b->nplan, n, used, b->total);
        for (uint32_t i = 0; i < n; i++)
            if (st[i] == 2)
                fprintf(t, "jit-inline: %s>>%s v%u: plan: left out %s>>%s (%u bytes, %.3g calls)\n",
                        holder_name(r), r->signature->bytes, b->o->version,
                        holder_name(b->cands[i].m), b->cands[i].m->signature->bytes,
                        b->cands[i].bytes, b->cands[i].freq);
        fclose(t);
    }
    free(st);
    qsort(b->plan, b->nplan, sizeof *b->plan, key_cmp);
}

static bool can_inline_method(B *b, Scope *s, SomMethod *t) {
    const JitBuildOpts *o = b->o;
    return t->kind == MK_METHOD && !t->has_nlr_blocks && t->code_len <= o->max_inline_size &&
           s->depth + 1 <= o->max_inline_depth && occurrences(s, t) < recursion_limit(o, t) &&
           !sends_restart(t) && t->nargs + 1 <= 255;
}

static int classify(B *b, Scope *s, SomClass *cls, SomMethod *t, uint64_t hits, uint64_t total) {
    if (t->trivial) {
        if (t->trivial == TRIV_GETTER || t->trivial == TRIV_SETTER)
            return instance_kind(b, cls) && t->trivial_arg < cls->ninstfields ? TK_TRIVIAL
                                                                              : TK_SEND;
        return TK_TRIVIAL;
    }
    if (t->kind == MK_PRIMITIVE) {
        if (t->prim_kind == PK_ARRAY_AT) return TK_AT;
        if (t->prim_kind == PK_ARRAY_AT_PUT) return TK_ATPUT;
        return intrinsic_of(t) != IN_NONE ? TK_INTRINSIC : TK_SEND;
    }
    if (!can_inline_method(b, s, t)) {
        trace_decision(b, s, t, "send", "limits", t->code_len, b->total);
        return TK_SEND;
    }
    if (!budget_allows(b, s, t, cls, t->code_len)) {
        trace_decision(b, s, t, "send", b->plan ? "budget" : "limits", t->code_len, b->total);
        return TK_SEND;
    }
    return hot(b, s, t, hits, total) ? TK_INLINE : TK_SEND;
}

static JitRef generic_send(B *b, Scope *s, CallSite *cs) {
    uint32_t n = cs->nargs;
    JitRef *args = &s->vals[s->nslots + s->sp - n - 1];
    JitRef ops[JIT_MAX_ARGS];
    for (uint32_t i = 0; i <= n; i++)
        ops[i] = as_value(b, s, args[i]);
    JitRef r = jit_emit(b->f, s->cur, JI_SEND);
    JitInst *in = I(b, r);
    in->nargs = (uint8_t)(n + 1);
    memcpy(in->a, ops, (n + 1) * sizeof *ops);
    in->cs = cs;
    in->method = s->m;
    in->pos = cur_pos(b, s);
    return r;
}

/* A generic send expected to run t for receivers of class cls (cls NULL: t is right for every
 * receiver, the class being known) - the backend calls t's compiled code directly when it has
 * some and the class matches (llvm.c: direct calls), and the runtime's send otherwise. */
static JitRef direct_send(B *b, Scope *s, CallSite *cs, SomClass *cls, SomMethod *t) {
    JitRef r = generic_send(b, s, cs);
    if (!t || t->kind != MK_METHOD || t->trivial) return r;
    JitInst *in = I(b, r);
    in->target = t;
    in->cls = cls;
    in->tic = -1;
    for (int i = 0; i < SOM_IC_SIZE; i++)
        if (cs->ic[i].method == t && (!cls || cs->ic[i].cls == cls)) {
            in->tic = i;
            break;
        }
    return r;
}

/* Translates the prepared callee scope c at s's pending send of n arguments: SET_POS, its
 * own context, the body; continues s after it (answers the callee's result). */
static JitRef inline_scope(B *b, Scope *s, Scope *c, uint32_t n) {
    s->send_nargs = n + 1;
    s->send_bci = s->bci;
    s->send_resume = s->next_bci;
    c->pos_parent = cur_pos(b, s);
    c->cur = s->cur;
    s->cur = -1;
    JitRef sp = emit(b, c, JI_SET_POS, 0, -1, -1, -1);
    I(b, sp)->pos = cur_pos(b, c);
    if (c->m->nctx) {
        /* a block's context hangs off the closure's; an inlined method's has no outer */
        JitRef nc = emit(b, c, JI_NEW_CONTEXT, 1, c->is_block ? c->ctx : -1, -1, -1);
        I(b, nc)->method = c->m;
        I(b, nc)->pos = cur_pos(b, c);
        c->ctx = nc;
    }
    b->f->inlined++;
    b->total += c->m->code_len;
    translate_body(b, c);
    c->active = false;
    if (b->failed || b->restart) return b->nil;
    JitRef v = merge_finish(b, c, &c->ret);
    s->cur = c->cur;
    if (s->cur >= 0) {
        JitRef e = emit(b, s, JI_SET_POS, 0, -1, -1, -1);
        I(b, e)->pos = cur_pos(b, s);
    }
    return v;
}

/* Inlines t for receivers of class cls (exact: cls is the receiver's class, else a class
 * that reaches t) run rate times per activation of s. */
static JitRef inline_method(B *b, Scope *s, SomMethod *t, SomClass *cls, bool exact, double rate,
                            uint32_t n) {
    JitRef *args = &s->vals[s->nslots + s->sp - n - 1];
    Scope *c = scope_new(b, t, s);
    note_inlined(b, s, c, cls, rate);
    c->self = args[0];
    c->self_cls = exact ? cls : NULL;
    for (uint32_t i = 0; i <= n; i++)
        c->vals[i] = args[i];
    for (uint32_t i = n + 1; i < c->nslots; i++)
        c->vals[i] = b->nil;
    c->home = c;
    return inline_scope(b, s, c, n);
}

static bool can_inline_block(B *b, Scope *s, JitRef blk, uint32_t n) {
    SomMethod *bm = I(b, blk)->method;
    if (!b->o->inline_blocks || bm->nargs != n) return false;
    if (s->depth + 1 > b->o->max_inline_depth || bm->code_len > b->o->max_inline_size * 2 ||
        !budget_allows(b, s, bm, NULL, bm->code_len) || sends_restart(bm))
        return false;
    if (blk >= (JitRef)b->blk_cap || !b->blk_scope[blk]) return false;
    if (has_nlr_code(bm)) {
        Scope *h = b->blk_scope[blk]->home;
        if (!h || !h->active) return false;
    }
    return true;
}

static JitRef inline_block(B *b, Scope *s, CallSite *cs, JitRef blk, uint32_t n) {
    SomMethod *bm = I(b, blk)->method;
    JitRef *args = &s->vals[s->nslots + s->sp - n - 1];
    Scope *c = scope_new(b, bm, s);
    note_inlined(b, s, c, NULL, site_rate(s, cs, NULL));
    Scope *maker = b->blk_scope[blk];
    c->home = maker->home;
    c->blk = blk;
    c->self = I(b, blk)->a[1];
    c->self_cls = I(b, blk)->a[1] == maker->self ? maker->self_cls : NULL;
    c->ctx = I(b, blk)->a[0];
    for (uint32_t i = 0; i <= n; i++)
        c->vals[i] = args[i];
    for (uint32_t i = n + 1; i < c->nslots; i++)
        c->vals[i] = b->nil;
    return inline_scope(b, s, c, n);
}

/* The body for receiver class cls and target t (classified as kind), in s->cur. */
static JitRef send_body(B *b, Scope *s, CallSite *cs, int kind, SomClass *cls, SomMethod *t,
                        bool exact) {
    uint32_t n = cs->nargs;
    JitRef *args = &s->vals[s->nslots + s->sp - n - 1];
    JitRef rcv = args[0];
    switch (kind) {
    case TK_TRIVIAL:
        switch (t->trivial) {
        case TRIV_SELF:
            return rcv;
        case TRIV_LITERAL:
            return const_val(b, s, t->literals[t->trivial_arg]);
        case TRIV_GETTER: {
            JitRef r = emit(b, s, JI_LOAD_FIELD, 1, as_value(b, s, rcv), -1, -1);
            I(b, r)->ival = t->trivial_arg;
            return r;
        }
        default: { /* TRIV_SETTER */
            JitRef v = as_value(b, s, args[1]);
            JitRef r = emit(b, s, JI_STORE_FIELD, 2, as_value(b, s, rcv), v, -1);
            I(b, r)->ival = t->trivial_arg;
            return rcv;
        }
        }
    case TK_INTRINSIC:
        switch (intrinsic_of(t)) {
        case IN_ARRAY_LENGTH: {
            JitRef rv = as_value(b, s, rcv);
            JitRef k = emit(b, s, JI_IS_KIND, 1, rv, -1, -1);
            I(b, k)->ival = OBJ_ARRAY;
            guard(b, s, k, JDR_TYPE);
            return emit(b, s, JI_ARRAY_LEN, 1, rv, -1, -1);
        }
        case IN_STRING_LENGTH: {
            JitRef rv = as_value(b, s, rcv);
            JitRef k = emit(b, s, JI_IS_KIND, 1, rv, -1, -1);
            I(b, k)->ival = cls == b->vm->symbolClass ? OBJ_SYMBOL : OBJ_STRING;
            guard(b, s, k, JDR_TYPE);
            return emit(b, s, JI_STRING_LEN, 1, rv, -1, -1);
        }
        case IN_IDENTICAL:
            return emit(b, s, JI_VEQ, 2, as_value(b, s, rcv), as_value(b, s, args[1]), -1);
        case IN_INT_AS_DOUBLE:
            return emit(b, s, JI_INT_TO_DBL, 1, as_int(b, s, rcv), -1, -1);
        case IN_DBL_SQRT:
            return emit(b, s, JI_DSQRT, 1, as_dbl(b, s, rcv, false, true), -1, -1);
        default:
            break;
        }
        return generic_send(b, s, cs);
    case TK_AT:
    case TK_ATPUT: {
        JitRef rv = as_value(b, s, rcv);
        JitRef k = emit(b, s, JI_IS_KIND, 1, rv, -1, -1);
        I(b, k)->ival = OBJ_ARRAY;
        guard(b, s, k, JDR_TYPE);
        JitRef idx = as_int(b, s, args[1]);
        JitRef one = emit(b, s, JI_CONST_INT, 0, -1, -1, -1);
        I(b, one)->ival = 1;
        JitRef i0 = guarded_op(b, s, JI_ISUB, idx, one, JDR_BOUNDS);
        JitRef zero = emit(b, s, JI_CONST_INT, 0, -1, -1, -1);
        JitRef ge = emit(b, s, JI_ICMP, 2, i0, zero, -1);
        I(b, ge)->cmp = JC_GE;
        guard(b, s, ge, JDR_BOUNDS);
        JitRef len = emit(b, s, JI_ARRAY_LEN, 1, rv, -1, -1);
        JitRef lt = emit(b, s, JI_ICMP, 2, i0, len, -1);
        I(b, lt)->cmp = JC_LT;
        guard(b, s, lt, JDR_BOUNDS);
        if (kind == TK_AT) return emit(b, s, JI_ARRAY_LOAD, 2, rv, i0, -1);
        emit(b, s, JI_ARRAY_STORE, 3, rv, i0, as_value(b, s, args[2]));
        return rcv;
    }
    case TK_INLINE:
        return inline_method(b, s, t, cls, exact, site_rate(s, cs, cls), n);
    default: /* the receiver's class is known or guarded: t is its method */
        return direct_send(b, s, cs, NULL, t);
    }
}

/* The inline-cache entry of cs with the most hits whose method could be entered directly
 * (kinds[i] == TK_SEND for the entries idx[0..ne) when kinds is given), or -1. */
static int best_direct(const CallSite *cs, const int *idx, const int *kinds, int ne) {
    for (int i = 0; i < ne; i++) /* idx is ordered by hits, most first */
        if ((!kinds || kinds[i] == TK_SEND) && cs->ic[idx[i]].method->kind == MK_METHOD &&
            !cs->ic[idx[i]].method->trivial)
            return idx[i];
    return -1;
}

/* v: the inline cache as the decisions see it (cs's own, or the sampled one). */
static JitRef guessed_send(B *b, Scope *s, CallSite *cs, const CallSite *v, const int *idx,
                           const int *kinds, int ne) {
    int k = best_direct(v, idx, kinds, ne);
    return k < 0 ? generic_send(b, s, cs) : direct_send(b, s, cs, v->ic[k].cls, v->ic[k].method);
}

/* f with room for one more feedback site (arena memory: the old array is simply left). */
static JitFunc *fb_grow(JitFunc *f) {
    if (f->nfb_sites == f->fb_cap) {
        uint32_t cap = f->fb_cap ? f->fb_cap * 2 : 8;
        JitFbSite *a = jit_alloc(f, cap * sizeof *a);
        if (f->nfb_sites) memcpy(a, f->fb_sites, f->nfb_sites * sizeof *a);
        f->fb_sites = a;
        f->fb_cap = cap;
    }
    return f;
}

/* A send slot (feedback.h) for cs, about to be sent generically because its receivers were
 * of more classes than a guard takes (compiled: how many, 0xffff for megamorphic). */
static void fb_send_slot(B *b, Scope *s, CallSite *cs, uint32_t compiled) {
    if (!b->o->fb_slots || cs < s->m->sites || cs >= s->m->sites + s->m->nsites) return;
    uint32_t k = (uint32_t)(cs - s->m->sites);
    JitFunc *f = fb_grow(b->f);
    f->fb_sites[f->nfb_sites] = (JitFbSite){.method = s->m,
                                            .site = k,
                                            .op = JIT_FB_SEND,
                                            .compiled = compiled,
                                            .max_poly = b->o->max_poly};
    uint32_t at = s->nslots + s->sp - cs->nargs - 1;
    s->vals[at] = as_value(b, s, s->vals[at]);
    JitRef o = emit(b, s, JI_FB_OBSERVE, 2, s->vals[at], s->vals[at], -1);
    I(b, o)->ival = f->nfb_sites++;
}

/* A send of cs with receiver and arguments on s's stack; answers the result (not pushed). */
static JitRef do_send(B *b, Scope *s, CallSite *cs, bool super, bool executed) {
    uint32_t n = cs->nargs;
    if (n + 1 > JIT_MAX_ARGS) {
        fail(b, "send with too many arguments");
        return b->nil;
    }
    JitRef rcv = s->vals[s->nslots + s->sp - n - 1];
    SomVM *vm = b->vm;
    if (!super && I(b, rcv)->op == JI_NEW_BLOCK) {
        SomMethod *v = som_lookup(vm, block_class(b, I(b, rcv)->method), cs->selector);
        if (v && v->prim_kind == PK_BLOCK_VALUE && can_inline_block(b, s, rcv, n))
            return inline_block(b, s, cs, rcv, n);
    }
    SomClass *kc = super ? (s->m->holder ? s->m->holder->super : NULL) : known_class(b, s, rcv);
    if (super && !kc) return generic_send(b, s, cs);
    if (kc) {
        SomMethod *t = som_lookup(vm, kc, cs->selector);
        if (!t) return generic_send(b, s, cs);
        uint64_t hits = 0, total = 0;
        for (int i = 0; i < SOM_IC_SIZE; i++) {
            total += cs->ic[i].hits;
            if (cs->ic[i].cls == kc) hits = cs->ic[i].hits;
        }
        if (super) hits = total = 1;
        /* a site that never ran (its cache is empty) is an uncommon trap even when the
         * receiver's class is known */
        if (!super && !total && !cs->megamorphic && b->o->unreached_traps && !executed) {
            trace_decision(b, s, t, "trap", "unreached", 0, 0);
            deopt_here(b, s, JDR_CLASS);
            return b->nil;
        }
        int kind = classify(b, s, kc, t, hits, total);
        if (kind == TK_TRIVIAL && super && t->trivial != TRIV_SELF && t->trivial != TRIV_LITERAL)
            kind = TK_SEND;
        return send_body(b, s, cs, kind, kc, t, !super);
    }
    /* the inline cache the decisions read: the site's own, or the receiver classes the
     * samples saw in an earlier version (fb_send) */
    CallSite view;
    const CallSite *v = cs;
    if (b->o->fb_send && cs >= s->m->sites && cs < s->m->sites + s->m->nsites &&
        b->o->fb_send(b->o->fb_arg, s->m, (uint32_t)(cs - s->m->sites), cs, &view))
        v = &view;
    if (v->megamorphic) {
        fb_send_slot(b, s, cs, 0xffff);
        return generic_send(b, s, cs);
    }
    int idx[SOM_IC_SIZE], ne = 0;
    uint64_t total = 0;
    for (int i = 0; i < SOM_IC_SIZE; i++)
        if (v->ic[i].cls && v->ic[i].hits) {
            idx[ne++] = i;
            total += v->ic[i].hits;
        }
    if (ne == 0) {
        if (b->o->trace)
            trace_send(b, s, cs->selector->bytes,
                       b->o->unreached_traps && !executed ? "trap (unreached)"
                                                          : "send (unreached)");
        if (b->o->unreached_traps && !executed) {
            deopt_here(b, s, JDR_CLASS);
            return b->nil;
        }
        return generic_send(b, s, cs);
    }
    for (int i = 1; i < ne; i++) /* by hits, most first */
        for (int j = i; j > 0 && v->ic[idx[j]].hits > v->ic[idx[j - 1]].hits; j--) {
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    if ((uint32_t)ne > b->o->max_poly) {
        fb_send_slot(b, s, cs, (uint32_t)ne);
        return guessed_send(b, s, cs, v, idx, NULL, ne);
    }
    int kinds[SOM_IC_SIZE], nguard = 0;
    bool fallback = !b->o->unreached_traps;
    for (int i = 0; i < ne; i++) {
        kinds[i] =
            classify(b, s, v->ic[idx[i]].cls, v->ic[idx[i]].method, v->ic[idx[i]].hits, total);
        if (kinds[i] == TK_SEND)
            fallback = true;
        else
            nguard++;
    }
    if (!nguard) return guessed_send(b, s, cs, v, idx, kinds, ne);
    JitRef rv = as_value(b, s, rcv);
    Merge m = {.target = -1};
    int done = 0;
    for (int i = 0; i < ne && s->cur >= 0; i++) {
        if (kinds[i] == TK_SEND) continue;
        SomClass *cls = v->ic[idx[i]].cls;
        JitRef hc = emit(b, s, JI_HAS_CLASS, 1, rv, -1, -1);
        I(b, hc)->cls = cls;
        bool last = ++done == nguard && !fallback;
        int32_t other = -1;
        if (last) {
            guard(b, s, hc, JDR_CLASS);
        } else {
            int32_t t = new_block(b);
            other = new_block(b);
            branch(b, s, hc, t, other);
            s->cur = t;
        }
        JitRef r = send_body(b, s, cs, kinds[i], cls, v->ic[idx[i]].method, true);
        if (b->failed || b->restart) return b->nil;
        merge_add(b, s, &m, r);
        s->cur = other;
    }
    if (s->cur >= 0) merge_add(b, s, &m, guessed_send(b, s, cs, v, idx, kinds, ne));
    return merge_finish(b, s, &m);
}

/* ---- arithmetic and comparison bytecodes -------------------------------------------------- */

#define TFB(a, b) (1u << ((a)*4 + (b)))

static void push(Scope *s, JitRef v) {
    s->vals[s->nslots + s->sp++] = v;
}

static JitRef top(Scope *s, uint32_t i) {
    return s->vals[s->nslots + s->sp - 1 - i];
}

/* Replaces the two operands by the result. */
static void result2(Scope *s, JitRef v) {
    s->sp -= 2;
    push(s, v);
}

/* A feedback slot (feedback.h) for the arithmetic site k about to be sent generically: its
 * operands (the top two stack values) are observed while the VM's samples arm it. */
static void fb_slot(B *b, Scope *s, int op, unsigned k, uint32_t kinds) {
    JitFunc *f = fb_grow(b->f);
    f->fb_sites[f->nfb_sites] =
        (JitFbSite){.method = s->m, .site = k, .op = (uint8_t)op, .compiled = kinds};
    s->vals[s->nslots + s->sp - 2] = as_value(b, s, top(s, 1));
    s->vals[s->nslots + s->sp - 1] = as_value(b, s, top(s, 0));
    JitRef o = emit(b, s, JI_FB_OBSERVE, 2, top(s, 1), top(s, 0), -1);
    I(b, o)->ival = f->nfb_sites++;
}

static void arith(B *b, Scope *s, int op, unsigned k) {
    CallSite *cs = &s->m->sites[k];
    JitRef x = top(s, 1), y = top(s, 0);
    int tx = ty(b, x), ty_ = ty(b, y);
    uint32_t ak = cs->argkinds;
    if (b->o->fb_kinds) ak = b->o->fb_kinds(b->o->fb_arg, s->m, k, ak);
    uint32_t bits = ak & 0xffff;
    bool ovf = (ak & TF_OVERFLOWED) != 0;
    bool num_x = tx == JT_INT || tx == JT_DBL, num_y = ty_ == JT_INT || ty_ == JT_DBL;
    bool bad_x = tx == JT_BOOL, bad_y = ty_ == JT_BOOL;
    bool int_ok = !ovf && !bad_x && !bad_y && tx != JT_DBL && ty_ != JT_DBL &&
                  ((tx == JT_INT && ty_ == JT_INT) || bits == TFB(TF_INT, TF_INT));
    bool has_dbl = jit_fb_op_has_double((uint8_t)op); /* + - * and comparisons */
    uint32_t dd = TFB(TF_DOUBLE, TF_DOUBLE), di = TFB(TF_DOUBLE, TF_INT);
    bool dbl_ok = has_dbl && !int_ok && !bad_x && !bad_y && tx != JT_INT &&
                  ((tx == JT_DBL && num_y) || (bits && (bits & ~(dd | di)) == 0 && tx != JT_INT));
    if (op == BC_FDIV) {
        uint32_t nums = TFB(TF_INT, TF_INT) | TFB(TF_INT, TF_DOUBLE) | dd | di;
        if (!bad_x && !bad_y && ((num_x && num_y) || (bits && (bits & ~nums) == 0))) {
            bool xi = tx == JT_INT ||
                      (tx != JT_DBL && (bits & (TFB(TF_INT, TF_INT) | TFB(TF_INT, TF_DOUBLE))));
            bool xd = tx == JT_DBL || (tx != JT_INT && (bits & (dd | di)));
            bool yi = ty_ == JT_INT || (ty_ != JT_DBL && (bits & (TFB(TF_INT, TF_INT) | di)));
            bool yd = ty_ == JT_DBL || (ty_ != JT_INT && (bits & (dd | TFB(TF_INT, TF_DOUBLE))));
            JitRef a = as_dbl(b, s, x, xi, xd);
            JitRef c = as_dbl(b, s, top(s, 0), yi, yd);
            result2(s, emit(b, s, JI_DDIV, 2, a, c, -1));
            return;
        }
    } else if (int_ok) {
        JitRef a = as_int(b, s, x);
        JitRef c = as_int(b, s, top(s, 0));
        JitRef r;
        static const uint8_t cmps[] = {[BC_LT] = JC_LT, [BC_GT] = JC_GT, [BC_LE] = JC_LE,
                                       [BC_GE] = JC_GE, [BC_EQ] = JC_EQ, [BC_NE] = JC_NE};
        switch (op) {
        case BC_ADD:
            r = guarded_op(b, s, JI_IADD, a, c, JDR_OVERFLOW);
            break;
        case BC_SUB:
            r = guarded_op(b, s, JI_ISUB, a, c, JDR_OVERFLOW);
            break;
        case BC_MUL:
            r = guarded_op(b, s, JI_IMUL, a, c, JDR_OVERFLOW);
            break;
        case BC_MOD:
            r = guarded_op(b, s, JI_IMOD, a, c, JDR_DIVZERO);
            break;
        case BC_DIV:
            r = guarded_op(b, s, JI_IDIV, a, c, JDR_DIVZERO);
            break;
        case BC_BAND:
            r = emit(b, s, JI_IAND, 2, a, c, -1);
            break;
        case BC_BXOR:
            r = emit(b, s, JI_IXOR, 2, a, c, -1);
            break;
        default:
            r = emit(b, s, JI_ICMP, 2, a, c, -1);
            I(b, r)->cmp = cmps[op];
            break;
        }
        result2(s, r);
        return;
    } else if (dbl_ok) {
        bool yi = ty_ == JT_INT || (ty_ != JT_DBL && (bits & di));
        bool yd = ty_ == JT_DBL || (ty_ != JT_INT && (bits & dd));
        if (tx == JT_DBL && ty_ == JT_VALUE && !bits) yd = yi = true;
        JitRef a = as_dbl(b, s, x, false, true);
        JitRef c = as_dbl(b, s, top(s, 0), yi, yd);
        JitRef r;
        switch (op) {
        case BC_ADD:
            r = emit(b, s, JI_DADD, 2, a, c, -1);
            break;
        case BC_SUB:
            r = emit(b, s, JI_DSUB, 2, a, c, -1);
            break;
        case BC_MUL:
            r = emit(b, s, JI_DMUL, 2, a, c, -1);
            break;
        default:
            r = emit(b, s, JI_DCMP, 2, a, c, -1);
            I(b, r)->cmp = op == BC_LT   ? JC_LT
                           : op == BC_GT ? JC_GT
                           : op == BC_LE ? JC_LE
                           : op == BC_GE ? JC_GE
                                         : JC_EQ;
            break;
        }
        result2(s, r);
        return;
    }
    if (!bits && !num_x && b->o->unreached_traps && !ovf) {
        deopt_here(b, s, JDR_CLASS);
        return;
    }
    if (b->o->fb_slots && jit_fb_slot_useful((uint8_t)op, ak)) fb_slot(b, s, op, k, ak);
    JitRef r = do_send(b, s, cs, false, bits != 0);
    if (s->cur >= 0) result2(s, r);
}

/* Three-way split of v: true, false, anything else. */
static void bool_split(B *b, Scope *s, JitRef v, int32_t *bt, int32_t *bf, int32_t *bo) {
    if (ty(b, v) != JT_BOOL) v = as_value(b, s, v);
    if (ty(b, v) == JT_BOOL) {
        *bt = new_block(b);
        *bf = new_block(b);
        *bo = -1;
        branch(b, s, v, *bt, *bf);
        return;
    }
    int32_t n1 = new_block(b);
    *bt = new_block(b);
    *bf = new_block(b);
    *bo = new_block(b);
    branch(b, s, emit(b, s, JI_VEQ, 2, v, b->tru, -1), *bt, n1);
    s->cur = n1;
    branch(b, s, emit(b, s, JI_VEQ, 2, v, b->fls, -1), *bf, *bo);
}

/* AND / OR with an evaluated argument: what Boolean's methods answer, else the send. */
static void and_or(B *b, Scope *s, bool is_and, unsigned k) {
    JitRef x = as_value(b, s, top(s, 1)), y = top(s, 0);
    JitRef yv = as_value(b, s, y);
    Merge m = {.target = -1};
    int32_t xt, xf, xo, yt, yf, yo;
    bool_split(b, s, x, &xt, &xf, &xo);
    /* and: false -> false, true -> y (if boolean); or: true -> true, false -> y */
    s->cur = is_and ? xf : xt;
    merge_add(b, s, &m, is_and ? b->fls : b->tru);
    s->cur = is_and ? xt : xf;
    bool_split(b, s, yv, &yt, &yf, &yo);
    s->cur = yt;
    merge_add(b, s, &m, b->tru);
    s->cur = yf;
    merge_add(b, s, &m, b->fls);
    int32_t sendb = new_block(b);
    s->cur = xo;
    jump(b, s, sendb);
    s->cur = yo;
    jump(b, s, sendb);
    s->cur = sendb;
    JitRef r = do_send(b, s, &s->m->sites[k], false, false);
    merge_add(b, s, &m, r);
    JitRef v = merge_finish(b, s, &m);
    if (s->cur >= 0) result2(s, v);
}

/* ---- one scope ------------------------------------------------------------------------- */

static JitRef ctx_at(B *b, Scope *s, unsigned depth) {
    JitRef c = s->ctx;
    for (unsigned i = 0; i < depth && c >= 0; i++)
        c = emit(b, s, JI_CTX_OUTER, 1, c, -1, -1);
    return c;
}

static void check_kind(B *b, Scope *s, JitRef v, int kind) {
    if (kind == OBJ_INSTANCE && v == s->self && s->self_cls && instance_kind(b, s->self_cls))
        return;
    JitRef k = emit(b, s, JI_IS_KIND, 1, v, -1, -1);
    I(b, k)->ival = kind;
    guard(b, s, k, JDR_TYPE);
}

static void do_return(B *b, Scope *s, JitRef v, Scope *target) {
    if (target->root) {
        JitRef rv = as_value(b, s, v);
        emit(b, s, JI_RETURN, 1, rv, -1, -1);
        s->cur = -1;
    } else {
        merge_add(b, s, &target->ret, v);
    }
}

static void inc_local_jle(B *b, Scope *s, uint32_t pc) {
    const uint8_t *c = s->m->code + pc;
    unsigned ci = c[1], li = c[2];
    uint32_t next = pc + 5, back = next - w_at(c + 3), tail = next, exit = next + SOM_TODO_TAIL;
    JitRef i = s->vals[ci], lim = s->vals[li];
    JitRef iv[2] = {i, lim};
    for (int k = 0; k < 2; k++) {
        if (ty(b, iv[k]) == JT_INT) continue;
        if (I(b, iv[k])->op == JI_CONST && som_is_int(I(b, iv[k])->cval)) {
            iv[k] = const_val(b, s, I(b, iv[k])->cval);
            continue;
        }
        if (ty(b, iv[k]) != JT_VALUE) { /* a double or boolean: the generic tail */
            jump_bci(b, s, tail);
            return;
        }
        int32_t ok = new_block(b), no = new_block(b);
        branch(b, s, emit(b, s, JI_IS_INT, 1, iv[k], -1, -1), ok, no);
        s->cur = no;
        jump_bci(b, s, tail);
        s->cur = ok;
        iv[k] = emit(b, s, JI_UNBOX_INT, 1, iv[k], -1, -1);
    }
    JitRef one = emit(b, s, JI_CONST_INT, 0, -1, -1, -1);
    I(b, one)->ival = 1;
    JitRef ni = guarded_op(b, s, JI_IADD, iv[0], one, JDR_OVERFLOW);
    s->vals[ci] = ni;
    if (li != ci) s->vals[li] = iv[1];
    JitRef le = emit(b, s, JI_ICMP, 2, ni, iv[1], -1);
    I(b, le)->cmp = JC_LE;
    int32_t bb = new_block(b), eb = new_block(b);
    branch(b, s, le, bb, eb);
    s->cur = bb;
    JitRef sp = emit(b, s, JI_SAFEPOINT, 0, -1, -1, -1);
    I(b, sp)->ival = SOM_SP_LOOP;
    I(b, sp)->pos = cur_pos(b, s);
    jump_bci(b, s, back);
    s->cur = eb;
    jump_bci(b, s, exit);
}

static void cond_jump(B *b, Scope *s, uint32_t pc, bool if_true) {
    const uint8_t *c = s->m->code + pc;
    uint32_t target = pc + 5 + w_at(c + 1), next = pc + 5;
    JitRef v = top(s, 0);
    s->sp--;
    int32_t bt, bf, bo;
    bool_split(b, s, v, &bt, &bf, &bo);
    if (bo >= 0) {
        s->cur = bo;
        deopt_here(b, s, JDR_BOOLEAN);
    }
    s->cur = bt;
    jump_bci(b, s, if_true ? target : next);
    s->cur = bf;
    jump_bci(b, s, if_true ? next : target);
}

static void translate_inst(B *b, Scope *s, uint32_t pc) {
    const uint8_t *c = s->m->code + pc;
    SomVM *vm = b->vm;
    int op = c[0];
    switch (op) {
    case BC_PUSH_LOCAL:
        if (c[1] >= s->nslots) {
            fail(b, "bad local");
            return;
        }
        push(s, s->vals[c[1]]);
        break;
    case BC_PUSH_SELF:
        push(s, s->self);
        break;
    case BC_PUSH_CTX: {
        JitRef cx = ctx_at(b, s, c[1]);
        if (cx < 0) {
            fail(b, "context access without a context");
            return;
        }
        JitRef r = emit(b, s, JI_CTX_LOAD, 1, cx, -1, -1);
        I(b, r)->ival = c[2];
        push(s, r);
        break;
    }
    case BC_PUSH_FIELD: {
        JitRef sv = as_value(b, s, s->self);
        check_kind(b, s, sv, OBJ_INSTANCE);
        JitRef r = emit(b, s, JI_LOAD_FIELD, 1, sv, -1, -1);
        I(b, r)->ival = c[1];
        push(s, r);
        break;
    }
    case BC_PUSH_CFIELD: {
        JitRef sv = as_value(b, s, s->self);
        check_kind(b, s, sv, OBJ_CLASS);
        JitRef r = emit(b, s, JI_CFIELD_LOAD, 1, sv, -1, -1);
        I(b, r)->ival = c[1];
        push(s, r);
        break;
    }
    case BC_PUSH_CONST:
        push(s, const_val(b, s, s->m->literals[w_at(c + 1)]));
        break;
    case BC_PUSH_NIL:
        push(s, b->nil);
        break;
    case BC_PUSH_TRUE:
        push(s, b->tru);
        break;
    case BC_PUSH_FALSE:
        push(s, b->fls);
        break;
    case BC_PUSH_INT: {
        JitRef r = emit(b, s, JI_CONST_INT, 0, -1, -1, -1);
        I(b, r)->ival = (int8_t)c[1];
        push(s, r);
        break;
    }
    case BC_PUSH_GLOBAL: {
        JitRef g = emit(b, s, JI_GLOBAL_LOAD, 0, -1, -1, -1);
        I(b, g)->sym = (SomString *)s->m->literals[w_at(c + 1)];
        JitRef z = emit(b, s, JI_VEQ, 2, g, b->zero, -1);
        guard(b, s, emit(b, s, JI_BNOT, 1, z, -1, -1), JDR_GLOBAL);
        push(s, g);
        break;
    }
    case BC_PUSH_BLOCK: {
        JitRef r = emit(b, s, JI_NEW_BLOCK, 2, s->ctx, as_value(b, s, s->self), -1);
        I(b, r)->method = (SomMethod *)s->m->literals[w_at(c + 1)];
        I(b, r)->pos = cur_pos(b, s);
        if ((uint32_t)r >= b->blk_cap) {
            uint32_t nc = b->blk_cap ? b->blk_cap : 256;
            while (nc <= (uint32_t)r)
                nc *= 2;
            b->blk_scope = realloc(b->blk_scope, nc * sizeof *b->blk_scope);
            if (!b->blk_scope) abort();
            memset(b->blk_scope + b->blk_cap, 0, (nc - b->blk_cap) * sizeof *b->blk_scope);
            b->blk_cap = nc;
        }
        b->blk_scope[r] = s;
        push(s, r);
        break;
    }
    case BC_STORE_LOCAL:
        if (c[1] >= s->nslots) {
            fail(b, "bad local");
            return;
        }
        s->vals[c[1]] = top(s, 0);
        s->sp--;
        break;
    case BC_STORE_CTX: {
        JitRef cx = ctx_at(b, s, c[1]);
        if (cx < 0) {
            fail(b, "context access without a context");
            return;
        }
        JitRef r = emit(b, s, JI_CTX_STORE, 2, cx, as_value(b, s, top(s, 0)), -1);
        I(b, r)->ival = c[2];
        s->sp--;
        break;
    }
    case BC_STORE_FIELD:
    case BC_STORE_CFIELD: {
        JitRef sv = as_value(b, s, s->self);
        check_kind(b, s, sv, op == BC_STORE_FIELD ? OBJ_INSTANCE : OBJ_CLASS);
        JitRef r = emit(b, s, op == BC_STORE_FIELD ? JI_STORE_FIELD : JI_CFIELD_STORE, 2, sv,
                        as_value(b, s, top(s, 0)), -1);
        I(b, r)->ival = c[1];
        s->sp--;
        break;
    }
    case BC_DUP:
        push(s, top(s, 0));
        break;
    case BC_POP:
        s->sp--;
        break;
    case BC_SEND:
    case BC_SUPER_SEND: {
        CallSite *cs = &s->m->sites[w_at(c + 1)];
        JitRef r = do_send(b, s, cs, op == BC_SUPER_SEND, false);
        if (s->cur >= 0) {
            s->sp -= cs->nargs + 1u;
            push(s, r);
        }
        break;
    }
    case BC_RETURN_LOCAL:
        do_return(b, s, top(s, 0), s);
        break;
    case BC_RETURN_SELF:
        do_return(b, s, s->self, s);
        break;
    case BC_RETURN_NLR: {
        JitRef v = top(s, 0);
        if (s->home && s->home->active) {
            do_return(b, s, v, s->home);
        } else if (s->root) {
            JitRef r = emit(b, s, JI_NLR, 2, s->ctx, as_value(b, s, v), -1);
            I(b, r)->pos = cur_pos(b, s);
            emit(b, s, JI_RETURN, 1, r, -1, -1);
            s->cur = -1;
        } else {
            fail(b, "non-local return from an inlined block whose home is not compiled");
        }
        break;
    }
    case BC_JUMP:
        jump_bci(b, s, pc + 3 + w_at(c + 1));
        break;
    case BC_JUMP_IF_FALSE:
    case BC_JUMP_IF_TRUE:
        cond_jump(b, s, pc, op == BC_JUMP_IF_TRUE);
        break;
    case BC_JUMP_IF_NIL:
    case BC_JUMP_IF_NOT_NIL: {
        JitRef v = as_value(b, s, top(s, 0));
        s->sp--;
        uint32_t target = pc + 3 + w_at(c + 1);
        int32_t bt = new_block(b), bf = new_block(b);
        branch(b, s, emit(b, s, JI_VEQ, 2, v, b->nil, -1), bt, bf);
        s->cur = bt;
        jump_bci(b, s, op == BC_JUMP_IF_NIL ? target : pc + 3);
        s->cur = bf;
        jump_bci(b, s, op == BC_JUMP_IF_NIL ? pc + 3 : target);
        break;
    }
    case BC_JUMP_BACK: {
        JitRef sp = emit(b, s, JI_SAFEPOINT, 0, -1, -1, -1);
        I(b, sp)->ival = SOM_SP_LOOP;
        I(b, sp)->pos = cur_pos(b, s);
        jump_bci(b, s, pc + 3 - w_at(c + 1));
        break;
    }
    case BC_ADD:
    case BC_SUB:
    case BC_MUL:
    case BC_LT:
    case BC_GT:
    case BC_LE:
    case BC_GE:
    case BC_EQ:
    case BC_NE:
    case BC_MOD:
    case BC_FDIV:
    case BC_DIV:
    case BC_BAND:
    case BC_BXOR:
        arith(b, s, op, w_at(c + 1));
        break;
    case BC_INC_LOCAL_JLE:
        inc_local_jle(b, s, pc);
        break;
    case BC_AND:
    case BC_OR:
        and_or(b, s, op == BC_AND, w_at(c + 1));
        break;
    default:
        (void)vm;
        fail(b, "unsupported bytecode");
        break;
    }
}

static void translate_body(B *b, Scope *s) {
    prescan(b, s);
    if (b->failed) return;
    liveness(b, s);
    s->bci = 0;
    jump_bci(b, s, 0);
    const uint8_t *code = s->m->code;
    for (uint32_t pc = 0; pc < s->m->code_len && !b->failed && !b->restart;) {
        int op = code[pc];
        uint32_t next = pc + 1 + som_bc_len[op];
        if (s->leader[pc]) {
            if (s->cur >= 0) jump_bci(b, s, pc);
            if (s->pend[pc])
                start_block(b, s, pc);
            else
                s->cur = -1;
            if (b->failed || b->restart) return;
        }
        if (s->cur >= 0) {
            if (s->sp + 3 > s->cap - s->nslots) {
                fail(b, "operand stack overflow");
                return;
            }
            s->bci = pc;
            s->next_bci = next;
            s->pre_sp = s->sp;
            memcpy(s->pre, s->vals, (s->nslots + s->sp) * sizeof *s->vals);
            s->state_memo = -1;
            translate_inst(b, s, pc);
        }
        pc = next;
    }
    if (s->cur >= 0 && !b->failed && !b->restart) fail(b, "falls off the end of the code");
}

/* ---- entry ------------------------------------------------------------------------------ */

static void remove_trivial_phis(JitFunc *f);

void jit_build_defaults(JitBuildOpts *o) {
    memset(o, 0, sizeof *o);
    o->max_inline_depth = 6;
    o->max_inline_size = 120;
    o->max_total_size = 2000;
    o->max_poly = 4;
    o->max_recursion = 2;
    o->max_recursion_small = 3;
    o->small_recursive = 64;
    o->tiny_size = 24;
    o->inline_hits = 1024;
    o->small_calls = 48;
    o->sampled_band = true;
    o->inline_plan = true;
    o->inline_blocks = true;
    o->unreached_traps = true;
    o->version = 1;
}

static JitFunc *build_once(B *b, SomMethod *m) {
    JitFunc *f = jit_func_new(b->vm, m);
    b->f = f;
    b->failed = b->restart = false;
    b->serial = b->total = 0;
    if (b->blk_scope) memset(b->blk_scope, 0, b->blk_cap * sizeof *b->blk_scope);
    Scope *s = scope_new(b, m, NULL);
    s->root = true;
    s->key = 0;
    s->freq = 1;
    s->cand = -1;
    b->ncands = 0;
    s->home = m->kind == MK_METHOD ? s : NULL;
    s->cur = jit_block_new(f);
    s->bci = 0;
    for (uint32_t i = 0; i <= m->nargs; i++) {
        JitRef a = emit(b, s, JI_ARG, 0, -1, -1, -1);
        I(b, a)->ival = i;
        s->vals[i] = a;
    }
    b->nil = emit(b, s, JI_CONST, 0, -1, -1, -1);
    I(b, b->nil)->cval = b->vm->nil;
    b->tru = emit(b, s, JI_CONST, 0, -1, -1, -1);
    I(b, b->tru)->cval = b->vm->true_;
    b->fls = emit(b, s, JI_CONST, 0, -1, -1, -1);
    I(b, b->fls)->cval = b->vm->false_;
    b->zero = emit(b, s, JI_CONST, 0, -1, -1, -1);
    I(b, b->zero)->cval = 0;
    for (uint32_t i = m->nargs + 1u; i < s->nslots; i++)
        s->vals[i] = b->nil;
    if (m->kind == MK_BLOCK) {
        s->self = emit(b, s, JI_SELF, 0, -1, -1, -1);
        s->ctx = emit(b, s, JI_FRAME_CTX, 0, -1, -1, -1);
    } else {
        s->self = s->vals[0];
        if (m->nctx) s->ctx = emit(b, s, JI_FRAME_CTX, 0, -1, -1, -1);
    }
    /* states[0]: the entry state */
    s->pre_sp = 0;
    memcpy(s->pre, s->vals, s->nslots * sizeof *s->vals);
    make_state(b, s);
    s->state_memo = -1;
    translate_body(b, s);
    if (b->failed || b->restart) {
        jit_func_free(f);
        return NULL;
    }
    remove_trivial_phis(f);
    return f;
}

JitFunc *jit_build(SomVM *vm, SomMethod *m, const JitBuildOpts *o, char *err, size_t errlen) {
    JitBuildOpts def;
    if (!o) {
        jit_build_defaults(&def);
        o = &def;
    }
    B b = {.vm = vm, .o = o, .err = err, .errlen = errlen};
    if (errlen) err[0] = 0;
    JitFunc *f = NULL;
    if (m->kind == MK_PRIMITIVE) {
        fail(&b, "primitive");
    } else if (sends_restart(m)) {
        fail(&b, "sends restart");
    } else {
        /* the first pass may inline past the budget; when it did, a second spends it by
         * frequency (plan_inlining), its phis typed afresh (their keys name scopes) */
        b.cap = o->inline_plan ? PLAN_CAP * o->max_total_size : o->max_total_size;
        for (int pass = 0; pass < 2 && !f && !b.failed; pass++) {
            for (int tries = 0; tries <= MAX_RESTARTS; tries++) {
                if (o->trace) {
                    if (b.tr) fclose(b.tr);
                    free(b.tbuf);
                    b.tbuf = NULL;
                    b.tr = open_memstream(&b.tbuf, &b.tlen);
                }
                f = build_once(&b, m);
                if (f || b.failed || !b.restart) break;
            }
            if (!f && !b.failed) fail(&b, "phi types do not settle");
            if (f && pass == 0 && b.total > o->max_total_size) {
                plan_inlining(&b);
                jit_func_free(f);
                f = NULL;
                b.nforced = 0;
            }
        }
    }
    if (b.tr) {
        fclose(b.tr);
        if (b.pbuf) fputs(b.pbuf, stderr);
        fputs(b.tbuf, stderr);
    }
    free(b.pbuf);
    free(b.tbuf);
    free(b.cands);
    free(b.plan);
    free(b.forced);
    free(b.blk_scope);
    return f;
}

/* ---- trivial phis ------------------------------------------------------------------------ */

static JitRef resolve(JitRef *fwd, JitRef r) {
    while (r >= 0 && fwd[r] != r)
        r = fwd[r];
    return r;
}

/* Removes phis whose inputs are all one value (or the phi itself), until none is left, and
 * forwards their uses (operands, phi inputs, frame states). */
static void remove_trivial_phis(JitFunc *f) {
    JitRef *fwd = malloc((f->ninsts + 1) * sizeof *fwd);
    if (!fwd) abort();
    for (uint32_t i = 0; i < f->ninsts; i++)
        fwd[i] = (JitRef)i;
    bool changed = true;
    while (changed) {
        changed = false;
        for (uint32_t i = 0; i < f->ninsts; i++) {
            JitInst *in = &f->insts[i];
            if (in->op != JI_PHI || in->dead) continue;
            JitBlock *bb = &f->blocks[in->block];
            JitRef same = -1;
            bool trivial = true;
            for (uint32_t p = 0; p < bb->npreds; p++) {
                JitRef x = resolve(fwd, in->phi[p]);
                if (x == (JitRef)i || x == same) continue;
                if (same >= 0) {
                    trivial = false;
                    break;
                }
                same = x;
            }
            if (!trivial || same < 0) continue;
            in->dead = 1;
            fwd[i] = same;
            changed = true;
        }
    }
    for (uint32_t i = 0; i < f->ninsts; i++) {
        JitInst *in = &f->insts[i];
        if (in->dead) continue;
        for (int k = 0; k < in->nargs; k++)
            if (in->a[k] >= 0) in->a[k] = resolve(fwd, in->a[k]);
        if (in->op == JI_PHI)
            for (uint32_t p = 0; p < f->blocks[in->block].npreds; p++)
                in->phi[p] = resolve(fwd, in->phi[p]);
    }
    for (uint32_t s = 0; s < f->nstates; s++)
        for (uint32_t k = 0; k < f->states[s].nscopes; k++) {
            JitStateScope *sc = &f->states[s].scopes[k];
            sc->self = resolve(fwd, sc->self);
            sc->ctx = resolve(fwd, sc->ctx);
            for (uint32_t i = 0; i < sc->nslots; i++)
                sc->slots[i] = resolve(fwd, sc->slots[i]);
            for (uint32_t i = 0; i < sc->nstack; i++)
                sc->stack[i] = resolve(fwd, sc->stack[i]);
        }
    /* drop the dead phis from their blocks */
    for (uint32_t bi = 0; bi < f->nblocks; bi++) {
        JitBlock *bb = &f->blocks[bi];
        uint32_t o = 0;
        for (uint32_t i = 0; i < bb->ninsts; i++)
            if (!f->insts[bb->insts[i]].dead) bb->insts[o++] = bb->insts[i];
        bb->ninsts = o;
    }
    free(fwd);
}
