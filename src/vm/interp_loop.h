/* SPDX-License-Identifier: MIT */
/*
 * interp_loop.h - the interpreter loop, included twice by interp.c (private to it).
 *
 * INTERP_FN names the copy; INTERP_JIT_ENTRIES says whether it starts levels of every
 * InterpMode (jitrt.c's nested levels) or only IM_CALL.  Two copies because GCC allocates
 * the loop's registers much worse (about 8% more memory operations on AWFY) as soon as the
 * loop has any way in besides `goto invoke`; so the copy that runs programs (interp_call)
 * keeps that single entry, and only the nested levels of compiled code pay.
 */
#define LEVEL_MODE (INTERP_JIT_ENTRIES ? e->mode : IM_CALL)

/* ret, recv and hi are set on every path before they are read; giving them initial values
 * would make GCC carry them through the shared dispatch block (and then stop duplicating
 * the dispatch jump per handler), so they stay uninitialised. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
static int INTERP_FN(SomVM *vm, InterpEntry *e) {
    static void *const labels[BC__NPRIVATE] = {
#define SOM_BC_LABEL(name, n) &&L_##name,
        SOM_BYTECODES(SOM_BC_LABEL) SOM_SUPER_BYTECODES(SOM_BC_LABEL)
#undef SOM_BC_LABEL
            && L__JITRET,
        &&L__ENTER_CALL,
        &&L__ENTER_SEND,
        &&L__ENTER_SEND_SEL,
        &&L__ENTER_DEOPT,
    };
    SomMethod *entry = e->method;
    int nargs = e->nargs;
#if !INTERP_JIT_ENTRIES
    if (UNLIKELY(!vm)) { /* interp_labels(): report the handlers' addresses */
        InterpLabel *out = (InterpLabel *)(void *)entry;
        static const struct {
            const char *name;
        } extra[] = {
            {"interp:invoke"},      {"interp:activate"},   {"interp:primitive"},
            {"interp:send_sel"},    {"interp:send_site"},  {"interp:dnu"},
            {"interp:not_boolean"}, {"interp:error"},      {"interp:jit_activate"},
            {"interp:jit_return"},  {"interp:nlr_unwind"},
        };
        void *const extra_addr[] = {&&invoke,       &&activate,  &&primitive,   &&send_sel,
                                    &&send_site,    &&dnu,       &&not_boolean, &&error,
                                    &&jit_activate, &&L__JITRET, &&nlr_unwind};
        int count = 0;
        for (int i = 0; i < BC__COUNT && count < nargs; i++, count++) {
            out[count].name = som_bc_name[i];
            out[count].addr = labels[i];
        }
        for (size_t i = 0; i < sizeof extra / sizeof *extra && count < nargs; i++, count++) {
            out[count].name = extra[i].name;
            out[count].addr = extra_addr[i];
        }
        return count;
    }
#endif
    /* frames[base_top + 1] is the level's first activation: its return ends the level (popped
     * first, except for IM_DEOPT: the deoptimized frame, which its invoker pops; for IM_SEND*
     * BC__JITRET also ends it, when the callee made no activation).  Frames below are not
     * the level's (an NLR to one of them answers INTERP_UNWIND).  The mode is read from e
     * on the rare paths only: one variable less in the loop keeps its registers as they were. */
    const int32_t base_top = LEVEL_MODE == IM_DEOPT ? e->base - 1 : vm->top;
    int32_t top = vm->top; /* mirrors top: this loop is its only writer */
    Value *sp = vm->sp;
    Value *base_sp;
    const Value nil = vm->nil, trueV = vm->true_, falseV = vm->false_;
    SomFrame *fp = top >= 0 ? &vm->frames[top] : NULL;
    Value *bp = NULL, self = nil, *lits = NULL;
    CallSite *sites = NULL;
    SomMethod *meth = NULL, *callee = entry;
    const uint8_t *ip;
    SomClass *cls = NULL, *lookup_cls = NULL;
    SomString *sel = NULL;
    Value recv, ret;
    int n = nargs;
    unsigned k = 0;
    int32_t hi;
    double dacc;      /* dchain's accumulator */
    SomFrame scratch; /* IM_SEND: fp while the send is dispatched (see L__ENTER_SEND) */

#ifdef SOM_BC_STATS /* development aid: dynamic opcode pair counts, printed at exit */
    static uint64_t pair_counts[BC__COUNT][BC__COUNT];
    static unsigned last_op;
#define DISPATCH()                                                                                 \
    do {                                                                                           \
        pair_counts[last_op][*ip]++;                                                               \
        last_op = *ip;                                                                             \
        goto *labels[*ip++];                                                                       \
    } while (0)
    if (!entry) {
        for (int a = 0; a < BC__COUNT; a++)
            for (int b = 0; b < BC__COUNT; b++)
                if (pair_counts[a][b] > 1000000)
                    fprintf(stderr, "%12llu %s %s\n", (unsigned long long)pair_counts[a][b],
                            som_bc_name[a], som_bc_name[b]);
        return 0;
    }
#else
#define DISPATCH() goto *labels[*ip++]
#endif
#define W() (ip += 2, u16_at(ip - 2))
#define SAVE() (vm->sp = sp)
#define LOAD_FRAME()                                                                               \
    do {                                                                                           \
        bp = fp->bp;                                                                               \
        self = fp->self;                                                                           \
        meth = fp->method;                                                                         \
        lits = meth->literals;                                                                     \
        sites = meth->sites;                                                                       \
    } while (0)
#define BOOL(c) ((c) ? trueV : falseV)
/* Type feedback (site k's argkinds) and inline-cache hit counts: not recorded by the lean
 * copy (INTERP_FEEDBACK 0; no NULL check is left after inlining) */
#if INTERP_FEEDBACK
#define FB(k) (&sites[(k)].argkinds)
#define IC_HIT(e) ((e).hits++)
#else
#define FB(k) ((uint32_t *)NULL)
#define IC_HIT(e) ((void)0)
#endif

#if INTERP_JIT_ENTRIES
    base_sp = LEVEL_MODE == IM_DEOPT ? vm->frames[base_top + 1].bp : sp;
    if (LEVEL_MODE == IM_SEND || LEVEL_MODE == IM_SEND_SEL) {
        n = LEVEL_MODE == IM_SEND ? e->cs->nargs : nargs;
        sp += n + 1;
    }
    ip = enter_code[LEVEL_MODE];
    DISPATCH();
#else
    base_sp = sp - nargs - 1;
    ip = enter_code[IM_CALL] + 1; /* BC__JITRET: for a trivial or primitive entry method */
    goto invoke;
#endif

#if INTERP_JIT_ENTRIES
L__ENTER_CALL:
    goto invoke;
L__ENTER_SEND: /* from a compiled frame: its bci is compiled code's, not written here */
    LOAD_FRAME();
    fp->ip = ip; /* BC__JITRET: where the callee returns to */
    sites = e->cs;
    k = 0;
    if (e->cs->is_super) {
        meth = e->sender; /* super_send reads meth->holder */
        goto super_send;
    }
    /* send_site stores fp->bci (and activate fp->ip): let it store them into a scratch
     * record, not into the compiled frame, whose bci is compiled code's.  (A separate copy
     * of send_site for this made GCC allocate the loop's registers worse.) */
    scratch.jit = fp->jit; /* `restart` checks it */
    fp = &scratch;
    goto send_site;
L__ENTER_SEND_SEL:
    LOAD_FRAME();
    sel = e->sel;
    lookup_cls = e->lookup_cls;
    goto send_sel;
L__ENTER_DEOPT:
    LOAD_FRAME();
    ip = fp->ip;
    DISPATCH();
#else
L__ENTER_CALL:
L__ENTER_SEND:
L__ENTER_SEND_SEL:
L__ENTER_DEOPT:
    (void)scratch;
    if (ip) return INTERP_EXIT; /* never dispatched: this copy starts at invoke */
    goto super_send;            /* (only named) */
#endif

    /* ---- activation ---------------------------------------------------- */
