/* SPDX-License-Identifier: MIT */
/*
 * test_flow.c - the controller's flow with a fake backend (controller.h: JitBackend), so it
 * runs without the real compiler: a counter hook decides and queues, the compiler thread
 * compiles while the VM goes on, the next hook installs; sync and eager modes; failures by
 * reason and their limit; deopts invalidating a version, backoff, versions with and without
 * uncommon traps, the version limit; detach cancelling queued work; the controller's clock;
 * the statistics.  The VM is a zeroed SomVM: the controller touches only its jit fields.
 */
#include <pthread.h>
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

/* ---- the fake backend ------------------------------------------------------------------- */

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool gate_closed; /* codegen waits while set */
    bool gate_full;   /* codegen above level 0 waits while set */
    int builds, codegens, frees, in_codegen;
    bool fail_build;
    JitBuildOpts last;
    pthread_t codegen_thread;
    SomMethod *order[8]; /* the methods in the order codegen saw them */
    int levels[8];       /* and the optimization levels asked for */
} F = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static int fake_engine;
static SomMethod inl; /* an inlined callee: 30 bytes */

static JitEngine *fb_engine_new(char *err, size_t errlen) {
    (void)err, (void)errlen;
    return (JitEngine *)&fake_engine;
}

static JitFunc *fb_build(SomVM *vm, SomMethod *m, const JitBuildOpts *o, char *err, size_t errlen) {
    (void)vm;
    pthread_mutex_lock(&F.mu);
    F.builds++;
    F.last = *o;
    bool fail = F.fail_build;
    pthread_mutex_unlock(&F.mu);
    if (fail) {
        snprintf(err, errlen, "unsupported: thisContext in %p", (void *)m);
        return NULL;
    }
    JitFunc *f = calloc(1, sizeof *f);
    f->method = m;
    snprintf(f->name, sizeof f->name, "Fake>>m");
    /* positions: the root (twice), one inlined activation at two points */
    f->pos = calloc(4, sizeof *f->pos);
    f->pos[0] = (JitPos){m, 0, JIT_POS_NONE};
    f->pos[1] = (JitPos){m, 5, JIT_POS_NONE};
    f->pos[2] = (JitPos){&inl, 0, 1};
    f->pos[3] = (JitPos){&inl, 7, 1};
    f->npos = 4;
    f->inlined = 1;
    return f;
}

static void fb_optimize(JitFunc *f) {
    (void)f;
}

static SomJitCode *fb_codegen(JitEngine *e, const JitFunc *f, const JitCodegenOpts *o, char *err,
                              size_t errlen) {
    (void)err, (void)errlen;
    assert_ptr_equal(e, &fake_engine);
    pthread_mutex_lock(&F.mu);
    if (F.codegens < 8) F.order[F.codegens] = f->method, F.levels[F.codegens] = o->opt_level;
    F.codegens++;
    F.in_codegen++;
    F.codegen_thread = pthread_self();
    pthread_cond_broadcast(&F.cv);
    while (F.gate_closed || (F.gate_full && o->opt_level > 0))
        pthread_cond_wait(&F.cv, &F.mu);
    F.in_codegen--;
    pthread_mutex_unlock(&F.mu);
    SomJitCode *c = calloc(1, sizeof *c);
    c->method = f->method;
    c->code_size = 100;
    return c;
}

static void fb_print(const JitFunc *f, FILE *out) {
    fprintf(out, "%s\n", f->name);
}

static void fb_free(JitFunc *f) {
    pthread_mutex_lock(&F.mu);
    F.frees++;
    pthread_mutex_unlock(&F.mu);
    free(f->pos);
    free(f);
}

static const JitBackend fake = {fb_engine_new, jit_build_defaults, fb_build, fb_optimize,
                                fb_codegen,    fb_print,           fb_free,  NULL};

static void gate(bool closed) {
    pthread_mutex_lock(&F.mu);
    F.gate_closed = closed;
    pthread_cond_broadcast(&F.cv);
    pthread_mutex_unlock(&F.mu);
}

