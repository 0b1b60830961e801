/* SPDX-License-Identifier: MIT */
/*
 * test_lifecycle.c - VM creation and options: the built-in core library,
 * a core library from a directory (SomOptions.corelib_dir), failures of
 * som_vm_new answered as NULL plus a message (never an exit), the value
 * stack and frame limits, the heap hint, and many VMs created and freed in
 * sequence (LeakSanitizer checks the frees in the asan preset).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmtest.h"

static void test_missing_core_library(void **state) {
    (void)state;
    char e[512] = "";
    SomOptions o = {0};
    o.corelib_dir = "/nonexistent/som-core-lib";
    assert_null(som_vm_new(&o, NULL, e, sizeof e));
    assert_string_equal(e, "class Class not found on the class path");
}

static void copy_core_lib(const char *to) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cp %s/*.som %s/", SOM_CORELIB_SRC, to);
    assert_int_equal(system(cmd), 0);
}

static void test_broken_core_library(void **state) {
    (void)state;
    char *dir = vt_tempdir();
    copy_core_lib(dir);
    vt_write_class(dir, "Object", "Object = nil (\n  foo = ( ^ )\n)");
    char e[1024] = "";
    SomOptions o = {0};
    o.corelib_dir = dir;
    assert_null(som_vm_new(&o, NULL, e, sizeof e));
    char want[4200];
    snprintf(want, sizeof want, "%s/Object.som:2:13: expected an expression, got ')'", dir);
    assert_string_equal(e, want);
    vt_rmdir(dir);
    free(dir);
}

static void test_core_library_from_directory(void **state) {
    (void)state;
    char *core = vt_tempdir();
    copy_core_lib(core);
    /* a class that exists only in the directory copy proves it is searched */
    vt_write_class(core, "Extra", "Extra = ( hello = ( ^'from the core directory' ) )");
    char *app = vt_tempdir();
    vt_write_class(app, "Hi",
                   "Hi = ( run = ( 'hi' println. (3 + 4) println. "
                   "Extra new hello println ) )");
    SomOptions o = {0};
    o.corelib_dir = core;
    VtRun r = vt_run(app, "Hi", &o);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "hi\n7\nfrom the core directory\n");
    vt_run_free(&r);
    r = vt_run(app, "Hi", NULL); /* built-in core library: no Extra */
    assert_int_equal(r.status, 1);
    assert_string_equal(r.out, "hi\n7\n\nERROR: Tried loading 'Extra' as a class, but failed.\n");
    vt_run_free(&r);
    /* the class path is searched before the core library: a user class
     * named like a core class replaces it */
    vt_write_class(app, "Pair", "Pair = ( run = ( 'my pair' println ) )");
    vt_write_class(app, "UsesPair", "UsesPair = ( run = ( Pair new run ) )");
    r = vt_run(app, "UsesPair", NULL);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "my pair\n");
    vt_run_free(&r);
    vt_rmdir(app);
    vt_rmdir(core);
    free(app);
    free(core);
}

static void test_limits_options(void **state) {
    (void)state;
    static const char src[] =
        "Deep = ( down: n = ( n = 0 ifTrue: [ ^0 ]. ^1 + (self down: n - 1) ) "
        "run = ( (self down: 3000) println ) )";
    SomOptions o = {0};
    VtRun r = vt_run_source("Deep", src, &o);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "3000\n");
    vt_run_free(&r);
    o.max_frames = 1000;
    r = vt_run_source("Deep", src, &o);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "Stack overflow"));
    vt_run_free(&r);
    o.max_frames = 0;
    o.stack_values = 4096; /* a small value stack runs out first */
    r = vt_run_source("Deep", src, &o);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "Stack overflow"));
    vt_run_free(&r);
    /* a large heap hint only moves the collection threshold */
    char e[512];
    SomOptions h = {0};
    h.heap_hint = 64u << 20;
    SomVM *vm = som_vm_new(&h, NULL, e, sizeof e);
    assert_non_null(vm);
    assert_true(vm->heap.threshold >= 64u << 20);
    som_vm_free(vm);
}

static void test_many_vms_in_sequence(void **state) {
    (void)state;
    char *dir = vt_tempdir();
    vt_write_class(dir, "Seq",
                   "Seq = ( run = ( | s | s := ''. 1 to: 50 do: [:i | s := s + i asString ]. "
                   "s length println ) )");
    for (int i = 0; i < 30; i++) {
        VtRun r = vt_run(dir, "Seq", NULL);
        assert_int_equal(r.status, 0);
        assert_string_equal(r.out, "91\n");
        vt_run_free(&r);
    }
    vt_rmdir(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_core_library),
        cmocka_unit_test(test_broken_core_library),
        cmocka_unit_test(test_core_library_from_directory),
        cmocka_unit_test(test_limits_options),
        cmocka_unit_test(test_many_vms_in_sequence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
