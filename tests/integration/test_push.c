/* SPDX-License-Identifier: BSD-2-Clause */
/* synchro.synchro_push (src/pg, migration 13) against a real PostgreSQL as the responders'
 * role: the ADR matrix on todo and item, replay, idempotency, atomic groups, terminal rules,
 * gates, races. */
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

#define APP_ROLE "test_push_app"

static PGconn *db;              /* the fixture's superuser, with the store's session settings */
static PGconn *app;             /* synchro_app, as a responder */
static PGconn *mon;             /* watches other sessions (outside any transaction) */
static sy_schema_ref cur;       /* the current schema */
static sy_schema_ref schema_v1; /* the example manifest as first published */
static char *manifest_text;

#define ALICE "alice"
#define BOB   "bob"

/* Clients registered in main(): alice's A1 (and A2..), bob's B1. */
#define CA1 "c0000000-0000-4000-8000-0000000000a1"
#define CA2 "c0000000-0000-4000-8000-0000000000a2"
#define CB1 "c0000000-0000-4000-8000-0000000000b1"

/* ---- identifiers ---- */

static unsigned long serial = 0x1000;

/* A fresh identity UUID with a recognizable prefix ('b' batch, 'a' mutation, 'e' todo). */
static void fresh(char out[SY_UUID_LEN + 1], char kind)
{
	serial++;
	snprintf(out, SY_UUID_LEN + 1, "%c%07lx-0000-4000-8000-%012lx", kind, serial & 0xfffffff,
	         serial);
}

static unsigned long next_item = 1000;

/* A fresh item id as its int64 wire value ("\"1001\""). */
static void fresh_item(char out[32])
{
	snprintf(out, 32, "\"%lu\"", ++next_item);
}

/* ---- requests ---- */

typedef struct {
	const char *id; /* mutation id; NULL: fresh */
	const char *table;
	const char *pk; /* JSON of the pk value */
	const char *op;
	const char *base;              /* NULL: absent */
	const char *cols;              /* JSON object, or NULL: absent */
	const sy_schema_ref *authored; /* NULL: the current schema */
} mspec;

typedef struct {
	const char *client; /* NULL: CA1 */
	long long gen;      /* 0: the client's current generation */
	const char *batch;  /* NULL: fresh */
	bool atomic;
	const sy_schema_ref *schema; /* NULL: current */
} rspec;

static void put_ref(sy_buf *b, const sy_schema_ref *r)
{
	sy_buf_printf(b, "{\"version\":%llu,\"hash\":\"%s\"}", (unsigned long long)r->version,
	              r->hash);
}

static long long client_generation(const char *client)
{
	const char *p[] = {client};
	return pgt_int(db, "SELECT generation FROM synchro.clients WHERE client_id = $1", 1, p);
}

/* The request body; every mutation id used goes to ids[i] (may be NULL). */
static char *build(const rspec *rs, const mspec *ms, size_t n, char (*ids)[SY_UUID_LEN + 1])
{
	sy_buf b = SY_BUF_INIT;
	char batch[SY_UUID_LEN + 1];
	const char *client = rs->client ? rs->client : CA1;
	if (rs->batch)
		snprintf(batch, sizeof batch, "%s", rs->batch);
	else
		fresh(batch, 'b');
	long long gen = rs->gen ? rs->gen : client_generation(client);
	sy_buf_printf(&b, "{\"client_id\":\"%s\",\"client_generation\":%lld,\"batch_id\":\"%s\",",
	              client, gen, batch);
	if (rs->atomic)
		sy_buf_puts(&b, "\"atomic\":true,");
	sy_buf_puts(&b, "\"schema\":");
	put_ref(&b, rs->schema ? rs->schema : &cur);
	sy_buf_puts(&b, ",\"mutations\":[");
	for (size_t i = 0; i < n; i++) {
		const mspec *m = &ms[i];
		char id[SY_UUID_LEN + 1];
		if (m->id)
			snprintf(id, sizeof id, "%s", m->id);
		else
			fresh(id, 'a');
		if (ids)
			memcpy(ids[i], id, sizeof id);
		sy_buf_printf(&b,
		              "%s{\"mutation_id\":\"%s\",\"table\":\"%s\",\"pk\":{\"field\":\"id\","
		              "\"value\":%s},\"authored_schema\":",
		              i ? "," : "", id, m->table, m->pk);
		put_ref(&b, m->authored ? m->authored : &cur);
		sy_buf_printf(&b,
		              ",\"operation\":\"%s\",\"client_version\":\"2026-01-02T03:04:05Z\"",
		              m->op);
		if (m->base)
			sy_buf_printf(&b, ",\"base_version\":\"%s\"", m->base);
		if (m->cols)
			sy_buf_printf(&b, ",\"columns\":%s", m->cols);
		sy_buf_putc(&b, '}');
	}
	sy_buf_puts(&b, "]}");
	CU_ASSERT_FATAL(!b.failed);
	size_t len;
	return sy_buf_steal(&b, &len);
}

/* synchro_push's answer as the tests read it: an error body is parsed into its code,
 * message and schemas (and body is then empty); applied counts accepted outcomes. */
typedef struct {
	int http_status;
	sy_errcode error;
	char message[SY_ERROR_MESSAGE_MAX];
	bool replay;
	int retry_after;
	sy_schema_ref current;
	sy_schema_ref received;
	sy_buf body;
	size_t applied;
} answer;

static void answer_clear(answer *a)
{
	sy_buf_free(&a->body);
}

static bool schema_member(const sy_json *o, const char *key, sy_schema_ref *out)
{
	const sy_json *v = o ? sy_json_get(o, key) : NULL;
	return v != NULL && sy_schema_ref_parse(v, out);
}

/* Admission caps every push of this process (and of its children) passes; 0: none. */
static int cap_total, cap_client;

/* Runs synchro_push on c; SY_STORE_OK unless the statement itself failed. */
static sy_store_status call_push(PGconn *c, const char *user, const char *json, int lock_timeout_ms,
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

typedef struct {
	answer a;
	sy_store_status st;
	sy_error err;
	sy_json_doc *doc; /* the 200 body, parsed */
	int parse_error;  /* the request did not parse (400 before the store) */
} result;

static void result_free(result *r)
{
	if (r == NULL)
		return;
	answer_clear(&r->a);
	sy_json_doc_free(r->doc);
	free(r);
}

/* Runs one request as user on conn c; every 200 body is validated. */
static result *push_on(PGconn *c, const char *user, const char *json, int lock_timeout_ms)
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

static result *push_as(const char *user, const char *json)
{
	return push_on(app, user, json, 5000);
}

/* Builds and runs one request of alice on CA1 (unless rs says otherwise). */
static result *run(const char *user, const rspec *rs, const mspec *ms, size_t n,
                   char (*ids)[SY_UUID_LEN + 1])
{
	static const rspec none = {0};
	char *json = build(rs ? rs : &none, ms, n, ids);
	result *r = push_as(user, json);
	free(json);
	return r;
}

static void expect_200(const result *r)
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

static void expect_error(const result *r, sy_errcode code)
{
	CU_ASSERT_EQUAL(r->a.error, code);
	CU_ASSERT_EQUAL(r->a.http_status, sy_errcode_http_status(code));
	CU_ASSERT_EQUAL(r->a.body.len, 0);
	if (r->a.error != code)
		fprintf(stderr, "want %s, got %s: %s\n", sy_errcode_name(code),
		        sy_errcode_name(r->a.error), r->a.message);
}

/* The outcome of mutation id in a 200 body, and whether it is in "accepted". */
static const sy_json *outcome(const result *r, const char *id, bool *accepted)
{
	if (r->doc == NULL)
		return NULL;
	const char *arrays[] = {"accepted", "rejected"};
	for (int a = 0; a < 2; a++) {
		const sy_json *arr = sy_json_get(sy_json_doc_root(r->doc), arrays[a]);
		for (size_t i = 0; arr && i < arr->u.array.count; i++) {
			const sy_json *o = arr->u.array.items[i];
			const sy_json *m = sy_json_get(o, "mutation_id");
			if (m && strcmp(m->u.string.data, id) == 0) {
				if (accepted)
					*accepted = a == 0;
				return o;
			}
		}
	}
	return NULL;
}

static const char *str(const sy_json *o, const char *key)
{
	const sy_json *v = o ? sy_json_get(o, key) : NULL;
	return v && v->type == SY_JSON_STRING ? v->u.string.data : NULL;
}

static bool has(const sy_json *o, const char *key)
{
	return o != NULL && sy_json_get(o, key) != NULL;
}

/*
 * Checks the outcome of id: status, code (NULL: none), and whether server_version and
 * server_row (with its row_checksum) are present. Returns the outcome.
 */
static const sy_json *check_at(const result *r, const char *id, const char *status,
                               const char *code, bool version, bool row, const char *file, int line)
{
	const sy_json *o = outcome(r, id, NULL);
	char where[256];
	snprintf(where, sizeof where, "%s:%d: outcome %s", file, line, id);
	CU_ASSERT_PTR_NOT_NULL(o);
	if (o == NULL) {
		fprintf(stderr, "%s missing\n", where);
		return NULL;
	}
	bool ok = str(o, "status") && strcmp(str(o, "status"), status) == 0 &&
	          (code ? str(o, "code") && strcmp(str(o, "code"), code) == 0 : !has(o, "code")) &&
	          has(o, "server_version") == version && has(o, "server_row") == row &&
	          has(o, "row_checksum") == row;
	CU_ASSERT_TRUE(ok);
	if (!ok) {
		sy_buf b = SY_BUF_INIT;
		sy_error e;
		if (sy_jcs_write(&b, o, &e))
			fprintf(stderr, "%s: want %s/%s version=%d row=%d, got %s\n", where, status,
			        code ? code : "-", version, row, b.data);
		sy_buf_free(&b);
	}
	return o;
}
#define check(r, id, status, code, version, row)                                                   \
	check_at((r), (id), (status), (code), (version), (row), __FILE__, __LINE__)

/* A member of server_row as JCS text (or "<absent>"). */
static char *row_value(const sy_json *o, const char *field)
{
	const sy_json *row = o ? sy_json_get(o, "server_row") : NULL;
	const sy_json *v = row ? sy_json_get(row, field) : NULL;
	if (v == NULL)
		return strdup("<absent>");
	sy_buf b = SY_BUF_INIT;
	sy_error e;
	if (!sy_jcs_write(&b, v, &e)) {
		sy_buf_free(&b);
		return strdup("<error>");
	}
	size_t n;
	char *s = sy_buf_steal(&b, &n);
	char *out = strdup(s);
	sy_free(s);
	return out;
}

#define CHECK_ROW_VALUE(o, field, want)                                                            \
	do {                                                                                       \
		char *got_ = row_value((o), (field));                                              \
		CU_ASSERT_STRING_EQUAL(got_, (want));                                              \
		free(got_);                                                                        \
	} while (0)

static char *jcs_of(const sy_json *v)
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
static void fence_version(const char *table, const char *pk, char out[160])
{
	const char *p[] = {table, pk};
	PGresult *r = pgt_query(db,
	                        "SELECT version FROM synchro.row_fences WHERE table_id = $1"
	                        " AND pk = $2",
	                        2, p);
	snprintf(out, 160, "%s", r && PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "");
	PQclear(r);
}

static char *fence_field(const char *table, const char *pk, const char *column)
{
	char sql[256];
	snprintf(sql, sizeof sql,
	         "SELECT coalesce(%s::text, '<null>') FROM synchro.row_fences"
	         " WHERE table_id = $1 AND pk = $2",
	         column);
	const char *p[] = {table, pk};
	return pgt_value(db, sql, 2, p);
}

static long long epoch(const char *client)
{
	const char *p[] = {client};
	return pgt_int(db, "SELECT accepted_write_epoch FROM synchro.clients WHERE client_id = $1",
	               1, p);
}

/* Whether the fixture's server log holds needle (with-pg exports SYNCHRO_PG_LOG). */
static bool server_log_has(const char *needle)
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

static long long count(const char *sql)
{
	return pgt_int(db, sql, 0, NULL);
}

/* "\"<uuid>\"" of a fresh todo id, and the bare uuid. */
typedef struct {
	char id[SY_UUID_LEN + 1];
	char json[SY_UUID_LEN + 3];
} todo_id;

static void fresh_todo(todo_id *t)
{
	fresh(t->id, 'e');
	snprintf(t->json, sizeof t->json, "\"%s\"", t->id);
}

/* Inserts todo t of user through push and returns its version in v. */
static void make_todo(const char *user, const char *client, todo_id *t, char v[160])
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

static void make_item(char pk[32], const char *cols, char v[160])
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

static const char *bare(const char *json_string, char out[64])
{
	snprintf(out, 64, "%.*s", (int)strlen(json_string) - 2, json_string + 1);
	return out;
}

/* ---- the matrix ---- */

/* todo (hard delete, owner policy): every cell, each in a batch of its own. */
static void test_matrix_todo(void)
{
	todo_id a;
	char v1[160], v2[160], v3[160], base[160];
	char ids[1][SY_UUID_LEN + 1];
	result *r;
	const sy_json *o;

	/* absent: insert applies; the server sets the owner; the fence records the mutation */
	fresh_todo(&a);
	mspec ins = {.table = "todo",
	             .pk = a.json,
	             .op = "insert",
	             .cols = "{\"done\":false,\"title\":\"first\"}"};
	r = run(ALICE, NULL, &ins, 1, ids);
	expect_200(r);
	o = check(r, ids[0], "applied", NULL, true, true);
	CHECK_ROW_VALUE(o, "title", "\"first\"");
	CHECK_ROW_VALUE(o, "done", "false");
	CHECK_ROW_VALUE(o, "note", "null");
	CHECK_ROW_VALUE(o, "owner", "\"alice\"");
	CHECK_ROW_VALUE(o, "id", "<absent>");
	fence_version("todo", a.id, v1);
	CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v1);
	char *f = fence_field("todo", a.id, "mutation_id");
	CU_ASSERT_STRING_EQUAL(f, ids[0]);
	free(f);
	f = fence_field("todo", a.id, "client_id");
	CU_ASSERT_STRING_EQUAL(f, CA1);
	free(f);
	f = fence_field("todo", a.id, "user_id");
	CU_ASSERT_STRING_EQUAL(f, ALICE);
	free(f);
	result_free(r);

	/* live: insert conflicts with the row and its version */
	r = run(ALICE, NULL, &ins, 1, ids);
	expect_200(r);
	o = check(r, ids[0], "conflict", "row_already_exists", true, true);
	CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v1);
	CHECK_ROW_VALUE(o, "title", "\"first\"");
	result_free(r);

	/* live, base equal: update applies and advances the version */
	mspec upd = {.table = "todo",
	             .pk = a.json,
	             .op = "update",
	             .base = v1,
	             .cols = "{\"note\":\"n\",\"title\":\"second\"}"};
	r = run(ALICE, NULL, &upd, 1, ids);
	expect_200(r);
	o = check(r, ids[0], "applied", NULL, true, true);
	CHECK_ROW_VALUE(o, "title", "\"second\"");
	CHECK_ROW_VALUE(o, "note", "\"n\"");
	fence_version("todo", a.id, v2);
	CU_ASSERT_STRING_NOT_EQUAL(v2, v1);
	CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v2);
	result_free(r);

	/* live, base differs: update and delete are version conflicts with the current row */
	r = run(ALICE, NULL, &upd, 1, ids);
	expect_200(r);
	o = check(r, ids[0], "conflict", "version_conflict", true, true);
	CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v2);
	CHECK_ROW_VALUE(o, "title", "\"second\"");
	result_free(r);
	mspec del = {.table = "todo", .pk = a.json, .op = "delete", .base = v1};
	r = run(ALICE, NULL, &del, 1, ids);
	expect_200(r);
	o = check(r, ids[0], "conflict", "version_conflict", true, true);
	CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v2);
	result_free(r);
	char was[160];
	fence_version("todo", a.id, was);
	CU_ASSERT_STRING_EQUAL(was, v2);

	/* live, base equal: delete applies; a hard delete leaves a fence, no row */
	del.base = v2;
	r = run(ALICE, NULL, &del, 1, ids);
	expect_200(r);
	o = check(r, ids[0], "applied", NULL, true, false);
	fence_version("todo", a.id, v3);
	CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v3);
	CU_ASSERT_STRING_NOT_EQUAL(v3, v2);
	const char *pk[] = {a.id};
	CU_ASSERT_EQUAL(pgt_int(db, "SELECT count(*) FROM todo WHERE id = $1", 1, pk), 0);
	f = fence_field("todo", a.id, "state");
	CU_ASSERT_STRING_EQUAL(f, "deleted");
	free(f);
	result_free(r);

	/* deleted (fence only): every operation is row_deleted with the version, no row */
	mspec ops[3] = {ins, upd, del};
	snprintf(base, sizeof base, "%s", v3);
	ops[1].base = base;
	ops[2].base = base;
	for (int i = 0; i < 3; i++) {
		r = run(ALICE, NULL, &ops[i], 1, ids);
		expect_200(r);
		o = check(r, ids[0], "conflict", "row_deleted", true, false);
		CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v3);
		result_free(r);
	}
	fence_version("todo", a.id, was);
	CU_ASSERT_STRING_EQUAL(was, v3);

	/* absent: update and delete are row_not_found with neither row nor version */
	todo_id b;
	fresh_todo(&b);
	mspec absent[2] = {{.table = "todo",
	                    .pk = b.json,
	                    .op = "update",
	                    .base = v1,
	                    .cols = "{\"title\":\"x\"}"},
	                   {.table = "todo", .pk = b.json, .op = "delete", .base = v1}};
	for (int i = 0; i < 2; i++) {
		r = run(ALICE, NULL, &absent[i], 1, ids);
		expect_200(r);
		check(r, ids[0], "conflict", "row_not_found", false, false);
		result_free(r);
	}
	fence_version("todo", b.id, was);
	CU_ASSERT_STRING_EQUAL(was, "");
}

