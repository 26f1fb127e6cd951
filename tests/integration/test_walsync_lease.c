/* SPDX-License-Identifier: BSD-2-Clause */
/* test_walsync.pgt: one writer (the lease of migration 3): the lease guard and status, a
 * crash before the flush confirmation, takeovers after kill -9 and SIGSTOP, reconnects, and
 * compacted entries never materialized again. */
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

/* The guard of every changelog statement, through the store: a lease whose token or epoch
 * no longer matches, or that expired, writes nothing; the heartbeat never claims. */
void test_lease_guard(void)
{
	sy_error err = {0};
	PGconn *c = sy_store_connect(NULL, "test_walsync", &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	PGresult *r = pgt_query(db,
	                        "SELECT writer_id, writer_epoch, fencing_token FROM"
	                        " synchro.writer_lease WHERE role = 'walsync'",
	                        0, NULL);
	CU_ASSERT_FATAL(r != NULL && PQntuples(r) == 1);
	sy_store_lease live;
	memset(&live, 0, sizeof live);
	snprintf(live.writer_id, sizeof live.writer_id, "%s", PQgetvalue(r, 0, 0));
	live.epoch = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
	snprintf(live.token, sizeof live.token, "%s", PQgetvalue(r, 0, 2));
	PQclear(r);
	CU_ASSERT_STRING_EQUAL(live.writer_id, "A");

	sy_store_changes *b = sy_store_changes_new(10);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	sy_store_change ch = {.commit_lsn = UINT64_C(0xFFFFFFFF00000000),
	                      .ordinal = 0,
	                      .xid = 1,
	                      .commit_time = 0,
	                      .table_id = "item",
	                      .pk = "guard",
	                      .version = "v-guard",
	                      .deleted = false};
	CU_ASSERT_TRUE_FATAL(sy_store_changes_add(b, &ch));
	sy_store_written wr;
	sy_store_lease other = live;
	snprintf(other.token, sizeof other.token, "%s", "00000000-0000-4000-8000-000000000000");
	CU_ASSERT_EQUAL(sy_store_changelog_write(c, &other, b, false, NULL, NULL, &wr, &err),
	                SY_STORE_CONFLICT);
	other = live;
	other.epoch = live.epoch - 1;
	CU_ASSERT_EQUAL(sy_store_changelog_write(c, &other, b, false, NULL, NULL, &wr, &err),
	                SY_STORE_CONFLICT);
	other.epoch = live.epoch + 1;
	CU_ASSERT_EQUAL(sy_store_changelog_write(c, &other, b, false, NULL, NULL, &wr, &err),
	                SY_STORE_CONFLICT);
	/* The holder's own lease passes the guard; once expired, it does not. Both inside one
	 * transaction that is rolled back, so A's changelog never sees them. */
	pgt_exec(c, "BEGIN");
	CU_ASSERT_EQUAL(sy_store_changelog_write(c, &live, b, false, NULL, NULL, &wr, &err),
	                SY_STORE_OK);
	CU_ASSERT_EQUAL(wr.inserted, 1);
	pgt_exec(c, "UPDATE synchro.writer_lease SET lease_until = now() - interval '1 second'");
	CU_ASSERT_EQUAL(sy_store_changelog_write(c, &live, b, false, NULL, NULL, &wr, &err),
	                SY_STORE_CONFLICT);
	pgt_exec(c, "ROLLBACK");
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FROM synchro.changelog WHERE pk = 'guard'"), 0);
	/* The heartbeat of a lease that is not the holder's never takes it. */
	other = live;
	snprintf(other.writer_id, sizeof other.writer_id, "%s", "intruder");
	snprintf(other.token, sizeof other.token, "%s", "00000000-0000-4000-8000-000000000000");
	CU_ASSERT_EQUAL(sy_store_lease_renew(c, &other, 60, NULL, &err), SY_STORE_CONFLICT);
	CU_ASSERT_EQUAL(sy_store_lease_release(c, &other, &err), SY_STORE_OK);
	/* A claim against a live holder is no takeover. */
	bool acquired = true;
	char prev[SY_STORE_WRITER_ID_MAX + 1];
	CU_ASSERT_EQUAL(sy_store_lease_claim(c, "intruder", 60, 60, &other, &acquired, prev, &err),
	                SY_STORE_OK);
	CU_ASSERT_FALSE(acquired);
	CU_ASSERT_STRING_EQUAL(prev, "A");
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FROM synchro.writer_lease WHERE writer_id = 'A'"
	                         " AND writer_epoch = %lld AND fencing_token = '%s'"
	                         " AND lease_until > now()",
	                         live.epoch, live.token),
	                1);
	sy_store_changes_free(b);
	sy_store_disconnect(c);
}

