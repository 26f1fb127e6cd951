/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The visible tables and the app's queries: randomized sequences of commits, answers
 * (accepted, conflicts, rejected atomic groups, blocked chains), pulls, rebuilds,
 * resolves, remaps and reopens, after each of which the maintained tables equal the
 * overlay computed from scratch (verify); queries that would write or read the store's
 * own tables refused with nothing changed; live queries; the app's indexes in the plan;
 * a store from before the tables upgraded; a row that leaves the user's scope. SY_TEST_SEED
 * repeats a run.
 */
#include "config.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_harness.h"
#include "synchro/alloc.h"
#include "synchro/buf.h"

static unsigned long long rng;

static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)((rng >> 33) % n);
}

/* --- helpers ---------------------------------------------------------------- */

static void verify_ok(const char *after)
{
	char *rep = NULL;
	sy_client_rc rc = sy_client_verify(C, &rep, &E);
	if (rc != SY_CLIENT_OK)
		fprintf(stderr, "verify after %s: %s\n%s", after, E.message, rep ? rep : "");
	CU_ASSERT_EQUAL_FATAL(rc, SY_CLIENT_OK);
	sy_free(rep);
}

static void collect(void *ctx, const char *row_json)
{
	sy_buf *b = ctx;
	sy_buf_puts(b, row_json);
	sy_buf_putc(b, '\n');
}

/* The rows of sql (one JSON object a line), a new string; NULL with E set on failure. */
static char *q(const char *sql, const char *params)
{
	sy_buf b = SY_BUF_INIT;
	sy_buf_puts(&b, "");
	if (sy_client_query(C, sql, params, collect, &b, &E) != SY_CLIENT_OK) {
		sy_buf_free(&b);
		return NULL;
	}
	return sy_buf_steal(&b, NULL);
}

static void count_row(void *ctx, const char *pk, const char *row, sy_client_row_state s)
{
	(void)pk;
	(void)s;
	if (row != NULL)
		(*(long *)ctx)++;
}

