/* SPDX-License-Identifier: MIT */
/*
 * test_jitrt.c - the VM side of the optimizing tier (jitabi.h), exercised with compiled
 * code written by hand: C functions with the entry signature that follow the ABI, installed
 * as SomJitCode in methods of small SOM classes.  Covers entering compiled code from the
 * interpreter, sends from compiled code (interpreted, compiled, trivial, primitive, block,
 * perform, DNU, super), deoptimization of one and of three scopes (virtual block identity,
 * boxed doubles, an inlined method's context, under gc-stress), non-local returns across
 * interpreter levels and compiled frames, escaped blocks, errors and exits under compiled
 * code, compiled recursion against the C stack limit, the JIT hooks, and that nothing is
 * entered while vm->jit is NULL.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"
#include "jitabi.h"
#include "vmtest.h"

/* ---- harness ---------------------------------------------------------------------- */

typedef struct T {
    SomVM *vm;
    char *dir;
    char *out, *err;
    size_t outlen, errlen;
    FILE *outf, *errf;
    int status;
    SomJitCode *codes[16];
    int ncodes;
} T;

static int jit_state; /* vm->jit: non-NULL lets the VM enter compiled code */
static bool g_stress; /* run the programs under --gc-stress */

static void t_open(T *t, const char *src) {
    memset(t, 0, sizeof *t);
    t->dir = vt_tempdir();
    vt_write_class(t->dir, "Main", src);
    vt_write_class(t->dir, "Base", "Base = ( foo = ( ^'base foo' ) )\n");
    SomOptions o = {0};
    o.gc_stress = g_stress;
    o.max_frames = 60000;
    char errbuf[1024] = "";
    t->vm = som_vm_new(&o, t->dir, errbuf, sizeof errbuf);
    if (!t->vm) fail_msg("som_vm_new: %s", errbuf);
    t->outf = open_memstream(&t->out, &t->outlen);
    t->errf = open_memstream(&t->err, &t->errlen);
    assert_non_null(t->outf);
    assert_non_null(t->errf);
    t->vm->out = t->outf;
    t->vm->err = t->errf;
    t->vm->jit = &jit_state;
    assert_non_null(som_load_class(t->vm, som_symbol_cstr(t->vm, "Main")));
}

static SomClass *t_main(T *t) {
    return som_load_class(t->vm, som_symbol_cstr(t->vm, "Main"));
}

static SomMethod *t_method(T *t, const char *sel) {
    SomMethod *m = som_lookup(t->vm, t_main(t), som_symbol_cstr(t->vm, sel));
    if (!m) fail_msg("no method %s", sel);
    return m;
}

static CallSite *t_site(SomMethod *m, const char *sel, bool super) {
    for (uint32_t i = 0; i < m->nsites; i++)
        if (!strcmp(m->sites[i].selector->bytes, sel) && m->sites[i].is_super == super)
            return &m->sites[i];
    fail_msg("no site %s", sel);
    return NULL;
}

/* The nth block literal of m. */
static SomMethod *t_block(SomMethod *m, int nth) {
    for (uint32_t i = 0; i < m->nliterals; i++) {
        Value v = m->literals[i];
        if (som_is_obj(v) && som_hdr(v)->kind == OBJ_METHOD && ((SomMethod *)v)->kind == MK_BLOCK &&
            nth-- == 0)
            return (SomMethod *)v;
    }
    fail_msg("no block literal");
    return NULL;
}

static Value t_literal(SomMethod *m, int kind) {
    for (uint32_t i = 0; i < m->nliterals; i++)
        if (som_is_obj(m->literals[i]) && som_hdr(m->literals[i])->kind == kind)
            return m->literals[i];
    fail_msg("no literal of kind %d", kind);
    return 0;
}

static SomJitCode *t_code(T *t, SomMethod *m, Value (*entry)(SomVM *, SomFrame *)) {
    SomJitCode *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->entry = entry;
    c->method = m;
    c->version = 1;
    c->tier = 2;
    m->jit = c;
    t->codes[t->ncodes++] = c;
    return c;
}

static void t_run(T *t) {
    char *argv[] = {"Main"};
    t->status = som_vm_run(t->vm, 1, argv);
    fflush(t->outf);
    fflush(t->errf);
}

static void t_close(T *t) {
    som_vm_free(t->vm);
    fclose(t->outf);
    fclose(t->errf);
    free(t->out);
    free(t->err);
    for (int i = 0; i < t->ncodes; i++)
        free(t->codes[i]);
    vt_rmdir(t->dir);
    free(t->dir);
}

static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* Sends cs from compiled code as the ABI says: receiver and arguments at vm->sp[0..n]. */
static int g_bad_sp;
static Value send(SomVM *vm, SomFrame *fp, CallSite *cs, SomMethod *sender, const Value *a) {
    Value *sp = vm->sp;
    for (int i = 0; i <= cs->nargs; i++)
        sp[i] = a[i];
    if (sender == fp->method) fp->bci = cs->bci;
    Value r = jit_rt_send(vm, fp, cs, sender);
    if (vm->sp != sp || (r && vm->state != VMS_COMPILED)) g_bad_sp++;
    return r;
}

/* ---- entering compiled code ------------------------------------------------------- */

static const char *src_entry = "Main = (\n"
                               "  add: a to: b = ( ^a + b )\n"
                               "  run = ( (self add: 3 to: 4) println. (self add: 10 to: 20) "
                               "println )\n"
                               ")\n";
