/* SPDX-License-Identifier: BSD-2-Clause */
/* The reader's scalars: strings, UTF-8, numbers, every value kind, and a
 * decimal-comma locale. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <dirent.h>
#include <float.h>
#include <json-c/json.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/buf.h"
#include "synchro/jcs.h"
#include "synchro/json.h"
#include "test_json.h"
#include "testutil.h"

/* ------------------------------------------------------------ strings */

static void expect_string(const char *json, const char *want, size_t want_len)
{
	sy_error err;
	sy_json_doc *doc = parse(json, &err);
	if (doc == NULL)
		fprintf(stderr, "\n  %s: %s\n", json, err.message);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	const sy_json *v = root_of(doc);
	CU_ASSERT_EQUAL(v->type, SY_JSON_STRING);
	CU_ASSERT_EQUAL(v->u.string.len, want_len);
	CU_ASSERT(v->u.string.len == want_len && memcmp(v->u.string.data, want, want_len) == 0);
	CU_ASSERT_EQUAL(v->u.string.data[v->u.string.len], '\0');
	sy_json_doc_free(doc);
}

void test_strings(void)
{
	expect_string("\"\"", "", 0);
	expect_string("\"a\\u0000b\"", "a\0b", 3);
	expect_string("\"\\u0000\"", "\0", 1);
	expect_string("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\/\b\f\n\r\t", 8);
	expect_string("\"\\u00e9\\u20AC\"", "\xc3\xa9\xe2\x82\xac", 5);
	expect_string("\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80", 4);
	expect_string("\"\\uDBFF\\uDFFF\"", "\xf4\x8f\xbf\xbf", 4);
	expect_string("\"\xf0\x9f\x98\x80\xe2\x82\xac\xc3\xa9\x7f\"",
	              "\xf0\x9f\x98\x80\xe2\x82\xac\xc3\xa9\x7f", 10);
	expect_string("\"\\uFFFF\\uFDD0\"", "\xef\xbf\xbf\xef\xb7\x90", 6); /* noncharacters */
	/* Long plain runs (the 8-byte scan) with specials at every alignment. */
	for (int pos = 0; pos < 24; pos++) {
		char in[64], want[64];
		memset(in, 'x', sizeof(in));
		in[0] = '"';
		in[1 + pos] = '\\';
		in[2 + pos] = 'n';
		in[40] = '"';
		in[41] = '\0';
		memset(want, 'x', sizeof(want));
		want[pos] = '\n';
		expect_string(in, want, 38);
		in[1 + pos] = '\x01';
		expect_refused_at(in, 41, 1 + pos);
		in[1 + pos] = '\xc3';
		in[2 + pos] = '\xa9';
		memcpy(want + pos, "\xc3\xa9", 2);
		expect_string(in, want, 39);
		in[2 + pos] = 'x';
		expect_refused_at(in, 41, 1 + pos);
	}

	expect_refused_at("\"\\ud800\"", 8, 1);
	expect_refused_at("\"\\udc00\"", 8, 1);
	expect_refused_at("\"\\udfff\\ud800\"", 14, 1);
	expect_refused_at("\"a\\ud800\\u0041\"", 15, 2);
	expect_refused_at("\"\\ud800\\ud800\"", 14, 1);
	expect_refused_at("\"\\ud800x\"", 9, 1);
	expect_refused_at("\"\\ud800\\\"", 9, 0); /* the quote is escaped */
	expect_refused_at("\"\\ud800\\\\\"", 10, 1);
	expect_refused_at("\"\\ud800\\n\"", 10, 1);
	expect_refused_at("\"\\u12\"", 6, 1);
	expect_refused_at("\"\\u12g4\"", 8, 1);
	expect_refused_at("\"\\x41\"", 6, 1);
	expect_refused_at("\"\\'\"", 4, 1);
	expect_refused_at("\"\\U0041\"", 8, 1);
	expect_refused_at("\"ab\\\xc3\xa9\"", 7, 3);
	expect_refused_at("\"ab\\\x01\"", 6, 3);
	expect_refused_at("\"\\", 2, 0);
	expect_refused_at("\"a\tb\"", 5, 2);
	expect_refused_at("\"a\nb\"", 5, 2);
	expect_refused_at("\"\x1f\"", 3, 1);
	expect_refused_at("\"\0\"", 3, 1);
	expect_refused_at("['a']", 5, 1);
}

