/* SPDX-License-Identifier: BSD-2-Clause */
/* Push structural validation: every 400 rule (negative vectors and limits), the parsed form. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/buf.h"
#include "synchro/jcs.h"
#include "synchro/manifest.h"
#include "synchro/push.h"
#include "synchro/types.h"
#include "testutil.h"

#define CLIENT "0b7e7c52-3f4a-4d2e-9a61-5c0f1e2d3b4a"
#define BATCH  "5d1c9f3e-8a7b-4c6d-b2e1-0f9a8b7c6d5e"
#define H8     "8b1a9953c4611296a827abf8c47804d7e6c49c6b7c6d5f4e3a2b1c0d9e8f7a6b"
#define ENVELOPE                                                                                   \
	"\"client_id\":\"" CLIENT "\",\"client_generation\":12,\"batch_id\":\"" BATCH "\","        \
	"\"schema\":{\"version\":8,\"hash\":\"" H8 "\"}"
#define CV "2026-07-18T09:15:00.123Z"

static char *read_in(const char *dir, const char *name, const char *suffix, size_t *len)
{
	char path[8192];
	int n = snprintf(path, sizeof path, "%s/%s%s", dir, name, suffix);
	if (n < 0 || (size_t)n >= sizeof path)
		return NULL;
	char *text = sy_test_read_file(path, len);
	if (text == NULL)
		fprintf(stderr, "cannot read %s\n", path);
	return text;
}

static sy_push_request *parse_str(const char *body, sy_error *err)
{
	sy_error_clear(err);
	return sy_push_parse(body, strlen(body), err);
}

/* Asserts body is refused with exactly message. */
static void refused(const char *body, size_t len, const char *message)
{
	sy_error err;
	sy_error_clear(&err);
	sy_push_request *req = sy_push_parse(body, len, &err);
	CU_ASSERT_PTR_NULL(req);
	sy_push_request_free(req);
	CU_ASSERT_EQUAL(err.code, SY_ERR_INVALID_REQUEST);
	if (strcmp(err.message, message) != 0) {
		fprintf(stderr, "\n  expected: %s\n  got:      %s\n", message, err.message);
		CU_FAIL("message differs");
	}
}

static void test_invalid_vectors(void)
{
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/tests/vectors/push/invalid", sy_test_src_dir());
	size_t n;
	char **names = sy_test_list_files(dir, ".json", &n);
	/* one per rule: keep in step with gen.py */
	CU_ASSERT(n >= 78);
	for (size_t i = 0; i < n; i++) {
		size_t len, mlen;
		char *body = read_in(dir, names[i], ".json", &len);
		char *msg = read_in(dir, names[i], ".message", &mlen);
		CU_ASSERT_PTR_NOT_NULL_FATAL(body);
		CU_ASSERT_PTR_NOT_NULL_FATAL(msg);
		refused(body, len, msg);
		free(body);
		free(msg);
	}
	sy_test_free_names(names, n);
}

static void test_valid_vectors(void)
{
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/tests/vectors/push", sy_test_src_dir());
	size_t n;
	char **names = sy_test_list_files(dir, ".json", &n);
	CU_ASSERT(n >= 14);
	for (size_t i = 0; i < n; i++) {
		size_t len;
		char *body = read_in(dir, names[i], ".json", &len);
		CU_ASSERT_PTR_NOT_NULL_FATAL(body);
		sy_error err;
		sy_error_clear(&err);
		sy_push_request *req = sy_push_parse(body, len, &err);
		if (req == NULL)
			fprintf(stderr, "\n  %s: %s\n", names[i], err.message);
		CU_ASSERT_PTR_NOT_NULL(req);
		sy_push_request_free(req);
		free(body);
	}
	sy_test_free_names(names, n);
}