/* Waits (at most 20 s: a loaded machine) until codegen is entered n times in all. */
static void wait_codegens(int n) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 20;
    pthread_mutex_lock(&F.mu);
    while (F.codegens < n)
        if (pthread_cond_timedwait(&F.cv, &F.mu, &ts)) break;
    int got = F.codegens;
    pthread_mutex_unlock(&F.mu);
    assert_int_equal(got, n);
}

static void wait_tick(SomVM *vm) {
    for (int i = 0; i < 20000 && !vm->jit_tick; i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    assert_int_equal(vm->jit_tick, 1);
    vm->jit_tick = 0; /* as the VM does before calling the hook */
}

/* ---- fixtures --------------------------------------------------------------------------- */

static SomVM vm;
static SomMethod m1, m2, m3;

static int setup(void **state) {
    (void)state;
    memset(&vm, 0, sizeof vm);
    memset(&m1, 0, sizeof m1);
    memset(&m2, 0, sizeof m2);
    memset(&m3, 0, sizeof m3);
    m1.kind = m2.kind = m3.kind = MK_METHOD;
    m1.code_len = 50;
    m2.code_len = 50;
    m3.code_len = 50;
    inl.code_len = 30;
    vm.state = VMS_INTERP;
    F.builds = F.codegens = F.frees = 0;
    F.fail_build = false;
    F.gate_closed = F.gate_full = false;
    /* a cheap compiler: a method run 1000 times is worth compiling */
    setenv("SOM_JIT_COMPILE_NS_PER_BYTE", "10", 1);
    setenv("SOM_JIT_COMPILE_FIXED_NS", "0", 1); /* the fake backend's compiles take ~0 */
    unsetenv("SOM_JIT_TICK_MS");
    setenv("SOM_JIT_QUICK_FIRST", "0", 1); /* one version per compilation (but in quick_first) */
    return 0;
}

static JitOptions opts(JitMode mode) {
    return (JitOptions){.mode = mode};
}

static void attach(JitOptions o) {
    char err[256];
    assert_int_equal(jit_attach(&vm, &o, err, sizeof err), 0);
    assert_non_null(vm.jit);
    assert_non_null(vm.jit_hook);
    assert_non_null(vm.jit_deopt_hook);
}

/* ---- tests ------------------------------------------------------------------------------ */

static void background_compile_then_install(void **state) {
    (void)state;
    attach(opts(JIT_ON));
    assert_int_equal(vm.jit_threshold, 1000);
    gate(true);
    m1.invocations = 1000;
    vm.jit_hook(&vm, &m1, SOM_JIT_COUNT); /* decides, builds here, queues: does not wait */
    assert_int_equal(F.builds, 1);
    assert_null(m1.jit);
    wait_codegens(1);
    assert_false(pthread_equal(F.codegen_thread, pthread_self()));
    vm.jit_hook(&vm, &m1, SOM_JIT_COUNT); /* queued: not built twice, not installed yet */
    assert_int_equal(F.builds, 1);
    assert_null(m1.jit);
    gate(false);
    for (int i = 0; i < 1000 && !m1.jit; i++) { /* the clock ticks too */
        wait_tick(&vm);
        assert_null(m1.jit); /* only the VM thread installs, at a hook */
        vm.jit_hook(&vm, &m2, SOM_JIT_TICK);
    }
    SomJitCode *c = m1.jit;
    assert_non_null(c);
    assert_int_equal(c->version, 1);
    assert_int_equal(c->tier, 2);
    assert_true(F.last.unreached_traps);
    JitStats s;
    jit_stats(&vm, &s);
    assert_int_equal(s.compiled, 1);
    assert_int_equal(s.code_bytes, 100);
    assert_int_equal(s.inlined, 1);
    assert_int_equal(F.frees, 1);
    jit_detach(&vm);
    assert_null(vm.jit);
    assert_null(vm.jit_hook);
}

static void cold_method_not_compiled(void **state) {
    (void)state;
    unsetenv("SOM_JIT_COMPILE_NS_PER_BYTE"); /* 20 us/byte: 1000 calls are not enough */
    JitOptions o = opts(JIT_ON);
    o.sync = true;
    attach(o);
    m1.invocations = 1000;
    vm.jit_hook(&vm, &m1, SOM_JIT_COUNT);
    assert_null(m1.jit);
    assert_int_equal(F.builds, 0);
    /* 24 k activations of 50 bytes: 24000 * 240 ns * 0.75 = 4.3 ms > 50 * 3 * 20 us = 3 ms */
    m1.invocations = 24000;
    vm.jit_hook(&vm, &m1, SOM_JIT_COUNT);
    assert_non_null(m1.jit);
    JitStats s;
    jit_stats(&vm, &s);
    assert_int_equal(s.evaluations, 2);
    assert_int_equal(s.compiled, 1);
    jit_detach(&vm);
}

static void loops_count(void **state) {
    (void)state;
    JitOptions o = opts(JIT_ON);
    o.sync = true;
    attach(o);
    m1.invocations = 1;
    vm.jit_hook(&vm, &m1, SOM_JIT_LOOP); /* 1000 back edges: enough at 10 ns/byte */
    assert_non_null(m1.jit);
    jit_detach(&vm);
}

/* A method never built, whose time is in its loops, has its compiled size measured by a
 * build (the fake one: 50 bytes + 30 inlined = 80) when the benefit would pay for its bytecode
 * alone; the rule then charges 80 bytes instead of 50 x the expansion guess (3).  At 1500
 * ns/byte: 1000 back edges of 240 ns are a benefit of 180 us; 150 bytes cost 225 us, 80 bytes
 * 120 us.  A method whose time is in its calls is not measured (its caller inlines it). */
static void measured_size_lowers_cost(void **state) {
    (void)state;
    setenv("SOM_JIT_COMPILE_NS_PER_BYTE", "1500", 1);
    setenv("SOM_JIT_MEASURE_SIZE", "0", 1);
    JitOptions o = opts(JIT_ON);
    o.sync = true;
    attach(o);
    m2.invocations = 1;
    vm.jit_hook(&vm, &m2, SOM_JIT_LOOP);
    assert_null(m2.jit); /* not measured: charged 150 bytes */
    assert_int_equal(F.builds, 0);
    jit_detach(&vm);
    unsetenv("SOM_JIT_MEASURE_SIZE");
    attach(o);
    m3.invocations = 1000;
    vm.jit_hook(&vm, &m3, SOM_JIT_COUNT);
    assert_null(m3.jit); /* calls, no loops: not measured */
    assert_int_equal(F.builds, 0);
    m1.invocations = 1;
    vm.jit_hook(&vm, &m1, SOM_JIT_LOOP);
    assert_non_null(m1.jit);
    assert_int_equal(F.builds, 2); /* measured, then built for real */
    JitStats s;
    jit_stats(&vm, &s);
    assert_int_equal(s.measured, 1);
    assert_int_equal(s.compiled, 1);
    jit_detach(&vm);
}

static void eager_and_failures(void **state) {
    (void)state;
    attach(opts(JIT_EAGER));
    assert_true(vm.jit_eager);
    vm.jit_hook(&vm, &m1, SOM_JIT_EAGER); /* compiled at once, on this thread */
    assert_non_null(m1.jit);
    assert_true(pthread_equal(F.codegen_thread, pthread_self()));
    F.fail_build = true;
    for (int i = 0; i < 5; i++)
        vm.jit_hook(&vm, &m2, SOM_JIT_EAGER);
    assert_null(m2.jit);
    assert_int_equal(F.builds, 3); /* m1, then m2 twice: max_failures = 2 */
    JitStats s;
    jit_stats(&vm, &s);
    assert_int_equal(s.failed, 2);
    assert_int_equal(s.never, 1);
    const char *why[4];
    uint64_t n[4];
    assert_int_equal(jit_failure_reasons(&vm, why, n, 4), 1);
    assert_string_equal(why[0], "unsupported");
    assert_int_equal(n[0], 2);
    jit_detach(&vm);
}

static void deopts_invalidate_and_recompile(void **state) {
    (void)state;
    JitOptions o = opts(JIT_ON);
    o.sync = true;
    attach(o);
    m1.invocations = 1000;
    for (uint32_t v = 1; v <= 6; v++) {
        vm.jit_hook(&vm, &m1, SOM_JIT_COUNT);
        SomJitCode *c = m1.jit;
        assert_non_null(c);
        assert_int_equal(c->version, v);
        assert_int_equal(F.last.version, v);
        assert_true(F.last.unreached_traps == (v < 4)); /* K = 4 */
        for (int i = 0; i < 8; i++)
            vm.jit_deopt_hook(&vm, c, i % 2 ? JDR_OVERFLOW : JDR_CLASS);
        assert_ptr_equal(m1.jit, c);
        assert_int_equal(c->invalid, 0);
        vm.jit_deopt_hook(&vm, c, JDR_CLASS); /* the 9th */
        assert_int_equal(c->invalid, 1);
        assert_null(m1.jit);
        /* backoff: 1000 * 2^(v-1) more activations before the next version */
        vm.jit_hook(&vm, &m1, SOM_JIT_COUNT);
        assert_null(m1.jit);
        m1.invocations += (1000ull << (v - 1)) - 1;
        vm.jit_hook(&vm, &m1, SOM_JIT_COUNT);
        assert_null(m1.jit);
        m1.invocations += 1;
    }
    vm.jit_hook(&vm, &m1, SOM_JIT_COUNT); /* version 7: over the limit */
    assert_null(m1.jit);
    JitStats s;
    jit_stats(&vm, &s);
    assert_int_equal(s.invalidated, 6);
    assert_int_equal(s.compiled, 6);
    assert_int_equal(s.versions_max, 6);
    assert_int_equal(s.never, 1);
    assert_int_equal(s.deopts[JDR_CLASS], 6 * 5);
    assert_int_equal(s.deopts[JDR_OVERFLOW], 6 * 4);
    jit_detach(&vm);
}

/* Behind a backlog the queue serves the best benefit per cost first: m3 (5x m2's calls,
 * the same size) is queued after m2 and compiled before it. */
static void queue_by_priority(void **state) {
    (void)state;
    attach(opts(JIT_ON));
    gate(true);
    m1.invocations = m2.invocations = 1000;
    m3.invocations = 5000;
    vm.jit_hook(&vm, &m1, SOM_JIT_COUNT);
    wait_codegens(1); /* m1 is in the compiler's hands */
    vm.jit_hook(&vm, &m2, SOM_JIT_COUNT);
    vm.jit_hook(&vm, &m3, SOM_JIT_COUNT);
    assert_int_equal(F.builds, 3);
    gate(false);
    wait_codegens(3);
    assert_ptr_equal(F.order[0], &m1);
    assert_ptr_equal(F.order[1], &m3);
    assert_ptr_equal(F.order[2], &m2);
    jit_detach(&vm);
}

/* jit_print_stats of the VM as a string (the caller frees it). */
static char *stats_string(void) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    jit_print_stats(&vm, f);
    fclose(f);
    return buf;
}

