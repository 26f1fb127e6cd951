/* SPDX-License-Identifier: BSD-2-Clause */
/* Portable types (PROTOCOL.md §3): canonical wire values and the PostgreSQL text forms. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/jcs.h"
#include "synchro/json.h"
#include "synchro/types.h"
#include "testutil.h"

static sy_json_doc *parse_n(const char *text, size_t len)
{
	sy_error err;
	sy_json_doc *doc = sy_json_parse(text, len, &err);
	if (doc == NULL)
		fprintf(stderr, "\n  cannot parse %.*s: %s\n", (int)len, text, err.message);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	return doc;
}

static sy_json_doc *parse(const char *text)
{
	return parse_n(text, strlen(text));
}

/* JCS text of v, in a static buffer (the tests' values are short). */
static const char *jcs(const sy_json *v)
{
	static char out[512];
	sy_buf b = SY_BUF_INIT;
	sy_error err;
	out[0] = '\0';
	if (v != NULL && sy_jcs_write(&b, v, &err) && b.len < sizeof out)
		memcpy(out, b.data, b.len + 1);
	else
		strcpy(out, "<none>");
	sy_buf_free(&b);
	return out;
}

static void test_names(void)
{
	static const char *const names[SY_TYPE__COUNT] = {
	        "text",      "int32", "int64", "float64", "numeric", "bool",
	        "timestamp", "date",  "uuid",  "bytes",   "json",
	};
	for (unsigned i = 0; i < SY_TYPE__COUNT; i++) {
		CU_ASSERT_STRING_EQUAL(sy_type_name((sy_type)i), names[i]);
		sy_type t = SY_TYPE__COUNT;
		CU_ASSERT_TRUE(sy_type_from_name(names[i], &t));
		CU_ASSERT_EQUAL(t, (sy_type)i);
	}
	CU_ASSERT_PTR_NULL(sy_type_name(SY_TYPE__COUNT));
	CU_ASSERT_PTR_NULL(sy_type_name((sy_type)-1));
	static const char *const unknown[] = {"",      "Text",    "integer",     "int",
	                                      "float", "boolean", "timestamptz", "jsonb",
	                                      "bytea", "text "};
	for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
		CU_ASSERT_FALSE(sy_type_from_name(unknown[i], NULL));
	CU_ASSERT_FALSE(sy_type_from_name(NULL, NULL));
}

typedef struct {
	sy_type type;
	const char *json; /* the wire value as JSON text */
	bool ok;
	const char *why; /* expected reason when !ok; NULL: not checked */
} wire_case;

#define NC "float64 is not in canonical (JCS) number form"

