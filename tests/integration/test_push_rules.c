/* SPDX-License-Identifier: BSD-2-Clause */
/* test_push.pgt: the terminal rules (policy, validation, table_not_synced), the accepted write
 * epoch, the gates and their order (doc/contract.md#dispatch-order), statements the session lost.
 * */
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

/* ---- terminal rules ---- */

/* bob meets alice's todo as a missing row (doc/contract.md#policies): an update or delete is
 * row_not_found, an insert over her key policy_rejected, an invalid update validation_failed,
 * and nothing of her row shows. */
void test_policy(void)
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
	        /* the owner field is not writable: refused as on a missing row */
	        {.table = "todo",
	         .pk = a.json,
	         .op = "update",
	         .base = "x",
	         .cols = "{\"owner\":\"bob\"}"},
	};
	static const char *const want[4][2] = {{"conflict", "row_not_found"},
	                                       {"conflict", "row_not_found"},
	                                       {"rejected_terminal", "policy_rejected"},
	                                       {"rejected_terminal", "validation_failed"}};
	for (int i = 0; i < 4; i++) {
		r = run(BOB, &bob, &ms[i], 1, ids);
		expect_200(r);
		check(r, ids[0], want[i][0], want[i][1], false, false);
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

void test_validation(void)
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

void test_table_not_synced(void)
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
void test_epoch(void)
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

void test_gates(void)
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
	add_client(cr);
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
void test_lost_statements(void)
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