/* The visible rows' count as the overlay computes it equals the table's. */
static void counts_agree(void)
{
	long want = 0;
	OK(sy_client_rows(C, "todo", count_row, &want, &E));
	char *got = q("SELECT count(*) AS n FROM todo", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	char expect[64];
	snprintf(expect, sizeof expect, "{\"n\":%ld}\n", want);
	CU_ASSERT_STRING_EQUAL(got, expect);
	sy_free(got);
}

static const char *pk_of(unsigned i)
{
	static char pk[8][16];
	static int k;
	char *p = pk[k++ % 8];
	snprintf(p, sizeof pk[0], "\"k%u\"", i);
	return p;
}

static bool is_visible(const char *pk)
{
	char *row = NULL;
	sy_client_rc rc = sy_client_get(C, "todo", pk, &row, NULL, &E);
	bool v = rc == SY_CLIENT_OK && row != NULL;
	sy_free(row);
	return v;
}

/* --- the randomized sequences ------------------------------------------------------ */

static bool v2; /* the fake published the schema without note */

static void random_write(void)
{
	sy_client_txn *t;
	bool atomic = rnd(4) == 0;
	OK(sy_client_begin(C, atomic, &t, &E));
	unsigned n = 1 + rnd(3);
	for (unsigned i = 0; i < n; i++) {
		const char *pk = pk_of(rnd(10));
		char cols[128];
		if (!v2 && rnd(2))
			snprintf(cols, sizeof cols,
			         "{\"title\":\"t%u\",\"note\":\"n%u\",\"done\":%s}", rnd(100),
			         rnd(100), rnd(2) ? "true" : "false");
		else
			snprintf(cols, sizeof cols, "{\"title\":\"t%u\"}", rnd(100));
		sy_client_rc rc;
		if (!is_visible(pk))
			rc = sy_client_insert(t, "todo", pk, cols, NULL, &E);
		else if (rnd(4) == 0)
			rc = sy_client_delete(t, "todo", pk, NULL, &E);
		else
			rc = sy_client_update(t, "todo", pk, cols, NULL, &E);
		CU_ASSERT(rc == SY_CLIENT_OK || rc == SY_CLIENT_ESTATE ||
		          rc == SY_CLIENT_ENOTFOUND);
	}
	if (rnd(10) == 0)
		sy_client_rollback(t);
	else
		OK(sy_client_commit(t, &E));
}

static void server_write(void)
{
	const char *pk = pk_of(rnd(10));
	char row[128];
	if (rnd(4) == 0) {
		fake_direct_write(F, "todo", pk, NULL);
		return;
	}
	if (v2)
		snprintf(row, sizeof row, "{\"done\":%s,\"title\":\"s%u\"}",
		         rnd(2) ? "true" : "false", rnd(100));
	else
		snprintf(row, sizeof row, "{\"done\":%s,\"note\":null,\"title\":\"s%u\"}",
		         rnd(2) ? "true" : "false", rnd(100));
	fake_direct_write(F, "todo", pk, row);
}

typedef struct {
	char ids[64][SY_UUID_LEN + 1];
	sy_intent_state states[64];
	size_t n;
} unsettled;

static void on_intent(void *ctx, const sy_client_intent *i)
{
	unsettled *u = ctx;
	if (u->n < 64 &&
	    (i->state == SY_INTENT_CONFLICT || i->state == SY_INTENT_REJECTED ||
	     i->state == SY_INTENT_SCHEMA_INCOMPATIBLE ||
	     i->state == SY_INTENT_BLOCKED_BY_PREDECESSOR || i->state == SY_INTENT_BLOCKED_LIMIT)) {
		snprintf(u->ids[u->n], sizeof u->ids[0], "%s", i->mutation_id);
		u->states[u->n++] = i->state;
	}
}

static unsigned resolved[4];

static void random_resolve(void)
{
	unsettled u = {.n = 0};
	OK(sy_client_intents(C, false, on_intent, &u, &E));
	if (u.n == 0)
		return;
	size_t k = rnd((unsigned)u.n);
	char nid[SY_UUID_LEN + 1];
	sy_client_rc rc;
	unsigned how = rnd(4);
	if (u.states[k] == SY_INTENT_SCHEMA_INCOMPATIBLE && how != 0)
		how = 3;
	switch (how) {
	case 0: rc = sy_client_discard(C, u.ids[k], &E); break;
	case 1: rc = sy_client_accept_server(C, u.ids[k], &E); break;
	case 2: rc = sy_client_rebase(C, u.ids[k], NULL, nid, &E); break;
	default: rc = sy_client_remap(C, u.ids[k], "{\"title\":\"remapped\"}", nid, &E); break;
	}
	if (rc == SY_CLIENT_OK)
		resolved[how]++;
	CU_ASSERT(rc == SY_CLIENT_OK || rc == SY_CLIENT_ESTATE || rc == SY_CLIENT_EINVAL);
}

static void any_sync(void)
{
	sy_client_rc rc = sy_client_sync(C, 3600 * 1000, &E);
	CU_ASSERT(rc == SY_CLIENT_OK || rc == SY_CLIENT_EFROZEN);
}

static void test_random_sequences(void)
{
	const char *s = getenv("SY_TEST_SEED");
	unsigned long long seed =
	        s != NULL ? strtoull(s, NULL, 10) : (unsigned long long)time(NULL);
	fprintf(stderr, "SY_TEST_SEED=%llu ", seed);
	unsigned ops[11] = {0};
	for (int run = 0; run < 6; run++) {
		rng = seed + (unsigned long long)run;
		v2 = false;
		start();
		verify_ok("start");
		for (int i = 0; i < 150; i++) {
			unsigned op = rnd(22);
			const char *what;
			if (op < 8) {
				random_write();
				what = "a local commit";
			} else if (op < 11) {
				server_write();
				what = "a server write";
			} else if (op < 14) {
				any_sync();
				what = "a sync";
			} else if (op < 17) {
				int64_t next;
				for (unsigned k = 1 + rnd(4); k > 0; k--)
					CU_ASSERT(sy_client_step(C, &next, &E) == SY_CLIENT_OK ||
					          E.rc != SY_CLIENT_OK);
				what = "steps";
			} else if (op < 19) {
				random_resolve();
				what = "a resolve";
			} else if (op == 19) {
				fake_require_rebuild(F);
				any_sync();
				what = "a rebuild";
			} else if (op == 20) {
				reopen();
				what = "a reopen";
			} else if (!v2 && rnd(3) == 0) {
				/* a queued write of the field the new schema drops: remapped */
				sy_client_txn *t;
				OK(sy_client_begin(C, false, &t, &E));
				char pk[16];
				snprintf(pk, sizeof pk, "\"n%d\"", i);
				OK(sy_client_insert(t, "todo", pk,
				                    "{\"title\":\"n\",\"note\":\"x\"}", NULL, &E));
				OK(sy_client_commit(t, &E));
				fake_publish_v2(F);
				v2 = true;
				any_sync();
				verify_ok("a new schema");
				unsettled u = {.n = 0};
				OK(sy_client_intents(C, false, on_intent, &u, &E));
				char nid[SY_UUID_LEN + 1];
				for (size_t k = 0; k < u.n; k++)
					if (u.states[k] == SY_INTENT_SCHEMA_INCOMPATIBLE &&
					    sy_client_remap(C, u.ids[k], "{\"title\":\"remapped\"}",
					                    nid, &E) == SY_CLIENT_OK)
						resolved[3]++;
				what = "a new schema and remaps";
			} else {
				continue;
			}
			ops[op < 8    ? 0
			    : op < 11 ? 1
			    : op < 14 ? 2
			    : op < 17 ? 3
			    : op < 19 ? 4
			              : op - 14]++;
			verify_ok(what);
			counts_agree();
		}
		any_sync();
		verify_ok("the last sync");
		counts_agree();
		stop();
	}
	fprintf(stderr,
	        "(commits %u, server writes %u, syncs %u, steps %u, resolves %u:"
	        " discard %u accept %u rebase %u remap %u, rebuilds %u, reopens %u, schemas %u) ",
	        ops[0], ops[1], ops[2], ops[3], ops[4], resolved[0], resolved[1], resolved[2],
	        resolved[3], ops[5], ops[6], ops[7]);
	/* the runs met what they are for */
	CU_ASSERT(resolved[0] + resolved[1] > 0);
	CU_ASSERT(resolved[2] > 0 && resolved[3] > 0);
	CU_ASSERT(ops[5] > 0 && ops[7] > 0);
}

/* --- refusals ------------------------------------------------------------------ */

/* The store's file as bytes of what matters: every table's row count and the visible rows. */
static char *snapshot(void)
{
	sqlite3 *db;
	CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &db), SQLITE_OK);
	sy_buf b = SY_BUF_INIT;
	sqlite3_stmt *st;
	CU_ASSERT_EQUAL_FATAL(
	        sqlite3_prepare_v2(db,
	                           "SELECT (SELECT count(*) FROM intents),"
	                           " (SELECT count(*) FROM rows), (SELECT count(*) FROM meta),"
	                           " (SELECT count(*) FROM sqlite_master),"
	                           " (SELECT group_concat(id || title, ',') FROM \"visible:todo\")",
	                           -1, &st, NULL),
	        SQLITE_OK);
	CU_ASSERT_EQUAL_FATAL(sqlite3_step(st), SQLITE_ROW);
	for (int i = 0; i < 5; i++)
		sy_buf_printf(&b, "%s|", (const char *)sqlite3_column_text(st, i));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return sy_buf_steal(&b, NULL);
}

