/* SPDX-License-Identifier: BSD-2-Clause */
/* test_push_units.pgt: children (one responder each, with its own connection) racing on a
 * pk, a backend terminated or killed mid-push, and the grants of every role. */
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

/* ---- children: one responder each, with its own connection ---- */

typedef struct {
	pid_t pid;
	int fd;
} child;

typedef struct {
	int exit_status;
	int ok, status, replay, conn_lost;
	char sqlstate[6];
	char *body;
	size_t len;
} child_answer;

/* Forks a child that connects as the responders' role (application_name units_child),
 * runs json as alice without a lock timeout and writes "ok status replay lost sqlstate\n"
 * and the body to its pipe. */
static child spawn(const char *json)
{
	int fds[2];
	child ch = {-1, -1};
	if (pipe(fds) != 0)
		return ch;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return ch;
	}
	if (pid == 0) {
		close(fds[0]);
		PGconn *c = PQconnectdb("user=" APP_ROLE " application_name=" CHILD_APP);
		if (PQstatus(c) != CONNECTION_OK)
			_exit(3);
		raw a = push_raw(c, ALICE, json, 0);
		char head[96];
		int n = snprintf(head, sizeof head, "%d %d %d %d %s\n", a.ok, a.status, a.replay,
		                 a.conn_lost, a.sqlstate[0] ? a.sqlstate : "-");
		int status = 0;
		if (write(fds[1], head, (size_t)n) != n ||
		    (a.len > 0 && write(fds[1], a.body, a.len) != (ssize_t)a.len))
			status = 4;
		free(a.body);
		PQfinish(c);
		_exit(status);
	}
	close(fds[1]);
	ch.pid = pid;
	ch.fd = fds[0];
	return ch;
}

