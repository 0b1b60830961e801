/*
 * value.h - the tagged value representation of som.
 *
 * A Value is one machine word. Small integers are tagged (low bit 1) and hold
 * 63-bit signed values; everything else is an aligned pointer to a heap object
 * (low bits 0). Invariant: an integer in the small range is ALWAYS a small
 * integer (bignum results are normalised), so identity of equal small values
 * holds and bignum equality can be structural.
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

static inline bool som_is_int(Value v) { return (v & 1) != 0; }
static inline bool som_is_obj(Value v) { return (v & 1) == 0; }
static inline int64_t som_int(Value v) { return (int64_t)(intptr_t)v >> 1; }
/* Only for values known to be in [SOM_SMALLINT_MIN, SOM_SMALLINT_MAX]. */
static inline Value som_mkint(int64_t i) { return (Value)(((uint64_t)i << 1) | 1); }
static inline bool som_fits_smallint(int64_t i)
{
    return i >= SOM_SMALLINT_MIN && i <= SOM_SMALLINT_MAX;
}

#endif
