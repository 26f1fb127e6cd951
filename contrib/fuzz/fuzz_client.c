/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target over libsynchro-client's handling of what a server answers:
 * an input is taken as the body of a 200 to /v3/connect, /v3/schema, /v3/push
 * (the push response validator and reconciliation), /v3/pull (through the state
 * machine) and as a rebuild page, and as the error body of a non-200 answer to
 * push, pull and connect: each of those rounds whose answer it could be (it holds
 * a member only that answer has, LLVMFuzzerTestOneInput), the push round always
 * when it holds none.
 *
 * The store is an in-memory SQLite file prepared once against the fake server of
 * the unit suites (tests/unit/client_fake.c): a schema, server rows, a cursor and
 * one sealed batch of three mutations waiting for its answer. After a round that
 * wrote to the store it goes back to that template: a shallow undo when only
 * attempts, meta, rows or rebuild_rows changed, else a full copy (the SQLite
 * backup API), so every input meets the same state.
 *
 * Properties checked beyond "no crash": the state machine sends the request the
 * round expects; no transaction is left open; a response the client refuses
 * (EPROTOCOL) changes nothing but the attempt log; a push answer either completes
 * the batch or leaves it sealed with invalid_response; after an applied answer
 * the store passes sy_client_verify (integrity, row checksums, batches, links).
 *
 * UUIDs come from a counter (uuid_generate_random below replaces libuuid's in
 * this program), so the template's client_id, batch and mutation ids are the
 * same in every run and the seeds in tests/vectors/client answer them. Those
 * seeds are what the fake server answered while the template was made:
 * SYNCHRO_FUZZ_CLIENT_SEEDS=DIR writes them again (tests/vectors/client/README).
 * SYNCHRO_FUZZ_CLIENT_REPORT=1 prints at exit how many rounds were applied.
 */
#include "config.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>

#include "../../src/client/client_internal.h"
#include "../../tests/unit/client_fake.h"
#include "synchro/alloc.h"
#include "synchro/buf.h"
#include "synchro/outcome.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t uuid_seq;

/* Deterministic identities (see above): a v4-shaped UUID from a counter, never nil. */
void uuid_generate_random(uuid_t out)
{
	uint64_t n = ++uuid_seq;
	memset(out, 0, sizeof(uuid_t));
	out[0] = 0xf0;
	for (int i = 0; i < 8; i++)
		out[15 - i] = (unsigned char)(n >> (8 * i));
	out[6] = (unsigned char)(0x40 | (out[6] & 0x0f));
	out[8] = (unsigned char)(0x80 | (out[8] & 0x3f));
}

enum { R_CONNECT, R_SCHEMA, R_PUSH, R_PULL, R_REBUILD, R__COUNT };
static const char *const route[R__COUNT] = {"/v3/connect", "/v3/schema", "/v3/push", "/v3/pull",
                                            "/v3/rebuild"};
static const char *const round_name[R__COUNT] = {"connect", "schema", "push", "pull", "rebuild"};

/* The transport: forwards to the fake while the template is made, then answers the input. */
static struct {
	sy_client_transport inner;
	bool forward;
	const char *seeds; /* directory to write the fake's answers to, or NULL */
	unsigned nseed;
	bool started;
	char path[32];
	int status, retry;
	const uint8_t *body;
	size_t len;
} S;

static fake *F;
static sy_client *C;
static sqlite3 *T; /* the template store */
static int64_t base_changes;
/* What rowid tables other than attempts a round changed (the update hook sees rowid tables). */
static bool deep_change;
static struct {
	uint64_t generation;
	sy_schema_ref schema;
	bool frozen, retired;
} saved;
static sqlite3_stmt *undo[7];
static unsigned long applied[R__COUNT], refused[R__COUNT], errors_seen;

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_client: %s: %s\n", what, detail ? detail : "");
	abort();
}

/* A seed file NN-STEM.json: STEM is route-status for the fake's answers, error-code else. */
static void write_seed(const char *stem, const sy_client_response *r)
{
	char name[512];
	snprintf(name, sizeof name, "%s/%02u-%s.json", S.seeds, ++S.nseed, stem);
	FILE *f = fopen(name, "wb");
	if (f == NULL || fwrite(r->body, 1, r->body_len, f) != r->body_len || fclose(f) != 0)
		die("cannot write", name);
}

