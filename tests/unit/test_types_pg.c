/* SPDX-License-Identifier: BSD-2-Clause */
/* Portable types (doc/contract.md#portable-types): the PostgreSQL text forms, both ways. */
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

typedef struct {
	sy_type type;
	const char *json; /* canonical wire value */
	const char *pg;   /* PostgreSQL text input */
} to_pg_case;

void test_to_pg_text(void)
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

void test_from_pg_text(void)
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
void test_bytes_round_trip(void)
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
void test_float_round_trip(void)
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
void test_from_pg_nomem(void)
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
			sy_test_alloc_install(budget, true);
			sy_wire_status st =
			        sy_wire_decode_pg_text(doc, c->type, c->pg, strlen(c->pg), &v);
			sy_test_alloc_remove();
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