static void test_parsed_form(void)
{
	static const char body[] =
	        "{" ENVELOPE ",\"atomic\":true,\"mutations\":["
	        "{\"mutation_id\":\"11111111-1111-4111-8111-111111111111\",\"table\":\"todo\","
	        "\"pk\":{\"field\":\"id\",\"value\":\"a0a0a0a0-0000-4000-8000-000000000001\"},"
	        "\"authored_schema\":{\"version\":7,\"hash\":\"" H8 "\"},\"operation\":\"update\","
	        "\"base_version\":\"v 1\",\"client_version\":\"" CV "\","
	        "\"columns\":{\"\\ud83d\\ude00\":1,\"\\ufb33\":2,\"b\":null,\"a\":[1.50]}},"
	        "{\"mutation_id\":\"22222222-2222-4222-8222-222222222222\",\"table\":\"item\","
	        "\"pk\":{\"field\":\"id\",\"value\":\"42\"},"
	        "\"authored_schema\":{\"version\":8,\"hash\":\"" H8 "\"},\"operation\":\"delete\","
	        "\"base_version\":\"x\",\"client_version\":\"" CV "\"},"
	        "{\"mutation_id\":\"33333333-3333-4333-8333-333333333333\",\"table\":\"item\","
	        "\"pk\":{\"field\":\"id\",\"value\":42},"
	        "\"authored_schema\":{\"version\":8,\"hash\":\"" H8 "\"},\"operation\":\"insert\","
	        "\"client_version\":\"" CV "\",\"columns\":{}}]}";
	sy_error err;
	sy_push_request *req = parse_str(body, &err);
	if (req == NULL)
		fprintf(stderr, "\n  %s\n", err.message);
	CU_ASSERT_PTR_NOT_NULL_FATAL(req);
	CU_ASSERT_STRING_EQUAL(req->client_id, CLIENT);
	CU_ASSERT_STRING_EQUAL(req->batch_id, BATCH);
	CU_ASSERT_EQUAL(req->client_generation, 12);
	CU_ASSERT_EQUAL(req->schema.version, 8);
	CU_ASSERT_STRING_EQUAL(req->schema.hash, H8);
	CU_ASSERT_TRUE(req->atomic);
	CU_ASSERT_EQUAL_FATAL(req->mutation_count, 3);

	const sy_mutation *m = &req->mutations[0];
	CU_ASSERT_EQUAL(m->ordinal, 0);
	CU_ASSERT_STRING_EQUAL(m->mutation_id, "11111111-1111-4111-8111-111111111111");
	CU_ASSERT_EQUAL(m->table_len, 4);
	CU_ASSERT_NSTRING_EQUAL(m->table_id, "todo", 4);
	CU_ASSERT_NSTRING_EQUAL(m->pk_field, "id", 2);
	CU_ASSERT_EQUAL(m->pk_value->type, SY_JSON_STRING);
	CU_ASSERT_EQUAL(m->authored_schema.version, 7);
	CU_ASSERT_EQUAL(m->op, SY_OP_UPDATE);
	CU_ASSERT_EQUAL(m->base_len, 3);
	CU_ASSERT_NSTRING_EQUAL(m->base_version, "v 1", 3);
	CU_ASSERT_EQUAL(m->client_version_len, strlen(CV));
	CU_ASSERT_TRUE(m->has_columns);
	CU_ASSERT_EQUAL_FATAL(m->column_count, 4);
	/* unsigned UTF-8 byte order: a, b, U+FB33 (EF AC B3), U+1F600 (F0 9F 98 80) */
	CU_ASSERT_NSTRING_EQUAL(m->columns[0].field_id, "a", 2);
	CU_ASSERT_NSTRING_EQUAL(m->columns[1].field_id, "b", 2);
	CU_ASSERT_NSTRING_EQUAL(m->columns[2].field_id, "\xef\xac\xb3", 4);
	CU_ASSERT_NSTRING_EQUAL(m->columns[3].field_id, "\xf0\x9f\x98\x80", 5);
	CU_ASSERT_EQUAL(m->columns[1].value->type, SY_JSON_NULL);
	CU_ASSERT_STRING_EQUAL(m->pk_canonical,
	                       "[\"id\",\"a0a0a0a0-0000-4000-8000-000000000001\"]");
	CU_ASSERT_EQUAL(m->pk_canonical_len, strlen(m->pk_canonical));
	CU_ASSERT_STRING_EQUAL(
	        m->normalized,
	        "[\"mutation-v1\",\"11111111-1111-4111-8111-111111111111\",\"todo\","
	        "[\"id\",\"a0a0a0a0-0000-4000-8000-000000000001\"],[\"7\",\"" H8 "\"],\"update\","
	        "[1,\"v 1\"],\"" CV "\",[1,[[\"a\",[1.5]],[\"b\",null],[\"\xef\xac\xb3\",2],"
	        "[\"\xf0\x9f\x98\x80\",1]]]]");
	CU_ASSERT_EQUAL(m->normalized_len, strlen(m->normalized));

	m = &req->mutations[1];
	CU_ASSERT_EQUAL(m->ordinal, 1);
	CU_ASSERT_EQUAL(m->op, SY_OP_DELETE);
	CU_ASSERT_FALSE(m->has_columns);
	CU_ASSERT_EQUAL(m->column_count, 0);
	CU_ASSERT_PTR_NULL(m->columns);
	CU_ASSERT_STRING_EQUAL(m->pk_canonical, "[\"id\",\"42\"]");
	CU_ASSERT_PTR_NOT_NULL(strstr(m->normalized, ",\"delete\",[1,\"x\"],\"" CV "\",[0]]"));

	/* the pk 42 (number) and "42" (string) are different canonical pks */
	m = &req->mutations[2];
	CU_ASSERT_EQUAL(m->op, SY_OP_INSERT);
	CU_ASSERT_PTR_NULL(m->base_version);
	CU_ASSERT_TRUE(m->has_columns);
	CU_ASSERT_EQUAL(m->column_count, 0);
	CU_ASSERT_STRING_EQUAL(m->pk_canonical, "[\"id\",42]");
	CU_ASSERT_PTR_NOT_NULL(strstr(m->normalized, ",\"insert\",[0],\"" CV "\",[1,[]]]"));

	sy_push_request_free(req);
	sy_push_request_free(NULL);
}

