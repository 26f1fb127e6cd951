/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libsynchro-client against the fake server (client_fake.c), no network: every
 * client rule of doc/contract.md#client-rules, each with its test.
 */
#include "config.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_harness.h"
#include "synchro/alloc.h"

/* --- identities ----------------------------------------------------------------------- */

static void test_identity_persisted_before_send(void)
{
	start();
	char cid[SY_UUID_LEN + 1];
	snprintf(cid, sizeof cid, "%s", sy_client_id(C));
	const char *mid = w('i', "\"a\"", "{\"title\":\"one\"}");
	char keep[SY_UUID_LEN + 1];
	snprintf(keep, sizeof keep, "%s", mid);
	reopen(); /* the intent and the client id survive a restart before any send */
	CU_ASSERT_STRING_EQUAL(sy_client_id(C), cid);
	CU_ASSERT_EQUAL(state(keep), SY_INTENT_PENDING);
	fake_hold(F, true);
	step_until_inflight();
	/* While the push is in flight, another connection already reads the sealed batch. */
	sqlite3 *db;
	CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_stmt *st;
	CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db, "SELECT body FROM batches", -1, &st, NULL),
	                      SQLITE_OK);
	CU_ASSERT_EQUAL_FATAL(sqlite3_step(st), SQLITE_ROW);
	size_t len;
	const char *sent = fake_push_body(F, 0, &len);
	CU_ASSERT_EQUAL((size_t)sqlite3_column_bytes(st, 0), len);
	CU_ASSERT(memcmp(sqlite3_column_blob(st, 0), sent, len) == 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	CU_ASSERT(strstr(sent, keep) != NULL);
	CU_ASSERT(strstr(sent, cid) != NULL);
	fake_hold(F, false);
	sync_ok();
	CU_ASSERT_EQUAL(state(keep), SY_INTENT_APPLIED);
	stop();
}

/* --- retries -------------------------------------------------------------------------- */

static void test_retry_after_same_bytes(void)
{
	start();
	const char *mid = w('i', "\"a\"", "{\"title\":\"one\"}");
	fake_fail_next_push(F, 503, "temporary_unavailable", 7);
	CU_ASSERT_EQUAL(sy_client_sync(C, 5000, &E), SY_CLIENT_ETIMEOUT);
	CU_ASSERT_EQUAL(fake_push_count(F), 1);
	sy_client_status s;
	OK(sy_client_status_get(C, &s, &E));
	CU_ASSERT_STRING_EQUAL(s.last_error, "temporary_unavailable");
	CU_ASSERT_TRUE(s.last_error_retryable);
	CU_ASSERT_EQUAL(s.unsettled_batches, 1);
	fake_fail_next_push(F, 429, "retry_later", 3);
	sync_ok();
	CU_ASSERT_EQUAL(fake_push_count(F), 3);
	size_t l0, l1, l2;
	const char *b0 = fake_push_body(F, 0, &l0), *b1 = fake_push_body(F, 1, &l1),
	           *b2 = fake_push_body(F, 2, &l2);
	CU_ASSERT(l0 == l1 && l1 == l2 && memcmp(b0, b1, l0) == 0 && memcmp(b1, b2, l0) == 0);
	sy_client_intent *i = intent(mid);
	sy_client_batch *b = NULL;
	OK(sy_client_batch_get(C, i->batch_id, &b, &E));
	CU_ASSERT_EQUAL(b->attempt_count, 3);
	CU_ASSERT_EQUAL(b->attempts[0].status, 503);
	CU_ASSERT_EQUAL(b->attempts[0].retry_after_s, 7);
	CU_ASSERT_EQUAL(b->attempts[1].status, 429);
	CU_ASSERT(b->attempts[1].at_ms - b->attempts[0].at_ms >= 7000);
	CU_ASSERT(b->attempts[2].at_ms - b->attempts[1].at_ms >= 3000);
	CU_ASSERT_EQUAL(b->attempts[2].status, 200);
	CU_ASSERT_STRING_EQUAL(b->state, "completed");
	CU_ASSERT(b->body_len == l0 && memcmp(b->body, b0, l0) == 0);
	sy_client_batch_free(b);
	sy_client_intent_free(i);
	CU_ASSERT_EQUAL(fake_executions(F), 1);
	stop();
}

/* The device's clock stepped back an hour while a Retry-After of 7 s runs: the retry is
 * still 7 s after the answer, instead of after the hour passed again; and a step back
 * during a sync's wait does not lengthen its timeout. */