static int n_add, bad_add;
static Value c_add(SomVM *vm, SomFrame *fp) {
    n_add++;
    if (vm->state != VMS_COMPILED || fp != &vm->frames[vm->top] || fp->jit != fp->method->jit ||
        fp->jit_pos != JIT_POS_NONE || vm->sp != fp->bp + 3 + fp->method->nlocals)
        bad_add++;
    return som_mkint(som_int(fp->bp[1]) + som_int(fp->bp[2]) + 1000);
}

static void test_entry(void **state) {
    (void)state;
    T t;
    t_open(&t, src_entry);
    t_code(&t, t_method(&t, "add:to:"), c_add);
    n_add = bad_add = 0;
    t_run(&t);
    assert_int_equal(t.status, 0);
    assert_string_equal(t.out, "1007\n1030\n");
    assert_int_equal(n_add, 2);
    assert_int_equal(bad_add, 0);
    assert_int_equal(t.vm->state, VMS_IDLE);
    t_close(&t);
}

static void test_jit_off_never_enters(void **state) {
    (void)state;
    T t;
    t_open(&t, src_entry);
    t_code(&t, t_method(&t, "add:to:"), c_add);
    t.vm->jit = NULL;
    n_add = 0;
    t_run(&t);
    assert_string_equal(t.out, "7\n30\n");
    assert_int_equal(n_add, 0);
    t_close(&t);
    /* invalidated code is not entered either */
    t_open(&t, src_entry);
    t_code(&t, t_method(&t, "add:to:"), c_add)->invalid = 1;
    t_run(&t);
    assert_string_equal(t.out, "7\n30\n");
    assert_int_equal(n_add, 0);
    t_close(&t);
}

/* ---- sends from compiled code ----------------------------------------------------- */

static const char *src_sends =
    "Main = Base (\n"
    "  | f |\n"
    "  interp: x = ( ^x * 2 )\n"
    "  comp: x = ( ^x + 1 )\n"
    "  f = ( ^f )\n"
    "  f: v = ( f := v )\n"
    "  lit = ( ^42 )\n"
    "  me = ( )\n"
    "  foo = ( ^'main foo' )\n"
    "  doesNotUnderstand: sel arguments: args = ( ^'dnu ' + sel )\n"
    "  driver = (\n"
    "    self interp: 5. self comp: 5. self f: 9. self f. self lit. self me. super foo.\n"
    "    self zork: 1. self perform: #lit. [:a | a * 3] value: 4.\n"
    "    #(1 2 3) at: 2. 'abc' length. 3 + 4 )\n"
    "  run = ( self driver println. self driver println )\n"
    ")\n";

static char g_res[32][64];
static int g_nres;
static void record(SomVM *vm, Value v) {
    char *b = g_res[g_nres++ % 32];
    if (som_is_int(v))
        snprintf(b, 64, "%lld", (long long)som_int(v));
    else if (som_is_obj(v) && som_is_string_like(v))
        snprintf(b, 64, "%s", ((SomString *)v)->bytes);
    else
        snprintf(b, 64, "%s", som_class_of(vm, v)->name->bytes);
}

static int n_comp;
static Value c_comp(SomVM *vm, SomFrame *fp) {
    (void)vm;
    n_comp++;
    return som_mkint(som_int(fp->bp[1]) + 101);
}

static Value c_driver(SomVM *vm, SomFrame *fp) {
    SomMethod *m = fp->method;
    Value self = fp->self, r;
#define SEND(sel, super, ...)                                                                      \
    do {                                                                                           \
        r = send(vm, fp, t_site(m, sel, super), m, (Value[]){__VA_ARGS__});                        \
        if (!r) return 0;                                                                          \
        record(vm, r);                                                                             \
    } while (0)
    SEND("interp:", false, self, som_mkint(5));
    SEND("comp:", false, self, som_mkint(5));
    SEND("f:", false, self, som_mkint(9));
    SEND("f", false, self);
    SEND("lit", false, self);
    SEND("me", false, self);
    SEND("foo", true, self);
    SEND("zork:", false, self, som_mkint(1));
    SEND("perform:", false, self, SOM_V(t_site(m, "lit", false)->selector));
    Value blk = jit_rt_new_block(vm, t_block(m, 0), fp->ctx, self);
    SEND("value:", false, blk, som_mkint(4));
    SEND("at:", false, t_literal(m, OBJ_ARRAY), som_mkint(2));
    SEND("length", false, t_literal(m, OBJ_STRING));
    SEND("+", false, som_mkint(3), som_mkint(4));
#undef SEND
    return som_mkint(777);
}

static void test_sends(void **state) {
    (void)state;
    T t;
    t_open(&t, src_sends);
    SomMethod *drv = t_method(&t, "driver");
    t_code(&t, drv, c_driver);
    t_code(&t, t_method(&t, "comp:"), c_comp);
    g_nres = n_comp = g_bad_sp = 0;
    t_run(&t);
    assert_int_equal(t.status, 0);
    assert_string_equal(t.out, "777\n777\n");
    static const char *want[] = {"10",        "106", "Main", "9", "42", "Main", "base foo",
                                 "dnu zork:", "42",  "12",   "2", "3",  "7"};
    assert_int_equal(g_nres, 26);
    for (int i = 0; i < 26; i++)
        assert_string_equal(g_res[i], want[i % 13]);
    assert_int_equal(n_comp, 2);
    assert_int_equal(g_bad_sp, 0);
    /* the inline caches and feedback the compiler reads: as the interpreter keeps them */
    CallSite *cs = t_site(drv, "interp:", false);
    assert_ptr_equal(cs->ic[0].cls, t_main(&t));
    assert_ptr_equal(cs->ic[0].method, t_method(&t, "interp:"));
    assert_int_equal(cs->ic[0].hits, 2);
    assert_ptr_equal(t_site(drv, "foo", true)->ic[0].cls, t_main(&t)->super);
    t_close(&t);
}

