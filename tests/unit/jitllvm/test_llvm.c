/* SPDX-License-Identifier: MIT */
/*
 * test_llvm.c - the LLVM backend (llvm.c) on hand-built IR, with recording runtime doubles:
 * integer loops with phis and overflow deopts, double boxing, class tests, memory ops,
 * sends, spill slots, deopt stress, code ranges, concurrent compilation.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "feedback.h"
#include "jitt.h"

static SomVM *vm;
static JitEngine *engine;

static int setup(void **state) {
    (void)state;
    char e[512];
    SomOptions o = {0};
    vm = som_vm_new(&o, NULL, e, sizeof e);
    if (!vm) fail_msg("som_vm_new: %s", e);
    engine = jit_engine_new(e, sizeof e);
    if (!engine) fail_msg("jit_engine_new: %s", e);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    jit_engine_free(engine);
    som_vm_free(vm);
    t_objects_free();
    return 0;
}

static SomJitCode *compile(JitFunc *f, const JitCodegenOpts *o) {
    char err[512] = "";
    JitCodegenOpts d = {.opt_level = 2};
    SomJitCode *c = jit_codegen(engine, f, o ? o : &d, err, sizeof err);
    if (!c) fail_msg("jit_codegen: %s", err);
    return c;
}

/* Runs c with receiver and args at bp[0..n] (as an invoker would set up). */
static Value run(SomJitCode *c, SomFrame *fr, const Value *args, int n) {
    memset(fr, 0, sizeof *fr);
    fr->method = c->method;
    fr->bp = vm->stack + 8;
    for (int i = 0; i < n; i++)
        fr->bp[i] = args[i];
    for (int i = 0; i < c->method->nlocals; i++)
        fr->bp[n + i] = vm->nil;
    fr->self = args[0];
    fr->jit = c;
    fr->jit_pos = JIT_POS_NONE;
    vm->sp = fr->bp + 1 + c->method->nargs + c->method->nlocals;
    rt.spill_base = 1u + c->method->nargs + c->method->nlocals;
    return c->entry(vm, fr);
}

/* ---- integer loop: sum = s0 + 1 + 2 + ... + n ---- */

typedef struct LoopRefs {
    JitRef a1, a2, s, i, add_s;
    int32_t st_add;
} LoopRefs;

/* m(n, s0): both SmallIntegers; answers s0 + 1 + ... + n. */
static JitFunc *loop_func(LoopRefs *lr) {
    SomMethod *m = t_method(2, 0);
    JitFunc *f = t_func(vm, m);
    int32_t b0 = t_block(f), b1 = t_block(f), b2 = t_block(f), b3 = t_block(f);
    JitRef self = t_arg(f, b0, 0), a1 = t_arg(f, b0, 1), a2 = t_arg(f, b0, 2);
    JitRef e_slots[] = {self, a1, a2};
    t_state(f, 0, self, 3, e_slots, 0, NULL); /* state 0: entry */
    JitRef g1 = t_op1(f, b0, JI_IS_INT, JT_BOOL, a1);
    JitRef gd = t_op1(f, b0, JI_GUARD, JT_VOID, g1);
    f->insts[gd].deopt = 0;
    f->insts[gd].reason = JDR_TYPE;
    JitRef n = t_op1(f, b0, JI_UNBOX_INT, JT_INT, a1);
    JitRef s0 = t_op1(f, b0, JI_UNBOX_INT, JT_INT, a2);
    JitRef one = t_cint(f, b0, 1);
    t_jump(f, b0, b1);
    /* b1: preds b0, b2 */
    JitRef s = t_phi(f, b1, JT_INT, s0, -1);
    JitRef i = t_phi(f, b1, JT_INT, one, -1);
    JitRef c = t_op2(f, b1, JI_ICMP, JT_BOOL, i, n);
    f->insts[c].cmp = JC_LE;
    t_branch(f, b1, c, b2, b3);
    JitRef st_slots[] = {self, a1, a2};
    JitRef st_stack[] = {s, i};
    int32_t st = t_state(f, 5, self, 3, st_slots, 2, st_stack);
    JitRef s2 = t_op2(f, b2, JI_IADD, JT_INT, s, i);
    f->insts[s2].deopt = st;
    JitRef i2 = t_op2(f, b2, JI_IADD, JT_INT, i, one);
    f->insts[i2].deopt = st;
    JitRef sp = t_ins(f, b2, JI_SAFEPOINT, JT_VOID);
    f->insts[sp].ival = SOM_SP_LOOP;
    t_jump(f, b2, b1);
    f->insts[s].phi[1] = s2;
    f->insts[i].phi[1] = i2;
    JitRef r = t_op1(f, b3, JI_BOX_INT, JT_VALUE, s);
    t_ret(f, b3, r);
    if (lr) *lr = (LoopRefs){a1, a2, s, i, s2, st};
    return f;
}

static void test_int_loop(void **state) {
    (void)state;
    LoopRefs lr;
    JitFunc *f = loop_func(&lr);
    SomJitCode *c = compile(f, NULL);
    rt_reset();
    SomFrame fr;
    Value args[] = {vm->nil, som_mkint(100), som_mkint(0)};
    assert_int_equal(run(c, &fr, args, 3), som_mkint(5050));
    assert_int_equal(rt.ndeopts, 0);
    args[1] = som_mkint(0);
    assert_int_equal(run(c, &fr, args, 3), som_mkint(0));
    args[1] = som_mkint(-5);
    args[2] = som_mkint(-7);
    assert_int_equal(run(c, &fr, args, 3), som_mkint(-7));
    /* a safepoint request is served once, the loop goes on */
    vm->poll = 1;
    args[1] = som_mkint(10);
    args[2] = som_mkint(0);
    assert_int_equal(run(c, &fr, args, 3), som_mkint(55));
    assert_int_equal(rt.safepoints, 1);
    /* so is the controller's request (code to install) */
    vm->jit_tick = 1;
    assert_int_equal(run(c, &fr, args, 3), som_mkint(55));
    assert_int_equal(rt.safepoints, 2);
    assert_int_equal(vm->jit_tick, 0);
    /* not an integer: the entry guard deopts with state 0 */
    rt.deopt_answer = som_mkint(4242);
    args[1] = vm->nil;
    assert_int_equal(run(c, &fr, args, 3), som_mkint(4242));
    assert_int_equal(rt.ndeopts, 1);
    assert_int_equal(rt.deopts[0].d->reason, JDR_TYPE);
    assert_int_equal(rt.deopts[0].d->scopes[0].bci, 0);
    t_free(f);
}

static void test_int_overflow_deopt(void **state) {
    (void)state;
    LoopRefs lr;
    JitFunc *f = loop_func(&lr);
    SomJitCode *c = compile(f, NULL);
    rt_reset();
    rt.deopt_answer = som_mkint(777);
    SomFrame fr;
    int64_t s0 = SOM_SMALLINT_MAX - 4; /* + 1 + 2 fits, + 3 overflows */
    Value args[] = {vm->nil, som_mkint(10), som_mkint(s0)};
    assert_int_equal(run(c, &fr, args, 3), som_mkint(777));
    assert_int_equal(rt.ndeopts, 1);
    const JitDeopt *d = rt.deopts[0].d;
    assert_int_equal(d->reason, JDR_OVERFLOW);
    assert_int_equal(d->nscopes, 1);
    const JitDeoptScope *sc = &d->scopes[0];
    assert_int_equal(sc->bci, 5);
    assert_int_equal(sc->nslots, 3);
    assert_int_equal(sc->nstack, 2);
    /* slots: receiver and the two arguments as Values */
    const JitDeoptVal *v1 = &d->vals[sc->slots[1]];
    assert_int_equal(v1->kind, JVK_VALUE);
    assert_int_equal(rt.deopts[0].raw[v1->raw], som_mkint(10));
    /* stack: s and i unboxed: s = s0 + 1 + 2, i = 3 */
    const JitDeoptVal *vs = &d->vals[sc->stack[0]], *vi = &d->vals[sc->stack[1]];
    assert_int_equal(vs->kind, JVK_INT);
    assert_int_equal(vi->kind, JVK_INT);
    assert_int_equal((int64_t)rt.deopts[0].raw[vs->raw], s0 + 3);
    assert_int_equal((int64_t)rt.deopts[0].raw[vi->raw], 3);
    t_free(f);
}

