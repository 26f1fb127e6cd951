/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * json_parse.c: the strict JSON reader (json.h). Every request body is exactly RFC 8259.
 *
 * Layer: middle of src/core (doc/hacking.md).
 * Rules: doc/contract.md#request-bodies (strict JSON), doc/contract.md#mutation-shapes
 * (duplicate member names are refused).
 * Notes: The reader validates UTF-8 (RFC 3629) and refuses escaped lone surrogates. It
 * refuses duplicate member names at every depth. Nesting goes at most SY_JSON_MAX_DEPTH
 * deep. Only whitespace may follow the value. Each number keeps its literal beside its
 * nearest double (decimal.c).
 */
#include "config.h"

#include <assert.h>
#include <locale.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/json.h"
#include "synchro/octets.h"

#include "decimal.h"
#include "json_arena.h"
#include "json_scan.h"

typedef struct {
	const unsigned char *p; /* start of the text */
	size_t len;
	size_t pos;
	sy_json_doc *doc;
	sy_error *err;
	bool nomem;
	/* Scratch stacks shared by all nesting levels: children are collected here
	 * and copied to the arena, at their final size, when their container closes. */
	sy_json **items;
	size_t items_len, items_cap;
	sy_json_member *members;
	size_t *key_pos; /* byte offset of each member name, beside members */
	size_t members_len, members_cap;
	uint32_t *table; /* open-addressing index for duplicate detection */
	size_t table_cap;
	const char *decimal_point; /* of the current locale, for strtod */
} parser;

static bool perr(parser *ps, size_t at, const char *reason)
{
	if (!ps->nomem)
		sy_error_set(ps->err, SY_ERR_INVALID_REQUEST, "invalid JSON at byte %zu: %s", at,
		             reason);
	return false;
}

static bool pnomem(parser *ps)
{
	if (!ps->nomem) {
		ps->nomem = true;
		sy_error_set(ps->err, SY_ERR_NOMEM, "out of memory while parsing JSON");
	}
	return false;
}

