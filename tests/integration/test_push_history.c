/* SPDX-License-Identifier: BSD-2-Clause */
/* test_push.pgt: schema history (last: publishing cannot go back to an earlier manifest):
 * retained intent of an earlier schema is schema_incompatible. */
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

void test_schema_history(void)
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
	/* the same request in other octets (the parse, not the request digest) replays too */
	char *spaced_v1 = malloc(strlen(json_v1) + 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(spaced_v1);
	sprintf(spaced_v1, "{ %s", json_v1 + 1);
	again = push_as(ALICE, spaced_v1);
	expect_200(again);
	CU_ASSERT_TRUE(again->a.replay);
	CU_ASSERT(again->a.body.len == first->a.body.len &&
	          memcmp(again->a.body.data, first->a.body.data, first->a.body.len) == 0);
	result_free(again);
	free(spaced_v1);
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
	static const char members[] = "\"policy\": {\"owner_field\": \"owner\", \"read\": \"members\"";
	static const char v4policy[] =
	        "\"policy\": {\"owner_field\": \"owner\", \"read\": \"owner\", \"write\": \"all\"}";
	char *w = strstr(v3text, members);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	char *w_end = strstr(w, "}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(w_end);
	w_end += 2;
	size_t head = (size_t)(w - v3text), tail = strlen(w_end);
	char *v4text = malloc(head + sizeof v4policy + tail);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v4text);
	memcpy(v4text, v3text, head);
	memcpy(v4text + head, v4policy, sizeof v4policy - 1);
	memcpy(v4text + head + sizeof v4policy - 1, w_end, tail + 1);
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
	/* read owner: her row is outside bob's scope, answered as a missing row */
	check(r, ids[0], "conflict", "row_not_found", false, false);
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
