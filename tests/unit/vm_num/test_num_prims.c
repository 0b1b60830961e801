/* SPDX-License-Identifier: MIT */
/*
 * test_num_prims.c - unit tests of the Integer, Double and String primitives
 * (src/vm/prim_number.c, src/vm/prim_string.c) against the tables of docs/language.md section 6
 * and 7: overflow promotion and normalisation, division family, bit
 * operations and shifts, mixed comparisons, conversions, the VM-level error
 * texts of docs/language.md section 11, and the primitive tables.
 *
 * Runs against a real VM (som_vm_new). Collection is inhibited while a test
 * runs, because the test keeps operands in unrooted C locals.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "num.h"
#include "prims.h"
#include "vm.h"

static SomVM *vm;

/* ---- helpers ------------------------------------------------------------- */

/* An Integer from decimal text (any size, normalised). */
static Value I(const char *text) {
    mpz_t z;
    mpz_init(z);
    assert_true(num_text_to_mpz(z, text, strlen(text)));
    Value v = num_from_mpz(vm, z);
    mpz_clear(z);
    return v;
}

static Value D(double d) {
    return num_new_double(vm, d);
}
static Value S(const char *s) {
    return SOM_V(som_string_new(vm, s, strlen(s)));
}
static Value SYM(const char *s) {
    return SOM_V(som_symbol(vm, s, strlen(s)));
}

/* Printable form: Integers as digits, Doubles per docs/language.md 6.3 (always with '.',
 * 'e', "inf" or "NaN"), Strings quoted, Symbols with '#', true/false/nil.
 * Fails if an Integer in the small range is a bignum (normalisation). */
static const char *T(Value v) {
    static char bufs[8][512];
    static int next;
    char *b = bufs[next++ & 7];
    if (som_is_int(v)) {
        snprintf(b, 512, "%lld", (long long)som_int(v));
    } else if (num_is_bigint(v)) {
        mpz_srcptr z = ((SomBigInt *)v)->z;
        if (mpz_fits_slong_p(z) && som_fits_smallint(mpz_get_si(z)))
            fail_msg("bignum in the small range: not normalised");
        char *t = num_mpz_to_text(z);
        snprintf(b, 512, "%s", t);
        free(t);
    } else if (num_is_double(v)) {
        num_format_double(num_double(v), b);
    } else if (v == vm->true_ || v == vm->false_ || v == vm->nil) {
        snprintf(b, 512, "%s", v == vm->true_ ? "true" : v == vm->false_ ? "false" : "nil");
    } else if (som_is_string_like(v)) {
        SomString *s = (SomString *)v;
        snprintf(b, 512, "%s%.*s%s", s->h.kind == OBJ_SYMBOL ? "#" : "'", (int)s->len, s->bytes,
                 s->h.kind == OBJ_SYMBOL ? "" : "'");
    } else {
        snprintf(b, 512, "<kind %d>", som_kind(v));
    }
    return b;
}

static Value call(SomPrimFn f, Value a, Value b, Value c) {
    Value args[3] = {a, b, c};
    vm->errmsg[0] = 0;
    int rc = f(vm, args);
    if (rc != PRIM_OK) fail_msg("primitive failed: %s", vm->errmsg);
    return args[0];
}

static const char *C1(SomPrimFn f, Value a) {
    return T(call(f, a, 0, 0));
}
static const char *C2(SomPrimFn f, Value a, Value b) {
    return T(call(f, a, b, 0));
}

/* The error text of a primitive that must fail. */
static const char *E2(SomPrimFn f, Value a, Value b) {
    Value args[3] = {a, b, b};
    vm->errmsg[0] = 0;
    int rc = f(vm, args);
    assert_int_equal(rc, PRIM_ERROR);
    return vm->errmsg;
}

static int setup(void **state) {
    (void)state;
    char err[256] = "";
    SomOptions opts;
    memset(&opts, 0, sizeof opts);
    vm = som_vm_new(&opts, NULL, err, sizeof err);
    if (!vm) {
        fprintf(stderr, "som_vm_new failed: %s\n", err);
        return -1;
    }
    vm->heap.inhibit++;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    vm->heap.inhibit--;
    som_vm_free(vm);
    return 0;
}

/* ---- + - * ---------------------------------------------------------------- */

static void test_add_sub_mul(void **state) {
    (void)state;
    assert_string_equal(C2(num_prim_add, I("3"), I("4")), "7");
    assert_string_equal(C2(num_prim_add, I("4611686018427387903"), I("1")), "4611686018427387904");
    assert_string_equal(C2(num_prim_sub, I("-4611686018427387904"), I("1")),
                        "-4611686018427387905");
    assert_string_equal(C2(num_prim_add, I("9223372036854775807"), I("1")), "9223372036854775808");
    assert_string_equal(C2(num_prim_mul, I("999999"), I("999999")), "999998000001");
    Value x = call(num_prim_mul, I("999998000001"), I("999998000001"), 0);
    assert_string_equal(T(x), "999996000005999996000001");
    assert_string_equal(C2(num_prim_mul, I("3037000500"), I("3037000500")), "9223372037000250000");
    assert_string_equal(C2(num_prim_mul, I("-4611686018427387904"), I("-1")),
                        "4611686018427387904");
    /* `0 - min` (negated/abs of the minimum 64-bit value) */
    assert_string_equal(C2(num_prim_sub, I("0"), I("-9223372036854775808")), "9223372036854775808");
    assert_string_equal(C2(num_prim_add, D(1.5), I("2")), "3.5");
    assert_string_equal(C2(num_prim_add, I("2"), D(0.5)), "2.5");
    assert_string_equal(C2(num_prim_mul, I("1267650600228229401496703205376"), D(0.5)),
                        "6.338253001141147e29");
    assert_string_equal(C2(num_prim_sub, D(0.0), D(1.0)), "-1.0");
    assert_string_equal(C2(num_prim_mul, D(1.1), D(1.1)), "1.2100000000000002");
}

