/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * decimal.h: decimal and binary64 arithmetic, private to the core.
 *
 * Notes: The JSON reader (json_parse.c) takes each literal's nearest double. It reads
 * RFC 8259 section 6 as strtod does in the C locale. The RFC 8785 writer (jcs.c) takes the
 * shortest round-trip digits of ECMAScript's Number::toString (RFC 8785 section 3.2.2.3).
 */
#ifndef SY_CORE_DECIMAL_H
#define SY_CORE_DECIMAL_H

#include <float.h>
#include <stdbool.h>
#include <stdint.h>

/* 10^0 .. 10^22: every one an exact double. */
extern const double sy_pow10_double[23];

/*
 * Clinger's fast path: when m and 10^|e| are both exact doubles, m * 10^e is
 * one correctly rounded operation. True with *out set then; false when the
 * operands are not both exact (or the platform evaluates in excess precision).
 */
static inline bool sy_decimal_fast(uint64_t m, long e, double *out)
{
#if FLT_EVAL_METHOD == 0
	if (m <= (UINT64_C(1) << 53) && e >= -22 && e <= 22) {
		*out = e < 0 ? (double)m / sy_pow10_double[-e] : (double)m * sy_pow10_double[e];
		return true;
	}
#else
	(void)m;
	(void)e;
	(void)out;
#endif
	return false;
}

/*
 * m (> 0) * 10^e correctly rounded by exact 128-bit arithmetic, for the
 * magnitudes where it reaches (results between about 1e-19 and 1e38); false
 * elsewhere, or without 128-bit integers, and the caller's strtod decides.
 */
bool sy_decimal_exact(uint64_t m, long e, double *out);

/*
 * m * 10^e correctly rounded when exact arithmetic reaches it (the fast path,
 * then 128-bit integers); false: the caller's strtod decides.
 */
static inline bool sy_decimal_to_double(uint64_t m, long e, double *out)
{
#if FLT_EVAL_METHOD == 0
	return sy_decimal_fast(m, e, out) || sy_decimal_exact(m, e, out);
#else
	(void)m;
	(void)e;
	(void)out;
	return false;
#endif
}

/*
 * The shortest decimal that reads back as the finite, positive d, and among
 * those the closest to d (ECMA-262 Number::toString): writes its k significant
 * digits (no trailing zero) to digits, returns k, and sets *n so that
 * d = 0.digits * 10^n.
 */
int sy_decimal_shortest(double d, char digits[24], int *n);

#endif
