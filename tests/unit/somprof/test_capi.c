/* SPDX-License-Identifier: MIT */
/*
 * test_capi.c - the compiler-controller C API of somprof (somprof_hot_methods,
 * somprof_site_targets, somprof_hot_edges, somprof_edge_contexts) on a real VM in exact
 * mode (hand-computed counts) and cooperative mode (no signals in unit tests): invocation
 * counts per method and edge, monomorphic vs polymorphic call sites, the contexts of an
 * edge, and recursion counted once per sample.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "somprof.h"

static const char poly_src[] = "Poly = (\n"
                               "    helper = ( ^1 + 1 )\n"
                               "    mono = ( 1 to: 10 do: [:i | self helper ] )\n"
                               "    poly: x = ( ^x asString )\n"
                               "    run = ( self mono. #(1 'a' 2 'b') do: [:e | self poly: e ] )\n"
                               ")\n";

static const char rec_src[] =
    "Rec = (\n"
    "    fib: n = ( n < 2 ifTrue: [ ^n ]. ^(self fib: n - 1) + (self fib: n - 2) )\n"
    "    run = ( 1 to: 100 do: [:i | self fib: 20 ] )\n"
    ")\n";

static char dir[64];

static int write_src(const char *name, const char *src) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s.som", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(src, f);
    return fclose(f);
}

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/somprof_capi_XXXXXX");
    if (!mkdtemp(dir)) return -1;
    return write_src("Poly", poly_src) || write_src("Rec", rec_src) ? -1 : 0;
}

static int teardown(void **state) {
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/Poly.som", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/Rec.som", dir);
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

/* bci of the first send of `selector` in m, or UINT32_MAX. */
static uint32_t site_of(SomMethod *m, const char *selector) {
    for (uint32_t k = 0; k < m->nsites; k++)
        if (!strcmp(m->sites[k].selector->bytes, selector)) return m->sites[k].bci;
    return UINT32_MAX;
}

typedef struct Seen {
    int contexts;
    uint64_t weight;
    SomMethod *m0, *m1;
    uint32_t site0, depth;
} Seen;

static void on_context(void *arg, SomMethod *const *methods, const uint32_t *sites, uint32_t depth,
                       uint64_t weight) {
    Seen *s = arg;
    s->contexts++;
    s->weight += weight;
    s->m0 = methods[0];
    s->m1 = depth > 1 ? methods[1] : NULL;
    s->site0 = sites[0];
    s->depth = depth;
}

static SomVM *run_program(SomProfOptions *o, const char *name) {
    char err[256];
    assert_int_equal(somprof_session_start(o, err, sizeof err), 0);
    SomOptions opts;
    memset(&opts, 0, sizeof opts);
    SomVM *vm = som_vm_new(&opts, dir, err, sizeof err);
    assert_non_null(vm);
    assert_int_equal(somprof_attach(vm, 0), 0);
    char *argv[] = {(char *)name, NULL};
    assert_int_equal(som_vm_run(vm, 1, argv), 0);
    return vm;
}

static void finish(SomVM *vm) {
    char err[256];
    somprof_detach(vm);
    som_vm_free(vm);
    assert_int_equal(somprof_session_finish(err, sizeof err), 0);
}

static void test_exact_queries(void **state) {
    (void)state;
    SomProfOptions o = {.mode = SOMPROF_EXACT};
    SomVM *vm = run_program(&o, "Poly");

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

    /* the edge mono@helper -> helper: 10 calls, in one context (run -> mono -> helper) */
    SomProfEdge e[64];
    size_t ne = somprof_hot_edges(vm, e, 64);
    assert_true(ne > 3);
    for (size_t i = 1; i < ne; i++)
        assert_true(e[i - 1].count >= e[i].count);
    SomMethod *helper = find(hot, n, "Poly>>helper");
    uint32_t bci = site_of(mono, "helper");
    size_t j = 0;
    while (j < ne && !(e[j].caller == mono && e[j].callee == helper))
        j++;
    assert_true(j < ne);
    assert_int_equal(e[j].bci, bci);
    assert_int_equal(e[j].count, 10);
    Seen s = {0};
    assert_int_equal(somprof_edge_contexts(vm, mono, bci, helper, on_context, &s), 1);
    assert_int_equal(s.weight, 10);
    assert_ptr_equal(s.m0, helper);
    assert_ptr_equal(s.m1, mono);
    assert_int_equal(s.site0, bci);
    assert_true(s.depth >= 3); /* ... -> run -> mono -> helper */
    Seen none = {0};
    assert_int_equal(somprof_edge_contexts(vm, mono, bci + 1, helper, on_context, &none), 0);
    finish(vm);
}

/* Cooperative samples of a recursion: the edge fib -> fib sits many times on one stack, but
 * counts each sample once (never more than the samples).  Recursion is folded (cct.h): the
 * recursive calls re-enter the context their call site opened, so the edge has a few
 * contexts, not one per depth, and they hold at least the edge's samples. */
static void test_coop_recursive_edge(void **state) {
    (void)state;
    SomProfOptions o = {.mode = SOMPROF_COOP, .hz = 5000};
    SomVM *vm = run_program(&o, "Rec");
    SomProfHot hot[16];
    size_t n = somprof_hot_methods(vm, false, hot, 16);
    uint64_t samples = 0;
    for (size_t i = 0; i < n; i++)
        samples += hot[i].self;
    SomMethod *fib = find(hot, n, "Rec>>fib:");
    assert_non_null(fib);
    assert_true(samples >= 20);
    SomProfEdge e[16];
    size_t ne = somprof_hot_edges(vm, e, 16);
    uint64_t rec = 0;
    uint32_t bci = 0;
    for (size_t i = 0; i < ne; i++) {
        assert_true(e[i].count <= samples);
        if (e[i].caller == fib && e[i].callee == fib && e[i].count > rec)
            rec = e[i].count, bci = e[i].bci;
    }
    assert_true(rec > 0);
    Seen s = {0};
    size_t nctx = somprof_edge_contexts(vm, fib, bci, fib, on_context, &s);
    assert_true(nctx >= 1 && nctx <= 4);
    assert_true(s.weight >= rec);
    finish(vm);
}

/* Finishing a cooperative session wakes the marking thread: at 1 Hz it would otherwise
 * sleep out the rest of its interval (0.8-1.2 s) before the session could end (at the JIT's
 * 50 Hz that was up to 24 ms added to the end of every `som` run). */
static void test_coop_finish_wakes_marker(void **state) {
    (void)state;
    char err[256];
    SomProfOptions o = {.mode = SOMPROF_COOP, .hz = 1};
    assert_int_equal(somprof_session_start(&o, err, sizeof err), 0);
    nanosleep(&(struct timespec){0, 100000000}, NULL); /* the marker is asleep by then */
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    assert_int_equal(somprof_session_finish(err, sizeof err), 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    printf("finish took %.1f ms\n", s * 1e3);
    assert_true(s < 0.5);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coop_finish_wakes_marker),
        cmocka_unit_test(test_exact_queries),
        cmocka_unit_test(test_coop_recursive_edge),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
