/* SPDX-License-Identifier: MIT */
/*
 * jitrt.c - the runtime that compiled code calls (jitabi.h): sends, deoptimization,
 * non-local returns, safepoints and allocations.
 *
 * Sends and deoptimizations run nested levels of the interpreter loop (interp_run in
 * interp.c; levels, the unwinding of non-local returns and the end of a level are
 * described in interp.h), so everything a send does is done by the interpreter's own code.
 * The VM state is VMS_COMPILED while compiled code runs; each entry point that runs
 * interpreter code switches to VMS_INTERP and back (som_set_state: the switch is a safe
 * point).  Runs on the VM's thread only; never in a signal handler.
 */
#define _GNU_SOURCE
#include "jitabi.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"
#include "num.h"
#include "prims.h"

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define JITRT_STACK_MARGIN 16 /* value slots kept free above a rebuilt activation's stack */

static inline void rt_publish(SomVM *vm, int32_t t) {
    __atomic_store_n(&vm->top, t, __ATOMIC_RELEASE);
}

char *interp_cstack_limit(void) {
    char *here = (char *)__builtin_frame_address(0);
    char *lo = NULL;
    size_t size = 0;
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        void *addr = NULL;
        if (pthread_attr_getstack(&a, &addr, &size) != 0) size = 0;
        lo = addr;
        pthread_attr_destroy(&a);
    }
    const size_t margin = 256u << 10;
    if (lo && size > 2 * margin && here > lo + margin && here < lo + size) return lo + margin;
    return here - (4u << 20); /* unknown stack size: allow 4 MiB */
}

/* Reports vm->errmsg as the interpreter does at an error: backtrace (every frame, compiled
 * ones with their inlined positions) and message, exit status 1. */
static void rt_error(SomVM *vm) {
    fflush(vm->out);
    interp_backtrace(vm, vm->err);
    fprintf(vm->err, "%s\n", vm->errmsg);
    fflush(vm->err);
    vm->exit_status = 1;
    vm->exiting = true;
}

/* ---- sends ------------------------------------------------------------------------ */

/* Runs one nested interpreter level from the compiled frame fp (frames[vm->top]). */
static Value rt_level(SomVM *vm, InterpEntry *e) {
    som_set_state(vm, VMS_INTERP);
    int r = interp_run(vm, e);
    som_set_state(vm, VMS_COMPILED);
    return r == 0 ? e->result : 0;
}

/* The selectors the interpreter runs as arithmetic/comparison instructions (bytecode.h),
 * whose sites keep operand-kind feedback (object.h: argkinds). */
static bool rt_arith_selector(const SomString *s) {
    static const char *const sels[] = {
        "+", "-", "*", "<", ">", "<=", ">=", "=", "~=", "\\", "//", "/", "&", "bitXor:"};
    if (s->len > 2 && s->len != 7) return false;
    for (size_t i = 0; i < sizeof sels / sizeof *sels; i++)
        if (!strcmp(s->bytes, sels[i])) return true;
    return false;
}

/* The feedback the interpreter's arithmetic instruction would record at cs for a and b. */
static void rt_arith_feedback(CallSite *cs, Value a, Value b) {
    uint32_t bits = 1u << (som_tf_kind(a) * 4 + som_tf_kind(b));
    if (som_is_int(a) && som_is_int(b) && cs->selector->len == 1) {
        int64_t x = som_int(a), y = som_int(b), r = 0;
        bool ovf = false;
        switch (cs->selector->bytes[0]) {
        case '+':
            ovf = __builtin_add_overflow(x, y, &r) || !som_fits_smallint(r);
            break;
        case '-':
            ovf = __builtin_sub_overflow(x, y, &r) || !som_fits_smallint(r);
            break;
        case '*':
            ovf = __builtin_mul_overflow(x, y, &r) || !som_fits_smallint(r);
            break;
        default:
            break;
        }
        if (ovf) bits |= TF_OVERFLOWED;
    }
    if ((cs->argkinds & bits) != bits) cs->argkinds |= bits;
}

/* Pops frames[vm->top] (callee m) as the interpreter does after it returned or was unwound. */
static void rt_pop(SomVM *vm, SomFrame *f, SomMethod *m) {
    if (m->kind == MK_METHOD && m->nctx) f->ctx->frame = NULL;
    rt_publish(vm, (int32_t)(f - vm->frames) - 1);
    if (vm->exact_hooks) vm->on_exit(vm, m, false);
}