invoke: /* callee, n; receiver and arguments at sp[-n-1 .. -1] */
    /* if-chains, not switches: a shared indirect jump would mispredict
     * whenever a loop mixes kinds (isNil, next, at:...) */
    if (callee->trivial && !vm->no_trivial) {
        recv = sp[-n - 1];
        if (callee->trivial == TRIV_GETTER) {
            if (LIKELY(som_is_obj(recv) && som_hdr(recv)->kind == OBJ_INSTANCE &&
                       callee->trivial_arg < ((SomInstance *)recv)->nfields)) {
                sp -= n; /* `m: arg = ( ^field )` drops its arguments too */
                sp[-1] = ((SomInstance *)recv)->fields[callee->trivial_arg];
                DISPATCH();
            }
        } else if (callee->trivial == TRIV_LITERAL) {
            sp -= n;
            sp[-1] = callee->literals[callee->trivial_arg];
            DISPATCH();
        } else if (callee->trivial == TRIV_SETTER) {
            if (LIKELY(som_is_obj(recv) && som_hdr(recv)->kind == OBJ_INSTANCE &&
                       callee->trivial_arg < ((SomInstance *)recv)->nfields)) {
                ((SomInstance *)recv)->fields[callee->trivial_arg] = sp[-1];
                sp--;
                DISPATCH();
            }
        } else if (callee->trivial == TRIV_SELF) {
            sp -= n;
            DISPATCH();
        }
    }
    if (callee->kind == MK_PRIMITIVE) goto primitive;
activate : {
    /* the callee's locals and operands fit: SOM_STACK_SLACK slots are mapped past stack_end */
    if (UNLIKELY(top + 1 >= (int32_t)vm->max_frames || sp >= vm->stack_end)) {
        SAVE();
        som_prim_error(vm, "Stack overflow: recursion deeper than the VM's stack (%d activations)",
                       top + 1);
        goto error;
    }
    SomFrame *nf;
#if INTERP_JIT_ENTRIES
    if (fp) fp->ip = ip; /* (fp may be the scratch record of an IM_SEND level) */
    nf = &vm->frames[top + 1];
#else
    /* in this copy fp is always &vm->frames[top] (NULL below the first activation) */
    if (LIKELY(fp)) {
        fp->ip = ip;
        nf = fp + 1;
    } else {
        nf = vm->frames;
    }
#endif
    /* the callee's registers are set here, not reloaded from the record after the hooks */
    bp = sp - n - 1;
    meth = callee;
    nf->method = callee;
    nf->bci = 0;
    nf->visited = 0;
    nf->jit = NULL;
    nf->jit_pos = JIT_POS_NONE; /* (backedges: set by jit_activation, read only with a JIT) */
    nf->bp = bp;
    if (callee->kind == MK_BLOCK) {
        SomBlock *b = (SomBlock *)bp[0];
        self = b->self;
        nf->ctx = b->ctx;
    } else {
        self = bp[0];
        nf->ctx = NULL;
    }
    nf->self = self;
    { /* the locals start nil: four stores without a loop cover most methods (slots above sp
       * are free, and SOM_STACK_SLACK keeps them mapped) */
        unsigned nl = callee->nlocals;
        sp[0] = sp[1] = sp[2] = sp[3] = nil;
        for (unsigned i = 4; UNLIKELY(i < nl); i++)
            sp[i] = nil;
        sp += nl;
    }
    PUBLISH(top + 1);
    /* where a sampler starts seeing the callee: what follows (the context, a GC in it) is
     * the callee's, as for a signal-driven sample */
    if (UNLIKELY(vm->poll > 0) && vm->safepoint_hook) {
        SAVE();
        vm->safepoint_hook(vm, SOM_SP_ENTRY);
    }
    if (UNLIKELY(vm->exact_hooks)) {
        SAVE();
        vm->on_enter(vm, callee, false);
    }
    fp = nf;
    lits = meth->literals;
    sites = meth->sites;
    ip = meth->qcode;
    if (UNLIKELY(!ip)) ip = quicken(meth);
    meth->invocations++;
    if (meth->nctx) {
        SAVE();
        SomContext *c = new_context(vm, meth->nctx);
        c->outer = meth->kind == MK_BLOCK ? fp->ctx : NULL;
        c->frame = meth->kind == MK_BLOCK ? NULL : fp;
        fp->ctx = c;
    }
    /* one predictable branch while there is no JIT */
    if (UNLIKELY(((uintptr_t)vm->jit | (uintptr_t)vm->jit_hook) != 0)) goto jit_activate;
    DISPATCH();
}

jit_activate : /* fp: the activation just made (context included); sp: above its locals */ {
    SAVE();
    JitAct a = jit_activation(vm, fp);
    if (LIKELY(a.action == JA_INTERPRET)) DISPATCH();
    sp = fp->bp + 1 + meth->nargs + meth->nlocals;
    ret = a.value;
    *sp++ = ret; /* rooted for the return's safepoint or the unwinding */
    if (a.action == JA_RETURN) goto do_return;
    if (a.action == JA_EXIT) goto exit_vm;
    hi = a.home;
    goto nlr_unwind;
}

