/* SPDX-License-Identifier: BSD-2-Clause */
/* test_push.pgt: exact replay and batch idempotency, cross-batch mutation replay
 * (doc/contract.md#exact-replay), and atomic groups: deferred checks, success, conflicts, terminal
 * rejections. */
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
#include "synchro/request_digest.h"
#include "testutil.h"
#include "push_suite.h"
#include "push_request.h"

/* ---- replay and identity ---- */

/* An exact replay answers the stored status and bytes and does nothing else. */
void test_replay(void)
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

/* ---- exact replay of the same octets (migration 19) ---- */

/* The batch's stored request digest as hex, "null" when it has none. */
static void stored_digest(const char *batch, char out[80])
{
	const char *p[] = {batch};
	char *v = pgt_value(db,
	                    "SELECT coalesce(encode(request_digest, 'hex'), 'null')"
	                    "  FROM synchro.batches WHERE batch_id = $1",
	                    1, p);
	snprintf(out, 80, "%s", v ? v : "");
	free(v);
}

/* Sets a column of a complete batch row as only a damaged ledger could hold it (the
 * immutability trigger off for the change): which path answered a replay then shows. */
static void tamper(const char *batch, const char *assignment)
{
	char sql[512];
	snprintf(sql, sizeof sql,
	         "UPDATE synchro.batches SET %s WHERE batch_id = '%s'", assignment, batch);
	pgt_must(db, "BEGIN");
	pgt_must(db, "SET LOCAL session_replication_role = replica");
	pgt_must(db, sql);
	pgt_must(db, "COMMIT");
}

