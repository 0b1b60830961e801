/* SPDX-License-Identifier: MIT */
/*
 * test_feedback.c - the rules of sampled type feedback (src/jit/feedback.c) with a fake clock
 * and fake observations: a slot is ready after T1 observations, a version is ready with the
 * ready share and one narrower slot, a slot past T2 while its version is not ready is cleared
 * (pollution), the override kinds, the per-sample cap of jit_fb_observe, and both deopt-loop
 * break-out strategies.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "bytecode.h"
#include "feedback.h"
#include "object.h"

#define BIT(a, b) (1u << ((a)*4 + (b)))
#define II BIT(TF_INT, TF_INT)
#define ID BIT(TF_INT, TF_DOUBLE)
#define DI BIT(TF_DOUBLE, TF_INT)
#define DD BIT(TF_DOUBLE, TF_DOUBLE)
#define OO BIT(TF_OTHER, TF_OTHER)

static JitFbParams P;
static JitFbSlot slots[4];
static JitFbTable T;

static void table(uint32_t n, uint32_t compiled) {
    jit_fb_defaults(&P);
    memset(slots, 0, sizeof slots);
    memset(&T, 0, sizeof T);
    for (uint32_t i = 0; i < n; i++)
        slots[i].s = (JitFbSite){.site = i, .op = BC_ADD, .compiled = compiled};
    T.slots = slots;
    T.nslots = n;
    T.t1 = P.t1;
    T.p = &P;
}

static void observe(uint32_t slot, uint32_t kinds, uint32_t times, uint64_t now) {
    for (uint32_t i = 0; i < times; i++)
        jit_fb_record(&P, &T, &slots[slot], kinds, NULL, now);
}

static void test_narrower(void **state) {
    (void)state;
    assert_true(jit_fb_narrower(BC_ADD, II | DI, II));
    assert_true(jit_fb_narrower(BC_ADD, II | DD | DI, DD | DI));
    assert_false(jit_fb_narrower(BC_MOD, II | DD, DD)); /* no unboxed double form */
    assert_true(jit_fb_narrower(BC_MOD, II | DD, II));
    assert_false(jit_fb_narrower(BC_ADD, II | DI, II | DI)); /* the same */
    assert_false(jit_fb_narrower(BC_ADD, II, II | DI));      /* wider */
    assert_false(jit_fb_narrower(BC_ADD, II | DI, 0));       /* nothing seen */
    assert_false(jit_fb_narrower(BC_ADD, II | OO, OO));      /* objects: nothing to gain */
    assert_false(jit_fb_narrower(BC_ADD, II | DI | TF_OVERFLOWED, II));
    assert_true(jit_fb_slot_useful(BC_ADD, II | DI));
    assert_true(jit_fb_slot_useful(BC_ADD, DD | OO));
    assert_false(jit_fb_slot_useful(BC_ADD, II));
    assert_false(jit_fb_slot_useful(BC_ADD, OO));
    assert_false(jit_fb_slot_useful(BC_MOD, DD | OO));
    assert_false(jit_fb_slot_useful(BC_ADD, II | DI | TF_OVERFLOWED));
}

/* Ready after T1, not before; with two slots both must be ready at share 1, one at 0.5. */
static void test_ready_t1_and_share(void **state) {
    (void)state;
    table(2, II | DI);
    observe(0, II, P.t1 - 1, 10);
    assert_false(jit_fb_table_ready(&P, &T));
    observe(0, II, 1, 20);
    assert_true(jit_fb_table_ready(&P, &T)); /* 1 of 2 ready = 0.5 */
    assert_int_equal(T.phase_ns, 10);        /* the first observation of the narrower slot */
    P.ready_share = 1.0;
    assert_false(jit_fb_table_ready(&P, &T));
    observe(1, II | DI, P.t1, 30); /* ready but not narrower */
    assert_true(jit_fb_table_ready(&P, &T));
    assert_int_equal(jit_fb_override(&T, &slots[0]), II);
    assert_int_equal(jit_fb_override(&T, &slots[1]), II | DI); /* kept */
}

/* A ready version needs one narrower slot: genuinely mixed slots never make it ready. */
static void test_not_ready_without_narrower(void **state) {
    (void)state;
    table(2, II | DI);
    observe(0, II, P.t1, 1);
    observe(0, DI, 1, 2);
    observe(1, DI, 3, 3);
    observe(1, II, P.t1, 4);
    assert_false(jit_fb_table_ready(&P, &T));
}