/* ---- doubles ---- */

/* m(a, b) = box(unbox(a) op unbox(b)) */
static SomJitCode *dbl_func(JitOp op) {
    JitFunc *f = t_func(vm, t_method(2, 0));
    int32_t b0 = t_block(f);
    JitRef a = t_arg(f, b0, 1), b = t_arg(f, b0, 2);
    JitRef ua = t_op1(f, b0, JI_UNBOX_DBL, JT_DBL, a), ub = t_op1(f, b0, JI_UNBOX_DBL, JT_DBL, b);
    JitRef x = t_op2(f, b0, op, JT_DBL, ua, ub);
    JitRef bx = t_op1(f, b0, JI_BOX_DBL, JT_VALUE, x);
    t_ret(f, b0, bx);
    t_state(f, 0, -1, 0, NULL, 0, NULL);
    SomJitCode *c = compile(f, NULL);
    t_free(f);
    return c;
}

static Value mkdbl(double d) {
    Value v;
    if (som_try_imm_double(d, &v)) return v;
    SomDouble *o = t_object(vm->doubleClass, OBJ_DOUBLE, sizeof *o);
    o->d = d;
    return (Value)o;
}

static double dbl_of(Value v) {
    if (som_is_imm_double(v)) return som_imm_double(v);
    assert_true(som_is_obj(v));
    assert_int_equal(((ObjHeader *)v)->kind, OBJ_DOUBLE);
    return ((SomDouble *)v)->d;
}

/* Checks that c(a, b) answers exactly what the VM's encoding makes of expect. */
static void check_dbl(SomJitCode *c, double a, double b, double expect) {
    SomFrame fr;
    Value args[] = {vm->nil, mkdbl(a), mkdbl(b)};
    uint64_t boxes = rt.boxes;
    Value r = run(c, &fr, args, 3);
    Value imm;
    if (som_try_imm_double(expect, &imm)) {
        assert_int_equal(r, imm);
        assert_int_equal(rt.boxes, boxes);
    } else {
        assert_int_equal(rt.boxes, boxes + 1);
        assert_ptr_equal((void *)r, rt_last_box);
        double got = dbl_of(r);
        assert_memory_equal(&got, &expect, sizeof got);
    }
}

static void test_double_boxing(void **state) {
    (void)state;
    rt_reset();
    SomJitCode *add = dbl_func(JI_DADD), *mul = dbl_func(JI_DMUL), *dv = dbl_func(JI_DDIV);
    check_dbl(add, 1.5, 2.25, 3.75);
    check_dbl(add, 0.0, 0.0, 0.0);    /* +0.0 immediate */
    check_dbl(add, -0.0, -0.0, -0.0); /* -0.0 boxed, both in and out */
    check_dbl(mul, 1e200, 1e200, INFINITY);
    volatile double x70 = 1e70, x10 = 1e10, three = 3.0;
    check_dbl(mul, 1e70, 1e10, x70 * x10); /* outside the window: boxed */
    check_dbl(mul, 1e-70, 1e-10, (1 / x70) * (1 / x10));
    check_dbl(dv, 1.0, 3.0, 1.0 / three);
    check_dbl(add, -2.5, 1.0, -1.5);
    /* a sweep of magnitudes across the window edges */
    uint64_t x = 88172645463325252ull;
    for (int k = 0; k < 2000; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double a = ldexp((double)(x >> 11) / 9007199254740992.0, (int)(x % 600) - 300);
        if (x & 1) a = -a;
        check_dbl(mul, a, 1.0, a);
        check_dbl(add, a, 0.0, a + 0.0);
    }
    double nan = NAN;
    SomFrame fr;
    Value args[] = {vm->nil, mkdbl(nan), mkdbl(1.0)};
    assert_true(isnan(dbl_of(run(add, &fr, args, 3))));
}

/* ---- classes ---- */

static void test_has_class(void **state) {
    (void)state;
    SomClass *classes[] = {vm->integerClass, vm->doubleClass, vm->nilClass,
                           vm->arrayClass,   vm->objectClass, vm->trueClass};
    SomInstance *inst = som_instance_new(vm, vm->objectClass);
    SomArray *arr = som_array_new(vm, 3);
    Value vals[] = {som_mkint(3), som_mkint(-1), mkdbl(2.5), mkdbl(-0.0), vm->nil,
                    vm->true_,    (Value)inst,   (Value)arr, mkdbl(1e300)};
    for (size_t k = 0; k < sizeof classes / sizeof *classes; k++) {
        JitFunc *f = t_func(vm, t_method(1, 0));
        int32_t b0 = t_block(f);
        JitRef a = t_arg(f, b0, 1);
        JitRef h = t_op1(f, b0, JI_HAS_CLASS, JT_BOOL, a);
        f->insts[h].cls = classes[k];
        t_state(f, 0, -1, 0, NULL, 0, NULL);
        JitRef isd = t_op1(f, b0, JI_IS_DBL, JT_BOOL, a);
        JitRef one = t_op1(f, b0, JI_BOX_INT, JT_VALUE, t_cint(f, b0, 1));
        JitRef zero = t_op1(f, b0, JI_BOX_INT, JT_VALUE, t_cint(f, b0, 0));
        JitRef two = t_cint(f, b0, 2), izero = t_cint(f, b0, 0);
        JitRef sel = t_ins(f, b0, JI_SELECT, JT_VALUE);
        f->insts[sel].a[0] = h;
        f->insts[sel].a[1] = one;
        f->insts[sel].a[2] = zero;
        f->insts[sel].nargs = 3;
        /* result: (has_class ? 1 : 0) | (is_double ? 2 : 0) */
        JitRef sel2 = t_ins(f, b0, JI_SELECT, JT_INT);
        f->insts[sel2].a[0] = isd;
        f->insts[sel2].a[1] = two;
        f->insts[sel2].a[2] = izero;
        f->insts[sel2].nargs = 3;
        JitRef sum = t_op2(f, b0, JI_IOR, JT_INT, t_op1(f, b0, JI_UNBOX_INT, JT_INT, sel), sel2);
        t_ret(f, b0, t_op1(f, b0, JI_BOX_INT, JT_VALUE, sum));
        SomJitCode *c = compile(f, NULL);
        for (size_t j = 0; j < sizeof vals / sizeof *vals; j++) {
            SomFrame fr;
            Value args[] = {vm->nil, vals[j]};
            Value r2 = run(c, &fr, args, 2);
            int64_t expect = (som_class_of(vm, vals[j]) == classes[k]) |
                             (som_kind(vals[j]) == OBJ_DOUBLE ? 2 : 0);
            if (som_int(r2) != expect)
                fail_msg("class %zu value %zu: %ld", k, j, (long)som_int(r2));
        }
        t_free(f);
    }
}

/* ---- integer and double semantics against C references ---- */

