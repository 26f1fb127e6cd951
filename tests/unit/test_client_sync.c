/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libsynchro-client's own machinery against the fake server: sealing ahead and
 * pipelined batches (with their successors), listeners, store versions, atomic
 * groups over a limit, bearer tokens refreshed after a 401; the idle poll.
 */
#include "config.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_harness.h"
#include "synchro/alloc.h"

/* A store of one mutation per batch (start() opened one with the fake's defaults). */
static void start_one_per_batch(void)
{
	start();
	sy_client_close(C);
	sy_client_options o;
	fake_options(F, &o);
	o.batch_max = 1;
	OK(sy_client_open(path, &o, &C, &E));
}

/* n inserts of pk "<prefix>0".."<prefix>n-1"; their mutation ids into m. */
static void insert_n(char (*m)[SY_UUID_LEN + 1], int n, char prefix)
{
	for (int k = 0; k < n; k++) {
		char pk[24];
		snprintf(pk, sizeof pk, "\"%c%d\"", prefix, k);
		snprintf(m[k], sizeof m[k], "%s", w('i', pk, "{\"title\":\"t\"}"));
	}
}

static void test_seal_ahead_successors(void)
{
	/* one mutation per batch: two batches */
	start_one_per_batch();
	char m1[SY_UUID_LEN + 1], m2[SY_UUID_LEN + 1];
	snprintf(m1, sizeof m1, "%s", w('i', "\"a\"", "{\"title\":\"one\"}"));
	snprintf(m2, sizeof m2, "%s", w('i', "\"b\"", "{\"title\":\"two\"}"));
	fake_bump_generation(F);
	fake_hold(F, true);
	step_until_inflight();
	int64_t next;
	OK(sy_client_step(C, &next, &E)); /* still in flight: the second batch is sealed ahead */
	CU_ASSERT_EQUAL(state(m2), SY_INTENT_SEALED);
	CU_ASSERT_EQUAL(fake_push_count(F), 1);
	fake_hold(F, false);
	sync_ok(); /* 409 on the first: successors for both, in order, each sent once */
	CU_ASSERT_EQUAL(state(m1), SY_INTENT_APPLIED);
	CU_ASSERT_EQUAL(state(m2), SY_INTENT_APPLIED);
	CU_ASSERT_EQUAL(fake_push_count(F), 3);
	CU_ASSERT(push_has(1, m1) && push_has(2, m2));
	char *b2 = batch_of(m2);
	CU_ASSERT(!push_has(0, b2) && push_has(2, b2));
	sy_free(b2);
	sqlite3 *db;
	CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_stmt *st;
	CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db,
	                                         "SELECT count(*) FROM batches WHERE state ="
	                                         " 'superseded' AND successor IS NOT NULL",
	                                         -1, &st, NULL),
	                      SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_ROW);
	CU_ASSERT_EQUAL(sqlite3_column_int(st, 0), 2);
	sqlite3_finalize(st);
	sqlite3_close(db);
	stop();
}

static void test_pipelined_batches(void)
{
	start_one_per_batch();
	char m[3][SY_UUID_LEN + 1];
	insert_n(m, 3, 'p');
	/* The first answer is refused: the next batch already went; the first is replayed. */
	fake_corrupt_next_push(F);
	fake_hold(F, true);
	step_until_inflight();
	int64_t next;
	OK(sy_client_step(C, &next, &E)); /* in flight: the second is sealed ahead */
	fake_hold(F, false);
	sync_ok();
	for (int k = 0; k < 3; k++)
		CU_ASSERT_EQUAL(state(m[k]), SY_INTENT_APPLIED);
	CU_ASSERT_EQUAL(fake_executions(F), 3);
	CU_ASSERT_EQUAL(fake_push_count(F), 4);
	CU_ASSERT(push_has(0, m[0]) && push_has(1, m[1]));
	OK(sy_client_verify(C, NULL, &E));
	stop();
}

