/* SPDX-License-Identifier: BSD-2-Clause */
/* test_walsync.pgt: what walsync materializes (the WAL alone makes pull-visible changes,
 * doc/contract.md#wal-alone-publishes): changelog entries against the fence transitions of direct
 * writes, mutation ids, commit order, and the materialized write epochs read-your-writes waits for.
 * */
#include "config.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "pgtest.h"
#include "store/changelog.h"
#include "store/conn.h"
#include "store/lease.h"
#include "store/migrations.h"
#include "testutil.h"
#include "walsync_suite.h"

void test_direct_writes(void)
{
	leader_a = start_walsync("A", NULL, NULL);
	long long epoch = wait_leader("A");
	CU_ASSERT_FATAL(epoch >= 1);
	char *from = last_lsn();
	nexpected = 0;
	const char *t1 = "11111111-1111-4111-8111-111111111111";
	pgt_exec(db, "INSERT INTO todo (id, title, owner) VALUES"
	             " ('11111111-1111-4111-8111-111111111111', 'one', 'alice')");
	expect("todo", t1, NULL, NULL, NULL, NULL, "alice");
	pgt_exec(db,
	         "UPDATE todo SET done = true WHERE id = '11111111-1111-4111-8111-111111111111'");
	expect("todo", t1, NULL, NULL, NULL, "alice", "alice");
	pgt_exec(db,
	         "UPDATE todo SET owner = 'bob' WHERE id = '11111111-1111-4111-8111-111111111111'");
	expect("todo", t1, NULL, NULL, NULL, "alice", "bob");
	pgt_exec(db, "DELETE FROM todo WHERE id = '11111111-1111-4111-8111-111111111111'");
	expect("todo", t1, NULL, NULL, NULL, "bob", NULL);
	pgt_exec(db, "INSERT INTO item (id, label) VALUES (1, 'one')");
	expect("item", "1", NULL, NULL, NULL, NULL, NULL);
	pgt_exec(db, "UPDATE item SET deleted_at = now() WHERE id = 1");
	expect("item", "1", NULL, NULL, NULL, NULL, NULL);
	/* Text keys that array literals must quote: quotes, backslashes, commas, braces, the
	 * word NULL, spaces, non-ASCII. */
	static const char *const keys[] = {"a\"b\\c,{d}", "NULL", " spaced ", "\xc3\xa9t\xc3\xa9",
	                                   ""};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const char *p[] = {keys[i]};
		PQclear(pgt_query(db, "INSERT INTO tag (name, owner) VALUES ($1, 'carol')", 1, p));
		expect("tag", keys[i], NULL, NULL, NULL, NULL, "carol");
	}
	/* The transitions of one transaction, in statement order (the fence read inside the
	 * transaction is each statement's own version). */
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "INSERT INTO item (id) VALUES (2)");
	expect("item", "2", NULL, NULL, NULL, NULL, NULL);
	pgt_exec(db, "UPDATE item SET qty = 1 WHERE id = 2");
	expect("item", "2", NULL, NULL, NULL, NULL, NULL);
	pgt_exec(db, "UPDATE item SET deleted_at = now() WHERE id = 2");
	expect("item", "2", NULL, NULL, NULL, NULL, NULL);
	char *xid = pgt_value(db, "SELECT pg_current_xact_id()::text", 0, NULL);
	pgt_exec(db, "COMMIT");
	CU_ASSERT(wait_true(WAIT_ROWS,
	                    "SELECT count(*) >= %d FROM synchro.changelog WHERE commit_lsn > '%s'",
	                    nexpected, from));
	check_changelog_since(from);
	/* One transaction per statement above (ordinal 0), then the last one with 0, 1, 2. */
	CU_ASSERT_EQUAL(peek_int("SELECT count(DISTINCT commit_lsn) FROM synchro.changelog"
	                         " WHERE commit_lsn > '%s'",
	                         from),
	                nexpected - 2);
	char *ords = peek("SELECT string_agg(ordinal::text, ',' ORDER BY ordinal) FROM"
	                  " synchro.changelog WHERE commit_lsn = (SELECT max(commit_lsn) FROM"
	                  " synchro.changelog)");
	CU_ASSERT_STRING_EQUAL(ords ? ords : "", "0,1,2");
	free(ords);
	/* The source's 64-bit xid, widened from the stream's 32 bits. */
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FROM synchro.changelog WHERE commit_lsn ="
	                         " (SELECT max(commit_lsn) FROM synchro.changelog)"
	                         " AND xid = '%s'::xid8",
	                         xid ? xid : "0"),
	                3);
	free(xid);
	/* Written by A's epoch, with the commit time and the 64-bit xid of the source. */
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FROM synchro.changelog WHERE commit_lsn > '%s'"
	                         " AND (written_epoch IS DISTINCT FROM %lld OR committed_at IS NULL"
	                         "      OR xid IS NULL OR committed_at > now())",
	                         from, epoch),
	                0);
	/* No version twice: every transition appears exactly once. */
	CU_ASSERT_EQUAL(
	        peek_int("SELECT count(*) - count(DISTINCT version) FROM synchro.changelog"), 0);
	free(from);
}

