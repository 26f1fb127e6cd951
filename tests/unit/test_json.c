/* SPDX-License-Identifier: BSD-2-Clause */
/* CUnit suite of the strict JSON reader and the builders: JSONTestSuite, the
 * RFC 8259 corners, duplicates, depth, UTF-8, numbers, failing allocations. */
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
#include "testutil.h"

/* Parses text[0..len); NULL when refused, with err filled. */
static sy_json_doc *parse_n(const char *text, size_t len, sy_error *err)
{
	sy_error_clear(err);
	return sy_json_parse(text, len, err);
}

static sy_json_doc *parse(const char *text, sy_error *err)
{
	return parse_n(text, strlen(text), err);
}

/* Asserts that text is refused as invalid JSON with the offset named. */
static void expect_refused_at(const char *text, size_t len, long at)
{
	sy_error err;
	sy_json_doc *doc = parse_n(text, len, &err);
	CU_ASSERT_PTR_NULL(doc);
	sy_json_doc_free(doc);
	CU_ASSERT_EQUAL(err.code, SY_ERR_INVALID_REQUEST);
	CU_ASSERT_EQUAL(strncmp(err.message, "invalid JSON at byte ", 21), 0);
	if (at >= 0) {
		char want[64];
		snprintf(want, sizeof(want), "invalid JSON at byte %ld: ", at);
		if (strncmp(err.message, want, strlen(want)) != 0) {
			fprintf(stderr, "\n  input %.60s: got \"%s\", want offset %ld\n", text,
			        err.message, at);
			CU_FAIL("wrong byte offset");
		}
	}
}

static void refused(const char *text)
{
	expect_refused_at(text, strlen(text), -1);
}

static void accepted(const char *text)
{
	sy_error err;
	sy_json_doc *doc = parse(text, &err);
	if (doc == NULL)
		fprintf(stderr, "\n  refused %.60s: %s\n", text, err.message);
	CU_ASSERT_PTR_NOT_NULL(doc);
	sy_json_doc_free(doc);
}

/* ------------------------------------------------------------ JSONTestSuite */

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Canonical form of a document, or NULL. */
static char *canonical(const sy_json *v)
{
	sy_buf b = SY_BUF_INIT;
	sy_error err;
	if (!sy_jcs_write(&b, v, &err)) {
		sy_buf_free(&b);
		return NULL;
	}
	return sy_buf_steal(&b, NULL);
}

/* Whether our tree and json-c's agree on every value (json-c as an independent
 * reader; it keeps the last of duplicate names, which never reach here). */
static bool same_as_jsonc(const sy_json *v, struct json_object *j)
{
	switch (v->type) {
	case SY_JSON_NULL: return j == NULL;
	case SY_JSON_TRUE:
	case SY_JSON_FALSE:
		return json_object_is_type(j, json_type_boolean) &&
		       json_object_get_boolean(j) == (v->type == SY_JSON_TRUE);
	case SY_JSON_NUMBER:
		if (json_object_is_type(j, json_type_int)) {
			/* json-c clamps integers to int64; compare where it does not. */
			if (fabs(v->u.number.value) >= 9.2e18)
				return true;
			return v->u.number.is_integer &&
			       (double)json_object_get_int64(j) == v->u.number.value;
		}
		if (json_object_is_type(j, json_type_double)) {
			double d = json_object_get_double(j);
			return d == v->u.number.value || (isnan(d) && isinf(v->u.number.value));
		}
		return false;
	case SY_JSON_STRING:
		return json_object_is_type(j, json_type_string) &&
		       (size_t)json_object_get_string_len(j) == v->u.string.len &&
		       memcmp(json_object_get_string(j), v->u.string.data, v->u.string.len) == 0;
	case SY_JSON_ARRAY:
		if (!json_object_is_type(j, json_type_array) ||
		    json_object_array_length(j) != v->u.array.count)
			return false;
		for (size_t i = 0; i < v->u.array.count; i++)
			if (!same_as_jsonc(v->u.array.items[i], json_object_array_get_idx(j, i)))
				return false;
		return true;
	case SY_JSON_OBJECT:
		if (!json_object_is_type(j, json_type_object) ||
		    (size_t)json_object_object_length(j) != v->u.object.count)
			return false;
		for (size_t i = 0; i < v->u.object.count; i++) {
			const sy_json_member *m = &v->u.object.members[i];
			struct json_object *jm;
			if (strlen(m->key) != m->key_len)
				continue; /* json-c cuts names at U+0000 */
			if (!json_object_object_get_ex(j, m->key, &jm) ||
			    !same_as_jsonc(m->value, jm))
				return false;
		}
		return true;
	}
	return false;
}