primitive:
    if (callee->prim_kind == PK_ARRAY_AT) {
        Value a = sp[-2], i = sp[-1];
        if (LIKELY(!vm->prims_all && som_is_obj(a) && som_hdr(a)->kind == OBJ_ARRAY &&
                   som_is_int(i) && (uint64_t)(som_int(i) - 1) < ((SomArray *)a)->len)) {
            sp[-2] = ((SomArray *)a)->items[som_int(i) - 1];
            sp--;
            DISPATCH();
        }
        goto plain_primitive;
    }
    if (callee->prim_kind == PK_ARRAY_AT_PUT) {
        Value a = sp[-3], i = sp[-2];
        if (LIKELY(!vm->prims_all && som_is_obj(a) && som_hdr(a)->kind == OBJ_ARRAY &&
                   som_is_int(i) && (uint64_t)(som_int(i) - 1) < ((SomArray *)a)->len)) {
            ((SomArray *)a)->items[som_int(i) - 1] = sp[-1];
            sp -= 2; /* answers the array */
            DISPATCH();
        }
        goto plain_primitive;
    }
    switch (callee->prim_kind) {
    case PK_ARRAY_AT:
    case PK_ARRAY_AT_PUT:
    plain_primitive:
    case PK_PLAIN: {
        if (fp) fp->ip = ip; /* fp->bci already names the send (send_site) */
        SAVE();
        som_state_point(vm, SOM_SP_PRIM_CALL, true);
        if (UNLIKELY(vm->prim_hooks)) vm->on_enter(vm, callee, true);
        vm->state = VMS_PRIMITIVE;
        int r = callee->prim(vm, sp - n - 1);
        som_state_point(vm, SOM_SP_PRIM_DONE, true);
        if (UNLIKELY(vm->prim_hooks)) vm->on_exit(vm, callee, true); /* still VMS_PRIMITIVE */
        vm->state = VMS_INTERP;
        if (LIKELY(r == PRIM_OK)) {
            sp -= n;
            DISPATCH();
        }
        if (r == PRIM_EXIT) goto exit_vm;
        goto error;
    }
    case PK_BLOCK_VALUE:
        recv = sp[-n - 1];
        if (!som_is_obj(recv) || som_hdr(recv)->kind != OBJ_BLOCK ||
            ((SomBlock *)recv)->method->nargs != n) {
            som_prim_error(vm, "block evaluated with the wrong number of arguments");
            goto error;
        }
        callee = ((SomBlock *)recv)->method;
        goto activate;
    case PK_PERFORM:
    case PK_PERFORM_IN_SUPER: {
        bool super = callee->prim_kind == PK_PERFORM_IN_SUPER;
        Value s = sp[super ? -2 : -1];
        if (!is_symbol(s) ||
            (super && (!som_is_obj(sp[-1]) || som_hdr(sp[-1])->kind != OBJ_CLASS))) {
            som_prim_error(vm, "Expected instance of 'Symbol' but got instance of '%s'.",
                           som_class_of(vm, s)->name->bytes);
            goto error;
        }
        if (selector_arity((SomString *)s) != 0) {
            som_prim_error(vm, "perform: %s needs %d arguments; use perform:withArguments:",
                           ((SomString *)s)->bytes, selector_arity((SomString *)s));
            goto error;
        }
        lookup_cls = super ? (SomClass *)sp[-1] : NULL;
        sp -= super ? 2 : 1;
        sel = (SomString *)s;
        n = 0;
        if (!lookup_cls) lookup_cls = som_class_of(vm, sp[-1]);
        goto send_sel;
    }
    case PK_PERFORM_WITH_ARGS:
    case PK_PERFORM_WITH_ARGS_IN_SUPER: {
        bool super = callee->prim_kind == PK_PERFORM_WITH_ARGS_IN_SUPER;
        Value s = sp[super ? -3 : -2], a = sp[super ? -2 : -1];
        if (!is_symbol(s) || !is_array(a)) {
            som_prim_error(vm, "perform:withArguments: expects a Symbol and an Array");
            goto error;
        }
        SomArray *arr = (SomArray *)a;
        if ((uint64_t)selector_arity((SomString *)s) != arr->len) {
            som_prim_error(vm, "perform: %s needs %d arguments, got %llu", ((SomString *)s)->bytes,
                           selector_arity((SomString *)s), (unsigned long long)arr->len);
            goto error;
        }
        lookup_cls = super ? (SomClass *)sp[-1] : NULL;
        sp -= super ? 3 : 2;
        if (sp + arr->len + 8 > vm->stack_end) {
            som_prim_error(vm, "Stack overflow: too many arguments");
            goto error;
        }
        for (uint64_t i = 0; i < arr->len; i++)
            *sp++ = arr->items[i];
        n = (int)arr->len;
        sel = (SomString *)s;
        if (!lookup_cls) lookup_cls = som_class_of(vm, sp[-n - 1]);
        goto send_sel;
    }
    case PK_INVOKE_ON_WITH: {
        Value m = sp[-3], obj = sp[-2], a = sp[-1];
        if (!is_array(a)) {
            som_prim_error(vm, "invokeOn:with: expects an Array of arguments");
            goto error;
        }
        SomArray *arr = (SomArray *)a;
        SomMethod *target = (SomMethod *)m;
        SomClass *c = som_class_of(vm, obj);
        while (c && c != target->holder)
            c = c->super;
        if (!c) { /* the method's code assumes its holder's layout */
            som_prim_error(vm, "invokeOn:with: receiver is an instance of %s, not of %s",
                           som_class_of(vm, obj)->name->bytes, target->holder->name->bytes);
            goto error;
        }
        if (arr->len != target->nargs) {
            som_prim_error(vm, "invokeOn:with: expects %u arguments, got %llu", target->nargs,
                           (unsigned long long)arr->len);
            goto error;
        }
        sp -= 3;
        *sp++ = obj;
        for (uint64_t i = 0; i < arr->len; i++)
            *sp++ = arr->items[i];
        n = (int)arr->len;
        callee = target;
        goto invoke;
    }
    case PK_RESTART:
        if (UNLIKELY(fp->jit != NULL)) { /* the builder refuses such methods (fp may be the
                                          * scratch record of an IM_SEND: jit set too) */
            som_prim_error(vm, "restart from compiled code");
            goto error;
        }
        sp = bp + 1 + meth->nargs + meth->nlocals;
        ip = meth->qcode;
        DISPATCH();
    }
    som_prim_error(vm, "bad primitive kind");
    goto error;

send_sel: /* sel, n, lookup_cls; receiver and arguments on the stack */
    if (UNLIKELY(lookup_cls != som_class_of(vm, sp[-n - 1]))) {
        /* perform:inSuperclass: - only classes the receiver inherits from */
        SomClass *c = som_class_of(vm, sp[-n - 1]);
        while (c && c != lookup_cls)
            c = c->super;
        if (!c) {
            som_prim_error(vm, "perform:inSuperclass: %s is not a superclass of %s",
                           lookup_cls->name->bytes, som_class_of(vm, sp[-n - 1])->name->bytes);
            goto error;
        }
    }
    callee = som_lookup(vm, lookup_cls, sel);
    if (callee) goto invoke;
    goto dnu;

send_site: /* k: call site of a SEND (or of an arithmetic op's slow path) */
    n = sites[k].nargs;
send_site_n : /* k, and n = its number of arguments (known to SEND0 ..: the receiver's load
               * does not wait for the site's) */
{
    CallSite *cs = &sites[k];
    recv = sp[-n - 1];
    cls = som_class_of(vm, recv);
    fp->bci = cs->bci;
    if (LIKELY(cs->ic[0].cls == cls)) {
        callee = cs->ic[0].method;
        IC_HIT(cs->ic[0]);
        goto invoke;
    }
    SAVE();
    callee = ic_miss(vm, cs, cls, cls);
    if (callee) {
        if ((callee->trivial || callee->prim_kind == PK_ARRAY_AT ||
             callee->prim_kind == PK_ARRAY_AT_PUT) &&
            cs->ic[0].method == callee && cs->ic[0].hits == 1)
            quicken_send(meth, cs); /* the miss that filled the first entry */
        goto invoke;
    }
    sel = cs->selector;
    goto dnu;
}

dnu : /* sel, n; receiver and arguments on the stack */ {
    SAVE();
    SomArray *arr = som_array_new(vm, (size_t)n);
    for (int i = 0; i < n; i++)
        arr->items[i] = sp[-n + i];
    sp -= n;
    recv = sp[-1];
    *sp++ = SOM_V(sel);
    *sp++ = SOM_V(arr);
    n = 2;
    callee = som_lookup(vm, som_class_of(vm, recv), vm->sym_dnu);
    if (!callee) {
        som_prim_error(vm, "Method %s not found in class %s", sel->bytes,
                       som_class_of(vm, recv)->name->bytes);
        goto error;
    }
    goto invoke;
}

    /* ---- instructions -------------------------------------------------- */
L_PUSH_LOCAL:
    *sp++ = bp[*ip++];
    DISPATCH();
L_PUSH_SELF:
    *sp++ = self;
    DISPATCH();
L_PUSH_CTX : {
    SomContext *c = ctx_at(fp->ctx, ip[0]);
    *sp++ = c->vars[ip[1]];
    ip += 2;
    DISPATCH();
}
L_PUSH_FIELD:
    if (UNLIKELY(!som_is_obj(self) || som_hdr(self)->kind != OBJ_INSTANCE)) goto field_error;
    *sp++ = ((SomInstance *)self)->fields[*ip++];
    DISPATCH();
L_PUSH_CFIELD:
    if (UNLIKELY(!som_is_obj(self) || som_hdr(self)->kind != OBJ_CLASS ||
                 *ip >= ((SomClass *)self)->cfields->len))
        goto field_error;
    *sp++ = ((SomClass *)self)->cfields->items[*ip++];
    DISPATCH();
L_PUSH_CONST:
    k = W();
    *sp++ = lits[k];
    DISPATCH();
L_PUSH_NIL:
    *sp++ = nil;
    DISPATCH();
L_PUSH_TRUE:
    *sp++ = trueV;
    DISPATCH();
L_PUSH_FALSE:
    *sp++ = falseV;
    DISPATCH();
L_PUSH_INT:
    *sp++ = som_mkint((int8_t)*ip++);
    DISPATCH();
L_PUSH_GLOBAL : {
    k = W();
    Value v = ((SomString *)lits[k])->gval; /* som_global_get, without the call */
    if (LIKELY(v)) {
        *sp++ = v;
        DISPATCH();
    }
    fp->bci = (uint32_t)(ip - meth->qcode);
    *sp++ = self;
    *sp++ = lits[k];
    n = 1;
    sel = vm->sym_unknownGlobal;
    lookup_cls = som_class_of(vm, self);
    goto send_sel;
}
L_PUSH_BLOCK : {
    k = W();
    SAVE();
    SomBlock *b = new_block(vm, (SomMethod *)lits[k], fp->ctx, self);
    *sp++ = SOM_V(b);
    DISPATCH();
}
L_STORE_LOCAL:
    bp[*ip++] = *--sp;
    DISPATCH();