/* restart sent from compiled code: a clean SOM-level error */
static Value c_restarter(SomVM *vm, SomFrame *fp) {
    SomMethod *m = fp->method;
    Value blk = jit_rt_new_block(vm, t_block(m, 0), fp->ctx, fp->self);
    return send(vm, fp, t_site(m, "restart", false), m, (Value[]){blk});
}

static void test_restart_error(void **state) {
    (void)state;
    T t;
    t_open(&t, "Main = (\n  rs = ( [ 1 ] restart )\n  run = ( self rs. 'after' println )\n)\n");
    t_code(&t, t_method(&t, "rs"), c_restarter);
    t_run(&t);
    assert_int_equal(t.status, 1);
    assert_string_equal(t.out, "");
    assert_non_null(strstr(t.err, "at Main>>rs "));
    assert_non_null(strstr(t.err, "restart from compiled code\n"));
    assert_int_equal(count_of(t.err, "Traceback"), 1);
    t_close(&t);
}

/* ---- deoptimization --------------------------------------------------------------- */

static int n_deopt_hook;
static uint32_t last_reason;
static void deopt_hook(SomVM *vm, const SomJitCode *code, uint32_t reason) {
    (void)vm;
    (void)code;
    n_deopt_hook++;
    last_reason = reason;
}

static const char *src_deopt1 = "Main = (\n"
                                "  twice: y = ( ^y + y )\n"
                                "  mid: x = ( | t | t := x * 2. ^100 + (self twice: t) )\n"
                                "  run = ( (self mid: 5) println. (self mid: 6) println )\n"
                                ")\n";
static int bad_deopt;
/* Deoptimizes at the send of twice: with [100, self, t] on the operand stack. */
static Value c_mid(SomVM *vm, SomFrame *fp) {
    SomMethod *m = fp->method;
    int64_t x = som_int(fp->bp[1]), t = x * 2;
    CallSite *cs = t_site(m, "twice:", false);
    static const int32_t slots[3] = {0, 1, 2}, stack[3] = {3, 0, 2};
    JitDeoptVal vals[4] = {{.kind = JVK_VALUE, .raw = 0},
                           {.kind = JVK_INT, .raw = 1},
                           {.kind = JVK_INT, .raw = 2},
                           {.kind = JVK_CONST, .raw = -1, .cst = som_mkint(100)}};
    JitDeoptScope sc = {.method = m,
                        .bci = cs->bci,
                        .resume_bci = cs->bci,
                        .self = 0,
                        .ctx = -1,
                        .nslots = 3,
                        .nstack = 3,
                        .slots = slots,
                        .stack = stack};
    JitDeopt d = {.reason = JDR_CLASS, .nscopes = 1, .nvals = 4, .scopes = &sc, .vals = vals};
    uint64_t raw[3] = {fp->self, (uint64_t)x, (uint64_t)t};
    fp->bci = cs->bci;
    int32_t top = vm->top;
    Value r = jit_rt_deopt(vm, fp, &d, raw);
    if (fp->jit != NULL || vm->top != top || fp->ip == NULL) bad_deopt++;
    return r;
}

static void test_deopt_one_scope(void **state) {
    (void)state;
    T t;
    t_open(&t, src_deopt1);
    SomMethod *m = t_method(&t, "mid:");
    assert_int_equal(m->nlocals, 1);
    SomJitCode *c = t_code(&t, m, c_mid);
    t.vm->jit_deopt_hook = deopt_hook;
    n_deopt_hook = bad_deopt = 0;
    t_run(&t);
    assert_int_equal(t.status, 0);
    assert_string_equal(t.out, "120\n124\n");
    assert_int_equal(c->deopts, 2);
    assert_int_equal(n_deopt_hook, 2);
    assert_int_equal(last_reason, JDR_CLASS);
    assert_int_equal(bad_deopt, 0);
    t_close(&t);
}

static const char *src_deopt3 =
    "Main = (\n"
    "  outer: x = ( ^1 + (self middle: x) )\n"
    "  middle: y = ( | blk | blk := [:z | z * 2]. ^(self inner: blk and: blk big: 2.5) + y "
    ")\n"
    "  inner: p and: q big: e = ( ^(p == q) ifTrue: [(p value: 10) + (e > 100000000.0 ifTrue: [1] "
    "ifFalse: [0])] ifFalse: [-1000] )\n"
    "  run = ( (self outer: 7) println. (self outer: 7) println )\n"
    ")\n";
static SomMethod *g_middle, *g_inner;
/* outer: with middle: and inner:and:big: inlined; deoptimizes at inner's start with the
 * block virtual (two mentions, one identity), an int and a double that needs a box (1e300,
 * as if compiled code had computed it: e is only ever compared after the deopt). */