/* The same request with other octets: a space after the opening brace. */
static char *spaced(const char *json)
{
	size_t n = strlen(json);
	char *s = malloc(n + 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	s[0] = '{';
	s[1] = ' ';
	memcpy(s + 2, json + 1, n);
	return s;
}

static void expect_replay_of(const result *r, const result *first)
{
	expect_200(r);
	CU_ASSERT_TRUE(r->a.replay);
	CU_ASSERT(r->a.body.len == first->a.body.len &&
	          memcmp(r->a.body.data, first->a.body.data, first->a.body.len) == 0);
}

/*
 * A request of the same octets as a batch's first execution is answered from the batch row
 * by its request digest, before the request is parsed (push_replay.c); the same request in
 * other octets takes the parse. A fingerprint made wrong on purpose tells the two apart.
 * Neither depends on the generation or the schema; retirement and the client's owner still
 * come first; a batch without a digest (written before migration 19) takes the parse.
 */
void test_replay_octets(void)
{
	todo_id a;
	fresh_todo(&a);
	char batch[SY_UUID_LEN + 1], hex[80], want[SY_FP_HEX_LEN + 1];
	fresh(batch, 'b');
	rspec rs = {.batch = batch};
	mspec m = {.table = "todo", .pk = a.json, .op = "insert", .cols = "{\"title\":\"octets\"}"};
	char *json = build(&rs, &m, 1, NULL);
	char *other = spaced(json);
	result *first = push_as(ALICE, json);
	expect_200(first);
	CU_ASSERT_FALSE(first->a.replay);

	/* the digest of the exact octets and the user, stored with the batch */
	uint8_t d[SY_FP_DIGEST_LEN];
	sy_error e = {0};
	CU_ASSERT_TRUE_FATAL(sy_request_digest(ALICE, strlen(ALICE), json, strlen(json), d, &e));
	sy_fp_hex(d, want);
	stored_digest(batch, hex);
	CU_ASSERT_STRING_EQUAL(hex, want);
	long long batches = count("SELECT count(*) FROM synchro.batches");
	long long muts = count("SELECT count(*) FROM synchro.mutations");
	long long e0 = epoch(CA1);

	result *r = push_as(ALICE, json);
	expect_replay_of(r, first);
	result_free(r);
	r = push_as(ALICE, other);
	expect_replay_of(r, first);
	result_free(r);

	/* another fingerprint in the row: the same octets are still answered (the digest), the
	 * parsed request is not (its fingerprint differs) */
	const char *pb[] = {batch};
	char *fp = pgt_value(db,
	                     "SELECT encode(fingerprint, 'hex') FROM synchro.batches"
	                     " WHERE batch_id = $1",
	                     1, pb);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
	tamper(batch, "fingerprint = sha256(fingerprint)");
	r = push_as(ALICE, json);
	expect_replay_of(r, first);
	result_free(r);
	r = push_as(ALICE, other);
	expect_error(r, SY_ERR_IDEMPOTENCY_CONFLICT);
	result_free(r);

	/* a batch without a digest (as before migration 19), or with one of another length, is
	 * replayed through the parse, which finds the other fingerprint */
	tamper(batch, "request_digest = NULL");
	r = push_as(ALICE, json);
	expect_error(r, SY_ERR_IDEMPOTENCY_CONFLICT);
	result_free(r);
	tamper(batch, "request_digest = '\\x00'");
	r = push_as(ALICE, json);
	expect_error(r, SY_ERR_IDEMPOTENCY_CONFLICT);
	result_free(r);
	char restore[256];
	snprintf(restore, sizeof restore,
	         "fingerprint = decode('%s', 'hex'), request_digest = decode('%s', 'hex')", fp,
	         want);
	tamper(batch, restore);
	free(fp);

	/* neither path depends on the generation */
	pgt_exec(db, "UPDATE synchro.clients SET generation = generation + 1"
	             " WHERE client_id = '" CA1 "'");
	r = push_as(ALICE, json);
	expect_replay_of(r, first);
	result_free(r);
	r = push_as(ALICE, other);
	expect_replay_of(r, first);
	result_free(r);

	/* another user's identical octets never see the stored response */
	r = push_as(BOB, json);
	expect_error(r, SY_ERR_AUTH_REQUIRED);
	result_free(r);
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM synchro.batches"), batches);
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM synchro.mutations"), muts);
	CU_ASSERT_EQUAL(epoch(CA1), e0);

	/* retirement precedes replay, whichever path: 409 client_retired */
	const char *cr = "c0000000-0000-4000-8000-0000000000c2";
	const char *pc[] = {cr};
	add_client(cr);
	todo_id t;
	fresh_todo(&t);
	mspec mr = {.table = "todo", .pk = t.json, .op = "insert", .cols = "{\"title\":\"r\"}"};
	rspec rc = {.client = cr};
	char *jr = build(&rc, &mr, 1, NULL);
	char *or = spaced(jr);
	result *fr = push_as(ALICE, jr);
	expect_200(fr);
	r = push_as(ALICE, jr);
	expect_replay_of(r, fr);
	result_free(r);
	PQclear(pgt_query(db,
	                  "INSERT INTO synchro.retirements (client_id, user_id, retirement_id)"
	                  " VALUES ($1, 'alice', gen_random_uuid())",
	                  1, pc));
	r = push_as(ALICE, jr);
	expect_error(r, SY_ERR_CLIENT_RETIRED);
	result_free(r);
	r = push_as(ALICE, or);
	expect_error(r, SY_ERR_CLIENT_RETIRED);
	result_free(r);

	result_free(fr);
	free(jr);
	free(or);
	result_free(first);
	free(other);
	free(json);
}

/* A body whose ids cannot be peeked (a member name written with an escape) executes and
 * replays through the parse; its digest is stored all the same. */
void test_replay_unpeeked(void)
{
	todo_id a;
	fresh_todo(&a);
	char batch[SY_UUID_LEN + 1], hex[80];
	fresh(batch, 'b');
	rspec rs = {.batch = batch};
	mspec m = {.table = "todo", .pk = a.json, .op = "insert", .cols = "{\"title\":\"esc\"}"};
	char *json = build(&rs, &m, 1, NULL);
	char *at = strstr(json, "\"client_id\"");
	CU_ASSERT_PTR_NOT_NULL_FATAL(at);
	size_t n = strlen(json);
	char *esc = malloc(n + 6);
	CU_ASSERT_PTR_NOT_NULL_FATAL(esc);
	/* "client_id" -> "client\u005fid" */
	size_t head = (size_t)(at - json) + 7;
	memcpy(esc, json, head);
	memcpy(esc + head, "\\u005f", 6);
	memcpy(esc + head + 6, json + head + 1, n - head);
	char c[SY_UUID_LEN + 1], b[SY_UUID_LEN + 1];
	CU_ASSERT_FALSE(sy_request_peek_ids(esc, strlen(esc), c, b));
	result *first = push_as(ALICE, esc);
	expect_200(first);
	CU_ASSERT_FALSE(first->a.replay);
	stored_digest(batch, hex);
	CU_ASSERT_EQUAL(strlen(hex), SY_FP_HEX_LEN);
	result *r = push_as(ALICE, esc);
	expect_replay_of(r, first);
	result_free(r);
	r = push_as(ALICE, json);
	expect_replay_of(r, first);
	result_free(r);
	result_free(first);
	free(esc);
	free(json);
}

/* A ledgered mutation moved into a new batch contributes its stored outcome. */
void test_cross_batch(void)
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

void test_atomic_success(void)
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
void test_insert_run_refusals(void)
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
void test_insert_run_statements(void)
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
void test_insert_run_tables(void)
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
void test_nonatomic_deferred(void)
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
void test_atomic_conflict(void)
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
