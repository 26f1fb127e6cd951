/* SPDX-License-Identifier: BSD-2-Clause */
/* test_sql.pgt: the version fences (doc/contract.md#server-versions: every transition mints a
 * version and moves the fence), primary-key updates refused, random versions, and the logical
 * messages that carry them to walsync, committed with them, through test_decoding and pgoutput. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pgtest.h"
#include "store/migrations.h"
#include "testutil.h"
#include "sql_suite.h"

/* Every transition of a row mints a distinct random version and moves its fence; the
 * transaction-local settings name the push mutation and a later direct write clears them. */
void test_transitions(void)
{
	char xid[24];
	char seen[16][160];
	int nseen = 0;
	fence f;

	pgt_exec(db, "BEGIN");
	pgt_exec(db, "INSERT INTO todo (id, title, owner) VALUES ('" TODO1 "', 'a', 'alice')");
	current_xid(xid, sizeof xid);
	pgt_exec(db, "COMMIT");
	f = get_fence("todo", TODO1);
	CU_ASSERT_TRUE_FATAL(f.found);
	CU_ASSERT_STRING_EQUAL(f.state, "live");
	CU_ASSERT_TRUE(is_hex32(f.version));
	CU_ASSERT_STRING_EQUAL(f.mutation_id, "<null>");
	CU_ASSERT_STRING_EQUAL(f.client_id, "<null>");
	CU_ASSERT_STRING_EQUAL(f.user_id, "<null>");
	CU_ASSERT_STRING_EQUAL(f.source_xid, xid);
	memcpy(seen[nseen++], f.version, sizeof f.version);

	pgt_exec(db, "UPDATE todo SET title = 'b' WHERE id = '" TODO1 "'");
	f = get_fence("todo", TODO1);
	CU_ASSERT_STRING_EQUAL(f.state, "live");
	memcpy(seen[nseen++], f.version, sizeof f.version);

	/* A push write: the settings of its transaction land in the fence. */
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "SELECT set_config('synchro.mutation_id', '" MUT1 "', true),"
	             "       set_config('synchro.client_id', '" CLI1 "', true),"
	             "       set_config('synchro.user_id', 'alice', true)");
	pgt_exec(db, "UPDATE todo SET done = true WHERE id = '" TODO1 "'");
	pgt_exec(db, "COMMIT");
	f = get_fence("todo", TODO1);
	CU_ASSERT_STRING_EQUAL(f.state, "live");
	CU_ASSERT_STRING_EQUAL(f.mutation_id, MUT1);
	CU_ASSERT_STRING_EQUAL(f.client_id, CLI1);
	CU_ASSERT_STRING_EQUAL(f.user_id, "alice");
	memcpy(seen[nseen++], f.version, sizeof f.version);

	/* The next direct write, in another transaction on the same session, records none. */
	pgt_exec(db, "UPDATE todo SET note = 'n' WHERE id = '" TODO1 "'");
	f = get_fence("todo", TODO1);
	CU_ASSERT_STRING_EQUAL(f.mutation_id, "<null>");
	CU_ASSERT_STRING_EQUAL(f.client_id, "<null>");
	CU_ASSERT_STRING_EQUAL(f.user_id, "<null>");
	memcpy(seen[nseen++], f.version, sizeof f.version);

	/* Hard delete: the fence stays, deleted, with a new version. */
	pgt_exec(db, "DELETE FROM todo WHERE id = '" TODO1 "'");
	f = get_fence("todo", TODO1);
	CU_ASSERT_TRUE(f.found);
	CU_ASSERT_STRING_EQUAL(f.state, "deleted");
	memcpy(seen[nseen++], f.version, sizeof f.version);

	/* A push (synchro.no_resurrection on) never revives a deleted identity (SY006), whatever
	 * its mutation settings; a direct write may. */
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "SELECT set_config('synchro.no_resurrection', 'on', true)");
	pgt_fails(db, "INSERT INTO todo (id, title, owner) VALUES ('" TODO1 "', 'r', 'alice')",
	          "SY006");
	pgt_exec(db, "ROLLBACK");
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "SELECT set_config('synchro.mutation_id', '" MUT2 "', true)");
	pgt_exec(db, "SELECT set_config('synchro.no_resurrection', 'on', true)");
	pgt_fails(db, "INSERT INTO todo (id, title, owner) VALUES ('" TODO1 "', 'r', 'alice')",
	          "SY006");
	pgt_exec(db, "ROLLBACK");
	CU_ASSERT_STRING_EQUAL(get_fence("todo", TODO1).version, f.version);
	pgt_exec(db, "INSERT INTO todo (id, title, owner) VALUES ('" TODO1 "', 'r', 'alice')");
	f = get_fence("todo", TODO1);
	CU_ASSERT_STRING_EQUAL(f.state, "live");
	memcpy(seen[nseen++], f.version, sizeof f.version);
	pgt_exec(db, "DELETE FROM todo WHERE id = '" TODO1 "'");
	f = get_fence("todo", TODO1);
	CU_ASSERT_STRING_EQUAL(f.state, "deleted");
	memcpy(seen[nseen++], f.version, sizeof f.version);

	/* Soft delete and a direct undelete on item. */
	pgt_exec(db, "INSERT INTO item (id, label) VALUES (1, 'one')");
	f = get_fence("item", "1");
	CU_ASSERT_STRING_EQUAL(f.state, "live");
	memcpy(seen[nseen++], f.version, sizeof f.version);
	pgt_exec(db, "UPDATE item SET deleted_at = now() WHERE id = 1");
	f = get_fence("item", "1");
	CU_ASSERT_STRING_EQUAL(f.state, "deleted");
	memcpy(seen[nseen++], f.version, sizeof f.version);
	pgt_exec(db, "UPDATE item SET deleted_at = NULL WHERE id = 1");
	f = get_fence("item", "1");
	CU_ASSERT_STRING_EQUAL(f.state, "live");
	memcpy(seen[nseen++], f.version, sizeof f.version);
	/* A no-op update is still a row operation, hence a transition. */
	pgt_exec(db, "UPDATE item SET label = label WHERE id = 1");
	f = get_fence("item", "1");
	CU_ASSERT_STRING_EQUAL(f.state, "live");
	memcpy(seen[nseen++], f.version, sizeof f.version);
	/* Hard delete of a soft-delete table still deletes. */
	pgt_exec(db, "DELETE FROM item WHERE id = 1");
	f = get_fence("item", "1");
	CU_ASSERT_STRING_EQUAL(f.state, "deleted");
	memcpy(seen[nseen++], f.version, sizeof f.version);

	for (int i = 0; i < nseen; i++) {
		CU_ASSERT_TRUE(is_hex32(seen[i]));
		for (int j = 0; j < i; j++)
			CU_ASSERT_STRING_NOT_EQUAL(seen[i], seen[j]);
	}
	/* The fence pk is the text output of the key, equal to the canonical wire value
	 * (lowercase uuid, decimal integer) whatever the literal that wrote it. */
	pgt_exec(db, "INSERT INTO todo (id, title, owner) VALUES"
	             " ('4444AAAA-4444-4444-8444-44444444BBBB', 'u', 'alice')");
	pgt_exec(db, "INSERT INTO item (id) VALUES ('-0042')");
	CU_ASSERT_STRING_EQUAL(get_fence("todo", "4444aaaa-4444-4444-8444-44444444bbbb").state,
	                       "live");
	CU_ASSERT_STRING_EQUAL(get_fence("item", "-42").state, "live");
	CU_ASSERT_EQUAL(pgt_int(db,
	                        "SELECT count(*) FROM synchro.row_fences WHERE (table_id, pk) IN"
	                        " (('todo', '" TODO1 "'), ('item', '1'))",
	                        0, NULL),
	                2);
}