#define DEOPTED                                                                                    \
    0x7ff0 /* Value answered by the deopt double in these tests (an int tag-free word) */

/* m(a, b) = box(op(unbox a, unbox b)), guarded ops deopting with state 0 */
static SomJitCode *int_op_func(JitOp op) {
    JitFunc *f = t_func(vm, t_method(2, 0));
    int32_t b0 = t_block(f);
    JitRef a = t_arg(f, b0, 1), b = t_arg(f, b0, 2);
    t_state(f, 0, -1, 0, NULL, 0, NULL);
    JitRef x = t_op2(f, b0, op, JT_INT, t_op1(f, b0, JI_UNBOX_INT, JT_INT, a),
                     t_op1(f, b0, JI_UNBOX_INT, JT_INT, b));
    f->insts[x].deopt = 0;
    t_ret(f, b0, t_op1(f, b0, JI_BOX_INT, JT_VALUE, x));
    SomJitCode *c = compile(f, NULL);
    t_free(f);
    return c;
}

static bool ref_int(JitOp op, int64_t a, int64_t b, int64_t *out) {
    __int128 r;
    switch (op) {
    case JI_IADD:
        r = (__int128)a + b;
        break;
    case JI_ISUB:
        r = (__int128)a - b;
        break;
    case JI_IMUL:
        r = (__int128)a * b;
        break;
    case JI_IDIV:
        if (!b) return false;
        r = (__int128)a / b;
        break;
    case JI_IREM:
        if (!b) return false;
        r = a % b;
        break;
    case JI_IMOD:
        if (!b) return false;
        r = a % b;
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        break;
    case JI_ISHL:
        if (b < 0 || b > 62) return false;
        r = (__int128)a * ((__int128)1 << b);
        break;
    case JI_ISHR:
        r = a >> (b > 63 ? 63 : b);
        break;
    case JI_IAND:
        r = a & b;
        break;
    case JI_IOR:
        r = a | b;
        break;
    default:
        r = a ^ b;
        break;
    }
    if (r < SOM_SMALLINT_MIN || r > SOM_SMALLINT_MAX) return false;
    *out = (int64_t)r;
    return true;
}

static void test_int_semantics(void **state) {
    (void)state;
    static const JitOp ops[] = {JI_IADD, JI_ISUB, JI_IMUL, JI_IDIV, JI_IMOD, JI_IREM,
                                JI_IAND, JI_IOR,  JI_IXOR, JI_ISHL, JI_ISHR};
    static const int64_t vals[] = {0,
                                   1,
                                   -1,
                                   2,
                                   -2,
                                   7,
                                   -7,
                                   3,
                                   1000003,
                                   SOM_SMALLINT_MAX,
                                   62,
                                   63,
                                   64,
                                   SOM_SMALLINT_MIN,
                                   SOM_SMALLINT_MAX / 3,
                                   (int64_t)1 << 31,
                                   -((int64_t)1 << 40)};
    size_t nv = sizeof vals / sizeof *vals;
    rt_reset();
    rt.deopt_answer = DEOPTED;
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
        SomJitCode *c = int_op_func(ops[o]);
        for (size_t i = 0; i < nv; i++) {
            for (size_t j = 0; j < nv; j++) {
                if (ops[o] == JI_ISHR && vals[j] < 0) continue; /* a1 >= 0 by contract */
                SomFrame fr;
                Value args[] = {vm->nil, som_mkint(vals[i]), som_mkint(vals[j])};
                Value r = run(c, &fr, args, 3);
                int64_t expect;
                bool ok = ref_int(ops[o], vals[i], vals[j], &expect);
                if (ok ? r != som_mkint(expect) : r != DEOPTED)
                    fail_msg("op %d: %lld, %lld -> %lld (expected %s %lld)", (int)ops[o],
                             (long long)vals[i], (long long)vals[j],
                             r == DEOPTED ? -999LL : (long long)som_int(r), ok ? "" : "deopt",
                             ok ? (long long)expect : 0LL);
            }
        }
    }
}

static void test_double_semantics(void **state) {
    (void)state;
    /* D2I */
    JitFunc *f = t_func(vm, t_method(1, 0));
    int32_t b0 = t_block(f);
    t_state(f, 0, -1, 0, NULL, 0, NULL);
    JitRef x = t_op1(f, b0, JI_D2I, JT_INT, t_op1(f, b0, JI_UNBOX_DBL, JT_DBL, t_arg(f, b0, 1)));
    f->insts[x].deopt = 0;
    t_ret(f, b0, t_op1(f, b0, JI_BOX_INT, JT_VALUE, x));
    SomJitCode *d2i = compile(f, NULL);
    t_free(f);
    rt_reset();
    rt.deopt_answer = DEOPTED;
    static const double dv[] = {1.5,           -1.5, 0.0,      -0.0,      0x1p62, -0x1p62,
                                0x1p62 - 1024, NAN,  INFINITY, -INFINITY, 1e300,  -1e-300};
    for (size_t k = 0; k < sizeof dv / sizeof *dv; k++) {
        SomFrame fr;
        Value args[] = {vm->nil, mkdbl(dv[k])};
        Value r = run(d2i, &fr, args, 2);
        bool ok = dv[k] >= -0x1p62 && dv[k] < 0x1p62;
        if (ok)
            assert_int_equal(r, som_mkint((int64_t)dv[k]));
        else
            assert_int_equal(r, DEOPTED);
    }
    /* DCMP, every predicate, with NaN; DSQRT */
    static const double cv[] = {1.0, 2.0, -0.0, 0.0, NAN, INFINITY};
    for (int cmp = JC_LT; cmp <= JC_NE; cmp++) {
        f = t_func(vm, t_method(2, 0));
        b0 = t_block(f);
        t_state(f, 0, -1, 0, NULL, 0, NULL);
        JitRef a = t_op1(f, b0, JI_UNBOX_DBL, JT_DBL, t_arg(f, b0, 1));
        JitRef b = t_op1(f, b0, JI_UNBOX_DBL, JT_DBL, t_arg(f, b0, 2));
        JitRef c = t_op2(f, b0, JI_DCMP, JT_BOOL, a, b);
        f->insts[c].cmp = (uint8_t)cmp;
        t_ret(f, b0, t_op1(f, b0, JI_BOOL_TO_VALUE, JT_VALUE, c));
        SomJitCode *code = compile(f, NULL);
        t_free(f);
        for (size_t i = 0; i < 6; i++)
            for (size_t j = 0; j < 6; j++) {
                double p = cv[i], q = cv[j];
                bool e = cmp == JC_LT   ? p < q
                         : cmp == JC_GT ? p > q
                         : cmp == JC_LE ? p <= q
                         : cmp == JC_GE ? p >= q
                         : cmp == JC_EQ ? p == q
                                        : p != q;
                SomFrame fr;
                Value args[] = {vm->nil, mkdbl(p), mkdbl(q)};
                assert_int_equal(run(code, &fr, args, 3), e ? vm->true_ : vm->false_);
            }
    }
    SomJitCode *sq = NULL;
    f = t_func(vm, t_method(1, 0));
    b0 = t_block(f);
    t_state(f, 0, -1, 0, NULL, 0, NULL);
    JitRef s = t_op1(f, b0, JI_DSQRT, JT_DBL, t_op1(f, b0, JI_UNBOX_DBL, JT_DBL, t_arg(f, b0, 1)));
    JitRef i2d = t_op1(f, b0, JI_INT_TO_DBL, JT_DBL, t_cint(f, b0, 3));
    t_ret(f, b0, t_op1(f, b0, JI_BOX_DBL, JT_VALUE, t_op2(f, b0, JI_DADD, JT_DBL, s, i2d)));
    sq = compile(f, NULL);
    t_free(f);
    SomFrame fr;
    Value args[] = {vm->nil, mkdbl(16.0)};
    assert_true(dbl_of(run(sq, &fr, args, 2)) == 7.0);
}

