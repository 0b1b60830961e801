/* SPDX-License-Identifier: MIT */
/*
 * test_num_pure.c - unit tests of the VM-independent number helpers of
 * src/vm/num.c: the docs/language.md 6.3 double printer (every example of docs/language.md 6.3 plus
 * round-trip, shortness and layout properties over random doubles), decimal
 * text <-> mpz, correctly rounded mpz -> double, exact integer/double
 * comparison and double parsing.
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

/* Deterministic 64-bit generator (splitmix64) so failures reproduce. */
static uint64_t rng_state = 0x0123456789abcdefULL;
static uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double rnd_finite_double(void) {
    for (;;) {
        uint64_t bits = rnd();
        double d;
        memcpy(&d, &bits, sizeof d);
        if (isfinite(d)) return d;
    }
}

static const char *fmt(double d) {
    static char buf[4][64];
    static int i;
    char *b = buf[i++ & 3];
    size_t n = num_format_double(d, b);
    assert_int_equal(n, strlen(b));
    return b;
}

/* ---- printing ------------------------------------------------------------ */

static void test_format_spec_examples(void **state) {
    (void)state;
    assert_string_equal(fmt(1.0), "1.0");
    assert_string_equal(fmt(0.5), "0.5");
    assert_string_equal(fmt(123.0), "123.0");
    assert_string_equal(fmt(2.3), "2.3");
    assert_string_equal(fmt(100000.19879879123), "100000.19879879123");
    assert_string_equal(fmt(1073741825.1), "1073741825.1");
    assert_string_equal(fmt(0.0001), "0.0001");
    assert_string_equal(fmt(0.10000000000000009), "0.10000000000000009");
    assert_string_equal(fmt(1e16), "1e16");
    assert_string_equal(fmt(1e-5), "1e-5");
    assert_string_equal(fmt(1.152921504606847e18), "1.152921504606847e18");
    assert_string_equal(fmt(6.223015277861142e-61), "6.223015277861142e-61");
    assert_string_equal(fmt(1.8446744073709552e19), "1.8446744073709552e19");
    /* results quoted elsewhere in docs/language.md section 6 */
    assert_string_equal(fmt(ldexp(1.0, 65) / 5.0), "7.378697629483821e18");
    assert_string_equal(fmt(sqrt(3.0)), "1.7320508075688772");
    assert_string_equal(fmt(fmod(5.0, 1.2)), "0.20000000000000018");
    assert_string_equal(fmt(fmod(1.2, 1.1)), "0.09999999999999987");
    assert_string_equal(fmt(-0.16907495402506745), "-0.16907495402506745");
    assert_string_equal(fmt(-0.1690859889909308), "-0.1690859889909308");
    assert_string_equal(fmt(2147483648.0), "2147483648.0");
    assert_string_equal(fmt(1.1), "1.1");
    assert_string_equal(fmt(-3.0), "-3.0");
    assert_string_equal(fmt(36.0 / 6.0), "6.0");
}

static void test_format_special_values(void **state) {
    (void)state;
    assert_string_equal(fmt(NAN), "NaN");
    assert_string_equal(fmt(INFINITY), "inf");
    assert_string_equal(fmt(-INFINITY), "-inf");
    assert_string_equal(fmt(0.0), "0.0");
    assert_string_equal(fmt(-0.0), "-0.0");
    assert_string_equal(fmt(DBL_MAX), "1.7976931348623157e308");
    assert_string_equal(fmt(-DBL_MAX), "-1.7976931348623157e308");
    assert_string_equal(fmt(5e-324), "5e-324");
    assert_string_equal(fmt(DBL_MIN), "2.2250738585072014e-308");
    /* the positional / scientific boundaries */
    assert_string_equal(fmt(9999999999999998.0), "9999999999999998.0");
    assert_string_equal(fmt(1e15), "1000000000000000.0");
    assert_string_equal(fmt(1.5e16), "1.5e16");
    assert_string_equal(fmt(0.00012), "0.00012");
    assert_string_equal(fmt(9.999999999999999e-5), "9.999999999999999e-5");
    assert_string_equal(fmt(1e100), "1e100");
    assert_string_equal(fmt(-1.5e-7), "-1.5e-7");
    assert_string_equal(fmt(4294967296.0), "4294967296.0");
}