/* A primary-key UPDATE of a synced row is refused (SQLSTATE SY001) and changes nothing. */
void test_pk_update_refused(void)
{
	pgt_exec(db, "INSERT INTO todo (id, title, owner) VALUES ('" TODO2 "', 't', 'alice')");
	pgt_exec(db, "INSERT INTO item (id) VALUES (2)");
	fence before = get_fence("item", "2");
	pgt_fails(db, "UPDATE todo SET id = '" TODO1 "' WHERE id = '" TODO2 "'", "SY001");
	pgt_fails(db, "UPDATE item SET id = 3 WHERE id = 2", "SY001");
	fence after = get_fence("item", "2");
	CU_ASSERT_STRING_EQUAL(after.version, before.version);
	CU_ASSERT_FALSE(get_fence("item", "3").found);
	CU_ASSERT_EQUAL(pgt_int(db, "SELECT count(*) FROM item WHERE id = 2", 0, NULL), 1);
	CU_ASSERT_EQUAL(pgt_int(db, "SELECT count(*) FROM todo WHERE id = '" TODO2 "'", 0, NULL),
	                1);
	/* The key set to itself is no change. */
	pgt_exec(db, "UPDATE item SET id = 2, qty = 1 WHERE id = 2");
	CU_ASSERT_STRING_NOT_EQUAL(get_fence("item", "2").version, before.version);
}

/* Versions are random: 1000 inserts mint 1000 distinct 32-hex versions that neither follow
 * the insert order nor share prefixes the way time-derived identifiers do. */