L_STORE_CTX : {
    SomContext *c = ctx_at(fp->ctx, ip[0]);
    c->vars[ip[1]] = *--sp;
    ip += 2;
    DISPATCH();
}
L_STORE_FIELD:
    if (UNLIKELY(!som_is_obj(self) || som_hdr(self)->kind != OBJ_INSTANCE)) goto field_error;
    ((SomInstance *)self)->fields[*ip++] = *--sp;
    DISPATCH();
L_STORE_CFIELD:
    if (UNLIKELY(!som_is_obj(self) || som_hdr(self)->kind != OBJ_CLASS ||
                 *ip >= ((SomClass *)self)->cfields->len))
        goto field_error;
    ((SomClass *)self)->cfields->items[*ip++] = *--sp;
    DISPATCH();
L_DUP:
    sp[0] = sp[-1];
    sp++;
    DISPATCH();
L_POP:
    sp--;
    DISPATCH();
L_SEND:
    k = W();
    goto send_site;
L_SEND0:
    k = W();
    n = 0;
    goto send_site_n;
L_SEND1:
    k = W();
    n = 1;
    goto send_site_n;
L_SEND2:
    k = W();
    n = 2;
    goto send_site_n;
/* Sends whose site's first entry is a trivial method or Array>>at: / at:put: (quicken_send):
 * for a receiver of that entry's class it runs here, without the send's generic path (no
 * frame is made either way: `invoke` runs these in place too); anything else takes the
 * plain send.  The entry's method is the one the rewrite saw (entries never change). */
#define TRIVIAL_ENTRY(cs, c) (LIKELY((c) == (cs)->ic[0].cls && !vm->no_trivial))
/* receiver r at sp[-1]: the getter's field, or the constant (the site is cs) */
#define GET_IN_PLACE(cs, r)                                                                        \
    do {                                                                                           \
        Value r_ = (r);                                                                            \
        if (LIKELY(som_is_obj(r_)) && TRIVIAL_ENTRY(cs, som_hdr(r_)->cls) &&                       \
            LIKELY(som_hdr(r_)->kind == OBJ_INSTANCE &&                                            \
                   (cs)->ic[0].method->trivial_arg < ((SomInstance *)r_)->nfields)) {              \
            IC_HIT((cs)->ic[0]);                                                                   \
            sp[-1] = ((SomInstance *)r_)->fields[(cs)->ic[0].method->trivial_arg];                 \
            DISPATCH();                                                                            \
        }                                                                                          \
    } while (0)
#define LIT_IN_PLACE(cs, r)                                                                        \
    do {                                                                                           \
        if (TRIVIAL_ENTRY(cs, som_class_of(vm, (r)))) {                                            \
            IC_HIT((cs)->ic[0]);                                                                   \
            sp[-1] = (cs)->ic[0].method->literals[(cs)->ic[0].method->trivial_arg];                \
            DISPATCH();                                                                            \
        }                                                                                          \
    } while (0)
/* array a at sp[-2], index i at sp[-1]: the element replaces both */
#define AT_IN_PLACE(cs, a, i)                                                                      \
    do {                                                                                           \
        Value a_ = (a), i_ = (i);                                                                  \
        if (ARRAY_ENTRY(cs, a_) && LIKELY(IN_BOUNDS(a_, i_))) {                                    \
            IC_HIT((cs)->ic[0]);                                                                   \
            sp[-2] = ((SomArray *)a_)->items[som_int(i_) - 1];                                     \
            sp--;                                                                                  \
            DISPATCH();                                                                            \
        }                                                                                          \
    } while (0)
#define ARRAY_ENTRY(cs, a)                                                                         \
    (LIKELY(som_is_obj(a)) && LIKELY(som_hdr(a)->cls == (cs)->ic[0].cls && !vm->prims_all &&       \
                                     som_hdr(a)->kind == OBJ_ARRAY))
#define IN_BOUNDS(a, i) (som_is_int(i) && (uint64_t)(som_int(i) - 1) < ((SomArray *)(a))->len)
/* PUSH_LOCAL a; SEND k fused: v = the local, pushed; k decoded; ip past both */
#define PUSH_LOCAL_SITE(v) ((v) = bp[ip[0]], *sp++ = (v), ip += 4, k = u16_at(ip - 2))
L_SEND0_GET:
    k = W();
    GET_IN_PLACE(&sites[k], sp[-1]);
    n = 0;
    goto send_site_n;
L_PUSH_LOCAL_SEND0_GET : {
    Value r;
    PUSH_LOCAL_SITE(r);
    GET_IN_PLACE(&sites[k], r);
    n = 0;
    goto send_site_n;
}
L_SEND0_LIT:
    k = W();
    LIT_IN_PLACE(&sites[k], sp[-1]);
    n = 0;
    goto send_site_n;
L_PUSH_LOCAL_SEND0_LIT : {
    Value r;
    PUSH_LOCAL_SITE(r);
    LIT_IN_PLACE(&sites[k], r);
    n = 0;
    goto send_site_n;
}
/* the setter's receiver at sp[-2] answers itself; `pop`: the answer is dropped too (the POP
 * that follows the send is skipped) */
#define SET_IN_PLACE(pop)                                                                          \
    do {                                                                                           \
        k = W();                                                                                   \
        CallSite *cs = &sites[k];                                                                  \
        Value r = sp[-2];                                                                          \
        if (LIKELY(som_is_obj(r)) && TRIVIAL_ENTRY(cs, som_hdr(r)->cls) &&                         \
            LIKELY(som_hdr(r)->kind == OBJ_INSTANCE &&                                             \
                   cs->ic[0].method->trivial_arg < ((SomInstance *)r)->nfields)) {                 \
            IC_HIT(cs->ic[0]);                                                                     \
            ((SomInstance *)r)->fields[cs->ic[0].method->trivial_arg] = sp[-1];                    \
            sp -= 1 + (pop);                                                                       \
            ip += (pop);                                                                           \
            DISPATCH();                                                                            \
        }                                                                                          \
        n = 1;                                                                                     \
        goto send_site_n;                                                                          \
    } while (0)
L_SEND1_SET:
    SET_IN_PLACE(0);
L_SEND1_SET_POP:
    SET_IN_PLACE(1);
L_SEND1_AT:
    k = W();
    AT_IN_PLACE(&sites[k], sp[-2], sp[-1]);
    n = 1;
    goto send_site_n;
L_PUSH_LOCAL_SEND1_AT : {
    Value i;
    PUSH_LOCAL_SITE(i);
    AT_IN_PLACE(&sites[k], sp[-2], i);
    n = 1;
    goto send_site_n;
}
/* array at sp[-3], index at sp[-2], value at sp[-1]: at:put: answers the array (`pop` as above) */
#define ATPUT_IN_PLACE(pop)                                                                        \
    do {                                                                                           \
        k = W();                                                                                   \
        CallSite *cs = &sites[k];                                                                  \
        Value a = sp[-3], i = sp[-2];                                                              \
        if (ARRAY_ENTRY(cs, a) && LIKELY(IN_BOUNDS(a, i))) {                                       \
            IC_HIT(cs->ic[0]);                                                                     \
            ((SomArray *)a)->items[som_int(i) - 1] = sp[-1];                                       \
            sp -= 2 + (pop);                                                                       \
            ip += (pop);                                                                           \
            DISPATCH();                                                                            \
        }                                                                                          \
        n = 2;                                                                                     \
        goto send_site_n;                                                                          \
    } while (0)
L_SEND2_ATPUT:
    ATPUT_IN_PLACE(0);
L_SEND2_ATPUT_POP:
    ATPUT_IN_PLACE(1);