/* Every finite double prints to text that reads back as exactly itself. */
static void test_format_roundtrip_random(void **state) {
    (void)state;
    for (int i = 0; i < 100000; i++) {
        double d = rnd_finite_double();
        const char *s = fmt(d);
        double back = strtod(s, NULL);
        if (memcmp(&back, &d, sizeof d) != 0)
            fail_msg("%a printed as %s reads back as %a", d, s, back);
    }
    /* doubles in the positional range, where the layout code is busiest */
    for (int i = 0; i < 50000; i++) {
        double d = ldexp((double)(rnd() >> 11), (int)(rnd() % 80) - 66);
        const char *s = fmt(d);
        if (strtod(s, NULL) != d) fail_msg("%a printed as %s", d, s);
    }
}

/* A value written with k <= 15 significant digits must print with at most k
 * digits (k-digit decimals are unique among doubles), i.e. shortest output. */
static void test_format_shortest(void **state) {
    (void)state;
    for (int i = 0; i < 100000; i++) {
        int k = 1 + (int)(rnd() % 15);
        uint64_t mant = 1 + rnd() % 999999999999999ULL;
        char src[64];
        snprintf(src, sizeof src, "%.*e", k - 1, (double)mant);
        int exp = (int)(rnd() % 600) - 300;
        char *e = strchr(src, 'e');
        snprintf(e, sizeof src - (size_t)(e - src), "e%d", exp);
        double d = strtod(src, NULL);
        const char *s = fmt(d);
        int digits = 0, lead = 1;
        for (const char *p = s; *p && *p != 'e'; p++) {
            if (*p < '0' || *p > '9') continue;
            if (*p == '0' && lead) continue; /* leading zeros of 0.000ddd */
            lead = 0;
            digits++;
        }
        /* integral values < 1e16 print all their integer digits and ".0" */
        if (fabs(d) < 1e16 && d == floor(d)) continue;
        if (digits > k) fail_msg("%s (%d digits) printed as %s (%d digits)", src, k, s, digits);
        assert_true(strtod(s, NULL) == d);
    }
}

/* The significant digits of a printed double (no sign, point, exponent, or
 * leading/trailing zeros). */
static void sig_digits(const char *s, char *out) {
    size_t n = 0;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9' && (n > 0 || *s != '0')) out[n++] = *s;
    while (n > 0 && out[n - 1] == '0')
        n--;
    out[n] = 0;
}

/* The printer picks the same digits as the literal docs/language.md 6.3 search (first
 * precision 0..16 whose "%.*e" text reads back), also for subnormals. */
static void test_format_matches_spec_search(void **state) {
    (void)state;
    for (int i = 0; i < 30000; i++) {
        double d = rnd_finite_double();
        if (i % 3 == 1) d = ldexp((double)(rnd() >> 11), -1074); /* subnormal or tiny */
        if (i % 3 == 2) d = (double)(rnd() % 1000000) / (double)(1 + rnd() % 1000);
        if (d == 0.0) continue;
        char ref[40], want[40], got[40];
        for (int p = 0; p <= 16; p++) {
            snprintf(ref, sizeof ref, "%.*e", p, d);
            if (strtod(ref, NULL) == d) break;
        }
        sig_digits(ref, want);
        sig_digits(fmt(d), got);
        if (strcmp(want, got) != 0) fail_msg("%a: search gives %s, printer %s", d, ref, fmt(d));
    }
}

/* Layout: positional iff 1e-4 <= |x| < 1e16, with a digit after the point;
 * scientific otherwise, without '+' or exponent leading zeros. */