/* Results that fit again become small integers (and equal their literals). */
static void test_normalisation(void **state) {
    (void)state;
    Value big = I("1267650600228229401496703205376"); /* 2^100 */
    assert_true(num_is_bigint(big));
    Value r = call(num_prim_sub, big, I("1267650600228229401496703205375"), 0);
    assert_true(som_is_int(r));
    assert_int_equal(som_int(r), 1);
    r = call(num_prim_add, I("4611686018427387904"), I("-1"), 0); /* 2^62 - 1: small max */
    assert_true(som_is_int(r));
    r = call(num_prim_div, big, big, 0);
    assert_true(som_is_int(r));
    r = call(num_prim_and, big, I("255"), 0);
    assert_true(som_is_int(r) && som_int(r) == 0);
    assert_true(som_is_int(I("-4611686018427387904")));
    assert_true(num_is_bigint(I("-4611686018427387905")));
    assert_true(som_is_int(num_parse_integer(vm, "4611686018427387903", 19, false)));
    assert_true(num_is_bigint(num_parse_integer(vm, "4611686018427387904", 19, false)));
    assert_string_equal(T(num_parse_integer(vm, "123342353453453456456456", 24, true)),
                        "-123342353453453456456456");
    assert_string_equal(T(num_from_i64(vm, INT64_MIN)), "-9223372036854775808");
    /* 2 raisedTo: 100 (repeated *) equals the literal */
    Value p = I("1");
    for (int i = 0; i < 100; i++)
        p = call(num_prim_mul, p, I("2"), 0);
    assert_string_equal(C2(num_prim_eq, p, big), "true");
}

/* ---- / // % rem: ------------------------------------------------------------ */

static void test_division_family(void **state) {
    (void)state;
    assert_string_equal(C2(num_prim_div, I("3"), I("2")), "1");
    assert_string_equal(C2(num_prim_div, I("4"), I("-2")), "-2");
    assert_string_equal(C2(num_prim_div, I("-6"), I("3")), "-2");
    assert_string_equal(C2(num_prim_div, I("-7"), I("2")), "-3");
    assert_string_equal(C2(num_prim_div, I("-4611686018427387904"), I("-1")),
                        "4611686018427387904");
    assert_string_equal(C2(num_prim_div, I("-1267650600228229401496703205377"), I("2")),
                        "-633825300114114700748351602688");
    assert_string_equal(C2(num_prim_div, I("10"), D(1.3)), "7");
    assert_string_equal(C2(num_prim_div, I("-10"), D(0.3)), "-33");
    assert_string_equal(C2(num_prim_div, I("1"), D(1e-20)), "100000000000000000000");
    assert_string_equal(E2(num_prim_div, I("1"), I("0")), "Division by zero.");
    assert_string_equal(E2(num_prim_div, I("1267650600228229401496703205376"), I("0")),
                        "Division by zero.");
    assert_string_equal(E2(num_prim_div, I("1"), D(0.0)), "Division by zero.");

    /* `//` always answers a Double */
    assert_string_equal(C2(num_prim_fdiv, I("1"), I("2")), "0.5");
    assert_string_equal(C2(num_prim_fdiv, I("36"), I("6")), "6.0");
    assert_string_equal(C2(num_prim_fdiv, I("36893488147419103232"), I("5")),
                        "7.378697629483821e18");
    assert_string_equal(C2(num_prim_fdiv, D(1.0), I("4")), "0.25");
    assert_string_equal(C2(num_prim_fdiv, D(1.0), D(0.0)), "inf");

    /* `%` floors (sign of the divisor) */
    assert_string_equal(C2(num_prim_mod, I("10"), I("3")), "1");
    assert_string_equal(C2(num_prim_mod, I("10"), I("-3")), "-2");
    assert_string_equal(C2(num_prim_mod, I("-10"), I("3")), "2");
    assert_string_equal(C2(num_prim_mod, I("-10"), I("-3")), "-1");
    assert_string_equal(C2(num_prim_mod, I("9"), I("3")), "0");
    assert_string_equal(C2(num_prim_mod, I("-1267650600228229401496703205376"), I("3")), "2");
    assert_string_equal(C2(num_prim_mod, I("7"), I("-1267650600228229401496703205376")),
                        "-1267650600228229401496703205369");
    assert_string_equal(C2(num_prim_mod, I("5"), D(1.2)), "0.20000000000000018");
    assert_string_equal(E2(num_prim_mod, I("5"), I("0")), "Division by zero.");

    /* `rem:` truncates (sign of the dividend) */
    assert_string_equal(C2(num_prim_rem, I("10"), I("-3")), "1");
    assert_string_equal(C2(num_prim_rem, I("-10"), I("3")), "-1");
    assert_string_equal(C2(num_prim_rem, I("-10"), I("-3")), "-1");
    assert_string_equal(C2(num_prim_rem, I("-1267650600228229401496703205376"), I("3")), "-1");
    assert_string_equal(E2(num_prim_rem, I("5"), I("0")), "Division by zero.");

    /* Double `%` is fmod (sign of the dividend) */
    assert_string_equal(C2(num_prim_mod, D(-3.0), D(2.0)), "-1.0");
    assert_string_equal(C2(num_prim_mod, D(3.0), D(-2.0)), "1.0");
    assert_string_equal(C2(num_prim_mod, D(-3.0), D(-2.0)), "-1.0");
    assert_string_equal(C2(num_prim_mod, D(1.2), D(1.1)), "0.09999999999999987");
    assert_string_equal(C2(num_prim_mod, D(7.5), I("2")), "1.5");
}