static void test_op_names(void)
{
	CU_ASSERT_STRING_EQUAL(sy_op_name(SY_OP_INSERT), "insert");
	CU_ASSERT_STRING_EQUAL(sy_op_name(SY_OP_UPDATE), "update");
	CU_ASSERT_STRING_EQUAL(sy_op_name(SY_OP_DELETE), "delete");
}

/* A mutation object with mutation_id number k (a valid UUID) and the given tail members. */
static void put_mutation(sy_buf *b, unsigned k, const char *table, const char *pk, const char *tail)
{
	CU_ASSERT_TRUE(sy_buf_printf(
	        b,
	        "{\"mutation_id\":\"%08x-0000-4000-8000-000000000000\",\"table\":\"%s\","
	        "\"pk\":{\"field\":\"id\",\"value\":%s},"
	        "\"authored_schema\":{\"version\":8,\"hash\":\"" H8 "\"},"
	        "\"client_version\":\"" CV "\",%s}",
	        k + 1, table, pk, tail));
}

/* A request of n inserts into distinct rows, plus extra members before the array. */
static char *many(size_t n, const char *extra)
{
	sy_buf b = SY_BUF_INIT;
	CU_ASSERT_TRUE(sy_buf_printf(&b, "{" ENVELOPE "%s,\"mutations\":[", extra));
	for (size_t i = 0; i < n; i++) {
		char pk[32];
		snprintf(pk, sizeof pk, "\"%zu\"", i);
		if (i > 0)
			CU_ASSERT_TRUE(sy_buf_putc(&b, ','));
		put_mutation(&b, (unsigned)i, "item", pk,
		             "\"operation\":\"insert\",\"columns\":{}");
	}
	CU_ASSERT_TRUE(sy_buf_puts(&b, "]}"));
	return sy_buf_steal(&b, NULL);
}

static void test_mutation_count_limits(void)
{
	sy_error err;
	char *body = many(SY_PUSH_MAX_MUTATIONS, ",\"atomic\":true");
	sy_push_request *req = parse_str(body, &err);
	CU_ASSERT_PTR_NOT_NULL(req);
	if (req != NULL)
		CU_ASSERT_EQUAL(req->mutation_count, 1000);
	sy_push_request_free(req);
	sy_free(body);

	body = many(SY_PUSH_MAX_MUTATIONS + 1, "");
	refused(body, strlen(body), "mutations: must hold 1 to 1000 mutations");
	sy_free(body);
}

