/* SPDX-License-Identifier: MIT */
/*
 * test_samples.c - the controller driven by samples: a real VM in a JIT-only cooperative
 * session (hand-made frames, samples taken at a safe point), the fake backend of the flow
 * tests.  A method whose counters alone are not worth a compilation is compiled once its
 * samples are, at the refresh the controller's clock asks for; the builder gets the profile
 * (the hot caller -> callee edge's weight and the root's samples).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "controller.h"
#include "somprof.h"

static SomMethod *caller, *hot; /* the edge the profile must weigh */
static int builds;
static uint64_t edge_w, root_w;

static JitEngine *fb_engine_new(char *err, size_t errlen) {
    (void)err, (void)errlen;
    return (JitEngine *)&builds;
}

static JitFunc *fb_build(SomVM *vm, SomMethod *m, const JitBuildOpts *o, char *err, size_t errlen) {
    (void)vm, (void)err, (void)errlen;
    builds++;
    const JitProfile *p = o->profile;
    edge_w = p && p->edge_weight ? p->edge_weight(p->arg, caller, 2, hot) : 0;
    root_w = p ? p->root_weight : 0;
    JitFunc *f = calloc(1, sizeof *f);
    f->method = m;
    return f;
}

static void fb_optimize(JitFunc *f) {
    (void)f;
}

static SomJitCode *fb_codegen(JitEngine *e, const JitFunc *f, const JitCodegenOpts *o, char *err,
                              size_t errlen) {
    (void)e, (void)o, (void)err, (void)errlen;
    SomJitCode *c = calloc(1, sizeof *c);
    c->method = f->method;
    c->code_size = 10;
    return c;
}

static void fb_print(const JitFunc *f, FILE *out) {
    (void)f, (void)out;
}

static void fb_free(JitFunc *f) {
    free(f);
}

static const JitBackend fake = {fb_engine_new, jit_build_defaults, fb_build, fb_optimize,
                                fb_codegen,    fb_print,           fb_free,  NULL};

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

static void sample(SomVM *vm) {
    spin_cpu(6); /* more than one interval (1 ms) of CPU time */
    vm->poll = 1 + VMS_INTERP;
    vm->safepoint_hook(vm, SOM_SP_LOOP);
}

/* The clock (every 1 ms) asks for a refresh; the VM's hook does it. */
static void tick(SomVM *vm) {
    for (int i = 0; i < 20000 && !vm->jit_tick; i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    assert_int_equal(vm->jit_tick, 1);
    vm->jit_tick = 0;
    vm->jit_hook(vm, caller, SOM_JIT_TICK);
}

static void samples_make_it_hot(void **state) {
    (void)state;
    char err[256];
    setenv("SOM_JIT_TICK_MS", "1", 1);
    SomProfOptions po = {.jit_only = true, .hz = 1000};
    assert_int_equal(somprof_session_start(&po, err, sizeof err), 0);
    SomOptions opts;
    memset(&opts, 0, sizeof opts);
    SomVM *vm = som_vm_new(&opts, ".", err, sizeof err);
    assert_non_null(vm);
    caller = som_lookup(vm, vm->integerClass, som_symbol_cstr(vm, "between:and:"));
    hot = som_lookup(vm, vm->integerClass, som_symbol_cstr(vm, "max:"));
    assert_true(caller && hot && hot->code_len > 0);
    assert_int_equal(somprof_attach(vm, 0), 0);
    JitOptions o = {.mode = JIT_ON, .sync = true};
    assert_int_equal(jit_attach(vm, &o, err, sizeof err), 0);
    /* counted: 1000 * (40 + 4 len) ns * 0.75 is far below len * 3 * 20 us */
    hot->invocations = 1000;
    vm->jit_hook(vm, hot, SOM_JIT_COUNT);
    assert_null(hot->jit);
    assert_int_equal(builds, 0);
    tick(vm); /* no samples yet: nothing */
    assert_null(hot->jit);
    vm->frames[0] = (SomFrame){.method = caller, .bci = 2};
    vm->frames[1] = (SomFrame){.method = hot, .bci = 0};
    vm->top = 1;
    /* ~6 ms each, all in `hot`: 18+ ms of benefit against ~1-3 ms.  At least 4 samples: a
     * marking thread starved by a loaded machine (ASan tests side by side) may miss one */
    for (int i = 0; i < 200 && (i < 4 || somprof_total_samples(vm) < 4); i++)
        sample(vm);
    hot->invocations++; /* it still runs interpreted */
    tick(vm);
    assert_non_null(hot->jit);
    assert_int_equal(builds, 1);
    assert_true(edge_w >= 3); /* the edge caller@2 -> hot, from the samples */
    assert_true(root_w >= 3);
    JitStats s;
    jit_stats(vm, &s);
    assert_int_equal(s.compiled, 1);
    vm->top = -1;
    jit_detach(vm);
    somprof_detach(vm);
    assert_int_equal(somprof_session_finish(err, sizeof err), 0);
    som_vm_free(vm);
    unsetenv("SOM_JIT_TICK_MS");
}

int main(void) {
    jit_set_backend(&fake);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(samples_make_it_hot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
