/* SPDX-License-Identifier: MIT */
/*
 * num.c - number representation helpers: making normalised integers and
 * boxed doubles, integer/double conversions (correctly rounded, exact
 * comparisons), literal parsing and the docs/language.md 6.3 double printer.
 *
 * Owns: the life cycle of SomBigInt payloads (mpz_init_set at creation,
 * mpz_clear in num_bigint_finalize). Invariant: num_from_mpz never makes a
 * SomBigInt for a value in the small range.
 *
 * The pure helpers keep no state and are thread-safe; nothing here is
 * async-signal-safe.
 */
#include "num.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm.h"

/* ---- making numbers --------------------------------------------------- */

static Value bigint_new(SomVM *vm, mpz_srcptr z) {
    SomBigInt *b = gc_alloc(vm, sizeof(SomBigInt), OBJ_BIGINT, vm->integerClass);
    mpz_init_set(b->z, z);
    return SOM_V(b);
}

Value num_from_i64(SomVM *vm, int64_t i) {
    if (som_fits_smallint(i)) return som_mkint(i);
    mpz_t z;
    mpz_init_set_si(z, (long)i);
    Value v = bigint_new(vm, z);
    mpz_clear(z);
    return v;
}

Value num_from_mpz(SomVM *vm, const mpz_t z) {
    if (mpz_fits_slong_p(z)) {
        long i = mpz_get_si(z);
        if (som_fits_smallint(i)) return som_mkint(i);
    }
    return bigint_new(vm, z);
}

Value num_new_double(SomVM *vm, double d) {
    Value imm;
    if (som_try_imm_double(d, &imm)) return imm;
    SomDouble *o = gc_alloc(vm, sizeof(SomDouble), OBJ_DOUBLE, vm->doubleClass);
    o->d = d;
    return SOM_V(o);
}

void num_bigint_finalize(SomBigInt *b) {
    mpz_clear(b->z);
}

/* ---- parsing ------------------------------------------------------------ */

bool num_text_to_mpz(mpz_t out, const char *text, size_t len) {
    size_t i = 0;
    bool neg = len > 0 && text[0] == '-';
    if (neg) i = 1;
    if (i >= len) return false;
    for (size_t k = i; k < len; k++)
        if (text[k] < '0' || text[k] > '9') return false;
    char *buf = malloc(len - i + 1);
    if (!buf) return false;
    memcpy(buf, text + i, len - i);
    buf[len - i] = 0;
    int rc = mpz_set_str(out, buf, 10);
    free(buf);
    if (rc != 0) return false;
    if (neg) mpz_neg(out, out);
    return true;
}

Value num_parse_integer(SomVM *vm, const char *digits, size_t len, bool neg) {
    if (len <= 18) { /* 10^18 - 1 fits an int64 with room to spare */
        int64_t v = 0;
        for (size_t i = 0; i < len; i++)
            v = v * 10 + (digits[i] - '0');
        return num_from_i64(vm, neg ? -v : v);
    }
    mpz_t z;
    mpz_init(z);
    if (!num_text_to_mpz(z, digits, len)) mpz_set_ui(z, 0); /* caller checked the digits */
    if (neg) mpz_neg(z, z);
    Value v = num_from_mpz(vm, z);
    mpz_clear(z);
    return v;
}

bool num_parse_double(const char *text, size_t len, double *out) {
    char small[64];
    char *buf = len < sizeof small ? small : malloc(len + 1);
    if (!buf) return false;
    memcpy(buf, text, len);
    buf[len] = 0;
    char *end = NULL;
    errno = 0;
    double d = strtod(buf, &end);
    /* ERANGE (underflow/overflow) still gives the correctly rounded value */
    bool ok = len > 0 && end == buf + len && !(buf[0] == ' ' || (buf[0] >= '\t' && buf[0] <= '\r'));
    if (buf != small) free(buf);
    if (ok) *out = d;
    return ok;
}

/* ---- integer <-> double ----------------------------------------------- */

char *num_mpz_to_text(const mpz_srcptr z) {
    char *buf = malloc(mpz_sizeinbase(z, 10) + 2);
    if (buf) mpz_get_str(buf, 10, z);
    return buf;
}

double num_mpz_to_double(const mpz_srcptr z) {
    size_t bits = mpz_sizeinbase(z, 2);
    if (bits <= 63) return (double)mpz_get_si(z); /* int64 -> double rounds to nearest */
    /* Keep the top 64 bits and fold every lower bit into a sticky bit: the
     * 11 spare bits below the 53-bit mantissa then round exactly as the full
     * value would (ties stay ties only when all lower bits are zero). */
    mpz_t t;
    mpz_init(t);
    mpz_abs(t, z);
    size_t shift = bits - 64;
    bool sticky = mpz_scan1(t, 0) < shift;
    mpz_tdiv_q_2exp(t, t, shift);
    uint64_t top = 0;
    mpz_export(&top, NULL, -1, sizeof top, 0, 0, t);
    mpz_clear(t);
    if (sticky) top |= 1;
    if (shift > 2000) return mpz_sgn(z) < 0 ? -INFINITY : INFINITY;
    double d = ldexp((double)top, (int)shift);
    return mpz_sgn(z) < 0 ? -d : d;
}

int num_cmp_mpz_double(const mpz_srcptr z, double d) {
    if (isnan(d)) return 2;
    if (isinf(d)) return d > 0 ? -1 : 1;
    int c = mpz_cmp_d(z, d); /* exact in GMP */
    return c < 0 ? -1 : c > 0;
}

