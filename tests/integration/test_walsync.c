/* SPDX-License-Identifier: BSD-2-Clause */
/* synchro-walsync processes against a real PostgreSQL (tests/integration/with-pg): changelog
 * contents against the fence transitions, mutation ids, commit order, materialized epochs,
 * the lease guard, a crash before the flush confirmation, kill -9 and SIGSTOP takeovers. */
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

#define CLIENT "c0000000-0000-4000-8000-0000000000c1"
#define MUT1   "a0000000-0000-4000-8000-000000000001"
#define MUT2   "a0000000-0000-4000-8000-000000000002"
#define MUT3   "a0000000-0000-4000-8000-000000000003"

/* Short lease timings: a takeover in about three seconds. */
#define LEASE_S 3
#define RENEW_S 1
#define STALE_S 2
/* Bounds of every wait (milliseconds). */
#define WAIT_TAKEOVER 20000
#define WAIT_ROWS     20000

static PGconn *db; /* the fixture's superuser */
static char tmpdir[512];
static char walsync_bin[1024];
static char ctl_bin[1024];

/* Every walsync this suite started, reaped at the end. */
typedef struct {
	char name[16];
	pid_t pid;
	bool running;
} proc;
#define MAX_PROCS 128
static proc procs[MAX_PROCS];
static int nprocs;

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void pause_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

/* The first value of a query, without recording a failure (for polling); a new string the
 * caller frees, or NULL on SQL NULL, no row or an error. */
static char *peek(const char *fmt, ...) SY_PRINTF(1, 2);
static char *peek(const char *fmt, ...)
{
	char sql[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	PGresult *r = PQexec(db, sql);
	char *v = NULL;
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) >= 1 && !PQgetisnull(r, 0, 0))
		v = strdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	return v;
}

static long long peek_int(const char *fmt, ...) SY_PRINTF(1, 2);
static long long peek_int(const char *fmt, ...)
{
	char sql[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	char *v = peek("%s", sql);
	long long x = v ? strtoll(v, NULL, 10) : -1;
	free(v);
	return x;
}

/* Polls sql (one boolean) until it is true, at most ms; whether it became true. */
static bool wait_true(int ms, const char *fmt, ...) SY_PRINTF(2, 3);
static bool wait_true(int ms, const char *fmt, ...)
{
	char sql[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	long long end = now_ms() + ms;
	for (;;) {
		char *v = peek("%s", sql);
		bool yes = v && strcmp(v, "t") == 0;
		free(v);
		if (yes)
			return true;
		if (now_ms() >= end) {
			fprintf(stderr, "timed out after %d ms waiting for: %s\n", ms, sql);
			return false;
		}
		pause_ms(20);
	}
}

/* Lines appended to the [walsync] section of the next configurations written. */
static const char *extra_conf = "";

static void write_conf(const char *name, const char *writer_id)
{
	char path[sizeof tmpdir + 64];
	snprintf(path, sizeof path, "%s/%s.conf", tmpdir, name);
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(99);
	}
	fprintf(f,
	        "[walsync]\nwriter_id = %s\nlease_s = %d\nrenew_s = %d\n"
	        "stale_heartbeat_s = %d\nlag_log_s = 1\n%s[log]\nlevel = debug\n",
	        writer_id, LEASE_S, RENEW_S, STALE_S, extra_conf);
	fclose(f);
}

/* Starts synchro-walsync with writer_id name, its log in tmpdir/name.log; env_name, when
 * set, is one test switch of the environment with its value. */
static pid_t start_walsync(const char *name, const char *env_name, const char *env_value)
{
	write_conf(name, name);
	char conf[sizeof tmpdir + 64], log[sizeof tmpdir + 64];
	snprintf(conf, sizeof conf, "%s/%s.conf", tmpdir, name);
	snprintf(log, sizeof log, "%s/%s.log", tmpdir, name);
	if (nprocs >= MAX_PROCS) {
		fprintf(stderr, "test_walsync: more than %d walsync processes\n", MAX_PROCS);
		exit(99);
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(99);
	}
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 2);
			close(fd);
		}
		if (env_name)
			setenv(env_name, env_value, 1);
		execl(walsync_bin, walsync_bin, "-c", conf, (char *)NULL);
		_exit(127);
	}
	snprintf(procs[nprocs].name, sizeof procs[nprocs].name, "%s", name);
	procs[nprocs].pid = pid;
	procs[nprocs].running = true;
	nprocs++;
	return pid;
}

