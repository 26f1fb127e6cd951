/* SPDX-License-Identifier: BSD-2-Clause */
/* RFC 8785 (JCS) canonical writer: ECMAScript number form, JCS string escapes,
 * members ordered by UTF-16 code units. */
#include "config.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "synchro/alloc.h"
#include "synchro/jcs.h"

/* ---------------------------------------------------------------- output */

/* Appends without a call when the buffer has room: the writer emits many small
 * pieces. Keeps sy_buf's invariants (NUL-terminated, sticky failure). */
static inline bool put(sy_buf *b, const void *p, size_t n)
{
	if (b->data != NULL && n < b->cap - b->len && !b->failed) {
		memcpy(b->data + b->len, p, n);
		b->len += n;
		b->data[b->len] = '\0';
		return true;
	}
	return sy_buf_append(b, p, n);
}

static inline bool putch(sy_buf *b, char c)
{
	if (b->data != NULL && 1 < b->cap - b->len && !b->failed) {
		b->data[b->len++] = c;
		b->data[b->len] = '\0';
		return true;
	}
	return sy_buf_append(b, &c, 1);
}

/* ---------------------------------------------------------------- numbers */

/*
 * Lays out positive d = digits * 10^(n - k) (k significant digits, no trailing
 * zero) as ECMAScript Number::toString does (ECMA-262, Number::toString, steps
 * for radix 10). Returns the length written at out (NUL added).
 */
static size_t layout_number(char *out, bool neg, const char *digits, int k, int n)
{
	char *o = out;
	if (neg)
		*o++ = '-';
	if (k <= n && n <= 21) {
		memcpy(o, digits, (size_t)k);
		o += k;
		for (int i = k; i < n; i++)
			*o++ = '0';
	} else if (0 < n && n <= 21) {
		memcpy(o, digits, (size_t)n);
		o += n;
		*o++ = '.';
		memcpy(o, digits + n, (size_t)(k - n));
		o += k - n;
	} else if (-6 < n && n <= 0) {
		*o++ = '0';
		*o++ = '.';
		for (int i = 0; i < -n; i++)
			*o++ = '0';
		memcpy(o, digits, (size_t)k);
		o += k;
	} else {
		int e = n - 1;
		*o++ = digits[0];
		if (k > 1) {
			*o++ = '.';
			memcpy(o, digits + 1, (size_t)(k - 1));
			o += k - 1;
		}
		*o++ = 'e';
		*o++ = e < 0 ? '-' : '+';
		o += sprintf(o, "%d", e < 0 ? -e : e);
	}
	*o = '\0';
	return (size_t)(o - out);
}

/* Decimal digits of m (> 0) without trailing zeros; returns k, adds the zeros
 * dropped to *e. */
static int mantissa_digits(uint64_t m, char digits[24], int *e)
{
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

static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

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
 * numbers need neither printf nor strtod. Every product is overflow-checked;
 * a value out of reach falls back to the C library. (__int128 and the overflow
 * builtins are GCC/Clang extensions, hence the guard.)
 */
#define SY_JCS_EXACT 1
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
		*m = (uint64_t)v;
		*e = k - 16;
		return true;
	}
	return false;
}
#endif

/*
 * Whether m * 10^e reads back (round to nearest) as exactly d. When m and 10^|e|
 * are both exact doubles one correctly rounded operation gives the answer
 * (Clinger's fast path); then exact integers; otherwise strtod decides. The
 * string has no decimal point, so the locale plays no part.
 */
