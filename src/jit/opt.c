/* SPDX-License-Identifier: MIT */
/*
 * opt.c - IR simplification (compile.h: jit_optimize).
 *
 * Passes, repeated until nothing changes (at most a few rounds):
 *   fold      constants through boxing, arithmetic, comparisons and type tests; guards and
 *             branches whose condition is known; box/unbox pairs
 *   cse       pure instructions (and guarded arithmetic) computed again where an equal one
 *             dominates; a guard of a condition already guarded on a dominating path
 *   branches  a BRANCH of a known condition becomes a JUMP; unreachable blocks go, the
 *             remaining blocks are renumbered
 *   phis      trivial phis (all inputs one value, or the phi itself)
 *   dce       instructions without effects that nothing (operand, phi, frame state of a live
 *             guard) uses
 * and at the end NEW_BLOCK.virt for blocks that only frame states mention.
 *
 * Replacing a value: fwd[] maps instruction ids to their replacements, applied to every
 * operand, phi input and frame-state value by forward(); removed instructions are marked
 * dead and dropped from their blocks.
 */
#include "compile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Opt {
    JitFunc *f;
    JitRef *fwd;
    int32_t *idom, *rpo; /* per block */
    int32_t *order;      /* blocks in reverse postorder */
    uint32_t norder;
    uint32_t *index; /* instruction's position in its block */
    bool changed;
} Opt;

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) abort();
    return p;
}

static JitInst *I(Opt *o, JitRef r) {
    return &o->f->insts[r];
}

/* ---- forwarding ------------------------------------------------------------------------- */

static JitRef resolve(Opt *o, JitRef r) {
    while (r >= 0 && o->fwd[r] != r)
        r = o->fwd[r];
    return r;
}

static void replace(Opt *o, JitRef old, JitRef new) {
    o->fwd[old] = new;
    I(o, old)->dead = 1;
    o->changed = true;
}

static void forward(Opt *o) {
    JitFunc *f = o->f;
    for (uint32_t i = 0; i < f->ninsts; i++) {
        JitInst *in = &f->insts[i];
        if (in->dead) continue;
        for (int k = 0; k < in->nargs; k++)
            if (in->a[k] >= 0) in->a[k] = resolve(o, in->a[k]);
        if (in->op == JI_PHI && in->phi)
            for (uint32_t p = 0; p < f->blocks[in->block].npreds; p++)
                in->phi[p] = resolve(o, in->phi[p]);
    }
    for (uint32_t s = 0; s < f->nstates; s++)
        for (uint32_t k = 0; k < f->states[s].nscopes; k++) {
            JitStateScope *sc = &f->states[s].scopes[k];
            sc->self = resolve(o, sc->self);
            sc->ctx = resolve(o, sc->ctx);
            for (uint32_t i = 0; i < sc->nslots; i++)
                sc->slots[i] = resolve(o, sc->slots[i]);
            for (uint32_t i = 0; i < sc->nstack; i++)
                sc->stack[i] = resolve(o, sc->stack[i]);
        }
    for (uint32_t b = 0; b < f->nblocks; b++) {
        JitBlock *bb = &f->blocks[b];
        uint32_t n = 0;
        for (uint32_t i = 0; i < bb->ninsts; i++)
            if (!f->insts[bb->insts[i]].dead) bb->insts[n++] = bb->insts[i];
        bb->ninsts = n;
    }
    for (uint32_t i = 0; i < f->ninsts; i++)
        o->fwd[i] = (JitRef)i;
}

/* ---- dominators ------------------------------------------------------------------------- */

static void dominators(Opt *o) {
    JitFunc *f = o->f;
    uint32_t n = f->nblocks;
    free(o->idom);
    free(o->rpo);
    free(o->order);
    o->idom = xmalloc(n * sizeof *o->idom);
    o->rpo = xmalloc(n * sizeof *o->rpo);
    o->order = xmalloc(n * sizeof *o->order);
    int32_t *post = xmalloc(n * sizeof *post), np = 0;
    int32_t *stack = xmalloc((2 * n + 2) * sizeof *stack), sp = 0;
    uint8_t *seen = calloc(n ? n : 1, 1);
    if (!seen) abort();
    for (uint32_t i = 0; i < n; i++)
        o->idom[i] = o->rpo[i] = -1;
    stack[sp++] = 0;
    stack[sp++] = 0;
    seen[0] = 1;
    while (sp) {
        int32_t b = stack[sp - 2], k = stack[sp - 1];
        if (k < 2) {
            stack[sp - 1]++;
            int32_t s = f->blocks[b].succ[k];
            if (s >= 0 && !seen[s]) {
                seen[s] = 1;
                stack[sp++] = s;
                stack[sp++] = 0;
            }
        } else {
            post[np++] = b;
            sp -= 2;
        }
    }
    o->norder = (uint32_t)np;
    for (int32_t i = 0; i < np; i++) {
        o->order[i] = post[np - 1 - i];
        o->rpo[o->order[i]] = i;
    }
    o->idom[0] = 0;
    bool changed = true;
    while (changed) {
        changed = false;
        for (uint32_t i = 1; i < o->norder; i++) {
            int32_t b = o->order[i], nd = -1;
            JitBlock *bb = &f->blocks[b];
            for (uint32_t p = 0; p < bb->npreds; p++) {
                int32_t q = bb->preds[p];
                if (o->idom[q] < 0) continue;
                if (nd < 0) {
                    nd = q;
                    continue;
                }
                int32_t x = q, y = nd;
                while (x != y) {
                    while (o->rpo[x] > o->rpo[y])
                        x = o->idom[x];
                    while (o->rpo[y] > o->rpo[x])
                        y = o->idom[y];
                }
                nd = x;
            }
            if (nd >= 0 && o->idom[b] != nd) {
                o->idom[b] = nd;
                changed = true;
            }
        }
    }
    free(post);
    free(stack);
    free(seen);
    free(o->index);
    o->index = xmalloc((f->ninsts + 1) * sizeof *o->index);
    for (uint32_t b = 0; b < n; b++)
        for (uint32_t i = 0; i < f->blocks[b].ninsts; i++)
            o->index[f->blocks[b].insts[i]] = i;
}

