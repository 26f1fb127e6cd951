/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * types.c: the portable types. It writes their canonical wire values and their PostgreSQL
 * text forms.
 *
 * Layer: middle of src/core (doc/hacking.md).
 * Rules: doc/contract.md#portable-types (the types and their forms).
 * Interface:
 *   sy_wire_check(), sy_wire_valid()  a wire value against its type
 *   sy_wire_to_pg_text()              a wire value as PostgreSQL text
 *   sy_wire_decode_pg_text(), sy_wire_from_pg_text()  PostgreSQL text as a wire value
 *   sy_type_name(), sy_type_from_name()  type names
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/jcs.h"
#include "synchro/octets.h"
#include "synchro/scalar.h"
#include "synchro/types.h"

static const char *const type_names[SY_TYPE__COUNT] = {
        [SY_TYPE_TEXT] = "text",           [SY_TYPE_INT32] = "int32",     [SY_TYPE_INT64] = "int64",
        [SY_TYPE_FLOAT64] = "float64",     [SY_TYPE_NUMERIC] = "numeric", [SY_TYPE_BOOL] = "bool",
        [SY_TYPE_TIMESTAMP] = "timestamp", [SY_TYPE_DATE] = "date",       [SY_TYPE_UUID] = "uuid",
        [SY_TYPE_BYTES] = "bytes",         [SY_TYPE_JSON] = "json",
};

static const char b64_alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

#define INT64_MAX_DIGITS "9223372036854775807"
#define INT64_MIN_DIGITS "9223372036854775808" /* magnitude of INT64_MIN */

const char *sy_type_name(sy_type t)
{
	return (unsigned)t < SY_TYPE__COUNT ? type_names[t] : NULL;
}

bool sy_type_from_name(const char *name, sy_type *out)
{
	if (name == NULL)
		return false;
	for (unsigned i = 0; i < SY_TYPE__COUNT; i++) {
		if (strcmp(name, type_names[i]) == 0) {
			if (out != NULL)
				*out = (sy_type)i;
			return true;
		}
	}
	return false;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The 6-bit value of a base64 symbol; -1 for anything else ('=' included). */
static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* -?(0|[1-9][0-9]*) at s[0..len): the sign and digits, or false. */
static bool integer_syntax(const char *s, size_t len, bool *negative, const char **digits,
                           size_t *ndigits)
{
	bool neg = len > 0 && s[0] == '-';
	const char *d = s + neg;
	size_t n = len - neg;
	if (n == 0 || (d[0] == '0' && n > 1))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_digit(d[i]))
			return false;
	*negative = neg;
	*digits = d;
	*ndigits = n;
	return true;
}

/* Whether the decimal digit string d[0..n) (no leading zeros) is at most limit. */
static bool digits_at_most(const char *d, size_t n, const char *limit)
{
	size_t ln = strlen(limit);
	return n < ln || (n == ln && memcmp(d, limit, n) <= 0);
}

static bool int32_literal(const char *s, size_t len, const char **why, int32_t *out)
{
	bool neg;
	const char *d;
	size_t n;
	if (s == NULL || !integer_syntax(s, len, &neg, &d, &n)) {
		*why = "int32 must be a JSON integer literal";
		return false;
	}
	if (neg && n == 1 && d[0] == '0') {
		*why = "int32 must not be -0";
		return false;
	}
	if (!digits_at_most(d, n, neg ? "2147483648" : "2147483647")) {
		*why = "int32 out of range";
		return false;
	}
	int64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (d[i] - '0');
	*out = (int32_t)(neg ? -v : v);
	return true;
}

static bool int64_string(const char *s, size_t len, const char **why)
{
	bool neg;
	const char *d;
	size_t n;
	if (!integer_syntax(s, len, &neg, &d, &n)) {
		*why = "int64 is not a canonical integer string";
		return false;
	}
	if (neg && n == 1 && d[0] == '0') {
		*why = "int64 must not be -0";
		return false;
	}
	if (!digits_at_most(d, n, neg ? INT64_MIN_DIGITS : INT64_MAX_DIGITS)) {
		*why = "int64 out of range";
		return false;
	}
	return true;
}