static Value c_outer(SomVM *vm, SomFrame *fp) {
    SomMethod *m = fp->method;
    int64_t x = som_int(fp->bp[1]);
    CallSite *s0 = t_site(m, "middle:", false), *s1 = t_site(g_middle, "inner:and:big:", false);
    double big = 1.0e300;
    uint64_t bits;
    memcpy(&bits, &big, sizeof bits);
    uint64_t raw[4] = {fp->self, (uint64_t)x, 1, bits};
    JitDeoptVal vals[7] = {
        {.kind = JVK_VALUE, .raw = 0},
        {.kind = JVK_INT, .raw = 1},
        {.kind = JVK_INT, .raw = 2},
        {.kind = JVK_VBLOCK,
         .raw = -1,
         .vmethod = t_block(g_middle, 0),
         .vctx = -1,
         .vself = 0,
         .vid = 5},
        {.kind = JVK_VBLOCK,
         .raw = -1,
         .vmethod = t_block(g_middle, 0),
         .vctx = -1,
         .vself = 0,
         .vid = 5},
        {.kind = JVK_DOUBLE, .raw = 3},
        {.kind = JVK_INT, .raw = 1},
    };
    static int32_t sl0[2] = {0, 1}, st0[1] = {2}, sl1[3] = {0, 6, 3}, sl2[8] = {0, 3, 4, 5};
    for (int i = 4; i < 8; i++)
        sl2[i] = -1; /* inner's locals: nil */
    JitDeoptScope sc[3] = {
        {.method = m,
         .bci = s0->bci,
         .resume_bci = s0->bci + 3,
         .self = 0,
         .ctx = -1,
         .nslots = 2,
         .nstack = 1,
         .slots = sl0,
         .stack = st0},
        {.method = g_middle,
         .bci = s1->bci,
         .resume_bci = s1->bci + 3,
         .self = 0,
         .ctx = -1,
         .nslots = 3,
         .slots = sl1},
        {.method = g_inner, .self = 0, .ctx = -1, .nslots = 4u + g_inner->nlocals, .slots = sl2},
    };
    JitDeopt d = {.reason = JDR_TYPE, .nscopes = 3, .nvals = 7, .scopes = sc, .vals = vals};
    fp->bci = s0->bci;
    return jit_rt_deopt(vm, fp, &d, raw);
}

static void run_deopt3(bool stress) {
    g_stress = stress;
    T t;
    t_open(&t, src_deopt3);
    g_middle = t_method(&t, "middle:");
    g_inner = t_method(&t, "inner:and:big:");
    assert_int_equal(g_middle->nlocals, 1);
    assert_int_equal(g_middle->nctx, 0);
    SomJitCode *c = t_code(&t, t_method(&t, "outer:"), c_outer);
    t_run(&t);
    g_stress = false;
    assert_string_equal(t.err, "");
    assert_int_equal(t.status, 0);
    assert_string_equal(t.out, "29\n29\n");
    assert_int_equal(c->deopts, 2);
    assert_int_equal(t.vm->top, -1);
    assert_int_equal(gc_verify(t.vm), 0);
    t_close(&t);
}

static void test_deopt_three_scopes(void **state) {
    (void)state;
    run_deopt3(false);
}

static void test_deopt_three_scopes_gc_stress(void **state) {
    (void)state;
    run_deopt3(true);
}

/* An inlined method with its own context (made with frame NULL): after the deopt its
 * block's ^ must find the rebuilt activation. */
static const char *src_deopt_ctx =
    "Main = (\n"
    "  nlrOuter = ( ^(self nlrMid) + 1 )\n"
    "  nlrMid = ( | b | b := [:z | ^z * 10]. self nlrInner: b. ^0 )\n"
    "  nlrInner: blk = ( blk value: 4. ^99 )\n"
    "  run = ( self nlrOuter println )\n"
    ")\n";
static SomMethod *g_nlrmid, *g_nlrinner;
static Value c_nlr_outer(SomVM *vm, SomFrame *fp) {
    SomMethod *m = fp->method;
    SomContext *ctx = jit_rt_new_context(vm, g_nlrmid, NULL, NULL);
    CallSite *s0 = t_site(m, "nlrMid", false), *s1 = t_site(g_nlrmid, "nlrInner:", false);
    uint64_t raw[2] = {fp->self, (uint64_t)SOM_V(ctx)};
    JitDeoptVal vals[3] = {
        {.kind = JVK_VALUE, .raw = 0},
        {.kind = JVK_VALUE, .raw = 1},
        {.kind = JVK_VBLOCK,
         .raw = -1,
         .vmethod = t_block(g_nlrmid, 0),
         .vctx = 1,
         .vself = 0,
         .vid = 1},
    };
    static const int32_t sl0[1] = {0}, sl1[2] = {0, 2}, sl2[2] = {0, 2};
    JitDeoptScope sc[3] = {
        {.method = m,
         .bci = s0->bci,
         .resume_bci = s0->bci + 3,
         .self = 0,
         .ctx = -1,
         .nslots = 1,
         .slots = sl0},
        {.method = g_nlrmid,
         .bci = s1->bci,
         .resume_bci = s1->bci + 3,
         .self = 0,
         .ctx = 1,
         .nslots = 2,
         .slots = sl1},
        {.method = g_nlrinner, .self = 0, .ctx = -1, .nslots = 2, .slots = sl2},
    };
    JitDeopt d = {.reason = JDR_CLASS, .nscopes = 3, .nvals = 3, .scopes = sc, .vals = vals};
    return jit_rt_deopt(vm, fp, &d, raw);
}