static void test_clock_step_back(void)
{
	start();
	const char *mid = w('i', "\"a\"", "{\"title\":\"one\"}");
	char keep[SY_UUID_LEN + 1];
	snprintf(keep, sizeof keep, "%s", mid);
	fake_fail_next_push(F, 503, "temporary_unavailable", 7);
	step_until_inflight();
	step_until_settled();
	CU_ASSERT_EQUAL(fake_push_count(F), 1);
	int64_t next;
	OK(sy_client_step(C, &next, &E));
	CU_ASSERT(next - fake_now(F) > 6000 && next - fake_now(F) <= 7000);
	fake_advance(F, -3600 * 1000);
	OK(sy_client_step(C, &next, &E));
	CU_ASSERT(next - fake_now(F) > 6000 && next - fake_now(F) <= 7000);
	if (!(next - fake_now(F) <= 7000))
		fprintf(stderr, "after the step back: due in %lld ms\n",
		        (long long)(next - fake_now(F)));
	CU_ASSERT_EQUAL(sy_client_sync(C, 20000, &E), SY_CLIENT_OK);
	CU_ASSERT_EQUAL(fake_push_count(F), 2);
	CU_ASSERT_EQUAL(state(keep), SY_INTENT_APPLIED);
	/* Another 503 with 7 s, a sync of 5 s, the clock an hour back during its wait: out of
	 * time after its 5 s, not after an hour and 5 s. */
	(void)w('i', "\"b\"", "{\"title\":\"two\"}");
	fake_fail_next_push(F, 503, "temporary_unavailable", 7);
	int64_t t0 = fake_now(F);
	fake_step_clock_at_sleep(F, -3600 * 1000);
	CU_ASSERT_EQUAL(sy_client_sync(C, 5000, &E), SY_CLIENT_ETIMEOUT);
	int64_t waited = fake_now(F) - t0 + 3600 * 1000;
	CU_ASSERT(waited >= 5000 && waited < 7000);
	if (!(waited < 7000))
		fprintf(stderr, "a sync of 5 s waited %lld ms\n", (long long)waited);
	stop();
}

/* A gateway's 502 (or any 5xx the protocol does not give) for a push: retried with the
 * same bytes after a backoff, like no answer; the queue is not frozen. */
static void gateway_error_retried(int status, const char *code)
{
	start();
	const char *mid = w('i', "\"a\"", "{\"title\":\"one\"}");
	char keep[SY_UUID_LEN + 1];
	snprintf(keep, sizeof keep, "%s", mid);
	fake_fail_next_push(F, status, code, -1);
	sync_ok();
	CU_ASSERT_EQUAL(fake_push_count(F), 2);
	size_t l0, l1;
	const char *b0 = fake_push_body(F, 0, &l0), *b1 = fake_push_body(F, 1, &l1);
	CU_ASSERT(l0 == l1 && memcmp(b0, b1, l0) == 0);
	CU_ASSERT_EQUAL(state(keep), SY_INTENT_APPLIED);
	sy_client_status s;
	OK(sy_client_status_get(C, &s, &E));
	CU_ASSERT_FALSE(s.frozen);
	stop();
}

static void test_gateway_error_retried(void)
{
	gateway_error_retried(502, "bad_gateway");
}

/* A 408 (the body did not reach the responder in time, nothing ran) is retried too. */
static void test_request_timeout_retried(void)
{
	gateway_error_retried(408, "temporary_unavailable");
}

static void test_lost_response_replay(void)
{
	/* Run with the response dropped after the server committed, and without. */
	char rows[2][2048];
	size_t exec[2];
	for (int run = 0; run < 2; run++) {
		start();
		w('i', "\"a\"", "{\"title\":\"one\"}");
		w('i', "\"b\"", "{\"title\":\"two\"}");
		if (run == 0)
			fake_drop_next_push(F);
		sync_ok();
		if (run == 0) {
			CU_ASSERT_EQUAL(fake_push_count(F), 2);
			size_t l0, l1;
			const char *b0 = fake_push_body(F, 0, &l0), *b1 = fake_push_body(F, 1, &l1);
			CU_ASSERT(l0 == l1 && memcmp(b0, b1, l0) == 0);
		}
		char *ra = NULL, *rb = NULL;
		sy_client_row_state sa, sb;
		OK(sy_client_get(C, "todo", "\"a\"", &ra, &sa, &E));
		OK(sy_client_get(C, "todo", "\"b\"", &rb, &sb, &E));
		snprintf(rows[run], sizeof rows[run], "%s|%d|%s|%d|%s|%s", ra, sa, rb, sb,
		         fake_row_version(F, "todo", "\"a\""),
		         fake_row_version(F, "todo", "\"b\""));
		sy_free(ra);
		sy_free(rb);
		sy_client_status s;
		OK(sy_client_status_get(C, &s, &E));
		CU_ASSERT_EQUAL(s.counts[SY_INTENT_APPLIED], 2);
		exec[run] = fake_executions(F);
		stop();
	}
	CU_ASSERT_STRING_EQUAL(rows[0], rows[1]);
	CU_ASSERT_EQUAL(exec[0], 2);
	CU_ASSERT_EQUAL(exec[1], 2);
}

static void test_response_validated(void)
{
	start();
	const char *mid = w('i', "\"a\"", "{\"title\":\"one\"}");
	fake_corrupt_next_push(F);
	sync_ok();
	/* The corrupted 200 was refused; the same bytes went again; replay applied. */
	CU_ASSERT_EQUAL(fake_push_count(F), 2);
	CU_ASSERT_EQUAL(fake_executions(F), 1);
	CU_ASSERT_EQUAL(state(mid), SY_INTENT_APPLIED);
	sy_client_intent *i = intent(mid);
	sy_client_batch *b = NULL;
	OK(sy_client_batch_get(C, i->batch_id, &b, &E));
	CU_ASSERT_EQUAL(b->attempt_count, 2);
	sy_client_batch_free(b);
	sy_client_intent_free(i);
	stop();
}

/* --- normalization ---------------------------------------------------------------------- */

