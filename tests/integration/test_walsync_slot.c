/* SPDX-License-Identifier: BSD-2-Clause */
/* test_walsync.pgt: slot continuity (migration 14, doc/operations.md "Slot continuity"),
 * forged messages (migration 15), DDL between publishes (migration 16) and large
 * transactions. */
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

/* ---- slot continuity (migration 14, doc/operations.md "Slot continuity") ---- */

#define CLIENT2 "c0000000-0000-4000-8000-0000000000c2"
#define REBUILD "b0000000-0000-4000-8000-0000000000b1"

static long long breaks(void)
{
	return peek_int("SELECT count(*) FROM synchro.stream_breaks");
}

/* The slot is never told of a position the database does not hold as materialized. */
static bool slot_within_durable(void)
{
	return wait_true(5000, "SELECT s.confirmed_flush_lsn <= p.materialized_lsn"
	                       "  FROM pg_replication_slots s, synchro.stream_position p"
	                       " WHERE s.slot_name = 'synchro'");
}

/* A walsync that stops and starts again on its own slot finds no break: the durable
 * position covers what it confirmed, idle keepalives included. */
void test_restart_is_continuous(void)
{
	long long before = breaks();
	pid_t p = start_walsync("P", NULL, NULL);
	CU_ASSERT_FATAL(wait_leader("P") > 0);
	pgt_exec(db, "INSERT INTO item (id) VALUES (60)");
	CU_ASSERT(wait_true(WAIT_ROWS, "SELECT EXISTS (SELECT 1 FROM synchro.changelog WHERE"
	                               " table_id = 'item' AND pk = '60')"));
	CU_ASSERT(wait_true(WAIT_ROWS, "SELECT materialized_lsn IS NOT NULL AND slot = 'synchro'"
	                               " FROM synchro.stream_position"));
	CU_ASSERT(slot_within_durable());
	/* Transactions without a change move the slot too (heartbeats, other tables). */
	pgt_exec(db, "CREATE TABLE unsynced (x int); INSERT INTO unsynced VALUES (1)");
	CU_ASSERT_EQUAL(stop_walsync(p), 0);
	CU_ASSERT(slot_within_durable());
	pid_t q = start_walsync("Q", NULL, NULL);
	CU_ASSERT_FATAL(wait_leader("Q") > 0);
	pgt_exec(db, "INSERT INTO item (id) VALUES (61)");
	CU_ASSERT(wait_true(WAIT_ROWS, "SELECT EXISTS (SELECT 1 FROM synchro.changelog WHERE"
	                               " table_id = 'item' AND pk = '61')"));
	CU_ASSERT_EQUAL(breaks(), before);
	CU_ASSERT_FALSE(log_has("Q", "STREAM BREAK"));
	CU_ASSERT_EQUAL(stop_walsync(q), 0);
}

/*
 * The slot dropped while walsync is down (an operator's mistake, a restore, a failover on
 * PostgreSQL 15): the writes committed in between never reach the changelog. walsync finds
 * the break, logs it as an error, expires every cursor and rebuild session before the new
 * slot and marks every accepted write materialized; synchroctl lease status shows it; later
 * writes stream on.
 */
