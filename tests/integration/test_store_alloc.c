/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The store's request handlers when memory runs out, against a real PostgreSQL, as the core's
 * unit suites do for the core (tests/unit/test_client_alloc.c): each allocation of a connect,
 * a pull and a two-page rebuild fails in turn (a stride over a long round), and every time
 * the handler answers 503 temporary_unavailable (or, where the failure cost nothing, the
 * full answer), frees everything it allocated, leaves the connection idle, and the next
 * request with memory gets exactly the answer it would have had.
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgtest.h"
#include "store/conn.h"
#include "store/pull.h"
#include "store/schema.h"
#include "store/session.h"
#include "synchro/alloc.h"
#include "synchro/manifest.h"
#include "testutil.h"

#define USER   "alice"
#define CLIENT "c0000000-0000-4000-8000-0000000000a1"

static PGconn *db; /* the fixture's superuser, with the store's session settings */
static sy_schema_ref cur;
static long long generation;

/* Starts counting (and failing the n-th allocation, n >= 0, once). */
static void arm(long n)
{
	sy_test_alloc_install(n, false);
}

static void disarm(void)
{
	sy_test_alloc_remove();
}

/* The body up to server_time, the only member that differs between two equal answers (the
 * last in JCS order of both a pull and a rebuild page body). */
static char *stable_part(const sy_buf *body)
{
	if (body->data == NULL)
		return strdup("");
	const char *t = strstr(body->data, ",\"server_time\"");
	size_t n = t != NULL ? (size_t)(t - body->data) : body->len;
	char *s = malloc(n + 1);
	memcpy(s, body->data, n);
	s[n] = '\0';
	return s;
}

/* ---- connect ---- */

/* One connect round: a new connection with the store's settings, then /v3/connect's
 * statements. true with *opened when every step went; false when one failed cleanly. */
static bool connect_round(bool *opened)
{
	sy_error err = {0};
	*opened = false;
	PGconn *c = sy_store_connect(NULL, "test_store_alloc", &err);
	if (c == NULL)
		return false;
	sy_store_connected out;
	sy_store_status st = sy_store_client_connect(c, USER, CLIENT, &out, &err);
	CU_ASSERT_EQUAL(PQtransactionStatus(c), PQTRANS_IDLE);
	sy_store_disconnect(c);
	if (st != SY_STORE_OK)
		return false;
	*opened = out.result == SY_CONNECT_OPENED;
	if (*opened)
		generation = out.generation;
	return true;
}

static void test_connect(void)
{
	bool opened;
	arm(-1);
	CU_ASSERT_TRUE_FATAL(connect_round(&opened));
	disarm();
	CU_ASSERT_TRUE(opened);
	CU_ASSERT_EQUAL(sy_test_alloc.live, 0);
	long total = sy_test_alloc.calls;
	for (long n = 0; n <= total; n++) {
		arm(n);
		bool ok = connect_round(&opened);
		long left = sy_test_alloc.live;
		disarm();
		CU_ASSERT_EQUAL(left, 0);
		CU_ASSERT_TRUE(!ok || opened);
	}
	printf("\n  connect: %ld allocations of its own, each failed in turn\n", total);
	/* With memory again: the next generation. */
	long long before = generation;
	CU_ASSERT_TRUE(connect_round(&opened));
	CU_ASSERT_TRUE(opened);
	CU_ASSERT_TRUE(generation > before);
}

/* ---- pull and rebuild ---- */

typedef struct {
	sy_store_status st;
	sy_errcode error;
	char *body; /* stable_part */
	size_t items;
	bool more;
} reply;

static void reply_free(reply *r)
{
	free(r->body);
	memset(r, 0, sizeof *r);
}