static void refused(const char *sql, const char *params, const char *why)
{
	char *r = q(sql, params);
	if (r != NULL)
		fprintf(stderr, "not refused: %s\n", sql);
	CU_ASSERT_PTR_NULL(r);
	sy_free(r);
	CU_ASSERT_EQUAL(E.rc, SY_CLIENT_EINVAL);
	if (why != NULL && strstr(E.message, why) == NULL) {
		fprintf(stderr, "%s: %s\n", sql, E.message);
		CU_FAIL("the wrong reason");
	}
}

static void test_refusals(void)
{
	start();
	w('i', "\"a\"", "{\"title\":\"one\"}");
	sync_ok();
	w('i', "\"b\"", "{\"title\":\"two\"}");
	char *before = snapshot();
	refused("INSERT INTO todo(id, title, done, _state) VALUES ('x', 'y', 0, 'synced')", NULL,
	        "not authorized");
	refused("UPDATE todo SET title = 'z'", NULL, NULL);
	refused("DELETE FROM todo", NULL, NULL);
	refused("UPDATE main.\"visible:todo\" SET title = 'z'", NULL, "not authorized");
	refused("DELETE FROM main.\"visible:todo\"", NULL, "not authorized");
	refused("DROP VIEW todo", NULL, NULL);
	refused("CREATE TABLE t(x)", NULL, NULL);
	refused("CREATE TEMP TABLE t(x)", NULL, NULL);
	refused("ATTACH ':memory:' AS x", NULL, "ATTACH");
	refused("PRAGMA user_version", NULL, "PRAGMA");
	refused("PRAGMA writable_schema = 1", NULL, "PRAGMA");
	refused("BEGIN", NULL, NULL);
	refused("SELECT 1; DELETE FROM todo", NULL, "one statement only");
	refused("SELECT 1; SELECT 2", NULL, "one statement only");
	refused("SELECT * FROM rows", NULL, "reading main.rows");
	refused("SELECT * FROM main.intents", NULL, "reading main.intents");
	refused("SELECT value FROM meta", NULL, "reading main.meta");
	refused("SELECT * FROM sqlite_master", NULL, "sqlite_master");
	refused("SELECT * FROM temp.sqlite_master", NULL, NULL);
	refused("SELECT (SELECT count(*) FROM batches) FROM todo", NULL, "batches");
	refused("SELECT count(*) FROM main.rows", NULL, "rows");
	refused("SELECT count(*) FROM txns", NULL, "txns");
	refused("SELECT count(*) FROM sqlite_schema", NULL, "sqlite_");
	refused("WITH x AS (SELECT * FROM attempts) SELECT * FROM x", NULL, "attempts");
	refused("SELECT * FROM todo WHERE id IN (SELECT pk FROM intents)", NULL, "intents");
	refused("SELECT * FROM pragma_table_info('rows')", NULL, NULL);
	refused("SELECT * FROM nosuch", NULL, "no such table");
	refused("SELEC 1", NULL, "syntax error");
	refused("", NULL, "no statement");
	refused("SELECT * FROM todo WHERE id = ?", NULL, "takes 1 parameter(s), 0 given");
	refused("SELECT * FROM todo WHERE id = ?", "[\"a\",\"b\"]", "1 parameter(s), 2 given");
	refused("SELECT ?", "{\"a\":1}", "a JSON array");
	refused("SELECT ?", "[", NULL);
	char *after = snapshot();
	CU_ASSERT_STRING_EQUAL(before, after);
	sy_free(before);
	sy_free(after);
	verify_ok("refusals");
	/* what is allowed: the views, the visible tables, functions, CTEs, parameters */
	char *r = q("SELECT id, title, done, note, _state FROM todo WHERE id = ? ORDER BY id",
	            "[\"a\"]");
	if (r == NULL)
		fprintf(stderr, "%s\n", E.message);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_STRING_EQUAL(r, "{\"id\":\"a\",\"title\":\"one\",\"done\":0,\"note\":null,"
	                          "\"_state\":\"synced\"}\n");
	sy_free(r);
	r = q("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3)"
	      " SELECT group_concat(t.id) AS ids, count(*) AS c, upper(?1) AS u FROM n, todo t"
	      " WHERE t._state = ?2;",
	      "[\"x\",\"pending\"]");
	if (r == NULL)
		fprintf(stderr, "%s\n", E.message);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_STRING_EQUAL(r, "{\"ids\":\"b,b,b\",\"c\":3,\"u\":\"X\"}\n");
	sy_free(r);
	stop();
}