/* Does instruction a dominate instruction b? */
static bool dominates(Opt *o, JitRef a, JitRef b) {
    int32_t ba = I(o, a)->block, bb = I(o, b)->block;
    if (ba == bb) return o->index[a] < o->index[b];
    if (o->idom[bb] < 0) return false;
    while (bb != 0) {
        bb = o->idom[bb];
        if (bb == ba) return true;
    }
    return ba == 0;
}

/* ---- constant folding ----------------------------------------------------------------- */

static bool is_const_int(Opt *o, JitRef r, int64_t *v) {
    JitInst *in = I(o, r);
    if (in->op == JI_CONST_INT) {
        *v = in->ival;
        return true;
    }
    return false;
}

static bool is_const_dbl(Opt *o, JitRef r, double *v) {
    JitInst *in = I(o, r);
    if (in->op == JI_CONST_DBL) {
        *v = in->dval;
        return true;
    }
    return false;
}

static bool const_value(Opt *o, JitRef r, Value *v) {
    JitInst *in = I(o, r);
    if (in->op == JI_CONST) {
        *v = in->cval;
        return true;
    }
    if (in->op == JI_CONST_INT) {
        *v = som_mkint(in->ival);
        return true;
    }
    return false;
}

/* What is known of a BOOL value: -1 unknown, 0 false, 1 true. */
static int known_bool(Opt *o, JitRef r) {
    JitInst *in = I(o, r);
    SomVM *vm = o->f->vm;
    Value v, w;
    int64_t x, y;
    double dx, dy;
    switch (in->op) {
    case JI_IS_INT:
        if (const_value(o, in->a[0], &v)) return v != 0 && som_is_int(v);
        if (I(o, in->a[0])->op == JI_BOX_INT) return 1;
        if (I(o, in->a[0])->op == JI_BOX_DBL || I(o, in->a[0])->op == JI_NEW_BLOCK) return 0;
        return -1;
    case JI_IS_DBL:
        if (const_value(o, in->a[0], &v))
            return v != 0 &&
                   (som_is_imm_double(v) || (som_is_obj(v) && som_hdr(v)->kind == OBJ_DOUBLE));
        if (I(o, in->a[0])->op == JI_BOX_DBL) return 1;
        if (I(o, in->a[0])->op == JI_BOX_INT || I(o, in->a[0])->op == JI_NEW_BLOCK) return 0;
        return -1;
    case JI_HAS_CLASS:
        if (const_value(o, in->a[0], &v) && v) return som_class_of(vm, v) == in->cls;
        if (I(o, in->a[0])->op == JI_BOX_INT) return in->cls == vm->integerClass;
        if (I(o, in->a[0])->op == JI_BOX_DBL) return in->cls == vm->doubleClass;
        return -1;
    case JI_IS_KIND:
        if (const_value(o, in->a[0], &v) && v) return som_is_obj(v) && som_hdr(v)->kind == in->ival;
        if (I(o, in->a[0])->op == JI_BOX_INT) return 0;
        if (I(o, in->a[0])->op == JI_NEW_BLOCK) return in->ival == OBJ_BLOCK;
        return -1;
    case JI_VEQ:
        if (in->a[0] == in->a[1]) return 1;
        if (const_value(o, in->a[0], &v) && const_value(o, in->a[1], &w)) return v == w;
        return -1;
    case JI_BNOT: {
        int k = known_bool(o, in->a[0]);
        return k < 0 ? -1 : !k;
    }
    case JI_ICMP:
        if (!is_const_int(o, in->a[0], &x) || !is_const_int(o, in->a[1], &y)) {
            if (in->a[0] == in->a[1])
                return in->cmp == JC_LE || in->cmp == JC_GE || in->cmp == JC_EQ;
            return -1;
        }
        switch (in->cmp) {
        case JC_LT:
            return x < y;
        case JC_GT:
            return x > y;
        case JC_LE:
            return x <= y;
        case JC_GE:
            return x >= y;
        case JC_EQ:
            return x == y;
        default:
            return x != y;
        }
    case JI_DCMP:
        if (!is_const_dbl(o, in->a[0], &dx) || !is_const_dbl(o, in->a[1], &dy)) return -1;
        switch (in->cmp) {
        case JC_LT:
            return dx < dy;
        case JC_GT:
            return dx > dy;
        case JC_LE:
            return dx <= dy;
        case JC_GE:
            return dx >= dy;
        case JC_EQ:
            return dx == dy;
        default:
            return dx != dy;
        }
    default:
        return -1;
    }
}

