/* SPDX-License-Identifier: MIT */
/*
 * prim_number.c - the Integer and Double primitives (docs/language.md 6.1, 6.2, section 8,
 * 10.5) and their table prim_number_defs[].
 *
 * Every primitive here is total: it accepts any receiver and argument and
 * either answers a value or reports a VM-level error with the docs/language.md section 11
 * wording (`Division by zero.`, `Expected a numeric type but got type
 * 'String_'.`, `Shift too big.`, ...). Integer results are normalised (small
 * when they fit). Each primitive allocates at most one object, so arguments
 * (on the VM stack) are the only roots needed.
 *
 * Runs on the VM thread; not async-signal-safe.
 */
#include "num.h"

#include <math.h>
#include <string.h>

#include "prims.h"
#include "vm.h"

/* Largest result size (in bits) `<<` may build before it is "too big". */
#define NUM_MAX_SHIFT_BITS (UINT64_C(1) << 28)

typedef enum { NK_SMALL, NK_BIG, NK_DOUBLE, NK_OTHER } NumKind;

static NumKind kind_of(Value v) {
    if (som_is_int(v)) return NK_SMALL;
    if (som_is_imm_double(v)) return NK_DOUBLE;
    switch (som_hdr(v)->kind) {
    case OBJ_BIGINT:
        return NK_BIG;
    case OBJ_DOUBLE:
        return NK_DOUBLE;
    default:
        return NK_OTHER;
    }
}

/* ---- errors ------------------------------------------------------------ */

static int err_numeric(SomVM *vm, Value v) {
    return som_prim_error(vm, "Expected a numeric type but got type '%s'.", num_type_name(vm, v));
}

static int err_int(SomVM *vm, Value v) {
    return som_prim_error(vm, "Expected object of type 'Int' but got type '%s'.",
                          num_type_name(vm, v));
}

static int err_zero(SomVM *vm) {
    return som_prim_error(vm, "Division by zero.");
}
static int err_double(SomVM *vm) {
    return som_prim_error(vm, "Can't represent as double.");
}

/* ---- operand helpers --------------------------------------------------- */

/* An mpz view of an integer Value: `tmp` (initialised) holds small values. */
static mpz_srcptr as_mpz(Value v, mpz_t tmp) {
    if (som_is_int(v)) {
        mpz_set_si(tmp, (long)som_int(v));
        return tmp;
    }
    return ((SomBigInt *)v)->z;
}

static bool is_zero(Value v) {
    return v == som_mkint(0);
}

/* Coerces two numbers to doubles; reports the errors of docs/language.md section 11 otherwise. */
static int coerce2(SomVM *vm, Value a, Value b, double *x, double *y) {
    if (kind_of(a) == NK_OTHER) return err_numeric(vm, a);
    if (kind_of(b) == NK_OTHER) return err_numeric(vm, b);
    if (!num_to_double(a, x) || !num_to_double(b, y)) return err_double(vm);
    return PRIM_OK;
}

static int answer_double(SomVM *vm, Value *args, double d) {
    args[0] = num_new_double(vm, d);
    return PRIM_OK;
}

/* Both integers (any size) and the receiver is an Integer. */
static bool both_int(Value a, Value b) {
    return num_is_integer(a) && num_is_integer(b);
}

/* ---- + - * ------------------------------------------------------------- */

typedef enum { OP_ADD, OP_SUB, OP_MUL } ArithOp;

static int int_arith(SomVM *vm, Value *args, ArithOp op) {
    Value a = args[0], b = args[1];
    if (som_is_int(a) && som_is_int(b)) {
        int64_t x = som_int(a), y = som_int(b), r;
        bool ovf = op == OP_ADD   ? __builtin_add_overflow(x, y, &r)
                   : op == OP_SUB ? __builtin_sub_overflow(x, y, &r)
                                  : __builtin_mul_overflow(x, y, &r);
        if (!ovf) {
            args[0] = num_from_i64(vm, r);
            return PRIM_OK;
        }
    }
    mpz_t ta, tb, r;
    mpz_inits(ta, tb, r, NULL);
    mpz_srcptr pa = as_mpz(a, ta), pb = as_mpz(b, tb);
    if (op == OP_ADD)
        mpz_add(r, pa, pb);
    else if (op == OP_SUB)
        mpz_sub(r, pa, pb);
    else
        mpz_mul(r, pa, pb);
    args[0] = num_from_mpz(vm, r);
    mpz_clears(ta, tb, r, NULL);
    return PRIM_OK;
}