/* Ticks the controller's clock until m runs code of version v (at most 1000 ticks). */
static SomJitCode *tick_until(SomMethod *m, uint32_t v) {
    for (int i = 0; i < 1000 && !(m->jit && ((SomJitCode *)m->jit)->version == v); i++) {
        wait_tick(&vm);
        vm.jit_hook(&vm, &m3, SOM_JIT_TICK);
    }
    return m->jit;
}

/* SOM_JIT_QUICK_FIRST=1: a method's first version is compiled at level 0, runs, and is replaced
 * by the full-level version built right after it, which gets the uncommon traps and the limits
 * of a first version; a quick version invalidated meanwhile takes its queued successor along. */
static void quick_first_then_full(void **state) {
    (void)state;
    setenv("SOM_JIT_QUICK_FIRST", "1", 1);
    setenv("SOM_JIT_TRAPS_OFF_VERSION", "2", 1); /* traps in version 1 only */
    attach(opts(JIT_ON));
    m1.invocations = 1000;
    vm.jit_hook(&vm, &m1, SOM_JIT_COUNT);
    SomJitCode *q = tick_until(&m1, 1);
    assert_non_null(q);
    assert_int_equal(F.levels[0], 0);
    SomJitCode *full = tick_until(&m1, 2);
    assert_non_null(full);
    assert_int_equal(F.codegens, 2);
    assert_int_equal(F.levels[1], 2);
    assert_int_equal(F.last.version, 2);
    assert_true(F.last.unreached_traps); /* counted as a first version */
    JitStats s;
    jit_stats(&vm, &s);
    assert_int_equal(s.compiled, 2);
    assert_int_equal(s.quick_first, 1);
    assert_int_equal(s.quick_first_full, 1);
    /* m2's quick version is invalidated while its full-level successor is being compiled */
    pthread_mutex_lock(&F.mu);
    F.gate_full = true;
    pthread_mutex_unlock(&F.mu);
    m2.invocations = 1000;
    vm.jit_hook(&vm, &m2, SOM_JIT_COUNT);
    q = tick_until(&m2, 1);
    assert_non_null(q);
    wait_codegens(4);                     /* the full one waits in codegen */
    vm.jit_hook(&vm, &m2, SOM_JIT_COUNT); /* nothing to do: queued */
    assert_ptr_equal(m2.jit, q);
    for (int i = 0; i < 9; i++)
        vm.jit_deopt_hook(&vm, q, JDR_CLASS);
    assert_int_equal(q->invalid, 1);
    assert_null(m2.jit);
    pthread_mutex_lock(&F.mu);
    F.gate_full = false;
    pthread_cond_broadcast(&F.cv);
    pthread_mutex_unlock(&F.mu);
    for (int i = 0; i < 20; i++) { /* the full one finishes and is thrown away */
        wait_tick(&vm);
        vm.jit_hook(&vm, &m3, SOM_JIT_TICK);
    }
    assert_null(m2.jit);
    jit_stats(&vm, &s);
    assert_int_equal(s.quick_first, 2);
    assert_int_equal(s.quick_first_full, 1);
    assert_int_equal(s.invalidated, 1);
    char *buf = stats_string();
    assert_non_null(strstr(buf, "jit: quick first versions 2, replaced at full level 1 (median "));
    free(buf);
    jit_detach(&vm);
    unsetenv("SOM_JIT_TRAPS_OFF_VERSION");
}