static bool numeric_string(const char *s, size_t len, const char **why)
{
	size_t dot = 0;
	while (dot < len && s[dot] != '.')
		dot++;
	bool neg;
	const char *d;
	size_t nint;
	if (!integer_syntax(s, dot, &neg, &d, &nint)) {
		*why = "numeric is not a canonical decimal string";
		return false;
	}
	size_t nfrac = 0;
	if (dot < len) {
		nfrac = len - dot - 1;
		if (nfrac == 0 || s[len - 1] == '0') {
			*why = "numeric is not a canonical decimal string";
			return false;
		}
		for (size_t i = dot + 1; i < len; i++) {
			if (!is_digit(s[i])) {
				*why = "numeric is not a canonical decimal string";
				return false;
			}
		}
	}
	if (neg && nint == 1 && d[0] == '0' && nfrac == 0) {
		*why = "numeric must not be -0";
		return false;
	}
	if (nint > SY_NUMERIC_MAX_INT_DIGITS || nfrac > SY_NUMERIC_MAX_FRAC_DIGITS) {
		*why = "numeric has too many digits";
		return false;
	}
	return true;
}

static bool base64_canonical(const char *s, size_t len)
{
	if (len % 4 != 0)
		return false;
	size_t pad = 0;
	if (len > 0 && s[len - 1] == '=')
		pad = len > 1 && s[len - 2] == '=' ? 2 : 1;
	for (size_t i = 0; i < len - pad; i++)
		if (b64_value(s[i]) < 0)
			return false;
	/* The bits of the last symbol past the final byte must be zero. */
	if (pad == 2)
		return (b64_value(s[len - 3]) & 0x0f) == 0;
	if (pad == 1)
		return (b64_value(s[len - 2]) & 0x03) == 0;
	return true;
}

static sy_wire_status json_canonical(const char *s, size_t len, const char **why)
{
	sy_error err;
	sy_buf buf = SY_BUF_INIT;
	sy_wire_status st = SY_WIRE_INVALID;
	sy_json_doc *doc = sy_json_parse(s, len, &err);
	if (doc == NULL) {
		if (err.code == SY_ERR_NOMEM)
			st = SY_WIRE_NOMEM;
		else
			*why = "json does not hold exactly one JSON value";
		goto fail;
	}
	if (!sy_jcs_write(&buf, sy_json_doc_root(doc), &err)) {
		if (err.code == SY_ERR_NOMEM)
			st = SY_WIRE_NOMEM;
		else
			*why = "json holds a number beyond double range";
		goto fail;
	}
	if (buf.len != len || memcmp(buf.data, s, len) != 0) {
		*why = "json is not in canonical (JCS) form";
		goto fail;
	}
	st = SY_WIRE_OK;
fail:
	sy_buf_free(&buf);
	sy_json_doc_free(doc);
	return st;
}

static bool float64_canonical(const sy_json *v, const char **why)
{
	double d = v->u.number.value;
	if (!isfinite(d)) {
		*why = "float64 must be finite";
		return false;
	}
	char jcs[SY_JCS_NUMBER_MAX];
	size_t n = sy_jcs_format_number(jcs, d);
	if (v->u.number.text == NULL || v->u.number.text_len != n ||
	    memcmp(jcs, v->u.number.text, n) != 0) {
		*why = "float64 is not in canonical (JCS) number form";
		return false;
	}
	return true;
}

static const char *must_be_string(sy_type t)
{
	static const char *const msgs[SY_TYPE__COUNT] = {
	        [SY_TYPE_TEXT] = "text must be a JSON string",
	        [SY_TYPE_INT64] = "int64 must be a JSON string",
	        [SY_TYPE_NUMERIC] = "numeric must be a JSON string",
	        [SY_TYPE_TIMESTAMP] = "timestamp must be a JSON string",
	        [SY_TYPE_DATE] = "date must be a JSON string",
	        [SY_TYPE_UUID] = "uuid must be a JSON string",
	        [SY_TYPE_BYTES] = "bytes must be a JSON string",
	        [SY_TYPE_JSON] = "json must be a JSON string",
	};
	return msgs[t];
}