/* --- live queries -------------------------------------------------------------- */

typedef struct {
	int calls, errors;
	char last[512];
	char error[400];
} seen;

static void on_live(void *ctx, const char *rows, const sy_client_error *err)
{
	seen *s = ctx;
	s->calls++;
	if (rows != NULL) {
		snprintf(s->last, sizeof s->last, "%s", rows);
	} else {
		s->errors++;
		snprintf(s->error, sizeof s->error, "%s %s", sy_client_rc_name(err->rc),
		         err->message);
	}
}

static void test_live(void)
{
	start();
	seen a = {0}, bad = {0};
	sy_client_live_query *la = NULL, *lb = NULL;
	OK(sy_client_live(C, "SELECT id, title FROM todo WHERE done = ? ORDER BY title", "[false]",
	                  on_live, &a, &la, &E));
	CU_ASSERT_EQUAL(a.calls, 1);
	CU_ASSERT_STRING_EQUAL(a.last, "[]");
	/* runs when it changes, once per commit */
	w('i', "\"a\"", "{\"title\":\"one\",\"done\":false}");
	CU_ASSERT_EQUAL(a.calls, 2);
	CU_ASSERT_STRING_EQUAL(a.last, "[{\"id\":\"a\",\"title\":\"one\"}]");
	sy_client_txn *t;
	OK(sy_client_begin(C, false, &t, &E));
	OK(sy_client_insert(t, "todo", "\"b\"", "{\"title\":\"two\",\"done\":false}", NULL, &E));
	OK(sy_client_insert(t, "todo", "\"c\"", "{\"title\":\"three\",\"done\":true}", NULL, &E));
	CU_ASSERT_EQUAL(a.calls, 2); /* not before the commit */
	OK(sy_client_commit(t, &E));
	CU_ASSERT_EQUAL(a.calls, 3);
	CU_ASSERT_STRING_EQUAL(
	        a.last, "[{\"id\":\"a\",\"title\":\"one\"},{\"id\":\"b\",\"title\":\"two\"}]");
	/* a step that changes no visible row does not run it; a sync that settles them does */
	int before = a.calls;
	sync_ok();
	CU_ASSERT(a.calls > before);
	before = a.calls;
	sync_ok();
	CU_ASSERT_EQUAL(a.calls, before);
	/* a server change arrives by pull */
	fake_direct_write(F, "todo", "\"d\"", "{\"done\":false,\"note\":null,\"title\":\"four\"}");
	sync_ok();
	CU_ASSERT(strstr(a.last, "four") != NULL);
	/* a rolled-back transaction runs nothing */
	before = a.calls;
	OK(sy_client_begin(C, false, &t, &E));
	OK(sy_client_insert(t, "todo", "\"e\"", "{\"title\":\"five\"}", NULL, &E));
	sy_client_rollback(t);
	CU_ASSERT_EQUAL(a.calls, before);
	/* a statement that fails when it runs: reported once, then never run again */
	OK(sy_client_live(C, "SELECT json(title) FROM todo WHERE id = 'f'", NULL, on_live, &bad,
	                  &lb, &E));
	CU_ASSERT_EQUAL(bad.calls, 1);
	CU_ASSERT_EQUAL(bad.errors, 0);
	w('i', "\"f\"", "{\"title\":\"not json\"}");
	CU_ASSERT_EQUAL(bad.calls, 2);
	CU_ASSERT_EQUAL(bad.errors, 1);
	CU_ASSERT(strstr(bad.error, "einval") != NULL && strstr(bad.error, "malformed JSON"));
	w('u', "\"f\"", "{\"title\":\"still not\"}");
	CU_ASSERT_EQUAL(bad.calls, 2);
	/* a live query that does not compile is refused at once */
	sy_client_live_query *lc = NULL;
	CU_ASSERT_EQUAL(sy_client_live(C, "SELECT * FROM rows", NULL, on_live, &bad, &lc, &E),
	                SY_CLIENT_EINVAL);
	CU_ASSERT_PTR_NULL(lc);
	sy_client_live_free(lb);
	/* freed: no more calls; the other goes on */
	before = a.calls;
	w('u', "\"a\"", "{\"title\":\"uno\"}");
	CU_ASSERT_EQUAL(a.calls, before + 1);
	CU_ASSERT_EQUAL(bad.calls, 2);
	/* a resolve runs it: a conflict, then the server's row accepted */
	const char *m = w('u', "\"d\"", "{\"title\":\"mine\"}");
	char mid[SY_UUID_LEN + 1];
	snprintf(mid, sizeof mid, "%s", m);
	fake_direct_write(F, "todo", "\"d\"",
	                  "{\"done\":false,\"note\":null,\"title\":\"theirs\"}");
	sync_ok();
	if (state(mid) == SY_INTENT_CONFLICT) {
		before = a.calls;
		OK(sy_client_accept_server(C, mid, &E));
		CU_ASSERT_EQUAL(a.calls, before + 1);
	} else {
		CU_FAIL("no conflict");
	}
	CU_ASSERT(strstr(a.last, "theirs") != NULL);
	verify_ok("live");
	sy_client_live_free(la);
	stop();
}