void test_versions_random(void)
{
	pgt_exec(db, "INSERT INTO item (id) SELECT g FROM generate_series(100000, 100999) g");
	PGresult *r = pgt_query(
	        db,
	        "WITH v AS (SELECT pk, version FROM synchro.row_fences WHERE table_id = 'item'"
	        "            AND length(pk) = 6 AND pk BETWEEN '100000' AND '100999'),"
	        "     o AS (SELECT version, lag(version) OVER (ORDER BY pk) AS prev FROM v)"
	        "SELECT (SELECT count(*) FROM v),"
	        "       (SELECT count(DISTINCT version) FROM v),"
	        "       (SELECT count(*) FROM v WHERE version ~ '^[0-9a-f]{32}$'),"
	        "       (SELECT count(DISTINCT left(version, 4)) FROM v),"
	        "       (SELECT count(*) FROM o WHERE version > prev),"
	        "       (SELECT count(*) FROM o WHERE version < prev)",
	        0, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_STRING_EQUAL(PQgetvalue(r, 0, 0), "1000");
	CU_ASSERT_STRING_EQUAL(PQgetvalue(r, 0, 1), "1000");
	CU_ASSERT_STRING_EQUAL(PQgetvalue(r, 0, 2), "1000");
	/* 1000 random 16-bit prefixes: about 993 distinct; fewer than 900 has odds below 1e-30. */
	CU_ASSERT(atoi(PQgetvalue(r, 0, 3)) > 900);
	int up = atoi(PQgetvalue(r, 0, 4)), down = atoi(PQgetvalue(r, 0, 5));
	CU_ASSERT(up > 300 && down > 300);
	PQclear(r);
}

/* One transactional message per row transition, in the transaction that made it, carrying
 * the fence's version; nothing for rolled-back work, savepoints included. */
void test_messages(void)
{
	char xid[24], v1[160], v2[160], v3[160];
	int n;

	discard();

	/* A push-like transaction: insert, owner change, hard delete of one todo. */
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "SELECT set_config('synchro.mutation_id', '" MUT2 "', true),"
	             "       set_config('synchro.client_id', '" CLI1 "', true),"
	             "       set_config('synchro.user_id', 'alice', true)");
	current_xid(xid, sizeof xid);
	pgt_exec(db, "INSERT INTO todo (id, title, owner) VALUES ('" TODO3 "', 'm', 'alice')");
	snprintf(v1, sizeof v1, "%s", get_fence("todo", TODO3).version);
	pgt_exec(db, "UPDATE todo SET owner = 'bob' WHERE id = '" TODO3 "'");
	snprintf(v2, sizeof v2, "%s", get_fence("todo", TODO3).version);
	pgt_exec(db, "DELETE FROM todo WHERE id = '" TODO3 "'");
	snprintf(v3, sizeof v3, "%s", get_fence("todo", TODO3).version);
	/* Not yet committed: nothing decoded. */
	CU_ASSERT_EQUAL(pgt_int(db,
	                        "SELECT count(*) FROM pg_logical_slot_peek_changes('" SLOT "',"
	                        " NULL, NULL)",
	                        0, NULL),
	                0);
	pgt_exec(db, "COMMIT");
	n = drain(msgs, MAX_MESSAGES);
	CU_ASSERT_EQUAL_FATAL(n, 3);
	check_message(&msgs[0], xid, "todo", TODO3, v1, "live", MUT2, CLI1, "alice", "<null>",
	              "alice");
	check_message(&msgs[1], xid, "todo", TODO3, v2, "live", MUT2, CLI1, "alice", "alice",
	              "bob");
	check_message(&msgs[2], xid, "todo", TODO3, v3, "deleted", MUT2, CLI1, "alice", "bob",
	              "<null>");

	/* Direct writes on item: no owner column, no push identity. */
	pgt_exec(db, "BEGIN");
	current_xid(xid, sizeof xid);
	pgt_exec(db, "INSERT INTO item (id) VALUES (7)");
	snprintf(v1, sizeof v1, "%s", get_fence("item", "7").version);
	pgt_exec(db, "UPDATE item SET deleted_at = now() WHERE id = 7");
	snprintf(v2, sizeof v2, "%s", get_fence("item", "7").version);
	pgt_exec(db, "COMMIT");
	n = drain(msgs, MAX_MESSAGES);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	check_message(&msgs[0], xid, "item", "7", v1, "live", "<null>", "<null>", "<null>",
	              "<null>", "<null>");
	check_message(&msgs[1], xid, "item", "7", v2, "deleted", "<null>", "<null>", "<null>",
	              "<null>", "<null>");

	/* One statement, several rows: one message each. */
	pgt_exec(db, "UPDATE item SET qty = 5 WHERE id IN (2, 7)");
	n = drain(msgs, MAX_MESSAGES);
	CU_ASSERT_EQUAL(n, 2);

	/* Rolled back: neither messages nor fences. */
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "INSERT INTO item (id) VALUES (8)");
	pgt_exec(db, "ROLLBACK");
	CU_ASSERT_EQUAL(drain(msgs, MAX_MESSAGES), 0);
	CU_ASSERT_FALSE(get_fence("item", "8").found);
	/* A failed statement emits nothing either. */
	pgt_fails(db, "UPDATE item SET id = 70 WHERE id = 7", "SY001");
	CU_ASSERT_EQUAL(drain(msgs, MAX_MESSAGES), 0);

	/* A rolled-back savepoint takes its messages along; the rest commits. */
	pgt_exec(db, "BEGIN");
	current_xid(xid, sizeof xid);
	pgt_exec(db, "INSERT INTO item (id) VALUES (9)");
	snprintf(v1, sizeof v1, "%s", get_fence("item", "9").version);
	pgt_exec(db, "SAVEPOINT s");
	pgt_exec(db, "INSERT INTO item (id) VALUES (10)");
	pgt_exec(db, "UPDATE item SET label = 'gone' WHERE id = 9");
	pgt_exec(db, "ROLLBACK TO SAVEPOINT s");
	pgt_exec(db, "INSERT INTO item (id) VALUES (11)");
	snprintf(v2, sizeof v2, "%s", get_fence("item", "11").version);
	pgt_exec(db, "COMMIT");
	n = drain(msgs, MAX_MESSAGES);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	check_message(&msgs[0], xid, "item", "9", v1, "live", "<null>", "<null>", "<null>",
	              "<null>", "<null>");
	check_message(&msgs[1], xid, "item", "11", v2, "live", "<null>", "<null>", "<null>",
	              "<null>", "<null>");
	CU_ASSERT_STRING_EQUAL(get_fence("item", "9").version, v1);
	CU_ASSERT_FALSE(get_fence("item", "10").found);
}