void test_utf8(void)
{
	/* Overlongs, surrogates, > U+10FFFF, truncations, stray bytes: in strings... */
	static const char *bad[] = {
	        "\xc0\x80",
	        "\xc1\xbf",
	        "\xe0\x80\x80",
	        "\xe0\x9f\xbf",
	        "\xf0\x80\x80\x80",
	        "\xf0\x8f\xbf\xbf",
	        "\xed\xa0\x80",
	        "\xed\xbf\xbf",
	        "\xf4\x90\x80\x80",
	        "\xf5\x80\x80\x80",
	        "\xf8\x88\x80\x80\x80",
	        "\xff",
	        "\xfe",
	        "\x80",
	        "\xbf",
	        "\xc3",
	        "\xe2\x82",
	        "\xf0\x9f\x98",
	        "\xc3\x28",
	        "\xe2\x28\xa1",
	        "\xf0\x28\x8c\xbc",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char in[32];
		int n = snprintf(in, sizeof(in), "[\"ab%s\"]", bad[i]);
		expect_refused_at(in, (size_t)n, 4);
		/* ...as a member name... */
		n = snprintf(in, sizeof(in), "{\"%s\":1}", bad[i]);
		expect_refused_at(in, (size_t)n, 2);
		/* ...and outside strings. */
		n = snprintf(in, sizeof(in), "[1,%s]", bad[i]);
		expect_refused_at(in, (size_t)n, 3);
		n = snprintf(in, sizeof(in), "[1] %s", bad[i]);
		expect_refused_at(in, (size_t)n, 4);
	}
	/* Truncated at the very end of the input. */
	expect_refused_at("\"\xe2\x82", 3, 1);
	expect_refused_at("\"\xf0\x9f\x98", 4, 1);
	/* The boundaries that are valid. */
	expect_string("\"\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xf0\x90\x80\x80"
	              "\xf4\x8f\xbf\xbf\"",
	              "\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xf0\x90\x80\x80"
	              "\xf4\x8f\xbf\xbf",
	              21);
}

/* ------------------------------------------------------------ numbers */

static void expect_number(const char *json, double value, bool is_int)
{
	sy_error err;
	sy_json_doc *doc = parse(json, &err);
	if (doc == NULL)
		fprintf(stderr, "\n  %s: %s\n", json, err.message);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	const sy_json *v = root_of(doc);
	CU_ASSERT_EQUAL_FATAL(v->type, SY_JSON_NUMBER);
	if (!(v->u.number.value == value && signbit(v->u.number.value) == signbit(value))) {
		fprintf(stderr, "\n  %s: got %.17g want %.17g\n", json, v->u.number.value, value);
		CU_FAIL("number value");
	}
	CU_ASSERT_EQUAL(v->u.number.is_integer, is_int);
	CU_ASSERT_STRING_EQUAL(v->u.number.text, json);
	CU_ASSERT_EQUAL(v->u.number.text_len, strlen(json));
	sy_json_doc_free(doc);
}