/* The first repetition in request order is reported, whatever the sort did. */
static void test_duplicate_ids(void)
{
	sy_buf b = SY_BUF_INIT;
	static const unsigned ids[] = {7, 3, 9, 3, 7, 9};
	CU_ASSERT_TRUE(sy_buf_puts(&b, "{" ENVELOPE ",\"mutations\":["));
	for (size_t i = 0; i < 6; i++) {
		char pk[16];
		snprintf(pk, sizeof pk, "%zu", i);
		if (i > 0)
			CU_ASSERT_TRUE(sy_buf_putc(&b, ','));
		put_mutation(&b, ids[i], "item", pk, "\"operation\":\"insert\",\"columns\":{}");
	}
	CU_ASSERT_TRUE(sy_buf_puts(&b, "]}"));
	refused(b.data, b.len, "mutations[3].mutation_id: duplicates mutations[1]");
	sy_buf_free(&b);

	/* 1000 mutations, the only repeat at the end: found without O(n^2) */
	char *body = many(SY_PUSH_MAX_MUTATIONS, "");
	char *last = strstr(body, "000003e8-0000"); /* mutation 999 has id 1000 = 0x3e8 */
	CU_ASSERT_PTR_NOT_NULL_FATAL(last);
	memcpy(last, "000001f5", 8); /* id 501: mutation 500 */
	refused(body, strlen(body), "mutations[999].mutation_id: duplicates mutations[500]");
	sy_free(body);
}

/* Repeating a row is an atomic-only rule; the canonical pk decides what "the same" is. */
static void test_repeated_rows(void)
{
	sy_buf b = SY_BUF_INIT;
	const char *pks[] = {"42", "\"42\"", "4.2e1", "\"a\""};
	for (int atomic = 0; atomic < 2; atomic++) {
		sy_buf_reset(&b);
		CU_ASSERT_TRUE(sy_buf_printf(&b, "{" ENVELOPE "%s,\"mutations\":[",
		                             atomic ? ",\"atomic\":true" : ""));
		for (unsigned i = 0; i < 4; i++) {
			if (i > 0)
				CU_ASSERT_TRUE(sy_buf_putc(&b, ','));
			put_mutation(&b, i, "item", pks[i],
			             "\"operation\":\"insert\",\"columns\":{}");
		}
		CU_ASSERT_TRUE(sy_buf_puts(&b, "]}"));
		if (atomic) {
			refused(b.data, b.len,
			        "mutations[2]: atomic request repeats the table and pk of "
			        "mutations[0]");
		} else {
			sy_error err;
			sy_push_request *req = sy_push_parse(b.data, b.len, &err);
			CU_ASSERT_PTR_NOT_NULL(req);
			sy_push_request_free(req);
		}
	}
	/* the same pk in another table is another row */
	sy_buf_reset(&b);
	CU_ASSERT_TRUE(sy_buf_puts(&b, "{" ENVELOPE ",\"atomic\":true,\"mutations\":["));
	put_mutation(&b, 0, "item", "1", "\"operation\":\"insert\",\"columns\":{}");
	CU_ASSERT_TRUE(sy_buf_putc(&b, ','));
	put_mutation(&b, 1, "item2", "1", "\"operation\":\"insert\",\"columns\":{}");
	CU_ASSERT_TRUE(sy_buf_puts(&b, "]}"));
	sy_error err;
	sy_push_request *req = sy_push_parse(b.data, b.len, &err);
	CU_ASSERT_PTR_NOT_NULL(req);
	sy_push_request_free(req);
	sy_buf_free(&b);
}

static void test_column_limit(void)
{
	for (int n = 256; n <= 257; n++) {
		sy_buf cols = SY_BUF_INIT, b = SY_BUF_INIT;
		CU_ASSERT_TRUE(sy_buf_puts(&cols, "\"operation\":\"insert\",\"columns\":{"));
		for (int i = 0; i < n; i++)
			CU_ASSERT_TRUE(sy_buf_printf(&cols, "%s\"c%d\":%d", i ? "," : "", i, i));
		CU_ASSERT_TRUE(sy_buf_puts(&cols, "}"));
		CU_ASSERT_TRUE(sy_buf_puts(&b, "{" ENVELOPE ",\"mutations\":["));
		put_mutation(&b, 0, "item", "1", cols.data);
		CU_ASSERT_TRUE(sy_buf_puts(&b, "]}"));
		if (n == 256) {
			sy_error err;
			sy_push_request *req = sy_push_parse(b.data, b.len, &err);
			CU_ASSERT_PTR_NOT_NULL(req);
			if (req != NULL)
				CU_ASSERT_EQUAL(req->mutations[0].column_count, 256);
			sy_push_request_free(req);
		} else {
			refused(b.data, b.len, "mutations[0].columns: more than 256 columns");
		}
		sy_buf_free(&cols);
		sy_buf_free(&b);
	}
}