/* A row that leaves the user's scope (a pull's delete with left_scope) leaves the visible
 * table and the live query, without a rebuild; the device's intent on it is kept, shows
 * nothing, is explained and discarded; shared again, the row comes back. */
static void test_scope_exit(void)
{
	start();
	seen a = {0};
	sy_client_live_query *la = NULL;
	OK(sy_client_live(C, "SELECT id, title FROM todo ORDER BY id", NULL, on_live, &a, &la, &E));
	fake_direct_write(F, "todo", "\"x\"",
	                  "{\"done\":false,\"note\":null,\"title\":\"shared\"}");
	sync_ok();
	CU_ASSERT_STRING_EQUAL(a.last, "[{\"id\":\"x\",\"title\":\"shared\"}]");
	size_t rebuilds = fake_requests(F, "/v3/rebuild");
	const char *m = w('u', "\"x\"", "{\"title\":\"mine\"}");
	char mid[SY_UUID_LEN + 1];
	snprintf(mid, sizeof mid, "%s", m);
	CU_ASSERT_STRING_EQUAL(a.last, "[{\"id\":\"x\",\"title\":\"mine\"}]");
	fake_scope_exit(F, "todo", "\"x\"");
	sync_ok();
	CU_ASSERT_STRING_EQUAL(a.last, "[]");
	char *row = NULL;
	sy_client_row_state rs;
	sy_client_rc rc = sy_client_get(C, "todo", "\"x\"", &row, &rs, &E);
	CU_ASSERT(rc == SY_CLIENT_ENOTFOUND || row == NULL);
	sy_free(row);
	CU_ASSERT(state(mid) == SY_INTENT_CONFLICT || state(mid) == SY_INTENT_REJECTED);
	char *text = NULL;
	OK(sy_client_explain(C, mid, &text, &E));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "left the user's scope"));
	sy_free(text);
	OK(sy_client_discard(C, mid, &E));
	CU_ASSERT_EQUAL(state(mid), SY_INTENT_RESOLVED);
	CU_ASSERT_STRING_EQUAL(a.last, "[]");
	verify_ok("scope exit");
	/* shared again: a later upsert brings it back */
	fake_direct_write(F, "todo", "\"x\"", "{\"done\":false,\"note\":null,\"title\":\"again\"}");
	sync_ok();
	CU_ASSERT_STRING_EQUAL(a.last, "[{\"id\":\"x\",\"title\":\"again\"}]");
	CU_ASSERT_EQUAL(fake_requests(F, "/v3/rebuild"), rebuilds);
	verify_ok("scope entry");
	sy_client_live_free(la);
	stop();
}