/* Turns r into a constant (dropping its operands, frame state and position). */
static void make_const(Opt *o, JitRef r, JitOp op) {
    JitInst *in = I(o, r);
    in->op = (uint16_t)op;
    in->type = jit_op_type[op];
    in->nargs = 0;
    in->deopt = -1;
    in->pos = JIT_POS_NONE;
    for (int k = 0; k < JIT_MAX_ARGS; k++)
        in->a[k] = -1;
    o->changed = true;
}

static void fold_int(Opt *o, JitRef r, int64_t v) {
    make_const(o, r, JI_CONST_INT);
    I(o, r)->ival = v;
}

static void fold_dbl(Opt *o, JitRef r, double v) {
    make_const(o, r, JI_CONST_DBL);
    I(o, r)->dval = v;
}

static void fold_inst(Opt *o, JitRef r) {
    JitInst *in = I(o, r);
    int64_t x, y, z;
    double dx, dy;
    Value v;
    JitInst *a0 = in->nargs > 0 && in->a[0] >= 0 ? I(o, in->a[0]) : NULL;
    switch (in->op) {
    case JI_BOX_INT:
        if (is_const_int(o, in->a[0], &x)) {
            make_const(o, r, JI_CONST);
            I(o, r)->cval = som_mkint(x);
        } else if (a0->op == JI_UNBOX_INT) {
            replace(o, r, a0->a[0]);
        }
        break;
    case JI_UNBOX_INT:
        if (const_value(o, in->a[0], &v) && v && som_is_int(v))
            fold_int(o, r, som_int(v));
        else if (a0->op == JI_BOX_INT)
            replace(o, r, a0->a[0]);
        break;
    case JI_UNBOX_DBL:
        if (const_value(o, in->a[0], &v) && som_is_imm_double(v))
            fold_dbl(o, r, som_imm_double(v));
        else if (a0->op == JI_BOX_DBL)
            replace(o, r, a0->a[0]);
        break;
    case JI_BOX_DBL:
        if (a0->op == JI_UNBOX_DBL) replace(o, r, a0->a[0]);
        break;
    case JI_INT_TO_DBL:
        if (is_const_int(o, in->a[0], &x)) fold_dbl(o, r, (double)x);
        break;
    case JI_IADD:
    case JI_ISUB:
    case JI_IMUL:
        if (is_const_int(o, in->a[0], &x) && is_const_int(o, in->a[1], &y)) {
            bool ovf = in->op == JI_IADD   ? __builtin_add_overflow(x, y, &z)
                       : in->op == JI_ISUB ? __builtin_sub_overflow(x, y, &z)
                                           : __builtin_mul_overflow(x, y, &z);
            if (!ovf && som_fits_smallint(z)) fold_int(o, r, z);
        }
        break;
    case JI_IAND:
    case JI_IOR:
    case JI_IXOR:
        if (is_const_int(o, in->a[0], &x) && is_const_int(o, in->a[1], &y))
            fold_int(o, r, in->op == JI_IAND ? (x & y) : in->op == JI_IOR ? (x | y) : (x ^ y));
        break;
    case JI_DADD:
    case JI_DSUB:
    case JI_DMUL:
    case JI_DDIV:
        if (is_const_dbl(o, in->a[0], &dx) && is_const_dbl(o, in->a[1], &dy))
            fold_dbl(o, r,
                     in->op == JI_DADD   ? dx + dy
                     : in->op == JI_DSUB ? dx - dy
                     : in->op == JI_DMUL ? dx * dy
                                         : dx / dy);
        break;
    case JI_GUARD:
        if (known_bool(o, in->a[0]) == 1) {
            in->dead = 1;
            o->changed = true;
        }
        break;
    case JI_BOOL_TO_VALUE: {
        int k = known_bool(o, in->a[0]);
        if (k >= 0) {
            make_const(o, r, JI_CONST);
            I(o, r)->cval = k ? o->f->vm->true_ : o->f->vm->false_;
        }
        break;
    }
    case JI_VALUE_TO_BOOL:
        if (a0->op == JI_BOOL_TO_VALUE) replace(o, r, a0->a[0]);
        break;
    default:
        break;
    }
}