/* One mutation whose column "t" holds fill octets of 'a'. */
static char *filled(size_t fill)
{
	sy_buf b = SY_BUF_INIT, tail = SY_BUF_INIT;
	CU_ASSERT_TRUE(sy_buf_puts(&tail, "\"operation\":\"insert\",\"columns\":{\"t\":\""));
	CU_ASSERT_TRUE(sy_buf_reserve(&tail, fill));
	memset(tail.data + tail.len, 'a', fill);
	tail.len += fill;
	CU_ASSERT_TRUE(sy_buf_puts(&tail, "\"}"));
	CU_ASSERT_TRUE(sy_buf_puts(&b, "{" ENVELOPE ",\"mutations\":["));
	put_mutation(&b, 0, "item", "1", tail.data);
	CU_ASSERT_TRUE(sy_buf_puts(&b, "]}"));
	sy_buf_free(&tail);
	return sy_buf_steal(&b, NULL);
}

static void test_normalized_limit(void)
{
	sy_error err;
	char *body = filled(0);
	sy_push_request *req = parse_str(body, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(req);
	size_t base = req->mutations[0].normalized_len;
	sy_push_request_free(req);
	sy_free(body);

	body = filled(SY_PUSH_MAX_MUTATION - base);
	req = parse_str(body, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(req);
	CU_ASSERT_EQUAL(req->mutations[0].normalized_len, SY_PUSH_MAX_MUTATION);
	sy_push_request_free(req);
	sy_free(body);

	body = filled(SY_PUSH_MAX_MUTATION - base + 1);
	refused(body, strlen(body), "mutations[0]: normalized mutation exceeds 65536 octets");
	sy_free(body);
}

/* A body of insert mutations on item whose column k holds `numbers` copies of 1e20:
 * 4 octets raw, 21 in JCS, the most a token grows. */
static void numbers_body(sy_buf *b, unsigned mutations, int numbers)
{
	sy_buf tail = SY_BUF_INIT;
	CU_ASSERT_TRUE(sy_buf_puts(&tail, "\"operation\":\"insert\",\"columns\":{\"k\":["));
	for (int i = 0; i < numbers; i++)
		CU_ASSERT_TRUE(sy_buf_puts(&tail, i ? ",1e20" : "1e20"));
	CU_ASSERT_TRUE(sy_buf_puts(&tail, "]}"));
	CU_ASSERT_TRUE(sy_buf_puts(b, "{" ENVELOPE ",\"mutations\":["));
	for (unsigned i = 0; i < mutations; i++) {
		char pk[16];
		snprintf(pk, sizeof pk, "%u", i);
		if (i > 0)
			CU_ASSERT_TRUE(sy_buf_putc(b, ','));
		put_mutation(b, i, "item", pk, tail.data);
	}
	CU_ASSERT_TRUE(sy_buf_puts(b, "]}"));
	sy_buf_free(&tail);
}

static void test_body_limits(void)
{
	/* refused before parsing: whitespace that would otherwise be a parse error */
	size_t n = SY_PUSH_MAX_BODY + 1;
	char *body = malloc(n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(body);
	memset(body, ' ', n);
	refused(body, n, "(root): request body exceeds 1048576 octets");
	/* exactly the limit is parsed (and here refused by the reader) */
	sy_error err;
	sy_error_clear(&err);
	CU_ASSERT_PTR_NULL(sy_push_parse(body, n - 1, &err));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "invalid JSON"));
	free(body);

	/*
	 * A raw body within the limit whose JCS form exceeds it: 1e20 is 4 octets
	 * raw and 21 in JCS. 20 mutations of 2500 such numbers: about 250 KB raw,
	 * 1.1 MB canonical, each normalized mutation under 64 KiB.
	 */
	sy_buf b = SY_BUF_INIT;
	numbers_body(&b, 20, 2500);
	CU_ASSERT(b.len < SY_PUSH_MAX_BODY);
	refused(b.data, b.len, "(root): canonical request exceeds 1048576 octets");
	sy_buf_free(&b);

	/*
	 * sy_push_parse measures the canonical form only above a sixth of the limit: the
	 * densest growth (a body of nothing but 1e20) stays within six times the raw size.
	 */
	sy_buf d = SY_BUF_INIT, canon = SY_BUF_INIT;
	numbers_body(&d, 16, 2000);
	CU_ASSERT(d.len <= SY_PUSH_MAX_BODY / 6);
	sy_push_request *req = sy_push_parse(d.data, d.len, &err);
	CU_ASSERT_PTR_NOT_NULL(req);
	if (req != NULL) {
		CU_ASSERT_TRUE(sy_jcs_write(&canon, sy_json_doc_root(req->doc), &err));
		CU_ASSERT(canon.len > 4 * d.len && canon.len <= 6 * d.len);
		CU_ASSERT(canon.len <= SY_PUSH_MAX_BODY);
	}
	sy_push_request_free(req);
	sy_buf_free(&canon);
	sy_buf_free(&d);
}

/*
 * Above a sixth of the limit the form is written only when the body's numbers could make
 * it exceed the limit (each grows by less than SY_JCS_NUMBER_MAX octets, nothing else
 * grows): the bound holds for the densest growth, a body of few numbers is accepted
 * unwritten, and a number that overflows still gets the writer's refusal.
 */
static void test_canonical_bound(void)
{
	sy_error err;
	sy_buf d = SY_BUF_INIT, canon = SY_BUF_INIT;
	numbers_body(&d, 16, 2000);
	sy_push_request *req = sy_push_parse(d.data, d.len, &err);
	CU_ASSERT_PTR_NOT_NULL(req);
	if (req != NULL) {
		CU_ASSERT_TRUE(sy_jcs_write(&canon, sy_json_doc_root(req->doc), &err));
		CU_ASSERT(canon.len <= d.len + (size_t)16 * 2000 * SY_JCS_NUMBER_MAX);
	}
	sy_push_request_free(req);
	sy_buf_free(&canon);
	sy_buf_free(&d);

	/* 10 mutations of a 30,000-octet string and one number each: about 300 KB */
	for (int overflow = 0; overflow <= 1; overflow++) {
		sy_buf o = SY_BUF_INIT, tail = SY_BUF_INIT;
		CU_ASSERT_TRUE(sy_buf_printf(
		        &tail, "\"operation\":\"insert\",\"columns\":{\"n\":%s,\"t\":\"",
		        overflow ? "1e999" : "1e20"));
		CU_ASSERT_TRUE(sy_buf_reserve(&tail, 30000));
		memset(tail.data + tail.len, 'a', 30000);
		tail.len += 30000;
		CU_ASSERT_TRUE(sy_buf_puts(&tail, "\"}"));
		CU_ASSERT_TRUE(sy_buf_puts(&o, "{" ENVELOPE ",\"mutations\":["));
		for (unsigned i = 0; i < 10; i++) {
			char pk[16];
			snprintf(pk, sizeof pk, "%u", i);
			if (i > 0)
				CU_ASSERT_TRUE(sy_buf_putc(&o, ','));
			put_mutation(&o, i, "item", pk, tail.data);
		}
		CU_ASSERT_TRUE(sy_buf_puts(&o, "]}"));
		CU_ASSERT(o.len > SY_PUSH_MAX_BODY / 6);
		sy_error_clear(&err);
		req = sy_push_parse(o.data, o.len, &err);
		if (overflow) {
			CU_ASSERT_PTR_NULL(req);
			CU_ASSERT_EQUAL(err.code, SY_ERR_INVALID_REQUEST);
			CU_ASSERT_STRING_EQUAL(err.message,
			                       "mutations[0].columns[\"n\"]: number out of range");
		} else {
			CU_ASSERT_PTR_NOT_NULL(req);
		}
		sy_push_request_free(req);
		sy_buf_free(&tail);
		sy_buf_free(&o);
	}
}

/* A compact request without escapes has raw length == JCS length: fill it to the limit. */
static void test_canonical_boundary(void)
{
	sy_error err;
	char *body = filled(0);
	size_t base = strlen(body);
	sy_free(body);
	/* 17 mutations of up to 64 KiB each reach 1 MiB; spread the fill over them */
	const unsigned count = 17;
	for (size_t extra = 0; extra <= 1; extra++) {
		sy_buf b = SY_BUF_INIT;
		size_t per_mutation = base - strlen("{" ENVELOPE ",\"mutations\":[]}");
		size_t total = strlen("{" ENVELOPE ",\"mutations\":[]}") + count * per_mutation +
		               (count - 1);
		size_t fill = SY_PUSH_MAX_BODY + extra - total;
		CU_ASSERT_TRUE(sy_buf_puts(&b, "{" ENVELOPE ",\"mutations\":["));
		for (unsigned i = 0; i < count; i++) {
			size_t f = fill / count + (i < fill % count ? 1 : 0);
			sy_buf tail = SY_BUF_INIT;
			CU_ASSERT_TRUE(sy_buf_puts(
			        &tail, "\"operation\":\"insert\",\"columns\":{\"t\":\""));
			CU_ASSERT_TRUE(sy_buf_reserve(&tail, f));
			memset(tail.data + tail.len, 'a', f);
			tail.len += f;
			CU_ASSERT_TRUE(sy_buf_puts(&tail, "\"}"));
			if (i > 0)
				CU_ASSERT_TRUE(sy_buf_putc(&b, ','));
			/* same width as mutation 0's pk "1": one digit */
			char pk[4];
			snprintf(pk, sizeof pk, "%u", i % 10);
			put_mutation(&b, i, "item", pk, tail.data);
			sy_buf_free(&tail);
		}
		CU_ASSERT_TRUE(sy_buf_puts(&b, "]}"));
		if (extra == 0) {
			CU_ASSERT_EQUAL(b.len, SY_PUSH_MAX_BODY);
			sy_push_request *req = sy_push_parse(b.data, b.len, &err);
			if (req == NULL)
				fprintf(stderr, "\n  %s\n", err.message);
			CU_ASSERT_PTR_NOT_NULL(req);
			if (req != NULL) {
				sy_buf c = SY_BUF_INIT;
				CU_ASSERT_TRUE(sy_jcs_write(&c, sy_json_doc_root(req->doc), &err));
				CU_ASSERT_EQUAL(c.len, SY_PUSH_MAX_BODY);
				sy_buf_free(&c);
			}
			sy_push_request_free(req);
		} else {
			/* one octet more is a raw-size refusal, before any parsing */
			CU_ASSERT_EQUAL(b.len, SY_PUSH_MAX_BODY + 1);
			refused(b.data, b.len, "(root): request body exceeds 1048576 octets");
		}
		sy_buf_free(&b);
	}
}

static sy_manifest *example_manifest(void)
{
	char path[4096];
	size_t len;
	snprintf(path, sizeof path, "%s/tests/vectors/manifests/example.json", sy_test_src_dir());
	char *text = sy_test_read_file(path, &len);
	if (text == NULL)
		return NULL;
	sy_error err;
	sy_manifest *m = sy_manifest_parse(text, len, &err);
	if (m == NULL)
		fprintf(stderr, "\n  example manifest: %s\n", err.message);
	free(text);
	return m;
}

/*
 * The pk of a mutation against the example manifest (todo: uuid "id", item:
 * int64 "id"): message NULL for accepted, "pk.value" for a refused value.
 */
static void schema_case(const sy_manifest *cur, const char *table, const char *pk,
                        const char *message)
{
	sy_buf b = SY_BUF_INIT;
	sy_error err;
	CU_ASSERT_TRUE(sy_buf_puts(&b, "{" ENVELOPE ",\"mutations\":["));
	put_mutation(&b, 0, "todo", "\"a0a0a0a0-0000-4000-8000-000000000001\"",
	             "\"operation\":\"insert\",\"columns\":{}");
	CU_ASSERT_TRUE(sy_buf_putc(&b, ','));
	CU_ASSERT_TRUE(sy_buf_printf(
	        &b,
	        "{\"mutation_id\":\"99999999-0000-4000-8000-000000000000\",\"table\":\"%s\","
	        "\"pk\":%s,\"authored_schema\":{\"version\":8,\"hash\":\"" H8 "\"},"
	        "\"client_version\":\"" CV "\",\"operation\":\"delete\",\"base_version\":\"v\"}]}",
	        table, pk));
	sy_push_request *req = parse_str(b.data, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(req);
	sy_error_clear(&err);
	bool ok = sy_push_check_schema(req, cur, &err);
	if (message == NULL) {
		if (!ok)
			fprintf(stderr, "\n  %s %s: %s\n", table, pk, err.message);
		CU_ASSERT_TRUE(ok);
	} else {
		CU_ASSERT_FALSE(ok);
		CU_ASSERT_EQUAL(err.code, SY_ERR_INVALID_REQUEST);
		char expect[SY_ERROR_MESSAGE_MAX];
		const sy_table *t = sy_manifest_table(cur, table, strlen(table));
		const char *why = NULL;
		/* the reason is the types module's wording; the path and the verdict are ours */
		if (strcmp(message, "pk.value") == 0) {
			CU_ASSERT_FALSE(
			        sy_wire_valid(t->pk.type, req->mutations[1].pk_value, &why));
			CU_ASSERT_PTR_NOT_NULL_FATAL(why);
			snprintf(expect, sizeof expect, "mutations[1].pk.value: %s", why);
			message = expect;
		}
		if (strcmp(err.message, message) != 0) {
			fprintf(stderr, "\n  expected: %s\n  got:      %s\n", message, err.message);
			CU_FAIL("message differs");
		}
	}
	sy_push_request_free(req);
	sy_buf_free(&b);
}

static void test_check_schema(void)
{
	sy_manifest *cur = example_manifest();
	CU_ASSERT_PTR_NOT_NULL_FATAL(cur);
	schema_case(cur, "todo",
	            "{\"field\":\"id\",\"value\":\"a0a0a0a0-0000-4000-8000-0000000000ff\"}", NULL);
	schema_case(cur, "item", "{\"field\":\"id\",\"value\":\"-9223372036854775808\"}", NULL);
	/* a table the current schema lacks is a per-mutation outcome, not a 400 */
	schema_case(cur, "gone", "{\"field\":\"whatever\",\"value\":\"x\"}", NULL);
	schema_case(cur, "gone", "{\"field\":\"whatever\",\"value\":1.5}", NULL);
	schema_case(cur, "todo",
	            "{\"field\":\"uuid\",\"value\":\"a0a0a0a0-0000-4000-8000-0000000000ff\"}",
	            "mutations[1].pk.field: table \"todo\" has primary key \"id\"");
	schema_case(cur, "todo",
	            "{\"field\":\"id\",\"value\":\"A0A0A0A0-0000-4000-8000-0000000000FF\"}",
	            "pk.value");
	schema_case(cur, "item", "{\"field\":\"id\",\"value\":42}", "pk.value");
	schema_case(cur, "item", "{\"field\":\"id\",\"value\":\"042\"}", "pk.value");
	schema_case(cur, "item", "{\"field\":\"id\",\"value\":\"9223372036854775808\"}",
	            "pk.value");
	sy_manifest_free(cur);
}

static void test_allocation_failures(void)
{
	char dir[4096];
	size_t len;
	snprintf(dir, sizeof dir, "%s/tests/vectors/push", sy_test_src_dir());
	/* three mutations of every operation, columns to sort, an atomic row check */
	char *body = read_in(dir, "11-atomic", ".json", &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(body);
	long failures = 0;
	for (long fail_at = 0;; fail_at++) {
		sy_error err;
		sy_error_clear(&err);
		sy_test_alloc_install(fail_at, false);
		sy_push_request *req = sy_push_parse(body, len, &err);
		if (req != NULL) {
			sy_push_request_free(req);
			sy_test_alloc_remove();
			CU_ASSERT_EQUAL(sy_test_alloc.live, 0);
			break;
		}
		sy_test_alloc_remove();
		failures++;
		CU_ASSERT_EQUAL(err.code, SY_ERR_NOMEM);
		CU_ASSERT_EQUAL(sy_test_alloc.live, 0);
		if (err.code != SY_ERR_NOMEM || sy_test_alloc.live != 0) {
			fprintf(stderr, "\n  allocation %ld: %s, %ld live\n", fail_at, err.message,
			        sy_test_alloc.live);
			break;
		}
	}
	/* every allocation of the successful run was failed once */
	CU_ASSERT_EQUAL(failures, sy_test_alloc.calls);
	CU_ASSERT(failures > 10);
	free(body);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"invalid vectors: exact 400 messages", test_invalid_vectors},
	        {"valid vectors parse", test_valid_vectors},
	        {"parsed and normalized form", test_parsed_form},
	        {"operation names", test_op_names},
	        {"1..1000 mutations", test_mutation_count_limits},
	        {"duplicate mutation ids", test_duplicate_ids},
	        {"atomic repeated rows", test_repeated_rows},
	        {"256 columns", test_column_limit},
	        {"normalized mutation limit", test_normalized_limit},
	        {"raw and canonical body limits", test_body_limits},
	        {"canonical limit boundary", test_canonical_boundary},
	        {"canonical form measured only when it could exceed", test_canonical_bound},
	        {"pk against the current schema", test_check_schema},
	        {"each allocation fails in turn", test_allocation_failures},
	        {NULL, NULL},
	};
	sy_test_add_suite("push", tests);
	return sy_test_run();
}