static int jsonc_compared;

static void check_jsonc(const char *name, const sy_json *root, const char *text, size_t len)
{
	struct json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
	CU_ASSERT_PTR_NOT_NULL_FATAL(tok);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	struct json_object *j = json_tokener_parse_ex(tok, text, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	/* json-c refuses some valid documents (U+0000 in names, huge numbers); only
	 * documents both accept are compared. */
	jsonc_compared += jerr == json_tokener_success;
	if (jerr == json_tokener_success && !same_as_jsonc(root, j)) {
		fprintf(stderr, "\n  %s: values differ from json-c\n", name);
		CU_FAIL("json-c disagrees");
	}
	json_object_put(j);
	json_tokener_free(tok);
}

static void test_jsontestsuite(void)
{
	const char *data = sy_test_data_dir();
	CU_ASSERT_PTR_NOT_NULL_FATAL(data);
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/jsontestsuite", data);
	DIR *d = opendir(dir);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	int yes = 0, no = 0, impl = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		const char *name = e->d_name;
		if (!ends_with(name, ".json"))
			continue;
		char path[8192];
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		size_t len;
		char *text = sy_test_read_file(path, &len);
		CU_ASSERT_PTR_NOT_NULL_FATAL(text);
		sy_error err;
		sy_json_doc *doc = parse_n(text, len, &err);
		bool want_yes = name[0] == 'y' && strncmp(name, "y_object_duplicated_key", 23) != 0;
		bool want_no = name[0] == 'n' || (name[0] == 'y' && !want_yes);
		if (doc != NULL) {
			if (want_no) {
				fprintf(stderr, "\n  %s accepted\n", name);
				CU_FAIL("n_ case accepted");
			}
			/* Canonical form is a fixed point of parse + write. */
			char *c1 = canonical(sy_json_doc_root(doc));
			if (c1 != NULL) {
				sy_json_doc *again = parse(c1, &err);
				CU_ASSERT_PTR_NOT_NULL(again);
				char *c2 =
				        again != NULL ? canonical(sy_json_doc_root(again)) : NULL;
				CU_ASSERT(c2 != NULL && strcmp(c1, c2) == 0);
				sy_free(c2);
				sy_json_doc_free(again);
			}
			sy_free(c1);
			if (want_yes)
				check_jsonc(name, sy_json_doc_root(doc), text, len);
		} else {
			if (want_yes) {
				fprintf(stderr, "\n  %s refused: %s\n", name, err.message);
				CU_FAIL("y_ case refused");
			}
			CU_ASSERT_EQUAL(err.code, SY_ERR_INVALID_REQUEST);
			CU_ASSERT_EQUAL(strncmp(err.message, "invalid JSON at byte ", 21), 0);
		}
		yes += name[0] == 'y';
		no += name[0] == 'n';
		impl += name[0] == 'i';
		sy_json_doc_free(doc);
		free(text);
	}
	closedir(d);
	/* The suite is all there: 95 y_, 188 n_, 35 i_ cases. */
	CU_ASSERT(yes >= 90 && no >= 180 && impl >= 30);
	fprintf(stderr, "(%d y_ documents cross-checked with json-c) ", jsonc_compared);
	CU_ASSERT(jsonc_compared >= 80);
}