static void fold(Opt *o) {
    JitFunc *f = o->f;
    for (uint32_t b = 0; b < f->nblocks; b++)
        for (uint32_t i = 0; i < f->blocks[b].ninsts; i++) {
            JitRef r = f->blocks[b].insts[i];
            if (!I(o, r)->dead) fold_inst(o, r);
        }
    forward(o);
}

/* ---- common subexpressions and redundant guards ---------------------------------------- */

static bool pure(const JitInst *in) {
    switch (in->op) {
    case JI_CONST:
    case JI_CONST_INT:
    case JI_CONST_DBL:
    case JI_CONST_PTR:
    case JI_IS_INT:
    case JI_IS_DBL:
    case JI_HAS_CLASS:
    case JI_IS_KIND:
    case JI_UNBOX_INT:
    case JI_BOX_INT:
    case JI_UNBOX_DBL:
    case JI_INT_TO_DBL:
    case JI_BOOL_TO_VALUE:
    case JI_VALUE_TO_BOOL:
    case JI_IADD:
    case JI_ISUB:
    case JI_IMUL:
    case JI_IAND:
    case JI_IOR:
    case JI_IXOR:
    case JI_ISHR:
    case JI_ICMP:
    case JI_DADD:
    case JI_DSUB:
    case JI_DMUL:
    case JI_DDIV:
    case JI_DSQRT:
    case JI_DCMP:
    case JI_VEQ:
    case JI_BNOT:
    case JI_ARRAY_LEN:
    case JI_STRING_LEN:
    case JI_FIELD_COUNT:
    case JI_CTX_OUTER:
        return true;
    default:
        return false;
    }
}

static bool same_expr(const JitInst *a, const JitInst *b) {
    if (a->op != b->op || a->type != b->type || a->nargs != b->nargs || a->cmp != b->cmp)
        return false;
    for (int k = 0; k < a->nargs; k++)
        if (a->a[k] != b->a[k]) return false;
    switch (a->op) {
    case JI_CONST:
        return a->cval == b->cval;
    case JI_CONST_INT:
    case JI_IS_KIND:
        return a->ival == b->ival;
    case JI_CONST_DBL:
        return memcmp(&a->dval, &b->dval, sizeof a->dval) == 0;
    case JI_CONST_PTR:
        return a->pval == b->pval;
    case JI_HAS_CLASS:
        return a->cls == b->cls;
    default:
        return true;
    }
}

static uint64_t expr_hash(const JitInst *a) {
    uint64_t h = a->op * 1000003u + a->cmp;
    for (int k = 0; k < a->nargs; k++)
        h = h * 31 + (uint64_t)(uint32_t)a->a[k];
    h = h * 31 + (uint64_t)a->ival + (uint64_t)(uintptr_t)a->cls;
    return h;
}

/* Is `v` known to be an OBJ_INSTANCE by a guard of HAS_CLASS(v, C) dominating `at`? */
static bool instance_by_class(Opt *o, JitRef *guards, uint32_t ng, JitRef v, JitRef at) {
    SomVM *vm = o->f->vm;
    for (uint32_t i = 0; i < ng; i++) {
        JitInst *g = I(o, guards[i]);
        if (g->dead) continue;
        JitInst *c = I(o, g->a[0]);
        if (c->op != JI_HAS_CLASS || c->a[0] != v || !dominates(o, guards[i], at)) continue;
        SomClass *cls = c->cls;
        bool inst = !cls->is_meta;
        for (SomClass *k = cls; k && inst; k = k->super)
            inst = !(k == vm->integerClass || k == vm->doubleClass || k == vm->arrayClass ||
                     k == vm->stringClass || k == vm->symbolClass || k == vm->blockClass ||
                     k == vm->methodClass || k == vm->primitiveClass || k == vm->classClass ||
                     k == vm->metaclassClass);
        if (inst) return true;
    }
    return false;
}

static void cse(Opt *o) {
    JitFunc *f = o->f;
    dominators(o);
    uint32_t cap = 64;
    while (cap < f->ninsts * 2)
        cap *= 2;
    JitRef *tab = xmalloc(cap * sizeof *tab); /* chains through next[] */
    JitRef *next = xmalloc((f->ninsts + 1) * sizeof *next);
    JitRef *guards = xmalloc((f->ninsts + 1) * sizeof *guards);
    uint32_t ng = 0;
    for (uint32_t i = 0; i < cap; i++)
        tab[i] = -1;
    for (uint32_t k = 0; k < o->norder; k++) {
        JitBlock *bb = &f->blocks[o->order[k]];
        for (uint32_t i = 0; i < bb->ninsts; i++) {
            JitRef r = bb->insts[i];
            JitInst *in = I(o, r);
            if (in->dead) continue;
            for (int a = 0; a < in->nargs; a++)
                if (in->a[a] >= 0) in->a[a] = resolve(o, in->a[a]);
            if (in->op == JI_GUARD) {
                /* the same condition guarded on every path here already? */
                bool redundant = false;
                for (uint32_t g = 0; g < ng && !redundant; g++)
                    redundant = I(o, guards[g])->a[0] == in->a[0] && dominates(o, guards[g], r);
                JitInst *c = I(o, in->a[0]);
                if (!redundant && c->op == JI_IS_KIND && c->ival == OBJ_INSTANCE)
                    redundant = instance_by_class(o, guards, ng, c->a[0], r);
                if (redundant) {
                    in->dead = 1;
                    o->changed = true;
                } else {
                    guards[ng++] = r;
                }
                continue;
            }
            if (!pure(in)) continue;
            uint32_t h = (uint32_t)(expr_hash(in) & (cap - 1));
            JitRef found = -1;
            for (JitRef c = tab[h]; c >= 0; c = next[c])
                if (!I(o, c)->dead && same_expr(I(o, c), in) && dominates(o, c, r)) {
                    found = c;
                    break;
                }
            if (found >= 0) {
                replace(o, r, found);
                continue;
            }
            next[r] = tab[h];
            tab[h] = r;
        }
    }
    free(tab);
    free(next);
    free(guards);
    forward(o);
}