/* item (soft delete, write all): the deleted state is a source tombstone, returned as a row. */
static void test_matrix_item(void)
{
	char pk[32], b[64], v1[160], v2[160], v3[160];
	char ids[1][SY_UUID_LEN + 1];
	result *r;
	const sy_json *o;

	fresh_item(pk);
	mspec ins = {.table = "item", .pk = pk, .op = "insert", .cols = "{\"qty\":1}"};
	r = run(ALICE, NULL, &ins, 1, ids);
	expect_200(r);
	o = check(r, ids[0], "applied", NULL, true, true);
	CHECK_ROW_VALUE(o, "qty", "1");
	CHECK_ROW_VALUE(o, "label", "null");
	CHECK_ROW_VALUE(o, "deleted_at", "null");
	fence_version("item", bare(pk, b), v1);
	CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v1);
	result_free(r);

	r = run(ALICE, NULL, &ins, 1, ids);
	expect_200(r);
	check(r, ids[0], "conflict", "row_already_exists", true, true);
	result_free(r);

	mspec upd = {.table = "item", .pk = pk, .op = "update", .base = v1, .cols = "{\"qty\":2}"};
	r = run(ALICE, NULL, &upd, 1, ids);
	expect_200(r);
	o = check(r, ids[0], "applied", NULL, true, true);
	CHECK_ROW_VALUE(o, "qty", "2");
	fence_version("item", b, v2);
	result_free(r);

	r = run(ALICE, NULL, &upd, 1, ids);
	expect_200(r);
	o = check(r, ids[0], "conflict", "version_conflict", true, true);
	CHECK_ROW_VALUE(o, "qty", "2");
	result_free(r);
	mspec del = {.table = "item", .pk = pk, .op = "delete", .base = v1};
	r = run(ALICE, NULL, &del, 1, ids);
	expect_200(r);
	check(r, ids[0], "conflict", "version_conflict", true, true);
	result_free(r);

	/* soft delete: the tombstone is the row after the unit, deleted_at set */
	del.base = v2;
	r = run(ALICE, NULL, &del, 1, ids);
	expect_200(r);
	o = check(r, ids[0], "applied", NULL, true, true);
	char *d = row_value(o, "deleted_at");
	CU_ASSERT(d[0] == '"' && strlen(d) == SY_SERVER_TIME_LEN + 2);
	free(d);
	CHECK_ROW_VALUE(o, "qty", "2");
	fence_version("item", b, v3);
	CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v3);
	result_free(r);

	mspec ops[3] = {ins, upd, del};
	ops[1].base = v3;
	ops[2].base = v3;
	for (int i = 0; i < 3; i++) {
		r = run(ALICE, NULL, &ops[i], 1, ids);
		expect_200(r);
		o = check(r, ids[0], "conflict", "row_deleted", true, true);
		CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v3);
		CHECK_ROW_VALUE(o, "qty", "2");
		result_free(r);
	}

	char pk2[32];
	fresh_item(pk2);
	mspec absent[2] = {
	        {.table = "item", .pk = pk2, .op = "update", .base = v1, .cols = "{\"qty\":3}"},
	        {.table = "item", .pk = pk2, .op = "delete", .base = v1}};
	for (int i = 0; i < 2; i++) {
		r = run(ALICE, NULL, &absent[i], 1, ids);
		expect_200(r);
		check(r, ids[0], "conflict", "row_not_found", false, false);
		result_free(r);
	}
}

/* One non-atomic batch evaluates its mutations in order, each seeing the ones before. */
static void test_sequential_batch(void)
{
	char pk[32], b[64], v[160];
	char ids[4][SY_UUID_LEN + 1];
	fresh_item(pk);
	mspec ms[4] = {
	        {.table = "item", .pk = pk, .op = "insert", .cols = "{\"qty\":1}"},
	        {.table = "item", .pk = pk, .op = "insert", .cols = "{\"qty\":9}"},
	        {.table = "item", .pk = pk, .op = "update", .base = "nope", .cols = "{\"qty\":2}"},
	        {.table = "item", .pk = pk, .op = "delete", .base = "nope"},
	};
	result *r = run(ALICE, NULL, ms, 4, ids);
	expect_200(r);
	const sy_json *o0 = check(r, ids[0], "applied", NULL, true, true);
	const sy_json *o1 = check(r, ids[1], "conflict", "row_already_exists", true, true);
	check(r, ids[2], "conflict", "version_conflict", true, true);
	check(r, ids[3], "conflict", "version_conflict", true, true);
	fence_version("item", bare(pk, b), v);
	CU_ASSERT_STRING_EQUAL(str(o0, "server_version"), v);
	CU_ASSERT_STRING_EQUAL(str(o1, "server_version"), v);
	CHECK_ROW_VALUE(o1, "qty", "1");
	CU_ASSERT_EQUAL(r->a.applied, 1);
	result_free(r);
}

/* Consecutive inserts share a round trip; a refusal inside the run leaves the others. */
static void test_insert_run(void)
{
	char p1[32], p2[32], p3[32], v[160], b[64];
	char ids[5][SY_UUID_LEN + 1];
	make_item(p2, "{\"qty\":2}", v);
	fresh_item(p1);
	fresh_item(p3);
	mspec ms[5] = {
	        {.table = "item", .pk = p1, .op = "insert", .cols = "{\"qty\":1}"},
	        {.table = "item", .pk = p2, .op = "insert", .cols = "{\"qty\":9}"},
	        {.table = "item", .pk = p3, .op = "insert", .cols = "{\"nope\":3}"},
	        {.table = "item", .pk = p3, .op = "insert", .cols = "{\"qty\":3}"},
	        {.table = "item", .pk = p1, .op = "insert", .cols = "{\"qty\":4}"},
	};
	result *r = run(ALICE, NULL, ms, 5, ids);
	expect_200(r);
	check(r, ids[0], "applied", NULL, true, true);
	const sy_json *o = check(r, ids[1], "conflict", "row_already_exists", true, true);
	CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v);
	CHECK_ROW_VALUE(o, "qty", "2");
	check(r, ids[2], "rejected_terminal", "validation_failed", false, false);
	check(r, ids[3], "applied", NULL, true, true);
	o = check(r, ids[4], "conflict", "row_already_exists", true, true);
	CHECK_ROW_VALUE(o, "qty", "1");
	fence_version("item", bare(p1, b), v);
	CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v);
	CU_ASSERT_EQUAL(r->a.applied, 2);
	result_free(r);

	/* an atomic run of inserts stops at the refused one; its row is the committed one */
	char p4[32], p5[32];
	fresh_item(p4);
	fresh_item(p5);
	rspec at = {.atomic = true};
	mspec ms2[3] = {
	        {.table = "item", .pk = p4, .op = "insert", .cols = "{\"qty\":1}"},
	        {.table = "item", .pk = p2, .op = "insert", .cols = "{\"qty\":9}"},
	        {.table = "item", .pk = p5, .op = "insert", .cols = "{\"qty\":1}"},
	};
	r = run(ALICE, &at, ms2, 3, ids);
	expect_200(r);
	check(r, ids[0], "rejected_terminal", "atomic_batch_rejected", false, false);
	o = check(r, ids[1], "conflict", "row_already_exists", true, true);
	CHECK_ROW_VALUE(o, "qty", "2");
	check(r, ids[2], "rejected_terminal", "atomic_batch_rejected", false, false);
	fence_version("item", bare(p4, b), v);
	CU_ASSERT_STRING_EQUAL(v, "");
	result_free(r);

	/* an atomic group mixing runs of inserts with locked updates */
	char p6[32], v6[160], p7[32];
	make_item(p6, "{\"qty\":6}", v6);
	fresh_item(p7);
	mspec ms3[4] = {
	        {.table = "item", .pk = p4, .op = "insert", .cols = "{\"qty\":1}"},
	        {.table = "item", .pk = p6, .op = "update", .base = v6, .cols = "{\"qty\":7}"},
	        {.table = "item", .pk = p5, .op = "insert", .cols = "{\"qty\":1}"},
	        {.table = "item", .pk = p7, .op = "insert", .cols = "{\"qty\":1}"},
	};
	r = run(ALICE, &at, ms3, 4, ids);
	expect_200(r);
	for (int i = 0; i < 4; i++)
		check(r, ids[i], "applied", NULL, true, true);
	result_free(r);
}