static sy_wire_status check(sy_type t, const sy_json *v, const char **why)
{
	if ((unsigned)t >= SY_TYPE__COUNT) {
		*why = "unknown type";
		return SY_WIRE_INVALID;
	}
	if (v == NULL) {
		*why = "value is missing";
		return SY_WIRE_INVALID;
	}
	if (v->type == SY_JSON_NULL) {
		*why = "null is not allowed";
		return SY_WIRE_INVALID;
	}
	switch (t) {
	case SY_TYPE_BOOL:
		if (v->type != SY_JSON_TRUE && v->type != SY_JSON_FALSE) {
			*why = "bool must be true or false";
			return SY_WIRE_INVALID;
		}
		return SY_WIRE_OK;
	case SY_TYPE_INT32: {
		int32_t n;
		if (v->type != SY_JSON_NUMBER || !v->u.number.is_integer) {
			*why = "int32 must be a JSON integer literal";
			return SY_WIRE_INVALID;
		}
		return int32_literal(v->u.number.text, v->u.number.text_len, why, &n)
		               ? SY_WIRE_OK
		               : SY_WIRE_INVALID;
	}
	case SY_TYPE_FLOAT64:
		if (v->type != SY_JSON_NUMBER) {
			*why = "float64 must be a JSON number";
			return SY_WIRE_INVALID;
		}
		return float64_canonical(v, why) ? SY_WIRE_OK : SY_WIRE_INVALID;
	default: break;
	}
	if (v->type != SY_JSON_STRING) {
		*why = must_be_string(t);
		return SY_WIRE_INVALID;
	}
	const char *s = v->u.string.data;
	size_t len = v->u.string.len;
	switch (t) {
	case SY_TYPE_TEXT:
		if (memchr(s, '\0', len) != NULL) {
			*why = "text must not contain U+0000";
			return SY_WIRE_INVALID;
		}
		return SY_WIRE_OK;
	case SY_TYPE_INT64: return int64_string(s, len, why) ? SY_WIRE_OK : SY_WIRE_INVALID;
	case SY_TYPE_NUMERIC: return numeric_string(s, len, why) ? SY_WIRE_OK : SY_WIRE_INVALID;
	case SY_TYPE_TIMESTAMP:
		if (!sy_server_time_valid(s, len)) {
			*why = "timestamp is not a valid YYYY-MM-DDTHH:MM:SS.ffffffZ";
			return SY_WIRE_INVALID;
		}
		return SY_WIRE_OK;
	case SY_TYPE_DATE:
		if (!sy_date_valid(s, len)) {
			*why = "date is not a valid YYYY-MM-DD";
			return SY_WIRE_INVALID;
		}
		return SY_WIRE_OK;
	case SY_TYPE_UUID:
		if (!sy_uuid_text_valid(s, len)) {
			*why = "uuid is not a lowercase canonical UUID";
			return SY_WIRE_INVALID;
		}
		return SY_WIRE_OK;
	case SY_TYPE_BYTES:
		if (!base64_canonical(s, len)) {
			*why = "bytes is not canonical padded base64";
			return SY_WIRE_INVALID;
		}
		return SY_WIRE_OK;
	case SY_TYPE_JSON: return json_canonical(s, len, why);
	default: *why = "unknown type"; return SY_WIRE_INVALID;
	}
}

sy_wire_status sy_wire_check(sy_type t, const sy_json *v, const char **why, sy_error *err)
{
	const char *reason = NULL;
	sy_wire_status st = check(t, v, &reason);
	if (st == SY_WIRE_NOMEM) {
		reason = "out of memory";
		sy_error_set(err, SY_ERR_NOMEM, "%s", reason);
	} else if (st == SY_WIRE_INVALID) {
		sy_error_set(err, SY_ERR_INVALID_REQUEST, "%s", reason);
	}
	if (why != NULL)
		*why = st == SY_WIRE_OK ? NULL : reason;
	return st;
}

bool sy_wire_valid(sy_type t, const sy_json *v, const char **why)
{
	return sy_wire_check(t, v, why, NULL) == SY_WIRE_OK;
}

/* Appends the bytes that the canonical base64 s[0..len) encodes, as hex. */
static bool base64_to_hex(sy_buf *out, const char *s, size_t len)
{
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < len && s[i] != '='; i++) {
		acc = (acc << 6) | (uint32_t)b64_value(s[i]);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			unsigned char byte = (unsigned char)((acc >> bits) & 0xff);
			char pair[2];
			sy_hex_encode(pair, &byte, 1);
			if (!sy_buf_append(out, pair, 2))
				return false;
		}
	}
	return true;
}

