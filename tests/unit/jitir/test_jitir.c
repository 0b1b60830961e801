/* SPDX-License-Identifier: MIT */
/*
 * test_jitir.c - the JIT's IR builder and optimizer (src/jit/build.c, opt.c, ir.c).
 *
 * Programs run in the interpreter first so that inline caches and type feedback exist; then
 * methods are built (jit_build), verified, optimized (jit_optimize) and verified again, and
 * the printed IR is checked for the shapes the builder promises.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bytecode.h"
#include "class.h"
#include "compile.h"
#include "num.h"
#include "vmtest.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static SomVM *run_kept(const char *dir, int argc, char **argv) {
    char e[512];
    SomVM *vm = som_vm_new(NULL, dir, e, sizeof e);
    if (!vm) fail_msg("%s", e);
    size_t ol = 0, el = 0;
    char *ob = NULL, *eb = NULL;
    FILE *out = open_memstream(&ob, &ol), *err = open_memstream(&eb, &el);
    vm->out = out;
    vm->err = err;
    int status = som_vm_run(vm, argc, argv);
    fclose(out);
    fclose(err);
    if (status != 0) fail_msg("program failed with status %d: %s%s", status, ob, eb);
    free(ob);
    free(eb);
    vm->out = stdout;
    vm->err = stderr;
    return vm;
}

static SomClass *find_class(SomVM *vm, const char *name) {
    Value c = 0;
    assert_true(som_global_get(vm, som_symbol_cstr(vm, name), &c));
    return (SomClass *)c;
}

static SomMethod *method(SomVM *vm, const char *cls, const char *sel) {
    SomMethod *m = som_lookup(vm, find_class(vm, cls), som_symbol_cstr(vm, sel));
    assert_non_null(m);
    return m;
}

static char *print_ir(const JitFunc *f) {
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    jit_print(f, o);
    fclose(o);
    return buf;
}

/* Builds m, verifies, optimizes, verifies; answers the function (NULL if refused: reason). */
static JitFunc *build_checked(SomVM *vm, SomMethod *m, const JitBuildOpts *o, char *reason,
                              size_t rlen) {
    JitFunc *f = jit_build(vm, m, o, reason, rlen);
    if (!f) return NULL;
    char err[256];
    if (jit_verify(f, err, sizeof err)) {
        char *ir = print_ir(f);
        fprintf(stderr, "%s\n", ir);
        free(ir);
        fail_msg("%s: built IR does not verify: %s", f->name, err);
    }
    jit_optimize(f);
    if (jit_verify(f, err, sizeof err)) {
        char *ir = print_ir(f);
        fprintf(stderr, "%s\n", ir);
        free(ir);
        fail_msg("%s: optimized IR does not verify: %s", f->name, err);
    }
    return f;
}