/* The answer to batch 1 sends batch 2 and, in the commit that reconciles 1, seals batch 3. */
static void test_sealed_ahead_with_reconcile(void)
{
	start_one_per_batch();
	char m[4][SY_UUID_LEN + 1];
	insert_n(m, 4, 'q');
	fake_hold(F, true);
	step_until_inflight();
	int64_t next;
	OK(sy_client_step(C, &next, &E)); /* in flight: the second is sealed ahead */
	CU_ASSERT_EQUAL(state(m[1]), SY_INTENT_SEALED);
	CU_ASSERT_EQUAL(state(m[2]), SY_INTENT_PENDING);
	fake_hold(F, false);
	OK(sy_client_step(C, &next, &E)); /* the first answered: one step, one commit */
	CU_ASSERT_EQUAL(state(m[0]), SY_INTENT_APPLIED);
	CU_ASSERT_EQUAL(fake_push_count(F), 2);
	CU_ASSERT(push_has(1, m[1]));
	CU_ASSERT_EQUAL(state(m[2]), SY_INTENT_SEALED);
	CU_ASSERT_EQUAL(state(m[3]), SY_INTENT_PENDING); /* never two batches ahead */
	sync_ok();
	for (int k = 0; k < 4; k++)
		CU_ASSERT_EQUAL(state(m[k]), SY_INTENT_APPLIED);
	CU_ASSERT_EQUAL(fake_push_count(F), 4);
	CU_ASSERT_EQUAL(fake_executions(F), 4);
	OK(sy_client_verify(C, NULL, &E));
	stop();
}

static void test_store_version_refused(void)
{
	start();
	sy_client_close(C);
	C = NULL;
	sqlite3 *db;
	CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &db), SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	sy_client_options o;
	fake_options(F, &o);
	CU_ASSERT_EQUAL(sy_client_open(path, &o, &C, &E), SY_CLIENT_ESTATE);
	CU_ASSERT_PTR_NULL(C);
	CU_ASSERT_PTR_NOT_NULL(strstr(E.message, "version 99"));
	stop();
}

static void test_atomic_over_limit_blocked(void)
{
	start();
	size_t n = 70000;
	char *big = malloc(n + 32);
	snprintf(big, 16, "{\"title\":\"");
	memset(big + 10, 'x', n);
	snprintf(big + 10 + n, 8, "\"}");
	sy_client_txn *t;
	char a[SY_UUID_LEN + 1], b[SY_UUID_LEN + 1];
	OK(sy_client_begin(C, true, &t, &E));
	OK(sy_client_insert(t, "todo", "\"a\"", "{\"title\":\"small\"}", a, &E));
	OK(sy_client_insert(t, "todo", "\"b\"", big, b, &E));
	OK(sy_client_commit(t, &E));
	free(big);
	sync_ok();
	/* The atomic group cannot go whole: nothing of it is sent, both are kept. */
	CU_ASSERT_EQUAL(fake_push_count(F), 0);
	CU_ASSERT_EQUAL(state(a), SY_INTENT_BLOCKED_LIMIT);
	CU_ASSERT_EQUAL(state(b), SY_INTENT_BLOCKED_LIMIT);
	OK(sy_client_discard(C, a, &E));
	CU_ASSERT_EQUAL(state(a), SY_INTENT_RESOLVED);
	stop();
}

typedef struct {
	int rows, intents;
	bool saw_applied;
} heard;

static void listener(void *ctx, sy_client_event_kind kind, const char *table, const char *pk,
                     const char *mutation_id)
{
	heard *h = ctx;
	if (kind == SY_CLIENT_EVENT_ROW && table != NULL && pk != NULL) {
		h->rows++;
		/* Called on this thread with committed state: reading back works. */
		char *row = NULL;
		sy_client_row_state st;
		if (sy_client_get(C, table, pk, &row, &st, NULL) == SY_CLIENT_OK &&
		    st == SY_ROW_SYNCED)
			h->saw_applied = true;
		sy_free(row);
	}
	if (kind == SY_CLIENT_EVENT_INTENT && mutation_id != NULL)
		h->intents++;
}

/* Five server rows and a store opened to rebuild them in pages of two. */
static void rebuild_in_pages(void)
{
	start();
	for (int k = 0; k < 5; k++) {
		char pk[8];
		snprintf(pk, sizeof pk, "\"r%d\"", k);
		fake_direct_write(F, "todo", pk, "{\"done\":false,\"note\":null,\"title\":\"t\"}");
	}
	sy_client_close(C);
	sy_client_options o;
	fake_options(F, &o);
	o.pull_limit = 2;
	OK(sy_client_open(path, &o, &C, &E));
	fake_require_rebuild(F);
}