bool sy_wire_to_pg_text(sy_type t, const sy_json *v, sy_buf *out)
{
	/* A json value's content is checked by its type and NUL-freedom only:
	 * re-running the JCS comparison is the validator's job, not this one's. */
	if (t == SY_TYPE_JSON) {
		if (v == NULL || v->type != SY_JSON_STRING ||
		    memchr(v->u.string.data, '\0', v->u.string.len) != NULL)
			return false;
	} else {
		const char *why;
		if (check(t, v, &why) != SY_WIRE_OK)
			return false;
	}
	size_t mark = out->len;
	bool ok;
	switch (t) {
	case SY_TYPE_INT32: ok = sy_buf_append(out, v->u.number.text, v->u.number.text_len); break;
	case SY_TYPE_FLOAT64: ok = sy_jcs_write_number(out, v->u.number.value); break;
	case SY_TYPE_BOOL: ok = sy_buf_puts(out, v->type == SY_JSON_TRUE ? "true" : "false"); break;
	case SY_TYPE_BYTES:
		ok = sy_buf_puts(out, "\\x") &&
		     base64_to_hex(out, v->u.string.data, v->u.string.len);
		break;
	default: ok = sy_buf_append(out, v->u.string.data, v->u.string.len); break;
	}
	if (!ok) {
		out->failed = true;
		if (out->data != NULL && mark <= out->len) {
			out->len = mark;
			out->data[mark] = '\0';
		}
	}
	return ok;
}

/* Strict UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF. */
static bool utf8_valid(const unsigned char *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		unsigned c = s[i];
		size_t n;
		uint32_t cp, min;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			n = 1, cp = c & 0x1f, min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2, cp = c & 0x0f, min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3, cp = c & 0x07, min = 0x10000;
		} else {
			return false;
		}
		if (len - i - 1 < n)
			return false;
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

/* The RFC 8259 number grammar; PostgreSQL's finite float8 output always fits it. */
static bool json_number_syntax(const char *s, size_t len)
{
	size_t i = 0;
	if (i < len && s[i] == '-')
		i++;
	if (i < len && s[i] == '0')
		i++;
	else if (i < len && s[i] >= '1' && s[i] <= '9')
		while (i < len && is_digit(s[i]))
			i++;
	else
		return false;
	if (i < len && s[i] == '.') {
		size_t start = ++i;
		while (i < len && is_digit(s[i]))
			i++;
		if (i == start)
			return false;
	}
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		size_t start = i;
		while (i < len && is_digit(s[i]))
			i++;
		if (i == start)
			return false;
	}
	return i == len;
}

static sy_wire_status decode_float8(sy_json_doc *doc, const char *s, size_t len, sy_json **out)
{
	char tmp[64];
	if (len >= sizeof tmp || !json_number_syntax(s, len))
		return SY_WIRE_INVALID; /* NaN, Infinity, -Infinity */
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	double d = strtod(tmp, NULL);
	if (!isfinite(d))
		return SY_WIRE_INVALID;
	if (d == 0)
		d = 0; /* -0 has no wire form of its own: JCS writes 0 */
	*out = sy_json_new_double(doc, d);
	return *out != NULL ? SY_WIRE_OK : SY_WIRE_NOMEM;
}

static sy_wire_status decode_int4(sy_json_doc *doc, const char *s, size_t len, sy_json **out)
{
	const char *why;
	int32_t n;
	if (!int32_literal(s, len, &why, &n))
		return SY_WIRE_INVALID;
	*out = sy_json_new_int(doc, n);
	return *out != NULL ? SY_WIRE_OK : SY_WIRE_NOMEM;
}

/* numeric_out gives the column's scale ("1.500", "0.00"): trailing zeros go. */
static sy_wire_status decode_numeric(sy_json_doc *doc, const char *s, size_t len, sy_json **out)
{
	const char *dot = memchr(s, '.', len);
	if (dot != NULL) {
		while (len > 0 && s[len - 1] == '0')
			len--;
		if (len > 0 && s + len - 1 == dot)
			len--;
	}
	if (len == 2 && s[0] == '-' && s[1] == '0')
		s++, len--;
	const char *why;
	if (!numeric_string(s, len, &why))
		return SY_WIRE_INVALID; /* NaN, Infinity, -Infinity */
	*out = sy_json_new_string(doc, s, len);
	return *out != NULL ? SY_WIRE_OK : SY_WIRE_NOMEM;
}

