/* SPDX-License-Identifier: MIT */
/*
 * test_walker.c - somprof's view of compiled frames: somprof_inlined on a hand-made
 * SomJitCode / JitPos table (chains, the frame's own entry, bounds, a corrupt table), and the
 * cooperative walker of a JIT-only session on a hand-made frame array: a sample in compiled
 * code names the inlined activations, and a partial sample that stops at a marked compiled
 * frame still carries its current inlined activations (they are never marked).
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

#include "jitabi.h"
#include "somprof.h"

static SomMethod root, ma, mb;

/* root@3 -> A (inlined) @4 -> B (inlined) at 9; A also at 6 with nothing inlined below. */
static const JitPos table[] = {
    {&root, 3, JIT_POS_NONE},
    {&ma, 4, 0},
    {&mb, 9, 1},
    {&ma, 6, 0},
};

static SomJitCode code = {.method = &root, .version = 1, .tier = 2, .npos = 4, .pos = table};

static void inlined_chain(void **state) {
    (void)state;
    SomFrame f = {.method = &root, .bci = 3, .jit = &code, .jit_pos = 2};
    SomProfLogical out[SOMPROF_MAX_INLINED];
    assert_int_equal(somprof_inlined(&f, out, SOMPROF_MAX_INLINED), 2);
    assert_ptr_equal(out[0].method, &mb);
    assert_int_equal(out[0].bci, 9);
    assert_ptr_equal(out[1].method, &ma);
    assert_int_equal(out[1].bci, 4);
    f.jit_pos = 3;
    assert_int_equal(somprof_inlined(&f, out, SOMPROF_MAX_INLINED), 1);
    assert_ptr_equal(out[0].method, &ma);
    assert_int_equal(out[0].bci, 6);
    f.jit_pos = 0; /* the root's own position: nothing inlined */
    assert_int_equal(somprof_inlined(&f, out, SOMPROF_MAX_INLINED), 0);
    f.jit_pos = JIT_POS_NONE;
    assert_int_equal(somprof_inlined(&f, out, SOMPROF_MAX_INLINED), 0);
    f.jit_pos = 99; /* out of range: nothing, no read outside */
    assert_int_equal(somprof_inlined(&f, out, SOMPROF_MAX_INLINED), 0);
    f.jit = NULL; /* interpreted */
    f.jit_pos = 2;
    assert_int_equal(somprof_inlined(&f, out, SOMPROF_MAX_INLINED), 0);
}

static void inlined_bounds(void **state) {
    (void)state;
    SomFrame f = {.method = &root, .bci = 3, .jit = &code, .jit_pos = 2};
    SomProfLogical out[2];
    /* deeper than max: the innermost is dropped, the chain stays connected to the frame */
    assert_int_equal(somprof_inlined(&f, out, 1), 1);
    assert_ptr_equal(out[0].method, &ma);
    /* a corrupt table (a cycle) ends */
    JitPos cyc[] = {{&root, 0, JIT_POS_NONE}, {&ma, 1, 2}, {&mb, 2, 1}};
    SomJitCode c2 = {.method = &root, .npos = 3, .pos = cyc};
    f.jit = &c2;
    f.jit_pos = 1;
    assert_true(somprof_inlined(&f, out, 2) <= 2);
}

/* ---- the cooperative walker ------------------------------------------------------------- */

static void spin_cpu(double ms) {
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    volatile uint64_t x = 0;
    for (;;) {
        for (int i = 0; i < 100000; i++)
            x += (uint64_t)i;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
        if ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6 >= ms) {
            (void)x;
            return;
        }
    }
}

static uint64_t self_of(const SomProfHot *h, size_t n, const SomMethod *m) {
    for (size_t i = 0; i < n; i++)
        if (h[i].method == m) return h[i].self;
    return 0;
}

static uint64_t edge(const SomProfEdge *e, size_t n, const SomMethod *c, uint32_t bci,
                     const SomMethod *callee) {
    for (size_t i = 0; i < n; i++)
        if (e[i].caller == c && e[i].bci == bci && e[i].callee == callee) return e[i].count;
    return 0;
}

/* Takes one cooperative sample at a loop back edge (the walker runs in the safepoint hook). */
static void sample(SomVM *vm) {
    spin_cpu(6); /* a sample stands for an interval of CPU time (1 ms at 1000 Hz) */
    vm->poll = 1 + VMS_COMPILED;
    vm->safepoint_hook(vm, SOM_SP_LOOP);
}