/* kill() of one started process; never 0 or -1 (a process group, everything). */
static void signal_proc(pid_t pid, int sig)
{
	if (pid > 0)
		kill(pid, sig);
	else
		CU_FAIL("no such walsync process");
}

static proc *find_proc(pid_t pid)
{
	for (int i = 0; i < nprocs; i++)
		if (procs[i].pid == pid)
			return &procs[i];
	return NULL;
}

/* Waits for pid to exit (at most ms); its wait status, or -1 when it did not. */
static int wait_exit(pid_t pid, int ms)
{
	if (pid <= 0)
		return -1;
	long long end = now_ms() + ms;
	for (;;) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid) {
			proc *p = find_proc(pid);
			if (p)
				p->running = false;
			return st;
		}
		if (now_ms() >= end)
			return -1;
		pause_ms(20);
	}
}

/* Waits until pid is stopped (SIGSTOP); whether it is. */
static bool wait_stopped(pid_t pid, int ms)
{
	if (pid <= 0)
		return false;
	long long end = now_ms() + ms;
	for (;;) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG | WUNTRACED);
		if (r == pid && WIFSTOPPED(st))
			return true;
		if (r == pid) {
			proc *p = find_proc(pid);
			if (p)
				p->running = false;
			return false;
		}
		if (now_ms() >= end)
			return false;
		pause_ms(20);
	}
}

/* SIGTERM, then the exit status (0 expected); SIGKILL after the bound. */
static int stop_walsync(pid_t pid)
{
	if (pid <= 0) {
		CU_FAIL("no such walsync process");
		return -1;
	}
	signal_proc(pid, SIGCONT);
	signal_proc(pid, SIGTERM);
	int st = wait_exit(pid, 10000);
	if (st == -1) {
		signal_proc(pid, SIGKILL);
		st = wait_exit(pid, 10000);
		return -1;
	}
	return st;
}

static bool log_has(const char *name, const char *text)
{
	char path[sizeof tmpdir + 64];
	snprintf(path, sizeof path, "%s/%s.log", tmpdir, name);
	char *log = sy_test_read_file(path, NULL);
	bool yes = log && strstr(log, text) != NULL;
	free(log);
	return yes;
}

static bool wait_log(const char *name, const char *text, int ms)
{
	long long end = now_ms() + ms;
	while (!log_has(name, text)) {
		if (now_ms() >= end) {
			fprintf(stderr, "timed out waiting for '%s' in %s.log\n", text, name);
			return false;
		}
		pause_ms(20);
	}
	return true;
}

/*
 * Waits until writer_id holds the lease and streams from the slot; its epoch, or -1. An
 * active slot alone is not enough: the walsender that creates it holds it too, before its
 * consistent point, and a write committed then is never decoded (the test's first write went
 * missing that way on a loaded machine). A walsender past 'startup' has run START_REPLICATION.
 */
static long long wait_leader(const char *writer_id)
{
	if (!wait_true(WAIT_TAKEOVER,
	               "SELECT EXISTS (SELECT 1 FROM synchro.writer_lease l,"
	               " pg_replication_slots s JOIN pg_stat_replication r ON r.pid = s.active_pid"
	               " WHERE l.role = 'walsync' AND l.writer_id = '%s'"
	               " AND s.slot_name = 'synchro' AND s.active AND r.state <> 'startup')",
	               writer_id))
		return -1;
	return peek_int("SELECT writer_epoch FROM synchro.writer_lease WHERE role = 'walsync'");
}

/* The fence of (table_id, pk) as "state|version|owner" (the state the last transition
 * left), into out. */
static void fence_of(const char *table_id, const char *pk, char *out, size_t size)
{
	const char *p[] = {table_id, pk};
	char *v = pgt_value(db,
	                    "SELECT state || '|' || version FROM synchro.row_fences"
	                    " WHERE table_id = $1 AND pk = $2",
	                    2, p);
	snprintf(out, size, "%s", v ? v : "<none>");
	free(v);
}

/* The expected changelog, one line per transition: table|pk|state|version|mutation|client|
 * user|owner_before|owner_after. */
static char expected[64][512];
static int nexpected;