static void write_answer(const char *path, const sy_client_response *r)
{
	char stem[64];
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	snprintf(stem, sizeof stem, "%s-%d", base, r->status);
	write_seed(stem, r);
}

static bool s_start(void *ctx, const sy_client_request *req)
{
	(void)ctx;
	snprintf(S.path, sizeof S.path, "%s", req->path);
	if (S.forward)
		return S.inner.start(S.inner.ctx, req);
	S.started = true;
	return true;
}

static int s_poll(void *ctx, int timeout_ms, sy_client_response *out)
{
	(void)ctx;
	if (S.forward) {
		int r = S.inner.poll(S.inner.ctx, timeout_ms, out);
		if (r == 1 && S.seeds != NULL && out->body != NULL)
			write_answer(S.path, out);
		return r;
	}
	if (!S.started)
		return 0;
	S.started = false;
	out->status = S.status;
	out->retry_after_s = S.retry;
	/* Exactly len bytes, no terminating NUL: the transport contract promises none. */
	out->body_len = S.len;
	out->body = sy_client_alloc(S.len ? S.len : 1);
	if (out->body == NULL)
		die("out of memory", NULL);
	if (S.len)
		memcpy(out->body, S.body, S.len);
	return 1;
}

static void s_cancel(void *ctx)
{
	(void)ctx;
	if (S.forward)
		S.inner.cancel(S.inner.ctx);
	S.started = false;
}

static void s_destroy(void *ctx)
{
	(void)ctx;
}

static void ok(sy_client_rc rc, const sy_client_error *e, const char *what)
{
	if (rc != SY_CLIENT_OK)
		die(what, e->message);
}

static void write_one(sy_client_txn *t, char op, const char *pk, const char *cols)
{
	sy_client_error e;
	sy_client_rc rc = op == 'i'   ? sy_client_insert(t, "todo", pk, cols, NULL, &e)
	                  : op == 'u' ? sy_client_update(t, "todo", pk, cols, NULL, &e)
	                              : sy_client_delete(t, "todo", pk, NULL, &e);
	ok(rc, &e, "write");
}

/* Error bodies of every code a client may meet (the seeds the fake does not answer). */
static void error_seeds(void)
{
	static const sy_errcode codes[] = {SY_ERR_INVALID_REQUEST,
	                                   SY_ERR_AUTH_REQUIRED,
	                                   SY_ERR_IDEMPOTENCY_CONFLICT,
	                                   SY_ERR_CLIENT_RETIRED,
	                                   SY_ERR_CLIENT_GENERATION_EXPIRED,
	                                   SY_ERR_REBUILD_REQUIRED,
	                                   SY_ERR_CURSOR_EXPIRED,
	                                   SY_ERR_REBUILD_INVALIDATED,
	                                   SY_ERR_SCHEMA_MISMATCH,
	                                   SY_ERR_UPGRADE_REQUIRED,
	                                   SY_ERR_RETRY_LATER,
	                                   SY_ERR_TEMPORARY_UNAVAILABLE};
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
		sy_buf b = SY_BUF_INIT;
		sy_error e = {0};
		bool sm = codes[i] == SY_ERR_SCHEMA_MISMATCH;
		if (!sy_outcome_error_body(&b, codes[i], "fuzz", sm ? &C->schema : NULL,
		                           sm ? &C->schema : NULL, &e))
			die("error body", e.message);
		sy_client_response r = {.body = b.data, .body_len = b.len};
		char stem[64];
		snprintf(stem, sizeof stem, "error-%s", sy_errcode_name(codes[i]));
		write_seed(stem, &r);
		sy_buf_free(&b);
	}
}

static void report(void)
{
	fprintf(stderr, "fuzz_client: applied");
	for (int k = 0; k < R__COUNT; k++)
		fprintf(stderr, " %s=%lu", round_name[k], applied[k]);
	fprintf(stderr, "; refused");
	for (int k = 0; k < R__COUNT; k++)
		fprintf(stderr, " %s=%lu", round_name[k], refused[k]);
	fprintf(stderr, "; error rounds=%lu\n", errors_seen);
}