void test_numbers(void)
{
	expect_number("0", 0, true);
	expect_number("-0", -0.0, true);
	expect_number("1", 1, true);
	expect_number("-1", -1, true);
	expect_number("1.0", 1, false);
	expect_number("1e0", 1, false);
	expect_number("1E+2", 100, false);
	expect_number("1e-2", 0.01, false);
	expect_number("-0.0", -0.0, false);
	expect_number("0e0", 0, false);
	expect_number("-0e-0", -0.0, false);
	expect_number("0.1", 0.1, false);
	expect_number("123.456e-7", 123.456e-7, false);
	expect_number("9007199254740993", 9007199254740992.0, true);
	expect_number("9007199254740995", 9007199254740996.0, true);
	expect_number("18446744073709551616", 18446744073709551616.0, true);
	expect_number("123456789012345678901234567890", 123456789012345678901234567890.0, true);
	expect_number("0.30000000000000004", 0.30000000000000004, false);
	expect_number("2.2250738585072011e-308", 2.2250738585072011e-308, false);
	expect_number("4.9406564584124654e-324", 4.9406564584124654e-324, false);
	expect_number("1.7976931348623157e308", 1.7976931348623157e308, false);
	expect_number("1e22", 1e22, false);
	expect_number("1e23", 1e23, false);
	expect_number("0.000000000000000000000000000001", 1e-30, false);
	expect_number("100000000000000000000000e-10", 1e13, false);
	/* Out of range: still JSON; validators decide. */
	expect_number("1e400", HUGE_VAL, false);
	expect_number("-1e400", -HUGE_VAL, false);
	expect_number("1e-400", 0, false);
	expect_number("-1e-400", -0.0, false);
	expect_number("1e99999999999999999999", HUGE_VAL, false);

	static const char *bad[] = {
	        "01",    "-01", "+1",  ".5",   "1.",   "1.e5",     "1e",    "1e+",
	        "1e-",   "-",   "--1", "0x10", "1e5.", "Infinity", "NaN",   "-Infinity",
	        "1_000", "00",  "-.5", "1ee5", "0.e1", "2.e-3",    "-1.0.", "\xef\xbc\x91"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sy_error err;
		sy_json_doc *doc = parse(bad[i], &err);
		if (doc != NULL)
			fprintf(stderr, "\n  accepted %s\n", bad[i]);
		CU_ASSERT_PTR_NULL(doc);
		sy_json_doc_free(doc);
		char arr[64];
		snprintf(arr, sizeof(arr), "[%s]", bad[i]);
		refused(arr);
	}
	expect_refused_at("[01]", 4, 1);
	expect_refused_at("[1.]", 4, 3);
	expect_refused_at("[1e]", 4, 3);
	expect_refused_at("[-]", 3, 1);

	/* Many numbers against strtod, through the fast, the 128-bit and the slow path. */
	unsigned long long x = 88172645463325252ULL;
	for (int i = 0; i < 40000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		char lit[96];
		int form = (int)(x % 6);
		unsigned long long mant =
		        (x >> 8) % (form == 3 ? 100000000000000000ULL : 100000000ULL);
		int e = (int)((x >> 40) % 90) - 45;
		unsigned long long y = x * 0x2545F4914F6CDD1DULL;
		if (form == 0)
			snprintf(lit, sizeof(lit), "%llu", mant);
		else if (form == 1)
			snprintf(lit, sizeof(lit), "-%llu.%03d", mant, (int)(x >> 50) % 1000);
		else if (form == 4) /* 16 to 20 significant digits */
			snprintf(lit, sizeof(lit), "%llu%0*llue%d", (y >> 40) % 9 + 1,
			         (int)(15 + x % 5), y % 100000000000000000ULL, e);
		else if (form == 5) /* a long fraction */
			snprintf(lit, sizeof(lit), "%llu.%017llu", (x >> 20) % 1000,
			         y % 100000000000000000ULL);
		else
			snprintf(lit, sizeof(lit), "%llue%d", mant, e);
		sy_error err;
		sy_json_doc *doc = parse(lit, &err);
		if (doc == NULL)
			fprintf(stderr, "\n  %s: %s\n", lit, err.message);
		CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
		double want = strtod(lit, NULL);
		if (root_of(doc)->u.number.value != want) {
			fprintf(stderr, "\n  %s: got %.17g want %.17g\n", lit,
			        root_of(doc)->u.number.value, want);
			CU_FAIL("differs from strtod");
		}
		sy_json_doc_free(doc);
	}
	/* Halfway cases: the decimal midpoint between two doubles, and a hair off it. */
	static const char *halfway[] = {
	        "9007199254740993",
	        "9007199254740993.0000000001",
	        "9007199254740992.9999999999",
	        "9007199254740995",
	        "18014398509481986",
	        "18014398509481990",
	        "1.00000000000000011102230246251565404236316680908203125",
	        "1.00000000000000011102230246251565404236316680908203124",
	        "1.00000000000000011102230246251565404236316680908203126",
	        "0.50000000000000005551115123125782702118158340454101562",
	        "0.50000000000000005551115123125782702118158340454101563",
	        "4503599627370496.5",
	        "4503599627370497.5",
	        "2251799813685248.25",
	        "1152921504606846977",
	        "1152921504606847104",
	        "1152921504606847105",
	        "12345678901234567890e-5",
	        "98765432109876543210e-30",
	        "7.2057594037927933e16",
	};
	for (size_t i = 0; i < sizeof(halfway) / sizeof(halfway[0]); i++)
		expect_number(halfway[i], strtod(halfway[i], NULL),
		              strpbrk(halfway[i], ".e") == NULL);

#if LDBL_MANT_DIG >= 55
	/* 19-digit decimals nearest to midpoints between neighbouring doubles: the
	 * rounding decision rests on the last bits (the 128-bit path's sticky bit). */
	for (int i = 0; i < 6000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		double d = ldexp(1.0 + (double)(x >> 12) / 4503599627370496.0, (int)(x % 180) - 60);
		long double mid = (long double)d + ((long double)nextafter(d, INFINITY) - d) / 2;
		char lit[64];
		snprintf(lit, sizeof(lit), "%.18Le", mid);
		sy_error err;
		sy_json_doc *doc = parse(lit, &err);
		CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
		if (root_of(doc)->u.number.value != strtod(lit, NULL)) {
			fprintf(stderr, "\n  %s: got %a want %a\n", lit,
			        root_of(doc)->u.number.value, strtod(lit, NULL));
			CU_FAIL("midpoint rounding differs from strtod");
		}
		sy_json_doc_free(doc);
	}
#endif
}