static void run_deopt_ctx(bool stress) {
    g_stress = stress;
    T t;
    t_open(&t, src_deopt_ctx);
    g_nlrmid = t_method(&t, "nlrMid");
    g_nlrinner = t_method(&t, "nlrInner:");
    assert_true(g_nlrmid->nctx > 0);
    assert_int_equal(g_nlrmid->nlocals, 1);
    t_code(&t, t_method(&t, "nlrOuter"), c_nlr_outer);
    t_run(&t);
    g_stress = false;
    assert_string_equal(t.err, "");
    assert_int_equal(t.status, 0);
    assert_string_equal(t.out, "41\n");
    assert_int_equal(t.vm->nlr_target, -1);
    t_close(&t);
}

static void test_deopt_inlined_context(void **state) {
    (void)state;
    run_deopt_ctx(false);
    run_deopt_ctx(true);
}

/* A frame state that cannot be right (scope 0 is not the frame's method) is a clean error. */
static Value c_bad_deopt(SomVM *vm, SomFrame *fp) {
    static const int32_t slots[2] = {0, 0};
    JitDeoptVal vals[1] = {{.kind = JVK_VALUE, .raw = 0}};
    JitDeoptScope sc = {.method = g_middle, .self = 0, .ctx = -1, .nslots = 2, .slots = slots};
    JitDeopt d = {.reason = JDR_CLASS, .nscopes = 1, .nvals = 1, .scopes = &sc, .vals = vals};
    uint64_t raw[1] = {fp->self};
    return jit_rt_deopt(vm, fp, &d, raw);
}

static void test_deopt_bad_state(void **state) {
    (void)state;
    T t;
    t_open(&t, src_deopt3);
    g_middle = t_method(&t, "middle:");
    t_code(&t, t_method(&t, "outer:"), c_bad_deopt);
    t_run(&t);
    assert_int_equal(t.status, 1);
    assert_string_equal(t.out, "");
    assert_non_null(strstr(t.err, "at Main>>outer: "));
    assert_non_null(strstr(t.err, "bad deoptimization state in compiled code of outer:\n"));
    t_close(&t);
}

/* ---- non-local returns ------------------------------------------------------------ */

static const char *src_nlr = "Main = (\n"
                             "  home = ( self level1: [:x | ^x + 100]. ^0 )\n"
                             "  level1: b = ( ^self level2: b )\n"
                             "  level2: b = ( b value: 5. ^1 )\n"
                             "  ihome = ( #(1 2 3) do: [:e | e = 2 ifTrue: [^e * 1000]]. ^0 )\n"
                             "  makeBlock = ( ^[:x | ^x] )\n"
                             "  escaped = ( | b | b := self makeBlock. ^b value: 3 )\n"
                             "  makeBlock2 = ( ^[:x | ^x] )\n"
                             "  escaped2 = ( ^self makeBlock2 value: 4 )\n"
                             "  escapedBlock: blk = ( ^'escaped' )\n"
                             "  callHome = ( ^self home + 1 )\n"
                             "  run = ( self home println. self home println. self ihome println.\n"
                             "          self escaped println. self escaped2 println.\n"
                             "          self callHome println. self callHome println )\n"
                             ")\n";
static int n_home_zero, n_level1_zero, n_nlr_blk;
static Value c_home(SomVM *vm, SomFrame *fp) {
    SomMethod *m = fp->method;
    Value b = jit_rt_new_block(vm, t_block(m, 0), fp->ctx, fp->self);
    Value r = send(vm, fp, t_site(m, "level1:", false), m, (Value[]){fp->self, b});
    if (!r) {
        n_home_zero++;
        return 0;
    }
    return som_mkint(0);
}
static Value c_level1(SomVM *vm, SomFrame *fp) {
    SomMethod *m = fp->method;
    Value r = send(vm, fp, t_site(m, "level2:", false), m, (Value[]){fp->self, fp->bp[1]});
    if (!r) n_level1_zero++;
    return r;
}
/* [:e | e = 2 ifTrue: [^e * 1000]], compiled: ^ through jit_rt_nlr to an interpreted home */
static Value c_ihome_blk(SomVM *vm, SomFrame *fp) {
    n_nlr_blk++;
    Value e = fp->bp[1];
    if (e == som_mkint(2)) return jit_rt_nlr(vm, fp, fp->ctx, som_mkint(som_int(e) * 1000));
    return vm->nil;
}
/* [:x | ^x] of makeBlock, compiled: its home has returned */
static Value c_escaping_blk(SomVM *vm, SomFrame *fp) {
    n_nlr_blk++;
    return jit_rt_nlr(vm, fp, fp->ctx, fp->bp[1]);
}
/* callHome, compiled: sends home (compiled, with a context) from compiled code; from the
 * second call on the inline cache hits and jit_rt_send activates home itself */