static void pull_once(sy_store_pull *p, bool has_cursor, reply *r)
{
	sy_store_pull_request req = {
	        .user = USER,
	        .client_id = CLIENT,
	        .client_generation = (uint64_t)generation,
	        .schema = cur,
	        .has_cursor = has_cursor,
	        .cursor = {0, 0},
	        .limit = 1000,
	        .wait_ms = 2000,
	};
	sy_store_read_answer out = {0};
	sy_error err = {0};
	r->st = sy_store_pull_handle(p, db, &req, &out, &err);
	r->error = out.error;
	r->items = out.items;
	r->more = out.more;
	r->body = stable_part(&out.body);
	sy_store_read_answer_clear(&out);
	CU_ASSERT_EQUAL(PQtransactionStatus(db), PQTRANS_IDLE);
}

static void rebuild_once(sy_store_pull *p, const char *rebuild_id, const char *token_table,
                         const char *token_pk, reply *r, char **token)
{
	sy_store_rebuild_request req = {
	        .user = USER,
	        .client_id = CLIENT,
	        .client_generation = (uint64_t)generation,
	        .schema = cur,
	        .rebuild_id = rebuild_id,
	        .token_table = token_table,
	        .token_pk = token_pk,
	        .limit = 3,
	};
	sy_store_read_answer out = {0};
	sy_error err = {0};
	r->st = sy_store_rebuild_handle(p, db, &req, &out, &err);
	r->error = out.error;
	r->items = out.items;
	r->more = out.more;
	r->body = stable_part(&out.body);
	if (token != NULL) {
		*token = NULL;
		const char *t = strstr(r->body, "\"page_token\":\"");
		if (t != NULL) {
			t += strlen("\"page_token\":\"");
			*token = strndup(t, strcspn(t, "\""));
		}
	}
	sy_store_read_answer_clear(&out);
	CU_ASSERT_EQUAL(PQtransactionStatus(db), PQTRANS_IDLE);
}

/* A failed request: a 503 and the failure behind it, or the whole answer. */
static void expect_same_or_503(const reply *got, const reply *want)
{
	if (got->st == SY_STORE_OK && got->error == want->error) {
		CU_ASSERT_STRING_EQUAL(got->body, want->body);
		CU_ASSERT_EQUAL(got->items, want->items);
		CU_ASSERT_EQUAL(got->more, want->more);
		return;
	}
	CU_ASSERT_EQUAL(got->error, SY_ERR_TEMPORARY_UNAVAILABLE);
	CU_ASSERT_NOT_EQUAL(got->st, SY_STORE_OK);
}

/* One pull round on fresh read state: a page from the start, then a pull without cursor. */
typedef struct {
	reply page, none;
} pull_replies;

static void pull_round(pull_replies *out)
{
	sy_store_pull *p = sy_store_pull_new();
	if (p == NULL) {
		out->page.st = out->none.st = SY_STORE_NOMEM;
		out->page.error = out->none.error = SY_ERR_TEMPORARY_UNAVAILABLE;
		out->page.body = strdup("");
		out->none.body = strdup("");
		return;
	}
	pull_once(p, true, &out->page);
	pull_once(p, false, &out->none);
	sy_store_pull_free(p);
}

static void test_pull(void)
{
	pull_replies want, got;
	arm(-1);
	pull_round(&want);
	disarm();
	long total = sy_test_alloc.calls;
	CU_ASSERT_EQUAL(sy_test_alloc.live, 0);
	CU_ASSERT_EQUAL_FATAL(want.page.st, SY_STORE_OK);
	CU_ASSERT_EQUAL_FATAL(want.page.error, SY_ERR_NONE);
	CU_ASSERT_EQUAL(want.page.items, 6);
	CU_ASSERT_EQUAL(want.none.error, SY_ERR_REBUILD_REQUIRED);
	CU_ASSERT_TRUE(total > 100);
	long stride = total / 400 + 1, tried = 0;
	for (long n = 0; n < total; n += stride, tried++) {
		arm(n);
		pull_round(&got);
		long left = sy_test_alloc.live;
		disarm();
		CU_ASSERT_EQUAL(left, 0);
		expect_same_or_503(&got.page, &want.page);
		expect_same_or_503(&got.none, &want.none);
		reply_free(&got.page);
		reply_free(&got.none);
	}
	/* State that failed mid-way answers the next request right: fail once, then retry on
	 * the same state with memory. */
	for (long n = 0; n < total; n += stride) {
		sy_store_pull *p = sy_store_pull_new();
		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		reply first, again;
		arm(n);
		pull_once(p, true, &first);
		disarm();
		pull_once(p, true, &again);
		CU_ASSERT_EQUAL(again.st, SY_STORE_OK);
		CU_ASSERT_STRING_EQUAL(again.body, want.page.body);
		reply_free(&first);
		reply_free(&again);
		sy_store_pull_free(p);
	}
	printf("\n  pull: %ld allocations, %ld of them failed in turn\n", total, tried);
	reply_free(&want.page);
	reply_free(&want.none);
}