void test_values(void)
{
	sy_error err;
	const char *text =
	        "{\"n\":null,\"t\":true,\"f\":false,\"a\":[1,\"x\",[],{}],\"o\":{\"k\":\"v\"}}";
	sy_json_doc *doc = parse(text, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	const sy_json *r = root_of(doc);
	CU_ASSERT_EQUAL(r->type, SY_JSON_OBJECT);
	CU_ASSERT_EQUAL(r->u.object.count, 5);
	CU_ASSERT_STRING_EQUAL(r->u.object.members[0].key, "n");
	CU_ASSERT_STRING_EQUAL(r->u.object.members[4].key, "o");
	CU_ASSERT_EQUAL(sy_json_get(r, "n")->type, SY_JSON_NULL);
	CU_ASSERT_EQUAL(sy_json_get(r, "t")->type, SY_JSON_TRUE);
	CU_ASSERT_EQUAL(sy_json_get(r, "f")->type, SY_JSON_FALSE);
	const sy_json *a = sy_json_get(r, "a");
	CU_ASSERT_EQUAL_FATAL(a->type, SY_JSON_ARRAY);
	CU_ASSERT_EQUAL(a->u.array.count, 4);
	CU_ASSERT_EQUAL(a->u.array.items[0]->type, SY_JSON_NUMBER);
	CU_ASSERT_STRING_EQUAL(a->u.array.items[1]->u.string.data, "x");
	CU_ASSERT_EQUAL(a->u.array.items[2]->u.array.count, 0);
	CU_ASSERT_EQUAL(a->u.array.items[3]->u.object.count, 0);
	CU_ASSERT_STRING_EQUAL(sy_json_get(sy_json_get(r, "o"), "k")->u.string.data, "v");
	CU_ASSERT_PTR_NULL(sy_json_get(r, "missing"));
	CU_ASSERT_PTR_NULL(sy_json_get(a, "n"));
	CU_ASSERT_PTR_NULL(sy_json_get(NULL, "n"));
	sy_json_doc_free(doc);

	CU_ASSERT_STRING_EQUAL(sy_json_type_name(SY_JSON_NULL), "null");
	CU_ASSERT_STRING_EQUAL(sy_json_type_name(SY_JSON_TRUE), "boolean");
	CU_ASSERT_STRING_EQUAL(sy_json_type_name(SY_JSON_FALSE), "boolean");
	CU_ASSERT_STRING_EQUAL(sy_json_type_name(SY_JSON_NUMBER), "number");
	CU_ASSERT_STRING_EQUAL(sy_json_type_name(SY_JSON_STRING), "string");
	CU_ASSERT_STRING_EQUAL(sy_json_type_name(SY_JSON_ARRAY), "array");
	CU_ASSERT_STRING_EQUAL(sy_json_type_name(SY_JSON_OBJECT), "object");

	/* Scalars at the top level, and a big string (its own arena chunk). */
	accepted("null");
	accepted(" true ");
	accepted("\"x\"");
	size_t big = 3 * 1024 * 1024;
	char *s = malloc(big + 3);
	s[0] = '"';
	memset(s + 1, 'q', big);
	s[big + 1] = '"';
	s[big + 2] = '\0';
	doc = parse(s, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	CU_ASSERT_EQUAL(root_of(doc)->u.string.len, big);
	sy_json_doc_free(doc);
	free(s);
	sy_json_doc_free(NULL);
	CU_ASSERT_PTR_NULL(sy_json_doc_root(NULL));
}

/* ------------------------------------------------------------ locale */

/* The library never calls setlocale, but a host program might: a locale whose
 * decimal point is ',' must not change what numbers read or write. Runs where
 * such a locale is installed (e.g. LOCPATH pointing at a localedef output). */
void test_locale(void)
{
	static const char *names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
	                              "fr_FR.utf8",  "de_DE",      "fr_FR"};
	const char *got = NULL;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && got == NULL; i++)
		got = setlocale(LC_NUMERIC, names[i]);
	if (got == NULL || strcmp(localeconv()->decimal_point, ",") != 0) {
		setlocale(LC_NUMERIC, "C");
		fprintf(stderr, "(no locale with a decimal comma: not checked) ");
		return;
	}
	sy_error err;
	char text[512];
	/* The long literal takes the heap copy. */
	snprintf(text, sizeof(text),
	         "[1.5,0.30000000000000004,1.25e-300,123456789.123456789,2.5e5,"
	         "0.1%0200d]",
	         0);
	sy_json_doc *doc = parse(text, &err);
	CU_ASSERT_PTR_NOT_NULL(doc);
	char *c = doc != NULL ? canonical(sy_json_doc_root(doc)) : NULL;
	setlocale(LC_NUMERIC, "C");
	CU_ASSERT(doc != NULL && sy_json_doc_root(doc)->u.array.items[0]->u.number.value == 1.5);
	CU_ASSERT(doc != NULL &&
	          sy_json_doc_root(doc)->u.array.items[2]->u.number.value == 1.25e-300);
	CU_ASSERT(c != NULL && strcmp(c, "[1.5,0.30000000000000004,1.25e-300,123456789.12345679,"
	                                 "250000,0.1]") == 0);
	sy_free(c);
	sy_json_doc_free(doc);
}