/*
 * "YYYY-MM-DD HH:MM:SS[.f{1,6}][+-HH[:MM[:SS]]]": ISO DateStyle output. Other
 * years (five digits, " BC") and "infinity" have no wire form.
 */
static sy_wire_status decode_timestamptz(sy_json_doc *doc, const char *s, size_t len, sy_json **out)
{
	char iso[SY_SERVER_TIME_LEN + 1] = "0000-00-00T00:00:00.000000Z";
	if (len < 19 || s[10] != ' ')
		return SY_WIRE_INVALID;
	memcpy(iso, s, 10);
	memcpy(iso + 11, s + 11, 8);
	size_t i = 19;
	if (i < len && s[i] == '.') {
		size_t start = ++i;
		while (i < len && is_digit(s[i]) && i - start < 6)
			iso[20 + (i - start)] = s[i], i++;
		if (i == start || (i < len && is_digit(s[i])))
			return SY_WIRE_INVALID;
	}
	int64_t usec;
	if (!sy_server_time_parse(iso, SY_SERVER_TIME_LEN, &usec))
		return SY_WIRE_INVALID;
	if (i < len) {
		if (s[i] != '+' && s[i] != '-')
			return SY_WIRE_INVALID;
		int64_t sign = s[i] == '-' ? -1 : 1, offset = 0;
		i++;
		/* +HH, +HH:MM or +HH:MM:SS */
		for (int64_t unit = 3600; unit >= 1; unit /= 60) {
			if (unit != 3600 && (i == len || s[i++] != ':'))
				break;
			if (len - i < 2 || !is_digit(s[i]) || !is_digit(s[i + 1]))
				return SY_WIRE_INVALID;
			int64_t n = (s[i] - '0') * 10 + (s[i + 1] - '0');
			if (n > 59)
				return SY_WIRE_INVALID;
			offset += n * unit;
			i += 2;
		}
		if (i != len)
			return SY_WIRE_INVALID;
		/* The text is local time at that offset: UTC = local - offset. */
		usec -= sign * offset * 1000000;
		if (usec < SY_SERVER_TIME_MIN_USEC || usec > SY_SERVER_TIME_MAX_USEC)
			return SY_WIRE_INVALID;
	}
	sy_server_time_format(usec, iso);
	*out = sy_json_new_string(doc, iso, SY_SERVER_TIME_LEN);
	return *out != NULL ? SY_WIRE_OK : SY_WIRE_NOMEM;
}

static sy_wire_status decode_bytea(sy_json_doc *doc, const char *s, size_t len, sy_json **out)
{
	if (len < 2 || s[0] != '\\' || s[1] != 'x' || len % 2 != 0)
		return SY_WIRE_INVALID;
	sy_buf buf = SY_BUF_INIT;
	sy_wire_status st = SY_WIRE_NOMEM;
	size_t nbytes = (len - 2) / 2;
	if (!sy_buf_reserve(&buf, (nbytes + 2) / 3 * 4))
		goto fail;
	uint32_t acc = 0;
	size_t k = 0;
	for (size_t i = 2; i < len; i += 2, k++) {
		int hi = sy_hex_digit(s[i]), lo = sy_hex_digit(s[i + 1]);
		if (hi < 0 || lo < 0) {
			st = SY_WIRE_INVALID;
			goto fail;
		}
		acc = (acc << 8) | (uint32_t)(hi << 4 | lo);
		if (k % 3 == 2) {
			char quad[4] = {b64_alphabet[acc >> 18 & 63], b64_alphabet[acc >> 12 & 63],
			                b64_alphabet[acc >> 6 & 63], b64_alphabet[acc & 63]};
			sy_buf_append(&buf, quad, 4);
			acc = 0;
		}
	}
	if (k % 3 == 1) {
		char quad[4] = {b64_alphabet[acc >> 2 & 63], b64_alphabet[(acc & 3) << 4], '=',
		                '='};
		sy_buf_append(&buf, quad, 4);
	} else if (k % 3 == 2) {
		char quad[4] = {b64_alphabet[acc >> 10 & 63], b64_alphabet[acc >> 4 & 63],
		                b64_alphabet[(acc & 15) << 2], '='};
		sy_buf_append(&buf, quad, 4);
	}
	if (buf.failed)
		goto fail;
	*out = sy_json_new_string(doc, buf.len > 0 ? buf.data : "", buf.len);
	st = *out != NULL ? SY_WIRE_OK : SY_WIRE_NOMEM;
fail:
	sy_buf_free(&buf);
	return st;
}