static void copy_db(sqlite3 *to, sqlite3 *from)
{
	sqlite3_backup *b = sqlite3_backup_init(to, "main", from, "main");
	if (b == NULL || sqlite3_backup_step(b, -1) != SQLITE_DONE ||
	    sqlite3_backup_finish(b) != SQLITE_OK)
		die("backup", sqlite3_errmsg(to));
}

/* The in-memory state a round may change, as the template has it. */
static void reset_volatile(void)
{
	C->need_connect = C->need_schema = C->stopped = C->pull_caught_up = false;
	C->sealed_ahead = false;
	C->next_due_ms = 0;
	C->backoff_ms = 0;
	C->last_error[0] = C->last_message[0] = '\0';
	C->phase = SY_PHASE_IDLE;
}

static void restore(void)
{
	sy_client_error e;
	copy_db(C->db, T);
	ok(sy_cl_load_state(C, &e), &e, "reload");
	reset_volatile();
	uuid_seq = 1000;
	deep_change = false;
	base_changes = sqlite3_total_changes(C->db);
}

static void on_update(void *ctx, int op, const char *db, const char *table, sqlite3_int64 rowid)
{
	(void)ctx;
	(void)db;
	(void)rowid;
	if (op != SQLITE_INSERT || strcmp(table, "attempts") != 0)
		deep_change = true;
}

/*
 * The cheap way back after a round that changed only what needs no trigger to undo:
 * new attempt rows, meta, rows and rebuild_rows (copies in the attached "tmpl").
 * Anything else (intents, batches: their triggers forbid the undo) is a full restore.
 */
static void undo_shallow(void)
{
	static const char *const sql[] = {
	        "DELETE FROM main.attempts WHERE id NOT IN (SELECT id FROM tmpl.attempts)",
	        "DELETE FROM main.meta",
	        "INSERT INTO main.meta SELECT * FROM tmpl.meta",
	        "DELETE FROM main.rows",
	        "INSERT INTO main.rows SELECT * FROM tmpl.rows",
	        "DELETE FROM main.rebuild_rows",
	        "INSERT INTO main.rebuild_rows SELECT * FROM tmpl.rebuild_rows"};
	for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
		if (undo[i] == NULL &&
		    sqlite3_prepare_v2(C->db, sql[i], -1, &undo[i], NULL) != SQLITE_OK)
			die("undo", sqlite3_errmsg(C->db));
		if (sqlite3_step(undo[i]) != SQLITE_DONE)
			die("undo", sqlite3_errmsg(C->db));
		sqlite3_reset(undo[i]);
	}
	C->generation = saved.generation;
	C->schema = saved.schema;
	C->frozen = saved.frozen;
	C->retired = saved.retired;
	reset_volatile();
	uuid_seq = 1000;
	deep_change = false;
	base_changes = sqlite3_total_changes(C->db);
}