/* Every portable type goes in as its wire value and comes back exactly. */
static void test_types(void)
{
	static const char cols[] =
	        "{\"blob\":\"AAEC/w==\",\"due\":\"2026-02-03\",\"label\":\"types \\u00e9\","
	        "\"price\":\"-12.5\",\"qty\":7,\"ref\":\"0e0e0e0e-0000-4000-8000-000000000000\","
	        "\"seen_at\":\"2026-02-03T04:05:06.123456Z\",\"tags\":\"{\\\"a\\\":[1,2.5,"
	        "\\\"x\\\"]}\","
	        "\"weight\":1e+21}";
	char pk[32];
	char ids[1][SY_UUID_LEN + 1];
	fresh_item(pk);
	mspec m = {.table = "item", .pk = pk, .op = "insert", .cols = cols};
	result *r = run(ALICE, NULL, &m, 1, ids);
	expect_200(r);
	const sy_json *o = check(r, ids[0], "applied", NULL, true, true);
	CHECK_ROW_VALUE(o, "blob", "\"AAEC/w==\"");
	CHECK_ROW_VALUE(o, "due", "\"2026-02-03\"");
	CHECK_ROW_VALUE(o, "label", "\"types \xc3\xa9\"");
	CHECK_ROW_VALUE(o, "price", "\"-12.5\"");
	CHECK_ROW_VALUE(o, "qty", "7");
	CHECK_ROW_VALUE(o, "ref", "\"0e0e0e0e-0000-4000-8000-000000000000\"");
	CHECK_ROW_VALUE(o, "seen_at", "\"2026-02-03T04:05:06.123456Z\"");
	CHECK_ROW_VALUE(o, "tags", "\"{\\\"a\\\":[1,2.5,\\\"x\\\"]}\"");
	CHECK_ROW_VALUE(o, "weight", "1e+21");
	CHECK_ROW_VALUE(o, "deleted_at", "null");
	result_free(r);
}

/* ---- replay and identity ---- */

/* An exact replay answers the stored status and bytes and does nothing else. */
static void test_replay(void)
{
	todo_id a;
	char v[160], after[160];
	make_todo(ALICE, CA1, &a, v);
	char batch[SY_UUID_LEN + 1];
	fresh(batch, 'b');
	rspec rs = {.batch = batch};
	mspec ms[2] = {
	        {.table = "todo",
	         .pk = a.json,
	         .op = "update",
	         .base = v,
	         .cols = "{\"done\":true}"},
	        {.table = "todo", .pk = a.json, .op = "insert", .cols = "{\"title\":\"x\"}"}};
	char *json = build(&rs, ms, 2, NULL);
	long long e0 = epoch(CA1);
	result *first = push_as(ALICE, json);
	expect_200(first);
	CU_ASSERT_FALSE(first->a.replay);
	CU_ASSERT_EQUAL(epoch(CA1), e0 + 1);
	fence_version("todo", a.id, v);
	long long batches = count("SELECT count(*) FROM synchro.batches");
	long long muts = count("SELECT count(*) FROM synchro.mutations");

	result *again = push_as(ALICE, json);
	expect_200(again);
	CU_ASSERT_TRUE(again->a.replay);
	CU_ASSERT_EQUAL(again->a.body.len, first->a.body.len);
	CU_ASSERT(again->a.body.len == first->a.body.len &&
	          memcmp(again->a.body.data, first->a.body.data, first->a.body.len) == 0);
	fence_version("todo", a.id, after);
	CU_ASSERT_STRING_EQUAL(after, v);
	CU_ASSERT_EQUAL(epoch(CA1), e0 + 1);
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM synchro.batches"), batches);
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM synchro.mutations"), muts);

	/* The stored bytes are the ledger's: batch response and each mutation outcome. */
	const char *pb[] = {batch};
	char *stored =
	        pgt_value(db,
	                  "SELECT convert_from(response, 'UTF8') FROM synchro.batches"
	                  " WHERE batch_id = $1 AND state = 'complete' AND http_status = 200",
	                  1, pb);
	CU_ASSERT_PTR_NOT_NULL(stored);
	if (stored)
		CU_ASSERT_STRING_EQUAL(stored, first->a.body.data);
	free(stored);
	const sy_json *arr = sy_json_get(sy_json_doc_root(first->doc), "rejected");
	CU_ASSERT_EQUAL(arr->u.array.count, 1);
	char *want = jcs_of(arr->u.array.items[0]);
	const char *pm[] = {str(arr->u.array.items[0], "mutation_id")};
	char *got = pgt_value(db,
	                      "SELECT convert_from(outcome, 'UTF8') FROM synchro.mutations"
	                      " WHERE mutation_id = $1",
	                      1, pm);
	CU_ASSERT_PTR_NOT_NULL(got);
	if (got && want)
		CU_ASSERT_STRING_EQUAL(got, want);
	free(got);
	free(want);

	/* A reconnect (new generation) does not change an exact replay. */
	pgt_exec(db, "UPDATE synchro.clients SET generation = generation + 1"
	             " WHERE client_id = '" CA1 "'");
	result *later = push_as(ALICE, json);
	expect_200(later);
	CU_ASSERT_TRUE(later->a.replay);
	CU_ASSERT(later->a.body.len == first->a.body.len &&
	          memcmp(later->a.body.data, first->a.body.data, first->a.body.len) == 0);
	result_free(later);

	/* The same batch id with other content: 409, no work. */
	ms[0].cols = "{\"done\":false}";
	rs.gen = client_generation(CA1);
	char *other = build(&rs, ms, 2, NULL);
	result *r = push_as(ALICE, other);
	expect_error(r, SY_ERR_IDEMPOTENCY_CONFLICT);
	fence_version("todo", a.id, after);
	CU_ASSERT_STRING_EQUAL(after, v);
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM synchro.mutations"), muts);
	result_free(r);
	free(other);

	/* The same batch id as an atomic request is another request too. */
	ms[0].cols = "{\"done\":true}";
	rs.atomic = true;
	other = build(&rs, ms, 1, NULL);
	r = push_as(ALICE, other);
	expect_error(r, SY_ERR_IDEMPOTENCY_CONFLICT);
	result_free(r);
	free(other);

	result_free(first);
	result_free(again);
	free(json);
}

/* A ledgered mutation moved into a new batch contributes its stored outcome. */
static void test_cross_batch(void)
{
	todo_id a, b;
	char mid[SY_UUID_LEN + 1], v[160], after[160];
	fresh_todo(&a);
	fresh_todo(&b);
	fresh(mid, 'a');
	mspec m1 = {.id = mid,
	            .table = "todo",
	            .pk = a.json,
	            .op = "insert",
	            .cols = "{\"title\":\"moved\"}"};
	char ids[2][SY_UUID_LEN + 1];
	result *r1 = run(ALICE, NULL, &m1, 1, ids);
	expect_200(r1);
	const sy_json *o1 = check(r1, mid, "applied", NULL, true, true);
	char *stored = jcs_of(o1);
	fence_version("todo", a.id, v);
	long long e0 = epoch(CA1);

	/* Unchanged content in a new batch (after a reconnect): no re-execution. */
	pgt_exec(db, "UPDATE synchro.clients SET generation = generation + 1"
	             " WHERE client_id = '" CA1 "'");
	mspec ms[2] = {
	        m1, {.table = "todo", .pk = b.json, .op = "insert", .cols = "{\"title\":\"new\"}"}};
	result *r2 = run(ALICE, NULL, ms, 2, ids);
	expect_200(r2);
	char *replayed = jcs_of(outcome(r2, mid, NULL));
	CU_ASSERT_PTR_NOT_NULL(replayed);
	if (replayed && stored)
		CU_ASSERT_STRING_EQUAL(replayed, stored);
	check(r2, ids[1], "applied", NULL, true, true);
	fence_version("todo", a.id, after);
	CU_ASSERT_STRING_EQUAL(after, v);
	CU_ASSERT_EQUAL(epoch(CA1), e0 + 1);
	const char *pm[] = {mid};
	CU_ASSERT_EQUAL(
	        pgt_int(db, "SELECT count(*) FROM synchro.mutations WHERE mutation_id = $1", 1, pm),
	        1);
	free(replayed);

	/* Only stored outcomes: a complete batch with nothing new, the epoch unchanged. */
	result *r3 = run(ALICE, NULL, &m1, 1, ids);
	expect_200(r3);
	CU_ASSERT_FALSE(r3->a.replay);
	replayed = jcs_of(outcome(r3, mid, NULL));
	if (replayed && stored)
		CU_ASSERT_STRING_EQUAL(replayed, stored);
	free(replayed);
	CU_ASSERT_EQUAL(epoch(CA1), e0 + 1);
	result_free(r3);

	/* Changed content under the same mutation id: 409 and no work. */
	mspec changed = m1;
	changed.cols = "{\"title\":\"other\"}";
	mspec ms2[2] = {changed, {.table = "todo", .pk = b.json, .op = "delete", .base = "x"}};
	result *r4 = run(ALICE, NULL, ms2, 2, NULL);
	expect_error(r4, SY_ERR_IDEMPOTENCY_CONFLICT);
	result_free(r4);

	/* An atomic request naming a ledgered mutation is invalid. */
	rspec at = {.atomic = true};
	todo_id c;
	fresh_todo(&c);
	mspec ms3[2] = {
	        m1, {.table = "todo", .pk = c.json, .op = "insert", .cols = "{\"title\":\"c\"}"}};
	result *r5 = run(ALICE, &at, ms3, 2, NULL);
	expect_error(r5, SY_ERR_INVALID_REQUEST);
	result_free(r5);
	fence_version("todo", c.id, after);
	CU_ASSERT_STRING_EQUAL(after, "");

	/*
	 * A mutation rejected with its atomic group cannot be replayed into a non-atomic
	 * response (which never carries atomic_batch_rejected): 400, its intent needs a new id.
	 */
	char p1[32];
	char gids[2][SY_UUID_LEN + 1];
	fresh_item(p1);
	mspec grp[2] = {{.table = "item", .pk = p1, .op = "insert", .cols = "{\"qty\":1}"},
	                {.table = "item", .pk = p1 /* unused */, .op = "delete", .base = "x"}};
	char p2[32];
	fresh_item(p2);
	grp[1].pk = p2;
	result *rg = run(ALICE, &at, grp, 2, gids);
	expect_200(rg);
	check(rg, gids[0], "rejected_terminal", "atomic_batch_rejected", false, false);
	check(rg, gids[1], "conflict", "row_not_found", false, false);
	result_free(rg);
	mspec again = grp[0];
	again.id = gids[0];
	rg = run(ALICE, NULL, &again, 1, NULL);
	expect_error(rg, SY_ERR_INVALID_REQUEST);
	result_free(rg);
	/* the failing mutation of the group replays its own outcome */
	mspec failing = grp[1];
	failing.id = gids[1];
	rg = run(ALICE, NULL, &failing, 1, NULL);
	expect_200(rg);
	check(rg, gids[1], "conflict", "row_not_found", false, false);
	result_free(rg);

	/* Mutation identity is scoped by client: another client may use the same id. */
	rspec other = {.client = CA2};
	todo_id d;
	fresh_todo(&d);
	mspec m2 = {.id = mid,
	            .table = "todo",
	            .pk = d.json,
	            .op = "insert",
	            .cols = "{\"title\":\"d\"}"};
	result *r6 = run(ALICE, &other, &m2, 1, NULL);
	expect_200(r6);
	check(r6, mid, "applied", NULL, true, true);
	result_free(r6);

	free(stored);
	result_free(r1);
	result_free(r2);
}