static Value c_call_home(SomVM *vm, SomFrame *fp) {
    SomMethod *m = fp->method;
    Value r = send(vm, fp, t_site(m, "home", false), m, (Value[]){fp->self});
    if (!r) return 0;
    return send(vm, fp, t_site(m, "+", false), m, (Value[]){r, som_mkint(1)});
}
/* escaped2, compiled: the interpreted block's ^ escapes with the compiled frame invoking */
static Value c_escaped2(SomVM *vm, SomFrame *fp) {
    SomMethod *m = fp->method;
    Value b = send(vm, fp, t_site(m, "makeBlock2", false), m, (Value[]){fp->self});
    if (!b) return 0;
    return send(vm, fp, t_site(m, "value:", false), m, (Value[]){b, som_mkint(4)});
}

static void run_nlr(bool stress) {
    g_stress = stress;
    T t;
    t_open(&t, src_nlr);
    t_code(&t, t_method(&t, "home"), c_home);
    t_code(&t, t_method(&t, "level1:"), c_level1);
    t_code(&t, t_block(t_method(&t, "ihome"), 0), c_ihome_blk);
    t_code(&t, t_block(t_method(&t, "makeBlock"), 0), c_escaping_blk);
    t_code(&t, t_method(&t, "escaped2"), c_escaped2);
    t_code(&t, t_method(&t, "callHome"), c_call_home);
    n_home_zero = n_level1_zero = n_nlr_blk = 0;
    t_run(&t);
    g_stress = false;
    assert_string_equal(t.err, "");
    assert_int_equal(t.status, 0);
    assert_string_equal(t.out, "105\n105\n2000\nescaped\nescaped\n106\n106\n");
    assert_int_equal(n_home_zero, 4);
    assert_int_equal(n_level1_zero, 4);
    assert_int_equal(n_nlr_blk, 3); /* ihome's block twice (1, 2), makeBlock's once */
    assert_int_equal(t.vm->nlr_target, -1);
    t_close(&t);
}

static void test_nlr(void **state) {
    (void)state;
    run_nlr(false);
}

static void test_nlr_gc_stress(void **state) {
    (void)state;
    run_nlr(true);
}

/* Exact hooks: enters and exits balance across the unwinding (compiled code is not entered
 * while they are on, so this checks the interpreter side of the same program). */
static long hk_enter, hk_exit;
static void hk_on_enter(SomVM *vm, SomMethod *m, bool is_prim) {
    (void)vm;
    (void)m;
    if (!is_prim) hk_enter++;
}
static void hk_on_exit(SomVM *vm, SomMethod *m, bool is_prim) {
    (void)vm;
    (void)m;
    if (!is_prim) hk_exit++;
}

static void test_nlr_exact_hooks(void **state) {
    (void)state;
    T t;
    t_open(&t, src_nlr);
    t_code(&t, t_method(&t, "home"), c_home);
    t.vm->exact_hooks = true;
    t.vm->on_enter = hk_on_enter;
    t.vm->on_exit = hk_on_exit;
    hk_enter = hk_exit = n_home_zero = 0;
    t_run(&t);
    assert_string_equal(t.out, "105\n105\n2000\nescaped\nescaped\n106\n106\n");
    assert_int_equal(n_home_zero, 0);
    assert_true(hk_enter > 10);
    assert_int_equal(hk_enter, hk_exit);
    t_close(&t);
}

/* ---- errors and exits under compiled code ----------------------------------------- */

static const char *src_err = "Main = (\n"
                             "  boom: x = ( ^self helper: x )\n"
                             "  helper: x = ( ^self fail: x )\n"
                             "  fail: x = ( ^#(1 2) at: x )\n"
                             "  run = ( (self boom: 5) println. 'not reached' println )\n"
                             ")\n";
static SomMethod *g_helper;
static JitPos g_pos[2];
/* boom: with helper: inlined: the send of fail: is helper's, at position 1 */
static Value c_boom(SomVM *vm, SomFrame *fp) {
    SomMethod *m = fp->method;
    CallSite *s0 = t_site(m, "helper:", false), *s1 = t_site(g_helper, "fail:", false);
    fp->bci = s0->bci;
    fp->jit_pos = 1;
    Value r = send(vm, fp, s1, g_helper, (Value[]){fp->self, fp->bp[1]});
    fp->jit_pos = JIT_POS_NONE;
    return r;
}

static void test_error_backtrace(void **state) {
    (void)state;
    T t;
    t_open(&t, src_err);
    SomMethod *boom = t_method(&t, "boom:");
    g_helper = t_method(&t, "helper:");
    g_pos[0] = (JitPos){boom, t_site(boom, "helper:", false)->bci, JIT_POS_NONE};
    g_pos[1] = (JitPos){g_helper, t_site(g_helper, "fail:", false)->bci, 0};
    SomJitCode *c = t_code(&t, boom, c_boom);
    c->pos = g_pos;
    c->npos = 2;
    t_run(&t);
    assert_int_equal(t.status, 1);
    assert_string_equal(t.out, "");
    assert_int_equal(count_of(t.err, "Traceback"), 1);
    const char *a = strstr(t.err, "  at Main>>fail: ");
    const char *b = strstr(t.err, "  at Main>>helper: ");
    const char *c2 = strstr(t.err, "  at Main>>boom: ");
    const char *d = strstr(t.err, "  at Main>>run ");
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c2);
    assert_non_null(d);
    assert_true(a < b && b < c2 && c2 < d);
    const char *bl = strstr(b, "Main.som:3)\n"); /* printed as if interpreted */
    assert_true(bl && bl < c2);
    assert_non_null(strstr(c2, "Main.som:2)\n"));
    assert_non_null(strstr(t.err, "Index 5 not valid for array of length 2.\n"));
    assert_int_equal(t.vm->top, -1);
    t_close(&t);
}