static bool round_trips(uint64_t m, int e, double d)
{
#if FLT_EVAL_METHOD == 0
	if (m <= (UINT64_C(1) << 53) && e >= -22 && e <= 22)
		return (e < 0 ? (double)m / pow10_exact[-e] : (double)m * pow10_exact[e]) == d;
#endif
#ifdef SY_JCS_EXACT
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
#ifdef SY_JCS_EXACT
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
static int shortest_digits(double d, char digits[24], int *n)
{
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
	*n = k + e;
	return k;
}

#define TWO53 9007199254740992.0

/* Integers below 2^53 print as themselves (k <= n <= 16 in ECMAScript's terms). */
static size_t format_integral(char *out, double d)
{
	bool neg = d < 0;
	uint64_t u = (uint64_t)(neg ? -d : d);
	char tmp[24];
	int k = 0;
	do {
		tmp[k++] = (char)('0' + u % 10);
		u /= 10;
	} while (u > 0);
	char *o = out;
	if (neg)
		*o++ = '-';
	while (k > 0)
		*o++ = tmp[--k];
	*o = '\0';
	return (size_t)(o - out);
}

size_t sy_jcs_format_number(char out[SY_JCS_NUMBER_MAX], double d)
{
	if (!isfinite(d)) {
		out[0] = '\0';
		return 0;
	}
	if (d == 0) {
		out[0] = '0';
		out[1] = '\0';
		return 1;
	}
	if (fabs(d) < TWO53 && d == trunc(d))
		return format_integral(out, d);
	char digits[24];
	int n;
	int k = shortest_digits(fabs(d), digits, &n);
	return layout_number(out, d < 0, digits, k, n);
}

bool sy_jcs_write_number(sy_buf *out, double d)
{
	char buf[SY_JCS_NUMBER_MAX];
	size_t n = sy_jcs_format_number(buf, d);
	if (n == 0)
		return false;
	return put(out, buf, n);
}

/*
 * The fast path for numbers read from a document: a literal with at most 15
 * significant digits is the shortest representation of its (normal) value, by
 * the DBL_DIG argument above. The literal is trusted only when its digits
 * recompute the value exactly, so a hand-made node with stale text is safe.
 * Returns 0 when the literal does not qualify.
 */
static size_t format_from_literal(char out[SY_JCS_NUMBER_MAX], const sy_json *v)
{
#if FLT_EVAL_METHOD == 0
	const char *t = v->u.number.text;
	size_t len = v->u.number.text_len;
	double d = v->u.number.value;
	if (t == NULL || len == 0 || fpclassify(d) != FP_NORMAL)
		return 0;
	size_t i = 0;
	bool neg = false;
	if (t[i] == '-') {
		neg = true;
		i++;
	}
	char digits[24];
	int k = 0;      /* significant digits kept */
	int zeros = 0;  /* zeros seen after the last non-zero digit, not yet kept */
	long scale = 0; /* value = digits * 10^scale */
	bool frac = false, any = false;
	for (; i < len; i++) {
		char c = t[i];
		if (c == '.') {
			if (frac)
				return 0;
			frac = true;
		} else if (c >= '0' && c <= '9') {
			any = true;
			if (c == '0') {
				if (k > 0)
					zeros++;
				if (frac)
					scale--;
			} else {
				if (k + zeros + 1 > 15)
					return 0;
				for (; zeros > 0; zeros--)
					digits[k++] = '0';
				digits[k++] = c;
				if (frac)
					scale--;
			}
		} else {
			break;
		}
	}
	if (!any || k == 0)
		return 0;
	scale += zeros;
	if (i < len) {
		if (t[i] != 'e' && t[i] != 'E')
			return 0;
		i++;
		bool eneg = false;
		if (i < len && (t[i] == '+' || t[i] == '-'))
			eneg = t[i++] == '-';
		long x = 0;
		if (i >= len)
			return 0;
		for (; i < len; i++) {
			if (t[i] < '0' || t[i] > '9')
				return 0;
			if (x < 100000)
				x = x * 10 + (t[i] - '0');
		}
		scale += eneg ? -x : x;
	}
	if (scale < -22 || scale > 22)
		return 0;
	uint64_t m = 0;
	for (int j = 0; j < k; j++)
		m = m * 10 + (uint64_t)(digits[j] - '0');
	double check = scale < 0 ? (double)m / pow10_exact[-scale] : (double)m * pow10_exact[scale];
	if (check != fabs(d) || neg != (d < 0))
		return 0;
	return layout_number(out, neg, digits, k, k + (int)scale);
#else
	(void)out;
	(void)v;
	return 0;
#endif
}

/* ---------------------------------------------------------------- strings */

#define ONES  UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/* Non-zero when some byte of w is < 0x20, '"' or '\\' (a byte >= 0x80 is not). */
static inline uint64_t needs_escape(uint64_t w)
{
	uint64_t q = w ^ (ONES * '"');
	uint64_t b = w ^ (ONES * '\\');
	return (((w - ONES * 0x20) & ~w) | ((q - ONES) & ~q) | ((b - ONES) & ~b)) & HIGHS;
}

/* The end of the run at p[i..n) that needs no escape. */
static inline size_t skip_unescaped(const unsigned char *p, size_t i, size_t n)
{
#if defined(__SSE2__)
	const __m128i quote = _mm_set1_epi8('"');
	const __m128i bslash = _mm_set1_epi8('\\');
	const __m128i ctl = _mm_set1_epi8(0x1F);
	while (n - i >= 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
		/* Unsigned v <= 0x1F exactly when min(v, 0x1F) == v. */
		__m128i hit = _mm_or_si128(
		        _mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v),
		        _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)));
		unsigned mask = (unsigned)_mm_movemask_epi8(hit);
		if (mask != 0)
			return i + (size_t)__builtin_ctz(mask);
		i += 16;
	}