/* ---- atomic groups ---- */

static void test_atomic_success(void)
{
	char p1[32], p2[32], b1[64], b2[64], v1[160], v2[160];
	char ids[2][SY_UUID_LEN + 1];
	fresh_item(p1);
	fresh_item(p2);
	rspec rs = {.atomic = true};
	/* the same label twice inside the group, made unique again before the group ends */
	mspec ms[2] = {
	        {.table = "item", .pk = p1, .op = "insert", .cols = "{\"label\":\"dup-ok\"}"},
	        {.table = "item", .pk = p2, .op = "insert", .cols = "{\"label\":\"dup-ok\"}"}};
	long long e0 = epoch(CA1);
	result *r = run(ALICE, &rs, ms, 2, ids);
	expect_200(r);
	/* rejected: the deferred unique check fails at the group end, on the last mutation */
	check(r, ids[0], "rejected_terminal", "atomic_batch_rejected", false, false);
	const sy_json *o = check(r, ids[1], "rejected_terminal", "validation_failed", false, false);
	CU_ASSERT_PTR_NOT_NULL(str(o, "message"));
	CU_ASSERT_EQUAL(sy_json_get(sy_json_doc_root(r->doc), "accepted")->u.array.count, 0);
	CU_ASSERT_EQUAL(epoch(CA1), e0);
	fence_version("item", bare(p1, b1), v1);
	fence_version("item", bare(p2, b2), v2);
	CU_ASSERT_STRING_EQUAL(v1, "");
	CU_ASSERT_STRING_EQUAL(v2, "");
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM item WHERE label = 'dup-ok'"), 0);
	/* the ledger keeps every outcome of the completed group */
	const char *pm[] = {ids[0], ids[1]};
	CU_ASSERT_EQUAL(
	        pgt_int(db, "SELECT count(*) FROM synchro.mutations WHERE mutation_id IN ($1, $2)",
	                2, pm),
	        2);
	result_free(r);

	/* distinct labels: both applied, each reporting the row after the group's check */
	ms[1].cols = "{\"label\":\"dup-ok-2\",\"qty\":4}";
	r = run(ALICE, &rs, ms, 2, ids);
	expect_200(r);
	check(r, ids[0], "applied", NULL, true, true);
	o = check(r, ids[1], "applied", NULL, true, true);
	CHECK_ROW_VALUE(o, "qty", "4");
	fence_version("item", b1, v1);
	fence_version("item", b2, v2);
	CU_ASSERT_STRING_EQUAL(str(outcome(r, ids[0], NULL), "server_version"), v1);
	CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v2);
	CU_ASSERT_EQUAL(epoch(CA1), e0 + 1);
	CU_ASSERT_EQUAL(r->a.applied, 2);
	result_free(r);
}

/*
 * A run of inserts refused anywhere: each refused insert is settled as its own unit
 * would have been (deferred label check, existing row, immediate check), every other
 * one applied with its own mutation id on its fence, an update between runs.
 */
static void test_insert_run_refusals(void)
{
	char pa[32], pb[32], px[32], pc[32], pd[32], pe[32], pf[32], pg[32], vx[160], vd[160];
	char b[64];
	char ids[8][SY_UUID_LEN + 1];
	make_item(px, "{\"qty\":1}", vx);
	make_item(pd, "{\"qty\":2}", vd);
	fresh_item(pa);
	fresh_item(pb);
	fresh_item(pc);
	fresh_item(pe);
	fresh_item(pf);
	fresh_item(pg);
	mspec ms[8] = {
	        {.table = "item", .pk = pa, .op = "insert", .cols = "{\"label\":\"run-a\"}"},
	        {.table = "item", .pk = pb, .op = "insert", .cols = "{\"label\":\"run-a\"}"},
	        {.table = "item", .pk = px, .op = "update", .base = vx, .cols = "{\"qty\":5}"},
	        {.table = "item", .pk = pc, .op = "insert", .cols = "{\"qty\":3}"},
	        {.table = "item", .pk = pd, .op = "insert", .cols = "{\"qty\":9}"},
	        {.table = "item", .pk = pe, .op = "insert", .cols = "{\"qty\":-1}"},
	        {.table = "item", .pk = pf, .op = "insert", .cols = "{\"qty\":6}"},
	        {.table = "item", .pk = pg, .op = "insert", .cols = "{\"qty\":7}"},
	};
	long long e0 = epoch(CA1);
	result *r = run(ALICE, NULL, ms, 8, ids);
	expect_200(r);
	check(r, ids[0], "applied", NULL, true, true);
	check(r, ids[1], "rejected_terminal", "validation_failed", false, false);
	check(r, ids[2], "applied", NULL, true, true);
	check(r, ids[3], "applied", NULL, true, true);
	const sy_json *o = check(r, ids[4], "conflict", "row_already_exists", true, true);
	CU_ASSERT_STRING_EQUAL(str(o, "server_version"), vd);
	CHECK_ROW_VALUE(o, "qty", "2");
	check(r, ids[5], "rejected_terminal", "validation_failed", false, false);
	check(r, ids[6], "applied", NULL, true, true);
	check(r, ids[7], "applied", NULL, true, true);
	CU_ASSERT_EQUAL(r->a.applied, 5);
	CU_ASSERT_EQUAL(epoch(CA1), e0 + 1);
	/* each written fence names the mutation that wrote it; refused ones wrote nothing */
	const char *pks[] = {pa, px, pc, pf, pg};
	const size_t who[] = {0, 2, 3, 6, 7};
	for (size_t i = 0; i < 5; i++) {
		char *m = fence_field("item", bare(pks[i], b), "mutation_id");
		CU_ASSERT_STRING_EQUAL(m ? m : "", ids[who[i]]);
		free(m);
	}
	char v[160];
	fence_version("item", bare(pb, b), v);
	CU_ASSERT_STRING_EQUAL(v, "");
	fence_version("item", bare(pe, b), v);
	CU_ASSERT_STRING_EQUAL(v, "");
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM item WHERE label = 'run-a'"), 1);
	result_free(r);
}

/*
 * One run of 40 inserts, each with its own set of columns, so its own statement, on a
 * push state that starts empty: the statement table grows while the pipeline holds the
 * statements it prepares (they were moved by the growth once; AddressSanitizer saw the
 * pipeline write to the freed table).
 */
static void test_insert_run_statements(void)
{
	static const char *const cols[] = {"\"qty\":1",
	                                   "\"price\":\"1.5\"",
	                                   "\"weight\":2.5",
	                                   "\"due\":\"2026-12-01\"",
	                                   "\"seen_at\":\"2026-11-29T10:11:12.123456Z\"",
	                                   "\"blob\":\"AAECAw==\""};
	enum { N = 40 };
	char pks[N][32], json[N][256], ids[N][SY_UUID_LEN + 1];
	mspec ms[N];
	for (unsigned i = 0; i < N; i++) {
		fresh_item(pks[i]);
		size_t len = 0;
		json[i][len++] = '{';
		for (unsigned c = 0; c < 6; c++)
			if ((i + 1) & (1u << c))
				len += (size_t)snprintf(json[i] + len, sizeof json[i] - len, "%s%s",
				                        len > 1 ? "," : "", cols[c]);
		snprintf(json[i] + len, sizeof json[i] - len, "}");
		ms[i] = (mspec){.table = "item", .pk = pks[i], .op = "insert", .cols = json[i]};
	}
	/* its own session: a backend that has prepared none of the module's statements */
	sy_error e = {0};
	PGconn *own = sy_store_connect("user=" APP_ROLE, "test_push", &e);
	CU_ASSERT_PTR_NOT_NULL_FATAL(own);
	char *body = build(&(rspec){0}, ms, N, ids);
	result *r = push_on(own, ALICE, body, 5000);
	expect_200(r);
	CU_ASSERT_EQUAL(r->a.applied, N);
	for (unsigned i = 0; i < N; i++)
		check(r, ids[i], "applied", NULL, true, true);
	result_free(r);
	free(body);
	sy_store_disconnect(own);
}

/* One run over two tables: each applied outcome carries its own row and version. */
static void test_insert_run_tables(void)
{
	char p1[32], p2[32], b[64], v[160];
	todo_id t1, t2;
	char ids[4][SY_UUID_LEN + 1];
	fresh_item(p1);
	fresh_item(p2);
	fresh_todo(&t1);
	fresh_todo(&t2);
	mspec ms[4] = {
	        {.table = "item", .pk = p1, .op = "insert", .cols = "{\"qty\":11}"},
	        {.table = "todo", .pk = t1.json, .op = "insert", .cols = "{\"title\":\"t-one\"}"},
	        {.table = "item", .pk = p2, .op = "insert", .cols = "{\"qty\":22}"},
	        {.table = "todo", .pk = t2.json, .op = "insert", .cols = "{\"title\":\"t-two\"}"},
	};
	result *r = run(ALICE, NULL, ms, 4, ids);
	expect_200(r);
	const sy_json *o = check(r, ids[0], "applied", NULL, true, true);
	CHECK_ROW_VALUE(o, "qty", "11");
	fence_version("item", bare(p1, b), v);
	CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v);
	o = check(r, ids[1], "applied", NULL, true, true);
	CHECK_ROW_VALUE(o, "title", "\"t-one\"");
	CHECK_ROW_VALUE(o, "owner", "\"alice\"");
	fence_version("todo", t1.id, v);
	CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v);
	o = check(r, ids[2], "applied", NULL, true, true);
	CHECK_ROW_VALUE(o, "qty", "22");
	fence_version("item", bare(p2, b), v);
	CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v);
	o = check(r, ids[3], "applied", NULL, true, true);
	CHECK_ROW_VALUE(o, "title", "\"t-two\"");
	fence_version("todo", t2.id, v);
	CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v);
	result_free(r);
}

/* In a non-atomic batch the unit boundary checks the deferred constraint per mutation. */
static void test_nonatomic_deferred(void)
{
	char p1[32], p2[32], b[64], v[160];
	char ids[2][SY_UUID_LEN + 1];
	fresh_item(p1);
	fresh_item(p2);
	mspec ms[2] = {{.table = "item", .pk = p1, .op = "insert", .cols = "{\"label\":\"same\"}"},
	               {.table = "item", .pk = p2, .op = "insert", .cols = "{\"label\":\"same\"}"}};
	long long e0 = epoch(CA1);
	result *r = run(ALICE, NULL, ms, 2, ids);
	expect_200(r);
	check(r, ids[0], "applied", NULL, true, true);
	check(r, ids[1], "rejected_terminal", "validation_failed", false, false);
	CU_ASSERT_EQUAL(epoch(CA1), e0 + 1);
	fence_version("item", bare(p2, b), v);
	CU_ASSERT_STRING_EQUAL(v, "");
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM item WHERE label = 'same'"), 1);
	result_free(r);

	/* an immediate check constraint (qty >= 0) fails the mutation's own write */
	mspec neg = {.table = "item", .pk = p2, .op = "insert", .cols = "{\"qty\":-1}"};
	r = run(ALICE, NULL, &neg, 1, ids);
	expect_200(r);
	check(r, ids[0], "rejected_terminal", "validation_failed", false, false);
	CU_ASSERT_EQUAL(epoch(CA1), e0 + 1);
	result_free(r);
}