/* One rebuild round on fresh read state: two pages of one session (rebuild_id given). */
typedef struct {
	reply first, second;
} rebuild_replies;

static void rebuild_round(const char *rebuild_id, rebuild_replies *out)
{
	memset(out, 0, sizeof *out);
	sy_store_pull *p = sy_store_pull_new();
	if (p == NULL) {
		out->first.st = out->second.st = SY_STORE_NOMEM;
		out->first.error = out->second.error = SY_ERR_TEMPORARY_UNAVAILABLE;
		out->first.body = strdup("");
		out->second.body = strdup("");
		return;
	}
	char *token = NULL;
	rebuild_once(p, rebuild_id, NULL, NULL, &out->first, &token);
	char *table = NULL, *pk = NULL;
	bool nomem = false;
	bool parsed = token != NULL &&
	              sy_store_page_token_parse(token, strlen(token), &table, &pk, &nomem);
	if (parsed) {
		rebuild_once(p, rebuild_id, table, pk, &out->second, NULL);
	} else {
		out->second.st = SY_STORE_NOMEM;
		out->second.error = SY_ERR_TEMPORARY_UNAVAILABLE;
		out->second.body = strdup("");
	}
	sy_free(table);
	sy_free(pk);
	free(token);
	sy_store_pull_free(p);
}

static void rebuild_id(long n, char out[SY_UUID_LEN + 1])
{
	snprintf(out, SY_UUID_LEN + 1, "e0000000-0000-4000-8000-%012lx", (unsigned long)n + 1);
}

static void test_rebuild(void)
{
	rebuild_replies want, got;
	char id[SY_UUID_LEN + 1];
	rebuild_id(100000, id);
	arm(-1);
	rebuild_round(id, &want);
	disarm();
	long total = sy_test_alloc.calls;
	CU_ASSERT_EQUAL(sy_test_alloc.live, 0);
	CU_ASSERT_EQUAL_FATAL(want.first.st, SY_STORE_OK);
	CU_ASSERT_EQUAL_FATAL(want.first.error, SY_ERR_NONE);
	CU_ASSERT_TRUE(want.first.more);
	CU_ASSERT_EQUAL(want.first.items, 3);
	CU_ASSERT_EQUAL_FATAL(want.second.error, SY_ERR_NONE);
	CU_ASSERT_FALSE(want.second.more);
	CU_ASSERT_EQUAL(want.second.items, 3);
	CU_ASSERT_PTR_NOT_NULL(strstr(want.second.body, "\"cursor\":\"c1."));
	long stride = total / 400 + 1, tried = 0;
	for (long n = 0; n < total; n += stride, tried++) {
		rebuild_id(n, id);
		arm(n);
		rebuild_round(id, &got);
		long left = sy_test_alloc.live;
		disarm();
		CU_ASSERT_EQUAL(left, 0);
		expect_same_or_503(&got.first, &want.first);
		/* The second page's cursor is the session's bound position: the same here. */
		expect_same_or_503(&got.second, &want.second);
		reply_free(&got.first);
		reply_free(&got.second);
		/* The same session again with memory: both pages as they should be. */
		rebuild_round(id, &got);
		CU_ASSERT_EQUAL(got.first.st, SY_STORE_OK);
		CU_ASSERT_STRING_EQUAL(got.first.body, want.first.body);
		CU_ASSERT_STRING_EQUAL(got.second.body, want.second.body);
		reply_free(&got.first);
		reply_free(&got.second);
	}
	printf("\n  rebuild: %ld allocations, %ld of them failed in turn\n", total, tried);
	reply_free(&want.first);
	reply_free(&want.second);
}

