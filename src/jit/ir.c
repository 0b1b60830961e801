/* SPDX-License-Identifier: MIT */
/*
 * ir.c - the optimizing tier's IR: tables, construction, verification, printing (ir.h).
 *
 * Memory: the growable tables of a JitFunc (insts, blocks, states, pos, each block's
 * instruction and predecessor lists) are malloc'ed and grown with realloc; everything of a
 * fixed size (phi inputs, frame-state scopes and their value arrays) comes from the
 * function's arena (jit_alloc) and is freed with it.  Allocation failure aborts: the IR is
 * built from a bounded amount of bytecode, so it only happens when the process is out of
 * memory anyway.
 */
#include "ir.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "class.h"

const char *const jit_op_name[JI__COUNT] = {
#define JIT_OP_NAME(name, type) #name,
    JIT_OPS(JIT_OP_NAME)
#undef JIT_OP_NAME
};

const uint8_t jit_op_type[JI__COUNT] = {
#define JIT_OP_TYPE(name, type) JT_##type,
    JIT_OPS(JIT_OP_TYPE)
#undef JIT_OP_TYPE
};

/* ---- memory ---------------------------------------------------------------------------- */

typedef struct ArenaChunk {
    struct ArenaChunk *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
} ArenaChunk;

struct JitArena {
    ArenaChunk *head;
};

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) abort();
    return q;
}

void *jit_alloc(JitFunc *f, size_t size) {
    size = (size + 15) & ~(size_t)15;
    ArenaChunk *c = f->arena->head;
    if (!c || c->size - c->used < size) {
        size_t cs = size > 16384 ? size : 16384;
        c = xrealloc(NULL, sizeof(ArenaChunk) + cs);
        c->size = cs;
        c->used = 0;
        c->next = f->arena->head;
        f->arena->head = c;
    }
    void *p = c->data + c->used;
    c->used += size;
    memset(p, 0, size);
    return p;
}

/* Grows *arr (of elements of size el, capacity *cap) to hold at least n. */
static void grow(void **arr, uint32_t *cap, uint32_t n, size_t el) {
    if (n <= *cap) return;
    uint32_t nc = *cap ? *cap * 2 : 8;
    while (nc < n)
        nc *= 2;
    *arr = xrealloc(*arr, nc * el);
    *cap = nc;
}

JitFunc *jit_func_new(SomVM *vm, SomMethod *m) {
    JitFunc *f = xrealloc(NULL, sizeof *f);
    memset(f, 0, sizeof *f);
    f->vm = vm;
    f->method = m;
    f->arena = xrealloc(NULL, sizeof *f->arena);
    f->arena->head = NULL;
    if (m) class_method_name(m, f->name, sizeof f->name);
    return f;
}