/* synchroctl lease status: holder, epoch, expiry, heartbeat age, slot and lag. */
void test_lease_status(void)
{
	/* The heartbeat reports progress within a renewal. */
	CU_ASSERT(wait_true(5000, "SELECT materialized_lsn IS NOT NULL AND lag_ms IS NOT NULL"
	                          " AND slot = 'synchro' FROM synchro.writer_lease"));
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "'%s' lease status 2>&1", ctl_bin);
	FILE *p = popen(cmd, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	char out[4096];
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = '\0';
	int st = pclose(p);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	long long epoch =
	        peek_int("SELECT writer_epoch FROM synchro.writer_lease WHERE role = 'walsync'");
	char line[128];
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "holder: A\n"));
	snprintf(line, sizeof line, "writer_epoch: %lld\n", epoch);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, line));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "fencing_token: "));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "s)\nheartbeat_at: "));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "(expires in "));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "(age "));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "slot: synchro (active, pid "));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\nconfirmed_flush_lsn: "));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\nlag_bytes: "));
	CU_ASSERT_PTR_NULL(strstr(out, "lag_bytes: -"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\nmaterialized_lsn: "));
	CU_ASSERT_PTR_NULL(strstr(out, "lag_ms: -"));
	if (!strstr(out, "holder: A\n"))
		fprintf(stderr, "lease status said:\n%s", out);
}

long long current_epoch(void)
{
	return peek_int("SELECT writer_epoch FROM synchro.writer_lease WHERE role = 'walsync'");
}

/* A writer that dies after its changelog commit and before confirming it: the slot delivers
 * those transactions again to the next writer, which adds nothing twice. */
void test_crash_before_confirm(void)
{
	long long a_epoch = current_epoch();
	CU_ASSERT_EQUAL(stop_walsync(leader_a), 0);
	CU_ASSERT(log_has("A", "released the writer lease"));
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FROM synchro.writer_lease WHERE"
	                         " lease_until <= now()"),
	                1);
	pid_t c = start_walsync("C", "SYNCHRO_WALSYNC_TEST_EXIT_AFTER_COMMITS", "1");
	long long c_epoch = wait_leader("C");
	CU_ASSERT_FATAL(c_epoch == a_epoch + 1);
	char *from = last_lsn();
	nexpected = 0;
	pgt_exec(db, "BEGIN");
	for (int id = 10; id < 13; id++) {
		char sql[128], pk[16];
		snprintf(sql, sizeof sql, "INSERT INTO item (id) VALUES (%d)", id);
		snprintf(pk, sizeof pk, "%d", id);
		pgt_exec(db, sql);
		expect("item", pk, NULL, NULL, NULL, NULL, NULL);
	}
	pgt_exec(db, "COMMIT");
	int st = wait_exit(c, WAIT_ROWS);
	CU_ASSERT_FATAL(st != -1);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 75);
	check_changelog_since(from);
	/* Written, not confirmed: the slot will deliver that transaction again (its walsender
	 * notices the exit a moment later). */
	char *crashed = last_lsn();
	CU_ASSERT(wait_true(5000,
	                    "SELECT count(*) = 1 FROM pg_replication_slots WHERE slot_name ="
	                    " 'synchro' AND NOT active AND confirmed_flush_lsn <= '%s'",
	                    crashed));
	/* The dead writer's lease stays until its heartbeat is stale; then D takes over. */
	pid_t d = start_walsync("D", NULL, NULL);
	long long d_epoch = wait_leader("D");
	CU_ASSERT(d_epoch == c_epoch + 1);
	CU_ASSERT(wait_log("D", "taken over from C", 5000));
	pgt_exec(db, "INSERT INTO item (id) VALUES (13)");
	expect("item", "13", NULL, NULL, NULL, NULL, NULL);
	CU_ASSERT(wait_true(WAIT_ROWS, "SELECT EXISTS (SELECT 1 FROM synchro.changelog WHERE"
	                               " table_id = 'item' AND pk = '13')"));
	check_changelog_since(from);
	CU_ASSERT(wait_true(WAIT_ROWS,
	                    "SELECT confirmed_flush_lsn > '%s' FROM pg_replication_slots"
	                    " WHERE slot_name = 'synchro'",
	                    crashed));
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FROM synchro.changelog WHERE commit_lsn = '%s'"
	                         " AND written_epoch = %lld",
	                         crashed, c_epoch),
	                3);
	free(crashed);
	free(from);
	(void)d;
}