static void coop_expands_compiled_frames(void **state) {
    (void)state;
    char err[256];
    SomProfOptions o = {.jit_only = true, .hz = 1000}; /* fixed: 1 ms per sample */
    assert_int_equal(somprof_session_start(&o, err, sizeof err), 0);
    SomOptions opts;
    memset(&opts, 0, sizeof opts);
    SomVM *vm = som_vm_new(&opts, ".", err, sizeof err);
    assert_non_null(vm);
    SomMethod *run = som_lookup(vm, vm->integerClass, som_symbol_cstr(vm, "between:and:"));
    SomMethod *r = som_lookup(vm, vm->integerClass, som_symbol_cstr(vm, "max:"));
    SomMethod *a = som_lookup(vm, vm->integerClass, som_symbol_cstr(vm, "min:"));
    SomMethod *b = som_lookup(vm, vm->integerClass, som_symbol_cstr(vm, "negated"));
    assert_true(run && r && a && b);
    JitPos t[] = {{r, 3, JIT_POS_NONE}, {a, 4, 0}, {b, 9, 1}, {a, 6, 0}};
    SomJitCode c = {.method = r, .version = 1, .tier = 2, .npos = 4, .pos = t};
    assert_int_equal(somprof_attach(vm, 0), 0);
    assert_null(vm->prof_control); /* System profilerStop: not the JIT's samples */
    vm->frames[0] = (SomFrame){.method = run, .bci = 2};
    vm->frames[1] = (SomFrame){.method = r, .bci = 3, .jit = &c, .jit_pos = 2};
    vm->top = 1;
    sample(vm); /* a full walk: run@2 -> r@3 -> a@4 -> b */
    assert_int_equal(vm->frames[1].visited, 1);
    vm->frames[1].jit_pos = 3;
    sample(vm); /* partial: stops at the marked compiled frame, still sees a@6 */
    uint64_t total = somprof_total_samples(vm);
    assert_true(total >= 2);
    SomProfHot hot[16];
    size_t n = somprof_hot_methods(vm, false, hot, 16);
    assert_true(self_of(hot, n, b) >= 1);
    assert_true(self_of(hot, n, a) >= 1);
    assert_int_equal(self_of(hot, n, r), 0); /* the compiled frame's own method ran nothing */
    assert_int_equal(self_of(hot, n, b) + self_of(hot, n, a), total);
    SomProfEdge e[16];
    size_t k = somprof_hot_edges(vm, e, 16);
    assert_int_equal(edge(e, k, run, 2, r), total);
    assert_int_equal(edge(e, k, r, 3, a), total); /* both under the same context */
    assert_int_equal(edge(e, k, a, 4, b), self_of(hot, n, b));
    vm->top = -1;
    somprof_detach(vm);
    assert_int_equal(somprof_session_finish(err, sizeof err), 0);
    som_vm_free(vm);
}

/* Installed code is named "Class>>selector [jit tTIER vVERSION]" for perf and sampo hist -
 * only when asked (a profile, or SAMPO_PERF_MAP=1): a plain run writes no files. */
static void code_registration(void **state) {
    (void)state;
    char err[256], map[64], line[256];
    SomOptions opts;
    memset(&opts, 0, sizeof opts);
    SomVM *vm = som_vm_new(&opts, ".", err, sizeof err);
    assert_non_null(vm);
    SomMethod *r = som_lookup(vm, vm->integerClass, som_symbol_cstr(vm, "max:"));
    assert_non_null(r);
    SomJitCode c = {.method = r, .version = 3, .tier = 2, .code_start = 0x5a000, .code_size = 64};
    snprintf(map, sizeof map, "/tmp/perf-%d.map", (int)getpid());
    unlink(map);
    unsetenv("SAMPO_PERF_MAP");
    unsetenv("SAMPO_JITDUMP");
    somprof_jit_register(vm, &c);
    FILE *f = fopen(map, "r");
    assert_null(f); /* not asked */
    setenv("SAMPO_PERF_MAP", "1", 1);
    somprof_jit_register(vm, &c);
    unsetenv("SAMPO_PERF_MAP");
    f = fopen(map, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    unlink(map);
    assert_string_equal(line, "5a000 40 Integer>>max: [jit t2 v3]\n");
    som_vm_free(vm);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(inlined_chain),
        cmocka_unit_test(inlined_bounds),
        cmocka_unit_test(coop_expands_compiled_frames),
        cmocka_unit_test(code_registration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