/* ---- & bitXor: << >>> ---------------------------------------------------------- */

static void test_bit_operations(void **state) {
    (void)state;
    assert_string_equal(C2(num_prim_and, I("12"), I("10")), "8");
    assert_string_equal(C2(num_prim_and, I("-1"), I("255")), "255");
    assert_string_equal(C2(num_prim_and, I("-256"), I("-1267650600228229401496703205376")),
                        "-1267650600228229401496703205376");
    assert_string_equal(C2(num_prim_and, I("-1"), I("1267650600228229401496703205377")),
                        "1267650600228229401496703205377");
    assert_string_equal(C2(num_prim_and, I("-1267650600228229401496703205375"), I("7")), "1");
    assert_string_equal(C2(num_prim_xor, I("12"), I("10")), "6");
    assert_string_equal(C2(num_prim_xor, I("-1"), I("0")), "-1");
    assert_string_equal(C2(num_prim_xor, I("-1"), I("1267650600228229401496703205376")),
                        "-1267650600228229401496703205377");
    assert_string_equal(C2(num_prim_xor, I("4611686018427387904"), I("4611686018427387904")), "0");
    assert_string_equal(E2(num_prim_and, I("1"), D(1.0)),
                        "Expected object of type 'Int' but got type 'Double'.");
    assert_string_equal(E2(num_prim_xor, I("1"), S("a")),
                        "Expected object of type 'Int' but got type 'String_'.");
}

static void test_shifts(void **state) {
    (void)state;
    assert_string_equal(C2(num_prim_shl, I("1"), I("4")), "16");
    assert_string_equal(C2(num_prim_shl, I("1"), I("62")), "4611686018427387904");
    assert_string_equal(C2(num_prim_shl, I("1"), I("64")), "18446744073709551616");
    assert_string_equal(C2(num_prim_shl, I("-1"), I("63")), "-9223372036854775808");
    assert_string_equal(C2(num_prim_shl, I("-1"), I("62")), "-4611686018427387904");
    assert_true(som_is_int(call(num_prim_shl, I("-1"), I("62"), 0)));
    assert_string_equal(C2(num_prim_shl, I("3"), I("0")), "3");
    assert_string_equal(C2(num_prim_shl, I("0"), I("100000000000")), "0");
    Value big = call(num_prim_shl, I("1"), I("300"), 0);
    assert_string_equal(C2(num_prim_shl, big, I("2")),
                        "8148143905337944345073782753637512644205873574663745002544561797417525199"
                        "053346824733589504");
    assert_string_equal(E2(num_prim_shl, I("1"), I("-1")), "Negative shift.");
    assert_string_equal(E2(num_prim_shl, I("1"), I("100000000000")), "Shift too big.");
    assert_string_equal(E2(num_prim_shl, I("1"), I("1267650600228229401496703205376")),
                        "Shift too big.");
    assert_string_equal(E2(num_prim_shl, I("1"), D(2.0)),
                        "Expected object of type 'Int' but got type 'Double'.");

    assert_string_equal(C2(num_prim_shr, I("1"), I("1")), "0");
    assert_string_equal(C2(num_prim_shr, I("1024"), I("1")), "512");
    assert_string_equal(C2(num_prim_shr, I("1023"), I("3")), "127");
    assert_string_equal(C2(num_prim_shr, I("-1"), I("0")), "-1");
    assert_string_equal(C2(num_prim_shr, I("-1"), I("1")), "9223372036854775807");
    assert_string_equal(C2(num_prim_shr, I("-1024"), I("1")), "9223372036854775296");
    assert_string_equal(C2(num_prim_shr, I("-1"), I("64")), "0");
    assert_string_equal(C2(num_prim_shr, I("-1"), I("1000")), "0");
    assert_string_equal(C2(num_prim_shr, I("-9223372036854775808"), I("1")), "4611686018427387904");
    assert_string_equal(C2(num_prim_shr, big, I("300")), "1");
    assert_string_equal(C2(num_prim_shr, call(num_prim_shl, I("1"), I("200"), 0), I("200")), "1");
    assert_string_equal(C2(num_prim_shr, I("-1267650600228229401496703205376"), I("99")), "-2");
    assert_string_equal(E2(num_prim_shr, I("1"), I("-3")), "Negative shift.");
}