/* ---- redundant loads (within a block) ------------------------------------------------ */

/* What a block has read or written so far: kind (the load op), object, index, value. A store
 * forgets every entry of its kind with the same index (another object may be the same
 * one); a call (SEND, NLR, SAFEPOINT: SOM code or hooks may run) forgets everything. */
typedef struct Avail {
    uint16_t kind;
    JitRef obj;
    int64_t idx;
    JitRef val;
} Avail;

#define MAX_AVAIL 64

static void avail_put(Avail *t, uint32_t *n, uint16_t kind, JitRef obj, int64_t idx, JitRef v) {
    if (*n == MAX_AVAIL) memmove(t, t + 1, --*n * sizeof *t);
    t[(*n)++] = (Avail){kind, obj, idx, v};
}

static void avail_kill(Avail *t, uint32_t *n, uint16_t kind, int64_t idx, bool any_idx) {
    uint32_t k = 0;
    for (uint32_t i = 0; i < *n; i++)
        if (t[i].kind != kind || (!any_idx && t[i].idx != idx)) t[k++] = t[i];
    *n = k;
}

static void loads(Opt *o) {
    JitFunc *f = o->f;
    Avail t[MAX_AVAIL];
    for (uint32_t b = 0; b < f->nblocks; b++) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < f->blocks[b].ninsts; i++) {
            JitRef r = f->blocks[b].insts[i];
            JitInst *in = I(o, r);
            if (in->dead) continue;
            for (int a = 0; a < in->nargs; a++)
                if (in->a[a] >= 0) in->a[a] = resolve(o, in->a[a]);
            uint16_t kind = 0;
            int64_t idx = in->ival;
            bool store = false;
            switch (in->op) {
            case JI_LOAD_FIELD:
            case JI_CTX_LOAD:
            case JI_CFIELD_LOAD:
                kind = in->op;
                break;
            case JI_ARRAY_LOAD:
                kind = in->op;
                idx = in->a[1];
                break;
            case JI_GLOBAL_LOAD:
                kind = in->op;
                idx = (int64_t)(intptr_t)in->sym;
                break;
            case JI_STORE_FIELD:
                kind = JI_LOAD_FIELD, store = true;
                break;
            case JI_CTX_STORE:
                kind = JI_CTX_LOAD, store = true;
                break;
            case JI_CFIELD_STORE:
                kind = JI_CFIELD_LOAD, store = true;
                break;
            case JI_ARRAY_STORE:
                kind = JI_ARRAY_LOAD, store = true;
                idx = in->a[1];
                break;
            case JI_SEND:
            case JI_NLR:
            case JI_SAFEPOINT:
                n = 0;
                continue;
            default:
                continue;
            }
            JitRef obj = in->op == JI_GLOBAL_LOAD ? -1 : in->a[0];
            if (store) {
                avail_kill(t, &n, kind, idx, kind == JI_ARRAY_LOAD);
                avail_put(t, &n, kind, obj, idx, in->a[in->op == JI_ARRAY_STORE ? 2 : 1]);
                continue;
            }
            JitRef found = -1;
            for (uint32_t k = 0; k < n && found < 0; k++)
                if (t[k].kind == kind && t[k].obj == obj && t[k].idx == idx) found = t[k].val;
            if (found >= 0)
                replace(o, r, found);
            else
                avail_put(t, &n, kind, obj, idx, r);
        }
    }
    forward(o);
}

/* ---- branches and unreachable blocks -------------------------------------------------- */

static void remove_pred(JitFunc *f, int32_t b, int32_t pred) {
    JitBlock *bb = &f->blocks[b];
    uint32_t p = 0;
    while (p < bb->npreds && bb->preds[p] != pred)
        p++;
    if (p == bb->npreds) return;
    for (uint32_t i = 0; i < bb->ninsts; i++) {
        JitInst *in = &f->insts[bb->insts[i]];
        if (in->op != JI_PHI) break;
        memmove(in->phi + p, in->phi + p + 1, (bb->npreds - p - 1) * sizeof *in->phi);
    }
    memmove(bb->preds + p, bb->preds + p + 1, (bb->npreds - p - 1) * sizeof *bb->preds);
    bb->npreds--;
}

