/* SPDX-License-Identifier: MIT */
/*
 * jitt.c - hand-built IR for the backend tests (jitt.h).  Fills the structs of ir.h with
 * fixed capacities; the functions are deliberately not ir.c's (which belongs to the IR's
 * owner and is not linked into these tests).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "jitt.h"

#define T_INSTS 4096
#define T_BLOCKS 512
#define T_STATES 256
#define T_POS 64
#define T_BINSTS 4096
#define T_PREDS 8

JitFunc *t_func(SomVM *vm, SomMethod *m) {
    JitFunc *f = calloc(1, sizeof *f);
    f->vm = vm;
    f->method = m;
    f->insts = calloc(T_INSTS, sizeof *f->insts);
    f->inst_cap = T_INSTS;
    f->blocks = calloc(T_BLOCKS, sizeof *f->blocks);
    f->block_cap = T_BLOCKS;
    f->states = calloc(T_STATES, sizeof *f->states);
    f->state_cap = T_STATES;
    f->pos = calloc(T_POS, sizeof *f->pos);
    f->pos_cap = T_POS;
    strcpy(f->name, "Test>>fn");
    return f;
}

void t_free(JitFunc *f) {
    for (uint32_t i = 0; i < f->ninsts; i++)
        free(f->insts[i].phi);
    for (uint32_t b = 0; b < f->nblocks; b++) {
        free(f->blocks[b].insts);
        free(f->blocks[b].preds);
    }
    for (uint32_t s = 0; s < f->nstates; s++) {
        for (uint32_t k = 0; k < f->states[s].nscopes; k++) {
            free(f->states[s].scopes[k].slots);
            free(f->states[s].scopes[k].stack);
        }
        free(f->states[s].scopes);
    }
    free(f->insts);
    free(f->blocks);
    free(f->states);
    free(f->pos);
    free(f);
}

int32_t t_block(JitFunc *f) {
    assert_true(f->nblocks < T_BLOCKS);
    JitBlock *b = &f->blocks[f->nblocks];
    b->insts = calloc(T_BINSTS, sizeof *b->insts);
    b->cap = T_BINSTS;
    b->preds = calloc(T_PREDS, sizeof *b->preds);
    b->pred_cap = T_PREDS;
    b->succ[0] = b->succ[1] = -1;
    return (int32_t)f->nblocks++;
}

JitRef t_ins(JitFunc *f, int32_t b, JitOp op, JitType type) {
    assert_true(f->ninsts < T_INSTS);
    JitRef r = (JitRef)f->ninsts++;
    JitInst *in = &f->insts[r];
    memset(in, 0, sizeof *in);
    in->op = (uint16_t)op;
    in->type = (uint8_t)type;
    in->block = b;
    in->deopt = -1;
    in->pos = JIT_POS_NONE;
    for (int k = 0; k < JIT_MAX_ARGS; k++)
        in->a[k] = -1;
    JitBlock *bl = &f->blocks[b];
    assert_true(bl->ninsts < bl->cap);
    bl->insts[bl->ninsts++] = r;
    return r;
}

JitRef t_op1(JitFunc *f, int32_t b, JitOp op, JitType type, JitRef a0) {
    JitRef r = t_ins(f, b, op, type);
    f->insts[r].a[0] = a0;
    f->insts[r].nargs = 1;
    return r;
}

JitRef t_op2(JitFunc *f, int32_t b, JitOp op, JitType type, JitRef a0, JitRef a1) {
    JitRef r = t_ins(f, b, op, type);
    f->insts[r].a[0] = a0;
    f->insts[r].a[1] = a1;
    f->insts[r].nargs = 2;
    return r;
}

JitRef t_cint(JitFunc *f, int32_t b, int64_t v) {
    JitRef r = t_ins(f, b, JI_CONST_INT, JT_INT);
    f->insts[r].ival = v;
    return r;
}

JitRef t_arg(JitFunc *f, int32_t b, int64_t i) {
    JitRef r = t_ins(f, b, JI_ARG, JT_VALUE);
    f->insts[r].ival = i;
    return r;
}

void t_edge(JitFunc *f, int32_t from, int32_t to) {
    JitBlock *t = &f->blocks[to];
    assert_true(t->npreds < t->pred_cap);
    t->preds[t->npreds++] = from;
}

void t_jump(JitFunc *f, int32_t b, int32_t to) {
    t_ins(f, b, JI_JUMP, JT_VOID);
    f->blocks[b].succ[0] = to;
    t_edge(f, b, to);
}

void t_branch(JitFunc *f, int32_t b, JitRef c, int32_t t, int32_t e) {
    t_op1(f, b, JI_BRANCH, JT_VOID, c);
    f->blocks[b].succ[0] = t;
    f->blocks[b].succ[1] = e;
    t_edge(f, b, t);
    t_edge(f, b, e);
}

void t_ret(JitFunc *f, int32_t b, JitRef v) {
    t_op1(f, b, JI_RETURN, JT_VOID, v);
}

JitRef t_phi(JitFunc *f, int32_t b, JitType type, JitRef in0, JitRef in1) {
    JitRef r = t_ins(f, b, JI_PHI, type);
    f->insts[r].phi = calloc(2, sizeof(JitRef));
    f->insts[r].phi[0] = in0;
    f->insts[r].phi[1] = in1;
    return r;
}

int32_t t_state(JitFunc *f, uint32_t bci, JitRef self, uint32_t nslots, const JitRef *slots,
                uint32_t nstack, const JitRef *stack) {
    assert_true(f->nstates < T_STATES);
    JitState *s = &f->states[f->nstates];
    s->nscopes = 1;
    s->scopes = calloc(1, sizeof *s->scopes);
    JitStateScope *sc = &s->scopes[0];
    sc->method = f->method;
    sc->bci = sc->resume_bci = bci;
    sc->self = self;
    sc->ctx = -1;
    sc->nslots = nslots;
    sc->nstack = nstack;
    sc->slots = calloc(nslots + 1, sizeof(JitRef));
    sc->stack = calloc(nstack + 1, sizeof(JitRef));
    if (nslots) memcpy(sc->slots, slots, nslots * sizeof(JitRef));
    if (nstack) memcpy(sc->stack, stack, nstack * sizeof(JitRef));
    return (int32_t)f->nstates++;
}

uint32_t t_pos(JitFunc *f, SomMethod *m, uint32_t bci, uint32_t parent) {
    assert_true(f->npos < T_POS);
    f->pos[f->npos] = (JitPos){m, bci, parent};
    return f->npos++;
}

#define T_MAX_OBJECTS 4096
static void *objects[T_MAX_OBJECTS];
static int nobjects;

SomMethod *t_method(uint16_t nargs, uint16_t nlocals) {
    SomMethod *m = t_object(NULL, OBJ_METHOD, sizeof *m);
    m->nargs = nargs;
    m->nlocals = nlocals;
    m->kind = MK_METHOD;
    return m;
}

void *t_object(SomClass *cls, int kind, size_t size) {
    size = (size + 15) / 16 * 16;
    ObjHeader *h = aligned_alloc(16, size);
    memset(h, 0, size);
    h->cls = cls;
    h->kind = (uint8_t)kind;
    if (nobjects < T_MAX_OBJECTS) objects[nobjects++] = h;
    return h;
}

void t_objects_free(void) {
    for (int i = 0; i < nobjects; i++)
        free(objects[i]);
    nobjects = 0;
}