/* Ends the activation nf (callee nf->method, arguments from nf->bp) that answered r in the
 * way a (see interp.h: INTERP_JIT_*; -1: unwound by the interpreter), as `do_return` does
 * or passing an unwind on: answers the caller's result of the send, or 0. */
static Value rt_call_finish(SomVM *vm, SomFrame *nf, int a, Value r, int32_t home) {
    SomMethod *callee = nf->method;
    Value *bp = nf->bp;
    int32_t fi = (int32_t)(nf - vm->frames);
    if (a == INTERP_JIT_RETURN) {
        vm->sp = bp + 1 + callee->nargs + callee->nlocals;
        *vm->sp++ = r; /* rooted for the return's safepoint */
        if (vm->poll > 0 && vm->safepoint_hook) vm->safepoint_hook(vm, SOM_SP_RETURN);
        rt_pop(vm, nf, callee);
        vm->sp = bp;
        som_set_state(vm, VMS_COMPILED);
        return r;
    }
    if (a == INTERP_JIT_UNWIND) { /* an outer home: pop and pass the unwinding on */
        vm->nlr_value = r;
        vm->nlr_target = home;
    }
    if (a == INTERP_JIT_EXIT)
        rt_publish(vm, fi - 1);
    else /* unwinding (nlr_target set, also when interpreted: INTERP_UNWIND) */
        rt_pop(vm, nf, callee);
    vm->sp = bp;
    som_set_state(vm, VMS_COMPILED);
    return 0;
}

/* The send of cs from compiled code when its inline cache hits a method with compiled code
 * (or `value`... to a block whose method has compiled code): activates it as the interpreter's
 * `activate:` does (frame, locals, hooks, context, JIT hooks), enters the code and returns as
 * `do_return` does, without an interpreter level. The receiver and arguments are at
 * vm->sp[0..nargs].  Answers the result or 0 (jitabi.h). */
static Value rt_send_compiled(SomVM *vm, SomFrame *fp, SomMethod *callee) {
    Value *bp = vm->sp;
    int32_t fi = (int32_t)(fp - vm->frames) + 1;
    SomFrame *nf = &vm->frames[fi];
    nf->method = callee;
    nf->bci = 0;
    nf->visited = 0;
    nf->jit = NULL;
    nf->jit_pos = JIT_POS_NONE;
    nf->bp = bp;
    if (callee->kind == MK_BLOCK) { /* `value` and friends: the block's home self and context */
        nf->self = ((SomBlock *)bp[0])->self;
        nf->ctx = ((SomBlock *)bp[0])->ctx;
    } else {
        nf->self = bp[0];
        nf->ctx = NULL;
    }
    Value *sp = bp + 1 + callee->nargs;
    for (unsigned i = 0; i < callee->nlocals; i++)
        *sp++ = vm->nil;
    vm->sp = sp;
    rt_publish(vm, fi);
    if (vm->poll > 0 && vm->safepoint_hook) vm->safepoint_hook(vm, SOM_SP_ENTRY);
    if (vm->exact_hooks) vm->on_enter(vm, callee, false);
    callee->invocations++;
    if (callee->nctx) {
        SomContext *c = interp_new_context(vm, callee->nctx);
        c->outer = callee->kind == MK_BLOCK ? nf->ctx : NULL;
        c->frame = callee->kind == MK_BLOCK ? NULL : nf;
        nf->ctx = c;
    }
    const SomJitCode *code = callee->jit;
    if (LIKELY(!vm->jit_tick && code && !code->invalid &&
               (char *)__builtin_frame_address(0) >= vm->cstack_limit)) {
        /* the common case, as jit_activation (interp.c) but without its state switches: a
         * compiled method with code needs no COUNT/EAGER hook, and the state stays
         * VMS_COMPILED from caller to callee */
        nf->backedges = 0;
        nf->jit = code;
        som_set_state(vm, VMS_COMPILED);
        Value r = code->entry(vm, nf);
        if (LIKELY(r && vm->poll <= 0 && !vm->exact_hooks)) { /* a plain return: rt_call_finish's */
            if (callee->kind == MK_METHOD && callee->nctx) nf->ctx->frame = NULL;
            rt_publish(vm, fi - 1);
            vm->sp = bp;
            return r;
        }
        return jit_rt_call_end(vm, nf, r);
    }
    Value r;
    int32_t home = -1;
    som_set_state(vm, VMS_INTERP);
    int a = interp_jit_enter(vm, nf, &r, &home);
    if (a == INTERP_JIT_INTERPRET) { /* not entered after all: interpret the activation */
        nf->ip = interp_qcode(callee);
        InterpEntry e = {.mode = IM_DEOPT, .base = fi};
        int ir = interp_run(vm, &e);
        a = ir == 0 ? INTERP_JIT_RETURN : ir == INTERP_EXIT ? INTERP_JIT_EXIT : -1;
        r = e.result;
    }
    return rt_call_finish(vm, nf, a, r, home);
}