/* A rebuild in pages: status() tells the rows received so far and the server's total. */
static void test_rebuild_progress(void)
{
	rebuild_in_pages();
	uint64_t seen[8];
	int nseen = 0;
	sy_client_status s;
	for (int n = 0; n < 100; n++) {
		int64_t next;
		OK(sy_client_step(C, &next, &E));
		OK(sy_client_status_get(C, &s, &E));
		if (!s.rebuilding && nseen > 0)
			break;
		if (s.rebuild_rows > 0 && (nseen == 0 || seen[nseen - 1] != s.rebuild_rows) &&
		    nseen < 8) {
			CU_ASSERT_EQUAL(s.rebuild_total, 5);
			seen[nseen++] = s.rebuild_rows;
		}
	}
	CU_ASSERT_EQUAL_FATAL(nseen, 2);
	CU_ASSERT_EQUAL(seen[0], 2);
	CU_ASSERT_EQUAL(seen[1], 4);
	CU_ASSERT_FALSE(s.rebuilding);
	CU_ASSERT_EQUAL(s.rebuild_rows, 0);
	CU_ASSERT_EQUAL(s.rebuild_total, -1);
	sync_ok();
	char *row = NULL;
	OK(sy_client_get(C, "todo", "\"r4\"", &row, NULL, &E));
	sy_free(row);
	stop();
}

/* Steps until the rebuild has staged rows (its first page applied); the step's rc. */
static sy_client_rc step_until_staged(uint64_t rows)
{
	sy_client_status s = {0};
	sy_client_rc rc = SY_CLIENT_OK;
	for (int n = 0; n < 100 && rc == SY_CLIENT_OK && s.rebuild_rows < rows; n++) {
		int64_t next;
		rc = sy_client_step(C, &next, &E);
		OK(sy_client_status_get(C, &s, &E));
	}
	return rc;
}

