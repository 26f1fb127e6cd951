/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * decimal.c: conversion between decimal text and binary64. The JSON reader and the RFC 8785
 * writer share this one implementation. decimal.h says which rule each call serves.
 *
 * Layer: base of src/core (doc/hacking.md).
 * Notes: The file holds the tables of powers of ten. Exact 128-bit paths spare most numbers
 * printf and strtod. It gives the shortest round-trip digits of RFC 8785 section 3.2.2.3
 * (ECMA-262 Number::toString). Every product is checked for overflow. A value out of reach
 * falls back to the C library.
 */
#include "config.h"

#include <assert.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "decimal.h"

const double sy_pow10_double[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                    1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                    1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* 10^0 .. 10^19: every power of ten a uint64_t holds. */
static const uint64_t pow10_u64[] = {
        UINT64_C(1),
        UINT64_C(10),
        UINT64_C(100),
        UINT64_C(1000),
        UINT64_C(10000),
        UINT64_C(100000),
        UINT64_C(1000000),
        UINT64_C(10000000),
        UINT64_C(100000000),
        UINT64_C(1000000000),
        UINT64_C(10000000000),
        UINT64_C(100000000000),
        UINT64_C(1000000000000),
        UINT64_C(10000000000000),
        UINT64_C(100000000000000),
        UINT64_C(1000000000000000),
        UINT64_C(10000000000000000),
        UINT64_C(100000000000000000),
        UINT64_C(1000000000000000000),
        UINT64_C(10000000000000000000),
};

#if defined(__SIZEOF_INT128__) && (defined(__GNUC__) || defined(__clang__))
/*
 * Exact arithmetic on 128-bit integers for the common magnitudes, so most
 * numbers need neither printf nor strtod. (__int128 and the overflow builtins
 * are GCC/Clang extensions, hence the guard.)
 */
#define SY_DECIMAL_EXACT 1
__extension__ typedef unsigned __int128 u128;

/* *r = a * 10^p10 * 2^p2; false on overflow. */
static bool scale(u128 a, int p10, int p2, u128 *r)
{
	if (p10 > 38 || p2 > 127)
		return false;
	u128 t = a;
	if (p10 > 19) {
		if (__builtin_mul_overflow(t, (u128)pow10_u64[19], &t))
			return false;
		p10 -= 19;
	}
	if (__builtin_mul_overflow(t, (u128)pow10_u64[p10], &t))
		return false;
	if (p2 > 0 && (t >> (127 - p2)) >> 1 != 0)
		return false;
	*r = t << p2;
	return true;
}

/* d = f * 2^q with f an integer of 53 bits (d normal). */
static void decompose(double d, uint64_t *f, int *q)
{
	int ex;
	double fr = frexp(d, &ex);
	*f = (uint64_t)ldexp(fr, 53);
	*q = ex - 53;
}

/*
 * Whether m * 10^e lies in the interval of reals that round to the normal,
 * positive d: 1 yes, 0 no, -1 out of reach. With d = f * 2^q the bounds are
 * (4f -+ 2) * 2^(q-2), or 4f - 1 below a power of two (its lower gap is half);
 * they belong to d when f is even (ties to even).
 */
static int exact_round_trips(uint64_t m, int e, double d)
{
	uint64_t f;
	int q;
	decompose(d, &f, &q);
	u128 lo = 4 * (u128)f - (f == (UINT64_C(1) << 52) ? 1 : 2), hi = 4 * (u128)f + 2;
	u128 t;
	int tq = q - 2;
	if (!scale(m, e > 0 ? e : 0, tq < 0 ? -tq : 0, &t) ||
	    !scale(lo, e < 0 ? -e : 0, tq > 0 ? tq : 0, &lo) ||
	    !scale(hi, e < 0 ? -e : 0, tq > 0 ? tq : 0, &hi))
		return -1;
	if (f % 2 == 0)
		return lo <= t && t <= hi;
	return lo < t && t < hi;
}

/* The 17-digit rounding (ties to even) of the normal, positive d as m * 10^e,
 * 10^16 <= m < 10^17; false when out of reach. */
static bool exact_digits17(double d, uint64_t *m, int *e)
{
	uint64_t f;
	int q;
	decompose(d, &f, &q);
	int k = (int)floor(log10(d)); /* may be off by one; corrected below */
	for (int tries = 0; tries < 3; tries++) {
		int s = 16 - k;
		u128 num, den;
		if (!scale(f, s > 0 ? s : 0, q > 0 ? q : 0, &num) ||
		    !scale(1, s < 0 ? -s : 0, q < 0 ? -q : 0, &den) || den >> 126 != 0)
			return false;
		u128 v = num / den, r = num % den;
		if (v >= pow10_u64[17]) {
			k++;
			continue;
		}
		if (v < pow10_u64[16]) {
			k--;
			continue;
		}
		if (2 * r > den || (2 * r == den && (v & 1)))
			v++;
		if (v == pow10_u64[17]) {
			v = pow10_u64[16];
			k++;
		}
		assert(v >= pow10_u64[16] && v < pow10_u64[17]);
		*m = (uint64_t)v;
		*e = k - 16;
		return true;
	}
	return false;
}

static int bit_length(u128 v)
{
	uint64_t hi = (uint64_t)(v >> 64);
	if (hi != 0)
		return 128 - __builtin_clzll(hi);
	uint64_t lo = (uint64_t)v;
	return lo != 0 ? 64 - __builtin_clzll(lo) : 0;
}

/* v (at least 55 significant bits, or exact) times 2^shift, rounded once: the
 * bits beyond 64 fold into a sticky bit, which keeps the rounding to 53 bits
 * correct; the scaling by a power of two is exact in the normal range. */
static double round_u128(u128 v, bool sticky, int shift)
{
	int drop = bit_length(v) - 64;
	if (drop > 0) {
		sticky = sticky || (v & (((u128)1 << drop) - 1)) != 0;
		v >>= drop;
		shift += drop;
	}
	uint64_t w = (uint64_t)v | (sticky ? 1 : 0);
	return ldexp((double)w, shift);
}

bool sy_decimal_exact(uint64_t m, long e, double *out)
{
	if (m == 0 || e > 38 || e < -38)
		return false;
	if (e >= 0) {
		u128 v;
		if (!scale(m, (int)e, 0, &v))
			return false;
		*out = round_u128(v, false, 0);
		return true;
	}
	u128 den;
	if (!scale(1, (int)-e, 0, &den))
		return false;
	int s = 127 - bit_length(m);
	u128 num = (u128)m << s;
	u128 q = num / den;
	if (bit_length(q) < 66)
		return false;
	*out = round_u128(q, num % den != 0, -s);
	return true;
}
#else
bool sy_decimal_exact(uint64_t m, long e, double *out)
{
	(void)m;
	(void)e;
	(void)out;
	return false;
}
#endif

/* Decimal digits of m (> 0) without trailing zeros; returns k, adds the zeros
 * dropped to *e. */
static int mantissa_digits(uint64_t m, char digits[24], int *e)
{
	assert(m > 0); /* else the zeros would never end */
	while (m % 10 == 0) {
		m /= 10;
		(*e)++;
	}
	char tmp[24];
	int k = 0;
	while (m > 0) {
		tmp[k++] = (char)('0' + m % 10);
		m /= 10;
	}
	for (int i = 0; i < k; i++)
		digits[i] = tmp[k - 1 - i];
	return k;
}

/*
 * Whether m * 10^e reads back (round to nearest) as exactly d. When m and 10^|e|
 * are both exact doubles one correctly rounded operation gives the answer
 * (Clinger's fast path); then exact integers; otherwise strtod decides. The
 * string has no decimal point, so the locale plays no part.
 */
static bool round_trips(uint64_t m, int e, double d)
{
	double x;
	if (sy_decimal_fast(m, e, &x))
		return x == d;
#ifdef SY_DECIMAL_EXACT
	if (fpclassify(d) == FP_NORMAL) {
		int r = exact_round_trips(m, e, d);
		if (r >= 0)
			return r;
	}
#endif
	char buf[48];
	snprintf(buf, sizeof(buf), "%" PRIu64 "e%d", m, e);
	return strtod(buf, NULL) == d;
}

/* The correctly rounded p-digit decimal of d as m * 10^e (m has p digits).
 * %e writes the locale's decimal point; only digits and the exponent are read. */
static void rounded_decimal(double d, int p, uint64_t *m, int *e)
{
#ifdef SY_DECIMAL_EXACT
	if (p == 17 && fpclassify(d) == FP_NORMAL && exact_digits17(d, m, e))
		return;
#endif
	char buf[64];
	snprintf(buf, sizeof(buf), "%.*e", p - 1, d);
	uint64_t v = 0;
	const char *s = buf;
	for (; *s != '\0' && *s != 'e'; s++) {
		if (*s >= '0' && *s <= '9')
			v = v * 10 + (uint64_t)(*s - '0');
	}
	*m = v;
	*e = (*s == 'e' ? atoi(s + 1) : 0) - (p - 1);
}

/*
 * Shortest round-trip decimal of a finite positive d, and among those the one
 * closest to d: the digits, count k and exponent n of ECMAScript's definition.
 * For a normal d, two different 15-digit decimals never read back as the same
 * double (DBL_DIG), so a representation of at most 15 digits, when there is one,
 * is the 15-digit rounding of d or one of its two neighbours (a neighbour wins
 * only at a power of two, whose lower gap is half the upper one). The same holds
 * for 16 digits; 17 always suffice. Subnormals, whose spacing is coarser, try
 * every precision.
 */
int sy_decimal_shortest(double d, char digits[24], int *n)
{
	assert(isfinite(d) && d > 0); /* the writer handles 0, the sign and non-finite values */
	uint64_t m = 0;
	int e = 0;
	bool found = false;
	if (fpclassify(d) == FP_SUBNORMAL) {
		for (int p = 1; p <= 17 && !found; p++) {
			rounded_decimal(d, p, &m, &e);
			found = p == 17 || round_trips(m, e, d);
		}
	} else {
		uint64_t m17;
		int e17;
		rounded_decimal(d, 17, &m17, &e17);
		for (int p = 15; p <= 16 && !found; p++) {
			/* The p-digit rounding of d from its 17-digit one, unless the digits
			 * dropped are exactly a half: then d may sit on either side. */
			uint64_t div = pow10_u64[17 - p];
			uint64_t rem = m17 % div;
			m = m17 / div;
			e = e17 + (17 - p);
			if (rem == div / 2)
				rounded_decimal(d, p, &m, &e);
			else if (rem > div / 2)
				m++;
			if (m == pow10_u64[p]) {
				m /= 10;
				e++;
			}
			if (round_trips(m, e, d)) {
				found = true;
			} else if (round_trips(m + 1, e, d)) {
				m += 1;
				found = true;
			} else if (m == pow10_u64[p - 1]) {
				if (round_trips(pow10_u64[p] - 1, e - 1, d)) {
					m = pow10_u64[p] - 1;
					e -= 1;
					found = true;
				}
			} else if (round_trips(m - 1, e, d)) {
				m -= 1;
				found = true;
			}
		}
		if (!found) {
			m = m17;
			e = e17;
		}
	}
	int k = mantissa_digits(m, digits, &e);
	assert(k >= 1 && k <= 17); /* 17 significant digits always suffice */
	*n = k + e;
	return k;
}