void test_slot_dropped(void)
{
	pgt_exec(db, "INSERT INTO synchro.clients (client_id, user_id) VALUES ('" CLIENT2
	             "', 'alice')");
	pgt_exec(db, "INSERT INTO synchro.rebuild_sessions (user_id, client_id, rebuild_id,"
	             " accepted_write_epoch, stream_lsn, stream_ordinal) SELECT 'alice', '" CLIENT2
	             "', '" REBUILD "', 1, coalesce(max(commit_lsn), '0/0'), 0"
	             " FROM synchro.changelog");
	long long before = breaks();
	char *tail = peek("SELECT commit_lsn || '|' || ordinal FROM synchro.changelog"
	                  " ORDER BY commit_lsn DESC, ordinal DESC LIMIT 1");
	/* Walsync is down; a push commits, then the slot goes, then a direct write. */
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "SELECT set_config('synchro.mutation_id', '" MUT1 "', true),"
	             " set_config('synchro.client_id', '" CLIENT2 "', true),"
	             " set_config('synchro.user_id', 'alice', true)");
	pgt_exec(db, "INSERT INTO item (id) VALUES (62)");
	pgt_exec(db, "UPDATE synchro.clients SET accepted_write_epoch = 2"
	             " WHERE client_id = '" CLIENT2 "'");
	pgt_exec(db, "COMMIT");
	pgt_exec(db, "SELECT pg_drop_replication_slot('synchro')");
	pgt_exec(db, "INSERT INTO item (id) VALUES (63)");
	pid_t s = start_walsync("S", NULL, NULL);
	CU_ASSERT_FATAL(wait_leader("S") > 0);
	CU_ASSERT(wait_log("S", "STREAM BREAK: replication slot synchro was missing", WAIT_ROWS));
	CU_ASSERT_EQUAL(breaks(), before + 1);
	/* The horizon is one past the last entry: every cursor given out so far expired. */
	char *horizon = peek("SELECT commit_lsn || '|' || (ordinal - 1) FROM"
	                     " synchro.changelog_horizon");
	CU_ASSERT_STRING_EQUAL(horizon ? horizon : "", tail ? tail : "");
	free(horizon);
	free(tail);
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FROM synchro.rebuild_sessions"
	                         " WHERE rebuild_id = '" REBUILD "'"),
	                0);
	CU_ASSERT_EQUAL(peek_int("SELECT materialized_write_epoch FROM synchro.client_progress"
	                         " WHERE client_id = '" CLIENT2 "'"),
	                2);
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FROM synchro.changelog"
	                         " WHERE table_id = 'item' AND pk IN ('62', '63')"),
	                0);
	CU_ASSERT_EQUAL(
	        peek_int("SELECT count(*) FROM synchro.stream_breaks b,"
	                 " synchro.stream_position p, pg_replication_slots s"
	                 " WHERE s.slot_name = 'synchro' AND b.slot_lsn = p.materialized_lsn"
	                 "   AND b.break_id = (SELECT max(break_id) FROM"
	                 " synchro.stream_breaks) AND b.clients >= 1"
	                 "   AND s.confirmed_flush_lsn <= p.materialized_lsn"),
	        1);
	pgt_exec(db, "INSERT INTO item (id) VALUES (64)");
	CU_ASSERT(wait_true(WAIT_ROWS,
	                    "SELECT EXISTS (SELECT 1 FROM synchro.changelog WHERE"
	                    " table_id = 'item' AND pk = '64' AND (commit_lsn, ordinal) >"
	                    " (SELECT commit_lsn, ordinal FROM"
	                    " synchro.changelog_horizon))"));
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "'%s' lease status 2>&1", ctl_bin);
	FILE *p = popen(cmd, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	char out[4096];
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = '\0';
	CU_ASSERT(pclose(p) == 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "recorded; last at "));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "replication slot synchro was missing"));
	CU_ASSERT_EQUAL(stop_walsync(s), 0);
}

/* The slot dropped and created again (or advanced) behind walsync's back: it starts past
 * the durable position, which is a break as well. */
void test_slot_recreated(void)
{
	long long before = breaks();
	pgt_exec(db, "SELECT pg_drop_replication_slot('synchro')");
	pgt_exec(db, "INSERT INTO item (id) VALUES (65)");
	pgt_exec(db, "SELECT pg_create_logical_replication_slot('synchro', 'pgoutput')");
	pid_t t = start_walsync("T", NULL, NULL);
	CU_ASSERT_FATAL(wait_leader("T") > 0);
	CU_ASSERT(wait_log("T", "past", WAIT_ROWS));
	CU_ASSERT(log_has("T", "STREAM BREAK: replication slot synchro starts at"));
	CU_ASSERT_EQUAL(breaks(), before + 1);
	pgt_exec(db, "INSERT INTO item (id) VALUES (66)");
	CU_ASSERT(wait_true(WAIT_ROWS, "SELECT EXISTS (SELECT 1 FROM synchro.changelog WHERE"
	                               " table_id = 'item' AND pk = '66')"));
	CU_ASSERT_EQUAL(stop_walsync(t), 0);
}