int num_cmp_i64_double(int64_t i, double d) {
    if (isnan(d)) return 2;
    if (i >= -(INT64_C(1) << 53) && i <= (INT64_C(1) << 53)) { /* exact as a double */
        double x = (double)i;
        return x < d ? -1 : x > d;
    }
    mpz_t z;
    mpz_init_set_si(z, (long)i);
    int c = num_cmp_mpz_double(z, d);
    mpz_clear(z);
    return c;
}

bool num_to_double(Value v, double *out) {
    if (som_is_int(v)) {
        *out = (double)som_int(v);
        return true;
    }
    if (num_is_double(v)) {
        *out = num_double(v);
        return true;
    }
    if (!num_is_bigint(v)) return false;
    double d = num_mpz_to_double(((SomBigInt *)v)->z);
    if (isinf(d)) return false;
    *out = d;
    return true;
}

bool num_from_integral_double(SomVM *vm, double d, Value *out) {
    if (isnan(d) || isinf(d)) return false;
    /* 2^62 is exactly representable; everything strictly inside is small */
    if (d > -4611686018427387904.0 && d < 4611686018427387904.0) {
        *out = som_mkint((int64_t)d);
        return true;
    }
    mpz_t z;
    mpz_init_set_d(z, d);
    *out = num_from_mpz(vm, z);
    mpz_clear(z);
    return true;
}

uint32_t num_double_hash(double d) {
    if (d == 0.0) d = 0.0; /* -0.0 = 0.0, so they must hash alike */
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    bits ^= bits >> 33;
    bits *= UINT64_C(0xff51afd7ed558ccd);
    bits ^= bits >> 33;
    return (uint32_t)bits;
}

Value num_int_to_string(SomVM *vm, Value v) {
    if (som_is_int(v)) {
        char buf[32];
        int n = snprintf(buf, sizeof buf, "%lld", (long long)som_int(v));
        return SOM_V(som_string_new(vm, buf, (size_t)n));
    }
    char *text = num_mpz_to_text(((SomBigInt *)v)->z);
    if (!text) return SOM_V(som_string_new(vm, "?", 1));
    Value s = SOM_V(som_string_new(vm, text, strlen(text)));
    free(text);
    return s;
}

const char *num_type_name(SomVM *vm, Value v) {
    switch (som_kind(v)) {
    case -1:
        return "Int";
    case OBJ_BIGINT:
        return "ArbInt";
    case OBJ_DOUBLE:
        return "Double";
    case OBJ_STRING:
        return "String_";
    case OBJ_SYMBOL:
        return "Symbol";
    default:
        break;
    }
    SomClass *c = som_class_of(vm, v);
    if (c && c->name) return c->name->bytes;
    return "Object";
}

/* ---- double printing (docs/language.md 6.3) ---------------------------------------- */

/* Shortest digits of |d| (finite, non-zero) that read back as d: stores the
 * digits without trailing zeros (NUL-terminated) and answers the decimal
 * exponent of the first digit. */
static int shortest_digits(double d, char *digits) {
    char tmp[40];
    /* docs/language.md 6.3 tries precisions 0..16 and takes the first that reads back.
     * For normal doubles, precision 14 (15 digits) gives the same digits
     * after stripping zeros: a double is within 2^-53 (relative) of any
     * decimal that reads back as it, far less than half the 15-digit spacing,
     * so rounding to 15 digits lands on that decimal. Subnormals have coarser
     * ulps and take the full search. */
    int p = d >= DBL_MIN ? 14 : 0;
    for (; p <= 16; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p, d);
        if (strtod(tmp, NULL) == d || p == 16) break;
    }
    /* tmp is "D.DDDDe[+-]XX" or "De[+-]XX" */
    int n = 0;
    const char *s = tmp;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9') digits[n++] = *s;
    while (n > 1 && digits[n - 1] == '0')
        n--;
    digits[n] = 0;
    return (int)strtol(s + 1, NULL, 10);
}

static size_t format_positional(const char *digits, int exp, char *out) {
    size_t n = strlen(digits), k = 0;
    if (exp < 0) {
        out[k++] = '0';
        out[k++] = '.';
        for (int i = -1; i > exp; i--)
            out[k++] = '0';
        memcpy(out + k, digits, n);
        return k + n;
    }
    size_t intlen = (size_t)exp + 1;
    for (size_t i = 0; i < intlen; i++)
        out[k++] = i < n ? digits[i] : '0';
    out[k++] = '.';
    if (n > intlen) {
        memcpy(out + k, digits + intlen, n - intlen);
        k += n - intlen;
    } else {
        out[k++] = '0';
    }
    return k;
}

static size_t format_scientific(const char *digits, int exp, char *out) {
    size_t n = strlen(digits), k = 0;
    out[k++] = digits[0];
    if (n > 1) {
        out[k++] = '.';
        memcpy(out + k, digits + 1, n - 1);
        k += n - 1;
    }
    k += (size_t)sprintf(out + k, "e%d", exp);
    return k;
}

size_t num_format_double(double d, char *buf) {
    if (isnan(d)) return (size_t)sprintf(buf, "NaN");
    if (isinf(d)) return (size_t)sprintf(buf, d > 0 ? "inf" : "-inf");
    if (d == 0.0) return (size_t)sprintf(buf, signbit(d) ? "-0.0" : "0.0");
    size_t k = 0;
    if (d < 0) {
        buf[k++] = '-';
        d = -d;
    }
    char digits[24];
    int exp = shortest_digits(d, digits);
    if (exp >= -4 && exp < 16)
        k += format_positional(digits, exp, buf + k);
    else
        k += format_scientific(digits, exp, buf + k);
    buf[k] = 0;
    return k;
}