/* The scope exit reaches the device before the push answers its intent on the row: the
 * push's answer (the row missing, as for any row outside the scope) keeps the exit, so the
 * intent is still explained as the row having left the user's scope. */
static void test_scope_exit_then_answer(void)
{
	start();
	fake_direct_write(F, "todo", "\"x\"",
	                  "{\"done\":false,\"note\":null,\"title\":\"shared\"}");
	sync_ok();
	fake_scope_exit(F, "todo", "\"x\"");
	fake_hold(F, true);
	sy_client_kick(C);
	step_until_inflight();
	CU_ASSERT_EQUAL_FATAL(C->inflight, SY_CL_REQ_PULL);
	const char *m = w('u', "\"x\"", "{\"title\":\"mine\"}");
	char mid[SY_UUID_LEN + 1];
	snprintf(mid, sizeof mid, "%s", m);
	fake_hold(F, false);
	sync_ok();
	CU_ASSERT_EQUAL(fake_push_count(F), 1);
	CU_ASSERT(state(mid) == SY_INTENT_CONFLICT || state(mid) == SY_INTENT_REJECTED);
	char *text = NULL;
	OK(sy_client_explain(C, mid, &text, &E));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "left the user's scope"));
	sy_free(text);
	OK(sy_client_discard(C, mid, &E));
	CU_ASSERT_EQUAL(state(mid), SY_INTENT_RESOLVED);
	verify_ok("scope exit, then the answer");
	stop();
}

/* --- indexes ------------------------------------------------------------------------ */