/* ---- comparisons ------------------------------------------------------------------ */

static void test_equality(void **state) {
    (void)state;
    Value big = I("1267650600228229401496703205376");
    assert_string_equal(C2(num_prim_eq, I("1"), I("1")), "true");
    assert_string_equal(C2(num_prim_eq, big, I("1267650600228229401496703205376")), "true");
    assert_string_equal(C2(num_prim_eq, big, I("1")), "false");
    assert_string_equal(C2(num_prim_ne, big, I("1")), "true");
    assert_string_equal(C2(num_prim_eq, I("1"), D(1.0)), "true");
    assert_string_equal(C2(num_prim_eq, I("1"), D(1.1)), "false");
    assert_string_equal(C2(num_prim_eq, D(1.0), I("1")), "true");
    assert_string_equal(C2(num_prim_eq, D(0.0), D(-0.0)), "true");
    assert_string_equal(C2(num_prim_eq, D(NAN), D(NAN)), "false");
    assert_string_equal(C2(num_prim_eq, I("0"), S("a")), "false");
    assert_string_equal(C2(num_prim_ne, I("0"), S("a")), "true");
    assert_string_equal(
        C2(num_prim_eq, call(num_prim_mul, I("4611686018427387904"), I("2"), 0), S("a")), "false");
    assert_string_equal(C2(num_prim_eq, D(1.0), vm->nil), "false");
    assert_string_equal(C2(num_prim_eq, big, D(ldexp(1.0, 100))), "true");
    /* small integers compare as `asDouble` (2^53 + 1 rounds to 2^53), in both
     * directions; big integers compare exactly */
    assert_string_equal(C2(num_prim_eq, I("9007199254740993"), D(9007199254740992.0)), "true");
    assert_string_equal(C2(num_prim_eq, D(9007199254740992.0), I("9007199254740993")), "true");
    assert_string_equal(C2(num_prim_eq, I("4611686018427387905"), D(4611686018427387904.0)),
                        "false");
    assert_string_equal(C2(num_prim_lt, D(4611686018427387904.0), I("4611686018427387905")),
                        "true");
}

static void test_ordering(void **state) {
    (void)state;
    Value big = I("1267650600228229401496703205376"), nbig = I("-1267650600228229401496703205376");
    assert_string_equal(C2(num_prim_lt, I("1"), I("2")), "true");
    assert_string_equal(C2(num_prim_lt, I("2"), I("2")), "false");
    assert_string_equal(C2(num_prim_lt, big, I("0")), "false");
    assert_string_equal(C2(num_prim_le, nbig, I("-1")), "true");
    assert_string_equal(C2(num_prim_lt, nbig, big), "true");
    assert_string_equal(C2(num_prim_gt, big, nbig), "true");
    assert_string_equal(C2(num_prim_ge, I("3"), I("3")), "true");
    assert_string_equal(C2(num_prim_lt, D(1.0), I("2")), "true");
    assert_string_equal(C2(num_prim_gt, D(2.0), I("0")), "true");
    assert_string_equal(C2(num_prim_lt, I("1"), D(1.5)), "true");
    assert_string_equal(C2(num_prim_lt, D(1.5), D(1.5)), "false");
    assert_string_equal(C2(num_prim_le, D(1.5), D(1.5)), "true");
    Value x = call(num_prim_mul, I("999999"), I("999999"), 0);
    x = call(num_prim_mul, x, I("999999"), 0);
    x = call(num_prim_mul, x, I("999999"), 0);
    assert_string_equal(C2(num_prim_gt, D(INFINITY), x), "true");
    assert_string_equal(C2(num_prim_lt, x, D(INFINITY)), "true");
    assert_string_equal(C2(num_prim_lt, D(-INFINITY), nbig), "true");
    assert_string_equal(C2(num_prim_lt, call(num_prim_shl, I("1"), I("2000"), 0), D(1e308)),
                        "false");
    assert_string_equal(C2(num_prim_lt, D(NAN), I("1")), "false");
    assert_string_equal(C2(num_prim_ge, D(NAN), I("1")), "false");
    assert_string_equal(E2(num_prim_lt, I("1"), S("a")),
                        "Expected a numeric type but got type 'String_'.");
    assert_string_equal(E2(num_prim_lt, D(1.0), vm->nil),
                        "Expected a numeric type but got type 'Nil'.");
}

/* ---- unary Integer primitives ----------------------------------------------------- */