static const wire_case wire_cases[] = {
        {SY_TYPE_TEXT, "\"\"", true, NULL},
        {SY_TYPE_TEXT, "\"hello\"", true, NULL},
        {SY_TYPE_TEXT, "\"caf\xc3\xa9 \\u00e9 \\ud83d\\ude00\"", true, NULL},
        {SY_TYPE_TEXT, "\"a\\u0000b\"", false, "text must not contain U+0000"},
        {SY_TYPE_TEXT, "\"\\u0000\"", false, "text must not contain U+0000"},
        {SY_TYPE_TEXT, "1", false, "text must be a JSON string"},
        {SY_TYPE_TEXT, "[\"a\"]", false, "text must be a JSON string"},

        {SY_TYPE_INT32, "0", true, NULL},
        {SY_TYPE_INT32, "1", true, NULL},
        {SY_TYPE_INT32, "-1", true, NULL},
        {SY_TYPE_INT32, "2147483647", true, NULL},
        {SY_TYPE_INT32, "-2147483648", true, NULL},
        {SY_TYPE_INT32, "2147483648", false, "int32 out of range"},
        {SY_TYPE_INT32, "-2147483649", false, "int32 out of range"},
        {SY_TYPE_INT32, "99999999999999999999", false, "int32 out of range"},
        {SY_TYPE_INT32, "-0", false, "int32 must not be -0"},
        {SY_TYPE_INT32, "1.0", false, "int32 must be a JSON integer literal"},
        {SY_TYPE_INT32, "1e2", false, "int32 must be a JSON integer literal"},
        {SY_TYPE_INT32, "0.5", false, "int32 must be a JSON integer literal"},
        {SY_TYPE_INT32, "\"1\"", false, "int32 must be a JSON integer literal"},
        {SY_TYPE_INT32, "true", false, NULL},

        {SY_TYPE_INT64, "\"0\"", true, NULL},
        {SY_TYPE_INT64, "\"-1\"", true, NULL},
        {SY_TYPE_INT64, "\"9223372036854775807\"", true, NULL},
        {SY_TYPE_INT64, "\"-9223372036854775808\"", true, NULL},
        {SY_TYPE_INT64, "\"9223372036854775808\"", false, "int64 out of range"},
        {SY_TYPE_INT64, "\"-9223372036854775809\"", false, "int64 out of range"},
        {SY_TYPE_INT64, "\"10000000000000000000\"", false, "int64 out of range"},
        {SY_TYPE_INT64, "\"18446744073709551616\"", false, "int64 out of range"},
        {SY_TYPE_INT64, "\"-0\"", false, "int64 must not be -0"},
        {SY_TYPE_INT64, "\"01\"", false, "int64 is not a canonical integer string"},
        {SY_TYPE_INT64, "\"00\"", false, "int64 is not a canonical integer string"},
        {SY_TYPE_INT64, "\"-01\"", false, "int64 is not a canonical integer string"},
        {SY_TYPE_INT64, "\"+1\"", false, "int64 is not a canonical integer string"},
        {SY_TYPE_INT64, "\"1 \"", false, "int64 is not a canonical integer string"},
        {SY_TYPE_INT64, "\"1.0\"", false, "int64 is not a canonical integer string"},
        {SY_TYPE_INT64, "\"1e3\"", false, "int64 is not a canonical integer string"},
        {SY_TYPE_INT64, "\"-\"", false, "int64 is not a canonical integer string"},
        {SY_TYPE_INT64, "\"\"", false, "int64 is not a canonical integer string"},
        {SY_TYPE_INT64, "\"1\\u0000\"", false, "int64 is not a canonical integer string"},
        {SY_TYPE_INT64, "1", false, "int64 must be a JSON string"},

        {SY_TYPE_FLOAT64, "0", true, NULL},
        {SY_TYPE_FLOAT64, "1.5", true, NULL},
        {SY_TYPE_FLOAT64, "-1.5", true, NULL},
        {SY_TYPE_FLOAT64, "3", true, NULL},
        {SY_TYPE_FLOAT64, "100", true, NULL},
        {SY_TYPE_FLOAT64, "0.1", true, NULL},
        {SY_TYPE_FLOAT64, "0.000001", true, NULL},
        {SY_TYPE_FLOAT64, "1e-7", true, NULL},
        {SY_TYPE_FLOAT64, "1e+21", true, NULL},
        {SY_TYPE_FLOAT64, "123456789012345680000", true, NULL},
        {SY_TYPE_FLOAT64, "5e-324", true, NULL},
        {SY_TYPE_FLOAT64, "1.7976931348623157e+308", true, NULL},
        {SY_TYPE_FLOAT64, "9007199254740992", true, NULL},
        {SY_TYPE_FLOAT64, "1.50", false, NC},
        {SY_TYPE_FLOAT64, "3.0", false, NC},
        {SY_TYPE_FLOAT64, "1e21", false, NC},
        {SY_TYPE_FLOAT64, "1E+21", false, NC},
        {SY_TYPE_FLOAT64, "1e2", false, NC},
        {SY_TYPE_FLOAT64, "1e-6", false, NC},
        {SY_TYPE_FLOAT64, "1E-7", false, NC},
        {SY_TYPE_FLOAT64, "0.10", false, NC},
        {SY_TYPE_FLOAT64, "-0", false, NC},
        {SY_TYPE_FLOAT64, "-0.0", false, NC},
        {SY_TYPE_FLOAT64, "0.0", false, NC},
        {SY_TYPE_FLOAT64, "1e-400", false, NC},
        {SY_TYPE_FLOAT64, "9007199254740993", false, NC},
        {SY_TYPE_FLOAT64, "0.30000000000000001", false, NC},
        {SY_TYPE_FLOAT64, "1e400", false, "float64 must be finite"},
        {SY_TYPE_FLOAT64, "-1e400", false, "float64 must be finite"},
        {SY_TYPE_FLOAT64, "\"1.5\"", false, "float64 must be a JSON number"},

        {SY_TYPE_NUMERIC, "\"0\"", true, NULL},
        {SY_TYPE_NUMERIC, "\"1\"", true, NULL},
        {SY_TYPE_NUMERIC, "\"-1\"", true, NULL},
        {SY_TYPE_NUMERIC, "\"1.5\"", true, NULL},
        {SY_TYPE_NUMERIC, "\"-0.5\"", true, NULL},
        {SY_TYPE_NUMERIC, "\"0.05\"", true, NULL},
        {SY_TYPE_NUMERIC, "\"123.456\"", true, NULL},
        {SY_TYPE_NUMERIC, "\"100\"", true, NULL},
        {SY_TYPE_NUMERIC, "\"99999999999999999999999999999999.00000000000000000001\"", true, NULL},
        {SY_TYPE_NUMERIC, "\"1.50\"", false, "numeric is not a canonical decimal string"},
        {SY_TYPE_NUMERIC, "\"1.0\"", false, "numeric is not a canonical decimal string"},
        {SY_TYPE_NUMERIC, "\"0.0\"", false, "numeric is not a canonical decimal string"},
        {SY_TYPE_NUMERIC, "\"-0.0\"", false, "numeric is not a canonical decimal string"},
        {SY_TYPE_NUMERIC, "\"01\"", false, "numeric is not a canonical decimal string"},
        {SY_TYPE_NUMERIC, "\"00.5\"", false, "numeric is not a canonical decimal string"},
        {SY_TYPE_NUMERIC, "\"1.\"", false, "numeric is not a canonical decimal string"},
        {SY_TYPE_NUMERIC, "\".5\"", false, "numeric is not a canonical decimal string"},
        {SY_TYPE_NUMERIC, "\"-.5\"", false, "numeric is not a canonical decimal string"},
        {SY_TYPE_NUMERIC, "\"+1\"", false, "numeric is not a canonical decimal string"},
        {SY_TYPE_NUMERIC, "\"1e5\"", false, "numeric is not a canonical decimal string"},
        {SY_TYPE_NUMERIC, "\"1.5.5\"", false, "numeric is not a canonical decimal string"},
        {SY_TYPE_NUMERIC, "\"1,5\"", false, "numeric is not a canonical decimal string"},
        {SY_TYPE_NUMERIC, "\" 1\"", false, "numeric is not a canonical decimal string"},
        {SY_TYPE_NUMERIC, "\"-\"", false, "numeric is not a canonical decimal string"},
        {SY_TYPE_NUMERIC, "\"\"", false, "numeric is not a canonical decimal string"},
        {SY_TYPE_NUMERIC, "\"NaN\"", false, "numeric is not a canonical decimal string"},
        {SY_TYPE_NUMERIC, "\"Infinity\"", false, "numeric is not a canonical decimal string"},
        {SY_TYPE_NUMERIC, "\"-0\"", false, "numeric must not be -0"},
        {SY_TYPE_NUMERIC, "1.5", false, "numeric must be a JSON string"},

        {SY_TYPE_BOOL, "true", true, NULL},
        {SY_TYPE_BOOL, "false", true, NULL},
        {SY_TYPE_BOOL, "\"true\"", false, "bool must be true or false"},
        {SY_TYPE_BOOL, "1", false, "bool must be true or false"},
        {SY_TYPE_BOOL, "0", false, "bool must be true or false"},

        {SY_TYPE_TIMESTAMP, "\"2026-01-02T03:04:05.123000Z\"", true, NULL},
        {SY_TYPE_TIMESTAMP, "\"0001-01-01T00:00:00.000000Z\"", true, NULL},
        {SY_TYPE_TIMESTAMP, "\"9999-12-31T23:59:59.999999Z\"", true, NULL},
        {SY_TYPE_TIMESTAMP, "\"2000-02-29T00:00:00.000000Z\"", true, NULL},
        {SY_TYPE_TIMESTAMP, "\"1900-02-29T00:00:00.000000Z\"", false,
         "timestamp is not a valid YYYY-MM-DDTHH:MM:SS.ffffffZ"},
        {SY_TYPE_TIMESTAMP, "\"2026-01-02T03:04:05Z\"", false, NULL},
        {SY_TYPE_TIMESTAMP, "\"2026-01-02T03:04:05.123Z\"", false, NULL},
        {SY_TYPE_TIMESTAMP, "\"2026-01-02T03:04:05.123000000Z\"", false, NULL},
        {SY_TYPE_TIMESTAMP, "\"2026-01-02T03:04:05.123000+00:00\"", false, NULL},
        {SY_TYPE_TIMESTAMP, "\"2026-01-02 03:04:05.123000Z\"", false, NULL},
        {SY_TYPE_TIMESTAMP, "\"2026-01-02T03:04:05.123000z\"", false, NULL},
        {SY_TYPE_TIMESTAMP, "\"2026-01-02T23:59:60.000000Z\"", false, NULL},
        {SY_TYPE_TIMESTAMP, "1767323045", false, "timestamp must be a JSON string"},

        {SY_TYPE_DATE, "\"2026-01-02\"", true, NULL},
        {SY_TYPE_DATE, "\"2024-02-29\"", true, NULL},
        {SY_TYPE_DATE, "\"2000-02-29\"", true, NULL},
        {SY_TYPE_DATE, "\"1900-02-29\"", false, "date is not a valid YYYY-MM-DD"},
        {SY_TYPE_DATE, "\"0000-01-01\"", false, "date is not a valid YYYY-MM-DD"},
        {SY_TYPE_DATE, "\"2026-01-02T00:00:00.000000Z\"", false, "date is not a valid YYYY-MM-DD"},
        {SY_TYPE_DATE, "\"2026-1-2\"", false, "date is not a valid YYYY-MM-DD"},
        {SY_TYPE_DATE, "20260102", false, "date must be a JSON string"},

        {SY_TYPE_UUID, "\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\"", true, NULL},
        {SY_TYPE_UUID, "\"00000000-0000-0000-0000-000000000000\"", true, NULL},
        {SY_TYPE_UUID, "\"A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11\"", false,
         "uuid is not a lowercase canonical UUID"},
        {SY_TYPE_UUID, "\"{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}\"", false, NULL},
        {SY_TYPE_UUID, "\"a0eebc999c0b4ef8bb6d6bb9bd380a11\"", false, NULL},
        {SY_TYPE_UUID, "\"\"", false, NULL},

        {SY_TYPE_BYTES, "\"\"", true, NULL},
        {SY_TYPE_BYTES, "\"QQ==\"", true, NULL},
        {SY_TYPE_BYTES, "\"QUI=\"", true, NULL},
        {SY_TYPE_BYTES, "\"QUJD\"", true, NULL},
        {SY_TYPE_BYTES, "\"AAAA\"", true, NULL},
        {SY_TYPE_BYTES, "\"////\"", true, NULL},
        {SY_TYPE_BYTES, "\"+/+/\"", true, NULL},
        {SY_TYPE_BYTES, "\"Cgs=\"", true, NULL},
        {SY_TYPE_BYTES, "\"QUJDREVG\"", true, NULL},
        {SY_TYPE_BYTES, "\"QR==\"", false, "bytes is not canonical padded base64"},
        {SY_TYPE_BYTES, "\"QUJ=\"", false, "bytes is not canonical padded base64"},
        {SY_TYPE_BYTES, "\"QQ\"", false, "bytes is not canonical padded base64"},
        {SY_TYPE_BYTES, "\"QUI\"", false, "bytes is not canonical padded base64"},
        {SY_TYPE_BYTES, "\"Q===\"", false, "bytes is not canonical padded base64"},
        {SY_TYPE_BYTES, "\"====\"", false, "bytes is not canonical padded base64"},
        {SY_TYPE_BYTES, "\"QQ=A\"", false, "bytes is not canonical padded base64"},
        {SY_TYPE_BYTES, "\"QQ==QQ==\"", false, "bytes is not canonical padded base64"},
        {SY_TYPE_BYTES, "\"-_==\"", false, "bytes is not canonical padded base64"},
        {SY_TYPE_BYTES, "\"QUJD\\n\"", false, "bytes is not canonical padded base64"},
        {SY_TYPE_BYTES, "\"QU JD\"", false, "bytes is not canonical padded base64"},
        {SY_TYPE_BYTES, "\"=\"", false, "bytes is not canonical padded base64"},

        {SY_TYPE_JSON, "\"{\\\"a\\\":2,\\\"b\\\":1}\"", true, NULL},
        {SY_TYPE_JSON, "\"{\\\"b\\\":1,\\\"a\\\":2}\"", false,
         "json is not in canonical (JCS) form"},
        {SY_TYPE_JSON, "\"[1,2]\"", true, NULL},
        {SY_TYPE_JSON, "\"[1, 2]\"", false, "json is not in canonical (JCS) form"},
        {SY_TYPE_JSON, "\"1\"", true, NULL},
        {SY_TYPE_JSON, "\"1.0\"", false, "json is not in canonical (JCS) form"},
        {SY_TYPE_JSON, "\" 1\"", false, "json is not in canonical (JCS) form"},
        {SY_TYPE_JSON, "\"1\\n\"", false, "json is not in canonical (JCS) form"},
        {SY_TYPE_JSON, "\"null\"", true, NULL},
        {SY_TYPE_JSON, "\"true\"", true, NULL},
        {SY_TYPE_JSON, "\"\\\"x\\\"\"", true, NULL},
        {SY_TYPE_JSON, "\"\\\"\xc3\xa9\\\"\"", true, NULL},
        {SY_TYPE_JSON, "\"\\\"\\\\u00e9\\\"\"", false, "json is not in canonical (JCS) form"},
        {SY_TYPE_JSON, "\"{}\"", true, NULL},
        {SY_TYPE_JSON, "\"{\\\"a\\\":{\\\"c\\\":[],\\\"b\\\":null}}\"", false,
         "json is not in canonical (JCS) form"},
        {SY_TYPE_JSON, "\"{\\\"a\\\":{\\\"b\\\":null,\\\"c\\\":[]}}\"", true, NULL},
        {SY_TYPE_JSON, "\"\"", false, "json does not hold exactly one JSON value"},
        {SY_TYPE_JSON, "\"1 2\"", false, "json does not hold exactly one JSON value"},
        {SY_TYPE_JSON, "\"{\\\"a\\\":1,\\\"a\\\":1}\"", false,
         "json does not hold exactly one JSON value"},
        {SY_TYPE_JSON, "\"nul\"", false, "json does not hold exactly one JSON value"},
        {SY_TYPE_JSON, "\"1e400\"", false, "json holds a number beyond double range"},
        {SY_TYPE_JSON, "{\"a\":1}", false, "json must be a JSON string"},
};