static void test_index_used(void)
{
	start();
	sy_client_txn *t;
	OK(sy_client_begin(C, false, &t, &E));
	for (int i = 0; i < 200; i++) {
		char pk[16], cols[64];
		snprintf(pk, sizeof pk, "\"r%03d\"", i);
		snprintf(cols, sizeof cols, "{\"title\":\"t%03d\",\"done\":%s}", i,
		         i % 10 ? "true" : "false");
		OK(sy_client_insert(t, "todo", pk, cols, NULL, &E));
	}
	OK(sy_client_commit(t, &E));
	const char *plan = "EXPLAIN QUERY PLAN SELECT id, title FROM todo WHERE done = ?"
	                   " ORDER BY title LIMIT 50";
	char *r = q(plan, "[0]");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT(strstr(r, "SCAN") != NULL && strstr(r, "INDEX") == NULL);
	sy_free(r);
	CU_ASSERT_EQUAL(sy_client_index(C, "todo", "[\"nosuch\"]", &E), SY_CLIENT_EINVAL);
	CU_ASSERT_EQUAL(sy_client_index(C, "nosuch", "[\"title\"]", &E), SY_CLIENT_EINVAL);
	CU_ASSERT_EQUAL(sy_client_index(C, "todo", "[]", &E), SY_CLIENT_EINVAL);
	OK(sy_client_index(C, "todo", "[\"done\",\"title\"]", &E));
	OK(sy_client_index(C, "todo", "[\"note\"]", &E));
	OK(sy_client_index(C, "todo", "[\"done\",\"title\"]", &E)); /* again: nothing new */
	r = q(plan, "[0]");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT(strstr(r, "USING INDEX visible:todo:[\\\"done\\\",\\\"title\\\"] (done=?)") !=
	          NULL);
	CU_ASSERT(strstr(r, "TEMP B-TREE") == NULL); /* the order comes from the index */
	sy_free(r);
	r = q("SELECT count(*) AS n FROM (SELECT id FROM todo WHERE done = ? ORDER BY title LIMIT "
	      "50)",
	      "[0]");
	CU_ASSERT_STRING_EQUAL(r, "{\"n\":20}\n");
	sy_free(r);
	/* a point query by pk uses the primary key */
	r = q("EXPLAIN QUERY PLAN SELECT title FROM todo WHERE id = ?", "[\"r007\"]");
	CU_ASSERT(r != NULL && strstr(r, "USING INDEX sqlite_autoindex") != NULL);
	sy_free(r);
	/* a new schema builds the tables again: the index on done, title with them; the one on
	 * note, a column the schema no longer has, not */
	fake_publish_v2(F);
	sync_ok();
	w('u', "\"r001\"", "{\"title\":\"x\"}");
	sync_ok();
	r = q(plan, "[0]");
	CU_ASSERT(r != NULL &&
	          strstr(r, "USING INDEX visible:todo:[\\\"done\\\",\\\"title\\\"]") != NULL);
	sy_free(r);
	CU_ASSERT_PTR_NULL(q("SELECT note FROM todo", NULL));
	CU_ASSERT(strstr(E.message, "no such column: note") != NULL);
	verify_ok("indexes");
	reopen();
	r = q(plan, "[0]");
	CU_ASSERT(r != NULL &&
	          strstr(r, "USING INDEX visible:todo:[\\\"done\\\",\\\"title\\\"]") != NULL);
	sy_free(r);
	stop();
}

/* --- upgrade ------------------------------------------------------------------------ */

static void test_upgrade_builds_tables(void)
{
	start();
	w('i', "\"a\"", "{\"title\":\"one\"}");
	sync_ok();
	w('i', "\"b\"", "{\"title\":\"two\"}");
	sy_client_close(C);
	C = NULL;
	/* what version 2 had: no visible tables, no index list */
	sqlite3 *db;
	CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &db), SQLITE_OK);
	CU_ASSERT_EQUAL_FATAL(sqlite3_exec(db,
	                                   "BEGIN; DROP TABLE \"visible:todo\";"
	                                   " DROP TABLE visible_indexes;"
	                                   " DELETE FROM meta WHERE key = 'visible_schema';"
	                                   " PRAGMA user_version = 2; COMMIT",
	                                   NULL, NULL, NULL),
	                      SQLITE_OK);
	sqlite3_close(db);
	reopen();
	verify_ok("the upgrade");
	char *r = q("SELECT id, _state FROM todo ORDER BY id", NULL);
	CU_ASSERT_STRING_EQUAL(r, "{\"id\":\"a\",\"_state\":\"synced\"}\n"
	                          "{\"id\":\"b\",\"_state\":\"pending\"}\n");
	sy_free(r);
	/* a table changed behind the library's back is found */
	CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &db), SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_exec(db,
	                             "UPDATE \"visible:todo\" SET title = 'forged' WHERE id = 'a'",
	                             NULL, NULL, NULL),
	                SQLITE_OK);
	sqlite3_close(db);
	char *rep = NULL;
	CU_ASSERT_EQUAL(sy_client_verify(C, &rep, &E), SY_CLIENT_EPROTOCOL);
	CU_ASSERT(rep != NULL && strstr(rep, "visible todo \"a\": differs") != NULL);
	sy_free(rep);
	stop();
}

/* --- a synced table named like one of the store's own ------------------------------ */

#define COLLIDING                                                                                  \
	"{\"tables\":[{\"table_id\":\"rows\",\"relation\":\"public.rows\",\"pk\":{\"field_id\":"   \
	"\"id\",\"column\":\"id\",\"type\":\"int64\"},\"fields\":[{\"field_id\":\"value\","        \
	"\"column\":\"value\",\"type\":\"text\",\"nullable\":true,\"writable\":true},"             \
	"{\"field_id\":\"_state\",\"column\":\"app_state\",\"type\":\"text\",\"nullable\":true,"   \
	"\"writable\":true},{\"field_id\":\"VALUE\",\"column\":\"value_upper\",\"type\":"          \
	"\"int32\","                                                                               \
	"\"nullable\":true,\"writable\":true}],"                                                   \
	"\"delete\":{\"mode\":\"hard\"},\"policy\":{\"read\":\"all\",\"write\":\"all\"}},"         \
	"{\"table_id\":\"meta\",\"relation\":\"public.meta\",\"pk\":{\"field_id\":\"key\","        \
	"\"column\":\"key\",\"type\":\"text\"},\"fields\":[{\"field_id\":\"value\",\"column\":"    \
	"\"value\",\"type\":\"float64\",\"nullable\":true,\"writable\":true}],\"delete\":"         \
	"{\"mode\":\"hard\"},\"policy\":{\"read\":\"all\",\"write\":\"all\"}}]}"