/* Transactions of a writer loop: each inserts (and every fifth also updates) item rows and
 * records, in the same transaction, every version it made, with its sequence. */
static int writer_loop(int transactions)
{
	PGconn *c = PQconnectdb("");
	if (PQstatus(c) != CONNECTION_OK)
		return 1;
	int next_id = 1000;
	for (int t = 0; t < transactions; t++) {
		char sql[2048];
		size_t n = (size_t)snprintf(sql, sizeof sql, "BEGIN;");
		int rows = 1 + t % 3;
		for (int k = 0; k < rows; k++, next_id++)
			n += (size_t)snprintf(
			        sql + n, sizeof sql - n,
			        "INSERT INTO item (id) VALUES (%d);"
			        "INSERT INTO wt (version) SELECT version FROM"
			        " synchro.row_fences WHERE table_id = 'item' AND pk = '%d';",
			        next_id, next_id);
		if (t % 5 == 4)
			n += (size_t)snprintf(
			        sql + n, sizeof sql - n,
			        "UPDATE item SET qty = %d WHERE id = %d;"
			        "INSERT INTO wt (version) SELECT version FROM"
			        " synchro.row_fences WHERE table_id = 'item' AND pk = '%d';",
			        t, next_id - 4, next_id - 4);
		snprintf(sql + n, sizeof sql - n, "COMMIT");
		PGresult *r = PQexec(c, sql);
		bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
		PQclear(r);
		if (!ok) {
			fprintf(stderr, "writer loop: %s", PQerrorMessage(c));
			PQfinish(c);
			return 1;
		}
	}
	PQfinish(c);
	return 0;
}

/* kill -9 of the leading walsync in the middle of a stream: the standby takes over and the
 * changelog holds every transition of the writer loop exactly once, in commit order. */
void test_kill9_takeover(void)
{
	pid_t d = 0;
	for (int i = 0; i < nprocs; i++)
		if (strcmp(procs[i].name, "D") == 0)
			d = procs[i].pid;
	CU_ASSERT_FATAL(d > 0);
	long long d_epoch = current_epoch();
	pid_t e = start_walsync("E", NULL, NULL);
	CU_ASSERT_FATAL(wait_log("E", "standby: the writer lease is held by D", 5000));
	pgt_exec(db, "CREATE TABLE wt (seq bigserial, version text PRIMARY KEY)");
	fflush(NULL);
	pid_t w = fork();
	CU_ASSERT_FATAL(w >= 0);
	if (w == 0)
		_exit(writer_loop(3000));
	CU_ASSERT(wait_true(WAIT_ROWS, "SELECT count(*) >= 200 FROM synchro.changelog c JOIN wt"
	                               " USING (version)"));
	int wst = 0;
	CU_ASSERT_EQUAL(waitpid(w, &wst, WNOHANG), 0); /* still writing */
	signal_proc(d, SIGKILL);
	CU_ASSERT(wait_exit(d, 5000) != -1);
	long long e_epoch = wait_leader("E");
	CU_ASSERT(e_epoch == d_epoch + 1);
	long long end = now_ms() + 120000;
	pid_t done;
	while ((done = waitpid(w, &wst, WNOHANG)) == 0 && now_ms() < end)
		pause_ms(20);
	if (done != w) {
		signal_proc(w, SIGKILL);
		waitpid(w, &wst, 0);
		CU_FAIL_FATAL("the writer loop did not finish");
	}
	CU_ASSERT(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
	long long made = peek_int("SELECT count(*) FROM wt");
	CU_ASSERT(made >= 3000 * 2);
	CU_ASSERT(wait_true(60000, "SELECT count(*) = (SELECT count(*) FROM wt) FROM"
	                           " synchro.changelog c JOIN wt USING (version)"));
	/* No gap: every transition made is there; no duplicate: none twice. */
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FROM wt LEFT JOIN synchro.changelog c"
	                         " USING (version) WHERE c.version IS NULL"),
	                0);
	CU_ASSERT_EQUAL(
	        peek_int("SELECT count(*) - count(DISTINCT version) FROM synchro.changelog"), 0);
	/* Commit order: one writer, so the changelog follows its sequence. */
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FROM (SELECT wt.seq < lag(wt.seq) OVER"
	                         " (ORDER BY c.commit_lsn, c.ordinal) AS back FROM"
	                         " synchro.changelog c JOIN wt USING (version)) t WHERE back"),
	                0);
	/* Both writers wrote part of the stream. */
	CU_ASSERT_EQUAL(peek_int("SELECT count(DISTINCT written_epoch) FROM synchro.changelog c"
	                         " JOIN wt USING (version)"),
	                2);
	CU_ASSERT(log_has("E", "stopped the previous reader of slot synchro") ||
	          log_has("E", "streaming slot synchro"));
	(void)e;
}

