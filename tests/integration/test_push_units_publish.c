/* SPDX-License-Identifier: BSD-2-Clause */
/* test_push_units.pgt: the schema publish refuses tables whose pk it cannot fence, and
 * (last: it scans everything before) nothing caught reaches the server log. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
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
#include "push_units_suite.h"
#include "push_request.h"

/* ---- 11. schema publish ---- */

static sy_store_status try_publish(const char *text, sy_schema_ref *out, sy_error *e)
{
	sy_manifest *m = sy_manifest_parse(text, strlen(text), e);
	CU_ASSERT_PTR_NOT_NULL(m);
	if (m == NULL) {
		fprintf(stderr, "manifest: %s\n", e->message);
		return SY_STORE_INVALID;
	}
	sy_store_published pub;
	sy_store_status st = sy_store_schema_publish(db, m, NULL, NULL, &pub, e);
	sy_manifest_free(m);
	if (st == SY_STORE_OK && out != NULL) {
		out->version = (uint64_t)pub.version;
		snprintf(out->hash, sizeof out->hash, "%s", pub.hash);
	}
	return st;
}

/* text with the first occurrence of from (after the anchor) replaced by to. */
static char *replaced(const char *text, const char *anchor, const char *from, const char *to)
{
	const char *a = strstr(text, anchor);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	const char *at = strstr(a, from);
	CU_ASSERT_PTR_NOT_NULL_FATAL(at);
	size_t len = strlen(text) - strlen(from) + strlen(to) + 1;
	char *out = malloc(len);
	snprintf(out, len, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
	return out;
}

static void expect_refused(const char *text, const char *table)
{
	long long versions = count("SELECT count(*) FROM synchro.schema_versions");
	sy_error e = {0};
	sy_store_status st = try_publish(text, NULL, &e);
	CU_ASSERT_EQUAL(st, SY_STORE_CONFLICT);
	char name[64];
	snprintf(name, sizeof name, "table \"%s\"", table);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.message, name));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.message, "primary key"));
	if (st != SY_STORE_CONFLICT || strstr(e.message, name) == NULL)
		fprintf(stderr, "publish: status %d: %s\n", (int)st, e.message);
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM synchro.schema_versions"), versions);
}

void test_publish_pk(void)
{
	/* a committed batch (an applied insert and a conflict) to replay after the publishes */
	ukey k, live;
	char v[160], ids[2][SY_UUID_LEN + 1];
	fresh_key(&k, "ren");
	fresh_key(&live, "who");
	make_row("u_who", &live, "{\"val\":\"l\"}", v);
	mspec ms[2] = {
	        {.table = "u_ren", .pk = k.json, .op = "insert", .cols = "{\"val\":\"r\"}"},
	        {.table = "u_who", .pk = live.json, .op = "insert", .cols = "{\"val\":\"x\"}"},
	};
	char *json = build(NULL, ms, 2, ids);
	result *first = push_on(app, json);
	expect_200(first);
	CU_ASSERT_FALSE(first->raw.replay);
	check(first, ids[0], "applied", NULL, true, true);
	check(first, ids[1], "conflict", "row_already_exists", true, true);

	/* the pk's field_id of a published table */
	char *t = replaced(manifest_text, "\"table_id\": \"u_who\"", "\"field_id\": \"id\"",
	                   "\"field_id\": \"key\"");
	expect_refused(t, "u_who");
	free(t);
	/* its type (the column changed to match, so only the history refuses) */
	pgt_exec(db, "ALTER TABLE u_ty ALTER COLUMN id TYPE bigint");
	t = replaced(manifest_text, "\"table_id\": \"u_ty\"", "\"type\": \"int32\"",
	             "\"type\": \"int64\"");
	expect_refused(t, "u_ty");
	free(t);
	pgt_exec(db, "ALTER TABLE u_ty ALTER COLUMN id TYPE integer");

	/* a table that left the manifest keeps its pk when it returns */
	char *without = strdup(manifest_text);
	char *at = strstr(without, table_ren);
	CU_ASSERT_PTR_NOT_NULL_FATAL(at);
	/* remove ",\n" + the u_ren entry */
	memmove(at - 2, at + strlen(table_ren), strlen(at + strlen(table_ren)) + 1);
	sy_schema_ref next;
	sy_error e = {0};
	CU_ASSERT_EQUAL_FATAL(try_publish(without, &next, &e), SY_STORE_OK);
	CU_ASSERT(next.version > cur.version);
	cur = next;
	t = replaced(manifest_text, "\"table_id\": \"u_ren\"", "\"field_id\": \"id\"",
	             "\"field_id\": \"key\"");
	expect_refused(t, "u_ren");
	free(t);
	free(without);

	/* the batch committed under the first schema replays exactly */
	result *again = push_on(app, json);
	expect_200(again);
	CU_ASSERT_TRUE(again->raw.replay);
	CU_ASSERT(again->raw.len == first->raw.len &&
	          memcmp(again->raw.body, first->raw.body, first->raw.len) == 0);
	result_free(again);
	result_free(first);
	free(json);
}

/* ---- 8. nothing caught reaches the server log (last: scans everything before) ---- */

