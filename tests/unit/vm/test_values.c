/* SPDX-License-Identifier: MIT */
/*
 * test_values.c - the tagged value representation (src/vm/value.h): small
 * integers (tag ...1), immediate doubles (tag ..10) and heap pointers (tag
 * 0000) are disjoint; immediate doubles round-trip bit-exactly inside the
 * exponent window and everything else is boxed; the numeric helpers treat
 * both double representations alike; SOM code cannot tell them apart.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "num.h"
#include "vmtest.h"

static uint64_t bits(double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static double from_bits(uint64_t u) {
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static bool imm(double d) {
    Value v;
    return som_try_imm_double(d, &v);
}

/* Immediate or not, the value must decode to exactly the same bits. */
static void check_roundtrip(double d) {
    Value v;
    if (!som_try_imm_double(d, &v)) return;
    if (!som_is_imm_double(v) || som_is_int(v) || som_is_obj(v))
        fail_msg("tags of %a overlap (value %#llx)", d, (unsigned long long)v);
    if (bits(som_imm_double(v)) != bits(d)) fail_msg("%a decodes to %a", d, som_imm_double(v));
}

static void test_tags_are_disjoint(void **state) {
    (void)state;
    for (int64_t i = -1000; i <= 1000; i++) {
        Value v = som_mkint(i);
        assert_true(som_is_int(v));
        assert_false(som_is_imm_double(v));
        assert_false(som_is_obj(v));
    }
    assert_true(som_is_int(som_mkint(SOM_SMALLINT_MAX)) && som_is_int(som_mkint(SOM_SMALLINT_MIN)));
    Value z;
    assert_true(som_try_imm_double(0.0, &z));
    assert_true(som_is_imm_double(z) && !som_is_obj(z) && !som_is_int(z));
    assert_true(som_imm_double(z) == 0.0 && !signbit(som_imm_double(z)));
}

static void test_window_boundaries(void **state) {
    (void)state;
    /* inside: ordinary values of both signs */
    const double inside[] = {1.0,
                             -1.0,
                             0.5,
                             3.14159,
                             -2.5e-70,
                             1e77,
                             -1e77,
                             0.1,
                             123456789.125,
                             ldexp(1.0, -254),
                             -ldexp(1.0, -255),
                             ldexp(1.0, 256),
                             nextafter(ldexp(1.0, 257), 0.0),
                             nextafter(ldexp(1.0, -255), 1.0)};
    for (size_t i = 0; i < sizeof inside / sizeof *inside; i++) {
        if (!imm(inside[i])) fail_msg("%a should be immediate", inside[i]);
        check_roundtrip(inside[i]);
    }
    /* outside: boxed */
    const double outside[] = {-0.0,
                              ldexp(1.0, -255),
                              ldexp(1.0, 257),
                              -ldexp(1.0, 257),
                              DBL_MAX,
                              -DBL_MAX,
                              DBL_MIN,
                              DBL_TRUE_MIN,
                              1e-300,
                              1e300,
                              INFINITY,
                              -INFINITY,
                              NAN,
                              nextafter(ldexp(1.0, -255), 0.0)};
    for (size_t i = 0; i < sizeof outside / sizeof *outside; i++)
        if (imm(outside[i])) fail_msg("%a should be boxed", outside[i]);
}

static void test_random_roundtrips(void **state) {
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15u;
    long immediates = 0;
    for (int i = 0; i < 1000000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double d = from_bits(x);
        if (isnan(d)) continue;
        check_roundtrip(d);
        immediates += imm(d);
        /* values near 1 are always immediate */
        double near1 = from_bits((x & 0x800fffffffffffffu) | 0x3ff0000000000000u);
        if (!imm(near1)) fail_msg("%a should be immediate", near1);
        check_roundtrip(near1);
    }
    /* about a quarter of all exponents fall inside the window */
    assert_true(immediates > 200000 && immediates < 300000);
}

static void test_helpers_treat_both_alike(void **state) {
    (void)state;
    char e[512];
    SomVM *vm = som_vm_new(NULL, NULL, e, sizeof e);
    assert_non_null(vm);
    const double ds[] = {1.5, -0.0, 1e300, 0.0, -3.25, INFINITY};
    for (size_t i = 0; i < sizeof ds / sizeof *ds; i++) {
        Value v = num_new_double(vm, ds[i]);
        assert_true(num_is_double(v));
        assert_true(num_is_number(v));
        assert_false(num_is_integer(v));
        assert_int_equal(bits(num_double(v)), bits(ds[i]));
        assert_ptr_equal(som_class_of(vm, v), vm->doubleClass);
        assert_int_equal(som_is_imm_double(v), imm(ds[i]));
    }
    som_vm_free(vm);
}

static void test_som_code_cannot_tell(void **state) {
    (void)state;
    /* 2.5 is immediate, 1e300 and -0.0 are boxed: same class, same arithmetic,
     * same printing, and values survive collections in both forms */
    static const char src[] =
        "Dbl = ( run = ( | a b c |\n"
        "  a := 2.5. b := (10 raisedTo: 300) asDouble. c := 0.0 * -1.0.\n"
        "  a class println. b class println. c class println.\n"
        "  (a * 2) println. (b // b) println. (b * b) println. (a + c) println.\n"
        "  (a < b) println. (1 / 3) asDouble class println.\n"
        "  ((1 to: 5) inject: 0.0 into: [:s :i | s + (i * 0.5)]) println ) )";
    const char *want = "Double\nDouble\nDouble\n5.0\n1.0\ninf\n2.5\ntrue\nDouble\n7.5\n";
    for (int stress = 0; stress < 2; stress++) {
        SomOptions o = {0};
        o.gc_stress = stress;
        VtRun r = vt_run_source("Dbl", src, &o);
        if (r.status != 0 || strcmp(r.out, want) != 0)
            fail_msg("stress %d: status %d\n%s%s", stress, r.status, r.out, r.err);
        vt_run_free(&r);
    }
}

/* Results that cross between the two forms: boxed * boxed -> immediate,
 * immediate * boxed -> boxed, -0.0 stays distinct in printing. */
static void test_crossing_forms(void **state) {
    (void)state;
    static const char src[] =
        "D3 = ( run = ( | tiny huge |\n"
        "  tiny := 1 // (10 raisedTo: 300). huge := (10 raisedTo: 300) asDouble.\n"
        "  tiny println. huge println. (tiny * huge) println. (0.0 * -1) println.\n"
        "  ((0.0 * -1) = 0.0) println. (huge * 10) println. 1.5 asInteger println.\n"
        "  (huge hashcode = (10 raisedTo: 300) asDouble hashcode) println.\n"
        "  (huge < (10 raisedTo: 301)) println. ((10 raisedTo: 301) > huge) println ) )";
    const char *want = "1e-300\n1e300\n1.0\n-0.0\ntrue\n1e301\n1\ntrue\ntrue\ntrue\n";
    for (int stress = 0; stress < 2; stress++) {
        SomOptions o = {0};
        o.gc_stress = stress;
        VtRun r = vt_run_source("D3", src, &o);
        if (r.status != 0 || strcmp(r.out, want) != 0)
            fail_msg("stress %d: status %d\n%s%s", stress, r.status, r.out, r.err);
        vt_run_free(&r);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tags_are_disjoint),
        cmocka_unit_test(test_window_boundaries),
        cmocka_unit_test(test_random_roundtrips),
        cmocka_unit_test(test_helpers_treat_both_alike),
        cmocka_unit_test(test_som_code_cannot_tell),
        cmocka_unit_test(test_crossing_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