static Value c_call_quit(SomVM *vm, SomFrame *fp) {
    SomMethod *m = fp->method;
    Value r = send(vm, fp, t_site(m, "quit:", false), m, (Value[]){fp->self, fp->bp[1]});
    if (!r) return 0;
    return som_mkint(0);
}

static void test_exit_inside(void **state) {
    (void)state;
    for (int status = 0; status <= 3; status += 3) {
        char src[512];
        snprintf(src, sizeof src,
                 "Main = (\n"
                 "  quit: n = ( system exit: n )\n"
                 "  callQuit: n = ( self quit: n. ^0 )\n"
                 "  run = ( 'before' println. self callQuit: %d. 'not reached' println )\n"
                 ")\n",
                 status);
        T t;
        t_open(&t, src);
        t_code(&t, t_method(&t, "callQuit:"), c_call_quit);
        t_run(&t);
        assert_int_equal(t.status, status);
        assert_string_equal(t.out, "before\n");
        assert_string_equal(t.err, "");
        assert_true(t.vm->exiting);
        assert_int_equal(t.vm->top, -1);
        t_close(&t);
    }
}

/* ---- compiled recursion and the C stack ------------------------------------------- */

static long n_recurse;
static Value c_recurse(SomVM *vm, SomFrame *fp) {
    n_recurse++;
    SomMethod *m = fp->method;
    Value r = send(vm, fp, t_site(m, "recurse:", false), m,
                   (Value[]){fp->self, som_mkint(som_int(fp->bp[1]) + 1)});
    if (!r) return 0;
    return som_mkint(1 + som_int(r));
}

static void *recursion_thread(void *arg) {
    T *t = arg;
    t_run(t);
    return NULL;
}

static void test_compiled_recursion_overflow(void **state) {
    (void)state;
    T t;
    t_open(&t, "Main = (\n"
               "  recurse: n = ( ^1 + (self recurse: n + 1) )\n"
               "  run = ( 'before' println. self recurse: 0 )\n"
               ")\n");
    t_code(&t, t_method(&t, "recurse:"), c_recurse);
    n_recurse = 0;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 4u << 20); /* the C stack runs out long before the VM's */
    pthread_t th;
    assert_int_equal(pthread_create(&th, &a, recursion_thread, &t), 0);
    pthread_join(th, NULL);
    pthread_attr_destroy(&a);
    assert_int_equal(t.status, 1);
    assert_string_equal(t.out, "before\n");
    assert_non_null(strstr(t.err, "Stack overflow"));
    assert_int_equal(count_of(t.err, "Traceback"), 1);
    assert_true(n_recurse > 100);
    assert_true(n_recurse < 59000); /* the rest ran interpreted */
    t_close(&t);
}

/* ---- the JIT hooks ---------------------------------------------------------------- */

typedef struct HookEv {
    SomMethod *m;
    int why;
} HookEv;
static HookEv g_ev[4096];
static int g_nev;
static SomJitCode g_hook_code;
static bool g_install, g_tick_once;
static int n_foo;
static Value c_foo(SomVM *vm, SomFrame *fp) {
    (void)vm;
    n_foo++;
    return som_mkint(som_int(fp->bp[1]) + 1);
}
static void jit_hook(SomVM *vm, SomMethod *m, int why) {
    if (g_nev < 4096) g_ev[g_nev++] = (HookEv){m, why};
    if (g_install && why == SOM_JIT_EAGER && !strcmp(m->signature->bytes, "foo:")) {
        g_hook_code.entry = c_foo;
        g_hook_code.method = m;
        m->jit = &g_hook_code;
    }
    if (g_tick_once && why == SOM_JIT_COUNT) {
        g_tick_once = false;
        vm->jit_tick = 1;
    }
    if (vm->opts.gc_stress) gc_collect(vm); /* the hook may collect */
}
static int count_ev(SomMethod *m, int why) {
    int n = 0;
    for (int i = 0; i < g_nev; i++)
        n += (!m || g_ev[i].m == m) && g_ev[i].why == why;
    return n;
}

static const char *src_hooks = "Main = (\n"
                               "  foo: x = ( ^x + 1 )\n"
                               "  w = ( | i | i := 0. [i < 25] whileTrue: [i := i + 1]. ^i )\n"
                               "  todo = ( | s | s := 0. 1 to: 100 do: [:i | s := s + i]. ^s )\n"
                               "  run = ( 1 to: 7 do: [:i | self foo: i]. self w println. self "
                               "todo println )\n"
                               ")\n";

static void test_hooks_count_loop_tick(void **state) {
    (void)state;
    T t;
    t_open(&t, src_hooks);
    t.vm->jit_hook = jit_hook;
    t.vm->jit_threshold = 3;
    t.vm->jit_loop_threshold = 10;
    g_nev = 0;
    g_install = false;
    g_tick_once = true;
    t_run(&t);
    assert_int_equal(t.status, 0);
    assert_string_equal(t.out, "25\n5050\n");
    SomMethod *foo = t_method(&t, "foo:"), *w = t_method(&t, "w"), *todo = t_method(&t, "todo");
    assert_int_equal(count_ev(foo, SOM_JIT_COUNT), 2); /* invocations 3 and 6 */
    assert_int_equal(count_ev(w, SOM_JIT_LOOP), 2);    /* 25 back edges */
    assert_int_equal(count_ev(todo, SOM_JIT_LOOP), 9); /* 99 back edges */
    assert_int_equal(count_ev(NULL, SOM_JIT_TICK), 1);
    assert_int_equal(count_ev(NULL, SOM_JIT_EAGER), 0);
    assert_int_equal(t.vm->jit_tick, 0);
    t_close(&t);
}