void jit_func_free(JitFunc *f) {
    if (!f) return;
    for (uint32_t b = 0; b < f->nblocks; b++) {
        free(f->blocks[b].insts);
        free(f->blocks[b].preds);
    }
    free(f->blocks);
    free(f->insts);
    free(f->states);
    free(f->pos);
    for (ArenaChunk *c = f->arena->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(f->arena);
    free(f);
}

int32_t jit_block_new(JitFunc *f) {
    grow((void **)&f->blocks, &f->block_cap, f->nblocks + 1, sizeof *f->blocks);
    JitBlock *b = &f->blocks[f->nblocks];
    memset(b, 0, sizeof *b);
    b->succ[0] = b->succ[1] = -1;
    return (int32_t)f->nblocks++;
}

static JitRef new_inst(JitFunc *f, int32_t block, JitOp op) {
    grow((void **)&f->insts, &f->inst_cap, f->ninsts + 1, sizeof *f->insts);
    JitInst *in = &f->insts[f->ninsts];
    memset(in, 0, sizeof *in);
    in->op = (uint16_t)op;
    in->type = jit_op_type[op];
    in->block = block;
    in->deopt = -1;
    in->tic = -1;
    in->pos = JIT_POS_NONE;
    for (int i = 0; i < JIT_MAX_ARGS; i++)
        in->a[i] = -1;
    return (JitRef)f->ninsts++;
}

static void block_insert(JitFunc *f, int32_t block, uint32_t at, JitRef r) {
    JitBlock *b = &f->blocks[block];
    grow((void **)&b->insts, &b->cap, b->ninsts + 1, sizeof *b->insts);
    memmove(b->insts + at + 1, b->insts + at, (b->ninsts - at) * sizeof *b->insts);
    b->insts[at] = r;
    b->ninsts++;
}

JitRef jit_emit(JitFunc *f, int32_t block, JitOp op) {
    JitRef r = new_inst(f, block, op);
    block_insert(f, block, f->blocks[block].ninsts, r);
    return r;
}

static bool is_terminator(int op) {
    return op == JI_JUMP || op == JI_BRANCH || op == JI_RETURN || op == JI_DEOPT ||
           op == JI_RETURN_ZERO;
}

JitRef jit_emit_before_term(JitFunc *f, int32_t block, JitOp op) {
    JitBlock *b = &f->blocks[block];
    uint32_t at = b->ninsts;
    if (at && is_terminator(f->insts[b->insts[at - 1]].op)) at--;
    JitRef r = new_inst(f, block, op);
    block_insert(f, block, at, r);
    return r;
}

void jit_add_edge(JitFunc *f, int32_t from, int32_t to) {
    JitBlock *a = &f->blocks[from];
    if (a->succ[0] < 0)
        a->succ[0] = to;
    else
        a->succ[1] = to;
    JitBlock *b = &f->blocks[to];
    grow((void **)&b->preds, &b->pred_cap, b->npreds + 1, sizeof *b->preds);
    b->preds[b->npreds++] = from;
}

int32_t jit_state_new(JitFunc *f, uint32_t nscopes) {
    grow((void **)&f->states, &f->state_cap, f->nstates + 1, sizeof *f->states);
    JitState *s = &f->states[f->nstates];
    s->nscopes = nscopes;
    s->scopes = jit_alloc(f, nscopes * sizeof *s->scopes);
    return (int32_t)f->nstates++;
}

uint32_t jit_pos_new(JitFunc *f, SomMethod *m, uint32_t bci, uint32_t parent) {
    grow((void **)&f->pos, &f->pos_cap, f->npos + 1, sizeof *f->pos);
    f->pos[f->npos] = (JitPos){m, bci, parent};
    return f->npos++;
}

const char *jit_type_name(int t) {
    static const char *const names[] = {"void", "value", "int", "dbl", "bool", "ptr"};
    return t >= 0 && t <= JT_PTR ? names[t] : "?";
}

bool jit_op_can_deopt(int op) {
    switch (op) {
    case JI_GUARD:
    case JI_DEOPT:
    case JI_IADD:
    case JI_ISUB:
    case JI_IMUL:
    case JI_IDIV:
    case JI_IMOD:
    case JI_IREM:
    case JI_ISHL:
    case JI_D2I:
        return true;
    default:
        return false;
    }
}

bool jit_op_is_gc_point(int op) {
    switch (op) {
    case JI_SEND:
    case JI_NEW_BLOCK:
    case JI_NEW_CONTEXT:
    case JI_SAFEPOINT:
    case JI_NLR:
    case JI_BOX_DBL:
        return true;
    default:
        return false;
    }
}

/* ---- verification ---------------------------------------------------------------------- */

typedef struct Verifier {
    const JitFunc *f;
    char *err;
    size_t errlen;
    int problems;
    int32_t *idom;    /* immediate dominator per block, -1 = unreachable */
    int32_t *rpo_num; /* reverse-postorder number per block */
    uint32_t *index;  /* position of each instruction in its block */
} Verifier;

static void problem(Verifier *v, const char *fmt, ...) {
    if (v->problems++ == 0 && v->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->err, v->errlen, fmt, ap);
        va_end(ap);
    }
}

