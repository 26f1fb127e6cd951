/* SPDX-License-Identifier: BSD-2-Clause */
/* Portable types (doc/contract.md#portable-types): canonical wire values, and the suite's shared
 * helpers (test_types.h); the PostgreSQL text forms are in test_types_pg.c. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/jcs.h"
#include "synchro/json.h"
#include "synchro/types.h"
#include "test_types.h"
#include "testutil.h"

sy_json_doc *parse_n(const char *text, size_t len)
{
	sy_error err;
	sy_json_doc *doc = sy_json_parse(text, len, &err);
	if (doc == NULL)
		fprintf(stderr, "\n  cannot parse %.*s: %s\n", (int)len, text, err.message);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	return doc;
}

sy_json_doc *parse(const char *text)
{
	return parse_n(text, strlen(text));
}

/* JCS text of v, in a static buffer (the tests' values are short). */
const char *jcs(const sy_json *v)
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
			sy_test_alloc_install(budget, true);
			sy_wire_status st =
			        sy_wire_check(rows[i].type, sy_json_doc_root(doc), &why, &err);
			sy_test_alloc_remove();
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
		sy_test_alloc_install(0, true);
		sy_wire_status st = sy_wire_check(pure[i].type, sy_json_doc_root(doc), NULL, NULL);
		sy_test_alloc_remove();
		CU_ASSERT_EQUAL(st, expect ? SY_WIRE_OK : SY_WIRE_INVALID);
		sy_json_doc_free(doc);
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