Value jit_rt_call_end(SomVM *vm, SomFrame *nf, Value r) {
    int32_t fi = (int32_t)(nf - vm->frames), home = -1;
    int a;
    if (r) {
        a = INTERP_JIT_RETURN;
    } else if (vm->exiting) {
        a = INTERP_JIT_EXIT;
    } else { /* a non-local return is unwinding: to this activation or below it */
        home = vm->nlr_target;
        vm->nlr_target = -1;
        r = vm->nlr_value;
        a = home == fi ? INTERP_JIT_RETURN : INTERP_JIT_UNWIND;
    }
    return rt_call_finish(vm, nf, a, r, home);
}

/* A plain primitive m of cs->nargs arguments, called as the interpreter's `plain_primitive`
 * does (safepoints around it, VM state primitive); the receiver and arguments at vm->sp[0..]
 * are rooted while it runs.  Answers its result, or 0 after an error was reported (or when
 * it ended the program). */
static Value rt_send_prim(SomVM *vm, SomMethod *m, unsigned n) {
    Value *args = vm->sp;
    vm->sp = args + n + 1;
    som_state_point(vm, SOM_SP_PRIM_CALL, true);
    if (vm->prim_hooks) vm->on_enter(vm, m, true);
    vm->state = VMS_PRIMITIVE;
    int r = m->prim(vm, args);
    som_state_point(vm, SOM_SP_PRIM_DONE, true);
    if (vm->prim_hooks) vm->on_exit(vm, m, true); /* still VMS_PRIMITIVE */
    vm->state = VMS_COMPILED;
    vm->sp = args;
    if (LIKELY(r == PRIM_OK)) return args[0];
    if (r != PRIM_EXIT) rt_error(vm);
    return 0;
}

/* The send of cs to the receiver at vm->sp[0] when its inline cache (or, for a megamorphic
 * site, the lookup) names a method that needs no interpreter level: a trivial method, a plain
 * primitive, or compiled code (also a block's, for `value`...).  Sets *r and answers true, or
 * answers false having changed nothing. */
static bool rt_send_fast(SomVM *vm, SomFrame *fp, CallSite *cs, Value *r) {
    Value rcv = vm->sp[0];
    SomClass *cls = som_class_of(vm, rcv);
    int k = 0;
    while (k < SOM_IC_SIZE && cs->ic[k].cls != cls)
        k++;
    SomMethod *m = k < SOM_IC_SIZE   ? cs->ic[k].method
                   : cs->megamorphic ? som_lookup(vm, cls, cs->selector)
                                     : NULL;
    if (!m) return false;
    unsigned n = cs->nargs;
    if (m->trivial && !vm->no_trivial) { /* as the interpreter's `invoke` */
        bool inst = som_is_obj(rcv) && som_hdr(rcv)->kind == OBJ_INSTANCE &&
                    m->trivial_arg < ((SomInstance *)rcv)->nfields;
        switch (m->trivial) {
        case TRIV_GETTER:
            if (!inst) return false;
            *r = ((SomInstance *)rcv)->fields[m->trivial_arg];
            break;
        case TRIV_SETTER:
            if (!inst) return false;
            ((SomInstance *)rcv)->fields[m->trivial_arg] = vm->sp[1];
            *r = rcv;
            break;
        case TRIV_LITERAL:
            *r = m->literals[m->trivial_arg];
            break;
        case TRIV_SELF:
            *r = rcv;
            break;
        default:
            return false;
        }
    } else if (m->kind == MK_PRIMITIVE && m->prim_kind != PK_BLOCK_VALUE) {
        /* with the primitive hooks on (the exact state split; exact profiling has the method
         * hooks on too and never gets here), rt_send_prim calls them as the interpreter does */
        if (m->prim_kind != PK_PLAIN && m->prim_kind != PK_ARRAY_AT &&
            m->prim_kind != PK_ARRAY_AT_PUT)
            return false;
        if (k < SOM_IC_SIZE) cs->ic[k].hits++;
        *r = rt_send_prim(vm, m, n);
        return true;
    } else {
        SomMethod *c = m;
        if (m->kind == MK_PRIMITIVE) { /* `value`...: the block's own method (PK_BLOCK_VALUE) */
            c = som_is_obj(rcv) && som_hdr(rcv)->kind == OBJ_BLOCK ? ((SomBlock *)rcv)->method
                                                                   : NULL;
            if (!c || c->nargs != n) return false;
        }
        const SomJitCode *code = c->jit;
        if (!code || code->invalid || (c->trivial && !vm->no_trivial) || !vm->jit ||
            vm->top + 1 >= (int32_t)vm->max_frames ||
            vm->sp + 1 + c->nargs + c->nlocals + c->maxstack + 8 > vm->stack_end)
            return false;
        if (k < SOM_IC_SIZE) cs->ic[k].hits++;
        *r = rt_send_compiled(vm, fp, c);
        return true;
    }
    if (k < SOM_IC_SIZE) cs->ic[k].hits++;
    return true;
}

