/* SPDX-License-Identifier: BSD-2-Clause */
/* synchro.synchro_push (src/pg, migration 13) against a real PostgreSQL as the responders'
 * role: the matrix (doc/contract.md#operation-and-row-state-matrix) on todo and item, replay,
 * idempotency, atomic groups, terminal rules, gates, races. This file: the fixture, the call and
 * its answer as the tests read it, the database state they check, and main; the tests are in
 * test_push_matrix.c, test_push_replay.c, test_push_rules.c, test_push_races.c and
 * test_push_history.c. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "pgtest.h"
#include "store/conn.h"
#include "store/migrations.h"
#include "store/push_call.h"
#include "store/schema.h"
#include "synchro/alloc.h"
#include "synchro/jcs.h"
#include "synchro/json.h"
#include "synchro/manifest.h"
#include "synchro/outcome.h"
#include "synchro/push.h"
#include "testutil.h"
#include "push_suite.h"
#include "push_request.h"

PGconn *db;              /* the fixture's superuser, with the store's session settings */
PGconn *app;             /* synchro_app, as a responder */
PGconn *mon;             /* watches other sessions (outside any transaction) */
sy_schema_ref cur;       /* the current schema */
sy_schema_ref schema_v1; /* the example manifest as first published */
char *manifest_text;

/* ---- identifiers ---- */

unsigned long serial = 0x1000;

static unsigned long next_item = 1000;

/* A fresh item id as its int64 wire value ("\"1001\""). */
void fresh_item(char out[32])
{
	snprintf(out, 32, "\"%lu\"", ++next_item);
}

void answer_clear(answer *a)
{
	sy_buf_free(&a->body);
}

static bool schema_member(const sy_json *o, const char *key, sy_schema_ref *out)
{
	const sy_json *v = o ? sy_json_get(o, key) : NULL;
	return v != NULL && sy_schema_ref_parse(v, out);
}

/* Admission caps every push of this process (and of its children) passes; 0: none. */
int cap_total, cap_client;

/* Runs synchro_push on c; SY_STORE_OK unless the statement itself failed. */
sy_store_status call_push(PGconn *c, const char *user, const char *json, int lock_timeout_ms,
                          answer *a, sy_error *err)
{
	sy_store_push_answer ans;
	memset(&ans, 0, sizeof ans);
	memset(a, 0, sizeof *a);
	sy_store_push_params prm = {.user = user,
	                            .body = json,
	                            .body_len = strlen(json),
	                            .lock_timeout_ms = lock_timeout_ms,
	                            .max_inflight = cap_total,
	                            .max_inflight_per_client = cap_client,
	                            .retry_after_s = 1};
	sy_store_status st = sy_store_push_call(c, &prm, &ans, NULL, err);
	if (st != SY_STORE_OK) {
		a->error = SY_ERR_TEMPORARY_UNAVAILABLE;
		a->http_status = 503;
		snprintf(a->message, sizeof a->message, "%s", err->message);
		sy_store_push_answer_clear(&ans);
		return st;
	}
	a->http_status = ans.http_status;
	a->replay = ans.replay;
	a->retry_after = ans.retry_after;
	sy_error pe = {0};
	sy_json_doc *d = sy_json_parse(ans.body.data, ans.body.len, &pe);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	const sy_json *root = sy_json_doc_root(d);
	const sy_json *e = sy_json_get(root, "error");
	if (a->http_status == 200) {
		CU_ASSERT_PTR_NULL(e);
		a->body = ans.body;
		memset(&ans.body, 0, sizeof ans.body);
		const sy_json *acc = sy_json_get(root, "accepted");
		a->applied = acc != NULL && !a->replay ? acc->u.array.count : 0;
	} else {
		CU_ASSERT_PTR_NOT_NULL_FATAL(e);
		const sy_json *code = sy_json_get(e, "code");
		const sy_json *msg = sy_json_get(e, "message");
		a->error = SY_ERR__COUNT;
		for (int i = 1; code != NULL && a->error == SY_ERR__COUNT && i < SY_ERR__COUNT; i++)
			if (strcmp(sy_errcode_name((sy_errcode)i), code->u.string.data) == 0)
				a->error = (sy_errcode)i;
		CU_ASSERT_EQUAL(a->http_status, sy_errcode_http_status(a->error));
		CU_ASSERT_EQUAL(a->retry_after > 0, sy_errcode_retryable(a->error));
		if (msg != NULL)
			snprintf(a->message, sizeof a->message, "%s", msg->u.string.data);
		(void)schema_member(e, "current_schema", &a->current);
		(void)schema_member(e, "received_schema", &a->received);
	}
	sy_json_doc_free(d);
	sy_store_push_answer_clear(&ans);
	return SY_STORE_OK;
}