/* The printed IR of cls>>sel after optimization (malloc'ed); also keeps f if asked. */
static char *ir_of(SomVM *vm, const char *cls, const char *sel, const JitBuildOpts *o,
                   JitFunc **keep) {
    char reason[200];
    JitFunc *f = build_checked(vm, method(vm, cls, sel), o, reason, sizeof reason);
    if (!f) fail_msg("%s>>%s refused: %s", cls, sel, reason);
    char *ir = print_ir(f);
    if (getenv("JITIR_PRINT")) {
        char *d = vt_disasm(method(vm, cls, sel));
        fprintf(stderr, "%s\n%s\n", d, ir);
        free(d);
    }
    if (keep)
        *keep = f;
    else
        jit_func_free(f);
    return ir;
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static bool expected_refusal(const char *reason) {
    static const char *const ok[] = {"primitive", "sends restart", "send with too many arguments"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        if (!strcmp(reason, ok[i])) return true;
    return false;
}

typedef struct Tally {
    int built, refused, methods;
    long inlined, sends, guards, deopts, insts;
    char (*seen)[96]; /* names of methods counted already (NULL: count all) */
    int nseen, executed, blocks;
    uint64_t ns; /* CPU time in jit_build + jit_optimize of the built ones */
    char reasons[16][80];
    int rcount[16];
    int nreasons;
} Tally;

static void tally_reason(Tally *t, const char *r) {
    for (int i = 0; i < t->nreasons; i++)
        if (!strcmp(t->reasons[i], r)) {
            t->rcount[i]++;
            return;
        }
    if (t->nreasons < 16) {
        snprintf(t->reasons[t->nreasons], sizeof t->reasons[0], "%s", r);
        t->rcount[t->nreasons++] = 1;
    }
}

/* Builds m and then every block literal in it (as a root of its own). */
static void build_one(SomVM *vm, SomMethod *m, const JitBuildOpts *o, Tally *t, bool strict) {
    char reason[200] = "";
    t->methods++;
    t->blocks += m->kind == MK_BLOCK;
    t->executed += m->invocations > 0;
    JitFunc *f = build_checked(vm, m, o, reason, sizeof reason);
    if (f) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
        JitFunc *g = jit_build(vm, m, o, reason, sizeof reason);
        jit_optimize(g);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
        jit_func_free(g);
        t->ns += (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
        t->built++;
        t->inlined += f->inlined;
        for (uint32_t b = 0; b < f->nblocks; b++)
            for (uint32_t k = 0; k < f->blocks[b].ninsts; k++) {
                JitInst *in = &f->insts[f->blocks[b].insts[k]];
                t->insts++;
                t->sends += in->op == JI_SEND;
                t->deopts += in->op == JI_DEOPT;
                t->guards += in->deopt >= 0 && in->op != JI_DEOPT;
            }
        jit_func_free(f);
    } else {
        t->refused++;
        tally_reason(t, reason);
        if (strict && !expected_refusal(reason)) {
            char name[200];
            class_method_name(m, name, sizeof name);
            fail_msg("%s refused: %s", name, reason);
        }
    }
    for (uint32_t i = 0; i < m->nliterals; i++) {
        Value l = m->literals[i];
        if (som_is_obj(l) && som_hdr(l)->kind == OBJ_METHOD && ((SomMethod *)l)->kind == MK_BLOCK)
            build_one(vm, (SomMethod *)l, o, t, strict);
    }
}

/* Builds every method of cls (instance and class side). */
static void build_class(SomVM *vm, SomClass *cls, const JitBuildOpts *o, Tally *t, bool strict) {
    SomClass *sides[2] = {cls, cls->h.cls};
    for (int k = 0; k < 2; k++) {
        SomArray *ms = sides[k]->methods;
        for (uint64_t i = 0; ms && i < ms->len; i++) {
            SomMethod *m = (SomMethod *)ms->items[i];
            if (t->seen) {
                char nm[96];
                class_method_name(m, nm, sizeof nm);
                bool dup = false;
                for (int s = 0; s < t->nseen && !dup; s++)
                    dup = !strcmp(t->seen[s], nm);
                if (dup || t->nseen == 20000) continue;
                strcpy(t->seen[t->nseen++], nm);
            }
            build_one(vm, m, o, t, strict);
        }
    }
}

/* Every class the VM knows by a global name. */
static void build_all_classes(SomVM *vm, const JitBuildOpts *o, Tally *t, bool strict) {
    for (uint32_t i = 0; i <= vm->symbols.mask; i++) {
        SomString *sym = vm->symbols.slots[i];
        if (!sym || !sym->gval || !som_is_obj(sym->gval)) continue;
        if (som_hdr(sym->gval)->kind != OBJ_CLASS) continue;
        SomClass *c = (SomClass *)sym->gval;
        if (c->is_meta || c->name != sym) continue;
        build_class(vm, c, o, t, strict);
    }
}

/* ---- an evaluator of the IR ------------------------------------------------------------ *
 * Runs a function without calls (no SEND, allocation of blocks or contexts, NLR) on given
 * receiver and arguments, so that built and optimized IR can be checked against what the
 * interpreter answers.  Answers EV_OK with *out, EV_DEOPT with the reason, or EV_UNSUPPORTED. */

enum { EV_OK, EV_DEOPT, EV_UNSUPPORTED };

static int ir_eval(const JitFunc *f, const Value *args, Value *out, int *reason) {
    SomVM *vm = f->vm;
    uint64_t *v = calloc(f->ninsts + 1, sizeof *v);
    int32_t b = 0, from = -1;
    int rc = EV_UNSUPPORTED;
    for (long steps = 0; steps < 10000000; steps++) {
        const JitBlock *bb = &f->blocks[b];
        /* phis first, all at once (they read the values of the predecessor) */
        uint32_t np = 0;
        while (np < bb->ninsts && f->insts[bb->insts[np]].op == JI_PHI)
            np++;
        if (np) {
            uint32_t p = 0;
            while (p < bb->npreds && bb->preds[p] != from)
                p++;
            uint64_t tmp[64];
            assert_true(np <= 64 && p < bb->npreds);
            for (uint32_t i = 0; i < np; i++)
                tmp[i] = v[f->insts[bb->insts[i]].phi[p]];
            for (uint32_t i = 0; i < np; i++)
                v[bb->insts[i]] = tmp[i];
        }
        int32_t next = -1;
        for (uint32_t i = np; i < bb->ninsts && next < 0; i++) {
            JitRef r = bb->insts[i];
            const JitInst *in = &f->insts[r];
            uint64_t a = in->nargs > 0 && in->a[0] >= 0 ? v[in->a[0]] : 0;
            uint64_t c = in->nargs > 1 && in->a[1] >= 0 ? v[in->a[1]] : 0;
            int64_t x = (int64_t)a, y = (int64_t)c, z = 0;
            double dx, dy, dz;
            memcpy(&dx, &a, 8);
            memcpy(&dy, &c, 8);
            bool fail = false;
            switch (in->op) {
            case JI_CONST:
                v[r] = in->cval;
                break;
            case JI_CONST_INT:
                v[r] = (uint64_t)in->ival;
                break;
            case JI_CONST_DBL:
                memcpy(&v[r], &in->dval, 8);
                break;
            case JI_ARG:
                v[r] = args[in->ival];
                break;
            case JI_IS_INT:
                v[r] = som_is_int(a);
                break;
            case JI_IS_DBL:
                v[r] = num_is_double(a);
                break;
            case JI_HAS_CLASS:
                v[r] = som_class_of(vm, a) == in->cls;
                break;
            case JI_IS_KIND:
                v[r] = som_is_obj(a) && som_hdr(a)->kind == in->ival;
                break;
            case JI_GUARD:
                fail = !a;
                break;
            case JI_UNBOX_INT:
                v[r] = (uint64_t)som_int(a);
                break;
            case JI_BOX_INT:
                v[r] = som_mkint(x);
                break;
            case JI_UNBOX_DBL:
                dz = num_double(a);
                memcpy(&v[r], &dz, 8);
                break;
            case JI_INT_TO_DBL:
                dz = (double)x;
                memcpy(&v[r], &dz, 8);
                break;
            case JI_BOX_DBL:
                v[r] = num_new_double(vm, dx);
                break;
            case JI_BOOL_TO_VALUE:
                v[r] = a ? vm->true_ : vm->false_;
                break;
            case JI_VALUE_TO_BOOL:
                v[r] = a == vm->true_;
                break;
            case JI_IADD:
                fail = __builtin_add_overflow(x, y, &z) || !som_fits_smallint(z);
                v[r] = (uint64_t)z;
                break;
            case JI_ISUB:
                fail = __builtin_sub_overflow(x, y, &z) || !som_fits_smallint(z);
                v[r] = (uint64_t)z;
                break;
            case JI_IMUL:
                fail = __builtin_mul_overflow(x, y, &z) || !som_fits_smallint(z);
                v[r] = (uint64_t)z;
                break;
            case JI_IDIV:
                fail = y == 0;
                v[r] = fail ? 0 : (uint64_t)(x / y);
                break;
            case JI_IMOD:
                fail = y == 0;
                z = fail ? 0 : x % y;
                if (z != 0 && ((z ^ y) < 0)) z += y;
                v[r] = (uint64_t)z;
                break;
            case JI_IAND:
                v[r] = a & c;
                break;
            case JI_IXOR:
                v[r] = a ^ c;
                break;
            case JI_ICMP:
            case JI_DCMP: {
                bool d = in->op == JI_DCMP;
                int lt = d ? dx < dy : x < y, eq = d ? dx == dy : x == y, gt = d ? dx > dy : x > y;
                int res[] = {lt, gt, lt || eq, gt || eq, eq, !eq};
                v[r] = (uint64_t)res[in->cmp];
                break;
            }
            case JI_DADD:
            case JI_DSUB:
            case JI_DMUL:
            case JI_DDIV:
            case JI_DSQRT:
                dz = in->op == JI_DADD   ? dx + dy
                     : in->op == JI_DSUB ? dx - dy
                     : in->op == JI_DMUL ? dx * dy
                     : in->op == JI_DDIV ? dx / dy
                                         : sqrt(dx);
                memcpy(&v[r], &dz, 8);
                break;
            case JI_VEQ:
                v[r] = a == c;
                break;
            case JI_BNOT:
                v[r] = !a;
                break;
            case JI_LOAD_FIELD:
                v[r] = ((SomInstance *)a)->fields[in->ival];
                break;
            case JI_STORE_FIELD:
                ((SomInstance *)a)->fields[in->ival] = c;
                break;
            case JI_ARRAY_LEN:
                v[r] = ((SomArray *)a)->len;
                break;
            case JI_ARRAY_LOAD:
                v[r] = ((SomArray *)a)->items[y];
                break;
            case JI_ARRAY_STORE:
                ((SomArray *)a)->items[y] = v[in->a[2]];
                break;
            case JI_STRING_LEN:
                v[r] = ((SomString *)a)->len;
                break;
            case JI_GLOBAL_LOAD:
                v[r] = in->sym->gval;
                break;
            case JI_SAFEPOINT:
            case JI_SET_POS:
                break;
            case JI_NEW_BLOCK:
                if (!in->virt) goto out;
                break;
            case JI_JUMP:
                next = bb->succ[0];
                break;
            case JI_BRANCH:
                next = bb->succ[a ? 0 : 1];
                break;
            case JI_RETURN:
                *out = a;
                rc = EV_OK;
                goto out;
            case JI_DEOPT:
                fail = true;
                break;
            default:
                goto out; /* SEND, contexts, NLR...: not evaluated here */
            }
            if (fail && jit_op_can_deopt(in->op)) {
                *reason = in->reason;
                rc = EV_DEOPT;
                goto out;
            }
        }
        from = b;
        b = next;
    }
out:
    free(v);
    return rc;
}

/* Evaluates cls>>sel built (before and after optimization: both must agree); answers the
 * evaluator's code, the result in *out. */
static int eval_method(SomVM *vm, const char *cls, const char *sel, const Value *args, Value *out,
                       int *reason) {
    char err[200];
    JitFunc *f = jit_build(vm, method(vm, cls, sel), NULL, err, sizeof err);
    if (!f) fail_msg("%s>>%s refused: %s", cls, sel, err);
    Value r1 = 0, r2 = 0;
    int why1 = -1, why2 = -1;
    int rc1 = ir_eval(f, args, &r1, &why1);
    jit_optimize(f);
    int rc2 = ir_eval(f, args, &r2, &why2);
    jit_func_free(f);
    assert_int_equal(rc1, rc2);
    assert_int_equal(why1, why2);
    if (rc1 == EV_OK && (!num_is_double(r1) || !num_is_double(r2)))
        assert_true(r1 == r2);
    else if (rc1 == EV_OK)
        assert_true(num_double(r1) == num_double(r2));
    *out = r1;
    *reason = why1;
    return rc1;
}

/* ---- the test program ----------------------------------------------------------------- */

static const char jit_t[] =
    "JitT = (\n"
    "  | f |\n"
    "  sum = ( | sum | sum := 0. 1 to: 100 do: [:i | sum := sum + i]. ^sum )\n"
    "  helper: x = ( | y | y := x * 2. ^y + 1 )\n"
    "  mono = ( | r | r := 0. 1 to: 10 do: [:i | r := r + (self helper: i)]. ^r )\n"
    "  poly: o = ( ^o val )\n"
    "  doit: a = ( | s | s := 0. a do: [:e | s := s + e]. ^s )\n"
    "  find: a = ( a do: [:e | e > 5 ifTrue: [^e]]. ^nil )\n"
    "  never: x = ( x > 0 ifTrue: [^self foo: x]. ^0 )\n"
    "  add: a to: b = ( ^a + b )\n"
    "  dsum = ( | s | s := 0.0. 1 to: 10 do: [:i | s := s + 1.5]. ^s )\n"
    "  cond: a = ( ^(a > 3 and: [a < 10]) ifTrue: ['y'] ifFalse: ['n'] )\n"
    "  wloop = ( | i a | i := 0. a := Array new: 5. [i < 5] whileTrue: [i := i + 1. a at: i "
    "put: i * i]. ^a )\n"
    "  fld = ( f := 3. ^f + 1 )\n"
    "  mixed = ( | x | x := 0. 1 to: 10 do: [:i | x := x + 0.5]. ^x )\n"
    "  primes: a = ( | c | c := 0. 1 to: a length do: [:i | (a at: i) ifTrue: [c := c + 1]]. "
    "^c )\n"
    "  fdiv: a by: b = ( ^a // b - (a % b) + (a / b) )\n"
    "  nfib: n = ( n < 2 ifTrue: [^1]. ^(self nfib: n - 1) + (self nfib: n - 2) + 1 )\n"
    "  walk: n = ( | a b c | n < 2 ifTrue: [^1]. a := n * 3. b := a - n. c := b + a.\n"
    "    ^(self walk: n - 1) + (self walk: n - 2) + c - b + 1 )\n"
    "  rare: x = ( | y | y := x * 3. y := y + x. y := y - 1. ^y + x )\n"
    "  often: x = ( | y | y := x * 5. y := y - x. ^y - 1 )\n"
    "  budget: n = ( | s | s := 0. n = 1 ifTrue: [s := self rare: n].\n"
    "    1 to: 10 do: [:i | s := s + (self often: i)]. ^s )\n"
    "  run = (\n"
    "    | arr |\n"
    "    self primes: (Array new: 3 withAll: true). self fdiv: 7 by: 2. self fdiv: -7 by: 2.\n"
    "    self sum. self mono. self dsum. self fld. self mixed.\n"
    "    1 to: 20 do: [:i | self poly: JitA new. self poly: JitB new].\n"
    "    arr := Array new: 10. 1 to: 10 do: [:i | arr at: i put: i].\n"
    "    1 to: 5 do: [:i | self doit: arr. self find: arr].\n"
    "    1 to: 5 do: [:i | self never: 0 - i].\n"
    "    1 to: 5 do: [:i | self add: i to: 1. self cond: i].\n"
    "    self nfib: 12. self walk: 12.\n"
    "    1 to: 8 do: [:i | self budget: i].\n"
    "    self wloop ) )\n";

static const char jit_a[] = "JitA = ( val = ( | x | x := 3. ^x * x ) )\n";
static const char jit_b[] = "JitB = ( val = ( | x | x := 4. ^x + x ) )\n";

static SomVM *test_vm(char **dir_out) {
    char *dir = vt_tempdir();
    vt_write_class(dir, "JitT", jit_t);
    vt_write_class(dir, "JitA", jit_a);
    vt_write_class(dir, "JitB", jit_b);
    char *argv[] = {"JitT"};
    SomVM *vm = run_kept(dir, 1, argv);
    *dir_out = dir;
    return vm;
}

static void done_vm(SomVM *vm, char *dir) {
    som_vm_free(vm);
    vt_rmdir(dir);
    free(dir);
}

/* ---- tests ------------------------------------------------------------------------------ */

static void test_every_method_builds(void **state) {
    (void)state;
    char *dir;
    SomVM *vm = test_vm(&dir);
    JitBuildOpts o;
    jit_build_defaults(&o);
    Tally t = {0};
    build_all_classes(vm, &o, &t, true);
    assert_true(t.built > 100);
    o.unreached_traps = false;
    Tally t2 = {0};
    build_all_classes(vm, &o, &t2, true);
    assert_int_equal(t.built, t2.built);
    /* other limits: no inlining at all, one class per site, no block inlining */
    jit_build_defaults(&o);
    o.max_inline_depth = 0;
    o.max_poly = 1;
    Tally t3 = {0};
    build_all_classes(vm, &o, &t3, true);
    assert_int_equal(t.built, t3.built);
    jit_build_defaults(&o);
    o.inline_blocks = false;
    o.max_inline_depth = 2;
    o.max_total_size = 50;
    Tally t4 = {0};
    build_all_classes(vm, &o, &t4, true);
    assert_int_equal(t.built, t4.built);
    done_vm(vm, dir);
}

static void test_counted_loop_is_unboxed(void **state) {
    (void)state;
    char *dir;
    SomVM *vm = test_vm(&dir);
    char *ir = ir_of(vm, "JitT", "sum", NULL, NULL);
    assert_int_equal(count(ir, "SEND"), 0);
    assert_true(count(ir, "= IADD") >= 1);
    assert_true(count(ir, ":int = PHI") >= 2); /* i and sum */
    assert_int_equal(count(ir, ":value = PHI"), 0);
    assert_true(count(ir, "SAFEPOINT") >= 1);
    free(ir);
    done_vm(vm, dir);
}

static void test_monomorphic_inlined(void **state) {
    (void)state;
    char *dir;
    SomVM *vm = test_vm(&dir);
    JitFunc *f;
    char *ir = ir_of(vm, "JitT", "mono", NULL, &f);
    /* self helper: - self's class is not known in the root, so one class guard */
    assert_int_equal(count(ir, "HAS_CLASS"), 1);
    assert_int_equal(count(ir, "SEND"), 0);
    assert_true(count(ir, "SET_POS") >= 2);
    assert_true(f->inlined >= 1);
    /* the frame state of the IMUL in helper: has both activations */
    SomMethod *mono = method(vm, "JitT", "mono"), *helper = method(vm, "JitT", "helper:");
    bool found = false;
    for (uint32_t i = 0; i < f->ninsts; i++) {
        JitInst *in = &f->insts[i];
        if (in->dead || in->op != JI_IMUL) continue;
        found = true;
        assert_true(in->deopt >= 0);
        JitState *st = &f->states[in->deopt];
        assert_int_equal(st->nscopes, 2);
        assert_ptr_equal(st->scopes[0].method, mono);
        assert_ptr_equal(st->scopes[1].method, helper);
        assert_int_equal(st->scopes[0].resume_bci, st->scopes[0].bci + 3); /* after SEND */
        assert_int_equal(mono->code[st->scopes[0].bci], BC_SEND);
        assert_int_equal(st->scopes[1].bci, st->scopes[1].resume_bci);
        assert_int_equal(helper->code[st->scopes[1].bci], BC_MUL);
        assert_int_equal(st->scopes[0].nslots, 1u + mono->nargs + mono->nlocals);
        assert_int_equal(st->scopes[1].nslots, 1u + helper->nargs + helper->nlocals);
        assert_int_equal(st->scopes[1].nstack, 2);
        /* the caller's stack does not hold the pending send's receiver and argument */
        assert_int_equal(st->scopes[0].nstack, 2); /* to:do:'s receiver, r */
        assert_true(f->pos[in->pos].parent != JIT_POS_NONE);
        assert_ptr_equal(f->pos[in->pos].method, helper);
        assert_ptr_equal(f->pos[f->pos[in->pos].parent].method, mono);
    }
    assert_true(found);
    jit_func_free(f);
    free(ir);
    done_vm(vm, dir);
}

static void test_polymorphic_two_guards(void **state) {
    (void)state;
    char *dir;
    SomVM *vm = test_vm(&dir);
    char *ir = ir_of(vm, "JitT", "poly:", NULL, NULL);
    assert_int_equal(count(ir, "HAS_CLASS"), 2);
    assert_int_equal(count(ir, " JitA\n"), 1);
    assert_int_equal(count(ir, " JitB\n"), 1);
    assert_int_equal(count(ir, "SEND"), 0);
    assert_int_equal(count(ir, "DEOPT"), 0);
    assert_true(count(ir, "[deopt s") >= 1); /* the last class check deoptimizes */
    free(ir);
    done_vm(vm, dir);
}

/* Without a profile (or inside its noise band), a receiver class at a polymorphic site is
 * inlined when its cache entry has 1/8 of the site's hits or at least inline_hits of them:
 * a share alone follows the program's phase at the moment of compiling (DeltaBlue's
 * constraint classes, 9.6% of a site's hits in one run and 14% in another), a count of
 * a thousand calls is worth the inlining in any phase. */
static void test_cache_hits_decide_inlining(void **state) {
    (void)state;
    char *dir;
    SomVM *vm = test_vm(&dir);
    SomMethod *m = method(vm, "JitT", "poly:");
    CallSite *cs = NULL;
    for (uint32_t i = 0; i < m->nsites; i++)
        if (!strcmp(m->sites[i].selector->bytes, "val")) cs = &m->sites[i];
    assert_non_null(cs);
    int ka = -1, kb = -1;
    for (int k = 0; k < SOM_IC_SIZE; k++)
        if (cs->ic[k].cls && !strcmp(cs->ic[k].cls->name->bytes, "JitA"))
            ka = k;
        else if (cs->ic[k].cls && !strcmp(cs->ic[k].cls->name->bytes, "JitB"))
            kb = k;
    assert_true(ka >= 0 && kb >= 0);
    JitBuildOpts o;
    jit_build_defaults(&o);
    o.tiny_size = 0; /* JitA>>val and JitB>>val are callees like any other */
    static const struct {
        uint64_t a, b, floor;
        int sends; /* JitA left as a send (then JitB alone is checked) */
    } cases[] = {
        {100, 10000, 1024, 1},        /* 1% and 100 hits: a send */
        {2000, 30000, 1024, 0},       /* 6%, but 2000 hits: inlined */
        {2000, 30000, UINT64_MAX, 1}, /* the share alone: a send */
        {2000, 10000, UINT64_MAX, 0}, /* 17%: inlined */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cs->ic[ka].hits = cases[i].a;
        cs->ic[kb].hits = cases[i].b;
        o.inline_hits = cases[i].floor;
        char *ir = ir_of(vm, "JitT", "poly:", &o, NULL);
        if (count(ir, " #val") != cases[i].sends || count(ir, "HAS_CLASS") != 2 - cases[i].sends)
            fail_msg("case %zu: %d sends of #val, %d class checks:\n%s", i, count(ir, " #val"),
                     count(ir, "HAS_CLASS"), ir);
        free(ir);
    }
    done_vm(vm, dir);
}

static void test_do_block_inlined(void **state) {
    (void)state;
    char *dir;
    SomVM *vm = test_vm(&dir);
    char *ir = ir_of(vm, "JitT", "doit:", NULL, NULL);
    assert_int_equal(count(ir, "SEND"), 0);
    assert_int_equal(count(ir, "NEW_BLOCK") - count(ir, " virt"), 0);
    assert_true(count(ir, "ARRAY_LOAD") >= 1);
    assert_true(count(ir, "CTX_STORE") >= 1);
    free(ir);
    done_vm(vm, dir);
}

static void test_nlr_to_root_is_return(void **state) {
    (void)state;
    char *dir;
    SomVM *vm = test_vm(&dir);
    char *ir = ir_of(vm, "JitT", "find:", NULL, NULL);
    assert_int_equal(count(ir, " NLR"), 0);
    assert_int_equal(count(ir, "SEND"), 0);
    assert_true(count(ir, "RETURN") >= 2);
    free(ir);
    done_vm(vm, dir);
}

/* A block compiled as the root: the block is ARG 0, self and the context come from the
 * frame, and its ^ is a real non-local return. */
static void test_root_block_nlr(void **state) {
    (void)state;
    char *dir;
    SomVM *vm = test_vm(&dir);
    SomMethod *find = method(vm, "JitT", "find:"), *blk = NULL;
    for (uint32_t i = 0; i < find->nliterals; i++)
        if (som_is_obj(find->literals[i]) && som_hdr(find->literals[i])->kind == OBJ_METHOD)
            blk = (SomMethod *)find->literals[i];
    assert_non_null(blk);
    char reason[200];
    JitFunc *f = build_checked(vm, blk, NULL, reason, sizeof reason);
    assert_non_null(f);
    char *ir = print_ir(f);
    assert_int_equal(count(ir, " = NLR "), 1);
    assert_int_equal(count(ir, "= SELF"), 1);
    assert_int_equal(count(ir, "= FRAME_CTX"), 1);
    assert_int_equal(count(ir, "= ARG 0"), 1);
    assert_int_equal(count(ir, "= ARG 1"), 1);
    free(ir);
    jit_func_free(f);
    done_vm(vm, dir);
}

static void test_unreached_send(void **state) {
    (void)state;
    char *dir;
    SomVM *vm = test_vm(&dir);
    JitBuildOpts o;
    jit_build_defaults(&o);
    char *ir = ir_of(vm, "JitT", "never:", &o, NULL);
    assert_int_equal(count(ir, " #foo:"), 0);
    assert_true(count(ir, "DEOPT [deopt") >= 1);
    free(ir);
    o.unreached_traps = false;
    ir = ir_of(vm, "JitT", "never:", &o, NULL);
    assert_int_equal(count(ir, " #foo:"), 1);
    assert_int_equal(count(ir, "DEOPT"), 0);
    free(ir);
    done_vm(vm, dir);
}

static void test_overflowed_site_sends(void **state) {
    (void)state;
    char *dir;
    SomVM *vm = test_vm(&dir);
    char *ir = ir_of(vm, "JitT", "add:to:", NULL, NULL);
    assert_int_equal(count(ir, " #+"), 0);
    assert_int_equal(count(ir, "IADD"), 1);
    free(ir);
    SomMethod *m = method(vm, "JitT", "add:to:");
    for (uint32_t i = 0; i < m->nsites; i++)
        if (!strcmp(m->sites[i].selector->bytes, "+")) m->sites[i].argkinds |= TF_OVERFLOWED;
    ir = ir_of(vm, "JitT", "add:to:", NULL, NULL);
    assert_int_equal(count(ir, " #+"), 1);
    assert_int_equal(count(ir, "IADD"), 0);
    free(ir);
    done_vm(vm, dir);
}

static void test_double_loop_unboxed(void **state) {
    (void)state;
    char *dir;
    SomVM *vm = test_vm(&dir);
    char *ir = ir_of(vm, "JitT", "dsum", NULL, NULL);
    assert_int_equal(count(ir, "SEND"), 0);
    assert_true(count(ir, "DADD") >= 1);
    assert_true(count(ir, ":dbl = PHI") >= 1);
    free(ir);
    done_vm(vm, dir);
}

static void test_conditionals_and_fields(void **state) {
    (void)state;
    char *dir;
    SomVM *vm = test_vm(&dir);
    char *ir = ir_of(vm, "JitT", "cond:", NULL, NULL);
    assert_int_equal(count(ir, "SEND"), 0);
    free(ir);
    ir = ir_of(vm, "JitT", "wloop", NULL, NULL);
    assert_true(count(ir, "ARRAY_STORE") >= 1);
    assert_true(count(ir, "[deopt s") >= 1);
    free(ir);
    ir = ir_of(vm, "JitT", "fld", NULL, NULL);
    /* the load is the value just stored; f + 1 folds */
    assert_int_equal(count(ir, "STORE_FIELD"), 1);
    assert_int_equal(count(ir, "LOAD_FIELD"), 0);
    assert_int_equal(count(ir, "CONST 4\n"), 1);
    assert_int_equal(count(ir, "IADD"), 0);
    free(ir);
    done_vm(vm, dir);
}

/* A loop-carried value that starts as an integer and becomes something else: the build
 * restarts with the phi boxed. */
static void test_phi_type_restart(void **state) {
    (void)state;
    char *dir;
    SomVM *vm = test_vm(&dir);
    char *ir = ir_of(vm, "JitT", "mixed", NULL, NULL);
    assert_true(count(ir, ":value = PHI") >= 1);
    assert_true(count(ir, " #+") >= 1);
    free(ir);
    done_vm(vm, dir);
}

static uint64_t edge_weight(void *arg, SomMethod *caller, uint32_t bci, SomMethod *callee) {
    (void)caller;
    (void)bci;
    (void)callee;
    return *(uint64_t *)arg;
}

/* With a profile, a callee is inlined where its edge is hot relative to the root (1/50 of
 * its weight), when the samples say so for sure; a count inside the band that sampling noise
 * leaves around the threshold (w +- 2 sqrt(w)) decides nothing, and the inline cache's
 * counts do (helper: is the site's only target: inlined).  A callee within tiny_size is
 * inlined wherever it is reached. */
static void test_profile_decides_inlining(void **state) {
    (void)state;
    char *dir;
    SomVM *vm = test_vm(&dir);
    uint64_t w = 0;
    JitProfile p = {.arg = &w, .edge_weight = edge_weight, .root_weight = 1000};
    JitBuildOpts o;
    jit_build_defaults(&o);
    o.profile = &p;
    SomMethod *helper = method(vm, "JitT", "helper:");
    assert_true(helper->code_len > 12 && helper->code_len <= o.tiny_size);
    char *ir = ir_of(vm, "JitT", "mono", &o, NULL); /* tiny: inlined at any weight */
    assert_int_equal(count(ir, " #helper:"), 0);
    free(ir);
    o.tiny_size = 12;  /* the rest sees helper: as a callee above tiny_size */
    o.small_calls = 0; /* and its cache hits do not override a cold weight (below) */
    static const struct {
        uint64_t w;
        bool inlined;
    } cases[] = {
        {0, false}, /* 0 + 2 sqrt(1) + 1 = 3 < 20: surely cold */
        {8, false}, /* 8 + 2 sqrt(9) + 1 = 15 < 20 */
        {12, true}, /* 12 + 2 sqrt(13) + 1 = 20.2: cannot tell, the cache decides */
        {20, true}, /* at the threshold */
        {29, true}, /* 29 - 2 sqrt(29) = 18.2 < 20: cannot tell either */
        {36, true}, /* 36 - 12 = 24 >= 20: surely hot */
        {500, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        w = cases[i].w;
        ir = ir_of(vm, "JitT", "mono", &o, NULL);
        if (count(ir, " #helper:") != (cases[i].inlined ? 0 : 1))
            fail_msg("weight %llu: helper: %s", (unsigned long long)w,
                     cases[i].inlined ? "not inlined" : "inlined");
        if (cases[i].inlined) assert_int_equal(count(ir, "SET_POS"), 2);
        free(ir);
    }
    /* without the band, the weight alone decides: 12 of 1000 is below 1/50 */
    o.sampled_band = false;
    w = 12;
    ir = ir_of(vm, "JitT", "mono", &o, NULL);
    assert_int_equal(count(ir, " #helper:"), 1);
    free(ir);
    /* a small callee called often is inlined even where its weight is surely cold (its
     * samples come from code that had it inlined); with fewer hits than inline_hits, or
     * above small_calls, the weight decides */
    o.sampled_band = true;
    w = 0;
    SomMethod *mono = method(vm, "JitT", "mono");
    CallSite *cs = NULL;
    for (uint32_t i = 0; i < mono->nsites; i++)
        if (!strcmp(mono->sites[i].selector->bytes, "helper:")) cs = &mono->sites[i];
    assert_non_null(cs);
    uint64_t hits = 0;
    for (int k = 0; k < SOM_IC_SIZE; k++)
        if (cs->ic[k].method == helper) hits = cs->ic[k].hits;
    assert_true(hits >= 1);
    static const struct {
        uint32_t small;
        uint64_t floor;
        bool inlined;
    } calls[] = {
        {64, 1, true},           /* small enough, hits >= the floor: inlined */
        {64, UINT64_MAX, false}, /* too few hits: the cold weight decides */
        {12, 1, false},          /* above small_calls: the cold weight decides */
    };
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) {
        o.small_calls = calls[i].small;
        o.inline_hits = calls[i].floor;
        ir = ir_of(vm, "JitT", "mono", &o, NULL);
        if (count(ir, " #helper:") != (calls[i].inlined ? 0 : 1))
            fail_msg("small_calls case %zu: helper: %s", i,
                     calls[i].inlined ? "not inlined" : "inlined");
        free(ir);
    }
    done_vm(vm, dir);
}

/* The inlining budget goes to the most frequent activations first (inline_plan): budget:
 * sends rare: in 1 of its 8 runs, before a loop that sends often: 10 times a run.  With room
 * for one of the two, the loop's callee is inlined; spent in bytecode order, the budget went
 * to rare:.  With room for both, both are inlined. */
static void test_budget_spent_by_frequency(void **state) {
    (void)state;
    char *dir;
    SomVM *vm = test_vm(&dir);
    SomMethod *rare = method(vm, "JitT", "rare:"), *often = method(vm, "JitT", "often:");
    JitBuildOpts o;
    jit_build_defaults(&o);
    o.tiny_size = 0;
    uint32_t one = rare->code_len > often->code_len ? rare->code_len : often->code_len;
    uint32_t both = rare->code_len + often->code_len;
    assert_true(one < both);
    static const struct {
        bool plan, wide, rare, often; /* wide: room for both; inlined? */
    } cases[] = {
        {true, false, false, true},
        {false, false, true, false},
        {true, true, true, true},
        {false, true, true, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        o.inline_plan = cases[i].plan;
        o.max_total_size = cases[i].wide ? both : one;
        JitFunc *f;
        char *ir = ir_of(vm, "JitT", "budget:", &o, &f);
        if ((count(ir, " #rare:") == 0) != cases[i].rare ||
            (count(ir, " #often:") == 0) != cases[i].often)
            fail_msg("case %zu: rare: %s, often: %s", i, count(ir, " #rare:") ? "sent" : "inlined",
                     count(ir, " #often:") ? "sent" : "inlined");
        assert_int_equal(f->inlined, (int)cases[i].rare + (int)cases[i].often);
        jit_func_free(f);
        free(ir);
    }
    done_vm(vm, dir);
}

/* Recursion: a method appears max_recursion times in an inlining chain (twice: the root and
 * one inlined level), a small one (<= small_recursive bytecode bytes) max_recursion_small
 * times (three: 2 + 4 inlined activations, 8 calls left for nfib:). */
static void test_recursive_inlining(void **state) {
    (void)state;
    char *dir;
    SomVM *vm = test_vm(&dir);
    SomMethod *nfib = method(vm, "JitT", "nfib:"), *walk = method(vm, "JitT", "walk:");
    JitBuildOpts o;
    jit_build_defaults(&o);
    if (nfib->code_len > o.small_recursive ||
        !(walk->code_len > o.small_recursive && walk->code_len <= o.max_inline_size))
        fail_msg("nfib: %u bytes, walk: %u bytes", nfib->code_len, walk->code_len);
    JitFunc *f;
    char *ir = ir_of(vm, "JitT", "nfib:", &o, &f);
    assert_int_equal(f->inlined, 6);
    assert_int_equal(count(ir, " #nfib:"), 8);
    jit_func_free(f);
    free(ir);
    ir = ir_of(vm, "JitT", "walk:", &o, &f);
    assert_int_equal(f->inlined, 2);
    assert_int_equal(count(ir, " #walk:"), 4);
    jit_func_free(f);
    free(ir);
    o.small_recursive = 0; /* every method: two activations */
    ir = ir_of(vm, "JitT", "nfib:", &o, &f);
    assert_int_equal(f->inlined, 2);
    assert_int_equal(count(ir, " #nfib:"), 4);
    jit_func_free(f);
    free(ir);
    o.max_recursion = o.max_recursion_small = 1; /* never inlined into itself */
    ir = ir_of(vm, "JitT", "nfib:", &o, &f);
    assert_int_equal(f->inlined, 0);
    assert_int_equal(count(ir, " #nfib:"), 2);
    jit_func_free(f);
    free(ir);
    done_vm(vm, dir);
}

/* The IR computes what the interpreter computes (and deoptimizes where it cannot). */
static void test_ir_evaluates(void **state) {
    (void)state;
    char *dir;
    SomVM *vm = test_vm(&dir);
    Value self = SOM_V(som_instance_new(vm, find_class(vm, "JitT"))), r;
    int why;
    Value a0[] = {self};
    assert_int_equal(eval_method(vm, "JitT", "sum", a0, &r, &why), EV_OK);
    assert_true(r == som_mkint(5050));
    assert_int_equal(eval_method(vm, "JitT", "dsum", a0, &r, &why), EV_OK);
    assert_true(num_is_double(r) && num_double(r) == 15.0);
    assert_int_equal(eval_method(vm, "JitT", "mono", a0, &r, &why), EV_OK);
    assert_true(r == som_mkint(120)); /* sum of 2i+1 for i = 1..10 */
    assert_int_equal(eval_method(vm, "JitT", "fld", a0, &r, &why), EV_OK);
    assert_true(r == som_mkint(4));
    for (int i = 0; i < 12; i++) {
        Value a1[] = {self, som_mkint(i)};
        assert_int_equal(eval_method(vm, "JitT", "cond:", a1, &r, &why), EV_OK);
        const char *want = i > 3 && i < 10 ? "y" : "n";
        assert_string_equal(((SomString *)r)->bytes, want);
    }
    Value a2[] = {self, som_mkint(3), som_mkint(4)};
    assert_int_equal(eval_method(vm, "JitT", "add:to:", a2, &r, &why), EV_OK);
    assert_true(r == som_mkint(7));
    Value a3[] = {self, som_mkint(SOM_SMALLINT_MAX), som_mkint(1)};
    assert_int_equal(eval_method(vm, "JitT", "add:to:", a3, &r, &why), EV_DEOPT);
    assert_int_equal(why, JDR_OVERFLOW);
    Value a4[] = {self, vm->nil, som_mkint(1)};
    assert_int_equal(eval_method(vm, "JitT", "add:to:", a4, &r, &why), EV_DEOPT);
    assert_int_equal(why, JDR_TYPE);
    /* floored %, truncated /, // a Double: 7 // 2 - (7 % 2) + (7 / 2) = 3.5 - 1 + 3 */
    Value a5[] = {self, som_mkint(7), som_mkint(2)};
    assert_int_equal(eval_method(vm, "JitT", "fdiv:by:", a5, &r, &why), EV_OK);
    assert_true(num_is_double(r) && num_double(r) == 5.5);
    Value a6[] = {self, som_mkint(-7), som_mkint(2)}; /* -3.5 - 1 + -3 */
    assert_int_equal(eval_method(vm, "JitT", "fdiv:by:", a6, &r, &why), EV_OK);
    assert_true(num_is_double(r) && num_double(r) == -7.5);
    Value a7[] = {self, som_mkint(7), som_mkint(0)};
    assert_int_equal(eval_method(vm, "JitT", "fdiv:by:", a7, &r, &why), EV_DEOPT);
    SomArray *arr = som_array_new(vm, 7);
    for (int i = 0; i < 7; i++)
        arr->items[i] = i % 3 ? vm->true_ : vm->false_;
    Value a8[] = {self, SOM_V(arr)};
    assert_int_equal(eval_method(vm, "JitT", "primes:", a8, &r, &why), EV_OK);
    assert_true(r == som_mkint(4));
    arr->items[2] = vm->nil; /* not a boolean: the conditional deoptimizes */
    assert_int_equal(eval_method(vm, "JitT", "primes:", a8, &r, &why), EV_DEOPT);
    assert_int_equal(why, JDR_BOOLEAN);
    done_vm(vm, dir);
}

static void test_verifier_catches_errors(void **state) {
    (void)state;
    char *dir;
    SomVM *vm = test_vm(&dir);
    JitFunc *f;
    char *ir = ir_of(vm, "JitT", "sum", NULL, &f);
    free(ir);
    char err[200];
    assert_int_equal(jit_verify(f, err, sizeof err), 0);
    /* an operand of the wrong type */
    for (uint32_t i = 0; i < f->ninsts; i++) {
        JitInst *in = &f->insts[i];
        if (in->dead || in->op != JI_IADD) continue;
        JitRef save = in->a[0];
        in->a[0] = 0; /* ARG 0, a VALUE */
        assert_true(jit_verify(f, err, sizeof err) > 0);
        in->a[0] = save;
        int32_t d = in->deopt;
        in->deopt = -1;
        assert_true(jit_verify(f, err, sizeof err) > 0);
        assert_non_null(strstr(err, "frame state"));
        in->deopt = d;
        break;
    }
    assert_int_equal(jit_verify(f, err, sizeof err), 0);
    jit_func_free(f);
    done_vm(vm, dir);
}

/* ---- AWFY ------------------------------------------------------------------------------- */

static void test_awfy(void **state) {
    (void)state;
    const char *d = getenv("AWFY_SOM_DIR");
    struct stat st;
    char path[4096];
    if (!d || !*d) skip();
    snprintf(path, sizeof path, "%s/Harness.som", d);
    if (stat(path, &st) != 0) skip();
    /* name, outer iterations, inner iterations (sizes the harness can verify) */
    static const char *const benches[][3] = {
        {"Bounce", "2", "20"},  {"Mandelbrot", "5", "1"}, {"Permute", "2", "5"},
        {"Queens", "2", "5"},   {"Sieve", "2", "5"},      {"Storage", "2", "2"},
        {"Towers", "2", "3"},   {"List", "2", "5"},       {"NBody", "20", "1"},
        {"Richards", "2", "1"}, {"DeltaBlue", "2", "20"}, {"Json", "2", "1"},
        {"CD", "2", "10"},      {"Havlak", "1", "1"},
    };
    char cp[8192];
    snprintf(cp, sizeof cp, "%s:%s/Core:%s/CD:%s/DeltaBlue:%s/Json:%s/NBody:%s/Richards:%s/Havlak",
             d, d, d, d, d, d, d, d);
    Tally total = {0};
    total.seen = calloc(20000, sizeof *total.seen);
    bool dumped = false;
    for (size_t i = 0; i < sizeof benches / sizeof *benches; i++) {
        char *argv[] = {"Harness", (char *)benches[i][0], (char *)benches[i][1],
                        (char *)benches[i][2]};
        SomVM *vm = run_kept(cp, 4, argv);
        JitBuildOpts o;
        jit_build_defaults(&o);
        Tally t = {.seen = total.seen, .nseen = total.nseen};
        build_all_classes(vm, &o, &t, false);
        total.nseen = t.nseen;
        total.executed += t.executed;
        total.blocks += t.blocks;
        total.methods += t.methods;
        total.built += t.built;
        total.refused += t.refused;
        total.inlined += t.inlined;
        total.sends += t.sends;
        total.guards += t.guards;
        total.deopts += t.deopts;
        total.insts += t.insts;
        total.ns += t.ns;
        for (int r = 0; r < t.nreasons; r++)
            for (int k = 0; k < t.rcount[r]; k++)
                tally_reason(&total, t.reasons[r]);
        /* JITIR_DUMP=Class>>selector prints that method's IR (from the first run of it) */
        const char *dump = getenv("JITIR_DUMP");
        if (dump && strstr(dump, ">>") && !dumped) {
            char cn[100];
            snprintf(cn, sizeof cn, "%.*s", (int)(strstr(dump, ">>") - dump), dump);
            Value c = 0;
            SomMethod *m = NULL;
            if (som_global_get(vm, som_symbol_cstr(vm, cn), &c))
                m = som_lookup(vm, (SomClass *)c, som_symbol_cstr(vm, strstr(dump, ">>") + 2));
            JitFunc *f = m && m->invocations ? jit_build(vm, m, &o, path, 100) : NULL;
            if (f) {
                jit_optimize(f);
                jit_print(f, stderr);
                jit_func_free(f);
                dumped = true;
            }
        }
        som_vm_free(vm);
    }
    fprintf(stderr,
            "AWFY: %d distinct methods and blocks (%d of them blocks, %d run so far) over %zu "
            "benchmark VMs, %d built, %d refused\n",
            total.methods, total.blocks, total.executed, sizeof benches / sizeof *benches,
            total.built, total.refused);
    free(total.seen);
    for (int r = 0; r < total.nreasons; r++)
        fprintf(stderr, "  refused %4d: %s\n", total.rcount[r], total.reasons[r]);
    fprintf(stderr,
            "  in the built ones (optimized): %ld inlined activations, %ld instructions, %ld "
            "SENDs, %ld guards, %ld DEOPTs\n",
            total.inlined, total.insts, total.sends, total.guards, total.deopts);
    fprintf(stderr, "  jit_build + jit_optimize: %.1f us CPU per built method on average\n",
            total.built ? total.ns / 1e3 / total.built : 0.0);
    for (int r = 0; r < total.nreasons; r++)
        if (!expected_refusal(total.reasons[r]))
            fail_msg("unexpected refusal: %s", total.reasons[r]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_method_builds),
        cmocka_unit_test(test_counted_loop_is_unboxed),
        cmocka_unit_test(test_monomorphic_inlined),
        cmocka_unit_test(test_recursive_inlining),
        cmocka_unit_test(test_polymorphic_two_guards),
        cmocka_unit_test(test_cache_hits_decide_inlining),
        cmocka_unit_test(test_do_block_inlined),
        cmocka_unit_test(test_budget_spent_by_frequency),
        cmocka_unit_test(test_nlr_to_root_is_return),
        cmocka_unit_test(test_root_block_nlr),
        cmocka_unit_test(test_unreached_send),
        cmocka_unit_test(test_overflowed_site_sends),
        cmocka_unit_test(test_double_loop_unboxed),
        cmocka_unit_test(test_conditionals_and_fields),
        cmocka_unit_test(test_phi_type_restart),
        cmocka_unit_test(test_profile_decides_inlining),
        cmocka_unit_test(test_ir_evaluates),
        cmocka_unit_test(test_verifier_catches_errors),
        cmocka_unit_test(test_awfy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