/* The first non-applied outcome stops the group; a conflict shows the committed row. */
static void test_atomic_conflict(void)
{
	char p1[32], p2[32], b1[64], v2[160], v1[160];
	char ids[3][SY_UUID_LEN + 1];
	make_item(p2, "{\"qty\":5}", v2);
	fresh_item(p1);
	rspec rs = {.atomic = true};
	mspec ms[3] = {
	        {.table = "item", .pk = p1, .op = "insert", .cols = "{\"qty\":1}"},
	        {.table = "item", .pk = p2, .op = "update", .base = "stale", .cols = "{\"qty\":6}"},
	        {.table = "item", .pk = p1, .op = "update", .base = "x", .cols = "{\"qty\":2}"},
	};
	/* the same identity twice is refused for an atomic request (400) */
	result *r = run(ALICE, &rs, ms, 3, ids);
	CU_ASSERT_EQUAL(r->parse_error, 1);
	result_free(r);

	long long e0 = epoch(CA1);
	r = run(ALICE, &rs, ms, 2, ids);
	expect_200(r);
	check(r, ids[0], "rejected_terminal", "atomic_batch_rejected", false, false);
	const sy_json *o = check(r, ids[1], "conflict", "version_conflict", true, true);
	CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v2);
	CHECK_ROW_VALUE(o, "qty", "5");
	fence_version("item", bare(p1, b1), v1);
	CU_ASSERT_STRING_EQUAL(v1, "");
	CU_ASSERT_EQUAL(epoch(CA1), e0);
	result_free(r);

	/*
	 * A conflict caused by the group's own earlier write is rebuilt from the committed
	 * state after the rollback: the row the group inserted does not exist there.
	 */
	char p3[32], p4[32];
	fresh_item(p3);
	fresh_item(p4);
	mspec ms2[2] = {
	        {.table = "item", .pk = p3, .op = "insert", .cols = "{\"qty\":1}"},
	        {.table = "item", .pk = p4, .op = "update", .base = "x", .cols = "{\"qty\":2}"},
	};
	r = run(ALICE, &rs, ms2, 2, ids);
	expect_200(r);
	check(r, ids[0], "rejected_terminal", "atomic_batch_rejected", false, false);
	check(r, ids[1], "conflict", "row_not_found", false, false);
	result_free(r);

	/* a terminal rejection of the first mutation rejects the rest without any write */
	mspec ms3[2] = {
	        {.table = "item", .pk = p3, .op = "insert", .cols = "{\"nope\":1}"},
	        {.table = "item", .pk = p4, .op = "insert", .cols = "{\"qty\":2}"},
	};
	r = run(ALICE, &rs, ms3, 2, ids);
	expect_200(r);
	check(r, ids[0], "rejected_terminal", "validation_failed", false, false);
	check(r, ids[1], "rejected_terminal", "atomic_batch_rejected", false, false);
	CU_ASSERT_EQUAL(epoch(CA1), e0);
	result_free(r);
}

/* ---- terminal rules ---- */

/* bob is refused on alice's todo, and the refusal shows nothing of her row. */
static void test_policy(void)
{
	todo_id a;
	char v[160], after[160];
	char ids[1][SY_UUID_LEN + 1];
	fresh_todo(&a);
	mspec ins = {.table = "todo",
	             .pk = a.json,
	             .op = "insert",
	             .cols = "{\"title\":\"secret-of-alice\"}"};
	result *r = run(ALICE, NULL, &ins, 1, ids);
	expect_200(r);
	result_free(r);
	fence_version("todo", a.id, v);

	rspec bob = {.client = CB1};
	mspec ms[4] = {
	        {.table = "todo",
	         .pk = a.json,
	         .op = "update",
	         .base = v,
	         .cols = "{\"title\":\"b\"}"},
	        {.table = "todo", .pk = a.json, .op = "delete", .base = v},
	        {.table = "todo", .pk = a.json, .op = "insert", .cols = "{\"title\":\"b\"}"},
	        /* policy precedes validation: the owner field is not writable either */
	        {.table = "todo",
	         .pk = a.json,
	         .op = "update",
	         .base = "x",
	         .cols = "{\"owner\":\"bob\"}"},
	};
	for (int i = 0; i < 4; i++) {
		r = run(BOB, &bob, &ms[i], 1, ids);
		expect_200(r);
		check(r, ids[0], "rejected_terminal", "policy_rejected", false, false);
		CU_ASSERT_PTR_NULL(strstr(r->a.body.data, "secret"));
		CU_ASSERT_PTR_NULL(strstr(r->a.body.data, "alice"));
		CU_ASSERT_PTR_NULL(strstr(r->a.body.data, v));
		result_free(r);
	}
	fence_version("todo", a.id, after);
	CU_ASSERT_STRING_EQUAL(after, v);

	/* bob's own todo is his to write */
	todo_id b;
	char vb[160];
	make_todo(BOB, CB1, &b, vb);
	mspec own = {.table = "todo",
	             .pk = b.json,
	             .op = "update",
	             .base = vb,
	             .cols = "{\"done\":true}"};
	r = run(BOB, &bob, &own, 1, ids);
	expect_200(r);
	const sy_json *o = check(r, ids[0], "applied", NULL, true, true);
	CHECK_ROW_VALUE(o, "owner", "\"bob\"");
	result_free(r);
}