#undef ATPUT_IN_PLACE
#undef SET_IN_PLACE
#undef IN_BOUNDS
#undef ARRAY_ENTRY
#undef AT_IN_PLACE
#undef LIT_IN_PLACE
#undef GET_IN_PLACE
#undef TRIVIAL_ENTRY
L_SUPER_SEND:
    k = W();
    fp->bci = sites[k].bci;
super_send : /* k, meth: the method holding the site */ {
    CallSite *cs = &sites[k];
    n = cs->nargs;
    SomClass *sc = meth->holder->super;
    if (cs->ic[0].cls && cs->ic[0].cls == sc) {
        callee = cs->ic[0].method;
        goto invoke;
    }
    sel = cs->selector;
    callee = sc ? som_lookup(vm, sc, sel) : NULL;
    if (!callee) goto dnu;
    cs->ic[0].cls = sc;
    cs->ic[0].method = callee;
    goto invoke;
}
L_RETURN_SELF:
    ret = self;
    goto do_return;
L_JUMP_RETURN:
    ip += 2;
L_RETURN_LOCAL:
    ret = sp[-1];
do_return : {
    if (UNLIKELY(top == base_top + 1)) goto end_return;
    if (UNLIKELY(vm->poll > 0) && vm->safepoint_hook) {
        fp->ip = ip;
        SAVE();
        vm->safepoint_hook(vm, SOM_SP_RETURN);
    }
    if (meth->kind == MK_METHOD && meth->nctx) fp->ctx->frame = NULL;
    sp = bp;
    *sp++ = ret;
    PUBLISH(top - 1);
    if (UNLIKELY(vm->exact_hooks)) { /* where a sampler stops seeing the callee */
        SAVE();
        vm->on_exit(vm, meth, false);
    }
    fp--; /* &vm->frames[top]: fp is a frame of the array here (never the scratch record) */
    LOAD_FRAME();
    ip = fp->ip;
    DISPATCH();
}
end_return:                       /* the level's last activation returns ret */
    if (LEVEL_MODE == IM_DEOPT) { /* the deoptimized activation: its invoker pops it (jitabi.h) */
        e->result = ret;
        vm->sp = sp;
        return 0;
    }
    if (UNLIKELY(vm->poll > 0) && vm->safepoint_hook) {
        fp->ip = ip;
        SAVE();
        vm->safepoint_hook(vm, SOM_SP_RETURN);
    }
    if (meth->kind == MK_METHOD && meth->nctx) fp->ctx->frame = NULL;
    sp = fp->bp;
    *sp++ = ret;
    PUBLISH(top - 1);
    if (UNLIKELY(vm->exact_hooks)) {
        SAVE();
        vm->on_exit(vm, meth, false);
    }
    /* fall through: the answer is sp[-1] */
L__JITRET: /* back in the compiled frame of an IM_SEND* level (or IM_CALL of a trivial or
            * primitive method): the send's answer is sp[-1] */
    if (LEVEL_MODE == IM_CALL) {
        vm->sp = sp;
        return 0;
    }
    e->result = *--sp;
    vm->sp = sp;
    return 0;
L_RETURN_NLR : {
    ret = sp[-1];
    if (UNLIKELY(vm->poll > 0) && vm->safepoint_hook) {
        fp->ip = ip;
        SAVE();
        vm->safepoint_hook(vm, SOM_SP_RETURN);
    }
    SomContext *c = fp->ctx;
    while (c && c->outer)
        c = c->outer;
    SomFrame *home = c ? c->frame : NULL;
    if (home) {
        hi = (int32_t)(home - vm->frames);
        goto nlr_unwind;
    }
    /* the home activation is gone: send escapedBlock: to the block's invoker */
    Value blk = fp->bp[0];
    if (UNLIKELY(top == base_top + 1 && LEVEL_MODE == IM_DEOPT)) {
        /* a deoptimized block frame is popped by its invoker: it answers what
         * escapedBlock: answers, sent to its caller's self */
        Value inv = top > 0 ? vm->frames[top - 1].self : nil;
        ip = retlocal_code;
        *sp++ = inv;
        *sp++ = blk;
        n = 1;
        sel = vm->sym_escapedBlock;
        lookup_cls = som_class_of(vm, inv);
        goto send_sel;
    }
    sp = fp->bp;
    PUBLISH(top - 1);
    if (UNLIKELY(vm->exact_hooks)) {
        SAVE();
        vm->on_exit(vm, meth, false);
    }
    if (top == base_top && LEVEL_MODE == IM_CALL) { /* (IM_SEND*: the compiled frame invokes) */
        som_prim_error(vm, "Block has escaped and cannot be executed (no invoker)");
        goto error;
    }
    fp = &vm->frames[top];
    LOAD_FRAME();
    ip = fp->ip;
    *sp++ = self;
    *sp++ = blk;
    n = 1;
    sel = vm->sym_escapedBlock;
    lookup_cls = som_class_of(vm, self);
    goto send_sel;
}
nlr_unwind: /* to the live home frame hi with ret (rooted at sp[-1]) */
    if (hi > base_top) {
        for (int32_t i = top; i > hi; i--) {
            SomFrame *f = &vm->frames[i];
            if (f->method->kind == MK_METHOD && f->method->nctx) f->ctx->frame = NULL;
            PUBLISH(i - 1);
            if (UNLIKELY(vm->exact_hooks)) {
                SAVE();
                vm->on_exit(vm, f->method, false);
            }
        }
        PUBLISH(hi);
        fp = &vm->frames[hi];
        LOAD_FRAME();
        goto do_return;
    }
    /* the home belongs to an outer level: pop this level's frames and let it go on */
    vm->nlr_value = ret;
    vm->nlr_target = hi;
    hi = base_top + (LEVEL_MODE == IM_DEOPT); /* the deoptimized frame is its invoker's to pop */
    for (int32_t i = top; i > hi; i--) {
        SomFrame *f = &vm->frames[i];
        if (f->method->kind == MK_METHOD && f->method->nctx) f->ctx->frame = NULL;
        PUBLISH(i - 1);
        if (UNLIKELY(vm->exact_hooks)) {
            SAVE();
            vm->on_exit(vm, f->method, false);
        }
    }
    PUBLISH(hi);
    vm->sp = base_sp;
    return INTERP_UNWIND;
L_JUMP:
    k = W();
    ip += k;
    DISPATCH();
/* Pops the condition; jumps when it is `taken`, falls through when it is
 * `other`, and sends the construct's message for real otherwise. */
#define COND_JUMP(taken, other)                                                                    \
    do {                                                                                           \
        Value v = *--sp;                                                                           \
        k = W();                                                                                   \
        ip += 2;                                                                                   \
        if (v == (taken)) {                                                                        \
            ip += k;                                                                               \
            DISPATCH();                                                                            \
        }                                                                                          \
        if (LIKELY(v == (other))) DISPATCH();                                                      \
        goto not_boolean;                                                                          \
    } while (0)
L_JUMP_IF_FALSE:
    COND_JUMP(falseV, trueV);
L_JUMP_IF_TRUE:
    COND_JUMP(trueV, falseV);
not_boolean : /* an inlined conditional saw a non-boolean: send its message for real */ {
    CallSite *cs = &sites[u16_at(ip - 2)];
    sp++; /* the receiver is back on the stack */
    for (int i = 0; i < cs->nargs; i++)
        *sp++ = nil;
    fp->bci = (uint32_t)(ip - 5 - meth->qcode);
    ip = meth->qcode + cs->bci;
    sel = cs->selector;
    n = cs->nargs;
    goto dnu;
}
L_JUMP_IF_NIL:
    k = W();
    if (*--sp == nil) ip += k;
    DISPATCH();
L_JUMP_IF_NOT_NIL:
    k = W();
    if (*--sp != nil) ip += k;
    DISPATCH();
L_JUMP_BACK:
    k = W();
    ip -= k;
    if (UNLIKELY(vm->poll > 0) && vm->safepoint_hook) {
        fp->bci = (uint32_t)(ip - meth->qcode);
        SAVE();
        vm->safepoint_hook(vm, SOM_SP_LOOP);
    }
    if (UNLIKELY(vm->jit_hook != NULL)) goto jit_backedge;
    DISPATCH();