void test_log_markers(void)
{
	static const char *const markers[] = {
	        "CHKMARK-c41a", "UNIQMARK-9b2e", "DUNIQMARK-5f0c", "FKMARK-71d3",
	        "DFKMARK-e82b", "TYPEMARK-3c9a", "NNMARK-a5d7",    "TRIGMARK-06fe",
	        "OKMARK-d3b1",  "PKMARK-4e2f",   "GRPMARK-b7c8",
	};
	ukey k[12];
	char ids[12][SY_UUID_LEN + 1];
	for (int i = 0; i < 12; i++)
		fresh_key(&k[i], "PKMARK-4e2f");
	/* values already there: the unique ones to collide with */
	mspec first[1] = {{.table = "u_mark",
	                   .pk = k[0].json,
	                   .op = "insert",
	                   .cols = "{\"req\":\"OKMARK-d3b1\",\"uniq\":\"UNIQMARK-9b2e\","
	                           "\"duniq\":\"DUNIQMARK-5f0c\"}"}};
	result *r = run(NULL, first, 1, ids);
	expect_200(r);
	check(r, ids[0], "applied", NULL, true, true);
	result_free(r);
	mspec ms[8] = {
	        /* CHECK at the statement */
	        {.table = "u_mark",
	         .pk = k[1].json,
	         .op = "insert",
	         .cols = "{\"req\":\"OKMARK-d3b1\",\"chk\":\"CHKMARK-c41a\"}"},
	        /* unique at the statement */
	        {.table = "u_mark",
	         .pk = k[2].json,
	         .op = "insert",
	         .cols = "{\"req\":\"OKMARK-d3b1\",\"uniq\":\"UNIQMARK-9b2e\"}"},
	        /* deferred unique at the unit end */
	        {.table = "u_mark",
	         .pk = k[3].json,
	         .op = "insert",
	         .cols = "{\"req\":\"OKMARK-d3b1\",\"duniq\":\"DUNIQMARK-5f0c\"}"},
	        /* FK at the statement, deferred FK at the unit end */
	        {.table = "u_mark",
	         .pk = k[4].json,
	         .op = "insert",
	         .cols = "{\"req\":\"OKMARK-d3b1\",\"ref\":\"FKMARK-71d3\"}"},
	        {.table = "u_mark",
	         .pk = k[5].json,
	         .op = "insert",
	         .cols = "{\"req\":\"OKMARK-d3b1\",\"dref\":\"DFKMARK-e82b\"}"},
	        /* a type error (22P02) of a CHECK's cast */
	        {.table = "u_mark",
	         .pk = k[6].json,
	         .op = "insert",
	         .cols = "{\"req\":\"OKMARK-d3b1\",\"num\":\"TYPEMARK-3c9a\"}"},
	        /* NOT NULL (the row with its values would be in the detail) */
	        {.table = "u_mark",
	         .pk = k[7].json,
	         .op = "insert",
	         .cols = "{\"chk\":\"NNMARK-a5d7\"}"},
	        /* a deferred trigger's 23514 quoting the value */
	        {.table = "u_mark",
	         .pk = k[8].json,
	         .op = "insert",
	         .cols = "{\"req\":\"OKMARK-d3b1\",\"chk\":\"TRIGMARK-06fe\"}"},
	};
	r = run(NULL, ms, 8, ids);
	expect_200(r);
	for (int i = 0; i < 8; i++)
		check(r, ids[i], "rejected_terminal", "validation_failed", false, false);
	CU_ASSERT_EQUAL(r->applied, 0);
	result_free(r);
	/* the same refusals at an atomic group's end and at a write inside it */
	mspec g1[2] = {
	        {.table = "u_mark",
	         .pk = k[9].json,
	         .op = "insert",
	         .cols = "{\"req\":\"GRPMARK-b7c8\"}"},
	        {.table = "u_mark",
	         .pk = k[10].json,
	         .op = "insert",
	         .cols = "{\"req\":\"GRPMARK-b7c8\",\"dref\":\"DFKMARK-e82b\"}"},
	};
	r = run(&(rspec){.atomic = true}, g1, 2, ids);
	expect_200(r);
	check(r, ids[0], "rejected_terminal", "atomic_batch_rejected", false, false);
	check(r, ids[1], "rejected_terminal", "validation_failed", false, false);
	result_free(r);
	mspec g2[2] = {
	        {.table = "u_mark",
	         .pk = k[9].json,
	         .op = "insert",
	         .cols = "{\"req\":\"GRPMARK-b7c8\"}"},
	        {.table = "u_mark",
	         .pk = k[11].json,
	         .op = "insert",
	         .cols = "{\"req\":\"GRPMARK-b7c8\",\"uniq\":\"UNIQMARK-9b2e\"}"},
	};
	r = run(&(rspec){.atomic = true}, g2, 2, ids);
	expect_200(r);
	check(r, ids[0], "rejected_terminal", "atomic_batch_rejected", false, false);
	check(r, ids[1], "rejected_terminal", "validation_failed", false, false);
	result_free(r);
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM u_mark"), 1);

	for (size_t i = 0; i < sizeof markers / sizeof markers[0]; i++) {
		bool found = server_log_has(markers[i]);
		CU_ASSERT_FALSE(found);
		if (found)
			fprintf(stderr, "the server log holds %s\n", markers[i]);
	}
	CU_ASSERT_FALSE(server_log_has("Failing row contains"));
	CU_ASSERT_FALSE(server_log_has("Key ("));
	CU_ASSERT_FALSE(server_log_has("OPMARK"));
	/* the log is the server's: it does show the refusals this suite caused on purpose */
	CU_ASSERT_TRUE(server_log_has("permission denied for function synchro_push"));
}