static void test_validation(void)
{
	todo_id a;
	char v[160], after[160];
	char ids[1][SY_UUID_LEN + 1];
	make_todo(ALICE, CA1, &a, v);
	char p[32], vi[160];
	make_item(p, "{\"qty\":1}", vi);
	const mspec bad[] = {
	        {.table = "todo",
	         .pk = a.json,
	         .op = "update",
	         .base = v,
	         .cols = "{\"owner\":\"alice\"}"},
	        {.table = "todo", .pk = a.json, .op = "update", .base = v, .cols = "{\"nope\":1}"},
	        {.table = "todo",
	         .pk = a.json,
	         .op = "update",
	         .base = v,
	         .cols = "{\"title\":null}"},
	        {.table = "todo", .pk = a.json, .op = "update", .base = v, .cols = "{\"done\":1}"},
	        {.table = "todo",
	         .pk = a.json,
	         .op = "update",
	         .base = v,
	         .cols = "{\"id\":\"0e0e0e0e-0000-4000-8000-000000000000\"}"},
	        {.table = "item", .pk = p, .op = "update", .base = vi, .cols = "{\"qty\":1.0}"},
	        {.table = "item",
	         .pk = p,
	         .op = "update",
	         .base = vi,
	         .cols = "{\"price\":\"1.50\"}"},
	        {.table = "item",
	         .pk = p,
	         .op = "update",
	         .base = vi,
	         .cols = "{\"qty\":2147483648}"},
	        {.table = "item",
	         .pk = p,
	         .op = "update",
	         .base = vi,
	         .cols = "{\"deleted_at\":\"2026-01-01T00:00:00.000000Z\"}"},
	        {.table = "item",
	         .pk = p,
	         .op = "update",
	         .base = vi,
	         .cols = "{\"seen_at\":\"2026-01-01T00:00:00Z\"}"},
	        {.table = "item",
	         .pk = p,
	         .op = "update",
	         .base = vi,
	         .cols = "{\"tags\":\"{ }\"}"},
	        /* a valid value beside an invalid one is not applied either */
	        {.table = "item",
	         .pk = p,
	         .op = "update",
	         .base = vi,
	         .cols = "{\"label\":\"ok\",\"qty\":\"1\"}"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		result *r = run(ALICE, NULL, &bad[i], 1, ids);
		expect_200(r);
		const sy_json *o =
		        check(r, ids[0], "rejected_terminal", "validation_failed", false, false);
		if (o == NULL || strcmp(str(o, "code"), "validation_failed") != 0)
			fprintf(stderr, "  (case %zu)\n", i);
		result_free(r);
	}
	fence_version("todo", a.id, after);
	CU_ASSERT_STRING_EQUAL(after, v);
	char b[64];
	fence_version("item", bare(p, b), after);
	CU_ASSERT_STRING_EQUAL(after, vi);

	/* validation precedes the matrix: an invalid update of an absent row is not a conflict */
	todo_id none;
	fresh_todo(&none);
	mspec m = {.table = "todo",
	           .pk = none.json,
	           .op = "update",
	           .base = v,
	           .cols = "{\"nope\":1}"};
	result *r = run(ALICE, NULL, &m, 1, ids);
	expect_200(r);
	check(r, ids[0], "rejected_terminal", "validation_failed", false, false);
	result_free(r);

	/* an insert that omits a NOT NULL column without default fails the database's check */
	mspec noTitle = {.table = "todo", .pk = none.json, .op = "insert", .cols = "{}"};
	r = run(ALICE, NULL, &noTitle, 1, ids);
	expect_200(r);
	check(r, ids[0], "rejected_terminal", "validation_failed", false, false);
	result_free(r);

	/* a non-canonical primary key is a request error */
	mspec badpk = {.table = "item", .pk = "7", .op = "insert", .cols = "{}"};
	r = run(ALICE, NULL, &badpk, 1, ids);
	expect_error(r, SY_ERR_INVALID_REQUEST);
	result_free(r);
	mspec upper = {.table = "todo",
	               .pk = "\"0E0E0E0E-0000-4000-8000-000000000000\"",
	               .op = "insert",
	               .cols = "{}"};
	r = run(ALICE, NULL, &upper, 1, ids);
	expect_error(r, SY_ERR_INVALID_REQUEST);
	result_free(r);
}

static void test_table_not_synced(void)
{
	char ids[2][SY_UUID_LEN + 1];
	mspec ms[2] = {{.table = "nosuch", .pk = "\"1\"", .op = "insert", .cols = "{\"a\":1}"},
	               {.table = "nosuch", .pk = "1", .op = "delete", .base = "v"}};
	long long e0 = epoch(CA1);
	result *r = run(ALICE, NULL, ms, 2, ids);
	expect_200(r);
	check(r, ids[0], "rejected_terminal", "table_not_synced", false, false);
	check(r, ids[1], "rejected_terminal", "table_not_synced", false, false);
	CU_ASSERT_EQUAL(epoch(CA1), e0);
	result_free(r);
}

/* accepted_write_epoch moves once per batch that applied anything, never otherwise. */
static void test_epoch(void)
{
	char p[32], v[160];
	char ids[3][SY_UUID_LEN + 1];
	make_item(p, "{}", v);
	long long e0 = epoch(CA1);
	mspec conflicts[2] = {
	        {.table = "item", .pk = p, .op = "insert", .cols = "{}"},
	        {.table = "item", .pk = p, .op = "update", .base = "x", .cols = "{\"qty\":1}"}};
	result *r = run(ALICE, NULL, conflicts, 2, ids);
	expect_200(r);
	CU_ASSERT_EQUAL(r->a.applied, 0);
	CU_ASSERT_EQUAL(epoch(CA1), e0);
	result_free(r);
	mspec mixed[3] = {
	        conflicts[0],
	        {.table = "item", .pk = p, .op = "update", .base = v, .cols = "{\"qty\":1}"},
	        {.table = "item", .pk = p, .op = "update", .base = "y", .cols = "{}"}};
	r = run(ALICE, NULL, mixed, 3, ids);
	/* an empty update patch is a request error */
	CU_ASSERT_EQUAL(r->parse_error, 1);
	result_free(r);
	mixed[2].cols = "{\"qty\":3}";
	r = run(ALICE, NULL, mixed, 3, ids);
	expect_200(r);
	check(r, ids[0], "conflict", "row_already_exists", true, true);
	check(r, ids[1], "applied", NULL, true, true);
	check(r, ids[2], "conflict", "version_conflict", true, true);
	CU_ASSERT_EQUAL(r->a.applied, 1);
	CU_ASSERT_EQUAL(epoch(CA1), e0 + 1);
	result_free(r);
}

/* ---- gates ---- */

static void test_gates(void)
{
	todo_id a;
	char ids[1][SY_UUID_LEN + 1];
	fresh_todo(&a);
	mspec m = {.table = "todo", .pk = a.json, .op = "insert", .cols = "{\"title\":\"g\"}"};
	long long gen = client_generation(CA1);
	char after[160];

	/* a stale or a future generation: 409, nothing written */
	rspec stale = {.gen = gen - 1};
	rspec future = {.gen = gen + 1};
	result *r = run(ALICE, &stale, &m, 1, ids);
	expect_error(r, SY_ERR_CLIENT_GENERATION_EXPIRED);
	result_free(r);
	r = run(ALICE, &future, &m, 1, ids);
	expect_error(r, SY_ERR_CLIENT_GENERATION_EXPIRED);
	result_free(r);
	const char *pm[] = {ids[0]};
	CU_ASSERT_EQUAL(
	        pgt_int(db, "SELECT count(*) FROM synchro.mutations WHERE mutation_id = $1", 1, pm),
	        0);

	/* another schema reference: 422 naming both */
	sy_schema_ref wrong = cur;
	wrong.hash[0] = wrong.hash[0] == 'a' ? 'b' : 'a';
	rspec ws = {.schema = &wrong};
	r = run(ALICE, &ws, &m, 1, ids);
	expect_error(r, SY_ERR_SCHEMA_MISMATCH);
	CU_ASSERT_EQUAL(r->a.current.version, cur.version);
	CU_ASSERT_STRING_EQUAL(r->a.current.hash, cur.hash);
	CU_ASSERT_STRING_EQUAL(r->a.received.hash, wrong.hash);
	result_free(r);

	/* the generation gate precedes the schema gate */
	rspec both = {.gen = gen + 1, .schema = &wrong};
	r = run(ALICE, &both, &m, 1, ids);
	expect_error(r, SY_ERR_CLIENT_GENERATION_EXPIRED);
	result_free(r);

	/* a client of another user, or none: 401 */
	rspec foreign = {.client = CB1, .gen = client_generation(CB1)};
	r = run(ALICE, &foreign, &m, 1, ids);
	expect_error(r, SY_ERR_AUTH_REQUIRED);
	result_free(r);
	rspec unknown = {.client = "c0000000-0000-4000-8000-0000000000ff", .gen = 1};
	r = run(ALICE, &unknown, &m, 1, ids);
	expect_error(r, SY_ERR_AUTH_REQUIRED);
	result_free(r);
	fence_version("todo", a.id, after);
	CU_ASSERT_STRING_EQUAL(after, "");

	/* retirement precedes replay: a retired client's completed batch is not replayed */
	const char *cr = "c0000000-0000-4000-8000-0000000000c1";
	const char *pc[] = {cr};
	PQclear(pgt_query(db,
	                  "INSERT INTO synchro.clients (client_id, user_id, generation)"
	                  " VALUES ($1, 'alice', 1)",
	                  1, pc));
	rspec rc = {.client = cr};
	char *json = build(&rc, &m, 1, ids);
	r = push_as(ALICE, json);
	expect_200(r);
	result_free(r);
	PQclear(pgt_query(db,
	                  "INSERT INTO synchro.retirements (client_id, user_id, retirement_id)"
	                  " VALUES ($1, 'alice', gen_random_uuid())",
	                  1, pc));
	r = push_as(ALICE, json);
	expect_error(r, SY_ERR_CLIENT_RETIRED);
	result_free(r);
	free(json);
	/* a retired client of another user is still a 401 */
	r = push_as(BOB, json = build(&rc, &m, 1, ids));
	expect_error(r, SY_ERR_AUTH_REQUIRED);
	result_free(r);
	free(json);

	/* an invalid authenticated user cannot be fingerprinted: 401 */
	json = build(&(rspec){0}, &m, 1, ids);
	r = push_as("bad\nuser", json);
	expect_error(r, SY_ERR_AUTH_REQUIRED);
	result_free(r);
	free(json);
}

/* Statements the session lost (DEALLOCATE ALL, a pooler) are prepared again. */
static void test_lost_statements(void)
{
	char p[32], v[160];
	make_item(p, "{}", v);
	PQclear(PQexec(app, "DEALLOCATE ALL"));
	char ids[1][SY_UUID_LEN + 1];
	mspec m = {.table = "item", .pk = p, .op = "update", .base = v, .cols = "{\"qty\":1}"};
	result *r = run(ALICE, NULL, &m, 1, ids);
	expect_200(r);
	check(r, ids[0], "applied", NULL, true, true);
	result_free(r);
}

/* ---- admission (a first execution holds its slots until its transaction ends) ---- */

typedef struct {
	pid_t pid;
	int fd; /* reads the child's answer */
} child;
static child spawn(const char *user, const char *json, const int go[2], int lock_timeout_ms);
typedef struct {
	int status;
	int replay;
	int error;
	int st;
	char *body; /* malloc */
	size_t len;
	int exit_status;
} child_answer;
static child_answer collect(child ch);
static bool wait_for_lock_waiters(int n);

/*
 * A push of client (a fresh todo insert) whose first execution holds its admission slots
 * while it waits for the client row, which db holds: the caller COMMITs db to let it go.
 */
static child hold_slots(const char *client, char json_out[1024])
{
	todo_id t;
	fresh_todo(&t);
	mspec m = {.table = "todo", .pk = t.json, .op = "insert", .cols = "{\"title\":\"held\"}"};
	rspec rs = {.client = client};
	char *json = build(&rs, &m, 1, NULL);
	snprintf(json_out, 1024, "%s", json);
	free(json);
	pgt_exec(db, "BEGIN");
	char sql[160];
	snprintf(sql, sizeof sql, "SELECT 1 FROM synchro.clients WHERE client_id = '%s' FOR UPDATE",
	         client);
	pgt_exec(db, sql);
	child ch = spawn(ALICE, json_out, NULL, 20000);
	CU_ASSERT_TRUE(wait_for_lock_waiters(1));
	return ch;
}

static void release_slots(child ch)
{
	pgt_exec(db, "COMMIT");
	child_answer ans = collect(ch);
	CU_ASSERT_EQUAL(ans.status, 200);
	free(ans.body);
}

/*
 * Admission (429 retry_later with Retry-After) comes after every gate, holds across
 * every session (advisory-lock slots in the database, not per process), never refuses a
 * replay, and counts a concurrent duplicate of an executing batch once.
 */
static void test_admission(void)
{
	todo_id a;
	char held[1024], v[160];
	fresh_todo(&a);
	mspec m = {.table = "todo", .pk = a.json, .op = "insert", .cols = "{\"title\":\"adm\"}"};
	char *json = build(&(rspec){0}, &m, 1, NULL);

	/* the total cap: another client's execution holds the only slot */
	cap_total = 1;
	child ch = hold_slots(CA2, held);
	result *r = push_as(ALICE, json);
	expect_error(r, SY_ERR_RETRY_LATER);
	CU_ASSERT(r->a.retry_after > 0);
	result_free(r);
	fence_version("todo", a.id, v);
	CU_ASSERT_STRING_EQUAL(v, "");
	release_slots(ch);
	r = push_as(ALICE, json);
	expect_200(r);
	CU_ASSERT_FALSE(r->a.replay);
	result_free(r);
	/* a replay is not a first execution: never refused */
	ch = hold_slots(CA2, held);
	r = push_as(ALICE, json);
	expect_200(r);
	CU_ASSERT_TRUE(r->a.replay);
	result_free(r);
	release_slots(ch);
	cap_total = 0;

	/* the per-client cap: the client's own execution holds its slot; another batch of
	 * the same client is refused, a concurrent duplicate of that batch is not */
	cap_client = 1;
	ch = hold_slots(CA1, held);
	todo_id b;
	fresh_todo(&b);
	mspec mb = {.table = "todo", .pk = b.json, .op = "insert", .cols = "{\"title\":\"b\"}"};
	char *jb = build(&(rspec){0}, &mb, 1, NULL);
	r = push_as(ALICE, jb);
	expect_error(r, SY_ERR_RETRY_LATER);
	result_free(r);
	child dup = spawn(ALICE, held, NULL, 20000);
	CU_ASSERT_TRUE(wait_for_lock_waiters(2));
	release_slots(ch);
	child_answer da = collect(dup);
	CU_ASSERT_EQUAL(da.status, 200);
	CU_ASSERT_EQUAL(da.replay, 1);
	free(da.body);
	r = push_as(ALICE, jb);
	expect_200(r);
	result_free(r);
	cap_client = 0;
	free(jb);
	free(json);
}

/*
 * The mutation ledger's answers (409 idempotency_conflict, the atomic 400s) precede the
 * generation, schema and admission gates, whichever round trip reads the ledger.
 */
static void test_ledger_precedence(void)
{
	todo_id a, b;
	char mid[SY_UUID_LEN + 1];
	fresh_todo(&a);
	fresh_todo(&b);
	fresh(mid, 'a');
	mspec m1 = {.id = mid,
	            .table = "todo",
	            .pk = a.json,
	            .op = "insert",
	            .cols = "{\"title\":\"ledgered\"}"};
	result *r = run(ALICE, NULL, &m1, 1, NULL);
	expect_200(r);
	result_free(r);
	long long gen = client_generation(CA1);
	sy_schema_ref wrong = cur;
	wrong.hash[0] = wrong.hash[0] == 'a' ? 'b' : 'a';
	rspec stale = {.gen = gen + 1};
	rspec ws = {.schema = &wrong};
	mspec changed = m1;
	changed.cols = "{\"title\":\"other\"}";
	mspec fresh_b = {
	        .table = "todo", .pk = b.json, .op = "insert", .cols = "{\"title\":\"b\"}"};
	long long muts = count("SELECT count(*) FROM synchro.mutations");

	/* changed content under a ledgered id: 409 idempotency_conflict before 409/422 */
	mspec ms[2] = {fresh_b, changed};
	r = run(ALICE, &stale, ms, 2, NULL);
	expect_error(r, SY_ERR_IDEMPOTENCY_CONFLICT);
	result_free(r);
	r = run(ALICE, &ws, ms, 2, NULL);
	expect_error(r, SY_ERR_IDEMPOTENCY_CONFLICT);
	result_free(r);
	/* an atomic request naming a ledgered mutation: 400 before the generation gate */
	rspec at_stale = {.gen = gen + 1, .atomic = true};
	mspec ms2[2] = {fresh_b, m1};
	r = run(ALICE, &at_stale, ms2, 2, NULL);
	expect_error(r, SY_ERR_INVALID_REQUEST);
	result_free(r);
	/* unchanged content in a new non-atomic batch: nothing against it, the gate answers */
	r = run(ALICE, &stale, ms2, 2, NULL);
	expect_error(r, SY_ERR_CLIENT_GENERATION_EXPIRED);
	result_free(r);

	/* admission would refuse: the conflict still answers first, and nothing is admitted */
	cap_total = 1;
	char held[1024];
	child ch = hold_slots(CA2, held);
	r = run(ALICE, NULL, ms, 2, NULL);
	expect_error(r, SY_ERR_IDEMPOTENCY_CONFLICT);
	result_free(r);
	release_slots(ch);
	cap_total = 0;
	muts++; /* the holder's own mutation */
	CU_ASSERT_EQUAL(PQtransactionStatus(app), PQTRANS_IDLE);

	char v[160];
	fence_version("todo", b.id, v);
	CU_ASSERT_STRING_EQUAL(v, "");
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM synchro.mutations"), muts);
}

/*
 * Deadlocks and serialization failures retry the whole transaction (three times at
 * most); past that the request is a 503 with nothing committed. A trigger fails the
 * first inserts of labels 'retry-N' with SQLSTATE 40001 / 40P01 (a sequence counts
 * across rollbacks).
 */
static void test_retry(void)
{
	pgt_exec(db, "CREATE SEQUENCE test_fail_seq");
	pgt_exec(db,
	         "CREATE FUNCTION test_fail() RETURNS trigger LANGUAGE plpgsql"
	         " SECURITY DEFINER AS $$ BEGIN"
	         " IF NEW.label LIKE 'retry-%' AND nextval('test_fail_seq') <="
	         "    split_part(NEW.label, '-', 2)::int THEN"
	         "   IF NEW.qty = 1 THEN RAISE EXCEPTION 'fail' USING ERRCODE = '40P01'; END IF;"
	         "   RAISE EXCEPTION 'fail' USING ERRCODE = '40001';"
	         " END IF; RETURN NEW; END $$");
	pgt_exec(db, "CREATE TRIGGER test_fail BEFORE INSERT ON item FOR EACH ROW"
	             " EXECUTE FUNCTION test_fail()");
	char p[32];
	char ids[1][SY_UUID_LEN + 1];
	fresh_item(p);
	long long e0 = epoch(CA1);
	mspec m = {.table = "item", .pk = p, .op = "insert", .cols = "{\"label\":\"retry-2\"}"};
	result *r = run(ALICE, NULL, &m, 1, ids);
	expect_200(r);
	check(r, ids[0], "applied", NULL, true, true);
	/* two failed attempts and the one that committed (the sequence outlives rollbacks) */
	CU_ASSERT_EQUAL(count("SELECT last_value FROM test_fail_seq"), 3);
	CU_ASSERT_EQUAL(epoch(CA1), e0 + 1);
	result_free(r);

	pgt_exec(db, "ALTER SEQUENCE test_fail_seq RESTART");
	fresh_item(p);
	m.cols = "{\"label\":\"retry-9\",\"qty\":1}";
	long long batches = count("SELECT count(*) FROM synchro.batches");
	r = run(ALICE, NULL, &m, 1, ids);
	expect_error(r, SY_ERR_TEMPORARY_UNAVAILABLE);
	/* three attempts, then 503; the server log names the SQLSTATE and nothing else */
	CU_ASSERT_EQUAL(count("SELECT last_value FROM test_fail_seq"), 3);
	CU_ASSERT_EQUAL(r->st, SY_STORE_FAILED);
	CU_ASSERT_TRUE(server_log_has("rolled back: SQLSTATE 40P01"));
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM synchro.batches"), batches);
	CU_ASSERT_EQUAL(epoch(CA1), e0 + 1);
	result_free(r);
	pgt_exec(db, "DROP TRIGGER test_fail ON item");
}

/* ---- concurrency (child processes, each a responder with its own connection) ---- */

/*
 * Forks a child that connects as the responders' role (application_name push_child),
 * waits until the parent closes go[1] (when go is not NULL), runs json as user and writes
 * "status replay error\n" and the body to its pipe.
 */
static child spawn(const char *user, const char *json, const int go[2], int lock_timeout_ms)
{
	int go_fd = go ? go[0] : -1;
	int fds[2];
	child ch = {-1, -1};
	if (pipe(fds) != 0)
		return ch;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return ch;
	}
	if (pid == 0) {
		close(fds[0]);
		if (go != NULL)
			close(go[1]); /* only the parent's close may end the wait */
		sy_error e = {0};
		PGconn *c = sy_store_connect("user=" APP_ROLE " application_name=push_child",
		                             "push_child", &e);
		if (c == NULL)
			_exit(3);
		if (go_fd >= 0) {
			char b;
			while (read(go_fd, &b, 1) < 0 && errno == EINTR)
				;
		}
		answer a;
		sy_store_status st = call_push(c, user, json, lock_timeout_ms, &a, &e);
		char head[64];
		int n = snprintf(head, sizeof head, "%d %d %d %d\n", a.http_status,
		                 a.replay ? 1 : 0, (int)a.error, (int)st);
		int status = 0;
		if (write(fds[1], head, (size_t)n) != n ||
		    (a.body.len > 0 &&
		     write(fds[1], a.body.data, a.body.len) != (ssize_t)a.body.len))
			status = 4;
		/* freed, so that a child under valgrind is as clean as its parent */
		answer_clear(&a);
		sy_store_disconnect(c);
		_exit(status);
	}
	close(fds[1]);
	ch.pid = pid;
	ch.fd = fds[0];
	return ch;
}