jit_backedge:
    fp->bci = (uint32_t)(ip - meth->qcode);
    SAVE();
    jit_backedge_hooks(vm, fp);
    DISPATCH();

#define FEEDBACK(bits) feedback(FB(k), (bits))
/* the same for site i, where a fast path needs no k afterwards (k is live across the dispatch,
 * so writing it costs a store) */
#define FEEDBACK_AT(i, bits) feedback(FB(i), (bits))
#define ARITH_SLOW(a, b)                                                                           \
    do {                                                                                           \
        FEEDBACK(TF_BIT(tf_kind(a), tf_kind(b)));                                                  \
        goto send_site;                                                                            \
    } while (0)
/* ADD/SUB/MUL k with the operands on the stack; `then` runs after the fast path; two
 * immediate doubles go on in dchain (which takes a following STORE_LOCAL too) */
#define ARITH(op, then)                                                                            \
    do {                                                                                           \
        Value a = sp[-2], b = sp[-1], r;                                                           \
        SAVE();                                                                                    \
        int r_ = arith_fast_d(vm, op, a, b, FB(k), &r, &dacc);                                     \
        if (LIKELY(r_ == 1)) {                                                                     \
            sp[-2] = r;                                                                            \
            sp--;                                                                                  \
            then;                                                                                  \
            DISPATCH();                                                                            \
        }                                                                                          \
        if (r_ == 2) {                                                                             \
            sp -= 2;                                                                               \
            goto dchain;                                                                           \
        }                                                                                          \
        ARITH_SLOW(a, b);                                                                          \
    } while (0)
/* op k; STORE_LOCAL i: the slow path leaves the STORE_LOCAL to run after the send */
#define ARITH_STORE(op)                                                                            \
    do {                                                                                           \
        k = W();                                                                                   \
        ARITH(op, (bp[ip[1]] = *--sp, ip += 2));                                                   \
    } while (0)

L_ADD:
    k = W();
    ARITH(AR_ADD, (void)0);
L_SUB:
    k = W();
    ARITH(AR_SUB, (void)0);
L_MUL:
    k = W();
    ARITH(AR_MUL, (void)0);
L_ADD_STORE:
    ARITH_STORE(AR_ADD);
L_SUB_STORE:
    ARITH_STORE(AR_SUB);
L_MUL_STORE:
    ARITH_STORE(AR_MUL);

/* `=` of two strings (str_eq_fast): c = the answer, with the feedback and the cache hit the
 * send would have recorded; c stays -1 when it does not apply */
#define STR_EQ(a, b, c)                                                                            \
    do {                                                                                           \
        if (((c) = str_eq_fast(vm, &sites[k], (a), (b))) >= 0) {                                   \
            FEEDBACK(TF_BIT(tf_kind(a), tf_kind(b)));                                              \
            IC_HIT(sites[k].ic[0]);                                                                \
        }                                                                                          \
    } while (0)
#define COMPARE(op)                                                                                \
    do {                                                                                           \
        k = W();                                                                                   \
        Value a = sp[-2], b = sp[-1];                                                              \
        int c_ = compare_fast(op, a, b, FB(k));                                                    \
        if (op == CMP_EQ && c_ < 0) STR_EQ(a, b, c_);                                              \
        if (LIKELY(c_ >= 0)) {                                                                     \
            sp[-2] = BOOL(c_);                                                                     \
            sp--;                                                                                  \
            DISPATCH();                                                                            \
        }                                                                                          \
        ARITH_SLOW(a, b);                                                                          \
    } while (0)
/* op k, then the JUMP_IF_FALSE w s at jf: the fast path goes where the jump would; the slow
 * path leaves the instructions after op to run after the send */
#define COMPARE_JF_AT(op, jf)                                                                      \
    do {                                                                                           \
        k = W();                                                                                   \
        Value a = sp[-2], b = sp[-1];                                                              \
        int c_ = compare_fast(op, a, b, FB(k));                                                    \
        if (op == CMP_EQ && c_ < 0) STR_EQ(a, b, c_);                                              \
        if (LIKELY(c_ >= 0)) {                                                                     \
            sp -= 2;                                                                               \
            const uint8_t *jf_ = (jf);                                                             \
            ip = jf_ + 5;                                                                          \
            if (!c_) ip += u16_at(jf_ + 1);                                                        \
            DISPATCH();                                                                            \
        }                                                                                          \
        ARITH_SLOW(a, b);                                                                          \
    } while (0)
/* op k; JUMP_IF_FALSE w s */
#define COMPARE_JF(op) COMPARE_JF_AT(op, ip)
/* op k; JUMP w to a JUMP_IF_FALSE: the jump's target tests the comparison's result (a
 * condition `x and: [a < b]`) */
#define COMPARE_JJF(op) COMPARE_JF_AT(op, ip + 3 + u16_at(ip + 1))

L_LT:
    COMPARE(CMP_LT);
L_GT:
    COMPARE(CMP_GT);
L_LE:
    COMPARE(CMP_LE);
L_GE:
    COMPARE(CMP_GE);
L_EQ:
    COMPARE(CMP_EQ);
L_LT_JF:
    COMPARE_JF(CMP_LT);
L_GT_JF:
    COMPARE_JF(CMP_GT);
L_LE_JF:
    COMPARE_JF(CMP_LE);
L_GE_JF:
    COMPARE_JF(CMP_GE);
L_EQ_JF:
    COMPARE_JF(CMP_EQ);
L_LT_JJF:
    COMPARE_JJF(CMP_LT);
L_GT_JJF:
    COMPARE_JJF(CMP_GT);
L_LE_JJF:
    COMPARE_JJF(CMP_LE);
L_GE_JJF:
    COMPARE_JJF(CMP_GE);
L_EQ_JJF:
    COMPARE_JJF(CMP_EQ);

    /* ---- other superinstructions (bytecode.h) ------------------------- */
L_PUSH_LOCAL2:
    sp[0] = bp[ip[0]];
    sp[1] = bp[ip[2]];
    sp += 2;
    ip += 3;
    DISPATCH();
/* ip[3] is an LT..EQ (or its _JF form) of x and y followed by JUMP_IF_FALSE: branch as it
 * would, past the 11 bytes of PUSH_x a; PUSH_x b; op k; JUMP_IF_FALSE w s */
#define CMP_JF_AT3(x, y)                                                                           \
    do {                                                                                           \
        unsigned c_ = som_bc_base[ip[3]];                                                          \
        bool t_ = c_ == BC_LT   ? (x) < (y)                                                        \
                  : c_ == BC_GT ? (x) > (y)                                                        \
                  : c_ == BC_LE ? (x) <= (y)                                                       \
                  : c_ == BC_GE ? (x) >= (y)                                                       \
                                : (x) == (y);                                                      \
        unsigned w_ = u16_at(ip + 7);                                                              \
        ip += 11;                                                                                  \
        if (!t_) ip += w_;                                                                         \
        DISPATCH();                                                                                \
    } while (0)
L_PUSH_LOCAL2_CJF : { /* two small integers compared and branched on here; else both pushed */
    Value a = bp[ip[0]], b = bp[ip[2]];
    if (LIKELY(a & b & 1)) {
        FEEDBACK_AT(u16_at(ip + 4), TF_BIT(TF_INT, TF_INT));
        /* tagging keeps the order */
        CMP_JF_AT3((int64_t)a, (int64_t)b);
    }
    sp[0] = a;
    sp[1] = b;
    sp += 2;
    ip += 3;
    DISPATCH();
}
L_PUSH_LOCAL_INT:
    sp[0] = bp[ip[0]];
    sp[1] = som_mkint((int8_t)ip[2]);
    sp += 2;
    ip += 3;
    DISPATCH();
L_STORE_PUSH_LOCAL:
    bp[ip[0]] = sp[-1];
    sp[-1] = bp[ip[2]];
    ip += 3;
    DISPATCH();