static void fold_branches(Opt *o) {
    JitFunc *f = o->f;
    for (uint32_t b = 0; b < f->nblocks; b++) {
        JitBlock *bb = &f->blocks[b];
        if (!bb->ninsts) continue;
        JitInst *t = I(o, bb->insts[bb->ninsts - 1]);
        if (t->op != JI_BRANCH) continue;
        int k = known_bool(o, t->a[0]);
        if (k < 0 && bb->succ[0] != bb->succ[1]) continue;
        if (k < 0) k = 1;
        int32_t keep = bb->succ[k ? 0 : 1], drop = bb->succ[k ? 1 : 0];
        t->op = JI_JUMP;
        t->nargs = 0;
        t->a[0] = -1;
        bb->succ[0] = keep;
        bb->succ[1] = -1;
        remove_pred(f, drop, (int32_t)b);
        o->changed = true;
    }
}

/* Drops blocks unreachable from the entry and renumbers the others. */
static void remove_unreachable(Opt *o) {
    JitFunc *f = o->f;
    uint32_t n = f->nblocks;
    uint8_t *reach = calloc(n, 1);
    int32_t *work = xmalloc(n * sizeof *work), nw = 0;
    if (!reach) abort();
    reach[0] = 1;
    work[nw++] = 0;
    while (nw) {
        int32_t b = work[--nw];
        for (int k = 0; k < 2; k++) {
            int32_t s = f->blocks[b].succ[k];
            if (s >= 0 && !reach[s]) {
                reach[s] = 1;
                work[nw++] = s;
            }
        }
    }
    bool any = false;
    for (uint32_t b = 0; b < n; b++)
        if (!reach[b]) {
            any = true;
            for (int k = 0; k < 2; k++)
                if (f->blocks[b].succ[k] >= 0 && reach[f->blocks[b].succ[k]])
                    remove_pred(f, f->blocks[b].succ[k], (int32_t)b);
        }
    if (any) {
        int32_t *map = xmalloc(n * sizeof *map);
        uint32_t m = 0;
        for (uint32_t b = 0; b < n; b++) {
            if (!reach[b]) {
                for (uint32_t i = 0; i < f->blocks[b].ninsts; i++)
                    f->insts[f->blocks[b].insts[i]].dead = 1;
                free(f->blocks[b].insts);
                free(f->blocks[b].preds);
                map[b] = -1;
                continue;
            }
            map[b] = (int32_t)m;
            f->blocks[m++] = f->blocks[b];
        }
        f->nblocks = m;
        for (uint32_t b = 0; b < m; b++) {
            JitBlock *bb = &f->blocks[b];
            for (int k = 0; k < 2; k++)
                if (bb->succ[k] >= 0) bb->succ[k] = map[bb->succ[k]];
            for (uint32_t p = 0; p < bb->npreds; p++)
                bb->preds[p] = map[bb->preds[p]];
            for (uint32_t i = 0; i < bb->ninsts; i++)
                f->insts[bb->insts[i]].block = (int32_t)b;
        }
        free(map);
        o->changed = true;
    }
    free(reach);
    free(work);
}

/* Appends B to A where A ends with a JUMP to B and B has no other predecessor (and no phi). */
static void merge_blocks(Opt *o) {
    JitFunc *f = o->f;
    for (uint32_t a = 0; a < f->nblocks; a++) {
        for (;;) {
            JitBlock *ba = &f->blocks[a];
            if (!ba->ninsts) break;
            JitRef t = ba->insts[ba->ninsts - 1];
            if (I(o, t)->op != JI_JUMP) break;
            int32_t b = ba->succ[0];
            JitBlock *bb = &f->blocks[b];
            if (b == 0 || b == (int32_t)a || bb->npreds != 1 || !bb->ninsts ||
                I(o, bb->insts[0])->op == JI_PHI)
                break;
            I(o, t)->dead = 1;
            ba->ninsts--;
            for (uint32_t i = 0; i < bb->ninsts; i++) {
                if (ba->ninsts == ba->cap) {
                    ba->cap = ba->cap ? ba->cap * 2 : 8;
                    ba->insts = realloc(ba->insts, ba->cap * sizeof *ba->insts);
                    if (!ba->insts) abort();
                }
                ba->insts[ba->ninsts++] = bb->insts[i];
                I(o, bb->insts[i])->block = (int32_t)a;
            }
            ba->succ[0] = bb->succ[0];
            ba->succ[1] = bb->succ[1];
            for (int k = 0; k < 2; k++) {
                int32_t sidx = bb->succ[k];
                if (sidx < 0) continue;
                JitBlock *sb = &f->blocks[sidx];
                for (uint32_t p = 0; p < sb->npreds; p++)
                    if (sb->preds[p] == b) {
                        sb->preds[p] = (int32_t)a;
                        break; /* one edge per successor slot */
                    }
            }
            bb->ninsts = 0;
            bb->npreds = 0;
            bb->succ[0] = bb->succ[1] = -1;
            o->changed = true;
        }
    }
}

