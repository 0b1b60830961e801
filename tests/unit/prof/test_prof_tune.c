/* SPDX-License-Identifier: MIT */
/*
 * test_prof_tune.c - the self-tuning interval driven by a fake clock: thresholds,
 * budget floor, overhead budget, freezing, and the window length.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tune.h"

/* Feeds n samples, spaced dt_ns on the fake clock, with the given repetition rate.
 * Returns the number of interval changes. */
static int feed(ProfTune *t, uint64_t *clock, uint32_t n, double rep, uint64_t dt_ns) {
    int changes = 0;
    double acc = 0;
    for (uint32_t i = 0; i < n; i++) {
        acc += rep;
        int r = acc >= 1.0;
        if (r) acc -= 1.0;
        *clock += dt_ns;
        changes += prof_tune_sample(t, r, *clock, NULL, NULL);
    }
    return changes;
}

static void init(ProfTune *t, uint64_t interval, int freeze) {
    /* cost 40 us, budget 1% -> floor 4 ms; thresholds 1% / 15%; window 1000 */
    prof_tune_init(t, interval, 40000, 0.01, 0.01, 0.15, 1000, freeze, 4000000);
}

static void test_high_repetition_lengthens(void **state) {
    (void)state;
    ProfTune t;
    uint64_t clock = 0, o = 0, n = 0;
    init(&t, 8000000, 0);
    /* 999 samples: no decision yet */
    assert_int_equal(feed(&t, &clock, 999, 0.5, 8000000), 0);
    clock += 8000000;
    assert_int_equal(prof_tune_sample(&t, 1, clock, &o, &n), 1);
    assert_int_equal(o, 8000000);
    assert_int_equal(n, 16000000);
    assert_int_equal(t.changes, 1);
}

static void test_low_repetition_shortens_to_budget_floor(void **state) {
    (void)state;
    ProfTune t;
    uint64_t clock = 0;
    init(&t, 16000000, 0);
    assert_int_equal(feed(&t, &clock, 1000, 0.0, 16000000), 1);
    assert_int_equal(t.interval_ns, 8000000);
    assert_int_equal(feed(&t, &clock, 1000, 0.0, 8000000), 1);
    assert_int_equal(t.interval_ns, 4000000);
    /* the budget floor (40 us / 1% = 4 ms) stops it */
    assert_int_equal(feed(&t, &clock, 3000, 0.0, 4000000), 0);
    assert_int_equal(t.interval_ns, 4000000);
}

static void test_between_thresholds_is_stable(void **state) {
    (void)state;
    ProfTune t;
    uint64_t clock = 0;
    init(&t, 10000000, 0);
    assert_int_equal(feed(&t, &clock, 5000, 0.05, 10000000), 0);
    assert_int_equal(t.interval_ns, 10000000);
    assert_true(t.last_rate > 0.04 && t.last_rate < 0.06);
}

static void test_overhead_budget_wins(void **state) {
    (void)state;
    ProfTune t;
    uint64_t clock = 0;
    init(&t, 10000000, 0);
    /* samples arrive every 1 ms of fake time (several threads): 40 us each = 4% > 1% */
    assert_int_equal(feed(&t, &clock, 1000, 0.05, 1000000), 1);
    assert_int_equal(t.interval_ns, 20000000);
}

static void test_freeze_once_stable(void **state) {
    (void)state;
    ProfTune t;
    uint64_t clock = 0;
    init(&t, 10000000, 1);
    assert_int_equal(feed(&t, &clock, 3000, 0.05, 10000000), 0);
    assert_true(t.frozen);
    assert_int_equal(feed(&t, &clock, 3000, 0.9, 10000000), 0); /* would lengthen */
    assert_int_equal(t.interval_ns, 10000000);
}

static void test_clamps_initial_interval(void **state) {
    (void)state;
    ProfTune t;
    init(&t, 1000000, 0); /* 1 kHz is below the budget floor */
    assert_int_equal(t.interval_ns, 4000000);
    assert_int_equal(prof_tune_budget_interval(50000, 0.01), 5000000);
    assert_int_equal(prof_tune_budget_interval(50000, 0), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_high_repetition_lengthens),
        cmocka_unit_test(test_low_repetition_shortens_to_budget_floor),
        cmocka_unit_test(test_between_thresholds_is_stable),
        cmocka_unit_test(test_overhead_budget_wins),
        cmocka_unit_test(test_freeze_once_stable),
        cmocka_unit_test(test_clamps_initial_interval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
