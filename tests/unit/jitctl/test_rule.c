/* SPDX-License-Identifier: MIT */
/*
 * test_rule.c - the controller's rule (controller_rule.c) as a pure function: samples and
 * counters to past time, benefit against cost, the calibration of the compile rate, the
 * invalidation threshold, version limits and traps, backoff, and SOM_JIT_* parsing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "controller.h"

static JitRuleParams P;
static JitCalib C;

static int setup(void **state) {
    (void)state;
    jit_rule_defaults(&P);
    P.fixed_ns = 0; /* the tests of the rate alone; fixed_cost tests it */
    jit_calib_init(&C, &P);
    return 0;
}

/* Samples: past = samples * sample_ns; benefit = past * (1 - 1/4); cost = len * 3 * 20000. */
static void samples_decide(void **state) {
    (void)state;
    JitEstimate e;
    /* 100 bytes: cost 100 * 3 * 20 us = 6 ms; 1 ms per sample */
    JitCandidate x = {.samples = 8, .sample_ns = 1e6, .code_len = 100};
    assert_false(jit_rule_decide(&P, &C, &x, &e)); /* benefit 6 ms, not > 6 ms */
    assert_true(e.from_samples);
    assert_true(e.past_ns == 8e6 && e.future_ns == 8e6);
    assert_true(e.benefit_ns == 6e6 && e.cost_ns == 6e6);
    x.samples = 9;
    assert_true(jit_rule_decide(&P, &C, &x, &e)); /* 6.75 ms > 6 ms */
    /* a known compiled size replaces the expansion guess */
    x.known_size = 1000; /* 20 ms */
    assert_false(jit_rule_decide(&P, &C, &x, &e));
    assert_true(e.cost_ns == 20e6);
}

/* Counters only: past = (invocations + loop_iters) * (call_ns + byte_ns * len). */
static void counters_decide(void **state) {
    (void)state;
    JitEstimate e;
    JitCandidate x = {.invocations = 2000, .code_len = 40}; /* per = 40 + 160 = 200 ns */
    assert_false(jit_rule_decide(&P, &C, &x, &e));
    assert_false(e.from_samples);
    assert_true(e.past_ns == 400000.0);
    /* cost = 40 * 3 * 20 us = 2.4 ms: benefit 0.75 * n * 200 ns > 2.4 ms from n = 16001 */
    x.invocations = 16000;
    assert_false(jit_rule_decide(&P, &C, &x, &e));
    x.invocations = 16001;
    assert_true(jit_rule_decide(&P, &C, &x, &e));
    /* loops count like activations */
    x.invocations = 8000;
    x.loop_iters = 8001;
    assert_true(jit_rule_decide(&P, &C, &x, &e));
}

/* Fewer samples than min_samples: the larger of the two estimates; enough: the samples, at
 * least the cost of the calls counted. */
static void few_samples(void **state) {
    (void)state;
    JitEstimate e;
    JitCandidate x = {.samples = 2, .sample_ns = 1e6, .invocations = 100000, .code_len = 40};
    jit_rule_decide(&P, &C, &x, &e);
    assert_false(e.from_samples);
    assert_true(e.past_ns == 100000 * 200.0); /* 20 ms > 2 ms sampled */
    x.samples = 3;
    x.invocations = 50000; /* calls: 50000 * 40 ns = 2 ms < 3 ms sampled */
    jit_rule_decide(&P, &C, &x, &e);
    assert_true(e.from_samples);
    assert_true(e.past_ns == 3e6);
    /* no sample period yet: counters */
    x.sample_ns = 0;
    jit_rule_decide(&P, &C, &x, &e);
    assert_false(e.from_samples);
    /* enough samples, but calls that cost more than the samples show: the calls' cost */
    x.sample_ns = 1e6;
    x.invocations = 1000000; /* 1e6 * 40 ns = 40 ms > 3 ms sampled */
    jit_rule_decide(&P, &C, &x, &e);
    assert_true(e.from_samples);
    assert_true(e.past_ns == 1000000 * 40.0);
}