static void test_normalize_pure(void)
{
	sy_cl_norm n;
	sy_cl_chain_item iuu[] = {
	        {SY_OP_INSERT, false}, {SY_OP_UPDATE, false}, {SY_OP_UPDATE, false}};
	sy_cl_normalize(iuu, 3, &n);
	CU_ASSERT(n.kind == SY_CL_NORM_MERGED && n.consumed == 3 && n.op == SY_OP_INSERT);
	sy_cl_chain_item iud[] = {{SY_OP_INSERT, false},
	                          {SY_OP_UPDATE, false},
	                          {SY_OP_DELETE, false},
	                          {SY_OP_INSERT, false}};
	sy_cl_normalize(iud, 4, &n);
	CU_ASSERT(n.kind == SY_CL_NORM_CANCELLED && n.consumed == 3);
	sy_cl_chain_item uu[] = {{SY_OP_UPDATE, true}, {SY_OP_UPDATE, false}};
	sy_cl_normalize(uu, 2, &n);
	CU_ASSERT(n.kind == SY_CL_NORM_MERGED && n.consumed == 2 && n.op == SY_OP_UPDATE);
	sy_cl_chain_item ud[] = {
	        {SY_OP_UPDATE, true}, {SY_OP_UPDATE, false}, {SY_OP_DELETE, false}};
	sy_cl_normalize(ud, 3, &n);
	CU_ASSERT(n.kind == SY_CL_NORM_MERGED && n.consumed == 3 && n.op == SY_OP_DELETE);
	/* delete then update: never normalized (no resurrection) */
	sy_cl_chain_item du[] = {{SY_OP_DELETE, true}, {SY_OP_UPDATE, false}};
	sy_cl_normalize(du, 2, &n);
	CU_ASSERT(n.kind == SY_CL_NORM_SINGLE && n.consumed == 1 && n.op == SY_OP_DELETE);
	sy_cl_chain_item di[] = {{SY_OP_DELETE, true}, {SY_OP_INSERT, false}};
	sy_cl_normalize(di, 2, &n);
	CU_ASSERT(n.kind == SY_CL_NORM_SINGLE && n.consumed == 1);
	sy_cl_chain_item one[] = {{SY_OP_UPDATE, true}};
	sy_cl_normalize(one, 1, &n);
	CU_ASSERT(n.kind == SY_CL_NORM_SINGLE && n.consumed == 1 && n.op == SY_OP_UPDATE);
	const char *cols[] = {"{\"a\":1,\"b\":2}", NULL, "{\"b\":3,\"c\":4}"};
	char *m = sy_cl_merge_columns(cols, 3, &E);
	CU_ASSERT_STRING_EQUAL(m, "{\"a\":1,\"b\":3,\"c\":4}");
	sy_free(m);
}

static void test_normalize_insert_updates(void)
{
	start();
	const char *i1 = w('i', "\"a\"", "{\"title\":\"one\"}");
	char a[3][SY_UUID_LEN + 1];
	snprintf(a[0], sizeof a[0], "%s", i1);
	snprintf(a[1], sizeof a[1], "%s", w('u', "\"a\"", "{\"done\":true}"));
	snprintf(a[2], sizeof a[2], "%s", w('u', "\"a\"", "{\"title\":\"two\"}"));
	sync_ok();
	CU_ASSERT_EQUAL_FATAL(fake_push_count(F), 1);
	CU_ASSERT(push_has(0, "\"columns\":{\"done\":true,\"title\":\"two\"}"));
	CU_ASSERT(push_has(0, "\"operation\":\"insert\""));
	CU_ASSERT(!push_has(0, a[0]) && !push_has(0, a[1]) && !push_has(0, a[2]));
	sy_client_intent *x = intent(a[0]);
	CU_ASSERT_EQUAL(x->state, SY_INTENT_SUPERSEDED);
	CU_ASSERT_FATAL(x->link != NULL);
	CU_ASSERT(push_has(0, x->link));
	CU_ASSERT_EQUAL(state(x->link), SY_INTENT_APPLIED);
	CU_ASSERT_EQUAL(state(a[2]), SY_INTENT_SUPERSEDED);
	sy_client_intent_free(x);
	char *row = NULL;
	sy_client_row_state rs;
	OK(sy_client_get(C, "todo", "\"a\"", &row, &rs, &E));
	CU_ASSERT_STRING_EQUAL(row, "{\"done\":true,\"id\":\"a\",\"note\":null,\"title\":\"two\"}");
	CU_ASSERT_EQUAL(rs, SY_ROW_SYNCED);
	sy_free(row);
	stop();
}

static void test_normalize_insert_delete(void)
{
	start();
	char a[2][SY_UUID_LEN + 1];
	snprintf(a[0], sizeof a[0], "%s", w('i', "\"a\"", "{\"title\":\"one\"}"));
	snprintf(a[1], sizeof a[1], "%s", w('d', "\"a\"", NULL));
	sync_ok();
	CU_ASSERT_EQUAL(fake_push_count(F), 0);
	CU_ASSERT_EQUAL(state(a[0]), SY_INTENT_CANCELLED);
	CU_ASSERT_EQUAL(state(a[1]), SY_INTENT_CANCELLED);
	char *text = NULL;
	OK(sy_client_explain(C, a[0], &text, &E));
	CU_ASSERT(strstr(text, "no server effect") != NULL);
	sy_free(text);
	stop();
}