/* ---- closures: contexts, blocks, non-local return, virtual blocks in a deopt state ---- */

static void test_closures(void **state) {
    (void)state;
    SomMethod *blockm = t_method(0, 0);
    SomMethod *m = t_method(1, 0);
    m->nctx = 2;
    JitFunc *f = t_func(vm, m);
    int32_t b0 = t_block(f), b1 = t_block(f), b2 = t_block(f);
    JitRef self = t_arg(f, b0, 0), a = t_arg(f, b0, 1);
    JitRef outer = t_ins(f, b0, JI_FRAME_CTX, JT_PTR);
    JitRef ctx = t_op1(f, b0, JI_NEW_CONTEXT, JT_PTR, outer);
    f->insts[ctx].method = m;
    f->insts[ctx].ival = 1;
    JitRef st1 = t_op2(f, b0, JI_CTX_STORE, JT_VOID, ctx, a);
    f->insts[st1].ival = 1;
    JitRef blk = t_op2(f, b0, JI_NEW_BLOCK, JT_VALUE, ctx, self);
    f->insts[blk].method = blockm;
    JitRef vblk = t_op2(f, b0, JI_NEW_BLOCK, JT_VALUE, ctx, self);
    f->insts[vblk].method = blockm;
    f->insts[vblk].virt = 1;
    /* the real block's ctx field, then var 1 through it; the outer of ctx */
    JitRef bctx = t_op1(f, b0, JI_BLOCK_FIELD, JT_VALUE, blk);
    f->insts[bctx].ival = 1;
    JitRef v1 = t_op1(f, b0, JI_CTX_LOAD, JT_VALUE, bctx);
    f->insts[v1].ival = 1;
    JitRef out = t_op1(f, b0, JI_CTX_OUTER, JT_PTR, ctx);
    JitRef same = t_op2(f, b0, JI_VEQ, JT_BOOL, out, outer);
    JitRef slots[] = {self, a};
    JitRef stack[] = {vblk, blk, v1};
    int32_t st = t_state(f, 9, self, 2, slots, 3, stack);
    f->states[st].scopes[0].ctx = ctx;
    JitRef isint = t_op1(f, b0, JI_IS_INT, JT_BOOL, v1);
    JitRef both = t_op2(f, b0, JI_ICMP, JT_BOOL, t_op1(f, b0, JI_BOOL_TO_VALUE, JT_VALUE, same),
                        t_op1(f, b0, JI_BOOL_TO_VALUE, JT_VALUE, isint));
    f->insts[both].cmp = JC_EQ;
    JitRef g = t_op1(f, b0, JI_GUARD, JT_VOID, isint);
    f->insts[g].deopt = st;
    f->insts[g].reason = JDR_TYPE;
    t_branch(f, b0, both, b1, b2);
    t_ret(f, b1, blk);
    JitRef nlr = t_op2(f, b2, JI_NLR, JT_VALUE, ctx, v1);
    t_ret(f, b2, nlr);
    JitRef s0[] = {self, a};
    t_state(f, 0, self, 2, s0, 0, NULL);
    /* state 0 must be the entry state: move the guard's state to the end */
    JitState tmp = f->states[0];
    f->states[0] = f->states[1];
    f->states[1] = tmp;
    f->insts[g].deopt = 1;
    SomJitCode *c = compile(f, NULL);
    t_free(f);

    SomContext *home = t_object(NULL, OBJ_CONTEXT, sizeof *home);
    rt_reset();
    SomFrame fr;
    Value args[] = {vm->nil, som_mkint(12)};
    memset(&fr, 0, sizeof fr);
    /* run() clears ctx: set it through a wrapper frame */
    fr.ctx = home;
    Value r;
    {
        fr.method = c->method;
        fr.bp = vm->stack + 8;
        fr.bp[0] = args[0];
        fr.bp[1] = args[1];
        fr.self = args[0];
        fr.jit_pos = JIT_POS_NONE;
        vm->sp = fr.bp + 2;
        rt.spill_base = 2;
        r = c->entry(vm, &fr);
    }
    /* the context's outer is fp->ctx and var 1 is an int: the block is answered */
    assert_int_equal(rt.new_contexts, 1);
    assert_int_equal(rt.new_blocks, 1);
    assert_true(som_is_obj(r));
    SomBlock *b = (SomBlock *)r;
    assert_ptr_equal(b->method, blockm);
    assert_ptr_equal(b->ctx->outer, home);
    assert_ptr_equal(b->ctx->frame, &fr);
    assert_int_equal(b->ctx->vars[1], som_mkint(12));
    assert_int_equal(b->ctx->vars[0], vm->nil);
    /* with a non-integer argument the guard deopts: the virtual block is described */
    rt.deopt_answer = vm->false_;
    fr.bp[1] = vm->true_;
    vm->sp = fr.bp + 2;
    r = c->entry(vm, &fr);
    assert_int_equal(r, vm->false_);
    assert_int_equal(rt.ndeopts, 1);
    const JitDeopt *d = rt.deopts[0].d;
    const JitDeoptScope *sc = &d->scopes[0];
    assert_int_equal(sc->nstack, 3);
    const JitDeoptVal *vb = &d->vals[sc->stack[0]];
    assert_int_equal(vb->kind, JVK_VBLOCK);
    assert_ptr_equal(vb->vmethod, blockm);
    assert_true(vb->vctx >= 0);
    assert_int_equal(d->vals[vb->vctx].kind, JVK_VALUE);
    assert_int_equal(d->vals[vb->vself].kind, JVK_VALUE);
    /* the block's ctx and the scope's ctx are the same value (the new context) */
    assert_int_equal(sc->ctx, vb->vctx);
    assert_int_equal(rt.deopts[0].raw[d->vals[sc->ctx].raw],
                     (Value)rt.deopts[0].raw[d->vals[vb->vctx].raw]);
    SomContext *made = (SomContext *)rt.deopts[0].raw[d->vals[sc->ctx].raw];
    assert_ptr_equal(made->outer, home);
    assert_int_equal(d->vals[sc->stack[1]].kind, JVK_VALUE);

    /* NLR: the code answers what jit_rt_nlr answers, 0 included */
    f = t_func(vm, t_method(1, 0));
    b0 = t_block(f);
    t_state(f, 0, -1, 0, NULL, 0, NULL);
    JitRef n = t_op2(f, b0, JI_NLR, JT_VALUE, t_ins(f, b0, JI_FRAME_CTX, JT_PTR), t_arg(f, b0, 1));
    static CallSite cs1 = {.nargs = 1};
    n = t_op2(f, b0, JI_SEND, JT_VALUE, n, n); /* never reached */
    f->insts[n].cs = &cs1;
    t_ret(f, b0, n);
    c = compile(f, NULL);
    t_free(f);
    rt_reset();
    rt.nlr_answer = som_mkint(5);
    Value nargs[] = {vm->nil, som_mkint(1)};
    assert_int_equal(run(c, &fr, nargs, 2), som_mkint(5));
    rt.nlr_answer = 0;
    assert_int_equal(run(c, &fr, nargs, 2), 0);
    assert_int_equal(rt.nlrs, 2);
    assert_int_equal(rt.sends, 0);
}

/* ---- fields and arrays ---- */

