/* SPDX-License-Identifier: MIT */
/*
 * num.h - numbers: small integers, GMP big integers and doubles, their
 * primitives, literal parsing and double printing.
 *
 * Invariant (value.h): an integer that fits the small range is never a
 * SomBigInt; every function here that makes an integer normalises.
 *
 * The `num_prim_*` functions follow the primitive convention of prims.h
 * (args[0] receiver, args[1..] arguments, answer in args[0], PRIM_OK or
 * PRIM_ERROR). They are the general path: they accept any receiver and any
 * argument (small, big, Double or anything else) and never crash; the
 * interpreter may call them directly as the slow path of its own small-integer
 * fast paths. A receiver's class decides the semantics (Integer `%` floors,
 * Double `%` is fmod); a non-numeric receiver is a VM-level error.
 *
 * Mixed Integer/Double comparisons (`=`, `<`, ...) convert a small integer
 * to double first (docs/language.md 6.1 `a asDouble = b`, as the interpreter's fast paths
 * do) but compare big integers exactly, so `Double PositiveInfinity >
 * (1 << 2000)` holds.
 *
 * The pure helpers (num_format_double, num_text_to_mpz, num_mpz_to_double,
 * num_cmp_mpz_double, ...) need no VM and are safe to call from any thread;
 * nothing here may run in a signal handler (GMP and stdio allocate).
 */
#ifndef SOM_NUM_H
#define SOM_NUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gmp.h>

#include "object.h"
#include "value.h"

typedef struct SomVM SomVM;

Value num_from_i64(SomVM *vm, int64_t i);     /* small or big */
Value num_from_mpz(SomVM *vm, const mpz_t z); /* normalising */
Value num_new_double(SomVM *vm, double d);
/* Parses decimal digits (no sign) as an integer literal, negated if neg.
 * The caller guarantees len >= 1 and that all bytes are digits. */
Value num_parse_integer(SomVM *vm, const char *digits, size_t len, bool neg);
/* Shortest round-trip text of d per docs/language.md 6.3 into buf (>= 40 bytes); answers length. */
size_t num_format_double(double d, char *buf);
/* Decimal text of an integer value (small or big); answers a String. */
Value num_int_to_string(SomVM *vm, Value v);

static inline bool num_is_double(Value v) {
    return som_is_imm_double(v) || (som_is_obj(v) && ((ObjHeader *)v)->kind == OBJ_DOUBLE);
}
static inline bool num_is_bigint(Value v) {
    return som_is_obj(v) && ((ObjHeader *)v)->kind == OBJ_BIGINT;
}
static inline double num_double(Value v) {
    return som_is_imm_double(v) ? som_imm_double(v) : ((SomDouble *)v)->d;
}
static inline bool num_is_integer(Value v) {
    return som_is_int(v) || num_is_bigint(v);
}
static inline bool num_is_number(Value v) {
    return num_is_integer(v) || num_is_double(v);
}

/* Called by the collector when a SomBigInt dies. */
void num_bigint_finalize(SomBigInt *b);

/* ---- pure helpers (no VM) ---------------------------------------------- */

/* Parses an optional '-' followed by one or more decimal digits (the whole
 * text, nothing else) into out (initialised by the caller). Answers false on
 * malformed text, leaving out unspecified. */
bool num_text_to_mpz(mpz_t out, const char *text, size_t len);
/* Decimal text of z, malloc'ed (caller frees), or NULL on out-of-memory. */
char *num_mpz_to_text(const mpz_srcptr z);
/* Nearest double to z (round half to even). Answers +-inf when |z| is beyond
 * the double range. */
double num_mpz_to_double(const mpz_srcptr z);
/* Exact comparison of z with d: -1, 0 or 1; 2 when d is NaN (unordered). */
int num_cmp_mpz_double(const mpz_srcptr z, double d);
/* Exact comparison of i with d: -1, 0 or 1; 2 when d is NaN. */
int num_cmp_i64_double(int64_t i, double d);
/* Parses a whole decimal floating-point text (strtod syntax, no surrounding
 * junk). Answers false on malformed text. */