static void test_normalize_updates_and_delete(void)
{
	start();
	w('i', "\"b\"", "{\"title\":\"one\"}");
	w('i', "\"c\"", "{\"title\":\"one\"}");
	sync_ok();
	char vb[64], vc[64], base[96];
	snprintf(vb, sizeof vb, "%s", fake_row_version(F, "todo", "\"b\""));
	snprintf(vc, sizeof vc, "%s", fake_row_version(F, "todo", "\"c\""));
	w('u', "\"b\"", "{\"title\":\"two\"}");
	w('u', "\"b\"", "{\"done\":true}");
	w('u', "\"c\"", "{\"title\":\"two\"}");
	w('d', "\"c\"", NULL);
	sync_ok();
	CU_ASSERT_EQUAL_FATAL(fake_push_count(F), 2);
	snprintf(base, sizeof base, "\"base_version\":\"%s\"", vb);
	CU_ASSERT(push_has(1, base));
	CU_ASSERT(push_has(1, "\"columns\":{\"done\":true,\"title\":\"two\"}"));
	snprintf(base, sizeof base, "\"base_version\":\"%s\"", vc);
	CU_ASSERT(push_has(1, base));
	CU_ASSERT(push_has(1, "\"operation\":\"delete\""));
	CU_ASSERT(fake_row(F, "todo", "\"c\"") == NULL);
	char *row = NULL;
	CU_ASSERT_EQUAL(sy_client_get(C, "todo", "\"c\"", &row, NULL, &E), SY_CLIENT_OK);
	CU_ASSERT_PTR_NULL(row);
	stop();
}

/* --- dependents and bases ----------------------------------------------------------------- */

static void test_base_refreshed_from_accepted_predecessor(void)
{
	start();
	w('i', "\"a\"", "{\"title\":\"one\"}");
	sync_ok();
	w('u', "\"a\"", "{\"title\":\"two\"}");
	fake_hold(F, true);
	step_until_inflight();
	char u2[SY_UUID_LEN + 1];
	snprintf(u2, sizeof u2, "%s", w('u', "\"a\"", "{\"done\":true}"));
	sy_client_intent *i = intent(u2);
	CU_ASSERT_EQUAL(i->state, SY_INTENT_WAITING);
	CU_ASSERT_PTR_NULL(i->base_version);
	CU_ASSERT_PTR_NOT_NULL(i->link); /* the sealed predecessor it waits for */
	sy_client_intent_free(i);
	fake_hold(F, false);
	step_until_settled();
	i = intent(u2);
	CU_ASSERT_EQUAL(i->state, SY_INTENT_PENDING);
	CU_ASSERT_FATAL(i->base_version != NULL);
	CU_ASSERT_STRING_EQUAL(i->base_version, fake_row_version(F, "todo", "\"a\""));
	sy_client_intent_free(i);
	sync_ok();
	CU_ASSERT_EQUAL(state(u2), SY_INTENT_APPLIED);
	CU_ASSERT_STRING_EQUAL(fake_row(F, "todo", "\"a\""),
	                       "{\"done\":true,\"note\":null,\"title\":\"two\"}");
	stop();
}

static void test_conflict_blocks_dependent(void)
{
	start();
	w('i', "\"a\"", "{\"title\":\"one\"}");
	sync_ok();
	char old[64];
	snprintf(old, sizeof old, "%s", fake_row_version(F, "todo", "\"a\""));
	fake_direct_write(F, "todo", "\"a\"",
	                  "{\"done\":false,\"note\":null,\"title\":\"theirs\"}");
	char u1[SY_UUID_LEN + 1], u2[SY_UUID_LEN + 1];
	snprintf(u1, sizeof u1, "%s", w('u', "\"a\"", "{\"title\":\"mine\"}"));
	fake_hold(F, true);
	step_until_inflight();
	snprintf(u2, sizeof u2, "%s", w('u', "\"a\"", "{\"done\":true}"));
	fake_hold(F, false);
	sync_ok();
	sy_client_intent *i = intent(u1);
	CU_ASSERT_EQUAL(i->state, SY_INTENT_CONFLICT);
	CU_ASSERT_STRING_EQUAL(i->code, "version_conflict");
	CU_ASSERT_STRING_EQUAL(i->base_version, old); /* never refreshed by the pull */
	sy_client_intent_free(i);
	i = intent(u2);
	CU_ASSERT_EQUAL(i->state, SY_INTENT_BLOCKED_BY_PREDECESSOR);
	CU_ASSERT_STRING_EQUAL(i->link, u1);
	sy_client_intent_free(i);
	for (size_t k = 0; k < fake_push_count(F); k++)
		CU_ASSERT(!push_has(k, u2));
	/* The row shows the server's row, marked. */
	char *row = NULL;
	sy_client_row_state rs;
	OK(sy_client_get(C, "todo", "\"a\"", &row, &rs, &E));
	CU_ASSERT(strstr(row, "theirs") != NULL);
	CU_ASSERT_EQUAL(rs, SY_ROW_CONFLICT);
	sy_free(row);
	/* A rebuild keeps every unsettled intent. */
	fake_require_rebuild(F);
	fake_direct_write(F, "todo", "\"z\"", "{\"done\":false,\"note\":null,\"title\":\"z\"}");
	sync_ok();
	CU_ASSERT_EQUAL(state(u1), SY_INTENT_CONFLICT);
	CU_ASSERT_EQUAL(state(u2), SY_INTENT_BLOCKED_BY_PREDECESSOR);
	CU_ASSERT_EQUAL(fake_requests(F, "/v3/rebuild"), 2);
	/* Resolution: rebase u1 (new id), discard u2. */
	char nid[SY_UUID_LEN + 1];
	OK(sy_client_rebase(C, u1, NULL, nid, &E));
	CU_ASSERT_STRING_NOT_EQUAL(nid, u1);
	OK(sy_client_discard(C, u2, &E));
	sync_ok();
	CU_ASSERT_EQUAL(state(nid), SY_INTENT_APPLIED);
	i = intent(u1);
	CU_ASSERT_EQUAL(i->state, SY_INTENT_RESOLVED);
	CU_ASSERT_STRING_EQUAL(i->link, nid);
	sy_client_intent_free(i);
	CU_ASSERT(strstr(fake_row(F, "todo", "\"a\""), "mine") != NULL);
	OK(sy_client_verify(C, NULL, &E));
	stop();
}