/* Dominators (Cooper, Harvey & Kennedy's iterative algorithm over reverse postorder). */
static void dominators(Verifier *v) {
    const JitFunc *f = v->f;
    uint32_t n = f->nblocks;
    int32_t *order = xrealloc(NULL, n * sizeof *order), norder = 0;
    int32_t *stack = xrealloc(NULL, (2 * n + 2) * sizeof *stack);
    uint8_t *seen = xrealloc(NULL, n);
    memset(seen, 0, n);
    for (uint32_t i = 0; i < n; i++)
        v->idom[i] = -1, v->rpo_num[i] = -1;
    /* iterative DFS producing postorder: stack holds (block, next succ index) pairs */
    int32_t sp = 0;
    if (n) {
        stack[sp++] = 0;
        stack[sp++] = 0;
        seen[0] = 1;
    }
    while (sp) {
        int32_t b = stack[sp - 2], k = stack[sp - 1];
        if (k < 2) {
            stack[sp - 1]++;
            int32_t s = f->blocks[b].succ[k];
            if (s >= 0 && (uint32_t)s < n && !seen[s]) {
                seen[s] = 1;
                stack[sp++] = s;
                stack[sp++] = 0;
            }
        } else {
            order[norder++] = b;
            sp -= 2;
        }
    }
    for (int32_t i = 0; i < norder; i++)
        v->rpo_num[order[i]] = norder - 1 - i;
    if (n) v->idom[0] = 0;
    bool changed = true;
    while (changed) {
        changed = false;
        for (int32_t i = norder - 1; i >= 0; i--) {
            int32_t b = order[i];
            if (b == 0) continue;
            int32_t nd = -1;
            const JitBlock *bb = &f->blocks[b];
            for (uint32_t p = 0; p < bb->npreds; p++) {
                int32_t q = bb->preds[p];
                if (q < 0 || (uint32_t)q >= n || v->idom[q] < 0) continue;
                if (nd < 0) {
                    nd = q;
                    continue;
                }
                int32_t x = q, y = nd;
                while (x != y) {
                    while (v->rpo_num[x] > v->rpo_num[y])
                        x = v->idom[x];
                    while (v->rpo_num[y] > v->rpo_num[x])
                        y = v->idom[y];
                }
                nd = x;
            }
            if (nd >= 0 && v->idom[b] != nd) {
                v->idom[b] = nd;
                changed = true;
            }
        }
    }
    free(order);
    free(stack);
    free(seen);
}

static bool block_dominates(const Verifier *v, int32_t a, int32_t b) {
    if (v->idom[b] < 0) return true; /* unreachable code: anything goes */
    for (;;) {
        if (a == b) return true;
        if (b == 0) return false;
        b = v->idom[b];
    }
}

/* Is value r available at instruction `at` (in block ab, position ai)? */
static bool available(const Verifier *v, JitRef r, int32_t ab, uint32_t ai) {
    const JitInst *d = &v->f->insts[r];
    if (d->block == ab) return v->index[r] < ai;
    return block_dominates(v, d->block, ab);
}

static bool is_obj_type(int t) {
    return t == JT_VALUE || t == JT_PTR;
}

/* The type operand i of `in` must have: a JitType, -2 = a heap object (VALUE or PTR),
 * -1 = any. */
static int operand_type(const JitInst *in, int i) {
    switch (in->op) {
    case JI_IS_INT:
    case JI_IS_DBL:
    case JI_HAS_CLASS:
    case JI_IS_KIND:
    case JI_UNBOX_INT:
    case JI_UNBOX_DBL:
    case JI_VALUE_TO_BOOL:
    case JI_VEQ:
    case JI_SEND:
    case JI_RETURN:
    case JI_FB_OBSERVE:
        return JT_VALUE;
    case JI_GUARD:
    case JI_BOOL_TO_VALUE:
    case JI_BNOT:
    case JI_BRANCH:
        return JT_BOOL;
    case JI_BOX_INT:
    case JI_INT_TO_DBL:
        return JT_INT;
    case JI_BOX_DBL:
    case JI_DADD:
    case JI_DSUB:
    case JI_DMUL:
    case JI_DDIV:
    case JI_DSQRT:
    case JI_DCMP:
    case JI_D2I:
        return JT_DBL;
    case JI_IADD:
    case JI_ISUB:
    case JI_IMUL:
    case JI_IDIV:
    case JI_IMOD:
    case JI_IREM:
    case JI_IAND:
    case JI_IOR:
    case JI_IXOR:
    case JI_ISHL:
    case JI_ISHR:
    case JI_ICMP:
        return JT_INT;
    case JI_SELECT:
        return i == 0 ? JT_BOOL : in->type;
    case JI_LOAD_FIELD:
    case JI_FIELD_COUNT:
    case JI_STRING_LEN:
    case JI_ARRAY_LEN:
    case JI_CFIELD_LOAD:
    case JI_BLOCK_FIELD:
        return -2;
    case JI_STORE_FIELD:
    case JI_CFIELD_STORE:
        return i == 0 ? -2 : JT_VALUE;
    case JI_ARRAY_LOAD:
        return i == 0 ? -2 : JT_INT;
    case JI_ARRAY_STORE:
        return i == 0 ? -2 : i == 1 ? JT_INT : JT_VALUE;
    case JI_CTX_OUTER:
    case JI_CTX_LOAD:
    case JI_NEW_CONTEXT:
        return JT_PTR;
    case JI_CTX_STORE:
    case JI_NLR:
    case JI_NEW_BLOCK:
        return i == 0 ? JT_PTR : JT_VALUE;
    default:
        return -1;
    }
}