static pid_t find_pid(const char *name)
{
	for (int i = 0; i < nprocs; i++)
		if (strcmp(procs[i].name, name) == 0 && procs[i].running)
			return procs[i].pid;
	return 0;
}

/* A leader paused (SIGSTOP) past a takeover and then resumed cannot write: its write is
 * refused, it goes back to standby, and the changelog has each transition once. Then the
 * same for a holder paused while idle, whose heartbeat is refused. */
void test_paused_leader(void)
{
	CU_ASSERT_EQUAL(stop_walsync(find_pid("E")), 0);
	pid_t g = start_walsync("G", "SYNCHRO_WALSYNC_TEST_STOP_BEFORE_WRITE", "1");
	long long g_epoch = wait_leader("G");
	CU_ASSERT_FATAL(g_epoch > 0);
	pid_t h = start_walsync("H", NULL, NULL);
	CU_ASSERT_FATAL(wait_log("H", "standby: the writer lease is held by G", 5000));
	char *from = last_lsn();
	nexpected = 0;
	pgt_exec(db, "INSERT INTO item (id) VALUES (20)");
	expect("item", "20", NULL, NULL, NULL, NULL, NULL);
	/* G decoded it and stopped right before its changelog write. */
	CU_ASSERT_FATAL(wait_stopped(g, WAIT_ROWS));
	long long h_epoch = wait_leader("H");
	CU_ASSERT_FATAL(h_epoch == g_epoch + 1);
	CU_ASSERT(wait_true(WAIT_ROWS,
	                    "SELECT EXISTS (SELECT 1 FROM synchro.changelog WHERE"
	                    " table_id = 'item' AND pk = '20' AND written_epoch = %lld)",
	                    h_epoch));
	signal_proc(g, SIGCONT);
	CU_ASSERT(wait_log("G", "lost the writer lease", WAIT_TAKEOVER));
	CU_ASSERT(log_has("G", "the writer lease refused the changelog write"));
	CU_ASSERT_EQUAL(current_epoch(), h_epoch);
	CU_ASSERT_EQUAL(waitpid(g, NULL, WNOHANG), 0); /* alive, a standby */
	pgt_exec(db, "INSERT INTO item (id) VALUES (21)");
	expect("item", "21", NULL, NULL, NULL, NULL, NULL);
	CU_ASSERT(wait_true(WAIT_ROWS, "SELECT EXISTS (SELECT 1 FROM synchro.changelog WHERE"
	                               " table_id = 'item' AND pk = '21')"));
	check_changelog_since(from);

	/* H paused while idle: G takes over again; resumed, H's heartbeat is refused. */
	signal_proc(h, SIGSTOP);
	CU_ASSERT_FATAL(wait_stopped(h, 5000));
	long long g2_epoch = wait_leader("G");
	CU_ASSERT_FATAL(g2_epoch == h_epoch + 1);
	pgt_exec(db, "INSERT INTO item (id) VALUES (22)");
	expect("item", "22", NULL, NULL, NULL, NULL, NULL);
	CU_ASSERT(wait_true(WAIT_ROWS,
	                    "SELECT EXISTS (SELECT 1 FROM synchro.changelog WHERE"
	                    " table_id = 'item' AND pk = '22' AND written_epoch = %lld)",
	                    g2_epoch));
	signal_proc(h, SIGCONT);
	CU_ASSERT(wait_log("H", "lost the writer lease", WAIT_TAKEOVER));
	CU_ASSERT_EQUAL(current_epoch(), g2_epoch);
	pgt_exec(db, "INSERT INTO item (id) VALUES (23)");
	expect("item", "23", NULL, NULL, NULL, NULL, NULL);
	CU_ASSERT(wait_true(WAIT_ROWS, "SELECT EXISTS (SELECT 1 FROM synchro.changelog WHERE"
	                               " table_id = 'item' AND pk = '23')"));
	check_changelog_since(from);
	CU_ASSERT_EQUAL(
	        peek_int("SELECT count(*) - count(DISTINCT version) FROM synchro.changelog"), 0);
	CU_ASSERT_EQUAL(stop_walsync(h), 0);
	CU_ASSERT_EQUAL(stop_walsync(g), 0);
	free(from);
}

/* PostgreSQL restarts under a running leader: it reconnects, renews or claims the lease
 * again, and streams on from the slot; nothing is lost or doubled. */