/* After an invalidation the next version takes one step at SOM_JIT_QUICK_FIRST=1 and two at
 * =2; the back-off counts the versions after the quick ones. */
static void quick_first_after_invalidation(void **state) {
    (void)state;
    for (int mode = 1; mode <= 2; mode++) {
        setup(NULL);
        setenv("SOM_JIT_QUICK_FIRST", mode == 1 ? "1" : "2", 1);
        attach(opts(JIT_ON));
        m1.invocations = 1000;
        vm.jit_hook(&vm, &m1, SOM_JIT_COUNT);
        SomJitCode *c = tick_until(&m1, 2);
        assert_non_null(c);
        for (int i = 0; i < 9; i++)
            vm.jit_deopt_hook(&vm, c, JDR_CLASS);
        assert_null(m1.jit);
        m1.invocations += 999; /* back-off of an effective version 1: 1000 more */
        vm.jit_hook(&vm, &m1, SOM_JIT_COUNT);
        assert_int_equal(F.builds, 2);
        m1.invocations += 1;
        vm.jit_hook(&vm, &m1, SOM_JIT_COUNT);
        assert_int_equal(F.builds, 3);
        c = tick_until(&m1, mode == 1 ? 3 : 4);
        assert_non_null(c);
        assert_int_equal(F.codegens, mode == 1 ? 3 : 4);
        assert_int_equal(F.levels[2], mode == 1 ? 2 : 0);
        if (mode == 2) assert_int_equal(F.levels[3], 2);
        JitStats s;
        jit_stats(&vm, &s);
        assert_int_equal(s.quick_first, mode);
        jit_detach(&vm);
    }
}