static int arith(SomVM *vm, Value *args, ArithOp op) {
    if (both_int(args[0], args[1])) return int_arith(vm, args, op);
    double x, y;
    int rc = coerce2(vm, args[0], args[1], &x, &y);
    if (rc != PRIM_OK) return rc;
    return answer_double(vm, args, op == OP_ADD ? x + y : op == OP_SUB ? x - y : x * y);
}

int num_prim_add(SomVM *vm, Value *args) {
    return arith(vm, args, OP_ADD);
}
int num_prim_sub(SomVM *vm, Value *args) {
    return arith(vm, args, OP_SUB);
}
int num_prim_mul(SomVM *vm, Value *args) {
    return arith(vm, args, OP_MUL);
}

/* ---- / // % rem: ------------------------------------------------------- */

typedef enum { DIV_TQ, DIV_FR, DIV_TR } DivOp; /* truncated quotient, floored/truncated rest */

static int64_t small_div(int64_t x, int64_t y, DivOp op) {
    if (op == DIV_TQ) return x / y; /* 63-bit operands: no INT64_MIN / -1 */
    int64_t r = x % y;
    if (op == DIV_FR && r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
}

static int int_divide(SomVM *vm, Value *args, DivOp op) {
    Value a = args[0], b = args[1];
    if (is_zero(b)) return err_zero(vm);
    if (som_is_int(a) && som_is_int(b)) {
        args[0] = num_from_i64(vm, small_div(som_int(a), som_int(b), op));
        return PRIM_OK;
    }
    mpz_t ta, tb, r;
    mpz_inits(ta, tb, r, NULL);
    mpz_srcptr pa = as_mpz(a, ta), pb = as_mpz(b, tb);
    if (op == DIV_TQ)
        mpz_tdiv_q(r, pa, pb);
    else if (op == DIV_FR)
        mpz_fdiv_r(r, pa, pb);
    else
        mpz_tdiv_r(r, pa, pb);
    args[0] = num_from_mpz(vm, r);
    mpz_clears(ta, tb, r, NULL);
    return PRIM_OK;
}

int num_prim_div(SomVM *vm, Value *args) {
    Value a = args[0], b = args[1];
    if (!num_is_integer(a)) return err_int(vm, a);
    if (num_is_integer(b)) return int_divide(vm, args, DIV_TQ);
    double x, y;
    int rc = coerce2(vm, a, b, &x, &y);
    if (rc != PRIM_OK) return rc;
    if (y == 0.0) return err_zero(vm);
    if (!num_from_integral_double(vm, trunc(x / y), &args[0]))
        return som_prim_error(vm, "Can't represent as an Integer.");
    return PRIM_OK;
}

int num_prim_fdiv(SomVM *vm, Value *args) {
    double x, y;
    int rc = coerce2(vm, args[0], args[1], &x, &y);
    if (rc != PRIM_OK) return rc;
    return answer_double(vm, args, x / y);
}

/* `%` floors for Integer receivers; Double receivers (and Double arguments)
 * use C fmod. `rem:` truncates. */
static int modulo(SomVM *vm, Value *args, DivOp op) {
    Value a = args[0], b = args[1];
    if (op == DIV_TR && !num_is_integer(a)) return err_int(vm, a);
    if (both_int(a, b)) return int_divide(vm, args, op);
    double x, y;
    int rc = coerce2(vm, a, b, &x, &y);
    if (rc != PRIM_OK) return rc;
    return answer_double(vm, args, fmod(x, y));
}

int num_prim_mod(SomVM *vm, Value *args) {
    return modulo(vm, args, DIV_FR);
}
int num_prim_rem(SomVM *vm, Value *args) {
    return modulo(vm, args, DIV_TR);
}

/* ---- & bitXor: << >>> ---------------------------------------------------- */

static int check_ints(SomVM *vm, Value a, Value b) {
    if (!num_is_integer(a)) return err_int(vm, a);
    if (!num_is_integer(b)) return err_int(vm, b);
    return PRIM_OK;
}

static int bitop(SomVM *vm, Value *args, bool is_and) {
    Value a = args[0], b = args[1];
    int rc = check_ints(vm, a, b);
    if (rc != PRIM_OK) return rc;
    if (som_is_int(a) && som_is_int(b)) {
        int64_t x = som_int(a), y = som_int(b);
        args[0] = som_mkint(is_and ? x & y : x ^ y); /* stays in the 63-bit range */
        return PRIM_OK;
    }
    mpz_t ta, tb, r;
    mpz_inits(ta, tb, r, NULL);
    mpz_srcptr pa = as_mpz(a, ta), pb = as_mpz(b, tb);
    if (is_and)
        mpz_and(r, pa, pb);
    else
        mpz_xor(r, pa, pb);
    args[0] = num_from_mpz(vm, r);
    mpz_clears(ta, tb, r, NULL);
    return PRIM_OK;
}

int num_prim_and(SomVM *vm, Value *args) {
    return bitop(vm, args, true);
}
int num_prim_xor(SomVM *vm, Value *args) {
    return bitop(vm, args, false);
}

/* A shift count: negative or huge counts are errors for `<<`. */
static int shift_count(SomVM *vm, Value b, uint64_t *n) {
    if (num_is_bigint(b)) {
        if (mpz_sgn(((SomBigInt *)b)->z) < 0) return som_prim_error(vm, "Negative shift.");
        *n = UINT64_MAX;
        return PRIM_OK;
    }
    if (som_int(b) < 0) return som_prim_error(vm, "Negative shift.");
    *n = (uint64_t)som_int(b);
    return PRIM_OK;
}

int num_prim_shl(SomVM *vm, Value *args) {
    Value a = args[0];
    uint64_t n = 0;
    int rc = check_ints(vm, a, args[1]);
    if (rc == PRIM_OK) rc = shift_count(vm, args[1], &n);
    if (rc != PRIM_OK) return rc;
    if (is_zero(a)) return PRIM_OK;
    if (som_is_int(a) && n < 63) {
        int64_t x = som_int(a), r = (int64_t)((uint64_t)x << n);
        if ((r >> n) == x) {
            args[0] = num_from_i64(vm, r);
            return PRIM_OK;
        }
    }
    mpz_t ta, r;
    mpz_inits(ta, r, NULL);
    mpz_srcptr pa = as_mpz(a, ta);
    if (n >= NUM_MAX_SHIFT_BITS || mpz_sizeinbase(pa, 2) + n > NUM_MAX_SHIFT_BITS) {
        mpz_clears(ta, r, NULL);
        return som_prim_error(vm, "Shift too big.");
    }
    mpz_mul_2exp(r, pa, (mp_bitcnt_t)n);
    args[0] = num_from_mpz(vm, r);
    mpz_clears(ta, r, NULL);
    return PRIM_OK;
}

/* Logical shift of the 64-bit two's-complement pattern for values that fit
 * 64 bits; arithmetic (floor) shift for larger magnitudes. */
int num_prim_shr(SomVM *vm, Value *args) {
    Value a = args[0];
    uint64_t n = 0;
    int rc = check_ints(vm, a, args[1]);
    if (rc == PRIM_OK) rc = shift_count(vm, args[1], &n);
    if (rc != PRIM_OK) return rc;
    if (n == 0) return PRIM_OK;
    if (som_is_int(a)) { /* the common case, without GMP */
        uint64_t u = (uint64_t)som_int(a);
        args[0] = num_from_i64(vm, n >= 64 ? 0 : (int64_t)(u >> n)); /* n >= 1: < 2^63 */
        return PRIM_OK;
    }
    mpz_t ta, r;
    mpz_inits(ta, r, NULL);
    mpz_srcptr pa = as_mpz(a, ta);
    if (mpz_fits_slong_p(pa)) {
        uint64_t u = (uint64_t)mpz_get_si(pa);
        args[0] = num_from_i64(vm, n >= 64 ? 0 : (int64_t)(u >> n)); /* n >= 1: < 2^63 */
    } else {
        mpz_fdiv_q_2exp(r, pa, (mp_bitcnt_t)n); /* mp_bitcnt_t is 64-bit here */
        args[0] = num_from_mpz(vm, r);
    }
    mpz_clears(ta, r, NULL);
    return PRIM_OK;
}

/* ---- comparisons -------------------------------------------------------- */

static int double_cmp(double x, double y) {
    return x < y ? -1 : x > y ? 1 : x == y ? 0 : 2;
}

/* Three-way comparison of two numbers: -1, 0, 1, or 2 when unordered (NaN).
 * Answers false for non-numbers. */
static bool compare(Value a, Value b, int *out) {
    NumKind ka = kind_of(a), kb = kind_of(b);
    if (ka == NK_OTHER || kb == NK_OTHER) return false;
    if (ka == NK_SMALL && kb == NK_SMALL) {
        *out = (som_int(a) > som_int(b)) - (som_int(a) < som_int(b));
    } else if (ka == NK_DOUBLE && kb == NK_DOUBLE) {
        *out = double_cmp(num_double(a), num_double(b));
    } else if (ka == NK_DOUBLE || kb == NK_DOUBLE) {
        Value i = ka == NK_DOUBLE ? b : a;
        double d = num_double(ka == NK_DOUBLE ? a : b);
        /* small: `asDouble` then compare, as the interpreter's fast paths do;
         * big: exact, so that infinities and huge values order correctly */
        int c = som_is_int(i) ? double_cmp((double)som_int(i), d)
                              : num_cmp_mpz_double(((SomBigInt *)i)->z, d);
        *out = (ka == NK_DOUBLE && c != 2) ? -c : c;
    } else {
        mpz_t ta, tb;
        mpz_inits(ta, tb, NULL);
        int c = mpz_cmp(as_mpz(a, ta), as_mpz(b, tb));
        *out = (c > 0) - (c < 0);
        mpz_clears(ta, tb, NULL);
    }
    return true;
}

static Value boolean(SomVM *vm, bool b) {
    return b ? vm->true_ : vm->false_;
}

int num_prim_eq(SomVM *vm, Value *args) {
    int c;
    if (kind_of(args[0]) == NK_OTHER) return err_numeric(vm, args[0]);
    args[0] = boolean(vm, compare(args[0], args[1], &c) && c == 0);
    return PRIM_OK;
}

int num_prim_ne(SomVM *vm, Value *args) {
    int c;
    if (kind_of(args[0]) == NK_OTHER) return err_numeric(vm, args[0]);
    args[0] = boolean(vm, !(compare(args[0], args[1], &c) && c == 0));
    return PRIM_OK;
}

/* `mask` has bit (c + 1) set for each accepted outcome c in {-1, 0, 1}. */
static int ordered(SomVM *vm, Value *args, unsigned mask) {
    int c;
    if (kind_of(args[0]) == NK_OTHER) return err_numeric(vm, args[0]);
    if (!compare(args[0], args[1], &c)) return err_numeric(vm, args[1]);
    args[0] = boolean(vm, c != 2 && (mask & (1u << (c + 1))));
    return PRIM_OK;
}

int num_prim_lt(SomVM *vm, Value *args) {
    return ordered(vm, args, 1u);
}
int num_prim_le(SomVM *vm, Value *args) {
    return ordered(vm, args, 3u);
}
int num_prim_gt(SomVM *vm, Value *args) {
    return ordered(vm, args, 4u);
}
int num_prim_ge(SomVM *vm, Value *args) {
    return ordered(vm, args, 6u);
}

/* ---- unary -------------------------------------------------------------- */

/* Integer sqrt: the double root, as an Integer when it is integral. Integers
 * beyond the double range use the exact root instead. */
static int int_sqrt(SomVM *vm, Value *args) {
    double x;
    if (num_to_double(args[0], &x)) {
        double r = sqrt(x);
        if (r == rint(r) && num_from_integral_double(vm, r, &args[0])) return PRIM_OK;
        return answer_double(vm, args, r);
    }
    mpz_srcptr z = ((SomBigInt *)args[0])->z;
    if (mpz_sgn(z) < 0) return answer_double(vm, args, NAN);
    mpz_t r, rem;
    mpz_inits(r, rem, NULL);
    mpz_sqrtrem(r, rem, z);
    bool exact = mpz_sgn(rem) == 0;
    double d = num_mpz_to_double(r);
    if (exact || isinf(d))
        args[0] = num_from_mpz(vm, r); /* the double root would be an integral value */
    else
        args[0] = num_new_double(vm, d);
    mpz_clears(r, rem, NULL);
    return PRIM_OK;
}

int num_prim_sqrt(SomVM *vm, Value *args) {
    switch (kind_of(args[0])) {
    case NK_DOUBLE:
        return answer_double(vm, args, sqrt(num_double(args[0])));
    case NK_OTHER:
        return err_numeric(vm, args[0]);
    default:
        return int_sqrt(vm, args);
    }
}

/* Applies a libm function to any number, answering a Double. */
static int unary_double(SomVM *vm, Value *args, double (*f)(double)) {
    double x;
    if (kind_of(args[0]) == NK_OTHER) return err_numeric(vm, args[0]);
    if (!num_to_double(args[0], &x)) return err_double(vm);
    return answer_double(vm, args, f(x));
}

int num_prim_sin(SomVM *vm, Value *args) {
    return unary_double(vm, args, sin);
}
int num_prim_cos(SomVM *vm, Value *args) {
    return unary_double(vm, args, cos);
}

int num_prim_as_string(SomVM *vm, Value *args) {
    NumKind k = kind_of(args[0]);
    if (k == NK_OTHER) return err_numeric(vm, args[0]);
    if (k != NK_DOUBLE) {
        args[0] = num_int_to_string(vm, args[0]);
        return PRIM_OK;
    }
    char buf[48];
    size_t n = num_format_double(num_double(args[0]), buf);
    args[0] = SOM_V(som_string_new(vm, buf, n));
    return PRIM_OK;
}

int num_prim_as_double(SomVM *vm, Value *args) {
    double x;
    if (num_is_double(args[0])) return PRIM_OK;
    if (kind_of(args[0]) == NK_OTHER) return err_numeric(vm, args[0]);
    if (!num_to_double(args[0], &x)) return err_double(vm);
    return answer_double(vm, args, x);
}

/* Double -> Integer by `f` (trunc or round); Integers answer themselves. */
static int to_integer(SomVM *vm, Value *args, double (*f)(double)) {
    NumKind k = kind_of(args[0]);
    if (k == NK_OTHER) return err_numeric(vm, args[0]);
    if (k != NK_DOUBLE) return PRIM_OK;
    double d = num_double(args[0]);
    if (!num_from_integral_double(vm, f(d), &args[0]))
        return som_prim_error(vm, "Can't represent %s as an Integer.",
                              isnan(d) ? "NaN" : "infinity");
    return PRIM_OK;
}

int num_prim_as_integer(SomVM *vm, Value *args) {
    return to_integer(vm, args, trunc);
}
int num_prim_round(SomVM *vm, Value *args) {
    return to_integer(vm, args, round);
}

/* The low 32 bits of the two's-complement representation. */
static int low32(SomVM *vm, Value v, uint32_t *out) {
    if (!num_is_integer(v)) return err_int(vm, v);
    if (som_is_int(v)) {
        *out = (uint32_t)(uint64_t)som_int(v);
        return PRIM_OK;
    }
    mpz_t t;
    mpz_init(t);
    mpz_fdiv_r_2exp(t, ((SomBigInt *)v)->z, 32); /* 0 <= t < 2^32 */
    *out = (uint32_t)mpz_get_ui(t);
    mpz_clear(t);
    return PRIM_OK;
}

int num_prim_as32_signed(SomVM *vm, Value *args) {
    uint32_t u = 0;
    int rc = low32(vm, args[0], &u);
    if (rc == PRIM_OK) args[0] = som_mkint((int32_t)u);
    return rc;
}

int num_prim_as32_unsigned(SomVM *vm, Value *args) {
    uint32_t u = 0;
    int rc = low32(vm, args[0], &u);
    if (rc == PRIM_OK) args[0] = som_mkint((int64_t)u);
    return rc;
}

/* Per-thread generator: VMs in different threads never share state. */
static _Thread_local uint64_t num_rng_state = UINT64_C(0x9E3779B97F4A7C15);

static uint64_t rng_next(void) {
    uint64_t x = num_rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    num_rng_state = x;
    return x * UINT64_C(0x2545F4914F6CDD1D);
}

/* A pseudo-random Integer between 0 and the receiver (exclusive; same sign),
 * i.e. floor(self * r) for a random r in [0, 1). */
int num_prim_at_random(SomVM *vm, Value *args) {
    if (!num_is_integer(args[0])) return err_int(vm, args[0]);
    mpz_t ta, r;
    mpz_inits(ta, r, NULL);
    mpz_srcptr pa = as_mpz(args[0], ta);
    mpz_set_ui(r, rng_next());
    mpz_mul(r, r, pa);
    mpz_fdiv_q_2exp(r, r, 64);
    args[0] = num_from_mpz(vm, r);
    mpz_clears(ta, r, NULL);
    return PRIM_OK;
}

/* ---- class side ---------------------------------------------------------- */

int num_prim_int_from_string(SomVM *vm, Value *args) {
    Value s = args[1];
    if (!som_is_string_like(s))
        return som_prim_error(vm, "Expected instance of 'String' but got instance of '%s'.",
                              num_type_name(vm, s));
    SomString *str = (SomString *)s;
    mpz_t z;
    mpz_init(z);
    bool ok = num_text_to_mpz(z, str->bytes, str->len);
    if (ok) args[0] = num_from_mpz(vm, z);
    mpz_clear(z);
    if (!ok)
        return som_prim_error(vm, "'%.*s' cannot be converted to an Integer.", (int)str->len,
                              str->bytes);
    return PRIM_OK;
}

/* Malformed text answers NaN, as the core library's comment says. */
int num_prim_dbl_from_string(SomVM *vm, Value *args) {
    Value s = args[1];
    if (!som_is_string_like(s))
        return som_prim_error(vm, "Expected instance of 'String' but got instance of '%s'.",
                              num_type_name(vm, s));
    double d;
    if (!num_parse_double(((SomString *)s)->bytes, ((SomString *)s)->len, &d)) d = NAN;
    return answer_double(vm, args, d);
}

int num_prim_dbl_infinity(SomVM *vm, Value *args) {
    return answer_double(vm, args, INFINITY);
}

/* ---- the table ------------------------------------------------------------ */

#define INT(sel, fn)                                                                               \
    { "Integer", false, sel, fn, PK_PLAIN }
#define DBL(sel, fn)                                                                               \
    { "Double", false, sel, fn, PK_PLAIN }

const PrimDef prim_number_defs[] = {
    INT("+", num_prim_add),
    INT("-", num_prim_sub),
    INT("*", num_prim_mul),
    INT("/", num_prim_div),
    INT("//", num_prim_fdiv),
    INT("%", num_prim_mod),
    INT("rem:", num_prim_rem),
    INT("&", num_prim_and),
    INT("bitXor:", num_prim_xor),
    INT("<<", num_prim_shl),
    INT(">>>", num_prim_shr),
    INT("sqrt", num_prim_sqrt),
    INT("atRandom", num_prim_at_random),
    INT("=", num_prim_eq),
    INT("<", num_prim_lt),
    INT("<=", num_prim_le),
    INT(">", num_prim_gt),
    INT(">=", num_prim_ge),
    INT("<>", num_prim_ne),
    INT("asString", num_prim_as_string),
    INT("as32BitSignedValue", num_prim_as32_signed),
    INT("as32BitUnsignedValue", num_prim_as32_unsigned),
    INT("asDouble", num_prim_as_double),
    {"Integer", true, "fromString:", num_prim_int_from_string, PK_PLAIN},
    DBL("+", num_prim_add),
    DBL("-", num_prim_sub),
    DBL("*", num_prim_mul),
    DBL("//", num_prim_fdiv),
    DBL("%", num_prim_mod),
    DBL("sqrt", num_prim_sqrt),
    DBL("round", num_prim_round),
    DBL("asInteger", num_prim_as_integer),
    DBL("cos", num_prim_cos),
    DBL("sin", num_prim_sin),
    DBL("=", num_prim_eq),
    DBL("<", num_prim_lt),
    DBL("<=", num_prim_le),
    DBL(">", num_prim_gt),
    DBL(">=", num_prim_ge),
    DBL("<>", num_prim_ne),
    DBL("asString", num_prim_as_string),
    {"Double", true, "PositiveInfinity", num_prim_dbl_infinity, PK_PLAIN},
    {"Double", true, "fromString:", num_prim_dbl_from_string, PK_PLAIN},
    {NULL, false, NULL, NULL, 0},
};