/* ---- forged messages (migration 15, doc/operations.md "Forged messages") ---- */

/*
 * Any role may call pg_logical_emit_message. A role without a single privilege forges a
 * delete of alice's live row (her row leaving her scope), and a message with a key no table
 * type reads; a superuser slips a forged message into a transaction of its own genuine
 * write. None reaches the changelog; the genuine write does, and the stream goes on.
 */
void test_forged_messages(void)
{
	pid_t f = start_walsync("F2", NULL, NULL);
	CU_ASSERT_FATAL(wait_leader("F2") > 0);
	pgt_exec(db, "INSERT INTO todo (id, title, owner) VALUES"
	             " ('77777777-7777-4777-8777-777777777777', 'mine', 'alice')");
	CU_ASSERT(wait_true(WAIT_ROWS, "SELECT EXISTS (SELECT 1 FROM synchro.changelog WHERE"
	                               " pk = '77777777-7777-4777-8777-777777777777')"));
	char *version = peek("SELECT version FROM synchro.row_fences"
	                     " WHERE pk = '77777777-7777-4777-8777-777777777777'");
	CU_ASSERT_PTR_NOT_NULL_FATAL(version);
	pgt_exec(db, "DROP ROLE IF EXISTS mallory; CREATE ROLE mallory LOGIN");
	char conninfo[256];
	snprintf(conninfo, sizeof conninfo, "user=mallory");
	PGconn *m = pgt_connect(conninfo);
	char sql[1024];
	snprintf(sql, sizeof sql,
	         "SELECT pg_logical_emit_message(true, 'synchro', '{\"table_id\": \"todo\","
	         " \"pk\": \"77777777-7777-4777-8777-777777777777\", \"version\": \"%s\","
	         " \"state\": \"live\", \"mutation_id\": null, \"client_id\": null,"
	         " \"user_id\": null, \"owner_before\": \"alice\", \"owner_after\": \"mallory\"}')",
	         version);
	pgt_exec(m, sql);
	pgt_exec(m, "SELECT pg_logical_emit_message(true, 'synchro', '{\"table_id\": \"item\","
	            " \"pk\": \"not a number\", \"version\": \"forged1\", \"state\": \"live\","
	            " \"mutation_id\": null, \"client_id\": null, \"user_id\": null,"
	            " \"owner_before\": null, \"owner_after\": null}')");
	PQfinish(m);
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "INSERT INTO item (id) VALUES (70)");
	pgt_exec(db, sql);
	pgt_exec(db, "COMMIT");
	CU_ASSERT(wait_true(WAIT_ROWS, "SELECT EXISTS (SELECT 1 FROM synchro.changelog WHERE"
	                               " table_id = 'item' AND pk = '70')"));
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FROM synchro.changelog WHERE"
	                         " owner_after = 'mallory' OR pk = 'not a number'"),
	                0);
	CU_ASSERT(wait_log("F2", "refused a version-fence message", WAIT_ROWS));
	/* The genuine ones of a transaction are all there, each once. */
	CU_ASSERT_EQUAL(
	        peek_int("SELECT count(*) - count(DISTINCT version) FROM synchro.changelog"), 0);
	CU_ASSERT_EQUAL(stop_walsync(f), 0);
	pgt_exec(db, "DROP ROLE mallory");
	free(version);
}

/* ---- DDL between publishes (migration 16) ---- */

/*
 * The owner column renamed before the publish that follows: a write in that window would
 * carry no owner and reach its owner by pull never. The fence refuses it (SY010) until the
 * fence names the new column; then writes carry their owner again.
 */