static void test_format_layout(void **state) {
    (void)state;
    for (int i = 0; i < 100000; i++) {
        double d = rnd_finite_double();
        if (d == 0.0) continue;
        const char *s = fmt(d);
        double a = fabs(d);
        const char *e = strchr(s, 'e');
        if (a >= 1e-4 && a < 1e16) {
            assert_null(e);
            const char *dot = strchr(s, '.');
            assert_non_null(dot);
            assert_true(dot[1] >= '0' && dot[1] <= '9');
        } else {
            assert_non_null(e);
            assert_true(e[1] == '-' || (e[1] >= '1' && e[1] <= '9'));
            if (e[1] == '-') assert_true(e[2] >= '1' && e[2] <= '9');
            const char *m = s[0] == '-' ? s + 1 : s;
            assert_true(m[0] >= '1' && m[0] <= '9');
            assert_true(m[1] == 'e' || (m[1] == '.' && e[-1] != '0'));
        }
    }
}

/* ---- text <-> mpz --------------------------------------------------------- */

static void check_text(const char *in, const char *expect) {
    mpz_t z;
    mpz_init(z);
    bool ok = num_text_to_mpz(z, in, strlen(in));
    if (!expect) {
        assert_false(ok);
    } else {
        assert_true(ok);
        char *t = num_mpz_to_text(z);
        assert_string_equal(t, expect);
        free(t);
    }
    mpz_clear(z);
}

static void test_text_to_mpz(void **state) {
    (void)state;
    check_text("0", "0");
    check_text("-0", "0");
    check_text("-2", "-2");
    check_text("007", "7");
    check_text("123342353453453456456456", "123342353453453456456456");
    check_text("-1267650600228229401496703205376", "-1267650600228229401496703205376");
    check_text("9223372036854775808", "9223372036854775808");
    check_text("123b", NULL);
    check_text("", NULL);
    check_text("-", NULL);
    check_text("+1", NULL);
    check_text(" 1", NULL);
    check_text("1 ", NULL);
    check_text("1.5", NULL);
    check_text("--1", NULL);
    /* embedded NUL: the length counts, not the terminator */
    mpz_t z;
    mpz_init(z);
    assert_false(num_text_to_mpz(z, "12\0003", 4));
    assert_true(num_text_to_mpz(z, "12\0003", 2));
    assert_int_equal(mpz_get_si(z), 12);
    mpz_clear(z);
}

/* ---- mpz -> double ------------------------------------------------------------ */

static double via_text(mpz_srcptr z) {
    char *t = num_mpz_to_text(z);
    double d = strtod(t, NULL); /* glibc strtod rounds correctly */
    free(t);
    return d;
}

static void test_mpz_to_double(void **state) {
    (void)state;
    mpz_t z;
    mpz_init(z);
    /* 2^53 + 1 is a tie: rounds to even (2^53); 2^53 + 3 rounds up */
    mpz_ui_pow_ui(z, 2, 53);
    mpz_add_ui(z, z, 1);
    assert_true(num_mpz_to_double(z) == 9007199254740992.0);
    mpz_add_ui(z, z, 2);
    assert_true(num_mpz_to_double(z) == 9007199254740996.0);
    /* 2^100 + 2^47 is a tie (even: down); + 1 more breaks the tie upward,
     * which only the sticky bit far below the kept 64 bits can tell */
    mpz_ui_pow_ui(z, 2, 100);
    mpz_setbit(z, 47);
    assert_true(num_mpz_to_double(z) == ldexp(1.0, 100));
    mpz_setbit(z, 0);
    assert_true(num_mpz_to_double(z) == ldexp(1.0, 100) + ldexp(1.0, 48));
    mpz_neg(z, z);
    assert_true(num_mpz_to_double(z) == -(ldexp(1.0, 100) + ldexp(1.0, 48)));
    /* beyond the double range */
    mpz_ui_pow_ui(z, 2, 1024);
    assert_true(isinf(num_mpz_to_double(z)));
    mpz_ui_pow_ui(z, 2, 5000);
    mpz_neg(z, z);
    assert_true(num_mpz_to_double(z) == -INFINITY);
    /* random sizes against the correctly rounded decimal parser */
    for (int i = 0; i < 20000; i++) {
        int bits = 1 + (int)(rnd() % 1100);
        mpz_set_ui(z, 0);
        for (int b = 0; b < bits; b += 64) {
            mpz_mul_2exp(z, z, 64);
            mpz_add_ui(z, z, (unsigned long)rnd());
        }
        mpz_fdiv_q_2exp(z, z, (mp_bitcnt_t)(((bits + 63) / 64) * 64 - bits));
        if (rnd() & 1) mpz_neg(z, z);
        double want = via_text(z), got = num_mpz_to_double(z);
        if (!(want == got)) fail_msg("%d bits: got %a want %a", bits, got, want);
    }
    mpz_clear(z);
}