/* Pollution: a slot past T2 while the version is not ready starts over, so observations
 * from before a phase change stop counting. */
static void test_pollution_clear(void **state) {
    (void)state;
    table(2, II | DI);
    P.ready_share = 1.0;
    uint32_t t2 = P.t2_factor * P.t1;
    observe(0, DI, 1, 5); /* an early Double */
    observe(0, II, t2 - 1, 6);
    assert_int_equal(slots[0].n, t2);
    assert_false(jit_fb_table_ready(&P, &T)); /* slot 1 has nothing */
    assert_true(jit_fb_record(&P, &T, &slots[0], II, NULL, 7));
    assert_int_equal(slots[0].n, 0);
    assert_int_equal(slots[0].bits, 0);
    assert_int_equal(slots[0].clears, 1);
    assert_int_equal(T.clears, 1);
    observe(0, II, P.t1, 100);
    observe(1, II, P.t1, 110);
    assert_true(jit_fb_table_ready(&P, &T));
    assert_int_equal(jit_fb_override(&T, &slots[0]), II);
    assert_int_equal(T.phase_ns, 110);
    /* a ready table is not cleared */
    T.ready = true;
    observe(0, II, t2 + 5, 200);
    assert_int_equal(slots[0].clears, 1);
}

/* jit_fb_observe: counts the burst down, and counts at most T1 observations of one slot per
 * sample, so a hot slot cannot use up the burst of the code's other slots. */
static void test_observe_cap(void **state) {
    (void)state;
    static SomVM vm;
    table(2, II | DI);
    P.ready_share = 1.0; /* both slots must be ready */
    T.vm = &vm;
    vm.jit_fb_burst = 100;
    vm.jit_fb_armed = 100; /* a sample */
    for (int i = 0; i < 60; i++)
        jit_fb_observe(&T, 0, som_mkint(1), som_mkint(2));
    assert_int_equal(slots[0].n, P.t1);
    assert_int_equal(vm.jit_fb_armed, 40);
    jit_fb_observe(&T, 1, som_mkint(1), som_mkint(2));
    assert_int_equal(slots[1].n, 1);
    assert_false(T.ready);
    vm.jit_fb_armed = 100; /* the next sample */
    for (int i = 0; i < 30; i++)
        jit_fb_observe(&T, 1, som_mkint(1), som_mkint(2));
    assert_int_equal(slots[1].n, P.t1); /* ready at T1: the table stops recording */
    assert_true(T.ready);
    assert_true(T.ready_ns > 0);
    uint64_t before = T.observations;
    jit_fb_observe(&T, 0, som_mkint(1), som_mkint(2)); /* ready: nothing more recorded */
    assert_int_equal(T.observations, before);
}

/* Break-out, cool-down: each deopt loop of a sampled version doubles the wait. */
static void test_loop_cooldown(void **state) {
    (void)state;
    jit_fb_defaults(&P);
    P.loop = JFB_LOOP_COOLDOWN;
    JitFbMethod m = {0};
    assert_true(jit_fb_may_recompile(&P, &m, 0));
    m.sampled_version = 2;
    jit_fb_deopt(&P, &m, 1, true, 1000); /* not the sampled version: nothing */
    assert_int_equal(m.loops, 0);
    jit_fb_deopt(&P, &m, 2, false, 1000); /* a deopt that did not invalidate */
    assert_int_equal(m.loops, 0);
    assert_int_equal(m.cooldown_until, 0);
    jit_fb_deopt(&P, &m, 2, true, 1000);
    assert_int_equal(m.loops, 1);
    assert_int_equal(m.cooldown_until, 1000 + P.cooldown_ns);
    assert_false(jit_fb_may_recompile(&P, &m, 1000 + P.cooldown_ns - 1));
    assert_true(jit_fb_may_recompile(&P, &m, 1000 + P.cooldown_ns));
    m.sampled_version = 4;
    jit_fb_deopt(&P, &m, 4, true, 5000);
    assert_int_equal(m.cooldown_until, 5000 + 2 * P.cooldown_ns);
    assert_int_equal(jit_fb_t1(&P, &m), P.t1); /* the threshold is not touched */
    P.on = false;
    assert_false(jit_fb_may_recompile(&P, &m, UINT64_MAX));
}