L_PUSH_LOCAL_SEND:
    *sp++ = bp[ip[0]];
    ip += 4;
    k = u16_at(ip - 2);
    goto send_site;
L_PUSH_LOCAL_SEND0 : {
    Value v;
    PUSH_LOCAL_SITE(v);
    n = 0;
    goto send_site_n;
}
L_PUSH_LOCAL_SEND1 : {
    Value v;
    PUSH_LOCAL_SITE(v);
    n = 1;
    goto send_site_n;
}
/* PUSH_LOCAL a; PUSH_INT c; ADD/SUB k: small integers here, anything else
 * runs the ADD/SUB instruction itself */
#define LOCAL_IMM(op)                                                                              \
    do {                                                                                           \
        Value a = bp[ip[0]];                                                                       \
        int64_t y = (int8_t)ip[2], r;                                                              \
        /* on the tagged word (2x+1 +/- 2y): 64-bit overflow is 63-bit overflow */                 \
        if (LIKELY(som_is_int(a)) &&                                                               \
            LIKELY(!(op == AR_ADD ? __builtin_add_overflow((int64_t)a, 2 * y, &r)                  \
                                  : __builtin_sub_overflow((int64_t)a, 2 * y, &r)))) {             \
            FEEDBACK_AT(u16_at(ip + 4), TF_BIT(TF_INT, TF_INT));                                   \
            *sp++ = (Value)r;                                                                      \
            ip += 6;                                                                               \
            DISPATCH();                                                                            \
        }                                                                                          \
        sp[0] = a;                                                                                 \
        sp[1] = som_mkint(y);                                                                      \
        sp += 2;                                                                                   \
        ip += 3;                                                                                   \
        DISPATCH();                                                                                \
    } while (0)
/* PUSH_LOCAL a; ADD/SUB/MUL k: the argument comes from the local; the slow
 * path pushes it and runs the ADD/SUB/MUL instruction itself.  (The fast
 * paths need no stack slot for the operands: a boxed result's allocation
 * happens after both were read.) */
#define LOCAL_ARITH(op)                                                                            \
    do {                                                                                           \
        Value a = sp[-1], b = bp[ip[0]], r;                                                        \
        SAVE();                                                                                    \
        int r_ = arith_fast_d(vm, op, a, b, FB(u16_at(ip + 2)), &r, &dacc);                        \
        if (LIKELY(r_ == 1)) {                                                                     \
            sp[-1] = r;                                                                            \
            ip += 4;                                                                               \
            DISPATCH();                                                                            \
        }                                                                                          \
        if (r_ == 2) {                                                                             \
            sp--;                                                                                  \
            ip += 4;                                                                               \
            goto dchain;                                                                           \
        }                                                                                          \
        *sp++ = b;                                                                                 \
        ip += 1;                                                                                   \
        DISPATCH();                                                                                \
    } while (0)
/* PUSH_LOCAL a; PUSH_LOCAL b; ADD/SUB/MUL k: both operands from locals; the slow path pushes
 * them and runs the ADD/SUB/MUL instruction itself.  `st`: a STORE_LOCAL c follows, and the
 * result goes to the local (two immediate doubles go on in dchain, which takes the store) */
#define LOCAL2_ARITH(op, st)                                                                       \
    do {                                                                                           \
        Value a = bp[ip[0]], b = bp[ip[2]], r;                                                     \
        SAVE();                                                                                    \
        int r_ = arith_fast_d(vm, op, a, b, FB(u16_at(ip + 4)), &r, &dacc);                        \
        if (LIKELY(r_ == 1)) {                                                                     \
            if (st)                                                                                \
                bp[ip[7]] = r;                                                                     \
            else                                                                                   \
                *sp++ = r;                                                                         \
            ip += (st) ? 8 : 6;                                                                    \
            DISPATCH();                                                                            \
        }                                                                                          \
        if (r_ == 2) {                                                                             \
            ip += 6;                                                                               \
            goto dchain;                                                                           \
        }                                                                                          \
        sp[0] = a;                                                                                 \
        sp[1] = b;                                                                                 \
        sp += 2;                                                                                   \
        ip += 3;                                                                                   \
        DISPATCH();                                                                                \
    } while (0)
L_PUSH_LOCAL2_ADD_ST:
    LOCAL2_ARITH(AR_ADD, 1);
L_PUSH_LOCAL2_SUB_ST:
    LOCAL2_ARITH(AR_SUB, 1);
L_PUSH_LOCAL2_ADD:
    LOCAL2_ARITH(AR_ADD, 0);
L_PUSH_LOCAL2_SUB:
    LOCAL2_ARITH(AR_SUB, 0);
L_PUSH_LOCAL2_MUL:
    LOCAL2_ARITH(AR_MUL, 0);
L_PUSH_LOCAL_ADD:
    LOCAL_ARITH(AR_ADD);
L_PUSH_LOCAL_SUB:
    LOCAL_ARITH(AR_SUB);
L_PUSH_LOCAL_MUL:
    LOCAL_ARITH(AR_MUL);
L_PUSH_LOCAL_JF : { /* a non-boolean is left to the JUMP_IF_FALSE instruction */
    Value v = bp[ip[0]];
    if (v == falseV) {
        ip += 6 + u16_at(ip + 2);
        DISPATCH();
    }
    if (LIKELY(v == trueV)) {
        ip += 6;
        DISPATCH();
    }
    *sp++ = v;
    ip += 1;
    DISPATCH();
}
L_PUSH_NIL_STORE:
    bp[ip[1]] = nil;
    ip += 2;
    DISPATCH();
L_PUSH_LOCAL_ADDI:
    LOCAL_IMM(AR_ADD);
L_PUSH_LOCAL_SUBI:
    LOCAL_IMM(AR_SUB);
/* the same followed by STORE_LOCAL b: the sum goes to the local, not the stack */
#define LOCAL_IMM_ST(op)                                                                           \
    do {                                                                                           \
        Value a = bp[ip[0]];                                                                       \
        int64_t y = (int8_t)ip[2], r;                                                              \
        if (LIKELY(som_is_int(a)) &&                                                               \
            LIKELY(!(op == AR_ADD ? __builtin_add_overflow((int64_t)a, 2 * y, &r)                  \
                                  : __builtin_sub_overflow((int64_t)a, 2 * y, &r)))) {             \
            FEEDBACK_AT(u16_at(ip + 4), TF_BIT(TF_INT, TF_INT));                                   \
            bp[ip[7]] = (Value)r;                                                                  \
            ip += 8;                                                                               \
            DISPATCH();                                                                            \
        }                                                                                          \
        sp[0] = a;                                                                                 \
        sp[1] = som_mkint(y);                                                                      \
        sp += 2;                                                                                   \
        ip += 3;                                                                                   \
        DISPATCH();                                                                                \
    } while (0)
L_PUSH_LOCAL_ADDI_ST:
    LOCAL_IMM_ST(AR_ADD);
L_PUSH_LOCAL_SUBI_ST:
    LOCAL_IMM_ST(AR_SUB);

/* An ADD/SUB/MUL of two immediate doubles left its result in dacc, unencoded and not pushed;
 * ip is at the next instruction.  While the next instructions go on computing with it -
 * `PUSH_LOCAL a; ADD/SUB/MUL k` of an immediate double, ADD/SUB/MUL with an immediate double
 * receiver on the stack, `PUSH_LOCAL a; PUSH_LOCAL b; op k` of two immediate doubles followed
 * by the ADD/SUB/MUL that combines it with the result, STORE_LOCAL (+ PUSH_LOCAL), or
 * `PUSH_CONST k; LT..EQ_JF` of an immediate double constant - they run here, on the double in
 * a register, without the encoding, the stack slot, the decoding and the dispatch between
 * them.  Each records the feedback its own instruction would.  Anything else: the result is
 * pushed (boxed if it must be) and that instruction runs as usual. */