Value jit_rt_send(SomVM *vm, SomFrame *fp, CallSite *cs, SomMethod *sender) {
    /* fp == &vm->frames[vm->top]: the base of the level that runs the send */
    if (cs->nargs == 1 && !cs->is_super && rt_arith_selector(cs->selector))
        rt_arith_feedback(cs, vm->sp[0], vm->sp[1]);
    Value r;
    if (!cs->is_super && !vm->exact_hooks && rt_send_fast(vm, fp, cs, &r)) return r;
    InterpEntry e = {.mode = IM_SEND, .cs = cs, .sender = sender};
    return rt_level(vm, &e);
}

/* ---- non-local return ------------------------------------------------------------- */

Value jit_rt_nlr(SomVM *vm, SomFrame *fp, SomContext *ctx, Value v) {
    if (vm->poll > 0 && vm->safepoint_hook) {
        som_root_push(vm, &v);
        vm->safepoint_hook(vm, SOM_SP_RETURN);
        som_root_pop(vm, 1);
    }
    SomContext *c = ctx;
    while (c && c->outer)
        c = c->outer;
    SomFrame *home = c ? c->frame : NULL;
    if (home) { /* unwind (interp.h): every invoker down to the home's passes 0 on */
        vm->nlr_value = v;
        vm->nlr_target = (int32_t)(home - vm->frames);
        return 0;
    }
    /* The home has returned: as the interpreter, send escapedBlock: to the invoker's self.
     * The block's frame stays (its invoker pops it); the answer is the block's result. */
    int32_t fi = (int32_t)(fp - vm->frames);
    if (fi < 1) {
        som_prim_error(vm, "Block has escaped and cannot be executed (no invoker)");
        rt_error(vm);
        return 0;
    }
    if (vm->sp + 2 + JITRT_STACK_MARGIN > vm->stack_end) {
        som_prim_error(vm, "Stack overflow: recursion deeper than the VM's stack (%d activations)",
                       fi + 1);
        rt_error(vm);
        return 0;
    }
    Value inv = vm->frames[fi - 1].self;
    vm->sp[0] = inv;
    vm->sp[1] = fp->bp[0];
    InterpEntry e = {.mode = IM_SEND_SEL,
                     .nargs = 1,
                     .sel = vm->sym_escapedBlock,
                     .lookup_cls = som_class_of(vm, inv)};
    return rt_level(vm, &e);
}

/* ---- safepoints and allocation ---------------------------------------------------- */

void jit_rt_safepoint(SomVM *vm, SomFrame *fp, int where) {
    if (vm->poll > 0 && vm->safepoint_hook) vm->safepoint_hook(vm, (SomSafepoint)where);
    if (vm->jit_tick && vm->jit_hook) {
        vm->jit_tick = 0;
        vm->jit_hook(vm, fp->method, SOM_JIT_TICK);
    }
}

Value jit_rt_box_double(SomVM *vm, double d) {
    Value v;
    if (som_try_imm_double(d, &v)) return v;
    return num_new_double(vm, d);
}

Value jit_rt_new_block(SomVM *vm, SomMethod *block_method, SomContext *ctx, Value self) {
    Value c = SOM_V(ctx); /* the caller need not keep them: rooted here */
    som_root_push(vm, &c);
    som_root_push(vm, &self);
    SomBlock *b = interp_new_block(vm, block_method, (SomContext *)c, self);
    som_root_pop(vm, 2);
    return SOM_V(b);
}