/* A SET_POS directly followed by another one (nothing in between) is overwritten at once. */
static void set_pos_pairs(Opt *o) {
    JitFunc *f = o->f;
    for (uint32_t b = 0; b < f->nblocks; b++) {
        JitBlock *bb = &f->blocks[b];
        for (uint32_t i = 0; i + 1 < bb->ninsts; i++) {
            JitInst *in = I(o, bb->insts[i]);
            if (in->op == JI_SET_POS && I(o, bb->insts[i + 1])->op == JI_SET_POS) {
                in->dead = 1;
                o->changed = true;
            }
        }
    }
    forward(o);
}

/* ---- phis and dead code --------------------------------------------------------------- */

static void trivial_phis(Opt *o) {
    JitFunc *f = o->f;
    bool again = true;
    while (again) {
        again = false;
        for (uint32_t b = 0; b < f->nblocks; b++) {
            JitBlock *bb = &f->blocks[b];
            for (uint32_t i = 0; i < bb->ninsts; i++) {
                JitRef r = bb->insts[i];
                JitInst *in = I(o, r);
                if (in->op != JI_PHI) break;
                if (in->dead) continue;
                JitRef same = -1;
                bool trivial = true;
                for (uint32_t p = 0; p < bb->npreds && trivial; p++) {
                    JitRef x = resolve(o, in->phi[p]);
                    if (x == r || x == same) continue;
                    if (same >= 0) trivial = false;
                    same = x;
                }
                if (trivial && same >= 0) {
                    replace(o, r, same);
                    again = true;
                }
            }
        }
    }
    forward(o);
}

static bool has_effect(const JitInst *in) {
    switch (in->op) {
    case JI_GUARD:
    case JI_STORE_FIELD:
    case JI_ARRAY_STORE:
    case JI_CTX_STORE:
    case JI_CFIELD_STORE:
    case JI_SEND:
    case JI_SAFEPOINT:
    case JI_NLR:
    case JI_SET_POS:
    case JI_FB_OBSERVE:
    case JI_JUMP:
    case JI_BRANCH:
    case JI_RETURN:
    case JI_DEOPT:
    case JI_RETURN_ZERO:
    case JI_IDIV: /* a zero divisor is an error in the interpreter: keep the check */
    case JI_IMOD:
    case JI_IREM:
    case JI_D2I:
        return true;
    default:
        return false;
    }
}

static void mark(uint8_t *live, JitRef *work, uint32_t *nw, JitRef r) {
    if (r < 0 || live[r]) return;
    live[r] = 1;
    work[(*nw)++] = r;
}

static void dce(Opt *o) {
    JitFunc *f = o->f;
    uint8_t *live = calloc(f->ninsts + 1, 1);
    JitRef *work = xmalloc((f->ninsts + 1) * sizeof *work);
    uint32_t nw = 0;
    if (!live) abort();
    for (uint32_t b = 0; b < f->nblocks; b++)
        for (uint32_t i = 0; i < f->blocks[b].ninsts; i++) {
            JitRef r = f->blocks[b].insts[i];
            if (!f->insts[r].dead && has_effect(&f->insts[r])) mark(live, work, &nw, r);
        }
    while (nw) {
        JitInst *in = &f->insts[work[--nw]];
        for (int k = 0; k < in->nargs; k++)
            mark(live, work, &nw, in->a[k]);
        if (in->op == JI_PHI && in->phi)
            for (uint32_t p = 0; p < f->blocks[in->block].npreds; p++)
                mark(live, work, &nw, in->phi[p]);
        if (in->deopt >= 0) {
            JitState *st = &f->states[in->deopt];
            for (uint32_t k = 0; k < st->nscopes; k++) {
                JitStateScope *sc = &st->scopes[k];
                mark(live, work, &nw, sc->self);
                mark(live, work, &nw, sc->ctx);
                for (uint32_t i = 0; i < sc->nslots; i++)
                    mark(live, work, &nw, sc->slots[i]);
                for (uint32_t i = 0; i < sc->nstack; i++)
                    mark(live, work, &nw, sc->stack[i]);
            }
        }
    }
    /* states[0] (the entry state) stays valid: its values are entry-block constants/args */
    JitState *st0 = f->nstates ? &f->states[0] : NULL;
    for (uint32_t k = 0; st0 && k < st0->nscopes; k++) {
        JitStateScope *sc = &st0->scopes[k];
        for (uint32_t i = 0; i < sc->nslots; i++)
            if (sc->slots[i] >= 0 && !live[sc->slots[i]]) {
                live[sc->slots[i]] = 1; /* keep (cheap: an ARG or CONST nil) */
            }
        if (sc->self >= 0) live[sc->self] = 1;
        if (sc->ctx >= 0) live[sc->ctx] = 1;
    }
    for (uint32_t b = 0; b < f->nblocks; b++)
        for (uint32_t i = 0; i < f->blocks[b].ninsts; i++) {
            JitRef r = f->blocks[b].insts[i];
            if (!live[r] && !f->insts[r].dead) {
                f->insts[r].dead = 1;
                o->changed = true;
            }
        }
    free(live);
    free(work);
    forward(o);
}