void test_reconnect(void)
{
	const char *bindir = getenv("PG_BINDIR");
	const char *data = getenv("SYNCHRO_PG_DATA");
	const char *log = getenv("SYNCHRO_PG_LOG");
	const char *run = getenv("SYNCHRO_PG_RUN");
	if (!bindir || !data || !log) {
		CU_FAIL("the fixture does not say how to restart the server");
		return;
	}
	pid_t r = start_walsync("R", NULL, NULL);
	CU_ASSERT_FATAL(wait_leader("R") > 0);
	char *from = last_lsn();
	nexpected = 0;
	pgt_exec(db, "INSERT INTO item (id) VALUES (30)");
	expect("item", "30", NULL, NULL, NULL, NULL, NULL);
	CU_ASSERT(wait_true(WAIT_ROWS, "SELECT EXISTS (SELECT 1 FROM synchro.changelog WHERE"
	                               " table_id = 'item' AND pk = '30')"));
	char cmd[4096];
	snprintf(cmd, sizeof cmd,
	         "%s '%s/pg_ctl' -D '%s' -l '%s' -w -t 60 -m fast restart >/dev/null",
	         run ? run : "", bindir, data, log);
	CU_ASSERT_FATAL(system(cmd) == 0);
	PQreset(db);
	CU_ASSERT_FATAL(PQstatus(db) == CONNECTION_OK);
	pgt_exec(db, "SET client_min_messages = warning");
	pgt_exec(db, "INSERT INTO item (id) VALUES (31)");
	expect("item", "31", NULL, NULL, NULL, NULL, NULL);
	CU_ASSERT(wait_true(WAIT_TAKEOVER, "SELECT EXISTS (SELECT 1 FROM synchro.changelog WHERE"
	                                   " table_id = 'item' AND pk = '31')"));
	check_changelog_since(from);
	CU_ASSERT(wait_leader("R") > 0);
	CU_ASSERT_EQUAL(waitpid(r, NULL, WNOHANG), 0);
	CU_ASSERT_EQUAL(stop_walsync(r), 0);
	CU_ASSERT_EQUAL(
	        peek_int("SELECT count(*) - count(DISTINCT version) FROM synchro.changelog"), 0);
	free(from);
}

/* Entries compacted away (synchroctl changelog compact raises synchro.changelog_horizon) do
 * not come back when the slot delivers their transactions again. */
void test_compacted_not_resurrected(void)
{
	if (peek_int("SELECT count(*) FROM pg_class WHERE oid ="
	             " to_regclass('synchro.changelog_horizon')") != 1) {
		CU_FAIL("no synchro.changelog_horizon (migration 6)");
		return;
	}
	pid_t k = start_walsync("K", "SYNCHRO_WALSYNC_TEST_EXIT_AFTER_COMMITS", "1");
	CU_ASSERT_FATAL(wait_leader("K") > 0);
	pgt_exec(db, "INSERT INTO item (id) VALUES (40)");
	int st = wait_exit(k, WAIT_ROWS);
	CU_ASSERT_FATAL(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 75);
	char *top = last_lsn();
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FROM pg_replication_slots WHERE slot_name ="
	                         " 'synchro' AND confirmed_flush_lsn <= '%s'",
	                         top),
	                1);
	/* Compaction as synchroctl does it: everything up to the newest entry. */
	pgt_exec(db, "BEGIN");
	char sql[512];
	snprintf(sql, sizeof sql,
	         "UPDATE synchro.changelog_horizon SET commit_lsn = '%s', ordinal ="
	         " (SELECT max(ordinal) FROM synchro.changelog WHERE commit_lsn = '%s'),"
	         " compacted_at = now()",
	         top, top);
	pgt_exec(db, sql);
	snprintf(sql, sizeof sql, "DELETE FROM synchro.changelog WHERE commit_lsn <= '%s'", top);
	pgt_exec(db, sql);
	pgt_exec(db, "COMMIT");
	pid_t l = start_walsync("L", NULL, NULL);
	CU_ASSERT_FATAL(wait_leader("L") > 0);
	pgt_exec(db, "INSERT INTO item (id) VALUES (41)");
	CU_ASSERT(wait_true(WAIT_ROWS, "SELECT EXISTS (SELECT 1 FROM synchro.changelog WHERE"
	                               " table_id = 'item' AND pk = '41')"));
	CU_ASSERT_EQUAL(
	        peek_int("SELECT count(*) FROM synchro.changelog WHERE commit_lsn <= '%s'", top),
	        0);
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FROM synchro.changelog"), 1);
	CU_ASSERT_EQUAL(stop_walsync(l), 0);
	free(top);
}