dchain:
    for (;;) {
        unsigned op_ = ip[0]; /* the common steps first, by opcode; the others by table */
        if (op_ - BC_PUSH_LOCAL_ADD < 3u) { /* PUSH_LOCAL_ADD, _SUB, _MUL */
            Value b = bp[ip[1]];
            if (!som_is_imm_double(b)) break;
            FEEDBACK_AT(u16_at(ip + 3), TF_BIT(TF_DOUBLE, TF_DOUBLE));
            double y = som_imm_double(b);
            dacc = op_ == BC_PUSH_LOCAL_ADD   ? dacc + y
                   : op_ == BC_PUSH_LOCAL_SUB ? dacc - y
                                              : dacc * y;
            ip += 5;
            continue;
        }
        if (op_ == BC_STORE_LOCAL || op_ == BC_STORE_PUSH_LOCAL) {
            Value v;
            if (!som_try_imm_double(dacc, &v)) break; /* boxed by the push below */
            bp[ip[1]] = v;
            if (op_ == BC_STORE_LOCAL) {
                ip += 2;
                DISPATCH();
            }
            v = bp[ip[3]];
            ip += 4;
            unsigned next = ip[0];
            if (som_is_imm_double(v) && next - BC_PUSH_LOCAL_ADD < 3u) {
                dacc = som_imm_double(v);
                continue;
            }
            *sp++ = v;
            DISPATCH();
        }
        if (op_ == BC_PUSH_CONST && ip[3] >= BC_LT_JF && ip[3] <= BC_EQ_JF) {
            Value c = lits[u16_at(ip + 1)];
            if (!som_is_imm_double(c)) break;
            FEEDBACK_AT(u16_at(ip + 4), TF_BIT(TF_DOUBLE, TF_DOUBLE));
            CMP_JF_AT3(dacc, som_imm_double(c));
        }
        unsigned kind_ = dchain_kind[op_];
        if (kind_ == DK_STACK) { /* the receiver on the stack */
            Value a = sp[-1];
            if (!som_is_imm_double(a)) break;
            FEEDBACK_AT(u16_at(ip + 1), TF_BIT(TF_DOUBLE, TF_DOUBLE));
            double x = som_imm_double(a);
            dacc = dchain_op(op_, x, dacc);
            sp--;
            ip += 3; /* a fused STORE_LOCAL is the next instruction */
            continue;
        }
        if (kind_ == DK_LOCAL2 && dchain_kind[ip[7]] == DK_STACK) {
            /* `acc + (a * b)`: a second operation on two locals, then the one combining them */
            Value a = bp[ip[1]], b = bp[ip[3]];
            if (!som_is_imm_double(a) || !som_is_imm_double(b)) break;
            FEEDBACK_AT(u16_at(ip + 5), TF_BIT(TF_DOUBLE, TF_DOUBLE));
            double y = dchain_op(op_, som_imm_double(a), som_imm_double(b));
            FEEDBACK_AT(u16_at(ip + 8), TF_BIT(TF_DOUBLE, TF_DOUBLE));
            dacc = dchain_op(ip[7], dacc, y);
            ip += 10;
            continue;
        }
        break;
    }
    SAVE(); /* boxing may collect: the stack ends below the result */
    ret = fast_new_double(vm, dacc);
    *sp++ = ret;
    DISPATCH();

L_NE : {
    k = W();
    Value a = sp[-2], b = sp[-1];
    if (LIKELY(a & b & 1)) {
        FEEDBACK(TF_BIT(TF_INT, TF_INT));
        sp[-2] = BOOL(a != b);
        sp--;
        DISPATCH();
    }
    ARITH_SLOW(a, b);
}
/* Small-integer fast paths of Integer primitives; everything else (zero
 * divisors, doubles, big integers, other receivers) is the real send. */
#define INT_BINOP(expr_)                                                                           \
    do {                                                                                           \
        k = W();                                                                                   \
        Value a = sp[-2], b = sp[-1];                                                              \
        if (LIKELY(a & b & 1)) {                                                                   \
            FEEDBACK(TF_BIT(TF_INT, TF_INT));                                                      \
            int64_t x = som_int(a), y = som_int(b), r;                                             \
            if (expr_) {                                                                           \
                sp[-2] = som_mkint(r);                                                             \
                sp--;                                                                              \
                DISPATCH();                                                                        \
            }                                                                                      \
        }                                                                                          \
        ARITH_SLOW(a, b);                                                                          \
    } while (0)
L_FDIV : { /* // of small integers and doubles: an IEEE division (x // 0 is inf or nan) */
    k = W();
    Value a = sp[-2], b = sp[-1];
    if (LIKELY((som_is_int(a) || num_is_double(a)) && (som_is_int(b) || num_is_double(b)))) {
        FEEDBACK(TF_BIT(som_is_int(a) ? TF_INT : TF_DOUBLE, som_is_int(b) ? TF_INT : TF_DOUBLE));
        double r = fast_double(a) / fast_double(b);
        SAVE();
        sp[-2] = fast_new_double(vm, r);
        sp--;
        DISPATCH();
    }
    ARITH_SLOW(a, b);
}
L_MOD: /* floored: the result has the divisor's sign */
    INT_BINOP(y != 0 && ((r = x % y), (r != 0 && ((r ^ y) < 0)) ? (r += y) : r, 1));
L_DIV: /* truncated; small / small fits unless it is MIN / -1, which cannot occur in 63 bits */
    INT_BINOP(y != 0 && ((r = x / y), som_fits_smallint(r)));
L_BAND:
    INT_BINOP(((r = x & y), 1));
L_BXOR:
    INT_BINOP(((r = x ^ y), 1));
L_INC_LOCAL_JLE : {
    unsigned ci = ip[0], li = ip[1];
    ip += 2;
    k = W();
    Value i = bp[ci], lim = bp[li];
    if (LIKELY(i & lim & 1)) {
        int64_t ni = som_int(i) + 1;
        if (LIKELY(som_fits_smallint(ni))) {
            bp[ci] = som_mkint(ni);
            if (ni <= som_int(lim)) {
                ip -= k;
                if (UNLIKELY(vm->poll > 0) && vm->safepoint_hook) {
                    fp->bci = (uint32_t)(ip - meth->qcode);
                    SAVE();
                    vm->safepoint_hook(vm, SOM_SP_LOOP);
                }
                if (UNLIKELY(vm->jit_hook != NULL)) goto jit_backedge;
            } else {
                ip += SOM_TODO_TAIL;
            }
            DISPATCH();
        }
        /* overflow: the tail's ADD sets TF_OVERFLOWED too; say it here for the site anyway */
        if (INTERP_FEEDBACK) sites[u16_at(ip + 5)].argkinds |= TF_OVERFLOWED;
    }
    DISPATCH(); /* generic tail */
}

field_error:
    som_prim_error(vm, "field access on an instance of %s, which has no fields of its own",
                   som_class_of(vm, self)->name->bytes);
    fp->bci = (uint32_t)(ip - 1 - meth->qcode);
    goto error;
/* `a && b` / `a and: b` with b already evaluated: what Boolean's methods
 * answer (b value for a block b), without the sends; anything else sends. */
L_AND : {
    k = W();
    Value a = sp[-2], b = sp[-1];
    if (a == falseV || (a == trueV && (b == trueV || b == falseV))) {
        sp[-2] = a == falseV ? falseV : b;
        sp--;
        DISPATCH();
    }
    goto send_site;
}
L_OR : {
    k = W();
    Value a = sp[-2], b = sp[-1];
    if (a == trueV || (a == falseV && (b == trueV || b == falseV))) {
        sp[-2] = a == trueV ? trueV : b;
        sp--;
        DISPATCH();
    }
    goto send_site;
}

error: /* fp->bci names the failing send, or the failing instruction (set below) */
    fflush(vm->out);
    interp_backtrace(vm, vm->err);
    fprintf(vm->err, "%s\n", vm->errmsg);
    fflush(vm->err);
    vm->exit_status = 1;
    vm->exiting = true;
exit_vm:
    PUBLISH(base_top + (LEVEL_MODE == IM_DEOPT));
    vm->sp = base_sp;
    return INTERP_EXIT;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#undef LEVEL_MODE
#undef FB
#undef IC_HIT