void test_owner_column_renamed(void)
{
	pid_t o = start_walsync("O", NULL, NULL);
	CU_ASSERT_FATAL(wait_leader("O") > 0);
	pgt_exec(db, "ALTER TABLE tag RENAME COLUMN owner TO holder");
	CU_ASSERT(pgt_fails(db, "INSERT INTO tag (name, holder) VALUES ('renamed', 'carol')",
	                    "SY010"));
	CU_ASSERT(pgt_fails(db, "UPDATE tag SET holder = 'dave' WHERE name = 'NULL'", "SY010"));
	pgt_exec(db, "SELECT synchro.install_fence_trigger('public.tag', 'tag', 'name', '',"
	             " 'holder')");
	pgt_exec(db, "INSERT INTO tag (name, holder) VALUES ('renamed', 'carol')");
	CU_ASSERT(wait_true(WAIT_ROWS, "SELECT EXISTS (SELECT 1 FROM synchro.changelog WHERE"
	                               " table_id = 'tag' AND pk = 'renamed'"
	                               " AND owner_after = 'carol')"));
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FROM synchro.changelog WHERE table_id = 'tag'"
	                         " AND owner_before IS NULL AND owner_after IS NULL"),
	                0);
	pgt_exec(db, "ALTER TABLE tag RENAME COLUMN holder TO owner;"
	             "SELECT synchro.install_fence_trigger('public.tag', 'tag', 'name', '',"
	             " 'owner')");
	CU_ASSERT_EQUAL(stop_walsync(o), 0);
}

/* ---- large transactions ---- */

/*
 * A transaction whose changelog write takes longer than the stale-heartbeat limit (2 s here;
 * the test holds a lock the write waits for), with a standby waiting: the holder's heartbeat
 * keeps the lease on its own connection, so no takeover fences the write and nothing is
 * redone. The transaction (20000 changes, batch_rows 500) is written in pieces of 4000,
 * each change once, in order.
 */
void test_large_transaction(void)
{
	extra_conf = "batch_rows = 500\n";
	pid_t x = start_walsync("X", NULL, NULL);
	CU_ASSERT_FATAL(wait_leader("X") > 0);
	pid_t y = start_walsync("Y", NULL, NULL);
	extra_conf = "";
	CU_ASSERT_FATAL(wait_log("Y", "standby: the writer lease is held by X", 10000));
	long long epoch = current_epoch();
	PGconn *hold = pgt_connect(NULL);
	pgt_exec(hold, "BEGIN");
	pgt_exec(hold, "LOCK TABLE synchro.changelog IN SHARE MODE");
	pgt_exec(db, "INSERT INTO item (id) SELECT g FROM generate_series(200000, 219999) g");
	CU_ASSERT(wait_true(WAIT_ROWS, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity"
	                               " WHERE application_name = 'synchro-walsync'"
	                               "   AND wait_event_type = 'Lock')"));
	/* Held past the stale-heartbeat limit on purpose (not a timed assertion). */
	pause_ms(STALE_S * 1000 + 2000);
	pgt_exec(hold, "COMMIT");
	PQfinish(hold);
	CU_ASSERT(wait_true(WAIT_ROWS * 3, "SELECT count(*) = 20000 FROM synchro.changelog"
	                                   " WHERE table_id = 'item' AND pk ~ '^2[01][0-9]{4}$'"));
	CU_ASSERT_EQUAL(current_epoch(), epoch);
	CU_ASSERT_FALSE(log_has("Y", "taken over from X"));
	CU_ASSERT(log_has("X", "wrote a piece of"));
	/* One transaction: one commit LSN, ordinals up to 19999, each change once. */
	CU_ASSERT_EQUAL(peek_int("SELECT count(DISTINCT commit_lsn) * 1000000 + max(ordinal)"
	                         "  FROM synchro.changelog WHERE table_id = 'item'"
	                         "   AND pk ~ '^2[01][0-9]{4}$'"),
	                1000000 + 19999);
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) - count(DISTINCT version) FROM synchro.changelog"
	                         " WHERE table_id = 'item' AND pk ~ '^2[01][0-9]{4}$'"),
	                0);
	CU_ASSERT_EQUAL(stop_walsync(y), 0);
	CU_ASSERT_EQUAL(stop_walsync(x), 0);
}