/* m(obj, arr, i): guards arr is an Array and 1 <= i <= size; v := arr at: i;
 * obj.field0 := v; arr at: i put: obj.field1; answers v + field count */
static void test_fields_arrays(void **state) {
    (void)state;
    JitFunc *f = t_func(vm, t_method(3, 0));
    int32_t b0 = t_block(f);
    JitRef self = t_arg(f, b0, 0), obj = t_arg(f, b0, 1), arr = t_arg(f, b0, 2),
           iv = t_arg(f, b0, 3);
    JitRef slots[] = {self, obj, arr, iv};
    int32_t st = t_state(f, 3, self, 4, slots, 0, NULL);
    JitRef k = t_op1(f, b0, JI_IS_KIND, JT_BOOL, arr);
    f->insts[k].ival = OBJ_ARRAY;
    JitRef g = t_op1(f, b0, JI_GUARD, JT_VOID, k);
    f->insts[g].deopt = st;
    f->insts[g].reason = JDR_TYPE;
    JitRef i0 =
        t_op2(f, b0, JI_ISUB, JT_INT, t_op1(f, b0, JI_UNBOX_INT, JT_INT, iv), t_cint(f, b0, 1));
    f->insts[i0].deopt = st;
    JitRef len = t_op1(f, b0, JI_ARRAY_LEN, JT_INT, arr);
    JitRef lt = t_op2(f, b0, JI_ICMP, JT_BOOL, i0, len);
    f->insts[lt].cmp = JC_LT;
    JitRef ge = t_op2(f, b0, JI_ICMP, JT_BOOL, i0, t_cint(f, b0, 0));
    f->insts[ge].cmp = JC_GE;
    g = t_op1(f, b0, JI_GUARD, JT_VOID, lt);
    f->insts[g].deopt = st;
    f->insts[g].reason = JDR_BOUNDS;
    g = t_op1(f, b0, JI_GUARD, JT_VOID, ge);
    f->insts[g].deopt = st;
    f->insts[g].reason = JDR_BOUNDS;
    JitRef v = t_op2(f, b0, JI_ARRAY_LOAD, JT_VALUE, arr, i0);
    JitRef sf = t_op2(f, b0, JI_STORE_FIELD, JT_VOID, obj, v);
    f->insts[sf].ival = 0;
    JitRef f1 = t_op1(f, b0, JI_LOAD_FIELD, JT_VALUE, obj);
    f->insts[f1].ival = 1;
    JitRef as = t_ins(f, b0, JI_ARRAY_STORE, JT_VOID);
    f->insts[as].a[0] = arr;
    f->insts[as].a[1] = i0;
    f->insts[as].a[2] = f1;
    f->insts[as].nargs = 3;
    JitRef fc = t_op1(f, b0, JI_FIELD_COUNT, JT_INT, obj);
    JitRef r = t_op2(f, b0, JI_IADD, JT_INT, t_op1(f, b0, JI_UNBOX_INT, JT_INT, v), fc);
    f->insts[r].deopt = st;
    t_ret(f, b0, t_op1(f, b0, JI_BOX_INT, JT_VALUE, r));
    SomJitCode *c = compile(f, NULL);
    t_free(f);

    SomInstance *o = t_object(vm->objectClass, OBJ_INSTANCE, sizeof *o + 2 * sizeof(Value));
    o->nfields = 2;
    o->fields[0] = vm->nil;
    o->fields[1] = som_mkint(99);
    SomArray *a = som_array_new(vm, 4);
    for (int i = 0; i < 4; i++)
        a->items[i] = som_mkint(10 * (i + 1));
    rt_reset();
    SomFrame fr;
    Value args[] = {vm->nil, (Value)o, (Value)a, som_mkint(3)};
    assert_int_equal(run(c, &fr, args, 4), som_mkint(30 + 2));
    assert_int_equal(o->fields[0], som_mkint(30));
    assert_int_equal(a->items[2], som_mkint(99));
    assert_int_equal(rt.ndeopts, 0);
    /* out of bounds on both sides */
    rt.deopt_answer = vm->true_;
    args[3] = som_mkint(5);
    assert_int_equal(run(c, &fr, args, 4), vm->true_);
    assert_int_equal(rt.deopts[0].d->reason, JDR_BOUNDS);
    args[3] = som_mkint(0);
    assert_int_equal(run(c, &fr, args, 4), vm->true_);
    assert_int_equal(rt.deopts[1].d->reason, JDR_BOUNDS);
    /* not an array: a string */
    args[2] = (Value)som_string_cstr(vm, "abc");
    args[3] = som_mkint(1);
    assert_int_equal(run(c, &fr, args, 4), vm->true_);
    assert_int_equal(rt.ndeopts, 3);
    assert_int_equal(rt.deopts[2].d->reason, JDR_TYPE);
    /* the raw values of the state are the frame's Values */
    const JitDeopt *d = rt.deopts[2].d;
    assert_int_equal(rt.deopts[2].raw[d->vals[d->scopes[0].slots[2]].raw], args[2]);
}

/* ---- sends and spill slots ---- */

/* m(r, x): v := obj field 0 (a heap value only the code holds); s := r foo: x;
 * obj field 1 := v; answers s.  pos: send inside an inlined method (pos 1, parent 0). */
static JitFunc *send_func(CallSite *cs, SomMethod *sender, JitRef *vref) {
    JitFunc *f = t_func(vm, t_method(2, 1));
    int32_t b0 = t_block(f);
    JitRef self = t_arg(f, b0, 0), r = t_arg(f, b0, 1), x = t_arg(f, b0, 2);
    JitRef obj = t_ins(f, b0, JI_CONST_PTR, JT_PTR); /* filled by the caller */
    JitRef v = t_op1(f, b0, JI_LOAD_FIELD, JT_VALUE, obj);
    f->insts[v].ival = 0;
    uint32_t p0 = t_pos(f, f->method, 7, JIT_POS_NONE);
    uint32_t p1 = t_pos(f, sender, 3, p0);
    JitRef s = t_op2(f, b0, JI_SEND, JT_VALUE, r, x);
    f->insts[s].cs = cs;
    f->insts[s].method = sender;
    f->insts[s].pos = p1;
    JitRef sf = t_op2(f, b0, JI_STORE_FIELD, JT_VOID, obj, v);
    f->insts[sf].ival = 1;
    t_ret(f, b0, s);
    JitRef slots[] = {self, r, x, -1};
    t_state(f, 0, self, 4, slots, 0, NULL);
    *vref = obj;
    return f;
}