bool num_parse_double(const char *text, size_t len, double *out);
/* Hash of a double by value (equal doubles hash equal, also 0.0 and -0.0);
 * for Double>>hashcode. */
uint32_t num_double_hash(double d);

/* ---- conversions needing a VM ------------------------------------------- */

/* The double value of a number (small, big or Double). Answers false (and
 * leaves *out unspecified) for non-numbers and for integers whose magnitude is
 * beyond the double range. */
bool num_to_double(Value v, double *out);
/* The Integer whose value is the integral double d (small or big). Answers
 * false for NaN and infinities. */
bool num_from_integral_double(SomVM *vm, double d, Value *out);
/* Short type name used in VM error messages ("Int", "Double", "String_"...). */
const char *num_type_name(SomVM *vm, Value v);

/* ---- primitives (also the interpreter's slow paths) ---------------------- */

int num_prim_add(SomVM *vm, Value *args);             /* + */
int num_prim_sub(SomVM *vm, Value *args);             /* - */
int num_prim_mul(SomVM *vm, Value *args);             /* * */
int num_prim_div(SomVM *vm, Value *args);             /* /   (Integer only) */
int num_prim_fdiv(SomVM *vm, Value *args);            /* //  */
int num_prim_mod(SomVM *vm, Value *args);             /* %   */
int num_prim_rem(SomVM *vm, Value *args);             /* rem: (Integer only) */
int num_prim_and(SomVM *vm, Value *args);             /* &   (Integer only) */
int num_prim_xor(SomVM *vm, Value *args);             /* bitXor: (Integer only) */
int num_prim_shl(SomVM *vm, Value *args);             /* <<  (Integer only) */
int num_prim_shr(SomVM *vm, Value *args);             /* >>> (Integer only) */
int num_prim_eq(SomVM *vm, Value *args);              /* =   (false for non-numbers) */
int num_prim_ne(SomVM *vm, Value *args);              /* <>, ~= on numbers: not = */
int num_prim_lt(SomVM *vm, Value *args);              /* <   */
int num_prim_le(SomVM *vm, Value *args);              /* <=  */
int num_prim_gt(SomVM *vm, Value *args);              /* >   */
int num_prim_ge(SomVM *vm, Value *args);              /* >=  */
int num_prim_sqrt(SomVM *vm, Value *args);            /* sqrt */
int num_prim_as_string(SomVM *vm, Value *args);       /* asString */
int num_prim_as_double(SomVM *vm, Value *args);       /* asDouble */
int num_prim_as_integer(SomVM *vm, Value *args);      /* asInteger (Double: truncates) */
int num_prim_round(SomVM *vm, Value *args);           /* round (Double) */
int num_prim_sin(SomVM *vm, Value *args);             /* sin (Double) */
int num_prim_cos(SomVM *vm, Value *args);             /* cos (Double) */
int num_prim_as32_signed(SomVM *vm, Value *args);     /* as32BitSignedValue */
int num_prim_as32_unsigned(SomVM *vm, Value *args);   /* as32BitUnsignedValue */
int num_prim_at_random(SomVM *vm, Value *args);       /* atRandom */
int num_prim_int_from_string(SomVM *vm, Value *args); /* Integer class>>fromString: */
int num_prim_dbl_from_string(SomVM *vm, Value *args); /* Double class>>fromString: */
int num_prim_dbl_infinity(SomVM *vm, Value *args);    /* Double class>>PositiveInfinity */

/* String primitives (prim_string.c), exported for the interpreter. */
int str_prim_concatenate(SomVM *vm, Value *args);
int str_prim_as_symbol(SomVM *vm, Value *args);
int str_prim_hashcode(SomVM *vm, Value *args);
int str_prim_length(SomVM *vm, Value *args);
int str_prim_eq(SomVM *vm, Value *args);
int str_prim_substring(SomVM *vm, Value *args);
int str_prim_is_whitespace(SomVM *vm, Value *args);
int str_prim_is_letters(SomVM *vm, Value *args);
int str_prim_is_digits(SomVM *vm, Value *args);
int str_prim_symbol_as_string(SomVM *vm, Value *args);

#endif
