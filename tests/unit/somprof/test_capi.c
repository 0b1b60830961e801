/*
 * test_capi.c - the compiler-controller C API of somprof (somprof_hot_methods,
 * somprof_site_targets) on a real VM in exact mode (no signals in unit tests): invocation
 * counts per method and monomorphic vs polymorphic call sites.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "somprof.h"

static const char poly_src[] = "Poly = (\n"
                               "    helper = ( ^1 + 1 )\n"
                               "    mono = ( 1 to: 10 do: [:i | self helper ] )\n"
                               "    poly: x = ( ^x asString )\n"
                               "    run = ( self mono. #(1 'a' 2 'b') do: [:e | self poly: e ] )\n"
                               ")\n";

static char dir[64];

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/somprof_capi_XXXXXX");
    if (!mkdtemp(dir)) return -1;
    char path[128];
    snprintf(path, sizeof path, "%s/Poly.som", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(poly_src, f);
    return fclose(f);
}

static int teardown(void **state) {
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/Poly.som", dir);
    unlink(path);
    rmdir(dir);
    return 0;
}

static SomMethod *find(const SomProfHot *h, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (h[i].name && !strcmp(h[i].name, name)) return h[i].method;
    return NULL;
}

static uint64_t self_of(const SomProfHot *h, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (h[i].name && !strcmp(h[i].name, name)) return h[i].self;
    return 0;
}

/* Targets seen at the send of `selector` in m. */
static size_t targets_at(SomVM *vm, SomMethod *m, const char *selector) {
    for (uint32_t k = 0; k < m->nsites; k++) {
        if (strcmp(m->sites[k].selector->bytes, selector)) continue;
        SomMethod *t[4];
        return somprof_site_targets(vm, m, m->sites[k].bci, t, 4);
    }
    return 0;
}

static void test_exact_queries(void **state) {
    (void)state;
    SomProfOptions o = {.mode = SOMPROF_EXACT};
    char err[256];
    assert_int_equal(somprof_session_start(&o, err, sizeof err), 0);
    SomOptions opts;
    memset(&opts, 0, sizeof opts);
    SomVM *vm = som_vm_new(&opts, dir, err, sizeof err);
    assert_non_null(vm);
    assert_int_equal(somprof_attach(vm, 0), 0);
    char *argv[] = {"Poly", NULL};
    assert_int_equal(som_vm_run(vm, 1, argv), 0);

    SomProfHot hot[64];
    size_t n = somprof_hot_methods(vm, false, hot, 64);
    assert_true(n > 4);
    for (size_t i = 1; i < n; i++)
        assert_true(hot[i - 1].self >= hot[i].self);
    assert_int_equal(self_of(hot, n, "Poly>>helper"), 10);
    assert_int_equal(self_of(hot, n, "Poly>>poly:"), 4);
    assert_int_equal(self_of(hot, n, "Poly>>mono"), 1);
    SomMethod *mono = find(hot, n, "Poly>>mono"), *poly = find(hot, n, "Poly>>poly:");
    assert_non_null(mono);
    assert_non_null(poly);
    assert_int_equal(targets_at(vm, mono, "helper"), 1);   /* monomorphic: devirtualize */
    assert_int_equal(targets_at(vm, poly, "asString"), 2); /* Integer and String */

    somprof_detach(vm);
    som_vm_free(vm);
    assert_int_equal(somprof_session_finish(err, sizeof err), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_queries),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
