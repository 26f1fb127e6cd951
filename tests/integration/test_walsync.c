/* SPDX-License-Identifier: BSD-2-Clause */
/* synchro-walsync processes against a real PostgreSQL (tests/integration/with-pg): changelog
 * contents against the fence transitions, mutation ids, commit order, materialized epochs,
 * the lease guard, a crash before the flush confirmation, kill -9 and SIGSTOP takeovers.
 * This file: the fixture, the walsync processes, waits, the expected changelog and main; the
 * tests are in test_walsync_changelog.c, test_walsync_lease.c, test_walsync_slot.c and
 * test_walsync_scopes.c. */
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

/* Short lease timings: a takeover in about three seconds. */
#define LEASE_S 3
#define RENEW_S 1

PGconn *db; /* the fixture's superuser */
static char tmpdir[512];
static char walsync_bin[1024];
char ctl_bin[1024];
proc procs[MAX_PROCS];
int nprocs;

long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void pause_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}
char *peek(const char *fmt, ...)
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
long long peek_int(const char *fmt, ...)
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
bool wait_true(int ms, const char *fmt, ...)
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

const char *test_tmpdir(void)
{
	return tmpdir;
}

/* Lines appended to the [walsync] section of the next configurations written. */
const char *extra_conf = "";

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
pid_t start_walsync(const char *name, const char *env_name, const char *env_value)
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
void signal_proc(pid_t pid, int sig)
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
int wait_exit(pid_t pid, int ms)
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
bool wait_stopped(pid_t pid, int ms)
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
int stop_walsync(pid_t pid)
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

bool log_has(const char *name, const char *text)
{
	char path[sizeof tmpdir + 64];
	snprintf(path, sizeof path, "%s/%s.log", tmpdir, name);
	char *log = sy_test_read_file(path, NULL);
	bool yes = log && strstr(log, text) != NULL;
	free(log);
	return yes;
}

bool wait_log(const char *name, const char *text, int ms)
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
long long wait_leader(const char *writer_id)
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
int nexpected;

void expect(const char *table_id, const char *pk, const char *mutation, const char *client,
            const char *user, const char *before, const char *after)
{
	char fence[256];
	fence_of(table_id, pk, fence, sizeof fence);
	snprintf(expected[nexpected++], sizeof expected[0], "%s|%s|%s|%s|%s|%s|%s|%s", table_id, pk,
	         fence, mutation ? mutation : "-", client ? client : "-", user ? user : "-",
	         before ? before : "-", after ? after : "-");
}

/* Compares the changelog rows from position (after_lsn, exclusive) in position order, as
 * expect() formats them, with the expected ones; fails the test on any difference. */
void check_changelog_since(const char *after_lsn)
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

char *last_lsn(void)
{
	char *v = peek("SELECT coalesce(max(commit_lsn), '0/0')::text FROM synchro.changelog");
	return v ? v : strdup("0/0");
}

/* Leader A streams; direct application writes appear with table, pk, version, state and
 * owners of each fence transition, in order, exactly once. */
pid_t leader_a;

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
	static const CU_TestInfo scopes[] = {
	        {"membership scopes: readers, comings, goings, moves, restart, takeover",
	         test_scope_effects},
	        {NULL, NULL},
	};
	static const CU_TestInfo clock[] = {
	        {"a walsync host's clock hours off, then stepped", test_clock_steps},
	        {NULL, NULL},
	};
	if (faketime_library())
		sy_test_add_suite("clock steps", clock);
	else
		printf("test_walsync: clock steps not run: libfaketime is not installed (Debian "
		       "package faketime)\n");
	/* Last: it publishes a manifest of its own. */
	if (sy_sql_migration_count >= SY_STORE_SCOPES_MIGRATION)
		sy_test_add_suite("membership scopes", scopes);
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