/* Operands that may be -1 (none). */
static bool operand_optional(const JitInst *in, int i) {
    return i == 0 && (in->op == JI_NEW_BLOCK || in->op == JI_NEW_CONTEXT);
}

static int min_operands(int op) {
    switch (op) {
    case JI_IS_INT:
    case JI_IS_DBL:
    case JI_HAS_CLASS:
    case JI_IS_KIND:
    case JI_GUARD:
    case JI_UNBOX_INT:
    case JI_BOX_INT:
    case JI_UNBOX_DBL:
    case JI_INT_TO_DBL:
    case JI_BOX_DBL:
    case JI_BOOL_TO_VALUE:
    case JI_VALUE_TO_BOOL:
    case JI_DSQRT:
    case JI_D2I:
    case JI_BNOT:
    case JI_LOAD_FIELD:
    case JI_ARRAY_LEN:
    case JI_FIELD_COUNT:
    case JI_STRING_LEN:
    case JI_CTX_OUTER:
    case JI_CTX_LOAD:
    case JI_CFIELD_LOAD:
    case JI_BLOCK_FIELD:
    case JI_SEND:
    case JI_BRANCH:
    case JI_RETURN:
    case JI_FB_OBSERVE:
        return 1;
    case JI_IADD:
    case JI_ISUB:
    case JI_IMUL:
    case JI_IDIV:
    case JI_IMOD:
    case JI_IREM:
    case JI_IAND:
    case JI_IOR:
    case JI_IXOR:
    case JI_ISHL:
    case JI_ISHR:
    case JI_ICMP:
    case JI_DADD:
    case JI_DSUB:
    case JI_DMUL:
    case JI_DDIV:
    case JI_DCMP:
    case JI_VEQ:
    case JI_STORE_FIELD:
    case JI_ARRAY_LOAD:
    case JI_CTX_STORE:
    case JI_CFIELD_STORE:
    case JI_NEW_BLOCK:
    case JI_NLR:
        return 2;
    case JI_SELECT:
    case JI_ARRAY_STORE:
        return 3;
    default:
        return 0;
    }
}

static void verify_value_ref(Verifier *v, JitRef r, int32_t ab, uint32_t ai, const char *what,
                             JitRef user) {
    const JitFunc *f = v->f;
    if (r < 0 || (uint32_t)r >= f->ninsts) {
        problem(v, "v%d: %s v%d out of range", user, what, r);
        return;
    }
    const JitInst *d = &f->insts[r];
    if (d->dead) problem(v, "v%d: %s v%d is dead", user, what, r);
    if (d->type == JT_VOID) problem(v, "v%d: %s v%d has no value", user, what, r);
    if (d->block < 0 || (uint32_t)d->block >= f->nblocks)
        problem(v, "v%d: %s v%d is in no block", user, what, r);
    else if (!available(v, r, ab, ai))
        problem(v, "v%d: %s v%d does not dominate its use", user, what, r);
}

static void verify_state(Verifier *v, int32_t s, JitRef user, int32_t ab, uint32_t ai) {
    const JitFunc *f = v->f;
    if (s < 0 || (uint32_t)s >= f->nstates) {
        problem(v, "v%d: frame state s%d out of range", user, s);
        return;
    }
    const JitState *st = &f->states[s];
    if (st->nscopes == 0) problem(v, "s%d: no scopes", s);
    for (uint32_t k = 0; k < st->nscopes; k++) {
        const JitStateScope *sc = &st->scopes[k];
        if (!sc->method) problem(v, "s%d: scope %u has no method", s, k);
        if (sc->method && sc->nslots != 1u + sc->method->nargs + sc->method->nlocals)
            problem(v, "s%d: scope %u has %u slots, expected %u", s, k, sc->nslots,
                    1u + sc->method->nargs + sc->method->nlocals);
        if (sc->self >= 0) verify_value_ref(v, sc->self, ab, ai, "state self", user);
        if (sc->ctx >= 0) verify_value_ref(v, sc->ctx, ab, ai, "state ctx", user);
        for (uint32_t i = 0; i < sc->nslots; i++)
            if (sc->slots[i] >= 0) verify_value_ref(v, sc->slots[i], ab, ai, "state slot", user);
        for (uint32_t i = 0; i < sc->nstack; i++)
            if (sc->stack[i] >= 0) verify_value_ref(v, sc->stack[i], ab, ai, "state stack", user);
    }
}

