/* SPDX-License-Identifier: MIT */
/*
 * rt_doubles.c - recording test doubles of every runtime entry point compiled code calls
 * (jitabi.h).  ONE file on purpose: at integration, when somvm defines the real jit_rt_*,
 * this file stays the only definition the backend tests link (they link the backend's
 * sources + somvm, and these definitions satisfy every reference first).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "feedback.h"
#include "jitt.h"

RtLog rt;
SomDouble *rt_last_box;
static _Atomic uint64_t send_count;

void rt_reset(void) {
    memset(&rt, 0, sizeof rt);
    atomic_store(&send_count, 0);
}

Value jit_rt_send(SomVM *vm, SomFrame *fp, CallSite *cs, SomMethod *sender) {
    uint64_t n = atomic_fetch_add(&send_count, 1) + 1;
    rt.sends = n;
    for (int k = 0; k <= cs->nargs && k < 8; k++)
        rt.send_args[k] = vm->sp[k];
    rt.send_cs = cs;
    rt.send_sender = sender;
    rt.send_bci = fp->bci;
    rt.send_jit_pos = fp->jit_pos;
    rt.send_sp = vm->sp;
    rt.nspilled = 0;
    for (Value *p = fp->bp + rt.spill_base; p < vm->sp && rt.nspilled < 32; p++)
        rt.spilled[rt.nspilled++] = *p;
    if (n <= 4) {
        rt.nspilled_at[n - 1] = rt.nspilled;
        for (uint32_t i = 0; i < rt.nspilled && i < 8; i++)
            rt.spilled_at[n - 1][i] = rt.spilled[i];
    }
    if (rt.send_hook) rt.send_hook(vm);
    return rt.send_answer;
}

Value jit_rt_deopt(SomVM *vm, SomFrame *fp, const JitDeopt *d, const uint64_t *raw) {
    (void)vm;
    if (rt.ndeopts < RT_MAX_DEOPTS) {
        RtDeopt *r = &rt.deopts[rt.ndeopts];
        r->d = d;
        uint32_t nraw = 0;
        for (uint32_t i = 0; i < d->nvals; i++)
            if (d->vals[i].raw >= 0 && (uint32_t)d->vals[i].raw + 1 > nraw)
                nraw = (uint32_t)d->vals[i].raw + 1;
        for (uint32_t i = 0; i < nraw && i < 16; i++)
            r->raw[i] = raw[i];
        r->nraw = nraw;
        r->raw_digest = 0;
        for (uint32_t i = 0; i < nraw; i++)
            r->raw_digest += (i + 1) * raw[i];
        r->fp_bci = fp->bci;
        r->fp_jit_pos = fp->jit_pos;
    }
    rt.ndeopts++;
    return rt.deopt_answer;
}

/* Not a jit_rt_* but called by compiled code the same way (src/jit/feedback.c). */
void jit_fb_observe(JitFbTable *t, uint32_t slot, Value a, Value b) {
    rt.observes++;
    rt.observe_table = t;
    rt.observe_slot = slot;
    rt.observe_a = a;
    rt.observe_b = b;
    if (t && t->vm && t->vm->jit_fb_armed) t->vm->jit_fb_armed--;
}

void jit_rt_safepoint(SomVM *vm, SomFrame *fp, int where) {
    (void)fp;
    (void)where;
    rt.safepoints++;
    vm->poll = 0;
    vm->jit_tick = 0; /* as the runtime's: the controller's hook ran */
}

Value jit_rt_box_double(SomVM *vm, double d) {
    rt.boxes++;
    rt.box_arg = d;
    SomDouble *o = t_object(vm->doubleClass, OBJ_DOUBLE, sizeof *o);
    o->d = d;
    rt_last_box = o;
    return (Value)o;
}

Value jit_rt_new_block(SomVM *vm, SomMethod *block_method, SomContext *ctx, Value self) {
    rt.new_blocks++;
    SomBlock *b = t_object(vm->blockClass, OBJ_BLOCK, sizeof *b);
    b->method = block_method;
    b->ctx = ctx;
    b->self = self;
    return (Value)b;
}

SomContext *jit_rt_new_context(SomVM *vm, SomMethod *m, SomContext *outer, SomFrame *frame) {
    rt.new_contexts++;
    SomContext *c = t_object(NULL, OBJ_CONTEXT, sizeof *c + 8u * m->nctx);
    c->outer = outer;
    c->frame = frame;
    c->nvars = m->nctx;
    for (uint32_t i = 0; i < m->nctx; i++)
        c->vars[i] = vm->nil;
    return c;
}

Value jit_rt_nlr(SomVM *vm, SomFrame *fp, SomContext *ctx, Value v) {
    (void)vm;
    (void)fp;
    (void)ctx;
    (void)v;
    rt.nlrs++;
    return rt.nlr_answer;
}