static void expect(const char *table_id, const char *pk, const char *mutation, const char *client,
                   const char *user, const char *before, const char *after)
{
	char fence[256];
	fence_of(table_id, pk, fence, sizeof fence);
	snprintf(expected[nexpected++], sizeof expected[0], "%s|%s|%s|%s|%s|%s|%s|%s", table_id, pk,
	         fence, mutation ? mutation : "-", client ? client : "-", user ? user : "-",
	         before ? before : "-", after ? after : "-");
}

/* The changelog rows from position (after_lsn, exclusive) in position order, as expect()
 * formats them; returns how many it compared equal, and fails the test on any difference. */
static void check_changelog_since(const char *after_lsn)
{
	const char *p[] = {after_lsn};
	PGresult *r =
	        pgt_query(db,
	                  "SELECT table_id || '|' || pk || '|' || state || '|' || version || '|' ||"
	                  "       coalesce(mutation_id::text, '-') || '|' || "
	                  "coalesce(client_id::text, '-') ||"
	                  "       '|' || coalesce(user_id, '-') || '|' || coalesce(owner_before, "
	                  "'-') || '|' ||"
	                  "       coalesce(owner_after, '-')"
	                  "  FROM synchro.changelog WHERE commit_lsn > $1::pg_lsn ORDER BY "
	                  "commit_lsn, ordinal",
	                  1, p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(PQntuples(r), nexpected);
	for (int i = 0; i < PQntuples(r) && i < nexpected; i++) {
		if (strcmp(PQgetvalue(r, i, 0), expected[i]) != 0)
			fprintf(stderr, "changelog row %d:\n  got  %s\n  want %s\n", i,
			        PQgetvalue(r, i, 0), expected[i]);
		CU_ASSERT_STRING_EQUAL(PQgetvalue(r, i, 0), expected[i]);
	}
	PQclear(r);
}

static char *last_lsn(void)
{
	char *v = peek("SELECT coalesce(max(commit_lsn), '0/0')::text FROM synchro.changelog");
	return v ? v : strdup("0/0");
}

/* Leader A streams; direct application writes appear with table, pk, version, state and
 * owners of each fence transition, in order, exactly once. */
static pid_t leader_a;

static void test_direct_writes(void)
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
static void test_mutation_ids(void)
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
static void test_commit_order(void)
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
static void test_epochs(void)
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

/* The guard of every changelog statement, through the store: a lease whose token or epoch
 * no longer matches, or that expired, writes nothing; the heartbeat never claims. */
static void test_lease_guard(void)
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
static void test_lease_status(void)
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

static long long current_epoch(void)
{
	return peek_int("SELECT writer_epoch FROM synchro.writer_lease WHERE role = 'walsync'");
}

/* A writer that dies after its changelog commit and before confirming it: the slot delivers
 * those transactions again to the next writer, which adds nothing twice. */
static void test_crash_before_confirm(void)
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
static void test_kill9_takeover(void)
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
static void test_paused_leader(void)
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
static void test_reconnect(void)
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
static void test_compacted_not_resurrected(void)
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
static void test_restart_is_continuous(void)
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
static void test_slot_dropped(void)
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
static void test_slot_recreated(void)
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
static void test_forged_messages(void)
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
static void test_owner_column_renamed(void)
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

/* ---- large transactions (issue 16, item 5) ---- */

/*
 * A transaction whose changelog write takes longer than the stale-heartbeat limit (2 s here;
 * the test holds a lock the write waits for), with a standby waiting: the holder's heartbeat
 * keeps the lease on its own connection, so no takeover fences the write and nothing is
 * redone. The transaction (20000 changes, batch_rows 500) is written in pieces of 4000,
 * each change once, in order.
 */
static void test_large_transaction(void)
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

static void dump_logs(void)
{
	for (int i = 0; i < nprocs; i++) {
		char path[sizeof tmpdir + 64];
		snprintf(path, sizeof path, "%s/%.15s.log", tmpdir, procs[i].name);
		char *log = sy_test_read_file(path, NULL);
		fprintf(stderr, "==== walsync %s (%s) ====\n%s", procs[i].name, path,
		        log ? log : "");
		free(log);
	}
}

static void remove_tmpdir(void)
{
	char cmd[sizeof tmpdir + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpdir);
}

int main(void)
{
	pgt_require_fixture();
	const char *build = getenv("SYNCHRO_BUILDDIR");
	snprintf(walsync_bin, sizeof walsync_bin, "%s/src/walsync/synchro-walsync",
	         build ? build : ".");
	snprintf(ctl_bin, sizeof ctl_bin, "%s/src/ctl/synchroctl", build ? build : ".");
	if (access(walsync_bin, X_OK) != 0 || access(ctl_bin, X_OK) != 0) {
		fprintf(stderr, "test_walsync: %s or %s not built\n", walsync_bin, ctl_bin);
		return 99;
	}
	const char *base = getenv("TMPDIR");
	snprintf(tmpdir, sizeof tmpdir, "%s/test_walsync.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 99;
	}
	db = pgt_connect(NULL);
	pgt_must(db, "SET client_min_messages = warning");
	if (pgt_migrate(db, sy_sql_migrations, sy_sql_migration_count) !=
	    (int)sy_sql_migration_count) {
		fprintf(stderr, "the migrations did not apply\n");
		return 99;
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/contrib/example/schema.sql", sy_test_src_dir());
	char *schema = sy_test_read_file(path, NULL);
	if (!schema) {
		fprintf(stderr, "cannot read %s\n", path);
		return 99;
	}
	pgt_must(db, schema);
	free(schema);
	char cmd[6000];
	snprintf(cmd, sizeof cmd,
	         "'%s' schema publish '%s/contrib/example/manifest.json' >/dev/null", ctl_bin,
	         sy_test_src_dir());
	if (system(cmd) != 0) {
		fprintf(stderr, "synchroctl schema publish failed\n");
		return 99;
	}
	/* A text key, for the quoting of the changelog's array parameters. */
	pgt_must(db, "CREATE TABLE public.tag (name text PRIMARY KEY, owner text NOT NULL);"
	             "SELECT synchro.install_fence_trigger('public.tag', 'tag', 'name', '',"
	             " 'owner')");

	static const CU_TestInfo tests[] = {
	        {"direct writes appear as their fence transitions", test_direct_writes},
	        {"mutation, client and user ids travel with the change", test_mutation_ids},
	        {"changelog order is commit order", test_commit_order},
	        {"materialized_write_epoch follows accepted pushes", test_epochs},
	        {"the lease guards every changelog statement", test_lease_guard},
	        {"synchroctl lease status", test_lease_status},
	        {"a crash before the flush confirmation adds nothing twice",
	         test_crash_before_confirm},
	        {"kill -9 of the leader: takeover without gap or duplicate", test_kill9_takeover},
	        {"a paused leader cannot write after a takeover", test_paused_leader},
	        {"reconnects when PostgreSQL restarts", test_reconnect},
	        {"compacted entries do not come back", test_compacted_not_resurrected},
	        {NULL, NULL},
	};
	sy_test_add_suite("walsync", tests);
	static const CU_TestInfo continuity[] = {
	        {"a restart on its own slot is no break", test_restart_is_continuous},
	        {"a dropped slot: cursors expire, accepted writes count as materialized",
	         test_slot_dropped},
	        {"a slot created again behind walsync's back is a break", test_slot_recreated},
	        {NULL, NULL},
	};
	static const CU_TestInfo forged[] = {
	        {"forged and malformed messages never reach the changelog", test_forged_messages},
	        {NULL, NULL},
	};
	if (sy_sql_migration_count >= 15)
		sy_test_add_suite("forged messages", forged);
	static const CU_TestInfo large[] = {
	        {"a transaction longer to write than the stale heartbeat", test_large_transaction},
	        {NULL, NULL},
	};
	sy_test_add_suite("large transactions", large);
	static const CU_TestInfo ddl[] = {
	        {"a renamed owner column: writes wait for the fence that names it",
	         test_owner_column_renamed},
	        {NULL, NULL},
	};
	if (sy_sql_migration_count >= 16)
		sy_test_add_suite("DDL between publishes", ddl);
	/* Migration 14 (stream_position) is where walsync starts keeping the position. */
	if (sy_sql_migration_count >= 14)
		sy_test_add_suite("slot continuity", continuity);
	int status = sy_test_run();
	for (int i = 0; i < nprocs; i++)
		if (procs[i].running && procs[i].pid > 0) {
			kill(procs[i].pid, SIGCONT);
			kill(procs[i].pid, SIGKILL);
			(void)wait_exit(procs[i].pid, 5000);
		}
	if (status != 0)
		dump_logs();
	remove_tmpdir();
	PQfinish(db);
	return status;
}