static void verify_inst(Verifier *v, int32_t b, uint32_t i) {
    const JitFunc *f = v->f;
    const JitBlock *bb = &f->blocks[b];
    JitRef r = bb->insts[i];
    const JitInst *in = &f->insts[r];
    if (in->op >= JI__COUNT) {
        problem(v, "v%d: bad op %u", r, in->op);
        return;
    }
    bool last = i + 1 == bb->ninsts;
    if (is_terminator(in->op) != last)
        problem(v, "b%d: v%d %s %s", b, r, jit_op_name[in->op],
                last ? "ends the block but is no terminator" : "is a terminator before the end");
    if (in->op == JI_PHI) {
        if (i > 0 && f->insts[bb->insts[i - 1]].op != JI_PHI)
            problem(v, "b%d: phi v%d after a non-phi", b, r);
        if (in->type == JT_VOID) problem(v, "v%d: phi without a type", r);
        if (!in->phi && bb->npreds) problem(v, "v%d: phi without inputs", r);
        for (uint32_t p = 0; p < bb->npreds && in->phi; p++) {
            JitRef x = in->phi[p];
            int32_t pb = bb->preds[p];
            if (x < 0 || (uint32_t)x >= f->ninsts || f->insts[x].dead) {
                problem(v, "v%d: phi input %u invalid (v%d)", r, p, x);
                continue;
            }
            if (f->insts[x].type != in->type)
                problem(v, "v%d: phi input v%d is %s, the phi %s", r, x,
                        jit_type_name(f->insts[x].type), jit_type_name(in->type));
            if (v->idom[pb] >= 0 && x != r && !available(v, x, pb, f->blocks[pb].ninsts))
                problem(v, "v%d: phi input v%d does not dominate predecessor b%d", r, x, pb);
        }
        return;
    }
    if (in->nargs < min_operands(in->op))
        problem(v, "v%d: %s has %u operands", r, jit_op_name[in->op], in->nargs);
    if (in->op == JI_SEND && (!in->cs || in->nargs != in->cs->nargs + 1u))
        problem(v, "v%d: SEND operand count does not match its call site", r);
    for (int k = 0; k < in->nargs && k < JIT_MAX_ARGS; k++) {
        JitRef x = in->a[k];
        if (x < 0 && operand_optional(in, k)) continue;
        verify_value_ref(v, x, b, i, "operand", r);
        if (x < 0 || (uint32_t)x >= f->ninsts) continue;
        int want = operand_type(in, k), got = f->insts[x].type;
        if ((want >= 0 && got != want) || (want == -2 && !is_obj_type(got)))
            problem(v, "v%d: %s operand %d (v%d) is %s", r, jit_op_name[in->op], k, x,
                    jit_type_name(got));
    }
    if (jit_op_can_deopt(in->op)) {
        if (in->deopt < 0)
            problem(v, "v%d: %s without a frame state", r, jit_op_name[in->op]);
        else
            verify_state(v, in->deopt, r, b, i);
        if (in->reason >= JDR_COUNT) problem(v, "v%d: bad deopt reason", r);
    } else if (in->deopt >= 0) {
        problem(v, "v%d: %s cannot deopt but has a frame state", r, jit_op_name[in->op]);
    }
    bool needs_pos = jit_op_can_deopt(in->op) || in->op == JI_SET_POS ||
                     (jit_op_is_gc_point(in->op) && !(in->op == JI_NEW_BLOCK && in->virt));
    if (needs_pos && (in->pos == JIT_POS_NONE || in->pos >= f->npos))
        problem(v, "v%d: %s without a valid position", r, jit_op_name[in->op]);
    if (in->op == JI_HAS_CLASS && !in->cls) problem(v, "v%d: HAS_CLASS without a class", r);
    if ((in->op == JI_NEW_BLOCK || in->op == JI_NEW_CONTEXT || in->op == JI_SEND) && !in->method)
        problem(v, "v%d: %s without a method", r, jit_op_name[in->op]);
    if (in->op == JI_GLOBAL_LOAD && !in->sym) problem(v, "v%d: GLOBAL_LOAD without a symbol", r);
    int nsucc = in->op == JI_JUMP ? 1 : in->op == JI_BRANCH ? 2 : 0;
    if (last) {
        for (int k = 0; k < 2; k++) {
            bool has = bb->succ[k] >= 0;
            if (has != (k < nsucc))
                problem(v, "b%d: %s with successor %d %s", b, jit_op_name[in->op], k,
                        has ? "set" : "missing");
        }
    }
}