static void test_push_limit_blocks_locally(void)
{
	start();
	size_t n = 70000;
	char *big = malloc(n + 32);
	snprintf(big, 16, "{\"title\":\"");
	memset(big + 10, 'x', n);
	snprintf(big + 10 + n, 8, "\"}");
	const char *mid = w('i', "\"big\"", big);
	char keep[SY_UUID_LEN + 1];
	snprintf(keep, sizeof keep, "%s", mid);
	w('i', "\"small\"", "{\"title\":\"s\"}");
	sync_ok();
	CU_ASSERT_EQUAL(state(keep), SY_INTENT_BLOCKED_LIMIT);
	CU_ASSERT_EQUAL(fake_push_count(F), 1);
	CU_ASSERT(!push_has(0, keep));
	CU_ASSERT(fake_row(F, "todo", "\"small\"") != NULL);
	sync_ok(); /* never a 400 loop: nothing more is sent */
	CU_ASSERT_EQUAL(fake_push_count(F), 1);
	char *text = NULL;
	OK(sy_client_explain(C, keep, &text, &E));
	CU_ASSERT(strstr(text, "never sent") != NULL);
	sy_free(text);
	free(big);
	stop();
}

/* --- request-level errors -------------------------------------------------------------------- */

static void test_generation_expired_successor(void)
{
	start();
	char m[SY_UUID_LEN + 1];
	snprintf(m, sizeof m, "%s", w('i', "\"a\"", "{\"title\":\"one\"}"));
	fake_bump_generation(F);
	sync_ok();
	CU_ASSERT_EQUAL_FATAL(fake_push_count(F), 2);
	CU_ASSERT_EQUAL(fake_requests(F, "/v3/connect"), 2);
	char *b1 = batch_of(m);
	sy_client_batch *nb = NULL, *ob = NULL;
	OK(sy_client_batch_get(C, b1, &nb, &E));
	CU_ASSERT_STRING_EQUAL(nb->state, "completed");
	CU_ASSERT(push_has(1, b1) && !push_has(0, b1));
	CU_ASSERT(push_has(0, m) && push_has(1, m)); /* the mutation keeps its id */
	/* The old batch: kept, never sent again, linked to its successor. */
	const char *p0 = fake_push_body(F, 0, NULL);
	char old[SY_UUID_LEN + 1];
	snprintf(old, sizeof old, "%.36s", strstr(p0, "\"batch_id\":\"") + 12);
	OK(sy_client_batch_get(C, old, &ob, &E));
	CU_ASSERT_STRING_EQUAL(ob->state, "superseded");
	CU_ASSERT_STRING_EQUAL(ob->successor, b1);
	CU_ASSERT_EQUAL(ob->attempt_count, 1);
	CU_ASSERT_EQUAL(ob->attempts[0].status, 409);
	CU_ASSERT(nb->generation == ob->generation + 2);
	/* unchanged mutation objects: the "mutations" arrays are byte-identical */
	CU_ASSERT_STRING_EQUAL(strstr(ob->body, "\"mutations\""),
	                       strstr(nb->body, "\"mutations\""));
	sy_client_batch_free(nb);
	sy_client_batch_free(ob);
	sy_free(b1);
	CU_ASSERT_EQUAL(state(m), SY_INTENT_APPLIED);
	stop();
}