static child_answer collect(child ch)
{
	child_answer a = {0};
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (len + 1 >= cap)
			buf = realloc(buf, cap *= 2);
		ssize_t n = read(ch.fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(ch.fd);
	int ws = 0;
	while (waitpid(ch.pid, &ws, 0) < 0 && errno == EINTR)
		;
	a.exit_status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 99;
	char *nl = strchr(buf, '\n');
	if (nl != NULL && sscanf(buf, "%d %d %d %d", &a.status, &a.replay, &a.error, &a.st) == 4) {
		a.len = len - (size_t)(nl + 1 - buf);
		a.body = malloc(a.len + 1);
		memcpy(a.body, nl + 1, a.len);
		a.body[a.len] = '\0';
	}
	free(buf);
	return a;
}

/* Validates a child's 200 body against its request; returns the parsed body. */
static sy_json_doc *child_body(const child_answer *a, const char *json)
{
	sy_error e = {0};
	CU_ASSERT_EQUAL(a->status, 200);
	if (a->status != 200 || a->body == NULL)
		return NULL;
	sy_json_doc *d = sy_json_parse(a->body, a->len, &e);
	sy_push_request *req = sy_push_parse(json, strlen(json), &e);
	CU_ASSERT_PTR_NOT_NULL(d);
	if (d && req)
		CU_ASSERT_TRUE(sy_outcome_validate_response(req, sy_json_doc_root(d), &e));
	sy_push_request_free(req);
	return d;
}

/* Polls (bounded) until n sessions of push_child wait for a lock. */
static bool wait_for_lock_waiters(int n)
{
	char want[16];
	snprintf(want, sizeof want, "%d", n);
	for (int i = 0; i < 2000; i++) {
		PGresult *r = PQexec(mon, "SELECT count(*) FROM pg_stat_activity"
		                          " WHERE application_name = 'push_child'"
		                          "   AND wait_event_type = 'Lock'");
		bool done = r && PQresultStatus(r) == PGRES_TUPLES_OK &&
		            strcmp(PQgetvalue(r, 0, 0), want) == 0;
		PQclear(r);
		if (done)
			return true;
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return false;
}

#define RACERS 20

/* 20 updates of one base from 20 clients at once: one applies, 19 are version conflicts. */
static void test_concurrent_updates(void)
{
	char pk[32], v[160], b[64];
	make_item(pk, "{\"qty\":0}", v);
	char clients[RACERS][SY_UUID_LEN + 1];
	char *jsons[RACERS];
	child kids[RACERS];
	int go[2];
	CU_ASSERT_FATAL(pipe(go) == 0);
	for (int i = 0; i < RACERS; i++) {
		snprintf(clients[i], sizeof clients[i], "c0000000-0000-4000-8000-%012d", 500 + i);
		const char *pc[] = {clients[i]};
		PQclear(pgt_query(db,
		                  "INSERT INTO synchro.clients (client_id, user_id, generation)"
		                  " VALUES ($1, 'alice', 1)",
		                  1, pc));
		char cols[32];
		snprintf(cols, sizeof cols, "{\"qty\":%d}", i + 1);
		rspec rs = {.client = clients[i], .gen = 1};
		mspec m = {.table = "item", .pk = pk, .op = "update", .base = v, .cols = cols};
		jsons[i] = build(&rs, &m, 1, NULL);
		kids[i] = spawn(ALICE, jsons[i], go, 10000);
		CU_ASSERT_FATAL(kids[i].pid > 0);
	}
	close(go[0]);
	close(go[1]); /* go */
	int applied = 0, conflicts = 0;
	char winner_qty[16] = "";
	for (int i = 0; i < RACERS; i++) {
		child_answer a = collect(kids[i]);
		CU_ASSERT_EQUAL(a.exit_status, 0);
		sy_json_doc *d = child_body(&a, jsons[i]);
		const sy_json *root = d ? sy_json_doc_root(d) : NULL;
		const sy_json *acc = root ? sy_json_get(root, "accepted") : NULL;
		const sy_json *rej = root ? sy_json_get(root, "rejected") : NULL;
		if (acc && acc->u.array.count == 1) {
			applied++;
			snprintf(winner_qty, sizeof winner_qty, "%d", i + 1);
		} else if (rej && rej->u.array.count == 1 &&
		           strcmp(str(rej->u.array.items[0], "code"), "version_conflict") == 0) {
			conflicts++;
		}
		sy_json_doc_free(d);
		free(a.body);
		free(jsons[i]);
	}
	CU_ASSERT_EQUAL(applied, 1);
	CU_ASSERT_EQUAL(conflicts, RACERS - 1);
	const char *pp[] = {bare(pk, b)};
	char *qty = pgt_value(db, "SELECT qty::text FROM item WHERE id = $1::bigint", 1, pp);
	CU_ASSERT_PTR_NOT_NULL(qty);
	if (qty)
		CU_ASSERT_STRING_EQUAL(qty, winner_qty);
	free(qty);
}

/* 20 copies of one request at once: one first execution, 20 identical bodies. */
static void test_concurrent_identical(void)
{
	char pk[32], b[64];
	fresh_item(pk);
	mspec m = {.table = "item", .pk = pk, .op = "insert", .cols = "{\"qty\":1}"};
	char *json = build(&(rspec){0}, &m, 1, NULL);
	long long e0 = epoch(CA1);
	child kids[RACERS];
	int go[2];
	CU_ASSERT_FATAL(pipe(go) == 0);
	for (int i = 0; i < RACERS; i++)
		kids[i] = spawn(ALICE, json, go, 10000);
	close(go[0]);
	close(go[1]);
	char *first = NULL;
	int replays = 0, ok = 0;
	for (int i = 0; i < RACERS; i++) {
		child_answer a = collect(kids[i]);
		CU_ASSERT_EQUAL(a.exit_status, 0);
		CU_ASSERT_EQUAL(a.status, 200);
		if (a.status == 200 && a.body) {
			ok++;
			replays += a.replay;
			if (first == NULL)
				first = strdup(a.body);
			else
				CU_ASSERT_STRING_EQUAL(a.body, first);
		}
		free(a.body);
	}
	CU_ASSERT_EQUAL(ok, RACERS);
	CU_ASSERT_EQUAL(replays, RACERS - 1);
	CU_ASSERT_EQUAL(epoch(CA1), e0 + 1);
	const char *pp[] = {bare(pk, b)};
	CU_ASSERT_EQUAL(pgt_int(db,
	                        "SELECT count(*) FROM synchro.row_fences WHERE table_id = 'item'"
	                        " AND pk = $1",
	                        1, pp),
	                1);
	free(first);
	free(json);
}

/* An insert racing a committed insert of the same identity: row_already_exists. */
static void test_race_insert(void)
{
	todo_id a;
	fresh_todo(&a);
	char ids[1][SY_UUID_LEN + 1];
	mspec m = {.table = "todo", .pk = a.json, .op = "insert", .cols = "{\"title\":\"mine\"}"};
	char *json = build(&(rspec){0}, &m, 1, ids);
	const char *pa[] = {a.id};
	pgt_exec(db, "BEGIN");
	PQclear(pgt_query(db, "INSERT INTO todo (id, title, owner) VALUES ($1, 'direct', 'alice')",
	                  1, pa));
	child ch = spawn(ALICE, json, NULL, 10000);
	CU_ASSERT_TRUE(wait_for_lock_waiters(1));
	pgt_exec(db, "COMMIT");
	child_answer ans = collect(ch);
	sy_json_doc *d = child_body(&ans, json);
	if (d != NULL) {
		result r = {.doc = d};
		const sy_json *o = check(&r, ids[0], "conflict", "row_already_exists", true, true);
		CHECK_ROW_VALUE(o, "title", "\"direct\"");
		char v[160];
		fence_version("todo", a.id, v);
		CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v);
	}
	sy_json_doc_free(d);
	free(ans.body);
	free(json);
}

/* An insert racing a committed insert-and-delete: no resurrection, row_deleted. */
static void test_race_resurrection(void)
{
	todo_id a;
	fresh_todo(&a);
	char ids[1][SY_UUID_LEN + 1];
	mspec m = {.table = "todo", .pk = a.json, .op = "insert", .cols = "{\"title\":\"again\"}"};
	char *json = build(&(rspec){0}, &m, 1, ids);
	const char *pa[] = {a.id};
	pgt_exec(db, "BEGIN");
	PQclear(pgt_query(db, "INSERT INTO todo (id, title, owner) VALUES ($1, 'gone', 'alice')", 1,
	                  pa));
	PQclear(pgt_query(db, "DELETE FROM todo WHERE id = $1", 1, pa));
	child ch = spawn(ALICE, json, NULL, 10000);
	CU_ASSERT_TRUE(wait_for_lock_waiters(1));
	pgt_exec(db, "COMMIT");
	child_answer ans = collect(ch);
	sy_json_doc *d = child_body(&ans, json);
	if (d != NULL) {
		result r = {.doc = d};
		const sy_json *o = check(&r, ids[0], "conflict", "row_deleted", true, false);
		char v[160];
		fence_version("todo", a.id, v);
		CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v);
	}
	CU_ASSERT_EQUAL(pgt_int(db, "SELECT count(*) FROM todo WHERE id = $1", 1, pa), 0);
	char *state = fence_field("todo", a.id, "state");
	CU_ASSERT_STRING_EQUAL(state, "deleted");
	free(state);
	sy_json_doc_free(d);
	free(ans.body);
	free(json);
}