static void test_colliding_names(void)
{
	start();
	sy_client_close(C);
	C = NULL;
	/* a schema whose tables are called rows and meta, made current */
	sy_error e = {0};
	sy_manifest *m = sy_manifest_parse(COLLIDING, strlen(COLLIDING), &e);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	sqlite3 *db;
	sqlite3_stmt *st;
	CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &db), SQLITE_OK);
	CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db,
	                                         "INSERT INTO schemas(version, hash, manifest)"
	                                         " VALUES (7, ?1, ?2); UPDATE meta SET value = ?1"
	                                         " WHERE key = 'schema_hash'",
	                                         -1, &st, NULL),
	                      SQLITE_OK);
	sqlite3_bind_text(st, 1, m->hash, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, COLLIDING, -1, SQLITE_STATIC);
	CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	CU_ASSERT_EQUAL(sqlite3_exec(db,
	                             "UPDATE meta SET value = '7' WHERE key = 'schema_version';"
	                             " UPDATE meta SET value = ("
	                             "SELECT hash FROM schemas WHERE version = 7) WHERE key ="
	                             " 'schema_hash'",
	                             NULL, NULL, NULL),
	                SQLITE_OK);
	sqlite3_close(db);
	sy_manifest_free(m);
	reopen(); /* the tables built for schema 7 */
	sy_client_txn *t;
	OK(sy_client_begin(C, false, &t, &E));
	OK(sy_client_insert(t, "rows", "\"42\"",
	                    "{\"value\":\"app\",\"_state\":\"mine\",\"VALUE\":7}", NULL, &E));
	OK(sy_client_insert(t, "meta", "\"k\"", "{\"value\":1.5}", NULL, &E));
	OK(sy_client_commit(t, &E));
	/* the app's names mean the app's tables; the store's own are out of reach */
	/* fields named _state and VALUE (value but for case) have no column of their own */
	char *r = q("SELECT * FROM rows", NULL);
	CU_ASSERT_STRING_EQUAL(r, "{\"id\":42,\"value\":\"app\",\"_state\":\"pending\"}\n");
	sy_free(r);
	r = q("SELECT key, value FROM meta", NULL);
	CU_ASSERT_STRING_EQUAL(r, "{\"key\":\"k\",\"value\":1.5}\n");
	sy_free(r);
	r = q("SELECT count(*) AS n FROM rows", NULL);
	CU_ASSERT_STRING_EQUAL(r, "{\"n\":1}\n");
	sy_free(r);
	refused("SELECT * FROM main.rows", NULL, "reading main.rows");
	refused("SELECT * FROM main.meta", NULL, "reading main.meta");
	/* and the store goes on reading its own: its meta, its server rows */
	sy_client_status s;
	OK(sy_client_status_get(C, &s, &E));
	CU_ASSERT_EQUAL(s.schema_version, 7);
	CU_ASSERT_EQUAL(s.counts[SY_INTENT_PENDING], 2);
	char *row = NULL;
	OK(sy_client_get(C, "rows", "\"42\"", &row, NULL, &E));
	CU_ASSERT_STRING_EQUAL(row,
	                       "{\"VALUE\":7,\"_state\":\"mine\",\"id\":\"42\",\"value\":\"app\"}");
	sy_free(row);
	verify_ok("colliding names");
	stop();
}

int main(void)
{
	static CU_TestInfo tests[] = {
	        {"the visible tables equal the overlay after random sequences",
	         test_random_sequences},
	        {"writes, other statements and the store's own tables refused", test_refusals},
	        {"live queries run after the changes of what they read", test_live},
	        {"a row that leaves the scope leaves the tables and live queries", test_scope_exit},
	        {"a scope exit stays when the push answers the intent after it",
	         test_scope_exit_then_answer},
	        {"the app's indexes are in the query plan", test_index_used},
	        {"a store from before the visible tables gets them", test_upgrade_builds_tables},
	        {"synced tables named rows and meta", test_colliding_names},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("client queries", tests);
	return sy_test_run();
}
