/* SPDX-License-Identifier: MIT */
/*
 * test_feedback.c - inline caches and type feedback (CallSite, object.h)
 * after running a program: per-site receiver classes with hit counts, the
 * megamorphic flag, miss counts, `argkinds` of arithmetic sites (recorded
 * only when the inline fast path cannot handle the operands), invocation
 * counters, and trivial methods that never get a frame.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmtest.h"

static const char prog[] =
    "Fb = (\n"
    "  | f |\n"
    "  f = ( ^f )\n"
    "  probe: x = ( ^x class )\n"
    "  mono: x = ( ^x abs )\n"
    "  objs = ( | a | a := Array new: 6. a at: 1 put: 1. a at: 2 put: 2.5. a at: 3 put: 'str'.\n"
    "    a at: 4 put: #sym. a at: 5 put: nil. a at: 6 put: true. ^a )\n"
    "  add: a to: b = ( ^a + b )\n"
    "  run = (\n"
    "    1 to: 10 do: [:i | self mono: i - 5 ].\n"
    "    self objs do: [:o | self probe: o ].\n"
    "    #(1 2.5 'str') do: [:o | self probe: o ].\n"
    "    1 to: 100 do: [:i | self add: i to: 1 ].\n"
    "    self add: 1.5 to: 2. self add: (2 raisedTo: 80) to: 1. self add: 'a' to: 'b'.\n"
    "    1 to: 7 do: [:i | self f ] ) )\n";

static SomVM *run_kept_opts(const SomOptions *opts, const char *dir, const char *src_main) {
    char e[512];
    SomVM *vm = som_vm_new(opts, dir, e, sizeof e);
    if (!vm) fail_msg("%s", e);
    char *argv[] = {(char *)src_main};
    int status = som_vm_run(vm, 1, argv);
    if (status != 0) fail_msg("program failed with status %d", status);
    return vm;
}

static SomVM *run_kept(const char *dir, const char *src_main) {
    return run_kept_opts(NULL, dir, src_main);
}

static SomMethod *method(SomVM *vm, const char *cls, const char *sel) {
    Value c = 0;
    assert_true(som_global_get(vm, som_symbol_cstr(vm, cls), &c));
    SomMethod *m = som_lookup(vm, (SomClass *)c, som_symbol_cstr(vm, sel));
    assert_non_null(m);
    return m;
}

static CallSite *site(SomMethod *m, const char *sel) {
    for (uint32_t i = 0; i < m->nsites; i++)
        if (!strcmp(m->sites[i].selector->bytes, sel)) return &m->sites[i];
    fail_msg("no site %s", sel);
    return NULL;
}

static int entries(const CallSite *cs) {
    int n = 0;
    for (int i = 0; i < SOM_IC_SIZE; i++)
        n += cs->ic[i].cls != NULL;
    return n;
}

static void test_inline_caches_and_feedback(void **state) {
    (void)state;
    char *dir = vt_tempdir();
    vt_write_class(dir, "Fb", prog);
    SomVM *vm = run_kept(dir, "Fb");

    /* monomorphic: one class, every call a hit */
    CallSite *abs = site(method(vm, "Fb", "mono:"), "abs");
    assert_int_equal(entries(abs), 1);
    assert_ptr_equal(abs->ic[0].cls, vm->integerClass);
    assert_int_equal(abs->ic[0].hits, 10);
    assert_int_equal(abs->misses, 1);
    assert_false(abs->megamorphic);

    /* six receiver classes at one site: four cached, then megamorphic */
    CallSite *cls = site(method(vm, "Fb", "probe:"), "class");
    assert_int_equal(entries(cls), SOM_IC_SIZE);
    assert_true(cls->megamorphic);
    assert_ptr_equal(cls->ic[0].cls, vm->integerClass);
    assert_ptr_equal(cls->ic[1].cls, vm->doubleClass);
    assert_ptr_equal(cls->ic[2].cls, vm->stringClass);
    assert_ptr_equal(cls->ic[3].cls, vm->symbolClass);
    assert_int_equal(cls->ic[0].hits, 2);
    assert_int_equal(cls->ic[2].hits, 2);

    /* arithmetic: every operand-kind pair the site saw, on the fast paths
     * (int+int, double+int) as on the slow path (bigint+int, other+other),
     * recorded as receiver*4+argument bits */
    CallSite *plus = site(method(vm, "Fb", "add:to:"), "+");
    uint32_t want = 1u << (TF_INT * 4 + TF_INT) | 1u << (TF_DOUBLE * 4 + TF_INT) |
                    1u << (TF_BIGINT * 4 + TF_INT) | 1u << (TF_OTHER * 4 + TF_OTHER);
    if (plus->argkinds != want) fail_msg("argkinds %#x, want %#x", plus->argkinds, want);

    /* invocation counters; the trivial getter never gets an activation */
    assert_int_equal(method(vm, "Fb", "mono:")->invocations, 10);
    assert_int_equal(method(vm, "Fb", "add:to:")->invocations, 103);
    SomMethod *getter = method(vm, "Fb", "f");
    assert_int_equal(getter->trivial, TRIV_GETTER);
    assert_int_equal(getter->invocations, 0);
    som_vm_free(vm);
    vt_rmdir(dir);
    free(dir);
}