static int count_in(const int32_t *a, uint32_t n, int32_t x) {
    int c = 0;
    for (uint32_t i = 0; i < n; i++)
        c += a[i] == x;
    return c;
}

int jit_verify(const JitFunc *f, char *err, size_t errlen) {
    Verifier v = {f, err, errlen, 0, NULL, NULL, NULL};
    if (errlen) err[0] = 0;
    if (!f->nblocks) {
        problem(&v, "no blocks");
        return v.problems;
    }
    if (f->nstates == 0 || f->states[0].nscopes != 1 || f->states[0].scopes[0].method != f->method)
        problem(&v, "states[0] is not the entry state");
    if (f->blocks[0].npreds) problem(&v, "the entry block has predecessors");
    v.idom = xrealloc(NULL, f->nblocks * sizeof *v.idom);
    v.rpo_num = xrealloc(NULL, f->nblocks * sizeof *v.rpo_num);
    v.index = xrealloc(NULL, (f->ninsts + 1) * sizeof *v.index);
    for (uint32_t i = 0; i < f->ninsts; i++)
        v.index[i] = UINT32_MAX;
    for (uint32_t b = 0; b < f->nblocks; b++) {
        const JitBlock *bb = &f->blocks[b];
        for (int k = 0; k < 2; k++)
            if (bb->succ[k] >= (int32_t)f->nblocks) problem(&v, "b%u: successor out of range", b);
        for (uint32_t p = 0; p < bb->npreds; p++)
            if (bb->preds[p] < 0 || bb->preds[p] >= (int32_t)f->nblocks)
                problem(&v, "b%u: predecessor out of range", b);
    }
    if (v.problems) goto out;
    dominators(&v);
    for (uint32_t b = 0; b < f->nblocks; b++) {
        const JitBlock *bb = &f->blocks[b];
        for (uint32_t i = 0; i < bb->ninsts; i++) {
            JitRef r = bb->insts[i];
            if (r < 0 || (uint32_t)r >= f->ninsts || f->insts[r].block != (int32_t)b) {
                problem(&v, "b%u: instruction %u (v%d) does not belong here", b, i, r);
                continue;
            }
            if (v.index[r] != UINT32_MAX) problem(&v, "v%d listed twice", r);
            v.index[r] = i;
        }
    }
    if (v.problems) goto out;
    for (uint32_t b = 0; b < f->nblocks; b++) {
        const JitBlock *bb = &f->blocks[b];
        if (!bb->ninsts) {
            problem(&v, "b%u is empty", b);
            continue;
        }
        /* edges both ways, with multiplicity */
        for (int k = 0; k < 2; k++) {
            int32_t s = bb->succ[k];
            if (s < 0) continue;
            int want = (bb->succ[0] == s) + (bb->succ[1] == s);
            const JitBlock *sb = &f->blocks[s];
            if (count_in(sb->preds, sb->npreds, (int32_t)b) != want)
                problem(&v, "b%u -> b%d: predecessor list does not match", b, s);
        }
        for (uint32_t p = 0; p < bb->npreds; p++) {
            const JitBlock *pb = &f->blocks[bb->preds[p]];
            if (pb->succ[0] != (int32_t)b && pb->succ[1] != (int32_t)b)
                problem(&v, "b%u: predecessor b%d does not jump here", b, bb->preds[p]);
        }
        for (uint32_t i = 0; i < bb->ninsts; i++)
            verify_inst(&v, (int32_t)b, i);
    }
    /* every state, used or not, names live values only (the backend may describe them all) */
    for (uint32_t s = 0; s < f->nstates; s++)
        for (uint32_t k = 0; k < f->states[s].nscopes; k++) {
            const JitStateScope *sc = &f->states[s].scopes[k];
            JitStateVal vals[2] = {sc->self, sc->ctx};
            for (uint32_t i = 0; i < 2 + sc->nslots + sc->nstack; i++) {
                JitStateVal x = i < 2                ? vals[i]
                                : i < 2 + sc->nslots ? sc->slots[i - 2]
                                                     : sc->stack[i - 2 - sc->nslots];
                if (x >= (JitStateVal)f->ninsts || (x >= 0 && f->insts[x].dead))
                    problem(&v, "s%u: value v%d is dead or out of range", s, x);
            }
        }
out:
    free(v.idom);
    free(v.rpo_num);
    free(v.index);
    return v.problems;
}