static void test_schema_mismatch_and_incompatible(void)
{
	start();
	char g[SY_UUID_LEN + 1], h[SY_UUID_LEN + 1];
	snprintf(g, sizeof g, "%s", w('i', "\"g\"", "{\"note\":\"kept\",\"title\":\"g\"}"));
	snprintf(h, sizeof h, "%s", w('i', "\"h\"", "{\"title\":\"h\"}"));
	fake_publish_v2(F);
	sync_ok();
	CU_ASSERT_EQUAL_FATAL(fake_push_count(F), 2);
	CU_ASSERT_EQUAL(fake_requests(F, "/v3/schema"), 2);
	CU_ASSERT(push_has(1, "\"schema\":{\"hash\""));
	sy_client_intent *i = intent(g);
	CU_ASSERT_EQUAL(i->state, SY_INTENT_SCHEMA_INCOMPATIBLE);
	CU_ASSERT_STRING_EQUAL(i->columns_json, "{\"note\":\"kept\",\"title\":\"g\"}");
	CU_ASSERT_EQUAL(i->schema_version, 1);
	CU_ASSERT(strstr(i->outcome_json, "incompatible_field_ids") != NULL);
	sy_client_intent_free(i);
	CU_ASSERT_EQUAL(state(h), SY_INTENT_APPLIED);
	sync_ok(); /* out of automatic retry */
	CU_ASSERT_EQUAL(fake_push_count(F), 2);
	char nid[SY_UUID_LEN + 1];
	CU_ASSERT_EQUAL(sy_client_remap(C, g, "{\"note\":\"x\",\"title\":\"g\"}", nid, &E),
	                SY_CLIENT_EINVAL);
	OK(sy_client_remap(C, g, "{\"title\":\"g\"}", nid, &E));
	sync_ok();
	CU_ASSERT_EQUAL(state(nid), SY_INTENT_APPLIED);
	CU_ASSERT_EQUAL(state(g), SY_INTENT_RESOLVED);
	stop();
}

/* A truncated pull answer: the error in status and nothing applied; the retry that gets
 * past it completes the sync and clears the error (as a push's does). */
static void test_broken_pull_error_cleared(void)
{
	start();
	sync_ok();
	fake_direct_write(F, "todo", "\"p\"",
	                  "{\"done\":false,\"note\":null,\"title\":\"theirs\"}");
	fake_garble_next_pull(F);
	sy_client_error e2 = {0};
	CU_ASSERT_EQUAL(sy_client_sync(C, 200, &e2), SY_CLIENT_ETIMEOUT);
	sy_client_status s;
	OK(sy_client_status_get(C, &s, &E));
	CU_ASSERT_STRING_EQUAL(s.last_error, "invalid_response");
	CU_ASSERT_TRUE(s.last_error_retryable);
	char *row = NULL;
	CU_ASSERT_EQUAL(sy_client_get(C, "todo", "\"p\"", &row, NULL, &E), SY_CLIENT_ENOTFOUND);
	sync_ok();
	OK(sy_client_status_get(C, &s, &E));
	CU_ASSERT_EQUAL(s.phase, SY_PHASE_IDLE);
	CU_ASSERT_STRING_EQUAL(s.last_error, "");
	OK(sy_client_get(C, "todo", "\"p\"", &row, NULL, &E));
	CU_ASSERT(strstr(row, "theirs") != NULL);
	sy_free(row);
	stop();
}

static void test_idempotency_conflict_freezes(void)
{
	start();
	char m[SY_UUID_LEN + 1];
	snprintf(m, sizeof m, "%s", w('i', "\"a\"", "{\"title\":\"one\"}"));
	fake_fail_next_push(F, 409, "idempotency_conflict", -1);
	CU_ASSERT_EQUAL(sy_client_sync(C, 60000, &E), SY_CLIENT_EFROZEN);
	w('i', "\"b\"", "{\"title\":\"two\"}"); /* writing still works */
	reopen();
	CU_ASSERT_EQUAL(sy_client_sync(C, 60000, &E), SY_CLIENT_EFROZEN);
	CU_ASSERT_EQUAL(fake_push_count(F), 1);
	sy_client_status s;
	OK(sy_client_status_get(C, &s, &E));
	CU_ASSERT_TRUE(s.frozen);
	CU_ASSERT_STRING_EQUAL(s.last_error, "idempotency_conflict");
	CU_ASSERT_EQUAL(state(m), SY_INTENT_SEALED);
	stop();
}

static void test_retired_read_only(void)
{
	start();
	w('i', "\"a\"", "{\"title\":\"one\"}");
	fake_retire(F);
	CU_ASSERT_EQUAL(sy_client_sync(C, 60000, &E), SY_CLIENT_EREADONLY);
	reopen();
	sy_client_txn *t = NULL;
	CU_ASSERT_EQUAL(sy_client_begin(C, false, &t, &E), SY_CLIENT_EREADONLY);
	CU_ASSERT_PTR_NULL(t);
	sy_client_status s;
	OK(sy_client_status_get(C, &s, &E));
	CU_ASSERT_TRUE(s.retired);
	CU_ASSERT_EQUAL(s.phase, SY_PHASE_STOPPED);
	stop();
}

/* --- pull ------------------------------------------------------------------------------------- */

static void test_pull_pages_and_echo(void)
{
	start();
	w('i', "\"a\"", "{\"title\":\"one\"}");
	sync_ok();
	for (int k = 0; k < 5; k++) {
		char pk[16];
		snprintf(pk, sizeof pk, "\"r%d\"", k);
		fake_direct_write(F, "todo", pk, "{\"done\":true,\"note\":null,\"title\":\"r\"}");
	}
	sync_ok(); /* pages of two changes, each applied with its cursor */
	sy_client_status s;
	OK(sy_client_status_get(C, &s, &E));
	size_t total = 0;
	for (int k = 0; k < SY_INTENT__COUNT; k++)
		total += s.counts[k];
	CU_ASSERT_EQUAL(total, 1); /* the echo of the insert created nothing */
	CU_ASSERT_STRING_EQUAL(s.cursor, "c6");
	char *row = NULL;
	sy_client_row_state rs;
	OK(sy_client_get(C, "todo", "\"r4\"", &row, &rs, &E));
	CU_ASSERT_EQUAL(rs, SY_ROW_SYNCED);
	sy_free(row);
	OK(sy_client_verify(C, NULL, &E));
	stop();
}