/* A NEW_BLOCK whose only mentions are frame states needs no allocation. */
static void virtual_blocks(Opt *o) {
    JitFunc *f = o->f;
    uint8_t *escapes = calloc(f->ninsts + 1, 1);
    if (!escapes) abort();
    for (uint32_t b = 0; b < f->nblocks; b++)
        for (uint32_t i = 0; i < f->blocks[b].ninsts; i++) {
            JitInst *in = &f->insts[f->blocks[b].insts[i]];
            for (int k = 0; k < in->nargs; k++)
                if (in->a[k] >= 0) escapes[in->a[k]] = 1;
            if (in->op == JI_PHI)
                for (uint32_t p = 0; p < f->blocks[b].npreds; p++)
                    escapes[in->phi[p]] = 1;
        }
    for (uint32_t i = 0; i < f->ninsts; i++) {
        JitInst *in = &f->insts[i];
        if (in->op == JI_NEW_BLOCK && !in->dead) in->virt = !escapes[i];
    }
    free(escapes);
}

/* loop_depth: how many natural loops (of back edges to a dominating header) hold a block. */
static void loop_depths(Opt *o) {
    JitFunc *f = o->f;
    dominators(o);
    int32_t *work = xmalloc((f->nblocks + 1) * sizeof *work);
    uint8_t *in = xmalloc(f->nblocks + 1);
    for (uint32_t b = 0; b < f->nblocks; b++)
        f->blocks[b].loop_depth = 0;
    for (uint32_t a = 0; a < f->nblocks; a++)
        for (int k = 0; k < 2; k++) {
            int32_t h = f->blocks[a].succ[k];
            if (h < 0 || o->idom[a] < 0) continue;
            int32_t x = (int32_t)a; /* a back edge if h dominates a */
            while (x != h && x != 0)
                x = o->idom[x];
            if (x != h) continue;
            memset(in, 0, f->nblocks);
            uint32_t nw = 0;
            in[h] = 1;
            if (!in[a]) {
                in[a] = 1;
                work[nw++] = (int32_t)a;
            }
            while (nw) {
                JitBlock *bb = &f->blocks[work[--nw]];
                for (uint32_t p = 0; p < bb->npreds; p++)
                    if (!in[bb->preds[p]]) {
                        in[bb->preds[p]] = 1;
                        work[nw++] = bb->preds[p];
                    }
            }
            for (uint32_t b = 0; b < f->nblocks; b++)
                f->blocks[b].loop_depth += in[b];
        }
    free(work);
    free(in);
}

/* Drops frame states no live instruction uses (their values may be dead), keeping states[0]
 * first, and renumbers the others. */
static void compact_states(JitFunc *f) {
    int32_t *map = xmalloc((f->nstates + 1) * sizeof *map);
    for (uint32_t i = 0; i < f->nstates; i++)
        map[i] = i == 0 ? 0 : -1;
    for (uint32_t b = 0; b < f->nblocks; b++)
        for (uint32_t i = 0; i < f->blocks[b].ninsts; i++) {
            JitInst *in = &f->insts[f->blocks[b].insts[i]];
            if (in->deopt >= 0) map[in->deopt] = 0;
        }
    uint32_t n = 0;
    for (uint32_t i = 0; i < f->nstates; i++)
        if (map[i] >= 0) {
            map[i] = (int32_t)n;
            f->states[n++] = f->states[i];
        }
    f->nstates = n;
    for (uint32_t i = 0; i < f->ninsts; i++) {
        JitInst *in = &f->insts[i];
        if (in->deopt >= 0) in->deopt = in->dead ? -1 : map[in->deopt];
    }
    free(map);
}

void jit_optimize(JitFunc *f) {
    Opt o = {.f = f};
    o.fwd = xmalloc((f->ninsts + 1) * sizeof *o.fwd);
    for (uint32_t i = 0; i < f->ninsts; i++)
        o.fwd[i] = (JitRef)i;
    for (int round = 0; round < 4; round++) {
        o.changed = false;
        fold(&o);
        cse(&o);
        loads(&o);
        fold_branches(&o);
        remove_unreachable(&o);
        trivial_phis(&o);
        merge_blocks(&o);
        remove_unreachable(&o);
        set_pos_pairs(&o);
        dce(&o);
        if (!o.changed) break;
    }
    virtual_blocks(&o);
    loop_depths(&o);
    compact_states(f);
    for (uint32_t b = 0; b < f->nblocks; b++) { /* deoptimizing blocks go out of line */
        JitBlock *bb = &f->blocks[b];
        bb->cold = bb->ninsts && f->insts[bb->insts[bb->ninsts - 1]].op == JI_DEOPT;
    }
    free(o.fwd);
    free(o.idom);
    free(o.rpo);
    free(o.order);
    free(o.index);
}