static void test_integer_sqrt(void **state) {
    (void)state;
    Value r = call(num_prim_sqrt, I("25"), 0, 0);
    assert_true(som_is_int(r) && som_int(r) == 5);
    assert_string_equal(C1(num_prim_sqrt, I("3")), "1.7320508075688772");
    assert_string_equal(C1(num_prim_sqrt, I("0")), "0");
    assert_string_equal(C1(num_prim_sqrt, call(num_prim_shl, I("1"), I("200"), 0)),
                        "1267650600228229401496703205376");
    assert_string_equal(C1(num_prim_sqrt, call(num_prim_shl, I("1"), I("199"), 0)),
                        "896364335596578299973461868544");
    assert_string_equal(C1(num_prim_sqrt, call(num_prim_shl, I("1"), I("2100"), 0)),
                        T(call(num_prim_shl, I("1"), I("1050"), 0)));
    assert_string_equal(C1(num_prim_sqrt, I("-4")), "NaN");
}

static void test_integer_conversions(void **state) {
    (void)state;
    assert_string_equal(T(call(num_prim_as_string, I("-1073741825"), 0, 0)), "'-1073741825'");
    assert_string_equal(T(call(num_prim_as_string, I("1180591620717411303424"), 0, 0)),
                        "'1180591620717411303424'");
    assert_string_equal(T(call(num_prim_as_string, I("0"), 0, 0)), "'0'");
    assert_string_equal(C1(num_prim_as_double, I("2147483648")), "2147483648.0");
    assert_string_equal(C1(num_prim_as_double, I("9007199254740993")), "9007199254740992.0");
    assert_string_equal(C1(num_prim_as_double, I("1267650600228229401496703205376")),
                        "1.2676506002282294e30");
    assert_string_equal(E2(num_prim_as_double, call(num_prim_shl, I("1"), I("1024"), 0), 0),
                        "Can't represent as double.");
    assert_string_equal(E2(num_prim_add, call(num_prim_shl, I("1"), I("1024"), 0), D(1.0)),
                        "Can't represent as double.");

    Value two31 = call(num_prim_shl, I("1"), I("31"), 0),
          two32 = call(num_prim_shl, I("1"), I("32"), 0);
    Value ones200 = call(num_prim_sub, call(num_prim_shl, I("1"), I("200"), 0), I("1"), 0);
    assert_string_equal(C1(num_prim_as32_signed, two31), "-2147483648");
    assert_string_equal(C1(num_prim_as32_signed, two32), "0");
    assert_string_equal(C1(num_prim_as32_signed, I("9223372036854775296")), "-512");
    assert_string_equal(C1(num_prim_as32_signed, ones200), "-1");
    assert_string_equal(C1(num_prim_as32_signed, I("-5")), "-5");
    assert_string_equal(C1(num_prim_as32_unsigned, I("-1")), "4294967295");
    assert_string_equal(C1(num_prim_as32_unsigned, two32), "0");
    assert_string_equal(C1(num_prim_as32_unsigned, I("-9223372036854775296")), "512");
    assert_string_equal(C1(num_prim_as32_unsigned, I("9223372036854775296")), "4294966784");
    assert_string_equal(C1(num_prim_as32_unsigned, ones200), "4294967295");
}

static void test_at_random(void **state) {
    (void)state;
    bool seen_other = false;
    Value first = call(num_prim_at_random, I("1000"), 0, 0);
    for (int i = 0; i < 1000; i++) {
        Value r = call(num_prim_at_random, I("1000"), 0, 0);
        assert_true(som_is_int(r));
        assert_true(som_int(r) >= 0 && som_int(r) < 1000);
        if (r != first) seen_other = true;
    }
    assert_true(seen_other);
    Value big = I("1267650600228229401496703205376");
    Value r = call(num_prim_at_random, big, 0, 0);
    assert_string_equal(C2(num_prim_lt, r, big), "true");
    assert_string_equal(C2(num_prim_ge, r, I("0")), "true");
    assert_string_equal(C1(num_prim_at_random, I("0")), "0");
}

static void test_integer_from_string(void **state) {
    (void)state;
    assert_string_equal(C2(num_prim_int_from_string, vm->nil, S("-2")), "-2");
    assert_string_equal(C2(num_prim_int_from_string, vm->nil, S("-0")), "0");
    assert_string_equal(C2(num_prim_int_from_string, vm->nil, S("123342353453453456456456")),
                        "123342353453453456456456");
    assert_string_equal(C2(num_prim_int_from_string, vm->nil, SYM("42")), "42");
    assert_string_equal(E2(num_prim_int_from_string, vm->nil, S("123b")),
                        "'123b' cannot be converted to an Integer.");
    assert_string_equal(E2(num_prim_int_from_string, vm->nil, S("")),
                        "'' cannot be converted to an Integer.");
    assert_string_equal(E2(num_prim_int_from_string, vm->nil, I("3")),
                        "Expected instance of 'String' but got instance of 'Int'.");
}

/* ---- Double primitives -------------------------------------------------------------- */

