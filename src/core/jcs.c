/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * jcs.c: the canonical JSON writer (RFC 8785, JCS). Every fingerprint and stored ledger
 * response is computed over its bytes.
 *
 * Layer: middle of src/core (doc/hacking.md).
 * Rules: doc/contract.md#fingerprints (the bytes each fingerprint hashes).
 * Notes: Numbers take ECMAScript form (RFC 8785 section 3.2.2.3). decimal.c gives the
 * digits; this file lays them out. Strings take the JCS escapes (section 3.2.2.2). Object
 * members sort by UTF-16 code units (section 3.2.3).
 */
#include "config.h"

#include <assert.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/jcs.h"
#include "synchro/octets.h"

#include "decimal.h"
#include "json_scan.h"

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
	assert(k >= 1 && k <= 17 && n > -400 && n < 400); /* a double's digits and exponent */
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
	assert((size_t)(o - out) < SY_JCS_NUMBER_MAX);
	return (size_t)(o - out);
}

#define TWO53 9007199254740992.0

/* Integers below 2^53 print as themselves (k <= n <= 16 in ECMAScript's terms). */
static size_t format_integral(char *out, double d)
{
	assert(fabs(d) < TWO53 && d == trunc(d));
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
	int k = sy_decimal_shortest(fabs(d), digits, &n);
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
 * the DBL_DIG argument of sy_decimal_shortest(). The literal is trusted only
 * when its digits recompute the value exactly, so a hand-made node with stale
 * text is safe.
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
	double check;
	if (!sy_decimal_fast(m, scale, &check) || check != fabs(d) || neg != (d < 0))
		return 0;
	return layout_number(out, neg, digits, k, k + (int)scale);
#else
	(void)out;
	(void)v;
	return 0;
#endif
}

/* ---------------------------------------------------------------- strings */

/* Writes straight into the buffer: room for the plain case is reserved once, and
 * each escape reserves its extra bytes. */
bool sy_jcs_write_string(sy_buf *out, const char *s, size_t len)
{
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
		size_t run = sy_scan_plain(p, i, len, false);
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
			sy_hex_encode(o, &c, 1);
			o += 2;
			break;
		}
	}
	*o++ = '"';
	*o = '\0';
	out->len = (size_t)(o - out->data);
	assert(out->len < out->cap); /* the reservations covered every byte */
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
#ifndef NDEBUG
		/* RFC 8785 3.2.3: strictly increasing (equal names tie on document order). */
		for (size_t i = 1; i < n; i++)
			assert(entry_cmp(&order[i - 1], &order[i]) < 0);
#endif
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