/* ---- fixture ---- */

static bool publish_example(void)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/contrib/example/schema.sql", sy_test_src_dir());
	char *schema = sy_test_read_file(path, NULL);
	snprintf(path, sizeof path, "%s/contrib/example/manifest.json", sy_test_src_dir());
	char *manifest = sy_test_read_file(path, NULL);
	if (schema == NULL || manifest == NULL) {
		fprintf(stderr, "cannot read contrib/example\n");
		return false;
	}
	pgt_must(db, schema);
	sy_error e = {0};
	sy_manifest *m = sy_manifest_parse(manifest, strlen(manifest), &e);
	sy_store_published pub;
	bool ok = m != NULL && sy_store_schema_publish(db, m, NULL, NULL, &pub, &e) == SY_STORE_OK;
	if (!ok)
		fprintf(stderr, "publish: %s\n", e.message);
	sy_manifest_free(m);
	free(schema);
	free(manifest);
	cur.version = (uint64_t)pub.version;
	snprintf(cur.hash, sizeof cur.hash, "%s", pub.hash);
	return ok;
}

int main(void)
{
	pgt_require_fixture();
	sy_error e = {0};
	db = sy_store_connect(NULL, "test_store_alloc", &e);
	if (db == NULL) {
		fprintf(stderr, "%s\n", e.message);
		return 99;
	}
	pgt_must(db, "SET client_min_messages = warning");
	if (pgt_migrate(db, sy_sql_migrations, sy_sql_migration_count) !=
	            (int)sy_sql_migration_count ||
	    !publish_example())
		return 99;
	/* Rows of every type, written as an application would (the fence trigger gives each
	 * its version), and the changelog entries walsync would have made of them. */
	pgt_must(db,
	         "INSERT INTO public.todo (id, title, done, note, owner) VALUES"
	         " ('a0000000-0000-4000-8000-000000000001', 'one', false, NULL, 'alice'),"
	         " ('a0000000-0000-4000-8000-000000000002', 'two \"quoted\"', true, 'n',"
	         "  'alice'),"
	         " ('a0000000-0000-4000-8000-000000000003', 'bob''s', false, NULL, 'bob');"
	         " INSERT INTO public.item (id, label, qty, price, weight, due, seen_at, tags,"
	         "                          blob, ref) VALUES"
	         " (1, 'a', 1, 1.50, 0.25, '2026-01-02', '2026-01-02 03:04:05.123456+00',"
	         "  '{\"k\": [1, 2]}', '\\x00ff', 'b0000000-0000-4000-8000-000000000001'),"
	         " (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),"
	         " (3, 'c', 3, -7, 1e300, '0001-01-01', NULL, 'null', '\\x', NULL),"
	         " (4, 'd', 4, 0, 0, NULL, NULL, '[]', NULL, NULL);"
	         " INSERT INTO synchro.changelog (commit_lsn, ordinal, table_id, pk, version,"
	         "   state, owner_before, owner_after, committed_at)"
	         " SELECT '0/100'::pg_lsn, (row_number() OVER (ORDER BY f.table_id, f.pk))::int,"
	         "        f.table_id, f.pk, f.version, f.state, t.owner, t.owner, now()"
	         "   FROM synchro.row_fences f"
	         "   LEFT JOIN public.todo t ON f.table_id = 'todo' AND t.id::text = f.pk");
	static const CU_TestInfo tests[] = {
	        {"connect: each allocation fails in turn", test_connect},
	        {"pull: each allocation fails in turn", test_pull},
	        {"rebuild: each allocation fails in turn", test_rebuild},
	        {NULL, NULL},
	};
	sy_test_add_suite("store alloc", tests);
	int status = sy_test_run();
	sy_store_disconnect(db);
	return status;
}