static void test_double_primitives(void **state) {
    (void)state;
    assert_string_equal(C2(num_prim_add, D(0.1), D(0.2)), "0.30000000000000004");
    assert_string_equal(C2(num_prim_mul, D(3.0), D(1.1)), "3.3000000000000003");
    assert_string_equal(C2(num_prim_fdiv, D(1.0), D(3.0)), "0.3333333333333333");
    assert_string_equal(C2(num_prim_add, D(1.0), I("1267650600228229401496703205376")),
                        "1.2676506002282294e30");
    assert_string_equal(C1(num_prim_sqrt, D(2.0)), "1.4142135623730951");
    assert_string_equal(C1(num_prim_sqrt, D(4.0)), "2.0");
    assert_string_equal(C1(num_prim_sqrt, D(-1.1)), "NaN");
    assert_string_equal(C1(num_prim_sin, D(1.0)), "0.8414709848078965");
    assert_string_equal(C1(num_prim_cos, D(1.0)), "0.5403023058681398");
    assert_string_equal(C1(num_prim_cos, D(0.0)), "1.0");

    assert_string_equal(C1(num_prim_round, D(1.5)), "2");
    assert_string_equal(C1(num_prim_round, D(0.5)), "1");
    assert_string_equal(C1(num_prim_round, D(1.4999)), "1");
    assert_string_equal(C1(num_prim_round, D(-1.1)), "-1");
    assert_string_equal(C1(num_prim_round, D(-1.9)), "-2");
    assert_string_equal(C1(num_prim_round, D(-0.5)), "-1");
    assert_string_equal(C1(num_prim_round, D(1e20)), "100000000000000000000");
    assert_string_equal(C1(num_prim_as_integer, D(1.999)), "1");
    assert_string_equal(C1(num_prim_as_integer, D(-1.999)), "-1");
    assert_string_equal(C1(num_prim_as_integer, D(18446744073709551616.0)), "18446744073709551616");
    assert_string_equal(C1(num_prim_as_integer, D(-4611686018427387904.0)), "-4611686018427387904");
    assert_true(som_is_int(call(num_prim_as_integer, D(-4611686018427387904.0), 0, 0)));
    assert_true(num_is_bigint(call(num_prim_as_integer, D(4611686018427387904.0), 0, 0)));
    assert_string_equal(E2(num_prim_as_integer, D(NAN), 0), "Can't represent NaN as an Integer.");
    assert_string_equal(E2(num_prim_round, D(INFINITY), 0),
                        "Can't represent infinity as an Integer.");

    assert_string_equal(T(call(num_prim_as_string, D(0.5), 0, 0)), "'0.5'");
    assert_string_equal(T(call(num_prim_as_string, D(1e16), 0, 0)), "'1e16'");
    assert_string_equal(C1(num_prim_dbl_infinity, vm->nil), "inf");
    assert_string_equal(C2(num_prim_dbl_from_string, vm->nil, S("-1.1")), "-1.1");
    assert_string_equal(C2(num_prim_dbl_from_string, vm->nil, S("3423.54656")), "3423.54656");
    assert_string_equal(C2(num_prim_dbl_from_string, vm->nil, S("0")), "0.0");
    assert_string_equal(C2(num_prim_dbl_from_string, vm->nil, S("x1")), "NaN");
    assert_string_equal(E2(num_prim_add, D(1.0), S("a")),
                        "Expected a numeric type but got type 'String_'.");
    assert_string_equal(E2(num_prim_mul, I("1"), vm->nil),
                        "Expected a numeric type but got type 'Nil'.");
    assert_string_equal(E2(num_prim_div, D(1.0), I("1")),
                        "Expected object of type 'Int' but got type 'Double'.");
    /* a primitive invoked on a non-number receiver (invokeOn:with:) errs */
    assert_string_equal(E2(num_prim_add, S("a"), I("1")),
                        "Expected a numeric type but got type 'String_'.");
    assert_string_equal(E2(num_prim_sqrt, vm->nil, 0),
                        "Expected a numeric type but got type 'Nil'.");
}

/* ---- strings ------------------------------------------------------------------------ */

