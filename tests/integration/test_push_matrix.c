/* SPDX-License-Identifier: BSD-2-Clause */
/* test_push.pgt: the matrix (doc/contract.md#operation-and-row-state-matrix) on todo (hard delete,
 * owner policy) and item (soft delete), one batch in request order, consecutive inserts, every
 * portable type. */
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

/* ---- the matrix ---- */

/* todo (hard delete, owner policy): every cell, each in a batch of its own. */
void test_matrix_todo(void)
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
void test_matrix_item(void)
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
void test_sequential_batch(void)
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
void test_insert_run(void)
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
void test_types(void)
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