static void test_atomic_group_fails(void)
{
	start();
	w('i', "\"n\"", "{\"title\":\"one\"}");
	sync_ok();
	fake_direct_write(F, "todo", "\"n\"",
	                  "{\"done\":false,\"note\":null,\"title\":\"theirs\"}");
	sy_client_txn *t;
	char o[SY_UUID_LEN + 1], u[SY_UUID_LEN + 1];
	OK(sy_client_begin(C, true, &t, &E));
	OK(sy_client_insert(t, "todo", "\"o\"", "{\"title\":\"new\"}", o, &E));
	OK(sy_client_update(t, "todo", "\"n\"", "{\"title\":\"mine\"}", u, &E));
	OK(sy_client_commit(t, &E));
	sync_ok();
	CU_ASSERT(push_has(1, "\"atomic\":true"));
	sy_client_intent *i = intent(o);
	CU_ASSERT_EQUAL(i->state, SY_INTENT_REJECTED);
	CU_ASSERT_STRING_EQUAL(i->code, "atomic_batch_rejected");
	sy_client_intent_free(i);
	CU_ASSERT_EQUAL(state(u), SY_INTENT_CONFLICT);
	CU_ASSERT_PTR_NULL(fake_row(F, "todo", "\"o\""));
	char *row = NULL;
	sy_client_row_state rs;
	OK(sy_client_get(C, "todo", "\"o\"", &row, &rs, &E));
	CU_ASSERT_PTR_NULL(row); /* a rejected insert does not overlay */
	CU_ASSERT_EQUAL(rs, SY_ROW_BLOCKED);
	stop();
}

static void test_verify_detects_tampering(void)
{
	start();
	w('i', "\"a\"", "{\"title\":\"one\"}");
	sync_ok();
	char *rep = NULL;
	OK(sy_client_verify(C, &rep, &E));
	sy_free(rep);
	sqlite3 *db;
	CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &db), SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_exec(db,
	                             "UPDATE rows SET row = '{\"done\":true,\"note\":null,"
	                             "\"title\":\"forged\"}'",
	                             NULL, NULL, NULL),
	                SQLITE_OK);
	/* the store's own triggers refuse to change a sealed batch or an intent */
	CU_ASSERT_NOT_EQUAL(sqlite3_exec(db, "UPDATE batches SET body = 'x'", NULL, NULL, NULL),
	                    SQLITE_OK);
	CU_ASSERT_NOT_EQUAL(sqlite3_exec(db, "UPDATE intents SET columns = '{}'", NULL, NULL, NULL),
	                    SQLITE_OK);
	CU_ASSERT_NOT_EQUAL(sqlite3_exec(db, "DELETE FROM intents", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	CU_ASSERT_EQUAL(sy_client_verify(C, &rep, &E), SY_CLIENT_EPROTOCOL);
	CU_ASSERT(rep != NULL && strstr(rep, "checksum") != NULL);
	sy_free(rep);
	stop();
}

/* A store of version 1 (each completed batch's response in the batch row too) upgraded to 2. */
static void test_store_upgrade_response_once(void)
{
	start();
	const char *mid = w('i', "\"a\"", "{\"title\":\"one\"}");
	char keep[SY_UUID_LEN + 1];
	snprintf(keep, sizeof keep, "%s", mid);
	sync_ok();
	sy_client_intent *i = intent(keep);
	char bid[SY_UUID_LEN + 1];
	snprintf(bid, sizeof bid, "%s", i->batch_id);
	sy_client_intent_free(i);
	sy_client_close(C);
	C = NULL;
	/* What version 1 kept: the column, filled with the completing response. */
	sqlite3 *db;
	CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &db), SQLITE_OK);
	CU_ASSERT_EQUAL_FATAL(sqlite3_exec(db,
	                                   "BEGIN; ALTER TABLE batches ADD COLUMN response BLOB;"
	                                   " UPDATE batches SET response = (SELECT response FROM"
	                                   " attempts a WHERE a.batch_id = batches.batch_id"
	                                   " AND a.status = 200);"
	                                   " PRAGMA user_version = 1; COMMIT",
	                                   NULL, NULL, NULL),
	                      SQLITE_OK);
	sqlite3_close(db);
	reopen();
	CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_stmt *st;
	CU_ASSERT_EQUAL_FATAL(
	        sqlite3_prepare_v2(db,
	                           "SELECT (SELECT user_version FROM"
	                           " pragma_user_version),"
	                           " (SELECT count(*) FROM pragma_table_info('batches')"
	                           " WHERE name = 'response'),"
	                           " (SELECT count(*) FROM batches)",
	                           -1, &st, NULL),
	        SQLITE_OK);
	CU_ASSERT_EQUAL_FATAL(sqlite3_step(st), SQLITE_ROW);
	CU_ASSERT_EQUAL(sqlite3_column_int(st, 0), 4); /* upgraded to the current version */
	CU_ASSERT_EQUAL(sqlite3_column_int(st, 1), 0);
	CU_ASSERT_EQUAL(sqlite3_column_int(st, 2), 1);
	sqlite3_finalize(st);
	/* the sealed batch is still immutable */
	CU_ASSERT_NOT_EQUAL(sqlite3_exec(db, "UPDATE batches SET body = 'x'", NULL, NULL, NULL),
	                    SQLITE_OK);
	sqlite3_close(db);
	/* the batch, its bytes and its attempt's response as before; syncing goes on */
	sy_client_batch *b = NULL;
	OK(sy_client_batch_get(C, bid, &b, &E));
	CU_ASSERT_STRING_EQUAL(b->state, "completed");
	CU_ASSERT_EQUAL_FATAL(b->attempt_count, 1);
	CU_ASSERT_EQUAL(b->attempts[0].status, 200);
	CU_ASSERT(b->attempts[0].response != NULL && strstr(b->attempts[0].response, keep) != NULL);
	size_t len;
	const char *sent = fake_push_body(F, 0, &len);
	CU_ASSERT(b->body_len == len && memcmp(b->body, sent, len) == 0);
	sy_client_batch_free(b);
	CU_ASSERT_EQUAL(state(keep), SY_INTENT_APPLIED);
	const char *m2 = w('u', "\"a\"", "{\"title\":\"two\"}");
	snprintf(keep, sizeof keep, "%s", m2);
	sync_ok();
	CU_ASSERT_EQUAL(state(keep), SY_INTENT_APPLIED);
	stop();
}