#endif
	while (n - i >= 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		if (needs_escape(w))
			break;
		i += 8;
	}
	while (i < n && p[i] >= 0x20 && p[i] != '"' && p[i] != '\\')
		i++;
	return i;
}

/* Writes straight into the buffer: room for the plain case is reserved once, and
 * each escape reserves its extra bytes. */
bool sy_jcs_write_string(sy_buf *out, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	if (len > SIZE_MAX - 8)
		return false;
	bool room = out->data != NULL && !out->failed && len + 2 < out->cap - out->len;
	if (!room && !sy_buf_reserve(out, len + 2))
		return false;
	char *o = out->data + out->len;
	*o++ = '"';
	size_t i = 0;
	for (;;) {
		size_t run = skip_unescaped(p, i, len);
		memcpy(o, p + i, run - i);
		o += run - i;
		i = run;
		if (i >= len)
			break;
		unsigned char c = p[i++];
		out->len = (size_t)(o - out->data);
		/* The rest of the input, this escape (at most 6 bytes) and the quote. */
		if (!sy_buf_reserve(out, (len - i) + 6 + 1))
			return false;
		o = out->data + out->len;
		*o++ = '\\';
		switch (c) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '\b': *o++ = 'b'; break;
		case '\f': *o++ = 'f'; break;
		case '\n': *o++ = 'n'; break;
		case '\r': *o++ = 'r'; break;
		case '\t': *o++ = 't'; break;
		default:
			*o++ = 'u';
			*o++ = '0';
			*o++ = '0';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 0xF];
			break;
		}
	}
	*o++ = '"';
	*o = '\0';
	out->len = (size_t)(o - out->data);
	return true;
}

/* ---------------------------------------------------------------- key order */

/*
 * UTF-8 byte order is code point order, which is UTF-16 order except that a
 * supplementary character (4-byte UTF-8, a surrogate pair in UTF-16 starting at
 * 0xD800..0xDBFF) sorts before U+E000..U+FFFF (UTF-8 lead bytes 0xEE, 0xEF).
 * So only the first differing character matters, and only in that case.
 */
int sy_jcs_compare_keys(const char *a, size_t alen, const char *b, size_t blen)
{
	const unsigned char *x = (const unsigned char *)a;
	const unsigned char *y = (const unsigned char *)b;
	size_t m = alen < blen ? alen : blen;
	size_t i = 0;
	while (i < m && x[i] == y[i])
		i++;
	if (i == m)
		return alen < blen ? -1 : alen > blen ? 1 : 0;
	unsigned char cx = x[i], cy = y[i];
	/* A differing continuation byte means both characters share their lead byte,
	 * hence their length and their UTF-16 form's ordering by bytes. */
	if ((cx & 0xC0) != 0x80 && (cy & 0xC0) != 0x80) {
		if (cx >= 0xF0 && (cy == 0xEE || cy == 0xEF))
			return -1;
		if (cy >= 0xF0 && (cx == 0xEE || cx == 0xEF))
			return 1;
	}
	return cx < cy ? -1 : 1;
}

/* ---------------------------------------------------------------- values */

/*
 * Sorting sorts entries that carry the first 8 bytes of the name, recoded so
 * that plain unsigned comparison follows UTF-16 order (lead bytes 0xF0..0xF4
 * move below 0xEE, 0xEF; the recoding is injective, so a first differing byte
 * stays first), packed big-endian: most comparisons never touch the names.
 */
typedef struct {
	uint64_t prefix;
	const sy_json_member *m;
} sort_entry;

static uint64_t order_prefix(const char *key, size_t len)
{
	uint64_t p = 0;
	for (size_t i = 0; i < 8; i++) {
		unsigned c = i < len ? (unsigned char)key[i] : 0;
		if (c >= 0xF0 && c <= 0xF4)
			c -= 2; /* 0xEE..0xF2 */
		else if (c == 0xEE || c == 0xEF)
			c += 5; /* 0xF3, 0xF4 */
		p = p << 8 | c;
	}
	return p;
}