static void setup(void)
{
	sy_client_error e;
	sy_client_options o;
	S.seeds = getenv("SYNCHRO_FUZZ_CLIENT_SEEDS");
	if (getenv("SYNCHRO_FUZZ_CLIENT_REPORT") != NULL)
		atexit(report);
	F = fake_new();
	fake_options(F, &o);
	S.inner = *o.transport;
	S.forward = true;
	static const sy_client_transport tr = {NULL, s_start, s_poll, s_cancel, s_destroy};
	o.transport = &tr;
	ok(sy_client_open(":memory:", &o, &C, &e), &e, "open");
	/* Rows the rebuild delivers, then one the pull delivers. */
	fake_direct_write(F, "todo", "\"a\"", "{\"title\":\"a\",\"done\":false,\"note\":null}");
	fake_direct_write(F, "todo", "\"b\"", "{\"title\":\"b\",\"done\":false,\"note\":\"n\"}");
	ok(sy_client_sync(C, 60000, &e), &e, "first sync");
	fake_direct_write(F, "todo", "\"d\"", "{\"title\":\"d\",\"done\":true,\"note\":null}");
	ok(sy_client_sync(C, 60000, &e), &e, "second sync");
	/* One batch: an insert (applied), an update that conflicts, a delete (applied). */
	sy_client_txn *t;
	ok(sy_client_begin(C, false, &t, &e), &e, "begin");
	write_one(t, 'i', "\"c\"", "{\"title\":\"c\",\"done\":false}");
	write_one(t, 'u', "\"a\"", "{\"done\":true}");
	write_one(t, 'd', "\"b\"", NULL);
	ok(sy_client_commit(t, &e), &e, "commit");
	fake_direct_write(F, "todo", "\"a\"", "{\"title\":\"a2\",\"done\":false,\"note\":null}");
	fake_hold(F, true);
	for (int n = 0; n < 10 && C->inflight == SY_CL_REQ_NONE; n++) {
		int64_t next;
		ok(sy_client_step(C, &next, &e), &e, "step");
	}
	if (C->inflight != SY_CL_REQ_PUSH)
		die("setup", "no push in flight");
	/* The fake answered at start; its answer is a seed, the client never sees it. */
	fake_hold(F, false);
	sy_client_response r = {0};
	if (S.inner.poll(S.inner.ctx, 0, &r) != 1 || r.status != 200)
		die("setup", "the fake did not answer the push");
	if (S.seeds != NULL) {
		write_answer("/v3/push", &r);
		error_seeds();
	}
	sy_client_free(r.body);
	S.forward = false;
	C->inflight = SY_CL_REQ_NONE;
	C->done_ready = false;
	sy_client_free(C->inflight_body);
	C->inflight_body = NULL;
	sy_cl_req_free(C);
	if (sqlite3_open(":memory:", &T) != SQLITE_OK)
		die("template", "sqlite3_open");
	copy_db(T, C->db);
	saved.generation = C->generation;
	saved.schema = C->schema;
	saved.frozen = C->frozen;
	saved.retired = C->retired;
	ok(sy_cl_exec(C,
	              "ATTACH ':memory:' AS tmpl;"
	              " CREATE TABLE tmpl.attempts AS SELECT * FROM main.attempts;"
	              " CREATE TABLE tmpl.meta AS SELECT * FROM main.meta;"
	              " CREATE TABLE tmpl.rows AS SELECT * FROM main.rows;"
	              " CREATE TABLE tmpl.rebuild_rows AS SELECT * FROM main.rebuild_rows",
	              &e),
	   &e, "attach");
	sqlite3_update_hook(C->db, on_update, NULL);
	restore();
}

/* The batch sealed in the template: completed, or still sealed with its intents. */
static void check_push_outcome(void)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(C->db,
	                       "SELECT b.state, (SELECT count(*) FROM intents i WHERE i.batch_id ="
	                       " b.batch_id AND i.state = 'sealed') FROM batches b ORDER BY seq"
	                       " DESC LIMIT 1",
	                       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW)
		die("batch query", sqlite3_errmsg(C->db));
	const char *state = (const char *)sqlite3_column_text(st, 0);
	int sealed = sqlite3_column_int(st, 1);
	bool completed = strcmp(state, "completed") == 0;
	if (completed ? sealed != 0 : (strcmp(state, "sealed") != 0 || sealed != 3))
		die("push: batch state", state);
	if (!completed && strcmp(C->last_error, "invalid_response") != 0)
		die("push: refused without invalid_response", C->last_error);
	if (completed)
		applied[R_PUSH]++;
	else
		refused[R_PUSH]++;
	sqlite3_finalize(st);
}

/*
 * After a round: no open transaction; a refused answer changed nothing; an applied
 * one leaves a store that verifies. Then back to the template.
 */
static void settle(int kind, bool refused_answer, bool applied_answer)
{
	if (!sqlite3_get_autocommit(C->db))
		die(round_name[kind], "a transaction was left open");
	if (sqlite3_total_changes(C->db) == base_changes) {
		reset_volatile();
		return;
	}
	if (refused_answer)
		die(round_name[kind], "a refused answer changed the store");
	if (applied_answer) {
		char *rep = NULL;
		sy_client_error e;
		if (sy_client_verify(C, &rep, &e) != SY_CLIENT_OK)
			die("verify", rep);
		sy_client_free(rep);
	}
	if (deep_change || (kind == R_SCHEMA && applied_answer))
		restore();
	else
		undo_shallow();
}