static void test_string_primitives(void **state) {
    (void)state;
    assert_string_equal(C2(str_prim_concatenate, S("foo"), S("bar")), "'foobar'");
    assert_string_equal(C2(str_prim_concatenate, SYM("a"), S("b")), "'ab'");
    assert_string_equal(C2(str_prim_concatenate, S(""), S("")), "''");
    assert_int_equal(som_kind(call(str_prim_concatenate, S("a"), SYM("b"), 0)), OBJ_STRING);
    assert_non_null(strstr(E2(str_prim_concatenate, S("a"), I("1")), "'Int'"));

    Value sym = call(str_prim_as_symbol, S("foo:"), 0, 0);
    assert_true(sym == SYM("foo:"));
    assert_true(call(str_prim_as_symbol, sym, 0, 0) == sym);
    Value str = call(str_prim_symbol_as_string, sym, 0, 0);
    assert_int_equal(som_kind(str), OBJ_STRING);
    assert_true(str != sym);
    assert_string_equal(T(str), "'foo:'");

    assert_true(call(str_prim_hashcode, S("foo"), 0, 0) ==
                call(str_prim_hashcode, SYM("foo"), 0, 0));
    assert_true(call(str_prim_hashcode, S("foo"), 0, 0) != call(str_prim_hashcode, S("fop"), 0, 0));
    assert_true(som_is_int(call(str_prim_hashcode, S(""), 0, 0)));

    assert_string_equal(C1(str_prim_length, S("")), "0");
    assert_string_equal(C1(str_prim_length, S("\xe2\x9d\xa4")), "3");
    assert_string_equal(C1(str_prim_length, SOM_V(som_string_new(vm, "a\0b", 3))), "3");

    assert_string_equal(C2(str_prim_eq, S("foo"), SYM("foo")), "true");
    assert_string_equal(C2(str_prim_eq, SYM("foo"), S("foo")), "true");
    assert_string_equal(C2(str_prim_eq, S("foo"), S("fo")), "false");
    assert_string_equal(C2(str_prim_eq, S("a"), I("0")), "false");
    assert_string_equal(
        C2(str_prim_eq, SOM_V(som_string_new(vm, "a\0b", 3)), SOM_V(som_string_new(vm, "a\0c", 3))),
        "false");

    assert_string_equal(T(call(str_prim_substring, S("foobar"), I("2"), I("4"))), "'oob'");
    assert_string_equal(T(call(str_prim_substring, S("foobar"), I("1"), I("6"))), "'foobar'");
    assert_string_equal(T(call(str_prim_substring, S("foo"), I("2"), I("1"))), "''");
    assert_string_equal(T(call(str_prim_substring, S(""), I("1"), I("0"))), "''");
    assert_non_null(strstr(E2(str_prim_substring, S("foo"), I("0")), "bounds"));

    assert_string_equal(C1(str_prim_is_whitespace, S(" \t\n\r")), "true");
    assert_string_equal(C1(str_prim_is_whitespace, S(" a")), "false");
    assert_string_equal(C1(str_prim_is_whitespace, S("")), "false");
    assert_string_equal(C1(str_prim_is_letters, S("abcXYZ")), "true");
    assert_string_equal(C1(str_prim_is_letters, S("abc1")), "false");
    assert_string_equal(C1(str_prim_is_letters, S("")), "false");
    assert_string_equal(C1(str_prim_is_digits, S("0123456789")), "true");
    assert_string_equal(C1(str_prim_is_digits, S("12a")), "false");
    assert_string_equal(C1(str_prim_is_digits, S("")), "false");
    assert_non_null(strstr(E2(str_prim_length, I("1"), 0), "String"));
}

/* ---- randomised, with a collection at every allocation ------------------------------------ */

static uint64_t rng_state = 0x2545F4914F6CDD1DULL;
static uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* A random integer of 0..200 bits with a random sign; small sizes are common
 * so that both representations and their boundaries are exercised. */
static void rnd_mpz(mpz_t z) {
    int bits = (int)(rnd() % 4 == 0 ? rnd() % 200 : 55 + rnd() % 16);
    mpz_set_ui(z, 0);
    for (int b = 0; b < bits; b += 32) {
        mpz_mul_2exp(z, z, 32);
        mpz_add_ui(z, z, (unsigned long)(rnd() & 0xffffffffu));
    }
    if (bits % 32) mpz_fdiv_q_2exp(z, z, (mp_bitcnt_t)(32 - bits % 32));
    if (rnd() & 1) mpz_neg(z, z);
}

typedef enum { R_ADD, R_SUB, R_MUL, R_DIV, R_MOD, R_REM, R_AND, R_XOR, R_SHL, R_SHR, R_N } ROp;

/* The expected result of op, computed with GMP directly (b != 0 for division). */
static void expected(ROp op, mpz_t r, mpz_srcptr a, mpz_srcptr b) {
    switch (op) {
    case R_ADD:
        mpz_add(r, a, b);
        break;
    case R_SUB:
        mpz_sub(r, a, b);
        break;
    case R_MUL:
        mpz_mul(r, a, b);
        break;
    case R_DIV:
        mpz_tdiv_q(r, a, b);
        break;
    case R_MOD:
        mpz_fdiv_r(r, a, b);
        break;
    case R_REM:
        mpz_tdiv_r(r, a, b);
        break;
    case R_AND:
        mpz_and(r, a, b);
        break;
    case R_XOR:
        mpz_xor(r, a, b);
        break;
    case R_SHL:
        mpz_mul_2exp(r, a, mpz_get_ui(b));
        break;
    case R_SHR:
        if (mpz_sgn(b) != 0 && mpz_fits_slong_p(a)) { /* logical on 64 bits */
            uint64_t u = (uint64_t)mpz_get_si(a), n = mpz_get_ui(b);
            mpz_set_ui(r, n >= 64 ? 0 : (unsigned long)(u >> n));
        } else {
            mpz_fdiv_q_2exp(r, a, mpz_get_ui(b));
        }
        break;
    default:
        break;
    }
}

