/* SPDX-License-Identifier: MIT */
/*
 * value.h - the tagged value representation of som.
 *
 * A Value is one machine word, told apart by its low bits:
 *   ...1   small integer, 63-bit signed (value << 1 | 1)
 *   ..10   immediate double (see below)
 *   0000   pointer to a heap object (objects are 16-byte aligned)
 * Doubles whose binary exponent lies in [-255, 256] (magnitudes about 1e-77 to
 * 1e77), and +0.0, are immediate: the IEEE bits rotated left by one (sign to
 * bit 0), rebased so that exponent window starts at 0, shifted left by two.
 * Every other double (-0.0, subnormals, huge values, inf, NaN) is a boxed
 * SomDouble. Neither representation is visible to SOM code. Invariant: an integer in the small
 * range is ALWAYS a small integer (bignum results are normalised), so identity of equal small
 * values holds and bignum equality can be structural.
 *
 * Safe in signal handlers: everything here is pure arithmetic.
 */
#ifndef SOM_VALUE_H
#define SOM_VALUE_H

#include <stdbool.h>
#include <stdint.h>

typedef uintptr_t Value;

#define SOM_SMALLINT_MAX ((int64_t)(INT64_MAX >> 1))
#define SOM_SMALLINT_MIN ((int64_t)(INT64_MIN >> 1))

static inline bool som_is_int(Value v) {
    return (v & 1) != 0;
}
static inline bool som_is_imm_double(Value v) {
    return (v & 3) == 2;
}
static inline bool som_is_obj(Value v) {
    return (v & 3) == 0;
}
static inline int64_t som_int(Value v) {
    return (int64_t)(intptr_t)v >> 1;
}
/* Only for values known to be in [SOM_SMALLINT_MIN, SOM_SMALLINT_MAX]. */
static inline Value som_mkint(int64_t i) {
    return (Value)(((uint64_t)i << 1) | 1);
}
static inline bool som_fits_smallint(int64_t i) {
    return i >= SOM_SMALLINT_MIN && i <= SOM_SMALLINT_MAX;
}

/* ---- immediate doubles ---- */
#define SOM_DBL_OFFSET ((uint64_t)768 << 53) /* biased exponent 768 = 2^-255 */

/* Encodes d as an immediate double; answers false if it must be boxed. */
static inline bool som_try_imm_double(double d, Value *out) {
    union {
        double d;
        uint64_t u;
    } c = {d};
    uint64_t r = (c.u << 1) | (c.u >> 63);
    uint64_t p = r - SOM_DBL_OFFSET;
    if (__builtin_expect(p - 1 < ((uint64_t)1 << 62) - 1, 1)) { /* inside the window, not 2^-255 */
        *out = (Value)((p << 2) | 2);
        return true;
    }
    if (c.u == 0) { /* +0.0 */
        *out = 2;
        return true;
    }
    return false;
}

static inline double som_imm_double(Value v) {
    uint64_t p = (uint64_t)v >> 2;
    uint64_t r = p + SOM_DBL_OFFSET;
    uint64_t u = (r >> 1) | (r << 63);
    union {
        uint64_t u;
        double d;
    } c = {p ? u : 0}; /* p == 0 is +0.0 (a conditional move, no branch) */
    return c.d;
}

#endif