/* One request through sy_client_step, answered with (status, body). */
static void round_trip(int kind, int status, int retry, const uint8_t *data, size_t size)
{
	sy_client_error e;
	int64_t due;
	reset_volatile();
	C->need_connect = kind == R_CONNECT;
	C->need_schema = kind == R_SCHEMA;
	C->frozen =
	        kind != R_PUSH && kind != R_CONNECT && kind != R_SCHEMA; /* pull: no push first */
	S.status = status;
	S.retry = retry;
	S.body = data;
	S.len = size;
	S.started = false;
	sy_client_rc rc = sy_client_step(C, &due, &e);
	if (rc != SY_CLIENT_OK || !S.started || strcmp(S.path, route[kind]) != 0)
		die(round_name[kind], "the round's request was not started");
	rc = sy_client_step(C, &due, &e);
	(void)rc; /* EFROZEN, EREADONLY, ESERVER: what the answer asks for */
	C->frozen = false;
	bool invalid = strcmp(C->last_error, "invalid_response") == 0;
	if (status == 200 && kind == R_PUSH) {
		check_push_outcome();
		if (invalid) {
			/* A refused 200 logs its attempt (one row) and changes nothing else. */
			if (sqlite3_total_changes(C->db) - base_changes != 1 || deep_change)
				die("push", "a refused answer changed the store");
			undo_shallow();
		}
	} else if (status == 200) {
		invalid ? refused[kind]++ : applied[kind]++;
	} else {
		errors_seen++;
	}
	settle(kind, status == 200 && invalid, status == 200 && !invalid);
}

static bool has(const uint8_t *data, size_t size, const char *marker)
{
	size_t n = strlen(marker);
	for (size_t i = 0; i + n <= size; i++)
		if (data[i] == (uint8_t)marker[0] && memcmp(data + i, marker, n) == 0)
			return true;
	return false;
}

/*
 * Each input goes through the rounds whose answers it could be (a member only that
 * answer has), so that an execution costs one or two rounds: a push answer without
 * "accepted" is refused as surely as any other junk, which the push round gets.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int statuses[] = {0,   400, 401, 403, 404, 405, 409, 413,
	                               422, 426, 429, 500, 502, 503, 504};
	if (C == NULL)
		setup();
	int retry = size ? (int)data[0] - 100 : -1;
	int status = statuses[(size + (size ? data[size - 1] : 0)) %
	                      (sizeof statuses / sizeof statuses[0])];
	bool any = false;
	if (has(data, size, "client_generation")) {
		round_trip(R_CONNECT, 200, retry, data, size);
		any = true;
	}
	if (has(data, size, "manifest")) {
		round_trip(R_SCHEMA, 200, retry, data, size);
		any = true;
	}
	if (has(data, size, "changes")) {
		round_trip(R_PULL, 200, retry, data, size);
		any = true;
	}
	if (has(data, size, "rows")) {
		/* A rebuild page, applied directly (the state machine would start a new rebuild).
		 */
		bool more = false;
		sy_client_error e;
		/* as asked with the store's page token (a page answers the token it was asked with)
		 */
		sy_free(C->rebuild_asked);
		C->rebuild_asked = NULL;
		if (sy_cl_meta_get(C, "rebuild_token", &C->rebuild_asked, &e) != SY_CLIENT_OK)
			die("rebuild", e.message);
		sy_client_rc rc =
		        sy_cl_pull_apply(C, true, (const char *)data, size, NULL, &more, &e);
		rc == SY_CLIENT_OK ? applied[R_REBUILD]++ : refused[R_REBUILD]++;
		if (rc != SY_CLIENT_OK && rc != SY_CLIENT_EPROTOCOL)
			die("rebuild", e.message);
		settle(R_REBUILD, rc == SY_CLIENT_EPROTOCOL, rc == SY_CLIENT_OK);
		any = true;
	}
	if (has(data, size, "error")) {
		round_trip(R_PUSH, status, retry, data, size);
		round_trip(R_PULL, status, retry, data, size);
		round_trip(R_CONNECT, status, retry, data, size);
		any = true;
	}
	if (!any || has(data, size, "accepted") || has(data, size, "rejected"))
		round_trip(R_PUSH, 200, retry, data, size);
	return 0;
}