static int entry_cmp(const void *pa, const void *pb)
{
	const sort_entry *a = pa, *b = pb;
	if (a->prefix != b->prefix)
		return a->prefix < b->prefix ? -1 : 1;
	int c = sy_jcs_compare_keys(a->m->key, a->m->key_len, b->m->key, b->m->key_len);
	if (c != 0)
		return c;
	/* Equal names only in builder-made objects: keep document order. */
	return a->m < b->m ? -1 : a->m > b->m ? 1 : 0;
}

static bool write_value(sy_buf *out, const sy_json *v, sy_error *err);

#define SORT_ON_STACK      32
#define INSERTION_SORT_MAX 16

static bool nomem(sy_error *err)
{
	return sy_error_set(err, SY_ERR_NOMEM, "out of memory while writing JSON");
}

static bool write_object(sy_buf *out, const sy_json *v, sy_error *err)
{
	size_t n = v->u.object.count;
	const sy_json_member *m = v->u.object.members;
	sort_entry stack[SORT_ON_STACK];
	sort_entry *order = NULL;
	bool sorted = true;
	for (size_t i = 1; i < n && sorted; i++)
		sorted = sy_jcs_compare_keys(m[i - 1].key, m[i - 1].key_len, m[i].key,
		                             m[i].key_len) < 0;
	if (!sorted) {
		if (n > SIZE_MAX / sizeof(*order))
			return nomem(err);
		order = n <= SORT_ON_STACK ? stack : sy_malloc(n * sizeof(*order));
		if (order == NULL)
			return nomem(err);
		for (size_t i = 0; i < n; i++) {
			order[i].prefix = order_prefix(m[i].key, m[i].key_len);
			order[i].m = &m[i];
		}
		if (n <= INSERTION_SORT_MAX) {
			for (size_t i = 1; i < n; i++) {
				sort_entry x = order[i];
				size_t k = i;
				for (; k > 0 && entry_cmp(&order[k - 1], &x) > 0; k--)
					order[k] = order[k - 1];
				order[k] = x;
			}
		} else {
			qsort(order, n, sizeof(*order), entry_cmp);
		}
	}
	if (!putch(out, '{')) {
		nomem(err);
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		const sy_json_member *mem = order != NULL ? order[i].m : &m[i];
		if ((i > 0 && !putch(out, ',')) ||
		    !sy_jcs_write_string(out, mem->key, mem->key_len) || !putch(out, ':')) {
			nomem(err);
			goto fail;
		}
		if (!write_value(out, mem->value, err))
			goto fail;
	}
	if (!putch(out, '}')) {
		nomem(err);
		goto fail;
	}
	if (order != stack)
		sy_free(order);
	return true;
fail:
	if (order != stack)
		sy_free(order);
	return false;
}

static bool write_value(sy_buf *out, const sy_json *v, sy_error *err)
{
	if (v == NULL)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "missing value");
	switch (v->type) {
	case SY_JSON_NULL: return put(out, "null", 4) || nomem(err);
	case SY_JSON_FALSE: return put(out, "false", 5) || nomem(err);
	case SY_JSON_TRUE: return put(out, "true", 4) || nomem(err);
	case SY_JSON_NUMBER: {
		double d = v->u.number.value;
		if (!isfinite(d))
			return sy_error_set(err, SY_ERR_INVALID_REQUEST, "number is not finite");
		char buf[SY_JCS_NUMBER_MAX];
		size_t n;
		if (d == 0 || (fabs(d) < TWO53 && d == trunc(d)))
			n = sy_jcs_format_number(buf, d);
		else if ((n = format_from_literal(buf, v)) == 0)
			n = sy_jcs_format_number(buf, d);
		return put(out, buf, n) || nomem(err);
	}
	case SY_JSON_STRING:
		return sy_jcs_write_string(out, v->u.string.data, v->u.string.len) || nomem(err);
	case SY_JSON_ARRAY:
		if (!putch(out, '['))
			return nomem(err);
		for (size_t i = 0; i < v->u.array.count; i++) {
			if (i > 0 && !putch(out, ','))
				return nomem(err);
			if (!write_value(out, v->u.array.items[i], err))
				return false;
		}
		return putch(out, ']') || nomem(err);
	case SY_JSON_OBJECT: return write_object(out, v, err);
	}
	return sy_error_set(err, SY_ERR_INVALID_REQUEST, "unknown value type");
}

bool sy_jcs_write(sy_buf *out, const sy_json *v, sy_error *err)
{
	return write_value(out, v, err);
}