static void *open_later(void *arg) {
    (void)arg;
    struct timespec ms = {0, 50000000};
    nanosleep(&ms, NULL);
    gate(false);
    return NULL;
}

static void detach_cancels_queued(void **state) {
    (void)state;
    attach(opts(JIT_ON));
    gate(true);
    m1.invocations = m2.invocations = 1000;
    vm.jit_hook(&vm, &m1, SOM_JIT_COUNT);
    wait_codegens(1);                     /* m1 is in the compiler's hands */
    vm.jit_hook(&vm, &m2, SOM_JIT_COUNT); /* m2 waits in the queue */
    assert_int_equal(F.builds, 2);
    pthread_t t;
    pthread_create(&t, NULL, open_later, NULL);
    jit_detach(&vm); /* drops m2, waits for m1 */
    pthread_join(t, NULL);
    assert_int_equal(F.codegens, 1);
    assert_int_equal(F.frees, 2);
    assert_int_equal(F.in_codegen, 0);
    assert_null(m1.jit); /* never installed: the VM is gone */
    assert_null(m2.jit);
}

static void clock_ticks(void **state) {
    (void)state;
    setenv("SOM_JIT_TICK_MS", "5", 1);
    attach(opts(JIT_ON));
    wait_tick(&vm);
    wait_tick(&vm);                      /* and again */
    vm.jit_hook(&vm, &m1, SOM_JIT_TICK); /* no profiler attached: nothing to evaluate */
    assert_null(m1.jit);
    jit_detach(&vm);
}