static sy_wire_status decode_jsonb(sy_json_doc *doc, const char *s, size_t len, sy_json **out)
{
	sy_error err;
	sy_buf buf = SY_BUF_INIT;
	sy_wire_status st = SY_WIRE_INVALID;
	sy_json_doc *parsed = sy_json_parse(s, len, &err);
	if (parsed == NULL) {
		if (err.code == SY_ERR_NOMEM)
			st = SY_WIRE_NOMEM;
		goto fail;
	}
	if (!sy_jcs_write(&buf, sy_json_doc_root(parsed), &err)) {
		if (err.code == SY_ERR_NOMEM)
			st = SY_WIRE_NOMEM;
		goto fail;
	}
	*out = sy_json_new_string(doc, buf.data, buf.len);
	st = *out != NULL ? SY_WIRE_OK : SY_WIRE_NOMEM;
fail:
	sy_buf_free(&buf);
	sy_json_doc_free(parsed);
	return st;
}

/* Decodes into a string node after checking s with valid(). */
static sy_wire_status decode_as_string(sy_json_doc *doc, const char *s, size_t len, bool valid,
                                       sy_json **out)
{
	if (!valid)
		return SY_WIRE_INVALID;
	*out = sy_json_new_string(doc, s, len);
	return *out != NULL ? SY_WIRE_OK : SY_WIRE_NOMEM;
}

sy_wire_status sy_wire_decode_pg_text(sy_json_doc *doc, sy_type t, const char *pgtext, size_t len,
                                      sy_json **out)
{
	const char *why;
	*out = NULL;
	if (doc == NULL || (pgtext == NULL && len > 0))
		return SY_WIRE_INVALID;
	if (pgtext == NULL)
		pgtext = "";
	switch (t) {
	case SY_TYPE_TEXT:
		return decode_as_string(doc, pgtext, len,
		                        utf8_valid((const unsigned char *)pgtext, len) &&
		                                memchr(pgtext, '\0', len) == NULL,
		                        out);
	case SY_TYPE_INT32: return decode_int4(doc, pgtext, len, out);
	case SY_TYPE_INT64:
		return decode_as_string(doc, pgtext, len, int64_string(pgtext, len, &why), out);
	case SY_TYPE_FLOAT64: return decode_float8(doc, pgtext, len, out);
	case SY_TYPE_NUMERIC: return decode_numeric(doc, pgtext, len, out);
	case SY_TYPE_BOOL:
		if (len != 1 || (pgtext[0] != 't' && pgtext[0] != 'f'))
			return SY_WIRE_INVALID;
		*out = sy_json_new_bool(doc, pgtext[0] == 't');
		return *out != NULL ? SY_WIRE_OK : SY_WIRE_NOMEM;
	case SY_TYPE_TIMESTAMP: return decode_timestamptz(doc, pgtext, len, out);
	case SY_TYPE_DATE:
		return decode_as_string(doc, pgtext, len, sy_date_valid(pgtext, len), out);
	case SY_TYPE_UUID: {
		char lower[SY_UUID_LEN];
		if (len != SY_UUID_LEN)
			return SY_WIRE_INVALID;
		for (size_t i = 0; i < len; i++)
			lower[i] = pgtext[i] >= 'A' && pgtext[i] <= 'F' ? (char)(pgtext[i] + 32)
			                                                : pgtext[i];
		return decode_as_string(doc, lower, len, sy_uuid_text_valid(lower, len), out);
	}
	case SY_TYPE_BYTES: return decode_bytea(doc, pgtext, len, out);
	case SY_TYPE_JSON: return decode_jsonb(doc, pgtext, len, out);
	default: return SY_WIRE_INVALID;
	}
}

sy_json *sy_wire_from_pg_text(sy_json_doc *doc, sy_type t, const char *pgtext, size_t len)
{
	sy_json *v;
	return sy_wire_decode_pg_text(doc, t, pgtext, len, &v) == SY_WIRE_OK ? v : NULL;
}