/* Break-out, threshold: each deopt of a sampled version adds T1 to the next versions' T1. */
static void test_loop_threshold(void **state) {
    (void)state;
    jit_fb_defaults(&P);
    P.loop = JFB_LOOP_THRESHOLD;
    JitFbMethod m = {.sampled_version = 2};
    jit_fb_deopt(&P, &m, 2, false, 10);
    jit_fb_deopt(&P, &m, 2, false, 20);
    assert_int_equal(jit_fb_t1(&P, &m), 3 * P.t1);
    jit_fb_deopt(&P, &m, 2, true, 30);
    assert_int_equal(jit_fb_t1(&P, &m), 4 * P.t1);
    assert_int_equal(m.loops, 1);
    assert_true(jit_fb_may_recompile(&P, &m, 30)); /* no cool-down */
    P.loop = JFB_LOOP_NONE;
    JitFbMethod n = {.sampled_version = 3};
    jit_fb_deopt(&P, &n, 3, true, 40);
    assert_int_equal(jit_fb_t1(&P, &n), P.t1);
    assert_true(jit_fb_may_recompile(&P, &n, 40));
}

/* Send slots: a send compiled generically (megamorphic: compiled 0xffff, or more classes than
 * max_poly) is narrower once its ready observations name at most max_poly classes; a fifth
 * class marks it "many"; a clear forgets the classes. */
static void test_send_slot(void **state) {
    (void)state;
    static SomClass a, b, c, d, e;
    table(1, 0);
    slots[0].s = (JitFbSite){.site = 0, .op = JIT_FB_SEND, .compiled = 0xffff, .max_poly = 4};
    for (uint32_t i = 0; i < P.t1; i++)
        jit_fb_record(&P, &T, &slots[0], 0, i % 2 ? &a : &b, 10 + i);
    assert_int_equal(slots[0].ncls, 2);
    assert_int_equal(slots[0].cls_n[0] + slots[0].cls_n[1], P.t1);
    assert_true(jit_fb_slot_narrower(&slots[0]));
    assert_true(jit_fb_table_ready(&P, &T));
    assert_int_equal(jit_fb_override(&T, &slots[0]), 0xffff); /* kinds: not for sends */
    jit_fb_record(&P, &T, &slots[0], 0, &c, 50);
    jit_fb_record(&P, &T, &slots[0], 0, &d, 51);
    assert_true(jit_fb_slot_narrower(&slots[0])); /* four fit the guards */
    jit_fb_record(&P, &T, &slots[0], 0, &e, 52);
    assert_true(slots[0].many);
    assert_false(jit_fb_slot_narrower(&slots[0]));
    /* compiled for 3 classes with max_poly 2: one class seen is narrower */
    slots[0].s.compiled = 3;
    slots[0].s.max_poly = 2;
    slots[0].ncls = 1;
    slots[0].many = 0;
    assert_true(jit_fb_slot_narrower(&slots[0]));
    slots[0].s.compiled = 2; /* guarded already: nothing to gain */
    assert_false(jit_fb_slot_narrower(&slots[0]));
    /* pollution clears the classes too */
    slots[0].s.compiled = 0xffff;
    slots[0].n = P.t2_factor * P.t1;
    T.ready = false;
    assert_true(jit_fb_record(&P, &T, &slots[0], 0, &a, 60));
    assert_int_equal(slots[0].ncls, 0);
    assert_int_equal(slots[0].many, 0);
}

static void test_params(void **state) {
    (void)state;
    uint32_t l = 99;
    assert_true(jit_fb_parse_loop("threshold", &l));
    assert_int_equal(l, JFB_LOOP_THRESHOLD);
    assert_false(jit_fb_parse_loop("sometimes", &l));
    assert_int_equal(l, JFB_LOOP_THRESHOLD);
    assert_string_equal(jit_fb_loop_name(JFB_LOOP_COOLDOWN), "cooldown");
    assert_int_equal(jit_fb_kinds(som_mkint(1), som_mkint(2)), II);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_narrower),
        cmocka_unit_test(test_ready_t1_and_share),
        cmocka_unit_test(test_not_ready_without_narrower),
        cmocka_unit_test(test_pollution_clear),
        cmocka_unit_test(test_observe_cap),
        cmocka_unit_test(test_loop_cooldown),
        cmocka_unit_test(test_loop_threshold),
        cmocka_unit_test(test_send_slot),
        cmocka_unit_test(test_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