/* walsync's pgoutput stream (publication synchro, messages on) carries the fence messages
 * and no application row image: the publication holds synchro.row_fences alone (migration 15:
 * the fence transitions that vouch for each message). */
void test_pgoutput(void)
{
	pgt_exec(db, "SELECT pg_create_logical_replication_slot('synchro_p', 'pgoutput')");
	pgt_exec(db, "INSERT INTO item (id, label) VALUES (30, 'p')");
	pgt_exec(db, "UPDATE item SET deleted_at = now() WHERE id = 30");
	char *version = strdup(get_fence("item", "30").version);
	CU_ASSERT_PTR_NOT_NULL_FATAL(version);
	/* Byte1 'M', Int8 flags, Int64 lsn, String prefix, Int32 length, content (protocol 1). */
	PGresult *r = pgt_query(
	        db,
	        "SELECT chr(get_byte(data, 0)), get_byte(data, 1),"
	        "       CASE WHEN get_byte(data, 0) = 77 THEN substring(data FROM 11 FOR 8) END,"
	        "       CASE WHEN get_byte(data, 0) = 77 THEN convert_from("
	        "            substring(data FROM 23), 'UTF8')::jsonb ->> 'version' END,"
	        "       CASE WHEN get_byte(data, 0) = 77 THEN convert_from("
	        "            substring(data FROM 23), 'UTF8')::jsonb ->> 'state' END,"
	        "       position('\\x73796e6368726f00726f775f66656e63657300'::bytea IN data) = 6"
	        "  FROM pg_logical_slot_get_binary_changes('synchro_p', NULL, NULL,"
	        "       'proto_version', '1', 'publication_names', 'synchro', 'messages', 'true')"
	        "  WITH ORDINALITY AS t(lsn, xid, data, n) ORDER BY n",
	        0, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	int messages = 0, rows = 0;
	for (int i = 0; i < PQntuples(r); i++) {
		const char *kind = PQgetvalue(r, i, 0);
		if (strcmp(kind, "M") == 0) {
			messages++;
			CU_ASSERT_STRING_EQUAL(PQgetvalue(r, i, 1), "1"); /* transactional */
			CU_ASSERT_STRING_EQUAL(PQgetvalue(r, i, 2), "\\x73796e6368726f00");
			CU_ASSERT_STRING_EQUAL(PQgetvalue(r, i, 4),
			                       messages == 1 ? "live" : "deleted");
			if (messages == 2)
				CU_ASSERT_STRING_EQUAL(PQgetvalue(r, i, 3), version);
		} else if (strcmp(kind, "R") == 0) {
			/* Every relation streamed is synchro.row_fences. */
			CU_ASSERT_STRING_EQUAL(PQgetvalue(r, i, 5), "t");
		} else if (strcmp(kind, "B") != 0 && strcmp(kind, "C") != 0) {
			rows++;
		}
	}
	CU_ASSERT_EQUAL(messages, 2);
	CU_ASSERT_EQUAL(rows, 2); /* the fence's insert and update */
	PQclear(r);
	free(version);
	pgt_exec(db, "SELECT pg_drop_replication_slot('synchro_p')");
}