static void speedup_matters(void **state) {
    (void)state;
    JitEstimate e;
    JitCandidate x = {.samples = 10, .sample_ns = 1e6, .code_len = 100}; /* cost 6 ms */
    assert_true(jit_rule_decide(&P, &C, &x, &e));                        /* 7.5 ms */
    P.speedup = 2;                                                       /* 5 ms */
    assert_false(jit_rule_decide(&P, &C, &x, &e));
}

/* The first measurement replaces the guess; later ones make a running mean (the default,
 * alpha 0), or move it by alpha once 1/n is below alpha. */
static void calibration(void **state) {
    (void)state;
    jit_calib_update(&C, &P, 1000000, 100, 500); /* 2000 ns/byte, expansion 5 */
    assert_true(C.ns_per_byte == 2000.0);
    assert_true(C.expansion == 5.0);
    assert_int_equal(C.n, 1);
    jit_calib_update(&C, &P, 6000000, 100, 1000); /* 6000 ns/byte, 10 */
    assert_true(C.ns_per_byte == 4000.0);         /* the mean of 2000 and 6000 */
    assert_true(C.expansion == 7.5);              /* of 5 and 10 */
    jit_calib_update(&C, &P, 123, 0, 0);          /* nothing measured: ignored */
    assert_int_equal(C.n, 2);
    jit_calib_update(&C, &P, 1000000, 100, 100);      /* 10000 ns/byte, 1 */
    assert_true(C.ns_per_byte == 6000.0);             /* (2000 + 6000 + 10000) / 3 */
    assert_true(fabs(C.expansion - 16.0 / 3) < 1e-9); /* (5 + 10 + 1) / 3 */
    /* every measurement weighs the same, whatever its order: a leaf (expansion 1) compiled
     * last moves the estimate by 1/n, not by a fixed share */
    JitCalib a, b;
    jit_calib_init(&a, &P), jit_calib_init(&b, &P);
    uint32_t tot[] = {4000, 100, 120, 3000, 100, 150};
    for (int i = 0; i < 6; i++) {
        jit_calib_update(&a, &P, 50000000, 100, tot[i]);
        jit_calib_update(&b, &P, 50000000, 100, tot[5 - i]);
    }
    assert_true(fabs(a.expansion - b.expansion) < 1e-9);
    assert_true(fabs(a.expansion - 7470.0 / 600) < 1e-9);
    /* with alpha 0.25 (the exponentially weighted mean): the order decides */
    P.alpha = 0.25;
    jit_calib_init(&a, &P), jit_calib_init(&b, &P);
    for (int i = 0; i < 6; i++) {
        jit_calib_update(&a, &P, 50000000, 100, tot[i]);
        jit_calib_update(&b, &P, 50000000, 100, tot[5 - i]);
    }
    assert_true(fabs(a.expansion - b.expansion) > 1.0);
    P.alpha = 0;
    /* a cheaper compiler makes the same method worth compiling */
    JitEstimate e;
    JitCandidate x = {.invocations = 2000, .code_len = 40}; /* benefit 300 us */
    assert_false(jit_rule_decide(&P, &C, &x, &e));          /* 40 * 16/3 * 6000 = 1280 us */
    jit_calib_init(&C, &P);
    C.ns_per_byte = 1000;
    C.expansion = 3;
    assert_true(jit_rule_decide(&P, &C, &x, &e)); /* 120 us */
}

/* Compile time = fixed + rate * bytes: small functions measure the fixed part, larger ones
 * the rate beyond it, so a 7-byte method's 5 ms does not make a 700-byte one cost 500 ms. */
static void fixed_cost(void **state) {
    (void)state;
    P.fixed_ns = 5e6;
    jit_calib_init(&C, &P);
    JitEstimate e;
    JitCandidate x = {.samples = 10, .sample_ns = 1e6, .code_len = 100}; /* benefit 7.5 ms */
    jit_rule_decide(&P, &C, &x, &e);
    assert_true(e.cost_ns == 5e6 + 100 * 3 * 20000.0); /* 11 ms */
    assert_false(e.compile);
    jit_calib_update(&C, &P, 8000000, 7, 7); /* small: the fixed part, taken as it is */
    assert_true(C.fixed_ns == 8e6);
    assert_true(C.ns_per_byte == 20000.0);
    jit_calib_update(&C, &P, 6000000, 7, 7); /* then the mean */
    assert_true(C.fixed_ns == 7e6);
    jit_calib_update(&C, &P, 77000000, 100, 700); /* (77 - 7) ms / 700 = 100 us per byte */
    assert_true(C.ns_per_byte == 100000.0);
    assert_true(C.fixed_ns == 7e6);
    jit_calib_update(&C, &P, 1000000, 100, 700); /* faster than the fixed part: rate 0 */
    assert_true(C.ns_per_byte == 50000.0);       /* the mean of 100000 and 0 */
    /* one rate from small functions alone would have charged 700 bytes 8 ms / 7 * 700 */
    x.known_size = 700;
    jit_rule_decide(&P, &C, &x, &e);
    assert_true(e.cost_ns == 7e6 + 700 * 50000.0);
}