static long long staged_rows(void)
{
	sqlite3_stmt *st;
	CU_ASSERT_EQUAL_FATAL(
	        sqlite3_prepare_v2(C->db, "SELECT count(*) FROM rebuild_rows", -1, &st, NULL),
	        SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_ROW);
	long long n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* The next rebuild page is asked for while the last one is applied, not after. */
static void test_rebuild_page_asked_ahead(void)
{
	rebuild_in_pages();
	size_t before = fake_requests(F, "/v3/rebuild");
	OK(step_until_staged(2));
	/* The step that applied the first page sent the request for the second. */
	CU_ASSERT_EQUAL(C->inflight, SY_CL_REQ_REBUILD);
	CU_ASSERT_EQUAL(fake_requests(F, "/v3/rebuild"), before + 2);
	CU_ASSERT_EQUAL(staged_rows(), 2);
	sync_ok();
	CU_ASSERT_EQUAL(fake_requests(F, "/v3/rebuild"), before + 3);
	char *row = NULL;
	OK(sy_client_get(C, "todo", "\"r4\"", &row, NULL, &E));
	sy_free(row);
	stop();
}

/* A page whose rows fail their checks is not applied, and the page asked for ahead of it
 * (before its checks) is cancelled: the rebuild asks for that page again and ends whole. */
static void test_rebuild_page_bad_cancels_ahead(void)
{
	rebuild_in_pages();
	fake_bad_next_page(F);
	OK(step_until_staged(2));
	CU_ASSERT_EQUAL_FATAL(C->inflight, SY_CL_REQ_REBUILD);
	size_t asked = fake_requests(F, "/v3/rebuild");
	/* The second page arrives with a bad row: the third was asked for, then cancelled. */
	for (int n = 0; n < 10 && C->inflight != SY_CL_REQ_NONE; n++) {
		int64_t next;
		OK(sy_client_step(C, &next, &E));
	}
	CU_ASSERT_EQUAL(C->inflight, SY_CL_REQ_NONE);
	CU_ASSERT_EQUAL(fake_requests(F, "/v3/rebuild"), asked + 1);
	CU_ASSERT_EQUAL(staged_rows(), 2);
	sy_client_status s;
	OK(sy_client_status_get(C, &s, &E));
	CU_ASSERT_TRUE(s.rebuilding);
	CU_ASSERT_PTR_NOT_NULL(strstr(s.last_error, "invalid_response"));
	sync_ok();
	for (int k = 0; k < 5; k++) {
		char pk[8], *row = NULL;
		snprintf(pk, sizeof pk, "\"r%d\"", k);
		OK(sy_client_get(C, "todo", pk, &row, NULL, &E));
		CU_ASSERT_PTR_NOT_NULL(row);
		sy_free(row);
	}
	OK(sy_client_verify(C, NULL, &E));
	stop();
}

/* A local write during a rebuild goes first: no page is asked for ahead of its push. */
static void test_rebuild_page_not_ahead_of_a_push(void)
{
	rebuild_in_pages();
	OK(step_until_staged(2));
	CU_ASSERT_EQUAL_FATAL(C->inflight, SY_CL_REQ_REBUILD);
	const char *id = w('i', "\"local\"", "{\"done\":false,\"note\":null,\"title\":\"l\"}");
	OK(step_until_staged(4));
	/* The second page applied; nothing went ahead of the push decide() sends next. */
	CU_ASSERT_EQUAL(C->inflight, SY_CL_REQ_NONE);
	int64_t next;
	OK(sy_client_step(C, &next, &E));
	CU_ASSERT_EQUAL(C->inflight, SY_CL_REQ_PUSH);
	sync_ok();
	CU_ASSERT_EQUAL(state(id), SY_INTENT_APPLIED);
	stop();
}

/* A page that fails to apply leaves the store as before it, and the page asked for ahead of
 * it is cancelled, never applied over the gap: the rebuild goes on from the stored token. */
static void test_rebuild_page_failed_cancels_ahead(void)
{
	rebuild_in_pages();
	CU_ASSERT_EQUAL_FATAL(sqlite3_exec(C->db,
	                                   "CREATE TEMP TRIGGER boom BEFORE INSERT ON rebuild_rows"
	                                   " WHEN NEW.pk = '\"r3\"'"
	                                   " BEGIN SELECT RAISE(ABORT, 'boom'); END",
	                                   NULL, NULL, NULL),
	                      SQLITE_OK);
	OK(step_until_staged(2));
	CU_ASSERT_EQUAL(C->inflight, SY_CL_REQ_REBUILD);
	/* The second page's answer arrives; its apply fails on r3. */
	sy_client_rc rc = SY_CLIENT_OK;
	for (int n = 0; n < 10 && rc == SY_CLIENT_OK; n++) {
		int64_t next;
		rc = sy_client_step(C, &next, &E);
	}
	CU_ASSERT_EQUAL(rc, SY_CLIENT_ESTORE);
	CU_ASSERT_EQUAL(C->inflight, SY_CL_REQ_NONE);
	CU_ASSERT_EQUAL(staged_rows(), 2);
	sy_client_status s;
	OK(sy_client_status_get(C, &s, &E));
	CU_ASSERT_TRUE(s.rebuilding);
	CU_ASSERT_EQUAL(s.rebuild_rows, 2);
	OK(sy_client_verify(C, NULL, &E));
	CU_ASSERT_EQUAL(sqlite3_exec(C->db, "DROP TRIGGER temp.boom", NULL, NULL, NULL), SQLITE_OK);
	sync_ok();
	for (int k = 0; k < 5; k++) {
		char pk[8], *row = NULL;
		snprintf(pk, sizeof pk, "\"r%d\"", k);
		OK(sy_client_get(C, "todo", pk, &row, NULL, &E));
		sy_free(row);
	}
	stop();
}

/* An answer to a page token the store no longer holds (its rebuild started again) is not
 * applied. */
static void test_rebuild_page_of_another_token_dropped(void)
{
	rebuild_in_pages();
	OK(step_until_staged(2));
	CU_ASSERT_EQUAL_FATAL(C->inflight, SY_CL_REQ_REBUILD);
	OK(sy_cl_rebuild_start(C, &E));
	int64_t next;
	for (int n = 0; n < 10 && C->inflight == SY_CL_REQ_REBUILD; n++)
		OK(sy_client_step(C, &next, &E));
	/* The second page answered the old rebuild's token: nothing of it was staged. */
	CU_ASSERT_EQUAL(staged_rows(), 0);
	sy_client_status s;
	OK(sy_client_status_get(C, &s, &E));
	CU_ASSERT_EQUAL(s.rebuild_rows, 0);
	sync_ok();
	OK(sy_client_verify(C, NULL, &E));
	char *row = NULL;
	OK(sy_client_get(C, "todo", "\"r0\"", &row, NULL, &E));
	sy_free(row);
	stop();
}

static void test_listener_after_commit(void)
{
	start();
	heard h = {0};
	sy_client_close(C);
	sy_client_options o;
	fake_options(F, &o);
	o.listener = listener;
	o.listener_ctx = &h;
	OK(sy_client_open(path, &o, &C, &E));
	w('i', "\"a\"", "{\"title\":\"one\"}");
	sync_ok();
	CU_ASSERT(h.intents >= 1);
	CU_ASSERT(h.rows >= 2); /* the outcome and the pulled echo */
	CU_ASSERT_TRUE(h.saw_applied);
	stop();
}

static void test_chain_cut_by_the_load_limit(void)
{
	/* a pass loads 3 pending intents */
	start_one_per_batch();
	w('i', "\"a\"", "{\"title\":\"one\"}");
	w('u', "\"a\"", "{\"done\":true}");
	w('u', "\"a\"", "{\"title\":\"two\"}");
	char last[SY_UUID_LEN + 1];
	snprintf(last, sizeof last, "%s", w('u', "\"a\"", "{\"note\":\"n\"}"));
	sync_ok();
	/* The loaded three became one insert; the fourth waited for it, then went with its base. */
	CU_ASSERT_EQUAL(fake_push_count(F), 2);
	CU_ASSERT(push_has(0, "\"operation\":\"insert\"") && push_has(1, last));
	CU_ASSERT_EQUAL(state(last), SY_INTENT_APPLIED);
	CU_ASSERT_STRING_EQUAL(fake_row(F, "todo", "\"a\""),
	                       "{\"done\":true,\"note\":\"n\",\"title\":\"two\"}");
	stop();
}

/* Found by the chaos suite: an atomic member of a row whose insert was in flight
 * waited behind it and went in a later batch of its own, split from its group. */
static void test_atomic_waits_whole(void)
{
	start();
	w('i', "\"a\"", "{\"title\":\"one\"}");
	sy_client_txn *t;
	char b[SY_UUID_LEN + 1], u[SY_UUID_LEN + 1];
	OK(sy_client_begin(C, true, &t, &E));
	OK(sy_client_insert(t, "todo", "\"b\"", "{\"title\":\"two\"}", b, &E));
	OK(sy_client_update(t, "todo", "\"a\"", "{\"done\":true}", u, &E));
	OK(sy_client_commit(t, &E));
	fake_hold(F, true);
	step_until_inflight();
	int64_t next;
	OK(sy_client_step(C, &next, &E)); /* in flight: what can go next is sealed ahead */
	fake_hold(F, false);
	sync_ok();
	CU_ASSERT_EQUAL(fake_push_count(F), 2);
	CU_ASSERT(push_has(1, "\"atomic\":true") && push_has(1, b) && push_has(1, u));
	CU_ASSERT_EQUAL(state(b), SY_INTENT_APPLIED);
	CU_ASSERT_EQUAL(state(u), SY_INTENT_APPLIED);
	stop();
}

/* The same group when that predecessor conflicts: nothing of the group is sent. */
static void test_atomic_blocked_by_a_failed_predecessor(void)
{
	start();
	w('i', "\"a\"", "{\"title\":\"one\"}");
	sync_ok();
	fake_direct_write(F, "todo", "\"a\"", "{\"done\":false,\"note\":null,\"title\":\"other\"}");
	char p[SY_UUID_LEN + 1];
	snprintf(p, sizeof p, "%s", w('u', "\"a\"", "{\"title\":\"mine\"}"));
	sy_client_txn *t;
	char b[SY_UUID_LEN + 1], u[SY_UUID_LEN + 1];
	OK(sy_client_begin(C, true, &t, &E));
	OK(sy_client_insert(t, "todo", "\"b\"", "{\"title\":\"two\"}", b, &E));
	OK(sy_client_update(t, "todo", "\"a\"", "{\"done\":true}", u, &E));
	OK(sy_client_commit(t, &E));
	sync_ok();
	CU_ASSERT_EQUAL(fake_push_count(F), 2); /* the first insert, then the conflicting update */
	CU_ASSERT_EQUAL(state(p), SY_INTENT_CONFLICT);
	CU_ASSERT_EQUAL(state(u), SY_INTENT_BLOCKED_BY_PREDECESSOR);
	CU_ASSERT_EQUAL(state(b), SY_INTENT_BLOCKED_LIMIT);
	CU_ASSERT_PTR_NULL(fake_row(F, "todo", "\"b\""));
	stop();
}

/* Found by the chaos suite: a member without a base (authored behind an intent of its
 * row that was then blocked) was blocked at sealing, with no predecessor named, and the
 * rest of its atomic transaction went without it. */
static void test_atomic_member_without_base_blocks_the_group(void)
{
	start();
	w('i', "\"a\"", "{\"title\":\"one\"}");
	sync_ok();
	size_t n = 70000;
	char *big = malloc(n + 32);
	snprintf(big, 16, "{\"title\":\"");
	memset(big + 10, 'x', n);
	snprintf(big + 10 + n, 8, "\"}");
	sy_client_txn *t;
	char p[SY_UUID_LEN + 1], q[SY_UUID_LEN + 1], u[SY_UUID_LEN + 1], c[SY_UUID_LEN + 1];
	OK(sy_client_begin(C, true, &t, &E)); /* over a push limit: blocked whole */
	OK(sy_client_update(t, "todo", "\"a\"", "{\"done\":true}", p, &E));
	OK(sy_client_insert(t, "todo", "\"b\"", big, q, &E));
	OK(sy_client_commit(t, &E));
	free(big);
	OK(sy_client_begin(C, true, &t, &E)); /* its update has no base: p is outstanding */
	OK(sy_client_update(t, "todo", "\"a\"", "{\"title\":\"two\"}", u, &E));
	OK(sy_client_insert(t, "todo", "\"c\"", "{\"title\":\"three\"}", c, &E));
	OK(sy_client_commit(t, &E));
	sync_ok();
	CU_ASSERT_EQUAL(fake_push_count(F), 1); /* only the first insert */
	CU_ASSERT_EQUAL(state(p), SY_INTENT_BLOCKED_LIMIT);
	CU_ASSERT_EQUAL(state(u), SY_INTENT_BLOCKED_BY_PREDECESSOR);
	CU_ASSERT_EQUAL(state(c), SY_INTENT_BLOCKED_LIMIT);
	sy_client_intent *i = intent(u);
	CU_ASSERT(i != NULL && i->link != NULL && strcmp(i->link, p) == 0);
	sy_client_intent_free(i);
	CU_ASSERT_PTR_NULL(fake_row(F, "todo", "\"c\""));
	stop();
}

/*
 * An app's own loop: steps, and until the time a step returns, waits on the
 * transport (in flight) or lets the clock run (idle), for ms of the fake clock.
 */
static void run_loop(int64_t ms)
{
	int64_t end = fake_now(F) + ms;
	for (int n = 0; n < 10000 && fake_now(F) < end; n++) {
		int64_t next;
		OK(sy_client_step(C, &next, &E));
		int64_t now = fake_now(F);
		if (C->inflight != SY_CL_REQ_NONE)
			sy_client_wait(C, 0);
		else if (next > now)
			fake_advance(F, (next < end ? next : end) - now);
	}
}

static bool has_row(const char *pk)
{
	char *row = NULL;
	sy_client_row_state st;
	bool found = sy_client_get(C, "todo", pk, &row, &st, &E) == SY_CLIENT_OK && row != NULL;
	sy_client_free(row);
	return found;
}

static void test_idle_polls(void)
{
	start(); /* poll interval: 60 s */
	size_t pulls = fake_requests(F, "/v3/pull");
	fake_direct_write(F, "todo", "\"p\"", "{\"done\":false,\"note\":null,\"title\":\"other\"}");
	run_loop(59000);
	CU_ASSERT_EQUAL(fake_requests(F, "/v3/pull"), pulls); /* not yet due */
	CU_ASSERT_FALSE(has_row("\"p\""));
	run_loop(2000);
	CU_ASSERT_EQUAL(fake_requests(F, "/v3/pull"), pulls + 1);
	CU_ASSERT_TRUE(has_row("\"p\""));
	CU_ASSERT_EQUAL(C->phase, SY_PHASE_IDLE);
	/* and at every interval after it, with nothing new to bring */
	run_loop(3 * 60000);
	CU_ASSERT_EQUAL(fake_requests(F, "/v3/pull"), pulls + 4);
	stop();
}

/* Whether the file at p (absent: no) holds needle's bytes anywhere. */
static bool file_has(const char *p, const char *needle)
{
	FILE *fp = fopen(p, "rb");
	if (fp == NULL)
		return false;
	size_t n = strlen(needle), have = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	bool found = false;
	size_t got;
	while (!found && (got = fread(buf + have, 1, cap - have, fp)) > 0) {
		have += got;
		for (size_t i = 0; i + n <= have && !found; i++)
			found = memcmp(buf + i, needle, n) == 0;
		/* keep the last n - 1 octets: a match may straddle two reads */
		size_t keep = have < n ? have : n - 1;
		memmove(buf, buf + have - keep, keep);
		have = keep;
	}
	free(buf);
	fclose(fp);
	return found;
}

/* token_fn: the next token of a list, new; counts its calls. */
static const char *const tokens[] = {"tok-1", "tok-2", "tok-3"};
static int token_calls;

static char *next_token(void *ctx)
{
	(void)ctx;
	if (token_calls >= 3)
		return NULL;
	const char *t = tokens[token_calls++];
	char *s = sy_client_alloc(strlen(t) + 1);
	memcpy(s, t, strlen(t) + 1);
	return s;
}

static void open_with_token(const char *token)
{
	sy_client_close(C);
	sy_client_options o;
	fake_options(F, &o);
	o.token = token;
	o.token_fn = next_token;
	token_calls = 0;
	OK(sy_client_open(path, &o, &C, &E));
}

static void test_token_refreshed_after_401(void)
{
	start();
	fake_require_token(F, "tok-0");
	open_with_token("tok-0");
	char m[SY_UUID_LEN + 1];
	snprintf(m, sizeof m, "%s", w('i', "\"a\"", "{\"title\":\"one\"}"));
	sync_ok();
	CU_ASSERT_EQUAL(token_calls, 0); /* the token given at open went and was good */
	CU_ASSERT_EQUAL(state(m), SY_INTENT_APPLIED);
	/* The token expires mid-sync: the push is refused, a fresh one asked for, and the
	 * same sealed bytes go again under it. */
	fake_require_token(F, "tok-1");
	snprintf(m, sizeof m, "%s", w('u', "\"a\"", "{\"title\":\"two\"}"));
	size_t before = fake_push_count(F);
	sync_ok();
	CU_ASSERT_EQUAL(token_calls, 1);
	CU_ASSERT_EQUAL(state(m), SY_INTENT_APPLIED);
	CU_ASSERT_EQUAL(fake_push_count(F), before + 1);
	size_t rl = 0, pl = 0;
	const char *refused = fake_refused_push(F, 0, &rl);
	const char *sent = fake_push_body(F, before, &pl);
	CU_ASSERT_PTR_NOT_NULL_FATAL(refused);
	CU_ASSERT(rl == pl && memcmp(refused, sent, pl) == 0);
	char *b = batch_of(m);
	sy_client_batch *bt = NULL;
	OK(sy_client_batch_get(C, b, &bt, &E));
	CU_ASSERT(bt->body_len == pl && memcmp(bt->body, sent, pl) == 0);
	sy_client_batch_free(bt);
	sy_free(b);
	/* The token is nowhere in the store's files. */
	CU_ASSERT(!file_has(path, "tok-"));
	char wal[300];
	snprintf(wal, sizeof wal, "%s-wal", path);
	CU_ASSERT(!file_has(wal, "tok-"));
	stop();
}

static void test_token_refused_twice_stops(void)
{
	start();
	fake_require_token(F, "never");
	open_with_token("tok-0");
	char m[SY_UUID_LEN + 1];
	snprintf(m, sizeof m, "%s", w('i', "\"a\"", "{\"title\":\"one\"}"));
	CU_ASSERT_EQUAL(sy_client_sync(C, 60000, &E), SY_CLIENT_ESERVER);
	CU_ASSERT_EQUAL(token_calls, 1); /* one fresh token, one retry, then it stops */
	sy_client_status s;
	OK(sy_client_status_get(C, &s, &E));
	CU_ASSERT_STRING_EQUAL(s.last_error, "auth_required");
	CU_ASSERT_EQUAL(s.phase, SY_PHASE_STOPPED);
	CU_ASSERT(!s.frozen);
	CU_ASSERT_EQUAL(state(m), SY_INTENT_SEALED);
	/* Opened again with the right token, the same batch goes and applies. */
	fake_require_token(F, "tok-1");
	open_with_token(NULL); /* no token yet: token_fn gives the first */
	sync_ok();
	CU_ASSERT_EQUAL(token_calls, 1);
	CU_ASSERT_EQUAL(state(m), SY_INTENT_APPLIED);
	stop();
}

static void test_token_bad_refused_at_open(void)
{
	start();
	sy_client_close(C);
	C = NULL;
	sy_client_options o;
	fake_options(F, &o);
	o.token = "has space";
	CU_ASSERT_EQUAL(sy_client_open(path, &o, &C, &E), SY_CLIENT_EINVAL);
	CU_ASSERT_PTR_NULL(C);
	CU_ASSERT_PTR_NULL(strstr(E.message, "has space"));
	fake_options(F, &o);
	o.token = "t";
	o.user = "alice";
	CU_ASSERT_EQUAL(sy_client_open(path, &o, &C, &E), SY_CLIENT_EINVAL);
	CU_ASSERT_PTR_NULL(C);
	stop();
}

/*
 * A row that left the user's read scope is answered as a missing row (doc/contract.md#policies):
 * an update of it is row_not_found, which settles as for any missing row: a conflict, the row
 * gone from the store, the intent kept until it is discarded.
 */
static void test_row_outside_the_scope(void)
{
	start();
	w('i', "\"s\"", "{\"title\":\"shared\"}");
	sync_ok();
	fake_hide_row(F, "todo", "\"s\"");
	char u[SY_UUID_LEN + 1];
	snprintf(u, sizeof u, "%s", w('u', "\"s\"", "{\"done\":true}"));
	sync_ok();
	sy_client_intent *i = intent(u);
	CU_ASSERT_EQUAL(i->state, SY_INTENT_CONFLICT);
	CU_ASSERT_STRING_EQUAL(i->code, "row_not_found");
	sy_client_intent_free(i);
	char *row = NULL;
	sy_client_row_state rs;
	OK(sy_client_get(C, "todo", "\"s\"", &row, &rs, &E));
	CU_ASSERT_PTR_NULL(row);
	CU_ASSERT_EQUAL(rs, SY_ROW_CONFLICT);
	sy_free(row);
	OK(sy_client_discard(C, u, &E));
	CU_ASSERT_EQUAL(state(u), SY_INTENT_RESOLVED);
	OK(sy_client_get(C, "todo", "\"s\"", &row, &rs, &E));
	CU_ASSERT_PTR_NULL(row);
	CU_ASSERT_EQUAL(rs, SY_ROW_SYNCED);
	sy_free(row);
	OK(sy_client_verify(C, NULL, &E));
	stop();
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"listeners hear committed state on the caller's thread",
	         test_listener_after_commit},
	        {"a rebuild's progress in status: rows received and the server's total",
	         test_rebuild_progress},
	        {"the next rebuild page is asked for while the last one is applied",
	         test_rebuild_page_asked_ahead},
	        {"a local write during a rebuild: no page is asked for ahead of its push",
	         test_rebuild_page_not_ahead_of_a_push},
	        {"a rebuild page that fails cancels the one asked for ahead of it",
	         test_rebuild_page_failed_cancels_ahead},
	        {"a rebuild page with a bad row cancels the one asked for ahead of it",
	         test_rebuild_page_bad_cancels_ahead},
	        {"a rebuild page answering another page token is not applied",
	         test_rebuild_page_of_another_token_dropped},
	        {"a batch sealed ahead gets its successor too", test_seal_ahead_successors},
	        {"the batch after the one in flight sealed with the answered one's reconciliation",
	         test_sealed_ahead_with_reconcile},
	        {"a store of a newer version is refused", test_store_version_refused},
	        {"an idle device pulls at every poll interval", test_idle_polls},
	        {"batches pipelined: the next goes while one is reconciled",
	         test_pipelined_batches},
	        {"an atomic transaction over a push limit is blocked whole",
	         test_atomic_over_limit_blocked},
	        {"a chain cut by the load limit waits behind what is sent",
	         test_chain_cut_by_the_load_limit},
	        {"an atomic transaction waits whole behind a member's predecessor",
	         test_atomic_waits_whole},
	        {"an atomic transaction whose member's predecessor failed is blocked whole",
	         test_atomic_blocked_by_a_failed_predecessor},
	        {"an atomic member without a base blocks its group, naming its predecessor",
	         test_atomic_member_without_base_blocks_the_group},
	        {"a token refreshed after a 401 sends the same sealed bytes again",
	         test_token_refreshed_after_401},
	        {"a fresh token refused too stops the client, queue kept",
	         test_token_refused_twice_stops},
	        {"a bad token, or a token beside a user, is refused at open",
	         test_token_bad_refused_at_open},
	        {"an update of a row outside the scope settles as row_not_found",
	         test_row_outside_the_scope},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("client sync", tests);
	return sy_test_run();
}