/* Mutation, client and user ids of the transaction-local settings travel with each change;
 * cleared settings make a direct write again, within one transaction. */
void test_mutation_ids(void)
{
	char *from = last_lsn();
	nexpected = 0;
	const char *t2 = "22222222-2222-4222-8222-222222222222";
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "SELECT set_config('synchro.mutation_id', '" MUT1 "', true),"
	             "       set_config('synchro.client_id', '" CLIENT "', true),"
	             "       set_config('synchro.user_id', 'alice', true)");
	pgt_exec(db, "INSERT INTO todo (id, title, owner) VALUES"
	             " ('22222222-2222-4222-8222-222222222222', 'two', 'alice')");
	expect("todo", t2, MUT1, CLIENT, "alice", NULL, "alice");
	pgt_exec(db, "SELECT set_config('synchro.mutation_id', '" MUT2 "', true)");
	pgt_exec(db, "INSERT INTO item (id, label) VALUES (3, 'three')");
	expect("item", "3", MUT2, CLIENT, "alice", NULL, NULL);
	pgt_exec(db, "SELECT set_config('synchro.mutation_id', '', true),"
	             "       set_config('synchro.client_id', '', true),"
	             "       set_config('synchro.user_id', '', true)");
	pgt_exec(db, "UPDATE item SET qty = 3 WHERE id = 3");
	expect("item", "3", NULL, NULL, NULL, NULL, NULL);
	pgt_exec(db, "COMMIT");
	CU_ASSERT(wait_true(WAIT_ROWS,
	                    "SELECT count(*) >= %d FROM synchro.changelog WHERE commit_lsn > '%s'",
	                    nexpected, from));
	check_changelog_since(from);
	free(from);
}

/* Changelog order is commit order: transactions that interleave their writes appear whole,
 * in the order they committed. */
void test_commit_order(void)
{
	PGconn *a = pgt_connect(NULL);
	PGconn *b = pgt_connect(NULL);
	char *from = last_lsn();
	char want[512] = "", sql[256];
	for (int round = 0; round < 4; round++) {
		int base = 100 + round * 10;
		pgt_exec(a, "BEGIN");
		snprintf(sql, sizeof sql, "INSERT INTO item (id) VALUES (%d)", base);
		pgt_exec(a, sql);
		pgt_exec(b, "BEGIN");
		snprintf(sql, sizeof sql, "INSERT INTO item (id) VALUES (%d), (%d)", base + 5,
		         base + 6);
		pgt_exec(b, sql);
		snprintf(sql, sizeof sql, "INSERT INTO item (id) VALUES (%d)", base + 1);
		size_t n = strlen(want);
		if (round % 2 == 0) {
			/* B commits first although A wrote first. */
			pgt_exec(b, "COMMIT");
			pgt_exec(a, sql);
			pgt_exec(a, "COMMIT");
			snprintf(want + n, sizeof want - n, "%d,%d,%d,%d,", base + 5, base + 6,
			         base, base + 1);
		} else {
			pgt_exec(a, sql);
			pgt_exec(a, "COMMIT");
			pgt_exec(b, "COMMIT");
			snprintf(want + n, sizeof want - n, "%d,%d,%d,%d,", base, base + 1,
			         base + 5, base + 6);
		}
	}
	want[strlen(want) - 1] = '\0';
	CU_ASSERT(wait_true(WAIT_ROWS,
	                    "SELECT count(*) >= 16 FROM synchro.changelog WHERE commit_lsn > '%s'",
	                    from));
	char *got = peek("SELECT string_agg(pk, ',' ORDER BY commit_lsn, ordinal) FROM"
	                 " synchro.changelog WHERE commit_lsn > '%s'",
	                 from);
	CU_ASSERT_STRING_EQUAL(got ? got : "", want);
	free(got);
	/* Each transaction's rows share its commit LSN, ordinals from 0. */
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FROM (SELECT commit_lsn FROM synchro.changelog"
	                         " WHERE commit_lsn > '%s' GROUP BY commit_lsn"
	                         " HAVING min(ordinal) = 0 AND max(ordinal) = 1) t",
	                         from),
	                8);
	free(from);
	PQfinish(a);
	PQfinish(b);
}