/* ---- printing -------------------------------------------------------------------------- */

static const char *const cmp_name[] = {"lt", "gt", "le", "ge", "eq", "ne"};
static const char *const reason_name[JDR_COUNT] = {
    "class", "type", "overflow", "bounds", "boolean", "global", "divzero", "unsupported", "stress"};
static const char *const kind_name[] = {"free",   "instance", "array",  "string",
                                        "symbol", "double",   "bigint", "block",
                                        "method", "class",    "context"};

static void print_value(const JitFunc *f, Value x, FILE *out) {
    SomVM *vm = f->vm;
    if (som_is_int(x)) {
        fprintf(out, "%" PRId64, som_int(x));
    } else if (som_is_imm_double(x)) {
        fprintf(out, "%g", som_imm_double(x));
    } else if (!x) {
        fprintf(out, "NULL");
    } else if (vm && x == vm->nil) {
        fprintf(out, "nil");
    } else if (vm && x == vm->true_) {
        fprintf(out, "true");
    } else if (vm && x == vm->false_) {
        fprintf(out, "false");
    } else {
        const ObjHeader *h = som_hdr(x);
        if (h->kind == OBJ_SYMBOL)
            fprintf(out, "#%s", ((const SomString *)x)->bytes);
        else if (h->kind == OBJ_STRING)
            fprintf(out, "'%.20s'", ((const SomString *)x)->bytes);
        else if (h->kind == OBJ_DOUBLE)
            fprintf(out, "%g", ((const SomDouble *)x)->d);
        else if (h->kind == OBJ_CLASS)
            fprintf(out, "%s", ((const SomClass *)x)->name->bytes);
        else
            fprintf(out, "<%s>", h->kind <= OBJ_CONTEXT ? kind_name[h->kind] : "?");
    }
}

static void print_ref(JitRef r, FILE *out) {
    if (r < 0)
        fprintf(out, "-");
    else
        fprintf(out, "v%d", r);
}