/* ------------------------------------------------------------ structure */

static char *nested(int depth, const char *open, const char *inner, const char *close)
{
	size_t ol = strlen(open), il = strlen(inner), cl = strlen(close);
	char *s = malloc((size_t)depth * (ol + cl) + il + 1);
	char *o = s;
	for (int i = 0; i < depth; i++, o += ol)
		memcpy(o, open, ol);
	memcpy(o, inner, il);
	o += il;
	for (int i = 0; i < depth; i++, o += cl)
		memcpy(o, close, cl);
	*o = '\0';
	return s;
}

static void test_depth(void)
{
	char *s = nested(64, "[", "", "]");
	accepted(s);
	free(s);
	s = nested(65, "[", "", "]");
	expect_refused_at(s, strlen(s), 64);
	free(s);
	s = nested(64, "{\"a\":", "1", "}");
	accepted(s);
	free(s);
	s = nested(65, "{\"a\":", "1", "}");
	expect_refused_at(s, strlen(s), 64 * 5);
	free(s);
	/* 32 arrays + 32 objects = 64 levels, then one more. */
	s = nested(32, "[{\"k\":", "0", "}]");
	accepted(s);
	free(s);
	s = nested(32, "[{\"k\":", "[]", "}]");
	refused(s);
	free(s);
	/* Depth comes back down: many siblings at depth 64 are fine. */
	char *a = nested(63, "[", "[],[],[]", "]");
	accepted(a);
	free(a);
	/* A very deep document fails fast without exhausting the stack. */
	s = nested(200000, "[", "", "]");
	expect_refused_at(s, strlen(s), 64);
	free(s);
}

static void test_duplicates(void)
{
	expect_refused_at("{\"a\":1,\"a\":2}", 13, 7);
	refused("{\"a\":1,\"b\":2,\"a\":3}");
	refused("{\"x\":{\"a\":1,\"a\":1}}");
	refused("[[[{\"x\":[],\"y\":{},\"x\":null}]]]");
	refused("{\"a\":1,\"\\u0061\":2}");        /* same decoded name */
	refused("{\"\\u00e9\":1,\"\xc3\xa9\":2}"); /* escaped vs raw UTF-8 */
	refused("{\"\":1,\"\":2}");
	accepted("{\"a\":1,\"a\\u0000\":2,\"A\":3,\"\":4,\"b\":{\"a\":5}}");
	accepted("[{\"a\":1},{\"a\":2}]");
	/* The same name in sibling objects and at different depths is fine. */
	accepted("{\"a\":{\"a\":{\"a\":1}},\"b\":{\"a\":2}}");
}

static char *big_object(int members, bool dup_at_end)
{
	sy_buf b = SY_BUF_INIT;
	CU_ASSERT_FATAL(sy_buf_putc(&b, '{'));
	for (int i = 0; i < members; i++)
		CU_ASSERT_FATAL(sy_buf_printf(&b, "%s\"member-%d\":%d", i ? "," : "", i, i));
	if (dup_at_end)
		CU_ASSERT_FATAL(sy_buf_printf(&b, ",\"member-%d\":true", members / 3));
	CU_ASSERT_FATAL(sy_buf_putc(&b, '}'));
	return sy_buf_steal(&b, NULL);
}