void result_free(result *r)
{
	if (r == NULL)
		return;
	answer_clear(&r->a);
	sy_json_doc_free(r->doc);
	free(r);
}

/* Runs one request as user on conn c; every 200 body is validated. */
result *push_on(PGconn *c, const char *user, const char *json, int lock_timeout_ms)
{
	result *r = calloc(1, sizeof *r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	sy_error e = {0};
	sy_push_request *req = sy_push_parse(json, strlen(json), &e);
	if (req == NULL) {
		snprintf(r->a.message, sizeof r->a.message, "%s", e.message);
		r->parse_error = 1;
		return r;
	}
	r->st = call_push(c, user, json, lock_timeout_ms, &r->a, &r->err);
	if (r->a.error == SY_ERR_NONE) {
		sy_error pe = {0};
		r->doc = sy_json_parse(r->a.body.data, r->a.body.len, &pe);
		CU_ASSERT_PTR_NOT_NULL(r->doc);
		if (r->doc != NULL) {
			sy_error ve = {0};
			bool ok = sy_outcome_validate_response(req, sy_json_doc_root(r->doc), &ve);
			CU_ASSERT_TRUE(ok);
			if (!ok)
				fprintf(stderr, "response invalid: %s\n%s\n", ve.message,
				        r->a.body.data);
		}
	}
	if (PQstatus(c) == CONNECTION_OK)
		CU_ASSERT_EQUAL(PQtransactionStatus(c), PQTRANS_IDLE);
	sy_push_request_free(req);
	return r;
}

result *push_as(const char *user, const char *json)
{
	return push_on(app, user, json, 5000);
}

/* Builds and runs one request of alice on CA1 (unless rs says otherwise). */
result *run(const char *user, const rspec *rs, const mspec *ms, size_t n,
            char (*ids)[SY_UUID_LEN + 1])
{
	static const rspec none = {0};
	char *json = build(rs ? rs : &none, ms, n, ids);
	result *r = push_as(user, json);
	free(json);
	return r;
}

void expect_200(const result *r)
{
	CU_ASSERT_EQUAL(r->parse_error, 0);
	if (r->parse_error)
		fprintf(stderr, "request does not parse: %s\n", r->a.message);
	CU_ASSERT_EQUAL(r->st, SY_STORE_OK);
	CU_ASSERT_EQUAL(r->a.error, SY_ERR_NONE);
	CU_ASSERT_EQUAL(r->a.http_status, 200);
	if (r->a.error != SY_ERR_NONE)
		fprintf(stderr, "unexpected error %s: %s (%s)\n", sy_errcode_name(r->a.error),
		        r->a.message, r->err.message);
}

void expect_error(const result *r, sy_errcode code)
{
	CU_ASSERT_EQUAL(r->a.error, code);
	CU_ASSERT_EQUAL(r->a.http_status, sy_errcode_http_status(code));
	CU_ASSERT_EQUAL(r->a.body.len, 0);
	if (r->a.error != code)
		fprintf(stderr, "want %s, got %s: %s\n", sy_errcode_name(code),
		        sy_errcode_name(r->a.error), r->a.message);
}

char *jcs_of(const sy_json *v)
{
	sy_buf b = SY_BUF_INIT;
	sy_error e;
	if (v == NULL || !sy_jcs_write(&b, v, &e)) {
		sy_buf_free(&b);
		return NULL;
	}
	size_t n;
	char *s = sy_buf_steal(&b, &n);
	char *out = strdup(s);
	sy_free(s);
	return out;
}

/* ---- database state ---- */

/* The fence version of (table, pk text), or "" when there is no fence. */
void fence_version(const char *table, const char *pk, char out[160])
{
	const char *p[] = {table, pk};
	PGresult *r = pgt_query(db,
	                        "SELECT version FROM synchro.row_fences WHERE table_id = $1"
	                        " AND pk = $2",
	                        2, p);
	snprintf(out, 160, "%s", r && PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "");
	PQclear(r);
}

char *fence_field(const char *table, const char *pk, const char *column)
{
	char sql[256];
	snprintf(sql, sizeof sql,
	         "SELECT coalesce(%s::text, '<null>') FROM synchro.row_fences"
	         " WHERE table_id = $1 AND pk = $2",
	         column);
	const char *p[] = {table, pk};
	return pgt_value(db, sql, 2, p);
}

long long epoch(const char *client)
{
	const char *p[] = {client};
	return pgt_int(db, "SELECT accepted_write_epoch FROM synchro.clients WHERE client_id = $1",
	               1, p);
}

/* Whether the fixture's server log holds needle (with-pg exports SYNCHRO_PG_LOG). */
bool server_log_has(const char *needle)
{
	const char *path = getenv("SYNCHRO_PG_LOG");
	FILE *f = path ? fopen(path, "r") : NULL;
	char line[4096];
	bool found = false;
	while (f != NULL && !found && fgets(line, sizeof line, f) != NULL)
		found = strstr(line, needle) != NULL;
	if (f != NULL)
		fclose(f);
	return found;
}

long long count(const char *sql)
{
	return pgt_int(db, sql, 0, NULL);
}

void add_client(const char *client)
{
	const char *pc[] = {client};
	PQclear(pgt_query(db,
	                  "INSERT INTO synchro.clients (client_id, user_id, generation)"
	                  " VALUES ($1, 'alice', 1)",
	                  1, pc));
}

void fresh_todo(todo_id *t)
{
	fresh(t->id, 'e');
	snprintf(t->json, sizeof t->json, "\"%s\"", t->id);
}

/* Inserts todo t of user through push and returns its version in v. */
void make_todo(const char *user, const char *client, todo_id *t, char v[160])
{
	fresh_todo(t);
	rspec rs = {.client = client};
	mspec m = {.table = "todo",
	           .pk = t->json,
	           .op = "insert",
	           .cols = "{\"title\":\"t\",\"done\":false}"};
	char ids[1][SY_UUID_LEN + 1];
	result *r = run(user, &rs, &m, 1, ids);
	expect_200(r);
	check(r, ids[0], "applied", NULL, true, true);
	result_free(r);
	fence_version("todo", t->id, v);
	CU_ASSERT(v[0] != '\0');
}

void make_item(char pk[32], const char *cols, char v[160])
{
	fresh_item(pk);
	mspec m = {.table = "item", .pk = pk, .op = "insert", .cols = cols};
	char ids[1][SY_UUID_LEN + 1];
	result *r = run(ALICE, NULL, &m, 1, ids);
	expect_200(r);
	check(r, ids[0], "applied", NULL, true, true);
	result_free(r);
	char bare[32];
	snprintf(bare, sizeof bare, "%.*s", (int)strlen(pk) - 2, pk + 1);
	fence_version("item", bare, v);
	CU_ASSERT(v[0] != '\0');
}

const char *bare(const char *json_string, char out[64])
{
	snprintf(out, 64, "%.*s", (int)strlen(json_string) - 2, json_string + 1);
	return out;
}

int main(void)
{
	pgt_require_fixture();
	sy_error e = {0};
	db = sy_store_connect(NULL, "test_push", &e);
	if (db == NULL) {
		fprintf(stderr, "%s\n", e.message);
		return 99;
	}
	pgt_must(db, "SET client_min_messages = warning");
	if (pgt_migrate(db, sy_sql_migrations, sy_sql_migration_count) !=
	    (int)sy_sql_migration_count) {
		fprintf(stderr, "the migrations did not apply\n");
		return 99;
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/contrib/example/schema.sql", sy_test_src_dir());
	char *schema = sy_test_read_file(path, NULL);
	snprintf(path, sizeof path, "%s/contrib/example/manifest.json", sy_test_src_dir());
	manifest_text = sy_test_read_file(path, NULL);
	if (schema == NULL || manifest_text == NULL) {
		fprintf(stderr, "cannot read contrib/example\n");
		return 99;
	}
	pgt_must(db, schema);
	free(schema);
	sy_manifest *m = sy_manifest_parse(manifest_text, strlen(manifest_text), &e);
	sy_store_published pub;
	if (m == NULL || sy_store_schema_publish(db, m, NULL, NULL, &pub, &e) != SY_STORE_OK) {
		fprintf(stderr, "publish: %s\n", e.message);
		return 99;
	}
	sy_manifest_free(m);
	schema_v1.version = (uint64_t)pub.version;
	snprintf(schema_v1.hash, sizeof schema_v1.hash, "%s", pub.hash);
	cur = schema_v1;
	pgt_must(db, "CREATE ROLE " APP_ROLE " LOGIN IN ROLE synchro_app");
	pgt_must(db, "INSERT INTO synchro.clients (client_id, user_id, generation) VALUES"
	             " ('" CA1 "', 'alice', 1), ('" CA2 "', 'alice', 1), ('" CB1 "', 'bob', 1)");
	app = sy_store_connect("user=" APP_ROLE, "test_push", &e);
	mon = pgt_connect(NULL);
	if (app == NULL) {
		fprintf(stderr, "%s\n", e.message);
		return 99;
	}

	static const CU_TestInfo tests[] = {
	        {"matrix on todo (hard delete, owner policy)", test_matrix_todo},
	        {"matrix on item (soft delete)", test_matrix_item},
	        {"one batch evaluates in order", test_sequential_batch},
	        {"consecutive inserts", test_insert_run},
	        {"consecutive inserts refused anywhere", test_insert_run_refusals},
	        {"consecutive inserts over two tables", test_insert_run_tables},
	        {"40 inserts on a backend that prepared nothing", test_insert_run_statements},
	        {"every portable type round-trips", test_types},
	        {"exact replay and batch idempotency", test_replay},
	        {"cross-batch mutation replay and idempotency", test_cross_batch},
	        {"exact replay of the same octets, by the request digest", test_replay_octets},
	        {"a body whose ids cannot be peeked replays through the parse",
	         test_replay_unpeeked},
	        {"atomic group: deferred check and success", test_atomic_success},
	        {"non-atomic units check deferred constraints", test_nonatomic_deferred},
	        {"atomic group: conflicts and terminal rejections", test_atomic_conflict},
	        {"write policy refuses without revealing the row", test_policy},
	        {"validation_failed", test_validation},
	        {"table_not_synced", test_table_not_synced},
	        {"accepted_write_epoch", test_epoch},
	        {"gates and their order", test_gates},
	        {"admission after the gates", test_admission},
	        {"the mutation ledger precedes generation, schema, admission",
	         test_ledger_precedence},
	        {"statements the session lost", test_lost_statements},
	        {"deadlock and serialization retries", test_retry},
	        {"20 concurrent updates of one base", test_concurrent_updates},
	        {"20 concurrent identical requests", test_concurrent_identical},
	        {"racing insert", test_race_insert},
	        {"no resurrection under a race", test_race_resurrection},
	        {"lock timeout", test_lock_timeout},
	        {"the client changed while a push waits for it", test_client_changed_while_waiting},
	        {"the client changed under repeatable read", test_client_changed_repeatable_read},
	        {"connection lost", test_connection_lost},
	        {"schema history: schema_incompatible", test_schema_history},
	        {NULL, NULL},
	};
	sy_test_add_suite("push", tests);
	int status = sy_test_run();
	sy_store_disconnect(app);
	sy_store_disconnect(db);
	PQfinish(mon);
	free(manifest_text);
	return status;
}