/* materialized_write_epoch follows the accepted pushes as their transactions are decoded,
 * in the changelog transaction of their rows, never past accepted_write_epoch. */
void test_epochs(void)
{
	pgt_exec(db,
	         "INSERT INTO synchro.clients (client_id, user_id) VALUES ('" CLIENT "', 'alice')");
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "SELECT set_config('synchro.mutation_id', '" MUT3 "', true),"
	             "       set_config('synchro.client_id', '" CLIENT "', true),"
	             "       set_config('synchro.user_id', 'alice', true)");
	pgt_exec(db, "INSERT INTO todo (id, title, owner) VALUES"
	             " ('33333333-3333-4333-8333-333333333333', 'three', 'alice')");
	pgt_exec(db, "UPDATE synchro.clients SET accepted_write_epoch = accepted_write_epoch + 1"
	             " WHERE client_id = '" CLIENT "'");
	pgt_exec(db, "COMMIT");
	/* One snapshot: once the epoch shows, the push's rows do too. */
	CU_ASSERT(wait_true(WAIT_ROWS, "SELECT materialized_write_epoch = 2"
	                               "  FROM synchro.client_progress"
	                               " WHERE client_id = '" CLIENT "'"));
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FILTER (WHERE p.materialized_write_epoch = 2)"
	                         "       * 10 + (SELECT count(*) FROM synchro.changelog"
	                         "               WHERE mutation_id = '" MUT3 "')"
	                         "  FROM synchro.client_progress p"
	                         " WHERE p.client_id = '" CLIENT "'"),
	                11);
	/* Two increases in one transaction without rows; a rolled back one. */
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "UPDATE synchro.clients SET accepted_write_epoch = accepted_write_epoch + 1"
	             " WHERE client_id = '" CLIENT "'");
	pgt_exec(db, "UPDATE synchro.clients SET accepted_write_epoch = accepted_write_epoch + 1"
	             " WHERE client_id = '" CLIENT "'");
	pgt_exec(db, "COMMIT");
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "UPDATE synchro.clients SET accepted_write_epoch = accepted_write_epoch + 1"
	             " WHERE client_id = '" CLIENT "'");
	pgt_exec(db, "ROLLBACK");
	CU_ASSERT(wait_true(WAIT_ROWS, "SELECT materialized_write_epoch = 4"
	                               "  FROM synchro.client_progress"
	                               " WHERE client_id = '" CLIENT "'"));
	/* Forged or damaged messages: an epoch past the accepted one is capped, text that is
	 * not a fence message is skipped, and the stream goes on. */
	pgt_exec(db, "SELECT pg_logical_emit_message(true, 'synchro-epoch',"
	             " '{\"client_id\": \"" CLIENT "\", \"epoch\": 99}')");
	pgt_exec(db, "SELECT pg_logical_emit_message(true, 'synchro', 'not json')");
	pgt_exec(db, "SELECT pg_logical_emit_message(false, 'synchro', '{}')");
	pgt_exec(db, "INSERT INTO item (id, label) VALUES (4, 'after')");
	CU_ASSERT(wait_true(WAIT_ROWS, "SELECT EXISTS (SELECT 1 FROM synchro.changelog"
	                               " WHERE table_id = 'item' AND pk = '4')"));
	CU_ASSERT_EQUAL(peek_int("SELECT p.materialized_write_epoch * 100 + c.accepted_write_epoch"
	                         "  FROM synchro.clients c JOIN synchro.client_progress p"
	                         "    USING (client_id) WHERE client_id = '" CLIENT "'"),
	                404);
	/* The superseded column of migration 9 is no longer written. */
	CU_ASSERT_EQUAL(peek_int("SELECT materialized_write_epoch FROM synchro.clients"
	                         " WHERE client_id = '" CLIENT "'"),
	                1);
	CU_ASSERT(log_has("A", "skipped a malformed logical message"));
}