/* `^true` / `^false` methods of the core library (Object>>isNil, notNil ...)
 * are compiled before true and false exist; they are still trivial. */
static void test_core_boolean_trivials(void **state) {
    (void)state;
    char *dir = vt_tempdir();
    vt_write_class(dir, "Tb",
                   "Tb = ( run = ( | n | n := 0.\n"
                   "  1 to: 5 do: [:i | (i isNil or: [nil notNil]) ifFalse: [ n := n + 1 ] ].\n"
                   "  n = 5 ifFalse: [ self error: 'wrong' ] ) )\n");
    SomVM *vm = run_kept(dir, "Tb");
    struct {
        const char *cls, *sel;
        Value v;
    } want[] = {{"Object", "isNil", vm->false_},
                {"Object", "notNil", vm->true_},
                {"Nil", "isNil", vm->true_},
                {"Nil", "notNil", vm->false_}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        SomMethod *m = method(vm, want[i].cls, want[i].sel);
        if (m->trivial != TRIV_LITERAL)
            fail_msg("%s>>%s is not a trivial literal method", want[i].cls, want[i].sel);
        assert_true(m->literals[m->trivial_arg] == want[i].v);
        assert_int_equal(m->invocations, 0);
    }
    som_vm_free(vm);
    vt_rmdir(dir);
    free(dir);
}

/* SomOptions.no_feedback without a JIT: the lean interpreter copy runs the same program with
 * the same inline caches (entries, misses, megamorphic flag) and counters, but records no
 * hit counts after an entry's first and no operand kinds. */
static void test_no_feedback(void **state) {
    (void)state;
    char *dir = vt_tempdir();
    vt_write_class(dir, "Fb", prog);
    SomOptions o = {.no_feedback = true};
    SomVM *vm = run_kept_opts(&o, dir, "Fb");
    CallSite *abs = site(method(vm, "Fb", "mono:"), "abs");
    assert_int_equal(entries(abs), 1);
    assert_ptr_equal(abs->ic[0].cls, vm->integerClass);
    assert_int_equal(abs->ic[0].hits, 1); /* set when the entry was filled */
    assert_int_equal(abs->misses, 1);
    CallSite *cls = site(method(vm, "Fb", "probe:"), "class");
    assert_int_equal(entries(cls), SOM_IC_SIZE);
    assert_true(cls->megamorphic);
    CallSite *plus = site(method(vm, "Fb", "add:to:"), "+");
    assert_int_equal(plus->argkinds, 0);
    assert_int_equal(method(vm, "Fb", "mono:")->invocations, 10);
    assert_int_equal(method(vm, "Fb", "add:to:")->invocations, 103);
    som_vm_free(vm);
    vt_rmdir(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inline_caches_and_feedback),
        cmocka_unit_test(test_core_boolean_trivials),
        cmocka_unit_test(test_no_feedback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