SomContext *jit_rt_new_context(SomVM *vm, SomMethod *m, SomContext *outer, SomFrame *frame) {
    Value o = SOM_V(outer);
    som_root_push(vm, &o);
    SomContext *c = interp_new_context(vm, m->nctx);
    som_root_pop(vm, 1);
    c->outer = (SomContext *)o;
    c->frame = frame;
    return c;
}

/* ---- deoptimization --------------------------------------------------------------- */

/* The Value of d->vals[i] if making it allocates nothing; else nil (made later). */
static Value dv_plain(SomVM *vm, const JitDeoptVal *v, const uint64_t *raw) {
    uint64_t r = v->raw >= 0 ? raw[v->raw] : 0;
    switch (v->kind) {
    case JVK_VALUE:
        return (Value)r;
    case JVK_INT:
        return som_mkint((int64_t)r);
    case JVK_BOOL:
        return r ? vm->true_ : vm->false_;
    case JVK_CONST:
        return v->cst;
    case JVK_DOUBLE: {
        double d;
        memcpy(&d, &r, sizeof d);
        Value imm;
        return som_try_imm_double(d, &imm) ? imm : vm->nil;
    }
    default: /* JVK_VBLOCK */
        return vm->nil;
    }
}

/* Makes the block of vblock value i (once per vid) into vals[i]; every value it refers to
 * is in vals[] (rooted).  made[i] says which values are final. */
static void dv_block(SomVM *vm, const JitDeopt *d, Value *vals, bool *made, int32_t i, int depth) {
    const JitDeoptVal *v = &d->vals[i];
    for (uint32_t j = 0; j < d->nvals; j++)
        if (made[j] && d->vals[j].kind == JVK_VBLOCK && d->vals[j].vid == v->vid) {
            vals[i] = vals[j];
            made[i] = true;
            return;
        }
    if (depth > 8) { /* a cycle of virtual blocks cannot be: give up on identity, not memory */
        made[i] = true;
        return;
    }
    if (v->vself >= 0 && !made[v->vself]) dv_block(vm, d, vals, made, v->vself, depth + 1);
    if (v->vctx >= 0 && !made[v->vctx]) dv_block(vm, d, vals, made, v->vctx, depth + 1);
    SomContext *ctx = v->vctx >= 0 ? (SomContext *)vals[v->vctx] : NULL;
    Value self = v->vself >= 0 ? vals[v->vself] : vm->nil;
    vals[i] = SOM_V(interp_new_block(vm, v->vmethod, ctx, self)); /* args rooted in vals */
    made[i] = true;
}

static inline Value dv(const Value *vals, int32_t i, Value nil) {
    return i >= 0 ? vals[i] : nil;
}

/* Rebuilds the interpreter activations of d over fp and the frames above it (jitabi.h).
 * Answers false (error reported) when the stacks have no room. */