/* A method whose time goes to small callees (a loop calling `do:`) counts edge_share of the
 * samples through those edges as its own. */
static void edge_samples(void **state) {
    (void)state;
    JitEstimate e;
    JitCandidate x = {.samples = 0, .edge_samples = 16, .sample_ns = 1e6, .code_len = 100};
    assert_false(jit_rule_decide(&P, &C, &x, &e)); /* 0.5 * 16 = 8 samples: 8 ms */
    assert_true(e.from_samples);
    assert_true(e.past_ns == 8e6 && e.benefit_ns == 6e6 && e.cost_ns == 6e6); /* not > */
    x.edge_samples = 18;
    assert_true(jit_rule_decide(&P, &C, &x, &e));
    P.edge_share = 0; /* off: the edges count nothing, too few samples of its own */
    assert_false(jit_rule_decide(&P, &C, &x, &e));
    assert_false(e.from_samples);
    x.samples = 2;
    x.edge_samples = 2; /* 2 + 0.5 * 2 = 3 = min_samples: trusted */
    P.edge_share = 0.5;
    jit_rule_decide(&P, &C, &x, &e);
    assert_true(e.from_samples);
}

static void invalidation_and_versions(void **state) {
    (void)state;
    assert_false(jit_rule_invalidate(&P, 8));
    assert_true(jit_rule_invalidate(&P, 9));
    bool traps = false;
    assert_false(jit_rule_version_ok(&P, 0, &traps));
    assert_true(jit_rule_version_ok(&P, 1, &traps));
    assert_true(traps);
    assert_true(jit_rule_version_ok(&P, 3, &traps));
    assert_true(traps);
    assert_true(jit_rule_version_ok(&P, 4, &traps)); /* K = 4: traps off from here */
    assert_false(traps);
    assert_true(jit_rule_version_ok(&P, 6, &traps));
    assert_false(jit_rule_version_ok(&P, 7, &traps)); /* hard limit */
    assert_int_equal(jit_rule_backoff(&P, 1), 1000);
    assert_int_equal(jit_rule_backoff(&P, 2), 2000);
    assert_int_equal(jit_rule_backoff(&P, 4), 8000);
    assert_int_equal(jit_rule_backoff(&P, 100), 1000ull << 20); /* bounded */
}