static void test_send_and_spill(void **state) {
    (void)state;
    CallSite cs = {0};
    cs.nargs = 1;
    cs.bci = 3;
    SomMethod *sender = t_method(1, 0);
    JitRef objref;
    JitFunc *f = send_func(&cs, sender, &objref);
    SomInstance *o = t_object(vm->objectClass, OBJ_INSTANCE, sizeof *o + 2 * sizeof(Value));
    o->nfields = 2;
    SomInstance *heap = t_object(vm->objectClass, OBJ_INSTANCE, sizeof *heap);
    o->fields[0] = (Value)heap;
    o->fields[1] = vm->nil;
    f->insts[objref].pval = o;
    SomJitCode *c = compile(f, NULL);
    t_free(f);
    rt_reset();
    rt.send_answer = som_mkint(31);
    SomFrame fr;
    Value args[] = {vm->nil, vm->true_, som_mkint(5)};
    assert_int_equal(run(c, &fr, args, 3), som_mkint(31));
    assert_int_equal(rt.sends, 1);
    assert_ptr_equal(rt.send_cs, &cs);
    assert_ptr_equal(rt.send_sender, sender);
    assert_int_equal(rt.send_args[0], vm->true_);
    assert_int_equal(rt.send_args[1], som_mkint(5));
    assert_int_equal(rt.send_bci, 7);
    assert_int_equal(rt.send_jit_pos, 1);
    assert_int_equal(o->fields[1], (Value)heap);
    /* the live heap value is in the spill area, between the locals and vm->sp */
    bool found = false;
    for (uint32_t i = 0; i < rt.nspilled; i++)
        found |= rt.spilled[i] == (Value)heap;
    assert_true(found);
    assert_ptr_equal(rt.send_sp, fr.bp + 1 + 2 + 1 + rt.nspilled);
    /* 0 from the send propagates, nothing after it runs */
    o->fields[1] = vm->nil;
    rt.send_answer = 0;
    assert_int_equal(run(c, &fr, args, 3), 0);
    assert_int_equal(o->fields[1], vm->nil);
    /* no room on the value stack: deopt at entry with state 0 */
    Value *end = vm->stack_end;
    vm->stack_end = vm->stack + 12;
    rt.deopt_answer = som_mkint(-3);
    assert_int_equal(run(c, &fr, args, 3), som_mkint(-3));
    vm->stack_end = end;
    assert_int_equal(rt.ndeopts, 1);
    assert_int_equal(rt.deopts[0].d->scopes[0].bci, 0);
    assert_int_equal(rt.sends, 2);
}

/* m(r): a := obj f0; r foo; obj f2 := a; b := obj f1; r foo; obj f3 := b; c := obj f0;
 * r foo; r foo; obj f2 := c + b (c and b both live across the last sends) */
static void test_spill_slot_reuse(void **state) {
    (void)state;
    static CallSite cs0 = {.nargs = 0};
    JitFunc *f = t_func(vm, t_method(1, 0));
    int32_t b0 = t_block(f);
    t_state(f, 0, -1, 0, NULL, 0, NULL);
    JitRef r = t_arg(f, b0, 1);
    JitRef obj = t_ins(f, b0, JI_CONST_PTR, JT_PTR);
    SomInstance *o = t_object(vm->objectClass, OBJ_INSTANCE, sizeof *o + 4 * sizeof(Value));
    o->nfields = 4;
    void *h0 = t_object(vm->objectClass, OBJ_INSTANCE, 32);
    void *h1 = t_object(vm->objectClass, OBJ_INSTANCE, 32);
    o->fields[0] = (Value)h0;
    o->fields[1] = (Value)h1;
    f->insts[obj].pval = o;
    JitRef ld[3], sn[4];
    int fld[] = {0, 1, 0};
    for (int k = 0; k < 3; k++) {
        ld[k] = t_op1(f, b0, JI_LOAD_FIELD, JT_VALUE, obj);
        f->insts[ld[k]].ival = fld[k];
        sn[k] = t_op1(f, b0, JI_SEND, JT_VALUE, r);
        f->insts[sn[k]].cs = &cs0;
        if (k < 2) {
            JitRef st = t_op2(f, b0, JI_STORE_FIELD, JT_VOID, obj, ld[k]);
            f->insts[st].ival = 2 + k;
        }
    }
    sn[3] = t_op1(f, b0, JI_SEND, JT_VALUE, r);
    f->insts[sn[3]].cs = &cs0;
    JitRef st = t_op2(f, b0, JI_STORE_FIELD, JT_VOID, obj, ld[2]);
    f->insts[st].ival = 2;
    st = t_op2(f, b0, JI_STORE_FIELD, JT_VOID, obj, ld[1]);
    f->insts[st].ival = 3;
    t_ret(f, b0, r);
    SomJitCode *c = compile(f, NULL);
    t_free(f);
    rt_reset();
    rt.send_answer = vm->nil;
    SomFrame fr;
    Value args[] = {vm->nil, vm->true_};
    assert_int_equal(run(c, &fr, args, 2), vm->true_);
    assert_int_equal(rt.sends, 4);
    /* two slots in all: a alone at send 1, b alone at send 2, b and c at sends 3 and 4 */
    for (int k = 0; k < 4; k++)
        assert_int_equal(rt.nspilled_at[k], 2);
    bool a1 = false, b2 = false, b3 = false, c3 = false, b4 = false, c4 = false;
    for (int i = 0; i < 2; i++) {
        a1 |= rt.spilled_at[0][i] == (Value)h0;
        b2 |= rt.spilled_at[1][i] == (Value)h1;
        b3 |= rt.spilled_at[2][i] == (Value)h1;
        c3 |= rt.spilled_at[2][i] == (Value)h0;
        b4 |= rt.spilled_at[3][i] == (Value)h1;
        c4 |= rt.spilled_at[3][i] == (Value)h0;
    }
    assert_true(a1 && b2 && b3 && c3 && b4 && c4);
    assert_int_equal(o->fields[2], (Value)h0);
    assert_int_equal(o->fields[3], (Value)h1);
}

/* m(str, cls): global #JitTestGlobal + str size + (cls cfield 1 := cls cfield 0) */
static void test_globals_strings_cfields(void **state) {
    (void)state;
    SomString *sym = som_symbol_cstr(vm, "JitTestGlobal");
    JitFunc *f = t_func(vm, t_method(2, 0));
    int32_t b0 = t_block(f);
    t_state(f, 0, -1, 0, NULL, 0, NULL);
    JitRef str = t_arg(f, b0, 1), cls = t_arg(f, b0, 2);
    JitRef g = t_ins(f, b0, JI_GLOBAL_LOAD, JT_VALUE);
    f->insts[g].sym = sym;
    JitRef len = t_op1(f, b0, JI_STRING_LEN, JT_INT, str);
    JitRef c0 = t_op1(f, b0, JI_CFIELD_LOAD, JT_VALUE, cls);
    f->insts[c0].ival = 0;
    JitRef cs = t_op2(f, b0, JI_CFIELD_STORE, JT_VOID, cls, c0);
    f->insts[cs].ival = 1;
    JitRef x = t_op2(f, b0, JI_IADD, JT_INT, t_op1(f, b0, JI_UNBOX_INT, JT_INT, g), len);
    t_ret(f, b0, t_op1(f, b0, JI_BOX_INT, JT_VALUE, x));
    SomJitCode *c = compile(f, NULL);
    t_free(f);
    som_global_put(vm, sym, som_mkint(1000));
    SomClass *k = t_object(vm->classClass, OBJ_CLASS, sizeof *k);
    k->cfields = som_array_new(vm, 2);
    k->cfields->items[0] = vm->true_;
    k->cfields->items[1] = vm->nil;
    SomFrame fr;
    Value args[] = {vm->nil, (Value)som_string_cstr(vm, "hello"), (Value)k};
    assert_int_equal(run(c, &fr, args, 3), som_mkint(1005));
    assert_int_equal(k->cfields->items[1], vm->true_);
    som_global_put(vm, sym, som_mkint(-1));
    args[1] = (Value)sym;
    assert_int_equal(run(c, &fr, args, 3), som_mkint(-1 + 13));
}

/* Bad IR is an error with a message, never a crash or wrong code. */
/* m(a, b): n values a + 1 .. a + n (unboxed, each kept by the state), then a guard on b being
 * an integer that deopts with all of them on the stack. */