static void run_hooks_eager(bool stress) {
    g_stress = stress;
    T t;
    t_open(&t, src_hooks);
    t.vm->jit_hook = jit_hook;
    t.vm->jit_eager = true;
    g_nev = 0;
    g_install = true;
    g_tick_once = false;
    n_foo = 0;
    memset(&g_hook_code, 0, sizeof g_hook_code);
    t_run(&t);
    g_stress = false;
    assert_int_equal(t.status, 0);
    assert_string_equal(t.out, "25\n5050\n");
    SomMethod *foo = t_method(&t, "foo:");
    assert_int_equal(count_ev(foo, SOM_JIT_EAGER), 1); /* then foo: has code */
    assert_int_equal(n_foo, 7); /* entered right after the hook installed it */
    assert_int_equal(count_ev(t_method(&t, "w"), SOM_JIT_EAGER), 1);
    assert_int_equal(count_ev(NULL, SOM_JIT_COUNT), 0);
    foo->jit = NULL;
    t_close(&t);
}

static void test_hooks_eager(void **state) {
    (void)state;
    run_hooks_eager(false);
    run_hooks_eager(true);
}

/* ---- feedback: TF_OVERFLOWED --------------------------------------------------------- */

static void test_overflow_feedback(void **state) {
    (void)state;
    T t;
    t_open(&t, "Main = (\n"
               "  add: a to: b = ( ^a + b )\n"
               "  mul: a by: b = ( ^a * b )\n"
               "  small: a = ( ^a - 1 )\n"
               "  count: n = ( | s | s := 0. n to: n + 2 do: [:i | s := i]. ^s )\n"
               "  run = ( (self add: 4611686018427387903 to: 1) println.\n"
               "          (self mul: 4611686018427387903 by: 4) println.\n"
               "          (self small: 5) println.\n"
               "          (self count: 4611686018427387902) println )\n"
               ")\n");
    t.vm->jit = NULL;
    t_run(&t);
    assert_int_equal(t.status, 0);
    assert_string_equal(t.out, "4611686018427387904\n18446744073709551612\n4\n"
                               "4611686018427387904\n");
    assert_true(t_site(t_method(&t, "add:to:"), "+", false)->argkinds & TF_OVERFLOWED);
    assert_true(t_site(t_method(&t, "mul:by:"), "*", false)->argkinds & TF_OVERFLOWED);
    assert_false(t_site(t_method(&t, "small:"), "-", false)->argkinds & TF_OVERFLOWED);
    assert_true(t_site(t_method(&t, "count:"), "+", false)->argkinds & TF_OVERFLOWED);
    t_close(&t);
}

/* A generic arithmetic send from compiled code records the feedback the interpreter's
 * instruction would (operand kinds, small-integer overflow). */
static Value c_sum(SomVM *vm, SomFrame *fp) {
    SomMethod *m = fp->method;
    return send(vm, fp, t_site(m, "+", false), m, (Value[]){fp->bp[1], fp->bp[2]});
}

static void test_send_feedback(void **state) {
    (void)state;
    T t;
    t_open(&t, "Main = (\n"
               "  sum: a with: b = ( ^a + b )\n"
               "  run = ( (self sum: 4611686018427387903 with: 1) println.\n"
               "          (self sum: 2.5 with: 1) println )\n"
               ")\n");
    SomMethod *m = t_method(&t, "sum:with:");
    t_code(&t, m, c_sum);
    t_run(&t);
    assert_int_equal(t.status, 0);
    assert_string_equal(t.out, "4611686018427387904\n3.5\n");
    uint32_t fb = t_site(m, "+", false)->argkinds;
    assert_true(fb & TF_OVERFLOWED);
    assert_true(fb & (1u << (TF_INT * 4 + TF_INT)));
    assert_true(fb & (1u << (TF_DOUBLE * 4 + TF_INT)));
    assert_false(fb & (1u << (TF_OTHER * 4 + TF_OTHER)));
    t_close(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entry),
        cmocka_unit_test(test_jit_off_never_enters),
        cmocka_unit_test(test_sends),
        cmocka_unit_test(test_restart_error),
        cmocka_unit_test(test_deopt_one_scope),
        cmocka_unit_test(test_deopt_three_scopes),
        cmocka_unit_test(test_deopt_three_scopes_gc_stress),
        cmocka_unit_test(test_deopt_inlined_context),
        cmocka_unit_test(test_deopt_bad_state),
        cmocka_unit_test(test_nlr),
        cmocka_unit_test(test_nlr_gc_stress),
        cmocka_unit_test(test_nlr_exact_hooks),
        cmocka_unit_test(test_error_backtrace),
        cmocka_unit_test(test_exit_inside),
        cmocka_unit_test(test_compiled_recursion_overflow),
        cmocka_unit_test(test_hooks_count_loop_tick),
        cmocka_unit_test(test_hooks_eager),
        cmocka_unit_test(test_overflow_feedback),
        cmocka_unit_test(test_send_feedback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