static void test_big_object(void)
{
	char *ok = big_object(5000, false);
	sy_error err;
	sy_json_doc *doc = parse(ok, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	const sy_json *root = sy_json_doc_root(doc);
	CU_ASSERT_EQUAL(root->u.object.count, 5000);
	CU_ASSERT_STRING_EQUAL(root->u.object.members[4999].key, "member-4999");
	const sy_json *v = sy_json_get(root, "member-1234");
	CU_ASSERT(v != NULL && v->type == SY_JSON_NUMBER && v->u.number.value == 1234);
	sy_json_doc_free(doc);
	sy_free(ok);

	char *bad = big_object(5000, true);
	size_t len = strlen(bad);
	const char *last = strstr(bad, ",\"member-1666\":true");
	CU_ASSERT_PTR_NOT_NULL_FATAL(last);
	expect_refused_at(bad, len, (long)(last - bad) + 1);
	sy_free(bad);

	/* Colliding-length names that differ only at the end, many of them. */
	sy_buf b = SY_BUF_INIT;
	CU_ASSERT_FATAL(sy_buf_putc(&b, '{'));
	for (int i = 0; i < 20000; i++)
		CU_ASSERT_FATAL(sy_buf_printf(&b, "%s\"%08d\":[]", i ? "," : "", i));
	CU_ASSERT_FATAL(sy_buf_puts(&b, ",\"00000000\":[]}"));
	refused(b.data);
	sy_buf_free(&b);
}

/*
 * Names that all land in one bucket of the reader's duplicate index (FNV-1a,
 * table of 1024 slots for 400..512 members), so probing would go quadratic and
 * the reader must switch to sorting. Should the hash change, these are merely
 * ordinary names and the checks below still hold.
 */
static void colliding_names(char names[][16], int n)
{
	int found = 0;
	for (uint32_t i = 0; found < n; i++) {
		char name[16];
		snprintf(name, sizeof(name), "c%07x", (unsigned)i);
		uint32_t h = 2166136261u;
		for (const char *c = name; *c != '\0'; c++) {
			h ^= (unsigned char)*c;
			h *= 16777619u;
		}
		if ((h & 1023) == 0)
			memcpy(names[found++], name, 16);
	}
}

static void test_colliding_names(void)
{
	static char names[450][16];
	colliding_names(names, 450);
	for (int dup = -1; dup < 450; dup += 149) {
		sy_buf b = SY_BUF_INIT;
		CU_ASSERT_FATAL(sy_buf_putc(&b, '{'));
		size_t repeat_at = 0; /* the second occurrence, in document order */
		for (int i = 0; i < 450; i++) {
			if (i == 400 && dup >= 0) {
				if (dup < 400)
					repeat_at = b.len + 1;
				CU_ASSERT_FATAL(sy_buf_printf(&b, ",\"%s\":0", names[dup]));
			}
			if (i == dup && dup >= 400)
				repeat_at = b.len + 1;
			CU_ASSERT_FATAL(
			        sy_buf_printf(&b, "%s\"%s\":%d", i ? "," : "", names[i], i));
		}
		CU_ASSERT_FATAL(sy_buf_putc(&b, '}'));
		if (dup < 0) {
			sy_error err;
			sy_json_doc *doc = parse_n(b.data, b.len, &err);
			CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
			CU_ASSERT_EQUAL(sy_json_doc_root(doc)->u.object.count, 450);
			sy_json_doc_free(doc);
		} else {
			expect_refused_at(b.data, b.len, (long)repeat_at);
		}
		sy_buf_free(&b);
	}
	/* Two repeated names: the earlier repeat is named. */
	sy_buf b = SY_BUF_INIT;
	CU_ASSERT_FATAL(sy_buf_putc(&b, '{'));
	size_t want = 0;
	for (int i = 0; i < 450; i++) {
		if (i == 300)
			want = b.len + 1;
		CU_ASSERT_FATAL(sy_buf_printf(&b, "%s\"%s\":%d", i ? "," : "",
		                              names[i == 300   ? 20
		                                    : i == 310 ? 5
		                                               : i],
		                              i));
	}
	CU_ASSERT_FATAL(sy_buf_putc(&b, '}'));
	expect_refused_at(b.data, b.len, (long)want);
	sy_buf_free(&b);
}

static void test_trailing(void)
{
	accepted(" \t\r\n[1] \t\r\n");
	expect_refused_at("1 2", 3, 2);
	expect_refused_at("{} x", 4, 3);
	expect_refused_at("[]\0", 3, 2);
	expect_refused_at("1 \f", 3, 2); /* form feed is not JSON whitespace */
	expect_refused_at("[1]]", 4, 3);
	expect_refused_at("\xef\xbb\xbf[]", 5, 0); /* no BOM */
	expect_refused_at("", 0, 0);
	expect_refused_at("   ", 3, 3);
	expect_refused_at("[1,2,]", 6, 5);
	expect_refused_at("[1 2]", 5, 3);
	expect_refused_at("{\"a\" 1}", 7, 5);
	expect_refused_at("{\"a\":1,}", 8, 7);
	expect_refused_at("{1:1}", 5, 1);
	expect_refused_at("[", 1, 1);
	expect_refused_at("{\"a\":1", 6, 0);
	expect_refused_at("nul", 3, 0);
	expect_refused_at("[truex]", 7, 5);
	expect_refused_at("\"abc", 4, 0);
	expect_refused_at("1\xc3", 2, 1);
	/* Input need not be NUL-terminated: only text[0..len) is read. */
	sy_error err;
	sy_json_doc *doc = parse_n("[1.5]xyz", 5, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	sy_json_doc_free(doc);
	doc = parse_n("12345", 3, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	CU_ASSERT_EQUAL(sy_json_doc_root(doc)->u.number.value, 123);
	CU_ASSERT_STRING_EQUAL(sy_json_doc_root(doc)->u.number.text, "123");
	sy_json_doc_free(doc);
	doc = parse_n("\"ab\"", 3, &err);
	CU_ASSERT_PTR_NULL(doc);
	doc = sy_json_parse(NULL, 0, &err);
	CU_ASSERT_PTR_NULL(doc);
	CU_ASSERT_EQUAL(err.code, SY_ERR_INVALID_REQUEST);
}

/* ------------------------------------------------------------ strings */

static const sy_json *root_of(sy_json_doc *doc)
{
	return sy_json_doc_root(doc);
}

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

static void test_strings(void)
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

static void test_utf8(void)
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

static void test_numbers(void)
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

static void test_values(void)
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

/* ------------------------------------------------------------ builders */

static void test_builders(void)
{
	sy_json_doc *doc = sy_json_doc_new();
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	CU_ASSERT_PTR_NULL(sy_json_doc_root(doc));
	sy_json *obj = sy_json_new_object(doc);
	sy_json *arr = sy_json_new_array(doc);
	CU_ASSERT_FATAL(obj != NULL && arr != NULL);
	for (int i = 0; i < 1000; i++)
		CU_ASSERT_FATAL(sy_json_array_push(doc, arr, sy_json_new_int(doc, i)));
	CU_ASSERT_EQUAL(arr->u.array.count, 1000);
	for (int i = 0; i < 1000; i++)
		CU_ASSERT_EQUAL(arr->u.array.items[i]->u.number.value, i);
	CU_ASSERT_FATAL(sy_json_object_put(doc, obj, "list", arr));
	CU_ASSERT_FATAL(sy_json_object_put(doc, obj, "null", sy_json_new_null(doc)));
	CU_ASSERT_FATAL(sy_json_object_put(doc, obj, "yes", sy_json_new_bool(doc, true)));
	CU_ASSERT_FATAL(sy_json_object_put(doc, obj, "no", sy_json_new_bool(doc, false)));
	CU_ASSERT_FATAL(sy_json_object_put(doc, obj, "s", sy_json_new_string(doc, "a\0b", 3)));
	CU_ASSERT_FATAL(sy_json_object_put(doc, obj, "c", sy_json_new_cstring(doc, "hi")));
	CU_ASSERT_FATAL(sy_json_object_putn(doc, obj, "k\0z", 3, sy_json_new_double(doc, 0.5)));
	sy_json_doc_set_root(doc, obj);
	CU_ASSERT_PTR_EQUAL(sy_json_doc_root(doc), obj);

	const sy_json *s = sy_json_get(obj, "s");
	CU_ASSERT(s != NULL && s->u.string.len == 3 && memcmp(s->u.string.data, "a\0b", 4) == 0);
	CU_ASSERT_EQUAL(sy_json_get(obj, "yes")->type, SY_JSON_TRUE);
	CU_ASSERT_EQUAL(obj->u.object.members[6].key_len, 3);

	sy_json *i = sy_json_new_int(doc, INT64_MIN);
	CU_ASSERT_STRING_EQUAL(i->u.number.text, "-9223372036854775808");
	CU_ASSERT(i->u.number.is_integer);
	sy_json *d = sy_json_new_double(doc, 0.1);
	CU_ASSERT_STRING_EQUAL(d->u.number.text, "0.1");
	CU_ASSERT(!d->u.number.is_integer);
	d = sy_json_new_double(doc, 3.0);
	CU_ASSERT_STRING_EQUAL(d->u.number.text, "3");
	CU_ASSERT(d->u.number.is_integer);
	d = sy_json_new_double(doc, 1e21);
	CU_ASSERT_STRING_EQUAL(d->u.number.text, "1e+21");
	CU_ASSERT(!d->u.number.is_integer);
	CU_ASSERT_PTR_NULL(sy_json_new_double(doc, NAN));
	CU_ASSERT_PTR_NULL(sy_json_new_double(doc, INFINITY));
	CU_ASSERT_PTR_NULL(sy_json_new_double(doc, -INFINITY));

	/* NULL propagates so a chain needs one check. */
	CU_ASSERT_PTR_NULL(sy_json_new_null(NULL));
	CU_ASSERT_PTR_NULL(sy_json_new_cstring(doc, NULL));
	CU_ASSERT_FALSE(sy_json_array_push(doc, arr, NULL));
	CU_ASSERT_FALSE(sy_json_array_push(doc, obj, sy_json_new_null(doc)));
	CU_ASSERT_FALSE(sy_json_object_put(doc, obj, "x", NULL));
	CU_ASSERT_FALSE(sy_json_object_put(doc, arr, "x", sy_json_new_null(doc)));
	CU_ASSERT_EQUAL(arr->u.array.count, 1000);
	CU_ASSERT_PTR_NULL(sy_json_copy(doc, NULL));

	/* Pushing onto parsed containers (exact-size storage) and deep copies. */
	sy_error err;
	sy_json_doc *parsed = parse("{\"a\":[1,2,3],\"b\":{\"x\":\"y\"},\"c\":1.50}", &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(parsed);
	sy_json *copy = sy_json_copy(doc, sy_json_doc_root(parsed));
	CU_ASSERT_PTR_NOT_NULL_FATAL(copy);
	sy_json *pa = (sy_json *)sy_json_get(sy_json_doc_root(parsed), "a");
	for (int k = 0; k < 10; k++)
		CU_ASSERT_FATAL(sy_json_array_push(parsed, pa, sy_json_new_int(parsed, 10 + k)));
	CU_ASSERT_EQUAL(pa->u.array.count, 13);
	CU_ASSERT_EQUAL(pa->u.array.items[2]->u.number.value, 3);
	CU_ASSERT_EQUAL(pa->u.array.items[12]->u.number.value, 19);
	sy_json *pb = (sy_json *)sy_json_get(sy_json_doc_root(parsed), "b");
	CU_ASSERT_FATAL(sy_json_object_put(parsed, pb, "z", sy_json_new_null(parsed)));
	CU_ASSERT_EQUAL(pb->u.object.count, 2);
	sy_json_doc_free(parsed);
	/* The copy survives its source. */
	CU_ASSERT_EQUAL(sy_json_get(copy, "a")->u.array.count, 3);
	CU_ASSERT_STRING_EQUAL(sy_json_get(sy_json_get(copy, "b"), "x")->u.string.data, "y");
	CU_ASSERT_STRING_EQUAL(sy_json_get(copy, "c")->u.number.text, "1.50");
	CU_ASSERT_FALSE(sy_json_get(copy, "c")->u.number.is_integer);

	/* A hand-made container (capacity 0) grows into the arena. */
	sy_json *items[2] = {sy_json_new_int(doc, 1), sy_json_new_int(doc, 2)};
	sy_json hand = {.type = SY_JSON_ARRAY, .u.array = {items, 2, 0}};
	CU_ASSERT_FATAL(sy_json_array_push(doc, &hand, sy_json_new_int(doc, 3)));
	CU_ASSERT_EQUAL(hand.u.array.count, 3);
	CU_ASSERT_PTR_NOT_EQUAL(hand.u.array.items, items);
	CU_ASSERT_EQUAL(hand.u.array.items[1]->u.number.value, 2);

	/* A hand-made number without text copies with a text of its own. */
	sy_json bare = {.type = SY_JSON_NUMBER};
	bare.u.number.value = 2.5;
	sy_json *bc = sy_json_copy(doc, &bare);
	CU_ASSERT(bc != NULL && bc->u.number.value == 2.5 &&
	          strcmp(bc->u.number.text, "2.5") == 0 && bc->u.number.text_len == 3);

	void *p = sy_json_doc_alloc(doc, 100);
	CU_ASSERT_PTR_NOT_NULL(p);
	CU_ASSERT_EQUAL((uintptr_t)p % _Alignof(max_align_t), 0);
	memset(p, 1, 100);
	p = sy_json_doc_alloc(doc, 1 << 20);
	CU_ASSERT_PTR_NOT_NULL(p);
	memset(p, 2, 1 << 20);
	CU_ASSERT_PTR_NULL(sy_json_doc_alloc(NULL, 1));
	sy_json_doc_free(doc);
}

/* ------------------------------------------------------------ failing allocations */

static long alloc_count, alloc_fail_at, alloc_live;

static void *counting_malloc(size_t n)
{
	if (++alloc_count == alloc_fail_at)
		return NULL;
	void *p = malloc(n);
	if (p != NULL)
		alloc_live++;
	return p;
}

static void *counting_realloc(void *p, size_t n)
{
	if (++alloc_count == alloc_fail_at)
		return NULL;
	void *q = realloc(p, n);
	if (q != NULL && p == NULL)
		alloc_live++;
	return q;
}

static void counting_free(void *p)
{
	if (p != NULL)
		alloc_live--;
	free(p);
}

static const sy_allocator counting = {counting_malloc, counting_realloc, counting_free};

/* A document that needs several arena chunks and scratch growth. */
static char *nontrivial_document(void)
{
	sy_buf b = SY_BUF_INIT;
	CU_ASSERT_FATAL(sy_buf_puts(&b, "{\"rows\":["));
	for (int i = 0; i < 400; i++)
		CU_ASSERT_FATAL(sy_buf_printf(
		        &b,
		        "%s{\"id\":%d,\"name\":\"n\\u00e9%d\",\"v\":[%d.5,1e%d,true,null,{}],"
		        "\"deep\":[[[{\"k\":\"\\ud83d\\ude00\"}]]],\"a\":1,\"b\":2,\"c\":3,\"d\":4,"
		        "\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9,\"j\":10,\"k\":11,\"l\":12,\"m\":"
		        "13}",
		        i ? "," : "", i, i, i, i % 300));
	CU_ASSERT_FATAL(sy_buf_printf(&b, "],\"big\":\"%0*d\",\"colliding\":{", 5000, 7));
	static char names[420][16];
	colliding_names(names, 420); /* the sorting check allocates too */
	for (int i = 0; i < 420; i++)
		CU_ASSERT_FATAL(sy_buf_printf(&b, "%s\"%s\":%d", i ? "," : "", names[i], i));
	CU_ASSERT_FATAL(sy_buf_puts(&b, "}}"));
	return sy_buf_steal(&b, NULL);
}

static void test_alloc_failure(void)
{
	char *text = nontrivial_document();
	size_t len = strlen(text);
	bool done = false;
	long n;
	for (n = 1; n < 100000 && !done; n++) {
		alloc_count = 0;
		alloc_live = 0;
		alloc_fail_at = n;
		sy_set_allocator(&counting);
		sy_error err;
		sy_error_clear(&err);
		sy_json_doc *doc = sy_json_parse(text, len, &err);
		if (doc != NULL) {
			done = true;
			CU_ASSERT(alloc_count < n); /* it succeeded because nothing failed */
			CU_ASSERT_EQUAL(sy_json_get(sy_json_doc_root(doc), "rows")->u.array.count,
			                400);
		} else {
			CU_ASSERT_EQUAL(err.code, SY_ERR_NOMEM);
		}
		sy_json_doc_free(doc);
		sy_set_allocator(NULL);
		if (alloc_live != 0) {
			fprintf(stderr, "\n  failing allocation %ld leaks %ld blocks\n", n,
			        alloc_live);
			CU_FAIL("leak after a failed allocation");
		}
	}
	CU_ASSERT(done);
	CU_ASSERT(n > 5); /* the document really needed several allocations */

	/* The builders: every failure is a NULL / false, never a crash. */
	done = false;
	for (n = 1; n < 10000 && !done; n++) {
		alloc_count = 0;
		alloc_live = 0;
		alloc_fail_at = n;
		sy_set_allocator(&counting);
		sy_json_doc *doc = sy_json_doc_new();
		sy_json *obj = sy_json_new_object(doc);
		bool ok = obj != NULL;
		for (int i = 0; i < 300 && ok; i++) {
			char key[32];
			snprintf(key, sizeof(key), "key-%d", i);
			sy_json *a = sy_json_new_array(doc);
			ok = sy_json_array_push(doc, a, sy_json_new_cstring(doc, key)) &&
			     sy_json_array_push(doc, a, sy_json_new_double(doc, i / 7.0)) &&
			     sy_json_object_put(doc, obj, key, a);
		}
		sy_json *c = ok ? sy_json_copy(doc, obj) : NULL;
		done = ok && c != NULL;
		sy_json_doc_free(doc);
		sy_set_allocator(NULL);
		CU_ASSERT_EQUAL(alloc_live, 0);
	}
	CU_ASSERT(done);
	free(text);
}

/* ------------------------------------------------------------ locale */

/* The library never calls setlocale, but a host program might: a locale whose
 * decimal point is ',' must not change what numbers read or write. Runs where
 * such a locale is installed (e.g. LOCPATH pointing at a localedef output). */
static void test_locale(void)
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

/* ------------------------------------------------------------ main */

int main(void)
{
	static const CU_TestInfo core[] = {
	        {"depth", test_depth},
	        {"duplicates", test_duplicates},
	        {"big object", test_big_object},
	        {"colliding member names", test_colliding_names},
	        {"trailing data and offsets", test_trailing},
	        {"strings", test_strings},
	        {"utf-8", test_utf8},
	        {"numbers", test_numbers},
	        {"values", test_values},
	        {"builders", test_builders},
	        {"failing allocations", test_alloc_failure},
	        {"decimal comma locale", test_locale},
	        {NULL, NULL},
	};
	static const CU_TestInfo data[] = {
	        {"JSONTestSuite", test_jsontestsuite},
	        {NULL, NULL},
	};
	sy_test_add_suite("json", core);
	if (sy_test_data_dir() != NULL)
		sy_test_add_suite("json-testdata", data);
	else
		fprintf(stderr, "SYNCHRO_TESTDATA absent: JSONTestSuite not run\n");
	return sy_test_run();
}