static void test_random_under_gc_stress(void **state) {
    (void)state;
    static const SomPrimFn fns[R_N] = {num_prim_add, num_prim_sub, num_prim_mul, num_prim_div,
                                       num_prim_mod, num_prim_rem, num_prim_and, num_prim_xor,
                                       num_prim_shl, num_prim_shr};
    Value args[2] = {vm->nil, vm->nil};
    som_root_push(vm, &args[0]);
    som_root_push(vm, &args[1]);
    uint64_t collections = vm->heap.stats.collections;
    vm->heap.inhibit--;
    vm->opts.gc_stress = true;
    mpz_t a, b, r;
    mpz_inits(a, b, r, NULL);
    for (int i = 0; i < 1500; i++) {
        ROp op = (ROp)(rnd() % R_N);
        rnd_mpz(a);
        rnd_mpz(b);
        if (op == R_SHL || op == R_SHR) mpz_set_ui(b, (unsigned long)(rnd() % 130));
        if (mpz_sgn(b) == 0 && op >= R_DIV && op <= R_REM) mpz_set_ui(b, 7);
        args[0] = num_from_mpz(vm, a);
        args[1] = num_from_mpz(vm, b);
        assert_int_equal(fns[op](vm, args), PRIM_OK);
        expected(op, r, a, b);
        char *want = num_mpz_to_text(r);
        if (strcmp(T(args[0]), want) != 0)
            fail_msg("op %d on %s, %s: got %s want %s", op, mpz_get_str(NULL, 10, a),
                     mpz_get_str(NULL, 10, b), T(args[0]), want);
        free(want);
        /* and back to text through the VM */
        assert_int_equal(num_prim_as_string(vm, args), PRIM_OK);
    }
    /* strings: every primitive that allocates */
    for (int i = 0; i < 200; i++) {
        args[0] = S("hello, ");
        args[1] = S("world");
        assert_int_equal(str_prim_concatenate(vm, args), PRIM_OK);
        assert_int_equal(str_prim_as_symbol(vm, args), PRIM_OK);
        assert_int_equal(str_prim_symbol_as_string(vm, args), PRIM_OK);
        Value sub[3] = {args[0], som_mkint(3), som_mkint(9)};
        som_root_push(vm, &sub[0]);
        assert_int_equal(str_prim_substring(vm, sub), PRIM_OK);
        som_root_pop(vm, 1);
        assert_string_equal(T(sub[0]), "'llo, wo'");
    }
    mpz_clears(a, b, r, NULL);
    vm->opts.gc_stress = false;
    vm->heap.inhibit++;
    som_root_pop(vm, 2);
    assert_true(vm->heap.stats.collections - collections >= 3000); /* it really collected */
    assert_int_equal(gc_verify(vm), 0);
}

/* ---- tables --------------------------------------------------------------------------- */

static const PrimDef *find(const PrimDef *t, const char *cls, bool meta, const char *sel) {
    for (; t->cls; t++)
        if (!strcmp(t->cls, cls) && t->meta == meta && !strcmp(t->sel, sel)) return t;
    return NULL;
}

static void test_tables_complete(void **state) {
    (void)state;
    static const char *int_sels[] = {"+",
                                     "-",
                                     "*",
                                     "/",
                                     "//",
                                     "%",
                                     "rem:",
                                     "&",
                                     "<<",
                                     ">>>",
                                     "bitXor:",
                                     "sqrt",
                                     "atRandom",
                                     "=",
                                     "<",
                                     "asString",
                                     "as32BitSignedValue",
                                     "as32BitUnsignedValue",
                                     "asDouble"};
    static const char *dbl_sels[] = {"+",         "-",   "*",   "//", "%", "sqrt",    "round",
                                     "asInteger", "cos", "sin", "=",  "<", "asString"};
    static const char *str_sels[] = {"concatenate:",         "asSymbol",  "hashcode", "length",
                                     "isWhiteSpace",         "isLetters", "isDigits", "=",
                                     "primSubstringFrom:to:"};
    for (size_t i = 0; i < sizeof int_sels / sizeof *int_sels; i++)
        assert_non_null(find(prim_number_defs, "Integer", false, int_sels[i]));
    for (size_t i = 0; i < sizeof dbl_sels / sizeof *dbl_sels; i++)
        assert_non_null(find(prim_number_defs, "Double", false, dbl_sels[i]));
    for (size_t i = 0; i < sizeof str_sels / sizeof *str_sels; i++)
        assert_non_null(find(prim_string_defs, "String", false, str_sels[i]));
    assert_non_null(find(prim_number_defs, "Integer", true, "fromString:"));
    assert_non_null(find(prim_number_defs, "Double", true, "fromString:"));
    assert_non_null(find(prim_number_defs, "Double", true, "PositiveInfinity"));
    assert_non_null(find(prim_string_defs, "Symbol", false, "asString"));
    for (const PrimDef *t = prim_number_defs; t->cls; t++)
        assert_non_null(t->fn);
    for (const PrimDef *t = prim_string_defs; t->cls; t++)
        assert_non_null(t->fn);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_sub_mul),
        cmocka_unit_test(test_normalisation),
        cmocka_unit_test(test_division_family),
        cmocka_unit_test(test_bit_operations),
        cmocka_unit_test(test_shifts),
        cmocka_unit_test(test_equality),
        cmocka_unit_test(test_ordering),
        cmocka_unit_test(test_integer_sqrt),
        cmocka_unit_test(test_integer_conversions),
        cmocka_unit_test(test_at_random),
        cmocka_unit_test(test_integer_from_string),
        cmocka_unit_test(test_double_primitives),
        cmocka_unit_test(test_string_primitives),
        cmocka_unit_test(test_random_under_gc_stress),
        cmocka_unit_test(test_tables_complete),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