static JitFunc *many_values_func(uint32_t n) {
    JitFunc *f = t_func(vm, t_method(2, 0));
    int32_t b0 = t_block(f);
    JitRef self = t_arg(f, b0, 0), a1 = t_arg(f, b0, 1), a2 = t_arg(f, b0, 2);
    JitRef slots[] = {self, a1, a2};
    t_state(f, 0, self, 3, slots, 0, NULL);
    JitRef a = t_op1(f, b0, JI_UNBOX_INT, JT_INT, a1);
    JitRef *vals = calloc(n, sizeof *vals);
    assert_non_null(vals);
    for (uint32_t k = 0; k < n; k++) {
        vals[k] = t_op2(f, b0, JI_IADD, JT_INT, a, t_cint(f, b0, k + 1));
        f->insts[vals[k]].deopt = -1; /* unchecked */
    }
    int32_t st = t_state(f, 3, self, 3, slots, n, vals);
    free(vals);
    JitRef g = t_op1(f, b0, JI_GUARD, JT_VOID, t_op1(f, b0, JI_IS_INT, JT_BOOL, a2));
    f->insts[g].deopt = st;
    f->insts[g].reason = JDR_TYPE;
    t_ret(f, b0, a2);
    return f;
}

/* A deopt exit hands every raw value of its state to the runtime, however many (they go as
 * the arguments of one call), and a state beyond the limit fails the compilation. */
static void test_deopt_many_values(void **state) {
    (void)state;
    const uint32_t n = 300;
    JitFunc *f = many_values_func(n);
    SomJitCode *c = compile(f, NULL);
    rt_reset();
    rt.deopt_answer = som_mkint(5);
    SomFrame fr;
    Value args[] = {vm->nil, som_mkint(1000), som_mkint(1)};
    assert_int_equal(run(c, &fr, args, 3), som_mkint(1)); /* b an integer: no deopt */
    assert_int_equal(rt.ndeopts, 0);
    args[2] = vm->nil;
    assert_int_equal(run(c, &fr, args, 3), som_mkint(5));
    assert_int_equal(rt.ndeopts, 1);
    const JitDeopt *d = rt.deopts[0].d;
    assert_int_equal(d->scopes[0].nstack, n);
    assert_int_equal(rt.deopts[0].nraw, n + 3); /* every value is raw here */
    assert_int_equal(d->nvals, n + 3);
    uint64_t want = 0;
    for (uint32_t k = 0; k < n; k++) {
        const JitDeoptVal *v = &d->vals[d->scopes[0].stack[k]];
        assert_int_equal(v->kind, JVK_INT);
        if (v->raw < 16) assert_int_equal((int64_t)rt.deopts[0].raw[v->raw], 1000 + k + 1);
        want += (uint64_t)(v->raw + 1) * (uint64_t)(1000 + k + 1);
    }
    for (uint32_t i = 0; i < 3; i++) { /* the slots: receiver and arguments as Values */
        const JitDeoptVal *v = &d->vals[d->scopes[0].slots[i]];
        assert_int_equal(v->kind, JVK_VALUE);
        want += (uint64_t)(v->raw + 1) * args[i];
    }
    assert_int_equal(rt.deopts[0].raw_digest, want);
    t_free(f);
    /* 513 values and the three slots: more than one exit may hand over */
    f = many_values_func(513);
    char err[256] = "";
    JitCodegenOpts o = {.opt_level = 0};
    assert_null(jit_codegen(engine, f, &o, err, sizeof err));
    assert_string_equal(err, "frame state of 516 values (at most 512)");
    t_free(f);
}

static void test_bad_ir(void **state) {
    (void)state;
    char err[256] = "";
    JitCodegenOpts o = {.opt_level = 2};
    /* a use before the definition */
    JitFunc *f = t_func(vm, t_method(1, 0));
    int32_t b0 = t_block(f);
    t_state(f, 0, -1, 0, NULL, 0, NULL);
    JitRef box = t_ins(f, b0, JI_BOX_INT, JT_VALUE);
    f->insts[box].nargs = 1;
    f->insts[box].a[0] = box + 2; /* the UNBOX_INT below (box + 1 is its ARG) */
    t_op1(f, b0, JI_UNBOX_INT, JT_INT, t_arg(f, b0, 1));
    t_ret(f, b0, box);
    assert_null(jit_codegen(engine, f, &o, err, sizeof err));
    assert_non_null(strstr(err, "before its definition"));
    t_free(f);
    /* a guard whose state does not exist */
    f = t_func(vm, t_method(1, 0));
    b0 = t_block(f);
    t_state(f, 0, -1, 0, NULL, 0, NULL);
    JitRef g = t_op1(f, b0, JI_GUARD, JT_VOID, t_op1(f, b0, JI_IS_INT, JT_BOOL, t_arg(f, b0, 1)));
    f->insts[g].deopt = 7;
    t_ret(f, b0, t_arg(f, b0, 1));
    err[0] = 0;
    assert_null(jit_codegen(engine, f, &o, err, sizeof err));
    assert_non_null(strstr(err, "out of range"));
    t_free(f);
    /* nothing to compile */
    assert_null(jit_codegen(engine, NULL, &o, err, sizeof err));
}

/* dump_llvm prints the optimized module on stderr */
static void test_dump(void **state) {
    (void)state;
    JitFunc *f = loop_func(NULL);
    char path[] = "/tmp/jitllvm_dump.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    JitCodegenOpts o = {.opt_level = 2, .dump_llvm = true};
    SomJitCode *c = compile(f, &o);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char buf[8192] = "";
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    unlink(path);
    assert_true(n > 0);
    assert_non_null(c);
    assert_non_null(strstr(buf, "; ---- Test>>fn"));
    assert_non_null(strstr(buf, "define i64 @som_"));
    assert_non_null(strstr(buf, "\"frame-pointer\"=\"all\""));
    t_free(f);
}

/* The real collector runs inside a send: the heap value live across it survives through its
 * spill slot; one that is not live (and held only by memory the collector does not see)
 * is collected, so the check can fail. */
static void collect(SomVM *v) {
    gc_collect(v);
    gc_collect(v);
    assert_int_equal(gc_verify(v), 0);
}

static void test_spill_survives_gc(void **state) {
    (void)state;
    static CallSite cs0 = {.nargs = 0};
    JitFunc *f = t_func(vm, t_method(1, 0));
    int32_t b0 = t_block(f);
    t_state(f, 0, -1, 0, NULL, 0, NULL);
    JitRef r = t_arg(f, b0, 1);
    JitRef obj = t_ins(f, b0, JI_CONST_PTR, JT_PTR);
    JitRef live = t_op1(f, b0, JI_LOAD_FIELD, JT_VALUE, obj);
    f->insts[live].ival = 0;
    JitRef dead = t_op1(f, b0, JI_LOAD_FIELD, JT_VALUE, obj);
    f->insts[dead].ival = 1;
    JitRef keep = t_op2(f, b0, JI_STORE_FIELD, JT_VOID, obj, dead); /* dead after this */
    f->insts[keep].ival = 3;
    JitRef sn = t_op1(f, b0, JI_SEND, JT_VALUE, r);
    f->insts[sn].cs = &cs0;
    JitRef st = t_op2(f, b0, JI_STORE_FIELD, JT_VOID, obj, live);
    f->insts[st].ival = 2;
    t_ret(f, b0, r);
    SomInstance *o = t_object(vm->objectClass, OBJ_INSTANCE, sizeof *o + 4 * sizeof(Value));
    o->nfields = 4;
    f->insts[obj].pval = o;
    SomJitCode *c = compile(f, NULL);
    t_free(f);
    SomInstance *h0 = som_instance_new(vm, vm->objectClass);
    SomInstance *h1 = som_instance_new(vm, vm->objectClass);
    o->fields[0] = (Value)h0;
    o->fields[1] = (Value)h1;
    /* earlier tests left fake objects on the value stack: only real Values below vm->sp */
    for (int i = 0; i < 64; i++)
        vm->stack[i] = vm->nil;
    rt_reset();
    rt.send_answer = vm->nil;
    rt.send_hook = collect;
    SomFrame fr;
    Value args[] = {vm->nil, vm->true_};
    assert_int_equal(run(c, &fr, args, 2), vm->true_);
    assert_int_equal(rt.sends, 1);
    assert_int_equal(o->fields[2], (Value)h0);
    assert_int_equal(h0->h.kind, OBJ_INSTANCE); /* survived: it was in the spill area */
    assert_int_equal(h1->h.kind, OBJ_FREE);     /* collected: only the fake object held it */
    rt.send_hook = NULL;
}