static inline void skip_ws(parser *ps)
{
	const unsigned char *p = ps->p;
	size_t i = ps->pos, n = ps->len;
	if (i < n && p[i] > ' ')
		return;
	while (i < n && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' || p[i] == '\t'))
		i++;
	ps->pos = i;
}

static bool parse_value(parser *ps, sy_json **out, int depth);

/*
 * Length of the valid UTF-8 sequence at p[0..n) whose lead byte is >= 0x80, or 0
 * when it is invalid: overlong forms, UTF-16 surrogates, beyond U+10FFFF,
 * truncated sequences (RFC 3629, section 4).
 */
static size_t utf8_seq_len(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	if (c >= 0xC2 && c <= 0xDF) {
		if (n >= 2 && (p[1] & 0xC0) == 0x80)
			return 2;
		return 0;
	}
	if (c >= 0xE0 && c <= 0xEF) {
		if (n < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80)
			return 0;
		if (c == 0xE0 && p[1] < 0xA0)
			return 0; /* overlong */
		if (c == 0xED && p[1] >= 0xA0)
			return 0; /* surrogate */
		return 3;
	}
	if (c >= 0xF0 && c <= 0xF4) {
		if (n < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 ||
		    (p[3] & 0xC0) != 0x80)
			return 0;
		if (c == 0xF0 && p[1] < 0x90)
			return 0; /* overlong */
		if (c == 0xF4 && p[1] >= 0x90)
			return 0; /* > U+10FFFF */
		return 4;
	}
	return 0;
}

/* Reads the 4 hex digits after "\u" at p[i..]; -1 when they are not there. */
static long read_hex4(const unsigned char *p, size_t i, size_t n)
{
	if (n - i < 4)
		return -1;
	long v = 0;
	for (int k = 0; k < 4; k++) {
		int h = sy_hex_digit(p[i + k]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

static size_t put_utf8(unsigned char *d, unsigned long cp)
{
	/* The decoder refuses lone surrogates and pairs a high one with its low one. */
	assert(cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF));
	if (cp < 0x80) {
		d[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		d[0] = (unsigned char)(0xC0 | (cp >> 6));
		d[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		d[0] = (unsigned char)(0xE0 | (cp >> 12));
		d[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		d[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	d[0] = (unsigned char)(0xF0 | (cp >> 18));
	d[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
	d[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
	d[3] = (unsigned char)(0x80 | (cp & 0x3F));
	return 4;
}

/*
 * Parses the string whose opening quote is at ps->pos. The first pass finds the
 * closing quote while validating UTF-8 and refusing raw control characters; the
 * second copies (no escapes) or decodes, which never grows the text.
 */
static bool parse_string(parser *ps, const char **out, size_t *out_len)
{
	const unsigned char *p = ps->p;
	size_t n = ps->len;
	size_t start = ps->pos + 1;
	size_t i = start;
	bool escapes = false;

	for (;;) {
		i = sy_scan_plain(p, i, n, true);
		if (i >= n)
			return perr(ps, ps->pos, "unterminated string");
		unsigned char c = p[i];
		if (c == '"')
			break;
		if (c == '\\') {
			escapes = true;
			if (n - i < 2)
				return perr(ps, ps->pos, "unterminated string");
			if (strchr("\"\\/bfnrtu", p[i + 1]) == NULL || p[i + 1] == '\0')
				return perr(ps, i, "invalid escape in string");
			i += 2;
			continue;
		}
		if (c < 0x20)
			return perr(ps, i, "unescaped control character in string");
		if (c >= 0x80) {
			size_t l = utf8_seq_len(p + i, n - i);
			if (l == 0)
				return perr(ps, i, "invalid UTF-8");
			i += l;
			continue;
		}
		i++;
	}
	size_t end = i; /* the closing quote */
	size_t raw = end - start;
	char *d = arena_alloc(ps->doc, raw + 1, 1);
	if (d == NULL)
		return pnomem(ps);
	if (!escapes) {
		memcpy(d, p + start, raw);
		d[raw] = '\0';
		*out = d;
		*out_len = raw;
		ps->pos = end + 1;
		return true;
	}

	unsigned char *o = (unsigned char *)d;
	i = start;
	while (i < end) {
		const unsigned char *bs = memchr(p + i, '\\', end - i);
		size_t run = (bs != NULL ? (size_t)(bs - p) : end) - i;
		memcpy(o, p + i, run);
		o += run;
		i += run;
		if (i >= end)
			break;
		size_t esc = i;
		unsigned char e = p[i + 1];
		i += 2;
		switch (e) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '/': *o++ = '/'; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			long u = read_hex4(p, i, end);
			if (u < 0)
				return perr(ps, esc, "invalid \\u escape");
			i += 4;
			unsigned long cp = (unsigned long)u;
			if (u >= 0xDC00 && u <= 0xDFFF)
				return perr(ps, esc, "lone low surrogate escape");
			if (u >= 0xD800 && u <= 0xDBFF) {
				long lo = -1;
				if (end - i >= 6 && p[i] == '\\' && p[i + 1] == 'u')
					lo = read_hex4(p, i + 2, end);
				if (lo < 0xDC00 || lo > 0xDFFF)
					return perr(
					        ps, esc,
					        "high surrogate escape not followed by a low one");
				i += 6;
				cp = 0x10000 + (((unsigned long)u - 0xD800) << 10) +
				     ((unsigned long)lo - 0xDC00);
			}
			o += put_utf8(o, cp);
			break;
		}
		default: return perr(ps, esc, "invalid escape in string");
		}
	}
	assert((size_t)(o - (unsigned char *)d) <= raw); /* decoding never grows the text */
	*o = '\0';
	*out = d;
	*out_len = (size_t)(o - (unsigned char *)d);
	ps->pos = end + 1;
	return true;
}

/*
 * strtod on a NUL-terminated literal of the RFC grammar. strtod reads the decimal
 * point of the current locale; the process is expected to stay in the C locale
 * (nothing here calls setlocale), but a different point is honoured by rewriting
 * the '.' so the result never depends on the locale.
 */
static bool literal_strtod(parser *ps, const char *text, size_t len, double *out)
{
	const char *point = memchr(text, '.', len);
	if (point == NULL || (ps->decimal_point[0] == '.' && ps->decimal_point[1] == '\0')) {
		*out = strtod(text, NULL);
		return true;
	}
	size_t dplen = strlen(ps->decimal_point), head = (size_t)(point - text);
	char small[128];
	size_t need = len + dplen; /* minus the '.', plus the NUL */
	char *copy = need <= sizeof(small) ? small : sy_malloc(need);
	if (copy == NULL)
		return pnomem(ps);
	memcpy(copy, text, head);
	memcpy(copy + head, ps->decimal_point, dplen);
	memcpy(copy + head + dplen, point + 1, len - head); /* with the NUL */
	*out = strtod(copy, NULL);
	if (copy != small)
		sy_free(copy);
	return true;
}

static bool parse_number(parser *ps, sy_json **out)
{
	const unsigned char *p = ps->p;
	size_t n = ps->len;
	size_t start = ps->pos, i = start;
	bool neg = false, is_int = true;
	uint64_t mant = 0;
	int ndigits = 0; /* significant digits folded into mant, up to 19 */
	bool mant_exact = true;
	long frac_digits = 0;
	long exp10 = 0;

	if (p[i] == '-') {
		neg = true;
		i++;
	}
	if (i >= n || p[i] < '0' || p[i] > '9')
		return perr(ps, start, "invalid number");
	if (p[i] == '0') {
		i++;
		if (i < n && p[i] >= '0' && p[i] <= '9')
			return perr(ps, start, "leading zero in number");
	} else {
		while (i < n && p[i] >= '0' && p[i] <= '9') {
			if (ndigits < 19) {
				mant = mant * 10 + (p[i] - '0');
				ndigits++;
			} else {
				mant_exact = false;
			}
			i++;
		}
	}
	if (i < n && p[i] == '.') {
		is_int = false;
		i++;
		if (i >= n || p[i] < '0' || p[i] > '9')
			return perr(ps, i, "digit expected after decimal point");
		while (i < n && p[i] >= '0' && p[i] <= '9') {
			if (mant == 0 && p[i] == '0') {
				frac_digits++; /* leading zeros are not significant */
			} else if (ndigits < 19) {
				mant = mant * 10 + (p[i] - '0');
				ndigits++;
				frac_digits++;
			} else {
				mant_exact = false;
			}
			i++;
		}
	}
	if (i < n && (p[i] == 'e' || p[i] == 'E')) {
		is_int = false;
		i++;
		bool eneg = false;
		if (i < n && (p[i] == '+' || p[i] == '-')) {
			eneg = p[i] == '-';
			i++;
		}
		if (i >= n || p[i] < '0' || p[i] > '9')
			return perr(ps, i, "digit expected in exponent");
		while (i < n && p[i] >= '0' && p[i] <= '9') {
			if (exp10 < 100000)
				exp10 = exp10 * 10 + (p[i] - '0');
			i++;
		}
		if (eneg)
			exp10 = -exp10;
	}

	size_t tlen = i - start;
	sy_json *v = ARENA_NEW(ps->doc, sy_json);
	char *text = arena_strndup(ps->doc, (const char *)p + start, tlen);
	if (v == NULL || text == NULL)
		return pnomem(ps);

	double value = 0; /* always set below; gcc -O1 cannot see it */
	long e = exp10 - frac_digits;
	if (mant_exact && sy_decimal_to_double(mant, e, &value)) {
		if (neg)
			value = -value;
	} else if (!literal_strtod(ps, text, tlen, &value)) {
		return false;
	}
	v->type = SY_JSON_NUMBER;
	v->u.number.value = value;
	v->u.number.is_integer = is_int;
	v->u.number.text = text;
	v->u.number.text_len = tlen;
	ps->pos = i;
	*out = v;
	return true;
}

static uint32_t key_hash(const char *s, size_t len)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

static int member_name_cmp(const void *pa, const void *pb)
{
	const sy_json_member *a = *(const sy_json_member *const *)pa;
	const sy_json_member *b = *(const sy_json_member *const *)pb;
	if (a->key_len != b->key_len)
		return a->key_len < b->key_len ? -1 : 1;
	int c = memcmp(a->key, b->key, a->key_len);
	if (c != 0)
		return c;
	return a < b ? -1 : a > b ? 1 : 0; /* document order among equals */
}

/*
 * The sorting check, O(n log n) whatever the names: equal names end up adjacent,
 * in document order, and the earliest second occurrence is reported, as the hash
 * index would.
 */
static bool check_duplicates_sorted(parser *ps, const sy_json_member *m, size_t count,
                                    const size_t *key_pos)
{
	if (count > SIZE_MAX / sizeof(sy_json_member *))
		return pnomem(ps);
	const sy_json_member **order = sy_malloc(count * sizeof(*order));
	if (order == NULL)
		return pnomem(ps);
	for (size_t i = 0; i < count; i++)
		order[i] = &m[i];
	qsort(order, count, sizeof(*order), member_name_cmp);
	size_t first_repeat = SIZE_MAX;
	bool run = false; /* order[i - 1] already repeats an earlier name */
	for (size_t i = 1; i < count; i++) {
		bool same = order[i]->key_len == order[i - 1]->key_len &&
		            memcmp(order[i]->key, order[i - 1]->key, order[i]->key_len) == 0;
		if (same && !run && (size_t)(order[i] - m) < first_repeat)
			first_repeat = (size_t)(order[i] - m);
		run = same;
	}
	sy_free(order);
	if (first_repeat != SIZE_MAX)
		return perr(ps, key_pos[first_repeat], "duplicate member name");
	return true;
}

/*
 * Small objects compare pairwise; larger ones go through a hash index, so a
 * document with many members stays linear. Names chosen to collide (the hash is
 * not keyed) would make probing quadratic, so past a probe budget the check
 * starts over by sorting.
 */
#define DUP_LINEAR_MAX 12

static bool check_duplicates(parser *ps, const sy_json_member *m, size_t count,
                             const size_t *key_pos)
{
	if (count <= DUP_LINEAR_MAX) {
		for (size_t a = 1; a < count; a++) {
			for (size_t b = 0; b < a; b++) {
				if (m[a].key_len == m[b].key_len &&
				    memcmp(m[a].key, m[b].key, m[a].key_len) == 0)
					return perr(ps, key_pos[a], "duplicate member name");
			}
		}
		return true;
	}
	size_t cap = 16;
	while (cap < count * 2)
		cap *= 2;
	/* A power of two (the probe masks with cap - 1) never more than half full. */
	assert((cap & (cap - 1)) == 0 && count < cap);
	if (cap > ps->table_cap) {
		uint32_t *t = sy_malloc(cap * sizeof(*t));
		if (t == NULL)
			return pnomem(ps);
		sy_free(ps->table);
		ps->table = t;
		ps->table_cap = cap;
	}
	uint32_t *t = ps->table;
	memset(t, 0xFF, cap * sizeof(*t));
	size_t budget = 8 * count + 1024;
	for (size_t a = 0; a < count; a++) {
		size_t slot = key_hash(m[a].key, m[a].key_len) & (cap - 1);
		while (t[slot] != UINT32_MAX) {
			const sy_json_member *o = &m[t[slot]];
			if (o->key_len == m[a].key_len && memcmp(o->key, m[a].key, o->key_len) == 0)
				return perr(ps, key_pos[a], "duplicate member name");
			if (budget-- == 0)
				return check_duplicates_sorted(ps, m, count, key_pos);
			slot = (slot + 1) & (cap - 1);
		}
		t[slot] = (uint32_t)a;
	}
	return true;
}

static bool grow(parser *ps, void **arr, size_t *cap, size_t elem)
{
	size_t ncap = *cap ? *cap * 2 : 64;
	if (ncap > SIZE_MAX / elem)
		return pnomem(ps);
	void *np = sy_realloc(*arr, ncap * elem);
	if (np == NULL)
		return pnomem(ps);
	*arr = np;
	*cap = ncap;
	return true;
}

static bool parse_array(parser *ps, sy_json **out, int depth)
{
	size_t open = ps->pos;
	size_t base = ps->items_len;
	ps->pos++;
	skip_ws(ps);
	if (ps->pos < ps->len && ps->p[ps->pos] == ']') {
		ps->pos++;
	} else {
		for (;;) {
			sy_json *item;
			if (!parse_value(ps, &item, depth))
				return false;
			if (ps->items_len == ps->items_cap &&
			    !grow(ps, (void **)&ps->items, &ps->items_cap, sizeof(*ps->items)))
				return false;
			ps->items[ps->items_len++] = item;
			skip_ws(ps);
			if (ps->pos >= ps->len)
				return perr(ps, open, "unterminated array");
			unsigned char c = ps->p[ps->pos];
			ps->pos++;
			if (c == ']')
				break;
			if (c != ',')
				return perr(ps, ps->pos - 1, "',' or ']' expected");
			skip_ws(ps);
		}
	}
	assert(ps->items_len >= base); /* nested arrays gave back what they pushed */
	size_t count = ps->items_len - base;
	sy_json *v = ARENA_NEW(ps->doc, sy_json);
	sy_json **items = NULL;
	if (count > 0)
		items = arena_alloc(ps->doc, count * sizeof(*items), alignof(sy_json *));
	if (v == NULL || (count > 0 && items == NULL))
		return pnomem(ps);
	if (count > 0)
		memcpy(items, ps->items + base, count * sizeof(*items));
	ps->items_len = base;
	v->type = SY_JSON_ARRAY;
	v->u.array.items = items;
	v->u.array.count = count;
	v->u.array.capacity = count;
	*out = v;
	return true;
}

static bool parse_object(parser *ps, sy_json **out, int depth)
{
	size_t open = ps->pos;
	size_t base = ps->members_len;
	ps->pos++;
	skip_ws(ps);
	if (ps->pos < ps->len && ps->p[ps->pos] == '}') {
		ps->pos++;
	} else {
		for (;;) {
			if (ps->pos >= ps->len)
				return perr(ps, open, "unterminated object");
			if (ps->p[ps->pos] != '"')
				return perr(ps, ps->pos, "member name expected");
			if (ps->members_len == ps->members_cap) {
				size_t cap = ps->members_cap;
				if (!grow(ps, (void **)&ps->key_pos, &cap, sizeof(*ps->key_pos)) ||
				    !grow(ps, (void **)&ps->members, &ps->members_cap,
				          sizeof(*ps->members)))
					return false;
			}
			size_t idx = ps->members_len;
			sy_json_member *m = &ps->members[idx];
			ps->key_pos[idx] = ps->pos;
			if (!parse_string(ps, &m->key, &m->key_len))
				return false;
			m->value = NULL;
			ps->members_len++;
			skip_ws(ps);
			if (ps->pos >= ps->len || ps->p[ps->pos] != ':')
				return perr(ps, ps->pos, "':' expected");
			ps->pos++;
			skip_ws(ps);
			sy_json *val;
			if (!parse_value(ps, &val, depth))
				return false;
			/* parse_value may have moved ps->members. */
			ps->members[idx].value = val;
			skip_ws(ps);
			if (ps->pos >= ps->len)
				return perr(ps, open, "unterminated object");
			unsigned char c = ps->p[ps->pos];
			ps->pos++;
			if (c == '}')
				break;
			if (c != ',')
				return perr(ps, ps->pos - 1, "',' or '}' expected");
			skip_ws(ps);
		}
	}
	assert(ps->members_len >= base); /* nested objects gave back what they pushed */
	size_t count = ps->members_len - base;
	if (count > 1 && !check_duplicates(ps, ps->members + base, count, ps->key_pos + base))
		return false;
	sy_json *v = ARENA_NEW(ps->doc, sy_json);
	sy_json_member *members = NULL;
	if (count > 0)
		members = arena_alloc(ps->doc, count * sizeof(*members), alignof(sy_json_member));
	if (v == NULL || (count > 0 && members == NULL))
		return pnomem(ps);
	if (count > 0)
		memcpy(members, ps->members + base, count * sizeof(*members));
	ps->members_len = base;
	v->type = SY_JSON_OBJECT;
	v->u.object.members = members;
	v->u.object.count = count;
	v->u.object.capacity = count;
	*out = v;
	return true;
}
static bool parse_literal(parser *ps, const char *word, size_t wlen, sy_json_type t, sy_json **out)
{
	if (ps->len - ps->pos < wlen || memcmp(ps->p + ps->pos, word, wlen) != 0)
		return perr(ps, ps->pos, "invalid literal");
	sy_json *v = new_node(ps->doc, t);
	if (v == NULL)
		return pnomem(ps);
	ps->pos += wlen;
	*out = v;
	return true;
}

/* Expects ps->pos on the first byte of the value (whitespace skipped). */
static bool parse_value(parser *ps, sy_json **out, int depth)
{
	if (ps->pos >= ps->len)
		return perr(ps, ps->pos, "value expected");
	unsigned char c = ps->p[ps->pos];
	switch (c) {
	case '{':
	case '[':
		if (depth >= SY_JSON_MAX_DEPTH)
			return perr(ps, ps->pos, "nesting deeper than 64");
		return c == '{' ? parse_object(ps, out, depth + 1)
		                : parse_array(ps, out, depth + 1);
	case '"': {
		sy_json *v = ARENA_NEW(ps->doc, sy_json);
		if (v == NULL)
			return pnomem(ps);
		v->type = SY_JSON_STRING;
		if (!parse_string(ps, &v->u.string.data, &v->u.string.len))
			return false;
		*out = v;
		return true;
	}
	case 't': return parse_literal(ps, "true", 4, SY_JSON_TRUE, out);
	case 'f': return parse_literal(ps, "false", 5, SY_JSON_FALSE, out);
	case 'n': return parse_literal(ps, "null", 4, SY_JSON_NULL, out);
	default:
		if (c == '-' || (c >= '0' && c <= '9'))
			return parse_number(ps, out);
		if (c >= 0x80 && utf8_seq_len(ps->p + ps->pos, ps->len - ps->pos) == 0)
			return perr(ps, ps->pos, "invalid UTF-8");
		return perr(ps, ps->pos, "unexpected character");
	}
}

sy_json_doc *sy_json_parse(const char *text, size_t len, sy_error *err)
{
	size_t first = len < ARENA_FIRST_CHUNK / 2 ? ARENA_FIRST_CHUNK : len * 2;
	if (first > ARENA_MAX_CHUNK)
		first = ARENA_MAX_CHUNK;
	const struct lconv *lc = localeconv();
	parser ps = {
	        .p = (const unsigned char *)text,
	        .len = text != NULL ? len : 0,
	        .err = err,
	        .decimal_point =
	                lc != NULL && lc->decimal_point != NULL && lc->decimal_point[0] != '\0'
	                        ? lc->decimal_point
	                        : ".",
	};
	sy_json *root = NULL;
	ps.doc = sy_json_doc_create(first);
	if (ps.doc == NULL) {
		pnomem(&ps);
		return NULL;
	}
	skip_ws(&ps);
	if (!parse_value(&ps, &root, 0))
		goto fail;
	skip_ws(&ps);
	if (ps.pos != ps.len) {
		if (ps.p[ps.pos] >= 0x80 && utf8_seq_len(ps.p + ps.pos, ps.len - ps.pos) == 0)
			perr(&ps, ps.pos, "invalid UTF-8");
		else
			perr(&ps, ps.pos, "unexpected data after the value");
		goto fail;
	}
	/* Every container handed its scratch entries over when it closed. */
	assert(ps.items_len == 0 && ps.members_len == 0);
	ps.doc->root = root;
	sy_free(ps.items);
	sy_free(ps.members);
	sy_free(ps.key_pos);
	sy_free(ps.table);
	return ps.doc;
fail:
	sy_free(ps.items);
	sy_free(ps.members);
	sy_free(ps.key_pos);
	sy_free(ps.table);
	sy_json_doc_free(ps.doc);
	return NULL;
}