static void test_wire_table(void)
{
	for (size_t i = 0; i < sizeof wire_cases / sizeof wire_cases[0]; i++) {
		const wire_case *c = &wire_cases[i];
		sy_json_doc *doc = parse(c->json);
		const char *why = "unset";
		sy_error err;
		sy_error_clear(&err);
		sy_wire_status st = sy_wire_check(c->type, sy_json_doc_root(doc), &why, &err);
		bool ok = st == SY_WIRE_OK;
		if (ok != c->ok || (!ok && c->why != NULL && strcmp(why, c->why) != 0))
			fprintf(stderr, "\n  %s %s: got %s (%s)\n", sy_type_name(c->type), c->json,
			        ok ? "valid" : "invalid", ok ? "" : why);
		CU_ASSERT_EQUAL(ok, c->ok);
		CU_ASSERT_EQUAL(sy_wire_valid(c->type, sy_json_doc_root(doc), NULL), c->ok);
		if (ok) {
			CU_ASSERT_PTR_NULL(why);
			CU_ASSERT_EQUAL(err.code, SY_ERR_NONE);
		} else {
			CU_ASSERT_EQUAL(st, SY_WIRE_INVALID);
			CU_ASSERT_PTR_NOT_NULL_FATAL(why);
			CU_ASSERT_EQUAL(err.code, SY_ERR_INVALID_REQUEST);
			CU_ASSERT_STRING_EQUAL(err.message, why);
			if (c->why != NULL)
				CU_ASSERT_STRING_EQUAL(why, c->why);
		}
		sy_json_doc_free(doc);
	}
}