/* Waiting longer than lock_timeout_ms for the client is a 503 with nothing committed. */
static void test_lock_timeout(void)
{
	todo_id a;
	fresh_todo(&a);
	mspec m = {.table = "todo", .pk = a.json, .op = "insert", .cols = "{\"title\":\"late\"}"};
	char *json = build(&(rspec){0}, &m, 1, NULL);
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "SELECT 1 FROM synchro.clients WHERE client_id = '" CA1 "' FOR UPDATE");
	long long batches = count("SELECT count(*) FROM synchro.batches");
	result *r = push_on(app, ALICE, json, 100);
	expect_error(r, SY_ERR_TEMPORARY_UNAVAILABLE);
	CU_ASSERT_EQUAL(r->st, SY_STORE_OK);
	CU_ASSERT_TRUE(server_log_has("not committed: SQLSTATE 55P03"));
	result_free(r);
	pgt_exec(db, "ROLLBACK");
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM synchro.batches"), batches);
	char v[160];
	fence_version("todo", a.id, v);
	CU_ASSERT_STRING_EQUAL(v, "");
	/* the same request once the lock is gone: first execution */
	r = push_as(ALICE, json);
	expect_200(r);
	CU_ASSERT_FALSE(r->a.replay);
	result_free(r);
	free(json);
}

/* A connection lost mid-request is a 503 and SY_STORE_CONNECTION; a new one works. */
static void test_connection_lost(void)
{
	todo_id a;
	fresh_todo(&a);
	mspec m = {.table = "todo", .pk = a.json, .op = "insert", .cols = "{\"title\":\"t\"}"};
	char ids[1][SY_UUID_LEN + 1];
	char *json = build(&(rspec){0}, &m, 1, ids);
	char pid[16];
	snprintf(pid, sizeof pid, "%d", PQbackendPID(app));
	const char *pp[] = {pid};
	PQclear(pgt_query(db, "SELECT pg_terminate_backend($1::int, 5000)", 1, pp));
	result *r = push_as(ALICE, json);
	expect_error(r, SY_ERR_TEMPORARY_UNAVAILABLE);
	CU_ASSERT_EQUAL(r->st, SY_STORE_CONNECTION);
	result_free(r);
	sy_store_disconnect(app);
	sy_error e = {0};
	app = sy_store_connect("user=" APP_ROLE, "test_push", &e);
	CU_ASSERT_PTR_NOT_NULL_FATAL(app);
	r = push_as(ALICE, json);
	expect_200(r);
	check(r, ids[0], "applied", NULL, true, true);
	result_free(r);
	free(json);
}

/* ---- schema history (last: publishing cannot go back to an earlier manifest) ---- */

static bool publish(const char *text, sy_schema_ref *out)
{
	sy_error e = {0};
	sy_manifest *m = sy_manifest_parse(text, strlen(text), &e);
	CU_ASSERT_PTR_NOT_NULL(m);
	if (m == NULL) {
		fprintf(stderr, "manifest: %s\n", e.message);
		return false;
	}
	sy_store_published pub;
	sy_store_status st = sy_store_schema_publish(db, m, NULL, NULL, &pub, &e);
	sy_manifest_free(m);
	CU_ASSERT_EQUAL(st, SY_STORE_OK);
	if (st != SY_STORE_OK) {
		fprintf(stderr, "publish: %s\n", e.message);
		return false;
	}
	out->version = (uint64_t)pub.version;
	snprintf(out->hash, sizeof out->hash, "%s", pub.hash);
	return true;
}

/* manifest_text without the field object of todo.note. */
static char *without_note(void)
{
	static const char note[] = "{\"field_id\": \"note\", \"column\": \"note\", \"type\": "
	                           "\"text\", \"nullable\": true, "
	                           "\"writable\": true},";
	char *at = strstr(manifest_text, note);
	CU_ASSERT_PTR_NOT_NULL_FATAL(at);
	size_t len = strlen(manifest_text), cut = strlen(note);
	char *out = malloc(len + 1);
	memcpy(out, manifest_text, (size_t)(at - manifest_text));
	memcpy(out + (at - manifest_text), at + cut, len - (size_t)(at - manifest_text) - cut + 1);
	return out;
}

static void test_schema_history(void)
{
	todo_id a;
	char v[160], pk[32], vi[160];
	char ids[4][SY_UUID_LEN + 1];
	make_todo(ALICE, CA1, &a, v);
	make_item(pk, "{\"qty\":1}", vi);

	/* a completed batch under v1, to replay after the publish */
	todo_id r0;
	fresh_todo(&r0);
	mspec before = {
	        .table = "todo", .pk = r0.json, .op = "insert", .cols = "{\"title\":\"v1\"}"};
	char *json_v1 = build(&(rspec){0}, &before, 1, NULL);
	result *first = push_as(ALICE, json_v1);
	expect_200(first);

	/* v2: todo without note */
	char *v2text = without_note();
	sy_schema_ref v2;
	CU_ASSERT_TRUE_FATAL(publish(v2text, &v2));
	CU_ASSERT_EQUAL(v2.version, schema_v1.version + 1);
	cur = v2;

	/* the v1 batch replays unchanged; a new v1 batch is a schema mismatch */
	result *again = push_as(ALICE, json_v1);
	expect_200(again);
	CU_ASSERT_TRUE(again->a.replay);
	CU_ASSERT(again->a.body.len == first->a.body.len &&
	          memcmp(again->a.body.data, first->a.body.data, first->a.body.len) == 0);
	result_free(again);
	again = push_as(ALICE, json_v1);
	expect_200(again);
	CU_ASSERT_TRUE(again->a.replay);
	result_free(again);
	result_free(first);
	free(json_v1);
	rspec old = {.schema = &schema_v1};
	todo_id r1;
	fresh_todo(&r1);
	mspec fresh_v1 = {.table = "todo",
	                  .pk = r1.json,
	                  .op = "insert",
	                  .cols = "{\"title\":\"x\"}",
	                  .authored = &schema_v1};
	result *r = run(ALICE, &old, &fresh_v1, 1, ids);
	expect_error(r, SY_ERR_SCHEMA_MISMATCH);
	CU_ASSERT_EQUAL(r->a.current.version, v2.version);
	CU_ASSERT_EQUAL(r->a.received.version, schema_v1.version);
	result_free(r);

	/* queued v1 intent that uses note: schema_incompatible, complete with both schemas */
	static const sy_schema_ref unknown = {
	        99, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"};
	mspec ms[4] = {
	        {.table = "todo",
	         .pk = a.json,
	         .op = "update",
	         .base = v,
	         .cols = "{\"note\":\"n\",\"title\":\"t\"}",
	         .authored = &schema_v1},
	        /* authored under v2, note is just an unknown field */
	        {.table = "todo",
	         .pk = a.json,
	         .op = "update",
	         .base = v,
	         .cols = "{\"note\":\"n\"}"},
	        /* an unavailable authored schema: presence in the current schema decides */
	        {.table = "todo",
	         .pk = a.json,
	         .op = "update",
	         .base = v,
	         .cols = "{\"note\":\"n\"}",
	         .authored = &unknown},
	        /* v1 intent that the current schema still represents applies */
	        {.table = "todo",
	         .pk = a.json,
	         .op = "update",
	         .base = v,
	         .cols = "{\"title\":\"v2\"}",
	         .authored = &schema_v1},
	};
	r = run(ALICE, NULL, ms, 4, ids);
	expect_200(r);
	const sy_json *o =
	        check(r, ids[0], "rejected_terminal", "schema_incompatible", false, false);
	char *s = jcs_of(o ? sy_json_get(o, "incompatible_field_ids") : NULL);
	CU_ASSERT_STRING_EQUAL(s ? s : "", "[\"note\"]");
	free(s);
	s = jcs_of(o ? sy_json_get(o, "retryable") : NULL);
	CU_ASSERT_STRING_EQUAL(s ? s : "", "false");
	free(s);
	const sy_json *as = o ? sy_json_get(o, "authored_schema") : NULL;
	const sy_json *cs = o ? sy_json_get(o, "current_schema") : NULL;
	CU_ASSERT_STRING_EQUAL(str(as, "hash") ? str(as, "hash") : "", schema_v1.hash);
	CU_ASSERT_STRING_EQUAL(str(cs, "hash") ? str(cs, "hash") : "", v2.hash);
	check(r, ids[1], "rejected_terminal", "validation_failed", false, false);
	o = check(r, ids[2], "rejected_terminal", "schema_incompatible", false, false);
	s = jcs_of(o ? sy_json_get(o, "incompatible_field_ids") : NULL);
	CU_ASSERT_STRING_EQUAL(s ? s : "", "[\"note\"]");
	free(s);
	o = check(r, ids[3], "applied", NULL, true, true);
	/* the row is encoded under the request schema: note is not a field of v2 */
	CHECK_ROW_VALUE(o, "note", "<absent>");
	CHECK_ROW_VALUE(o, "title", "\"v2\"");
	const sy_json *os = o ? sy_json_get(o, "outcome_schema") : NULL;
	CU_ASSERT_STRING_EQUAL(str(os, "hash") ? str(os, "hash") : "", v2.hash);
	result_free(r);

	/* v3: item is no longer synced; intent for it is schema_incompatible, never dropped */
	char *v3text = without_note();
	char *item = strstr(v3text, ",\n    {\n      \"table_id\": \"item\"");
	CU_ASSERT_PTR_NOT_NULL_FATAL(item);
	strcpy(item, "\n  ]\n}\n");
	sy_schema_ref v3;
	CU_ASSERT_TRUE_FATAL(publish(v3text, &v3));
	cur = v3;
	mspec gone[2] = {
	        {.table = "item",
	         .pk = pk,
	         .op = "update",
	         .base = vi,
	         .cols = "{\"qty\":2,\"label\":\"l\"}",
	         .authored = &v2},
	        {.table = "item", .pk = "7", .op = "delete", .base = vi, .authored = &v2},
	};
	r = run(ALICE, NULL, gone, 2, ids);
	expect_200(r);
	o = check(r, ids[0], "rejected_terminal", "schema_incompatible", false, false);
	s = jcs_of(o ? sy_json_get(o, "incompatible_field_ids") : NULL);
	CU_ASSERT_STRING_EQUAL(s ? s : "", "[\"label\",\"qty\"]");
	free(s);
	o = check(r, ids[1], "rejected_terminal", "schema_incompatible", false, false);
	s = jcs_of(o ? sy_json_get(o, "incompatible_field_ids") : NULL);
	CU_ASSERT_STRING_EQUAL(s ? s : "", "[]");
	free(s);
	result_free(r);
	char b[64], after[160];
	fence_version("item", bare(pk, b), after);
	CU_ASSERT_STRING_EQUAL(after, vi);

	/* v4: todo written by all but read by its owner: bob still cannot see alice's todo */
	char *v4text = strdup(v3text);
	char *w = strstr(v4text, "\"write\": \"owner\"");
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	memcpy(w, "\"write\": \"all\"  ", strlen("\"write\": \"owner\""));
	sy_schema_ref v4;
	CU_ASSERT_TRUE_FATAL(publish(v4text, &v4));
	cur = v4;
	char va[160];
	fence_version("todo", a.id, va);
	rspec bob = {.client = CB1};
	mspec bm[2] = {
	        {.table = "todo",
	         .pk = a.json,
	         .op = "update",
	         .base = va,
	         .cols = "{\"done\":true}"},
	        {.table = "todo", .pk = a.json, .op = "insert", .cols = "{\"title\":\"b\"}"},
	};
	r = run(BOB, &bob, bm, 2, ids);
	expect_200(r);
	check(r, ids[0], "rejected_terminal", "policy_rejected", false, false);
	check(r, ids[1], "rejected_terminal", "policy_rejected", false, false);
	CU_ASSERT_PTR_NULL(strstr(r->a.body.data, va));
	result_free(r);
	fence_version("todo", a.id, after);
	CU_ASSERT_STRING_EQUAL(after, va);
	/* bob's own inserts are his, owner set by the server */
	todo_id bt;
	fresh_todo(&bt);
	mspec own = {.table = "todo", .pk = bt.json, .op = "insert", .cols = "{\"title\":\"b\"}"};
	r = run(BOB, &bob, &own, 1, ids);
	expect_200(r);
	o = check(r, ids[0], "applied", NULL, true, true);
	CHECK_ROW_VALUE(o, "owner", "\"bob\"");
	result_free(r);

	free(v2text);
	free(v3text);
	free(v4text);
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