static void print_inst(const JitFunc *f, JitRef r, FILE *out) {
    const JitInst *in = &f->insts[r];
    fprintf(out, "  ");
    if (in->type != JT_VOID) fprintf(out, "v%d:%s = ", r, jit_type_name(in->type));
    fprintf(out, "%s", jit_op_name[in->op]);
    if (in->op == JI_ICMP || in->op == JI_DCMP) fprintf(out, ".%s", cmp_name[in->cmp % 6]);
    const JitBlock *bb = &f->blocks[in->block];
    if (in->op == JI_PHI) {
        for (uint32_t p = 0; p < bb->npreds; p++) {
            fprintf(out, "%s", p ? ", " : " ");
            print_ref(in->phi ? in->phi[p] : -1, out);
            fprintf(out, " b%d", bb->preds[p]);
        }
    } else {
        for (int k = 0; k < in->nargs && k < JIT_MAX_ARGS; k++) {
            fprintf(out, "%s", k ? ", " : " ");
            print_ref(in->a[k], out);
        }
    }
    char name[200];
    switch (in->op) {
    case JI_CONST:
        fprintf(out, " ");
        print_value(f, in->cval, out);
        break;
    case JI_CONST_INT:
    case JI_ARG:
    case JI_SAFEPOINT:
    case JI_FB_OBSERVE:
        fprintf(out, " %" PRId64, in->ival);
        break;
    case JI_LOAD_FIELD:
    case JI_STORE_FIELD:
    case JI_CTX_LOAD:
    case JI_CTX_STORE:
    case JI_CFIELD_LOAD:
    case JI_CFIELD_STORE:
    case JI_BLOCK_FIELD:
        fprintf(out, " #%" PRId64, in->ival);
        break;
    case JI_IS_KIND:
        fprintf(out, " %s", in->ival >= 0 && in->ival <= OBJ_CONTEXT ? kind_name[in->ival] : "?");
        break;
    case JI_CONST_DBL:
        fprintf(out, " %g", in->dval);
        break;
    case JI_CONST_PTR:
        fprintf(out, " %p", in->pval);
        break;
    case JI_HAS_CLASS:
        fprintf(out, " %s", in->cls ? in->cls->name->bytes : "?");
        break;
    case JI_GLOBAL_LOAD:
        fprintf(out, " #%s", in->sym ? in->sym->bytes : "?");
        break;
    case JI_SEND:
        fprintf(out, " #%s%s", in->cs ? in->cs->selector->bytes : "?",
                in->cs && in->cs->is_super ? " super" : "");
        if (in->target) {
            class_method_name(in->target, name, sizeof name);
            fprintf(out, " -> %s%s%s", name, in->cls ? " if " : "",
                    in->cls ? in->cls->name->bytes : "");
        }
        break;
    case JI_NEW_BLOCK:
    case JI_NEW_CONTEXT:
        class_method_name(in->method, name, sizeof name);
        fprintf(out, " %s%s", name, in->virt ? " virt" : "");
        if (in->op == JI_NEW_CONTEXT) fprintf(out, " home=%" PRId64, in->ival);
        break;
    case JI_JUMP:
        fprintf(out, " b%d", bb->succ[0]);
        break;
    case JI_BRANCH:
        fprintf(out, " b%d, b%d", bb->succ[0], bb->succ[1]);
        break;
    default:
        break;
    }
    if (in->deopt >= 0)
        fprintf(out, " [deopt s%d %s]", in->deopt,
                in->reason < JDR_COUNT ? reason_name[in->reason] : "?");
    if (in->pos != JIT_POS_NONE) fprintf(out, " @pos%u", in->pos);
    fprintf(out, "\n");
}

static void print_vals(const JitStateVal *v, uint32_t n, FILE *out) {
    for (uint32_t i = 0; i < n; i++) {
        fprintf(out, " ");
        if (v[i] < 0)
            fprintf(out, "nil");
        else
            fprintf(out, "v%d", v[i]);
    }
}

void jit_print(const JitFunc *f, FILE *out) {
    fprintf(out, "function %s (%u blocks, %u instructions, %u inlined)\n", f->name, f->nblocks,
            f->ninsts, f->inlined);
    for (uint32_t b = 0; b < f->nblocks; b++) {
        const JitBlock *bb = &f->blocks[b];
        if (!bb->ninsts && !bb->npreds && b) continue;
        fprintf(out, "b%u:", b);
        if (bb->npreds) {
            fprintf(out, " preds");
            for (uint32_t p = 0; p < bb->npreds; p++)
                fprintf(out, " b%d", bb->preds[p]);
        }
        if (bb->loop_depth) fprintf(out, " loop %u", bb->loop_depth);
        if (bb->cold) fprintf(out, " cold");
        fprintf(out, "\n");
        for (uint32_t i = 0; i < bb->ninsts; i++)
            if (!f->insts[bb->insts[i]].dead) print_inst(f, bb->insts[i], out);
    }
    char name[200];
    for (uint32_t s = 0; s < f->nstates; s++) {
        const JitState *st = &f->states[s];
        fprintf(out, "s%u:", s);
        for (uint32_t k = 0; k < st->nscopes; k++) {
            const JitStateScope *sc = &st->scopes[k];
            class_method_name(sc->method, name, sizeof name);
            fprintf(out, "%s %s bci %u resume %u self ", k ? " |" : "", name, sc->bci,
                    sc->resume_bci);
            print_ref(sc->self, out);
            fprintf(out, " ctx ");
            print_ref(sc->ctx, out);
            fprintf(out, " slots");
            print_vals(sc->slots, sc->nslots, out);
            fprintf(out, " stack");
            print_vals(sc->stack, sc->nstack, out);
        }
        fprintf(out, "\n");
    }
    for (uint32_t p = 0; p < f->npos; p++) {
        class_method_name(f->pos[p].method, name, sizeof name);
        fprintf(out, "pos%u: %s bci %u parent ", p, name, f->pos[p].bci);
        if (f->pos[p].parent == JIT_POS_NONE)
            fprintf(out, "-\n");
        else
            fprintf(out, "pos%u\n", f->pos[p].parent);
    }
}
