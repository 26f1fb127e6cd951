/* SPDX-License-Identifier: BSD-2-Clause */
/* The reader's structure: JSONTestSuite against json-c, depth, duplicate and
 * colliding member names, big objects, trailing data and error offsets. */
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

/* ------------------------------------------------------------ JSONTestSuite */

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
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

void test_jsontestsuite(void)
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

void test_depth(void)
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

void test_duplicates(void)
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

void test_big_object(void)
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
void colliding_names(char names[][16], int n)
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

void test_colliding_names(void)
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

void test_trailing(void)
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