/* ---- comparisons ---------------------------------------------------------------- */

static void test_cmp_exact(void **state) {
    (void)state;
    mpz_t z;
    mpz_init(z);
    mpz_ui_pow_ui(z, 2, 53);
    mpz_add_ui(z, z, 1); /* rounds to 2^53 as a double, but is larger */
    assert_int_equal(num_cmp_mpz_double(z, 9007199254740992.0), 1);
    assert_int_equal(num_cmp_mpz_double(z, 9007199254740994.0), -1);
    assert_int_equal(num_cmp_mpz_double(z, INFINITY), -1);
    assert_int_equal(num_cmp_mpz_double(z, -INFINITY), 1);
    assert_int_equal(num_cmp_mpz_double(z, NAN), 2);
    mpz_ui_pow_ui(z, 999999, 4);
    assert_int_equal(num_cmp_mpz_double(z, INFINITY), -1);
    mpz_ui_pow_ui(z, 2, 3000);
    assert_int_equal(num_cmp_mpz_double(z, DBL_MAX), 1);
    mpz_neg(z, z);
    assert_int_equal(num_cmp_mpz_double(z, -DBL_MAX), -1);
    mpz_set_si(z, -3);
    assert_int_equal(num_cmp_mpz_double(z, -2.5), -1);
    assert_int_equal(num_cmp_mpz_double(z, -3.0), 0);
    mpz_clear(z);

    assert_int_equal(num_cmp_i64_double(1, 1.0), 0);
    assert_int_equal(num_cmp_i64_double(1, 1.1), -1);
    assert_int_equal(num_cmp_i64_double(2, 1.9999), 1);
    assert_int_equal(num_cmp_i64_double(0, -0.0), 0);
    assert_int_equal(num_cmp_i64_double(5, NAN), 2);
    int64_t big = (INT64_C(1) << 60) + 1; /* not exact as a double */
    assert_int_equal(num_cmp_i64_double(big, ldexp(1.0, 60)), 1);
    assert_int_equal(num_cmp_i64_double(-big, -ldexp(1.0, 60)), -1);
}

static void test_parse_double(void **state) {
    (void)state;
    double d = 0;
    assert_true(num_parse_double("-1.1", 4, &d));
    assert_true(d == -1.1);
    assert_true(num_parse_double("3423.54656", 10, &d));
    assert_true(d == 3423.54656);
    assert_true(num_parse_double("0", 1, &d));
    assert_true(d == 0.0);
    assert_true(num_parse_double("1e400", 5, &d));
    assert_true(isinf(d));
    assert_false(num_parse_double("", 0, &d));
    assert_false(num_parse_double("1.5x", 4, &d));
    assert_false(num_parse_double(" 1.5", 4, &d));
    assert_false(num_parse_double("abc", 3, &d));
    assert_false(num_parse_double("1\0002", 3, &d));
}

static void test_double_hash(void **state) {
    (void)state;
    assert_int_equal(num_double_hash(1.1), num_double_hash(strtod("1.1", NULL)));
    assert_int_equal(num_double_hash(0.0), num_double_hash(-0.0));
    assert_int_not_equal(num_double_hash(1.0), num_double_hash(2.0));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_spec_examples),
        cmocka_unit_test(test_format_special_values),
        cmocka_unit_test(test_format_roundtrip_random),
        cmocka_unit_test(test_format_shortest),
        cmocka_unit_test(test_format_matches_spec_search),
        cmocka_unit_test(test_format_layout),
        cmocka_unit_test(test_text_to_mpz),
        cmocka_unit_test(test_mpz_to_double),
        cmocka_unit_test(test_cmp_exact),
        cmocka_unit_test(test_parse_double),
        cmocka_unit_test(test_double_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