/* null and a missing value are never values; every type says so the same way. */
static void test_null(void)
{
	sy_json_doc *doc = parse("null");
	for (unsigned t = 0; t < SY_TYPE__COUNT; t++) {
		const char *why = NULL;
		CU_ASSERT_FALSE(sy_wire_valid((sy_type)t, sy_json_doc_root(doc), &why));
		CU_ASSERT_STRING_EQUAL(why, "null is not allowed");
		CU_ASSERT_FALSE(sy_wire_valid((sy_type)t, NULL, &why));
		CU_ASSERT_STRING_EQUAL(why, "value is missing");
	}
	const char *why = NULL;
	CU_ASSERT_FALSE(sy_wire_valid(SY_TYPE__COUNT, sy_json_doc_root(doc), &why));
	CU_ASSERT_STRING_EQUAL(why, "unknown type");
	sy_json_doc_free(doc);
}

/* Wrong JSON kinds for every type: nothing but the type's own kind passes. */
static void test_kinds(void)
{
	static const char *const kinds[] = {"true", "false", "0", "\"0\"", "[]", "{}"};
	static const bool passes[SY_TYPE__COUNT][6] = {
	        [SY_TYPE_TEXT] = {false, false, false, true, false, false},
	        [SY_TYPE_INT32] = {false, false, true, false, false, false},
	        [SY_TYPE_INT64] = {false, false, false, true, false, false},
	        [SY_TYPE_FLOAT64] = {false, false, true, false, false, false},
	        [SY_TYPE_NUMERIC] = {false, false, false, true, false, false},
	        [SY_TYPE_BOOL] = {true, true, false, false, false, false},
	        [SY_TYPE_JSON] = {false, false, false, true, false, false},
	};
	for (size_t k = 0; k < 6; k++) {
		sy_json_doc *doc = parse(kinds[k]);
		for (unsigned t = 0; t < SY_TYPE__COUNT; t++)
			CU_ASSERT_EQUAL(sy_wire_valid((sy_type)t, sy_json_doc_root(doc), NULL),
			                passes[t][k]);
		sy_json_doc_free(doc);
	}
}