static child_answer collect(child ch)
{
	child_answer a;
	memset(&a, 0, sizeof a);
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (len + 1 >= cap)
			buf = realloc(buf, cap *= 2);
		ssize_t n = read(ch.fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(ch.fd);
	int ws = 0;
	while (waitpid(ch.pid, &ws, 0) < 0 && errno == EINTR)
		;
	a.exit_status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 99;
	char *nl = strchr(buf, '\n');
	if (nl != NULL && sscanf(buf, "%d %d %d %d %5s", &a.ok, &a.status, &a.replay, &a.conn_lost,
	                         a.sqlstate) == 5) {
		a.len = len - (size_t)(nl + 1 - buf);
		a.body = malloc(a.len + 1);
		memcpy(a.body, nl + 1, a.len);
		a.body[a.len] = '\0';
	}
	free(buf);
	return a;
}

static result *child_result(child_answer *ca, const char *json)
{
	raw a;
	memset(&a, 0, sizeof a);
	a.ok = ca->ok;
	a.status = ca->status;
	a.replay = ca->replay;
	a.conn_lost = ca->conn_lost;
	a.retry_after = -1;
	snprintf(a.sqlstate, sizeof a.sqlstate, "%s", ca->sqlstate);
	a.body = ca->body;
	a.len = ca->len;
	ca->body = NULL;
	return read_answer(&a, json);
}

/* The backend pid of the child push waiting for a lock (bounded poll), or 0. */
static int child_waiting(void)
{
	for (int i = 0; i < 2000; i++) {
		PGresult *r = PQexec(mon, "SELECT pid FROM pg_stat_activity"
		                          " WHERE application_name = '" CHILD_APP "'"
		                          "   AND wait_event_type = 'Lock'");
		int pid = r && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1
		                  ? atoi(PQgetvalue(r, 0, 0))
		                  : 0;
		PQclear(r);
		if (pid > 0)
			return pid;
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return 0;
}

/*
 * A direct insert of table (u_dpk: pk DEFERRABLE INITIALLY IMMEDIATE; u_kill: an ordinary
 * pk) racing a push's insert of the same identity: the push waits for it, and once it
 * committed the identity is live: row_already_exists with the committed row and version,
 * in a non-atomic and in an atomic request.
 */
static void race(const char *table, bool atomic)
{
	ukey k, other;
	char ids[2][SY_UUID_LEN + 1], v[160];
	fresh_key(&k, "race");
	fresh_key(&other, "race-other");
	PGconn *holder = pgt_connect(NULL);
	char sql[256];
	snprintf(sql, sizeof sql, "INSERT INTO %s (id, val) VALUES ('%s', 'direct')", table, k.id);
	pgt_exec(holder, "BEGIN");
	pgt_exec(holder, sql);
	mspec ms[2] = {
	        {.table = table, .pk = k.json, .op = "insert", .cols = "{\"val\":\"pushed\"}"},
	        {.table = table, .pk = other.json, .op = "insert", .cols = "{\"val\":\"o\"}"},
	};
	char *json = build(&(rspec){.atomic = atomic}, ms, 2, ids);
	child ch = spawn(json);
	CU_ASSERT_FATAL(ch.pid > 0);
	CU_ASSERT(child_waiting() > 0);
	pgt_exec(holder, "COMMIT");
	PQfinish(holder);
	child_answer ca = collect(ch);
	CU_ASSERT_EQUAL(ca.exit_status, 0);
	result *r = child_result(&ca, json);
	expect_200(r);
	fence_version(table, k.id, v);
	const sy_json *o = check(r, ids[0], "conflict", "row_already_exists", true, true);
	CHECK_ROW_VALUE(o, "val", "\"direct\"");
	CU_ASSERT_STRING_EQUAL(version_of(o), v);
	/* the fence is the direct write's */
	char *m = fence_field(table, k.id, "mutation_id");
	CU_ASSERT_STRING_EQUAL(m ? m : "", "<null>");
	free(m);
	if (atomic) {
		check(r, ids[1], "rejected_terminal", "atomic_batch_rejected", false, false);
		absent(table, other.id);
	} else {
		check(r, ids[1], "applied", NULL, true, true);
	}
	result_free(r);
	char *val = row_field(table, k.id, "val");
	CU_ASSERT_STRING_EQUAL(val ? val : "", "direct");
	free(val);
	free(json);
}

void test_pk_race(void)
{
	race("u_kill", false);
	race("u_kill", true);
	race("u_dpk", false);
	/* in an atomic group the deferrable pk's 23505 comes from the group's end check */
	race("u_dpk", true);
}

/* ---- 9. a backend killed mid-push ---- */

PGconn *connect_app(void)
{
	sy_error e = {0};
	PGconn *c = sy_store_connect("user=" APP_ROLE, "test_push_units", &e);
	if (c == NULL)
		fprintf(stderr, "%s\n", e.message);
	return c;
}

/* After kill -9 of a backend: waits (bounded) until the postmaster has reset every session
 * and accepts connections again, then reconnects db, app and mon. */
static bool reconnect_all(void)
{
	bool dead = false;
	for (int i = 0; i < 2000 && !dead; i++) {
		PGresult *r = PQexec(db, "SELECT 1");
		dead = PQresultStatus(r) != PGRES_TUPLES_OK || PQstatus(db) != CONNECTION_OK;
		PQclear(r);
		if (!dead) {
			struct timespec ts = {0, 10 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
	}
	CU_ASSERT_TRUE(dead);
	sy_store_disconnect(db);
	sy_store_disconnect(app);
	PQfinish(mon);
	db = app = mon = NULL;
	for (int i = 0; i < 1200; i++) {
		PGconn *c = PQconnectdb("");
		bool up = false;
		if (PQstatus(c) == CONNECTION_OK) {
			PGresult *r = PQexec(c, "SELECT 1");
			up = PQresultStatus(r) == PGRES_TUPLES_OK;
			PQclear(r);
		}
		PQfinish(c);
		if (up)
			break;
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	sy_error e = {0};
	db = sy_store_connect(NULL, "test_push_units", &e);
	if (db == NULL)
		return false;
	PQclear(PQexec(db, "SET client_min_messages = warning"));
	app = connect_app();
	mon = PQconnectdb("");
	return app != NULL && PQstatus(mon) == CONNECTION_OK;
}

static void quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

static void killed(bool sigkill)
{
	ukey x, a1, a2;
	char vx[160], v[160];
	char ids[3][SY_UUID_LEN + 1];
	fresh_key(&x, "kill");
	fresh_key(&a1, "kill");
	fresh_key(&a2, "kill");
	make_row("u_kill", &x, "{\"val\":\"x\"}", vx);
	long long e0 = epoch();
	/* another session holds x's row lock: the push applies a1 and a2, then waits at x */
	PGconn *holder = pgt_connect(NULL);
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT 1 FROM u_kill WHERE id = '%s' FOR UPDATE", x.id);
	pgt_exec(holder, "BEGIN");
	pgt_exec(holder, sql);
	mspec ms[3] = {
	        {.table = "u_kill", .pk = a1.json, .op = "insert", .cols = "{\"val\":\"a1\"}"},
	        {.table = "u_kill", .pk = a2.json, .op = "insert", .cols = "{\"val\":\"a2\"}"},
	        {.table = "u_kill",
	         .pk = x.json,
	         .op = "update",
	         .base = vx,
	         .cols = "{\"val\":\"x2\"}"},
	};
	char *json = build(NULL, ms, 3, ids);
	child ch = spawn(json);
	CU_ASSERT_FATAL(ch.pid > 0);
	int pid = child_waiting();
	CU_ASSERT_FATAL(pid > 0);
	/* the push did write a1 and a2 before it waited (uncommitted): its backend holds the
	 * table's RowExclusiveLock, which only the inserts take */
	char ps[16];
	snprintf(ps, sizeof ps, "%d", pid);
	const char *pl[] = {ps};
	CU_ASSERT_EQUAL(pgt_int(mon,
	                        "SELECT count(*) FROM pg_catalog.pg_locks WHERE pid = $1::int"
	                        "   AND relation = 'public.u_kill'::regclass"
	                        "   AND mode = 'RowExclusiveLock' AND granted",
	                        1, pl),
	                1);
	if (sigkill) {
		/* every session gets the postmaster's expected "crash of another server
		 * process" warning: not printed */
		PQsetNoticeProcessor(db, quiet, NULL);
		PQsetNoticeProcessor(app, quiet, NULL);
		PQsetNoticeProcessor(mon, quiet, NULL);
		PQsetNoticeProcessor(holder, quiet, NULL);
		/* declared to with-pg, which fails a suite on any crash it was not told of */
		char path[4096];
		const char *tmpdir = getenv("SYNCHRO_PG_TMP");
		snprintf(path, sizeof path, "%s/expected-kills", tmpdir ? tmpdir : ".");
		FILE *f = fopen(path, "a");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		fprintf(f, "%s\n", ps);
		fclose(f);
		CU_ASSERT_EQUAL(kill((pid_t)pid, SIGKILL), 0);
	} else {
		const char *pp[] = {ps};
		char *t = pgt_value(mon, "SELECT pg_terminate_backend($1::int, 5000)::text", 1, pp);
		CU_ASSERT_STRING_EQUAL(t ? t : "", "true");
		free(t);
	}
	child_answer ca = collect(ch);
	CU_ASSERT_EQUAL(ca.exit_status, 0);
	CU_ASSERT_EQUAL(ca.ok, 0);
	CU_ASSERT_EQUAL(ca.conn_lost, 1);
	free(ca.body);
	if (sigkill) {
		PQfinish(holder);
		CU_ASSERT_TRUE_FATAL(reconnect_all());
	} else {
		pgt_exec(holder, "ROLLBACK");
		PQfinish(holder);
	}
	/* nothing of that push */
	no_ledger(json, ids, 3);
	absent("u_kill", a1.id);
	absent("u_kill", a2.id);
	fence_version("u_kill", x.id, v);
	CU_ASSERT_STRING_EQUAL(v, vx);
	char *val = row_field("u_kill", x.id, "val");
	CU_ASSERT_STRING_EQUAL(val ? val : "", "x");
	free(val);
	CU_ASSERT_EQUAL(epoch(), e0);
	/* the same request: a first execution */
	result *r = push_on(app, json);
	expect_200(r);
	CU_ASSERT_FALSE(r->raw.replay);
	check(r, ids[0], "applied", NULL, true, true);
	check(r, ids[1], "applied", NULL, true, true);
	const sy_json *o = check(r, ids[2], "applied", NULL, true, true);
	CHECK_ROW_VALUE(o, "val", "\"x2\"");
	result_free(r);
	CU_ASSERT_EQUAL(epoch(), e0 + 1);
	free(json);
}

void test_terminated(void)
{
	killed(false);
}

void test_killed(void)
{
	killed(true);
}

/* ---- 10. grants ---- */

void test_grants(void)
{
	static const char *const refused[] = {
	        "INSERT INTO synchro.batches DEFAULT VALUES",
	        "UPDATE synchro.batches SET state = state",
	        "DELETE FROM synchro.batches",
	        "INSERT INTO synchro.mutations DEFAULT VALUES",
	        "UPDATE synchro.mutations SET outcome = outcome",
	        "DELETE FROM synchro.mutations",
	        "INSERT INTO synchro.row_fences DEFAULT VALUES",
	        "UPDATE synchro.row_fences SET version = version",
	        "DELETE FROM synchro.row_fences",
	        "UPDATE synchro.clients SET accepted_write_epoch = accepted_write_epoch + 1",
	        "INSERT INTO u_who (id, val) VALUES ('grant-1', 'x')",
	        "UPDATE u_who SET val = 'x'",
	        "DELETE FROM u_who",
	        "TRUNCATE u_who",
	        "INSERT INTO public.todo (id, title, owner) VALUES"
	        " ('0e0e0e0e-0000-4000-8000-0000000000f1', 't', 'alice')",
	        "UPDATE public.item SET qty = 1",
	        "DELETE FROM public.item",
	        "SELECT * FROM synchro.lock_fence('u_who', 'grant-1')",
	        "SELECT synchro.install_fence_trigger('u_who', 'u_who', 'id', '', '')",
	        "SELECT synchro.backfill_fences('u_who', 'u_who', 'id', '', '')",
	};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
		CU_ASSERT_TRUE(fails_with(app, refused[i], "42501"));
	CU_ASSERT_EQUAL(PQtransactionStatus(app), PQTRANS_IDLE);
	/* it reads them */
	CU_ASSERT_TRUE(pgt_exec(app, "SELECT count(*) FROM u_who"));
	/* synchro_push writes for it */
	ukey k;
	fresh_key(&k, "who");
	char ids[1][SY_UUID_LEN + 1];
	mspec m = {.table = "u_who", .pk = k.json, .op = "insert", .cols = "{\"val\":\"g\"}"};
	result *r = run(NULL, &m, 1, ids);
	expect_200(r);
	check(r, ids[0], "applied", NULL, true, true);
	result_free(r);
	char *val = row_field("u_who", k.id, "val");
	CU_ASSERT_STRING_EQUAL(val ? val : "", "g");
	free(val);
	/* a role outside synchro_app (PUBLIC), even with USAGE on schema synchro */
	PGconn *pub = pgt_connect("user=" PUBLIC_ROLE);
	char *json = build(NULL, &m, 1, ids);
	raw a = push_raw(pub, ALICE, json, 5000);
	CU_ASSERT_FALSE(a.ok);
	CU_ASSERT_STRING_EQUAL(a.sqlstate, "42501");
	CU_ASSERT_PTR_NOT_NULL(strstr(a.message, "synchro_push"));
	free(a.body);
	free(json);
	PQfinish(pub);
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM pg_catalog.aclexplode((SELECT proacl FROM"
	                      " pg_catalog.pg_proc WHERE oid = 'synchro.synchro_push'::regproc))"
	                      " WHERE grantee = 0"),
	                0);
}