static void env_parsing(void **state) {
    (void)state;
    char err[256];
    setenv("SOM_JIT_SPEEDUP", "8", 1);
    setenv("SOM_JIT_DEOPT_LIMIT", "3", 1);
    setenv("SOM_JIT_EDGE_SHARE", "0.25", 1);
    setenv("SOM_JIT_COMPILE_FIXED_NS", "2e6", 1);
    assert_int_equal(jit_rule_from_env(&P, err, sizeof err), 0);
    assert_true(P.edge_share == 0.25 && P.fixed_ns == 2e6);
    unsetenv("SOM_JIT_EDGE_SHARE");
    unsetenv("SOM_JIT_COMPILE_FIXED_NS");
    assert_true(P.speedup == 8.0);
    assert_int_equal(P.deopt_limit, 3);
    setenv("SOM_JIT_THRESHOLD", "lots", 1);
    assert_int_equal(jit_rule_from_env(&P, err, sizeof err), -1);
    assert_string_equal(err,
                        "SOM_JIT_THRESHOLD: expected a number between 1 and 1e+09, got 'lots'");
    assert_int_equal(P.threshold, 1000); /* unchanged on error */
    setenv("SOM_JIT_THRESHOLD", "0", 1);
    assert_int_equal(jit_rule_from_env(&P, err, sizeof err), -1);
    setenv("SOM_JIT_SPEEDUP", "1", 1); /* must exceed 1: no benefit otherwise */
    unsetenv("SOM_JIT_THRESHOLD");
    assert_int_equal(jit_rule_from_env(&P, err, sizeof err), -1);
    unsetenv("SOM_JIT_SPEEDUP");
    unsetenv("SOM_JIT_DEOPT_LIMIT");
    /* quick first for sampled recompilations: on by default, 0 or 1 */
    JitRuleParams q;
    jit_rule_defaults(&q);
    assert_true(q.quick_recompile == 1);
    setenv("SOM_JIT_QUICK_RECOMPILE", "2", 1);
    assert_int_equal(jit_rule_from_env(&q, err, sizeof err), -1);
    assert_string_equal(err, "SOM_JIT_QUICK_RECOMPILE: expected a number between 0 and 1, got '2'");
    setenv("SOM_JIT_QUICK_RECOMPILE", "0", 1);
    assert_int_equal(jit_rule_from_env(&q, err, sizeof err), 0);
    assert_true(q.quick_recompile == 0);
    unsetenv("SOM_JIT_QUICK_RECOMPILE");
    /* quick first versions: on by default, 0, 1 or 2 */
    assert_true(q.quick_first == 1);
    setenv("SOM_JIT_QUICK_FIRST", "3", 1);
    assert_int_equal(jit_rule_from_env(&q, err, sizeof err), -1);
    assert_string_equal(err, "SOM_JIT_QUICK_FIRST: expected a number between 0 and 2, got '3'");
    setenv("SOM_JIT_QUICK_FIRST", "2", 1);
    assert_int_equal(jit_rule_from_env(&q, err, sizeof err), 0);
    assert_true(q.quick_first == 2);
    unsetenv("SOM_JIT_QUICK_FIRST");
    /* the inlining knobs: the builder's default tiny size (-1) and the noise band on */
    assert_true(q.tiny_inline == -1 && q.inline_band == 1);
    setenv("SOM_JIT_TINY_INLINE", "12", 1);
    setenv("SOM_JIT_INLINE_BAND", "0", 1);
    assert_int_equal(jit_rule_from_env(&q, err, sizeof err), 0);
    assert_true(q.tiny_inline == 12 && q.inline_band == 0);
    setenv("SOM_JIT_INLINE_BAND", "yes", 1);
    assert_int_equal(jit_rule_from_env(&q, err, sizeof err), -1);
    assert_string_equal(err, "SOM_JIT_INLINE_BAND: expected a number between 0 and 1, got 'yes'");
    unsetenv("SOM_JIT_TINY_INLINE");
    unsetenv("SOM_JIT_INLINE_BAND");
}

/* Refreshes of the samples stay under 1% of the time they stand for (tick 50 ms). */
static void pacing(void **state) {
    (void)state;
    assert_int_equal(jit_rule_pace(&P, 0, 100000), 0); /* 0.1 ms of 50: 0.2% */
    assert_int_equal(jit_rule_pace(&P, 0, 600000), 1); /* 1.2% */
    assert_int_equal(jit_rule_pace(&P, 1, 600000), 1); /* 0.6% of 100 ms */
    assert_int_equal(jit_rule_pace(&P, 1, 2000000), 3);
    assert_int_equal(jit_rule_pace(&P, 3, 200000), 1); /* 0.1% of 200 ms: halve */
    assert_int_equal(jit_rule_pace(&P, 1023, 1000000000), 1023);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(samples_decide, setup),
        cmocka_unit_test_setup(counters_decide, setup),
        cmocka_unit_test_setup(few_samples, setup),
        cmocka_unit_test_setup(speedup_matters, setup),
        cmocka_unit_test_setup(calibration, setup),
        cmocka_unit_test_setup(fixed_cost, setup),
        cmocka_unit_test_setup(edge_samples, setup),
        cmocka_unit_test_setup(invalidation_and_versions, setup),
        cmocka_unit_test_setup(env_parsing, setup),
        cmocka_unit_test_setup(pacing, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