/* ---- deopt stress ---- */

static void stress_run(uint64_t seed, uint32_t *seq, uint32_t n) {
    JitFunc *f = loop_func(NULL);
    JitCodegenOpts o = {.opt_level = 2, .stress_seed = seed, .stress_permille = 50};
    SomJitCode *c = compile(f, &o);
    t_free(f);
    rt_reset();
    rt.deopt_answer = som_mkint(-1);
    for (uint32_t k = 0; k < n; k++) {
        SomFrame fr;
        Value args[] = {vm->nil, som_mkint(20), som_mkint(0)};
        Value r = run(c, &fr, args, 3);
        /* where it deopted: the i of the state, or 1000 for no deopt */
        if (r == som_mkint(210)) {
            seq[k] = 1000;
        } else {
            assert_int_equal(r, som_mkint(-1));
            const RtDeopt *d = &rt.deopts[rt.ndeopts - 1];
            assert_true(d->d->reason == JDR_STRESS);
            seq[k] =
                d->d->scopes[0].bci * 100 +
                (d->d->scopes[0].nstack ? (uint32_t)d->raw[d->d->vals[d->d->scopes[0].stack[1]].raw]
                                        : 99);
        }
    }
}

static void test_deopt_stress(void **state) {
    (void)state;
    enum { N = 60 };
    uint32_t a[N], b[N], c[N];
    stress_run(42, a, N);
    stress_run(42, b, N);
    stress_run(43, c, N);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a);
    uint32_t deopted = 0;
    for (int k = 0; k < N; k++)
        deopted += a[k] != 1000;
    /* 20 iterations with 2 guarded adds each at 5%: most runs deopt, some do not */
    assert_true(deopted > 0);
}

/* ---- code ranges, concurrency ---- */

/* FB_OBSERVE (sampled type feedback): jit_fb_observe gets the table, the slot and both
 * operands only while vm->jit_fb_armed is set; a function without a table emits nothing. */
static void test_fb_observe(void **state) {
    (void)state;
    for (int with_table = 0; with_table < 2; with_table++) {
        SomMethod *m = t_method(2, 0);
        JitFunc *f = t_func(vm, m);
        int32_t b0 = t_block(f);
        JitRef a1 = t_arg(f, b0, 1), a2 = t_arg(f, b0, 2);
        t_state(f, 0, -1, 0, NULL, 0, NULL);
        JitRef o = t_op2(f, b0, JI_FB_OBSERVE, JT_VOID, a1, a2);
        f->insts[o].ival = 3;
        t_ret(f, b0, a1);
        JitFbTable table = {.vm = vm};
        f->fb_table = with_table ? &table : NULL;
        SomJitCode *c = compile(f, NULL);
        t_free(f);
        SomFrame fr;
        Value args[3] = {vm->nil, som_mkint(7), som_mkint(-2)};
        rt_reset();
        vm->jit_fb_armed = 0;
        assert_true(run(c, &fr, args, 3) == som_mkint(7));
        assert_int_equal(rt.observes, 0);
        vm->jit_fb_armed = 2;
        run(c, &fr, args, 3);
        args[1] = som_mkint(8);
        run(c, &fr, args, 3);
        run(c, &fr, args, 3); /* the burst of 2 is spent */
        if (!with_table) {
            assert_int_equal(rt.observes, 0);
            vm->jit_fb_armed = 0;
            continue;
        }
        assert_int_equal(rt.observes, 2);
        assert_ptr_equal(rt.observe_table, &table);
        assert_int_equal(rt.observe_slot, 3);
        assert_true(rt.observe_a == som_mkint(8));
        assert_true(rt.observe_b == som_mkint(-2));
        assert_int_equal(vm->jit_fb_armed, 0);
    }
}

static void test_code_range(void **state) {
    (void)state;
    JitFunc *f = loop_func(NULL);
    JitCodegenOpts o = {.opt_level = 2, .version = 3};
    SomJitCode *c = compile(f, &o);
    uintptr_t e = (uintptr_t)c->entry;
    assert_true(e >= c->code_start && e < c->code_start + c->code_size);
    assert_true(c->code_size > 16 && c->code_size < 4096);
    assert_int_equal(c->version, 3);
    assert_int_equal(c->tier, 2);
    assert_ptr_equal(c->method, f->method);
    SomJitCode *c2 = compile(f, NULL);
    assert_int_equal(c2->version, 1);
    assert_true(c2->code_start >= c->code_start + c->code_size ||
                c2->code_start + c2->code_size <= c->code_start);
    t_free(f);
}

typedef struct ThreadJob {
    JitFunc *f[8];
    SomJitCode *c[8];
    char err[256];
} ThreadJob;

static void *compile_thread(void *arg) {
    ThreadJob *j = arg;
    for (int k = 0; k < 8; k++) {
        JitCodegenOpts o = {.opt_level = 2, .version = (uint32_t)k + 1};
        j->c[k] = jit_codegen(engine, j->f[k], &o, j->err, sizeof j->err);
    }
    return NULL;
}

static void test_two_threads(void **state) {
    (void)state;
    /* the IR is built on this thread (the test helpers are not thread-safe) */
    ThreadJob jobs[2];
    memset(jobs, 0, sizeof jobs);
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 8; k++)
            jobs[t].f[k] = loop_func(NULL);
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        pthread_create(&th[t], NULL, compile_thread, &jobs[t]);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    rt_reset();
    for (int t = 0; t < 2; t++) {
        for (int k = 0; k < 8; k++) {
            if (!jobs[t].c[k]) fail_msg("thread %d: %s", t, jobs[t].err);
            SomFrame fr;
            Value args[] = {vm->nil, som_mkint(10 + k), som_mkint(t)};
            assert_int_equal(run(jobs[t].c[k], &fr, args, 3),
                             som_mkint(t + (10 + k) * (11 + k) / 2));
            assert_int_equal(jobs[t].c[k]->version, k + 1);
            t_free(jobs[t].f[k]);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int_loop),
        cmocka_unit_test(test_fb_observe),
        cmocka_unit_test(test_int_overflow_deopt),
        cmocka_unit_test(test_double_boxing),
        cmocka_unit_test(test_has_class),
        cmocka_unit_test(test_fields_arrays),
        cmocka_unit_test(test_send_and_spill),
        cmocka_unit_test(test_deopt_stress),
        cmocka_unit_test(test_code_range),
        cmocka_unit_test(test_two_threads),
        cmocka_unit_test(test_int_semantics),
        cmocka_unit_test(test_double_semantics),
        cmocka_unit_test(test_closures),
        cmocka_unit_test(test_spill_slot_reuse),
        cmocka_unit_test(test_globals_strings_cfields),
        cmocka_unit_test(test_deopt_many_values),
        cmocka_unit_test(test_bad_ir),
        cmocka_unit_test(test_dump),
        cmocka_unit_test(test_spill_survives_gc),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