static bool check_string(sy_type t, const char *s, size_t len, const char **why)
{
	sy_json_doc *doc = sy_json_doc_new();
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	sy_json *v = sy_json_new_string(doc, s, len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	bool ok = sy_wire_valid(t, v, why);
	sy_json_doc_free(doc);
	return ok;
}

/* PostgreSQL numeric's limits: 131072 digits before the point, 16383 after. */
static void test_numeric_limits(void)
{
	size_t n = SY_NUMERIC_MAX_INT_DIGITS + SY_NUMERIC_MAX_FRAC_DIGITS + 8;
	char *s = malloc(n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	const char *why = NULL;

	memset(s, '9', SY_NUMERIC_MAX_INT_DIGITS + 1);
	CU_ASSERT_TRUE(check_string(SY_TYPE_NUMERIC, s, SY_NUMERIC_MAX_INT_DIGITS, &why));
	CU_ASSERT_FALSE(check_string(SY_TYPE_NUMERIC, s, SY_NUMERIC_MAX_INT_DIGITS + 1, &why));
	CU_ASSERT_STRING_EQUAL(why, "numeric has too many digits");

	memcpy(s, "-0.", 3);
	memset(s + 3, '0', SY_NUMERIC_MAX_FRAC_DIGITS);
	s[3 + SY_NUMERIC_MAX_FRAC_DIGITS - 1] = '1';
	CU_ASSERT_TRUE(check_string(SY_TYPE_NUMERIC, s, 3 + SY_NUMERIC_MAX_FRAC_DIGITS, &why));
	s[3 + SY_NUMERIC_MAX_FRAC_DIGITS - 1] = '0';
	s[3 + SY_NUMERIC_MAX_FRAC_DIGITS] = '1';
	CU_ASSERT_FALSE(check_string(SY_TYPE_NUMERIC, s, 4 + SY_NUMERIC_MAX_FRAC_DIGITS, &why));
	CU_ASSERT_STRING_EQUAL(why, "numeric has too many digits");
	free(s);
}

/*
 * One symbol before the padding decides canonicity: with "==" its low four bits
 * are past the byte, with "=" its low two bits.
 */
static void test_base64_pad_bits(void)
{
	static const char alphabet[] =
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	for (int v = 0; v < 64; v++) {
		char two[4] = {'Q', alphabet[v], '=', '='};
		char one[4] = {'Q', 'U', alphabet[v], '='};
		char none[4] = {'Q', 'U', 'J', alphabet[v]};
		CU_ASSERT_EQUAL(check_string(SY_TYPE_BYTES, two, 4, NULL), (v & 0x0f) == 0);
		CU_ASSERT_EQUAL(check_string(SY_TYPE_BYTES, one, 4, NULL), (v & 0x03) == 0);
		CU_ASSERT_TRUE(check_string(SY_TYPE_BYTES, none, 4, NULL));
	}
	/* Every other byte value is outside the alphabet. */
	for (int c = 0; c < 256; c++) {
		char s[4] = {'Q', 'U', 'J', (char)c};
		bool in = strchr(alphabet, c) != NULL && c != 0;
		CU_ASSERT_EQUAL(check_string(SY_TYPE_BYTES, s, 4, NULL), in);
	}
}

/* Each allocation of the json check fails in turn: always NOMEM, never INVALID. */
static long alloc_left = -1;

static void *failing_malloc(size_t n)
{
	if (alloc_left == 0)
		return NULL;
	if (alloc_left > 0)
		alloc_left--;
	return malloc(n);
}

static void *failing_realloc(void *p, size_t n)
{
	if (alloc_left == 0)
		return NULL;
	if (alloc_left > 0)
		alloc_left--;
	return realloc(p, n);
}

static const sy_allocator failing = {failing_malloc, failing_realloc, free};

static void test_check_nomem(void)
{
	static const struct {
		sy_type type;
		const char *json;
		sy_wire_status final;
	} rows[] = {
	        {SY_TYPE_JSON, "\"{\\\"a\\\":[1,2,{\\\"b\\\":\\\"c\\\"}],\\\"d\\\":1.5}\"",
	         SY_WIRE_OK},
	        {SY_TYPE_JSON, "\"{\\\"d\\\":1.5,\\\"a\\\":[1,2,{\\\"b\\\":\\\"c\\\"}]}\"",
	         SY_WIRE_INVALID},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		sy_json_doc *doc = parse(rows[i].json);
		long budget;
		for (budget = 0; budget < 1000; budget++) {
			const char *why = NULL;
			sy_error err;
			sy_error_clear(&err);
			alloc_left = budget;
			sy_set_allocator(&failing);
			sy_wire_status st =
			        sy_wire_check(rows[i].type, sy_json_doc_root(doc), &why, &err);
			sy_set_allocator(NULL);
			alloc_left = -1;
			if (st != SY_WIRE_NOMEM) {
				CU_ASSERT_EQUAL(st, rows[i].final);
				break;
			}
			CU_ASSERT_EQUAL(err.code, SY_ERR_NOMEM);
			CU_ASSERT_STRING_EQUAL(why, "out of memory");
		}
		CU_ASSERT(budget > 0); /* the check did allocate, so failures were exercised */
		CU_ASSERT(budget < 1000);
		sy_json_doc_free(doc);
	}

	/* Every other type checks without allocating. */
	static const struct {
		sy_type type;
		const char *json;
	} pure[] = {
	        {SY_TYPE_FLOAT64, "1.5"},
	        {SY_TYPE_FLOAT64, "1.50"},
	        {SY_TYPE_TEXT, "\"x\""},
	        {SY_TYPE_INT32, "7"},
	        {SY_TYPE_INT64, "\"7\""},
	        {SY_TYPE_NUMERIC, "\"7.5\""},
	        {SY_TYPE_BOOL, "true"},
	        {SY_TYPE_BYTES, "\"QQ==\""},
	        {SY_TYPE_DATE, "\"2026-01-02\""},
	        {SY_TYPE_TIMESTAMP, "\"2026-01-02T03:04:05.123000Z\""},
	        {SY_TYPE_UUID, "\"00000000-0000-0000-0000-000000000000\""},
	};
	for (size_t i = 0; i < sizeof pure / sizeof pure[0]; i++) {
		sy_json_doc *doc = parse(pure[i].json);
		bool expect = sy_wire_valid(pure[i].type, sy_json_doc_root(doc), NULL);
		alloc_left = 0;
		sy_set_allocator(&failing);
		sy_wire_status st = sy_wire_check(pure[i].type, sy_json_doc_root(doc), NULL, NULL);
		sy_set_allocator(NULL);
		alloc_left = -1;
		CU_ASSERT_EQUAL(st, expect ? SY_WIRE_OK : SY_WIRE_INVALID);
		sy_json_doc_free(doc);
	}
}

typedef struct {
	sy_type type;
	const char *json; /* canonical wire value */
	const char *pg;   /* PostgreSQL text input */
} to_pg_case;

static void test_to_pg_text(void)
{
	static const to_pg_case rows[] = {
	        {SY_TYPE_TEXT, "\"caf\xc3\xa9\"", "caf\xc3\xa9"},
	        {SY_TYPE_TEXT, "\"\"", ""},
	        {SY_TYPE_TEXT, "\"a\\\\b\\\"c\"", "a\\b\"c"},
	        {SY_TYPE_INT32, "-2147483648", "-2147483648"},
	        {SY_TYPE_INT32, "0", "0"},
	        {SY_TYPE_INT64, "\"-9223372036854775808\"", "-9223372036854775808"},
	        {SY_TYPE_FLOAT64, "1e+21", "1e+21"},
	        {SY_TYPE_FLOAT64, "0.1", "0.1"},
	        {SY_TYPE_FLOAT64, "-1.5", "-1.5"},
	        {SY_TYPE_FLOAT64, "5e-324", "5e-324"},
	        {SY_TYPE_NUMERIC, "\"-0.5\"", "-0.5"},
	        {SY_TYPE_BOOL, "true", "true"},
	        {SY_TYPE_BOOL, "false", "false"},
	        {SY_TYPE_TIMESTAMP, "\"2026-01-02T03:04:05.123000Z\"",
	         "2026-01-02T03:04:05.123000Z"},
	        {SY_TYPE_DATE, "\"2000-02-29\"", "2000-02-29"},
	        {SY_TYPE_UUID, "\"00000000-0000-0000-0000-000000000000\"",
	         "00000000-0000-0000-0000-000000000000"},
	        {SY_TYPE_BYTES, "\"\"", "\\x"},
	        {SY_TYPE_BYTES, "\"QQ==\"", "\\x41"},
	        {SY_TYPE_BYTES, "\"Cgs=\"", "\\x0a0b"},
	        {SY_TYPE_BYTES, "\"QUJD\"", "\\x414243"},
	        {SY_TYPE_BYTES, "\"/w==\"", "\\xff"},
	        {SY_TYPE_BYTES, "\"AP+A/w==\"", "\\x00ff80ff"},
	        {SY_TYPE_JSON, "\"{\\\"a\\\":[1,\\\"x\\\"]}\"", "{\"a\":[1,\"x\"]}"},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		sy_json_doc *doc = parse(rows[i].json);
		sy_buf out = SY_BUF_INIT;
		CU_ASSERT_FATAL(sy_buf_puts(&out, "prefix:"));
		CU_ASSERT_TRUE(sy_wire_to_pg_text(rows[i].type, sy_json_doc_root(doc), &out));
		CU_ASSERT_EQUAL(out.len, 7 + strlen(rows[i].pg));
		CU_ASSERT(out.len == 7 + strlen(rows[i].pg) &&
		          memcmp(out.data + 7, rows[i].pg, out.len - 7) == 0);
		sy_buf_free(&out);
		sy_json_doc_free(doc);
	}

	static const struct {
		sy_type type;
		const char *json;
	} bad[] = {
	        {SY_TYPE_INT32, "1.5"},
	        {SY_TYPE_INT32, "-0"},
	        {SY_TYPE_BYTES, "\"QR==\""},
	        {SY_TYPE_TEXT, "\"a\\u0000\""},
	        {SY_TYPE_JSON, "1"},
	        {SY_TYPE_JSON, "\"\\u0000\""},
	        {SY_TYPE_BOOL, "null"},
	        {SY_TYPE_FLOAT64, "1.50"},
	        {SY_TYPE_DATE, "\"2026-02-30\""},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		sy_json_doc *doc = parse(bad[i].json);
		sy_buf out = SY_BUF_INIT;
		CU_ASSERT_FATAL(sy_buf_puts(&out, "keep"));
		CU_ASSERT_FALSE(sy_wire_to_pg_text(bad[i].type, sy_json_doc_root(doc), &out));
		CU_ASSERT_STRING_EQUAL(out.data, "keep");
		CU_ASSERT_FALSE(out.failed);
		sy_buf_free(&out);
		sy_json_doc_free(doc);
	}
}

typedef struct {
	sy_type type;
	const char *pg;   /* PostgreSQL 15 text output (DateStyle ISO, TimeZone UTC, ...) */
	const char *wire; /* JCS of the expected wire value; NULL: no wire form */
} from_pg_case;

static const from_pg_case from_pg_cases[] = {
        {SY_TYPE_TEXT, "caf\xc3\xa9", "\"caf\xc3\xa9\""},
        {SY_TYPE_TEXT, "", "\"\""},
        {SY_TYPE_TEXT, "tab\there", "\"tab\\there\""},
        {SY_TYPE_TEXT, "\xff", NULL},
        {SY_TYPE_TEXT, "\xc0\xaf", NULL},         /* overlong */
        {SY_TYPE_TEXT, "\xed\xa0\x80", NULL},     /* surrogate */
        {SY_TYPE_TEXT, "\xf4\x90\x80\x80", NULL}, /* past U+10FFFF */
        {SY_TYPE_TEXT, "\xe2\x82", NULL},         /* truncated */

        {SY_TYPE_INT32, "-2147483648", "-2147483648"},
        {SY_TYPE_INT32, "2147483647", "2147483647"},
        {SY_TYPE_INT32, "0", "0"},
        {SY_TYPE_INT32, "2147483648", NULL},
        {SY_TYPE_INT32, "1.5", NULL},
        {SY_TYPE_INT32, "", NULL},

        {SY_TYPE_INT64, "-9223372036854775808", "\"-9223372036854775808\""},
        {SY_TYPE_INT64, "9223372036854775807", "\"9223372036854775807\""},
        {SY_TYPE_INT64, "9223372036854775808", NULL},

        {SY_TYPE_FLOAT64, "1e+21", "1e+21"},
        {SY_TYPE_FLOAT64, "1e-07", "1e-7"},
        {SY_TYPE_FLOAT64, "0.1", "0.1"},
        {SY_TYPE_FLOAT64, "1e+15", "1000000000000000"},
        {SY_TYPE_FLOAT64, "1.2345678901234568e+17", "123456789012345680"},
        {SY_TYPE_FLOAT64, "-0", "0"},
        {SY_TYPE_FLOAT64, "5e-324", "5e-324"},
        {SY_TYPE_FLOAT64, "1.7976931348623157e+308", "1.7976931348623157e+308"},
        {SY_TYPE_FLOAT64, "-2.5", "-2.5"},
        {SY_TYPE_FLOAT64, "0.30000000000000004", "0.30000000000000004"},
        {SY_TYPE_FLOAT64, "1e+301", "1e+301"},
        {SY_TYPE_FLOAT64, "Infinity", NULL},
        {SY_TYPE_FLOAT64, "-Infinity", NULL},
        {SY_TYPE_FLOAT64, "NaN", NULL},
        {SY_TYPE_FLOAT64, "0x10", NULL},
        {SY_TYPE_FLOAT64, " 1", NULL},
        {SY_TYPE_FLOAT64, "", NULL},

        {SY_TYPE_NUMERIC, "1.500", "\"1.5\""},
        {SY_TYPE_NUMERIC, "0.00", "\"0\""},
        {SY_TYPE_NUMERIC, "-0.00", "\"0\""},
        {SY_TYPE_NUMERIC, "0.000", "\"0\""},
        {SY_TYPE_NUMERIC, "100000", "\"100000\""},
        {SY_TYPE_NUMERIC, "100.000", "\"100\""},
        {SY_TYPE_NUMERIC, "0.00001", "\"0.00001\""},
        {SY_TYPE_NUMERIC, "-12.340", "\"-12.34\""},
        {SY_TYPE_NUMERIC, "NaN", NULL},
        {SY_TYPE_NUMERIC, "Infinity", NULL},
        {SY_TYPE_NUMERIC, "-Infinity", NULL},
        {SY_TYPE_NUMERIC, "", NULL},

        {SY_TYPE_BOOL, "t", "true"},
        {SY_TYPE_BOOL, "f", "false"},
        {SY_TYPE_BOOL, "true", NULL},

        {SY_TYPE_TIMESTAMP, "2026-01-02 03:04:05.123+00", "\"2026-01-02T03:04:05.123000Z\""},
        {SY_TYPE_TIMESTAMP, "2026-01-02 03:04:05+00", "\"2026-01-02T03:04:05.000000Z\""},
        {SY_TYPE_TIMESTAMP, "2026-01-02 03:04:05.000001+00", "\"2026-01-02T03:04:05.000001Z\""},
        {SY_TYPE_TIMESTAMP, "0001-01-01 00:00:00+00", "\"0001-01-01T00:00:00.000000Z\""},
        {SY_TYPE_TIMESTAMP, "9999-12-31 23:59:59.999999+00", "\"9999-12-31T23:59:59.999999Z\""},
        {SY_TYPE_TIMESTAMP, "2026-01-02 03:04:05+05:30", "\"2026-01-01T21:34:05.000000Z\""},
        {SY_TYPE_TIMESTAMP, "2026-12-31 23:00:00-02", "\"2027-01-01T01:00:00.000000Z\""},
        {SY_TYPE_TIMESTAMP, "2026-01-02 03:04:05+00:00:30", "\"2026-01-02T03:03:35.000000Z\""},
        {SY_TYPE_TIMESTAMP, "2026-01-02 03:04:05.5", "\"2026-01-02T03:04:05.500000Z\""},
        /* Other session time zones (as PostgreSQL prints them) still convert exactly. */
        {SY_TYPE_TIMESTAMP, "1900-06-01 00:19:32+00:19:32", "\"1900-06-01T00:00:00.000000Z\""},
        {SY_TYPE_TIMESTAMP, "2026-07-01 14:00:00.5+02", "\"2026-07-01T12:00:00.500000Z\""},
        {SY_TYPE_TIMESTAMP, "2026-01-01 18:04:05-03:30", "\"2026-01-01T21:34:05.000000Z\""},
        {SY_TYPE_TIMESTAMP, "0001-01-01 00:00:00+01", NULL},
        {SY_TYPE_TIMESTAMP, "9999-12-31 23:00:00-01", NULL},
        {SY_TYPE_TIMESTAMP, "10000-01-01 00:00:00+00", NULL},
        {SY_TYPE_TIMESTAMP, "0001-12-31 00:00:00+00 BC", NULL},
        {SY_TYPE_TIMESTAMP, "infinity", NULL},
        {SY_TYPE_TIMESTAMP, "-infinity", NULL},
        {SY_TYPE_TIMESTAMP, "2026-01-02 03:04:05.1234567+00", NULL},
        {SY_TYPE_TIMESTAMP, "2026-01-02 03:04:05.+00", NULL},
        {SY_TYPE_TIMESTAMP, "2026-01-02T03:04:05+00", NULL},
        {SY_TYPE_TIMESTAMP, "2026-02-30 03:04:05+00", NULL},
        {SY_TYPE_TIMESTAMP, "2026-01-02 03:04:05+0", NULL},
        {SY_TYPE_TIMESTAMP, "2026-01-02 03:04:05+00:", NULL},
        {SY_TYPE_TIMESTAMP, "2026-01-02 03:04:05 UTC", NULL},

        {SY_TYPE_DATE, "2026-01-02", "\"2026-01-02\""},
        {SY_TYPE_DATE, "0001-01-01", "\"0001-01-01\""},
        {SY_TYPE_DATE, "infinity", NULL},
        {SY_TYPE_DATE, "10000-01-01", NULL},
        {SY_TYPE_DATE, "0001-01-01 BC", NULL},

        {SY_TYPE_UUID, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
         "\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\""},
        {SY_TYPE_UUID, "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
         "\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\""},
        {SY_TYPE_UUID, "00000000-0000-0000-0000-000000000000",
         "\"00000000-0000-0000-0000-000000000000\""},
        {SY_TYPE_UUID, "a0eebc999c0b4ef8bb6d6bb9bd380a11", NULL},

        {SY_TYPE_BYTES, "\\x", "\"\""},
        {SY_TYPE_BYTES, "\\x41", "\"QQ==\""},
        {SY_TYPE_BYTES, "\\x0a0b", "\"Cgs=\""},
        {SY_TYPE_BYTES, "\\x414243", "\"QUJD\""},
        {SY_TYPE_BYTES, "\\xFF", "\"/w==\""},
        {SY_TYPE_BYTES, "\\x00ff80ff", "\"AP+A/w==\""},
        {SY_TYPE_BYTES, "\\x0", NULL},
        {SY_TYPE_BYTES, "\\xzz", NULL},
        {SY_TYPE_BYTES, "abc", NULL},
        {SY_TYPE_BYTES, "\\\\000", NULL},

        {SY_TYPE_JSON, "{\"a\": [1.0, 2000], \"b\": 1}", "\"{\\\"a\\\":[1,2000],\\\"b\\\":1}\""},
        {SY_TYPE_JSON, "{\"b\": \"\xc3\xa9\", \"a\": null}",
         "\"{\\\"a\\\":null,\\\"b\\\":\\\"\xc3\xa9\\\"}\""},
        {SY_TYPE_JSON, "\"x\"", "\"\\\"x\\\"\""},
        {SY_TYPE_JSON, "1", "\"1\""},
        {SY_TYPE_JSON, "not json", NULL},
        {SY_TYPE_JSON, "", NULL},
};

static void test_from_pg_text(void)
{
	for (size_t i = 0; i < sizeof from_pg_cases / sizeof from_pg_cases[0]; i++) {
		const from_pg_case *c = &from_pg_cases[i];
		sy_json_doc *doc = sy_json_doc_new();
		CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
		sy_json *v = NULL;
		sy_wire_status st = sy_wire_decode_pg_text(doc, c->type, c->pg, strlen(c->pg), &v);
		const char *got = st == SY_WIRE_OK ? jcs(v) : NULL;
		bool same = c->wire == NULL ? st == SY_WIRE_INVALID && v == NULL
		                            : st == SY_WIRE_OK && strcmp(got, c->wire) == 0;
		if (!same && got == NULL)
			got = st == SY_WIRE_NOMEM ? "NOMEM" : "INVALID";
		if (!same)
			fprintf(stderr, "\n  %s from \"%s\": got %s\n", sy_type_name(c->type),
			        c->pg, got);
		CU_ASSERT(same);
		if (st == SY_WIRE_OK) {
			/* What we decode is canonical, so it validates and goes back to PG. */
			const char *why = NULL;
			CU_ASSERT_TRUE(sy_wire_valid(c->type, v, &why));
			sy_buf pg = SY_BUF_INIT;
			CU_ASSERT_TRUE(sy_wire_to_pg_text(c->type, v, &pg));
			sy_buf_free(&pg);
		}
		CU_ASSERT_EQUAL(sy_wire_from_pg_text(doc, c->type, c->pg, strlen(c->pg)) != NULL,
		                c->wire != NULL);
		sy_json_doc_free(doc);
	}

	/* An embedded NUL is never text, and jsonb beyond double range has no JCS form. */
	sy_json_doc *doc = sy_json_doc_new();
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	CU_ASSERT_PTR_NULL(sy_wire_from_pg_text(doc, SY_TYPE_TEXT, "a\0b", 3));
	char big[402];
	big[0] = '1';
	memset(big + 1, '0', 400);
	big[401] = '\0';
	sy_json *v = NULL;
	CU_ASSERT_EQUAL(sy_wire_decode_pg_text(doc, SY_TYPE_JSON, big, 401, &v), SY_WIRE_INVALID);
	CU_ASSERT_EQUAL(sy_wire_decode_pg_text(doc, SY_TYPE__COUNT, "x", 1, &v), SY_WIRE_INVALID);
	CU_ASSERT_EQUAL(sy_wire_decode_pg_text(NULL, SY_TYPE_TEXT, "x", 1, &v), SY_WIRE_INVALID);
	sy_json_doc_free(doc);
}

/* Random byte strings: hex -> base64 -> hex is the identity, and base64 is canonical. */
static void test_bytes_round_trip(void)
{
	unsigned seed = 12345;
	for (int round = 0; round < 2000; round++) {
		size_t n = (size_t)(round % 40);
		char hex[2 + 80 + 1] = "\\x";
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			unsigned byte = (seed >> 16) & 0xff;
			static const char digits[] = "0123456789abcdef";
			hex[2 + 2 * i] = digits[byte >> 4];
			hex[3 + 2 * i] = digits[byte & 15];
		}
		hex[2 + 2 * n] = '\0';
		sy_json_doc *doc = sy_json_doc_new();
		CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
		sy_json *v = sy_wire_from_pg_text(doc, SY_TYPE_BYTES, hex, 2 + 2 * n);
		CU_ASSERT_PTR_NOT_NULL_FATAL(v);
		CU_ASSERT_EQUAL(v->u.string.len, (n + 2) / 3 * 4);
		CU_ASSERT_TRUE(sy_wire_valid(SY_TYPE_BYTES, v, NULL));
		sy_buf back = SY_BUF_INIT;
		CU_ASSERT_TRUE(sy_wire_to_pg_text(SY_TYPE_BYTES, v, &back));
		CU_ASSERT(back.len == 2 + 2 * n && memcmp(back.data, hex, back.len) == 0);
		sy_buf_free(&back);
		sy_json_doc_free(doc);
	}
}

/* A decoded float64 has the canonical literal, so it validates as one. */
static void test_float_round_trip(void)
{
	static const char *const pg[] = {"1e+21",  "1e-07",    "123.456", "-0",
	                                 "1e+300", "2.5e-300", "4.35",    "9007199254740993"};
	for (size_t i = 0; i < sizeof pg / sizeof pg[0]; i++) {
		sy_json_doc *doc = sy_json_doc_new();
		CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
		sy_json *v = sy_wire_from_pg_text(doc, SY_TYPE_FLOAT64, pg[i], strlen(pg[i]));
		CU_ASSERT_PTR_NOT_NULL_FATAL(v);
		CU_ASSERT_EQUAL(v->type, SY_JSON_NUMBER);
		CU_ASSERT_TRUE(sy_wire_valid(SY_TYPE_FLOAT64, v, NULL));
		CU_ASSERT_EQUAL(v->u.number.value, strtod(pg[i], NULL));
		CU_ASSERT_EQUAL(v->u.number.is_integer, strpbrk(v->u.number.text, ".e") == NULL);
		/* "-0" comes back as 0, sign and all. */
		CU_ASSERT_FALSE(signbit(v->u.number.value));
		sy_json_doc_free(doc);
	}
}

/* Each allocation of a decode fails in turn: always NOMEM, never a wrong answer. */
static void test_from_pg_nomem(void)
{
	for (size_t i = 0; i < sizeof from_pg_cases / sizeof from_pg_cases[0]; i++) {
		const from_pg_case *c = &from_pg_cases[i];
		if (c->wire == NULL)
			continue;
		long budget;
		for (budget = 0; budget < 1000; budget++) {
			sy_json_doc *doc = sy_json_doc_new();
			CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
			sy_json *v = NULL;
			alloc_left = budget;
			sy_set_allocator(&failing);
			sy_wire_status st =
			        sy_wire_decode_pg_text(doc, c->type, c->pg, strlen(c->pg), &v);
			sy_set_allocator(NULL);
			alloc_left = -1;
			if (st == SY_WIRE_OK) {
				CU_ASSERT_STRING_EQUAL(jcs(v), c->wire);
			} else {
				CU_ASSERT(st == SY_WIRE_NOMEM && v == NULL);
			}
			sy_json_doc_free(doc);
			if (st == SY_WIRE_OK)
				break;
		}
		CU_ASSERT(budget < 1000);
	}
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"type names", test_names},
	        {"wire values", test_wire_table},
	        {"null and missing", test_null},
	        {"JSON kinds per type", test_kinds},
	        {"numeric digit limits", test_numeric_limits},
	        {"base64 padding bits", test_base64_pad_bits},
	        {"checks under failing allocations", test_check_nomem},
	        {"wire to PostgreSQL text", test_to_pg_text},
	        {"PostgreSQL text to wire", test_from_pg_text},
	        {"bytes round trip", test_bytes_round_trip},
	        {"float64 round trip", test_float_round_trip},
	        {"PostgreSQL text under failing allocations", test_from_pg_nomem},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("types", tests);
	return sy_test_run();
}