static bool deopt_rebuild(SomVM *vm, SomFrame *fp, const JitDeopt *d, const uint64_t *raw) {
    int32_t fi = (int32_t)(fp - vm->frames);
    uint32_t ns = d->nscopes;
    bool bad = ns == 0 || d->scopes[0].method != fp->method;
    for (uint32_t s = 0; s < ns && !bad; s++) /* a method with a context must have it */
        bad = d->scopes[s].method->kind == MK_METHOD && d->scopes[s].method->nctx &&
              d->scopes[s].ctx < 0;
    if (bad) {
        som_prim_error(vm, "bad deoptimization state in compiled code of %s",
                       fp->method->signature->bytes);
        rt_error(vm);
        return false;
    }
    /* layout: each scope's slots, then its operand stack; the next scope right above */
    Value *end = fp->bp;
    for (uint32_t s = 0; s < ns; s++)
        end += d->scopes[s].nslots + d->scopes[s].nstack;
    Value *vals = end; /* the materialised values, rooted above everything while made */
    uint32_t need = d->nvals > d->scopes[ns - 1].method->maxstack
                        ? d->nvals
                        : d->scopes[ns - 1].method->maxstack; /* the innermost goes on */
    if ((size_t)fi + ns >= vm->max_frames || vals + need + JITRT_STACK_MARGIN + 8 > vm->stack_end) {
        som_prim_error(vm, "Stack overflow: recursion deeper than the VM's stack (%d activations)",
                       fi + (int)ns);
        rt_error(vm);
        return false;
    }
    bool made_small[64];
    bool *made = d->nvals <= 64 ? made_small : calloc(d->nvals, sizeof *made);
    if (!made) abort();
    /* 1. values that allocate nothing; no collection can happen until vm->sp covers them */
    for (uint32_t i = 0; i < d->nvals; i++) {
        vals[i] = dv_plain(vm, &d->vals[i], raw);
        uint8_t kind = d->vals[i].kind;
        made[i] = !(kind == JVK_VBLOCK || (kind == JVK_DOUBLE && vals[i] == vm->nil));
    }
    for (Value *p = fp->bp; p < end; p++) /* the spill area's references are all in vals */
        *p = vm->nil;
    vm->sp = vals + d->nvals;
    /* 2. boxed doubles, one at a time, straight into their rooted slot */
    for (uint32_t i = 0; i < d->nvals; i++)
        if (!made[i] && d->vals[i].kind == JVK_DOUBLE) {
            double x;
            uint64_t r = raw[d->vals[i].raw];
            memcpy(&x, &r, sizeof x);
            vals[i] = num_new_double(vm, x);
            made[i] = true;
        }
    /* 3. virtual blocks, once per identity */
    for (uint32_t i = 0; i < d->nvals; i++)
        if (!made[i] && d->vals[i].kind == JVK_VBLOCK) dv_block(vm, d, vals, made, (int32_t)i, 0);
    if (made != made_small) free(made);
    /* 4. the value stack, then the frame records (each published fully written) */
    Value *bp = fp->bp;
    for (uint32_t s = 0; s < ns; s++) {
        const JitDeoptScope *sc = &d->scopes[s];
        for (uint32_t j = 0; j < sc->nslots; j++)
            bp[j] = dv(vals, sc->slots[j], vm->nil);
        for (uint32_t j = 0; j < sc->nstack; j++)
            bp[sc->nslots + j] = dv(vals, sc->stack[j], vm->nil);
        bp += sc->nslots + sc->nstack;
    }
    bp = fp->bp;
    for (uint32_t s = 0; s < ns; s++) {
        const JitDeoptScope *sc = &d->scopes[s];
        SomFrame *f = &vm->frames[fi + (int32_t)s];
        SomContext *ctx = sc->ctx >= 0 ? (SomContext *)vals[sc->ctx] : NULL;
        const uint8_t *ip = interp_qcode(sc->method) + sc->resume_bci;
        if (s == 0) { /* the physical frame: interpreted from now on */
            f->jit_pos = JIT_POS_NONE;
            f->jit = NULL;
            f->bci = sc->bci;
            f->self = dv(vals, sc->self, vm->nil);
            f->ctx = ctx;
            f->ip = ip;
        } else {
            f->method = sc->method;
            f->bci = sc->bci;
            f->visited = 0;
            f->bp = bp;
            f->self = dv(vals, sc->self, vm->nil);
            f->ctx = ctx;
            f->ip = ip;
            f->jit = NULL;
            f->jit_pos = JIT_POS_NONE;
            f->backedges = 0;
        }
        /* a method's own context (an inlined method's was made with frame NULL) */
        if (ctx && sc->method->kind == MK_METHOD && sc->method->nctx) ctx->frame = f;
        if (s > 0) {
            rt_publish(vm, fi + (int32_t)s);
            if (vm->exact_hooks) {
                vm->sp = vals + d->nvals;
                vm->on_enter(vm, sc->method, false);
            }
        }
        bp += sc->nslots + sc->nstack;
    }
    vm->sp = end;
    return true;
}

Value jit_rt_deopt(SomVM *vm, SomFrame *fp, const JitDeopt *d, const uint64_t *raw) {
    som_set_state(vm, VMS_INTERP);
    SomJitCode *code = (SomJitCode *)fp->jit;
    if (!deopt_rebuild(vm, fp, d, raw)) {
        som_set_state(vm, VMS_COMPILED);
        return 0;
    }
    if (code) {
        code->deopts++;
        if (vm->jit_deopt_hook) vm->jit_deopt_hook(vm, code, d->reason);
    }
    InterpEntry e = {.mode = IM_DEOPT, .base = (int32_t)(fp - vm->frames)};
    int r = interp_run(vm, &e);
    som_set_state(vm, VMS_COMPILED);
    return r == 0 ? e.result : 0;
}