static void test_write_validation(void)
{
	start();
	sy_client_txn *t;
	char id[SY_UUID_LEN + 1];
	OK(sy_client_begin(C, false, &t, &E));
	CU_ASSERT_EQUAL(sy_client_insert(t, "nope", "\"a\"", "{}", id, &E), SY_CLIENT_EINVAL);
	CU_ASSERT_EQUAL(sy_client_insert(t, "todo", "1", "{}", id, &E), SY_CLIENT_EINVAL);
	CU_ASSERT_EQUAL(sy_client_insert(t, "todo", "\"a\"", "{\"zz\":1}", id, &E),
	                SY_CLIENT_EINVAL);
	CU_ASSERT_EQUAL(sy_client_insert(t, "todo", "\"a\"", "{\"done\":1}", id, &E),
	                SY_CLIENT_EINVAL);
	CU_ASSERT_EQUAL(sy_client_update(t, "todo", "\"a\"", "{\"done\":true}", id, &E),
	                SY_CLIENT_ENOTFOUND);
	OK(sy_client_insert(t, "todo", "\"a\"", "{\"title\":\"x\"}", id, &E));
	CU_ASSERT_EQUAL(sy_client_insert(t, "todo", "\"a\"", "{}", id, &E), SY_CLIENT_ESTATE);
	CU_ASSERT_EQUAL(sy_client_update(t, "todo", "\"a\"", "{}", id, &E), SY_CLIENT_EINVAL);
	sy_client_rollback(t);
	char *row = NULL;
	CU_ASSERT_EQUAL(sy_client_get(C, "todo", "\"a\"", &row, NULL, &E), SY_CLIENT_ENOTFOUND);
	stop();
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"identities persisted before transmission", test_identity_persisted_before_send},
	        {"429/503 retried after Retry-After with the same bytes",
	         test_retry_after_same_bytes},
	        {"the device's clock stepped back: a Retry-After stays seconds",
	         test_clock_step_back},
	        {"a gateway's 502 for a push: the same bytes again, not frozen",
	         test_gateway_error_retried},
	        {"a 408 for a push: the same bytes again, not frozen", test_request_timeout_retried},
	        {"lost response: exact replay, state as without the loss",
	         test_lost_response_replay},
	        {"every response validated before it is applied", test_response_validated},
	        {"normalization rules (pure)", test_normalize_pure},
	        {"insert + updates -> one insert", test_normalize_insert_updates},
	        {"insert + delete -> nothing sent", test_normalize_insert_delete},
	        {"updates -> one update; update + delete -> one delete",
	         test_normalize_updates_and_delete},
	        {"base refreshed only from an accepted predecessor",
	         test_base_refreshed_from_accepted_predecessor},
	        {"conflict blocks the dependent; rebuild keeps intents; resolution",
	         test_conflict_blocks_dependent},
	        {"push limits enforced at sealing", test_push_limit_blocks_locally},
	        {"409 client_generation_expired: successor batch",
	         test_generation_expired_successor},
	        {"422 schema_mismatch; schema_incompatible kept whole",
	         test_schema_mismatch_and_incompatible},
	        {"a broken pull answer: nothing applied; the error cleared once past it",
	         test_broken_pull_error_cleared},
	        {"idempotency_conflict freezes the queue", test_idempotency_conflict_freezes},
	        {"client_retired makes the store read-only", test_retired_read_only},
	        {"pull pages with their cursor; the echo creates nothing",
	         test_pull_pages_and_echo},
	        {"an atomic transaction that fails", test_atomic_group_fails},
	        {"verify and the store's immutability triggers", test_verify_detects_tampering},
	        {"writes checked against the schema", test_write_validation},
	        {"store upgrade 1 -> 2: a response kept once", test_store_upgrade_response_once},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("client", tests);
	return sy_test_run();
}