static void off_attaches_nothing(void **state) {
    (void)state;
    char err[64];
    JitOptions o = opts(JIT_OFF);
    assert_int_equal(jit_attach(&vm, &o, err, sizeof err), 0);
    assert_null(vm.jit);
    assert_null(vm.jit_hook);
    jit_detach(&vm);
}

static void bad_environment(void **state) {
    (void)state;
    char err[256];
    setenv("SOM_JIT_DEOPT_LIMIT", "-1", 1);
    JitOptions o = opts(JIT_ON);
    assert_int_equal(jit_attach(&vm, &o, err, sizeof err), -1);
    assert_string_equal(err,
                        "SOM_JIT_DEOPT_LIMIT: expected a number between 0 and 1e+09, got '-1'");
    assert_null(vm.jit);
    unsetenv("SOM_JIT_DEOPT_LIMIT");
}

static void stats_text(void **state) {
    (void)state;
    JitOptions o = opts(JIT_ON);
    o.sync = true;
    attach(o);
    m1.invocations = 1000;
    vm.jit_hook(&vm, &m1, SOM_JIT_COUNT);
    vm.jit_deopt_hook(&vm, m1.jit, JDR_BOUNDS);
    F.fail_build = true;
    m2.invocations = 1000;
    vm.jit_hook(&vm, &m2, SOM_JIT_COUNT);
    char *buf = stats_string();
    assert_non_null(strstr(buf, "jit: methods compiled 1, failed 1, invalidated 0"));
    assert_non_null(strstr(buf, "jit: failed by reason: unsupported=1\n"));
    assert_non_null(strstr(buf, "jit: compile time total "));
    assert_non_null(strstr(buf, "jit: code bytes 100, inlined activations 1"));
    assert_non_null(strstr(buf, "jit: deopts 1: bounds=1\n"));
    free(buf);
    assert_string_equal(jit_deopt_reason_name(JDR_STRESS), "stress");
    assert_string_equal(jit_deopt_reason_name(99), "?");
    jit_detach(&vm);
}

static void parse_modes(void **state) {
    (void)state;
    JitMode m = JIT_OFF;
    assert_true(jit_parse_mode("eager", &m));
    assert_int_equal(m, JIT_EAGER);
    assert_true(jit_parse_mode("on", &m));
    assert_int_equal(m, JIT_ON);
    assert_true(jit_parse_mode("off", &m));
    assert_int_equal(m, JIT_OFF);
    assert_false(jit_parse_mode("ON", &m));
    assert_false(jit_parse_mode("", &m));
}

int main(void) {
    jit_set_backend(&fake);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(background_compile_then_install, setup),
        cmocka_unit_test_setup(cold_method_not_compiled, setup),
        cmocka_unit_test_setup(loops_count, setup),
        cmocka_unit_test_setup(measured_size_lowers_cost, setup),
        cmocka_unit_test_setup(eager_and_failures, setup),
        cmocka_unit_test_setup(deopts_invalidate_and_recompile, setup),
        cmocka_unit_test_setup(detach_cancels_queued, setup),
        cmocka_unit_test_setup(queue_by_priority, setup),
        cmocka_unit_test_setup(quick_first_then_full, setup),
        cmocka_unit_test_setup(quick_first_after_invalidation, setup),
        cmocka_unit_test_setup(clock_ticks, setup),
        cmocka_unit_test_setup(off_attaches_nothing, setup),
        cmocka_unit_test_setup(bad_environment, setup),
        cmocka_unit_test_setup(stats_text, setup),
        cmocka_unit_test_setup(parse_modes, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
