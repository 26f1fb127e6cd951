/* SPDX-License-Identifier: BSD-2-Clause */
/* test_push.pgt: admission after the gates, the mutation ledger's precedence, deadlock and
 * serialization retries, and races between responders (child processes, each with its own
 * connection): concurrent updates and identical requests, inserts, resurrection, lock
 * timeouts, a lost connection. */
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

/* ---- admission (a first execution holds its slots until its transaction ends) ---- */

typedef struct {
	pid_t pid;
	int fd; /* reads the child's answer */
} child;
static child spawn(const char *user, const char *json, const int go[2], int lock_timeout_ms);
typedef struct {
	int status;
	int replay;
	int error;
	int st;
	char *body; /* malloc */
	size_t len;
	int exit_status;
} child_answer;
static child_answer collect(child ch);
static bool wait_for_lock_waiters(int n);

/*
 * A push of client (a fresh todo insert) whose first execution holds its admission slots
 * while it waits for the client row, which db holds: the caller COMMITs db to let it go.
 */
static child hold_slots(const char *client, char json_out[1024])
{
	todo_id t;
	fresh_todo(&t);
	mspec m = {.table = "todo", .pk = t.json, .op = "insert", .cols = "{\"title\":\"held\"}"};
	rspec rs = {.client = client};
	char *json = build(&rs, &m, 1, NULL);
	snprintf(json_out, 1024, "%s", json);
	free(json);
	pgt_exec(db, "BEGIN");
	char sql[160];
	snprintf(sql, sizeof sql, "SELECT 1 FROM synchro.clients WHERE client_id = '%s' FOR UPDATE",
	         client);
	pgt_exec(db, sql);
	child ch = spawn(ALICE, json_out, NULL, 20000);
	CU_ASSERT_TRUE(wait_for_lock_waiters(1));
	return ch;
}

static void release_slots(child ch)
{
	pgt_exec(db, "COMMIT");
	child_answer ans = collect(ch);
	CU_ASSERT_EQUAL(ans.status, 200);
	free(ans.body);
}

/*
 * Admission (429 retry_later with Retry-After) comes after every gate, holds across
 * every session (advisory-lock slots in the database, not per process), never refuses a
 * replay, and counts a concurrent duplicate of an executing batch once.
 */
void test_admission(void)
{
	todo_id a;
	char held[1024], v[160];
	fresh_todo(&a);
	mspec m = {.table = "todo", .pk = a.json, .op = "insert", .cols = "{\"title\":\"adm\"}"};
	char *json = build(&(rspec){0}, &m, 1, NULL);

	/* the total cap: another client's execution holds the only slot */
	cap_total = 1;
	child ch = hold_slots(CA2, held);
	result *r = push_as(ALICE, json);
	expect_error(r, SY_ERR_RETRY_LATER);
	CU_ASSERT(r->a.retry_after > 0);
	result_free(r);
	fence_version("todo", a.id, v);
	CU_ASSERT_STRING_EQUAL(v, "");
	release_slots(ch);
	r = push_as(ALICE, json);
	expect_200(r);
	CU_ASSERT_FALSE(r->a.replay);
	result_free(r);
	/* a replay is not a first execution: never refused */
	ch = hold_slots(CA2, held);
	r = push_as(ALICE, json);
	expect_200(r);
	CU_ASSERT_TRUE(r->a.replay);
	result_free(r);
	release_slots(ch);
	cap_total = 0;

	/* the per-client cap: the client's own execution holds its slot; another batch of
	 * the same client is refused, a concurrent duplicate of that batch is not */
	cap_client = 1;
	ch = hold_slots(CA1, held);
	todo_id b;
	fresh_todo(&b);
	mspec mb = {.table = "todo", .pk = b.json, .op = "insert", .cols = "{\"title\":\"b\"}"};
	char *jb = build(&(rspec){0}, &mb, 1, NULL);
	r = push_as(ALICE, jb);
	expect_error(r, SY_ERR_RETRY_LATER);
	result_free(r);
	child dup = spawn(ALICE, held, NULL, 20000);
	CU_ASSERT_TRUE(wait_for_lock_waiters(2));
	release_slots(ch);
	child_answer da = collect(dup);
	CU_ASSERT_EQUAL(da.status, 200);
	CU_ASSERT_EQUAL(da.replay, 1);
	free(da.body);
	r = push_as(ALICE, jb);
	expect_200(r);
	result_free(r);
	cap_client = 0;
	free(jb);
	free(json);
}

/*
 * The mutation ledger's answers (409 idempotency_conflict, the atomic 400s) precede the
 * generation, schema and admission gates, whichever round trip reads the ledger.
 */
void test_ledger_precedence(void)
{
	todo_id a, b;
	char mid[SY_UUID_LEN + 1];
	fresh_todo(&a);
	fresh_todo(&b);
	fresh(mid, 'a');
	mspec m1 = {.id = mid,
	            .table = "todo",
	            .pk = a.json,
	            .op = "insert",
	            .cols = "{\"title\":\"ledgered\"}"};
	result *r = run(ALICE, NULL, &m1, 1, NULL);
	expect_200(r);
	result_free(r);
	long long gen = client_generation(CA1);
	sy_schema_ref wrong = cur;
	wrong.hash[0] = wrong.hash[0] == 'a' ? 'b' : 'a';
	rspec stale = {.gen = gen + 1};
	rspec ws = {.schema = &wrong};
	mspec changed = m1;
	changed.cols = "{\"title\":\"other\"}";
	mspec fresh_b = {
	        .table = "todo", .pk = b.json, .op = "insert", .cols = "{\"title\":\"b\"}"};
	long long muts = count("SELECT count(*) FROM synchro.mutations");

	/* changed content under a ledgered id: 409 idempotency_conflict before 409/422 */
	mspec ms[2] = {fresh_b, changed};
	r = run(ALICE, &stale, ms, 2, NULL);
	expect_error(r, SY_ERR_IDEMPOTENCY_CONFLICT);
	result_free(r);
	r = run(ALICE, &ws, ms, 2, NULL);
	expect_error(r, SY_ERR_IDEMPOTENCY_CONFLICT);
	result_free(r);
	/* an atomic request naming a ledgered mutation: 400 before the generation gate */
	rspec at_stale = {.gen = gen + 1, .atomic = true};
	mspec ms2[2] = {fresh_b, m1};
	r = run(ALICE, &at_stale, ms2, 2, NULL);
	expect_error(r, SY_ERR_INVALID_REQUEST);
	result_free(r);
	/* unchanged content in a new non-atomic batch: nothing against it, the gate answers */
	r = run(ALICE, &stale, ms2, 2, NULL);
	expect_error(r, SY_ERR_CLIENT_GENERATION_EXPIRED);
	result_free(r);

	/* admission would refuse: the conflict still answers first, and nothing is admitted */
	cap_total = 1;
	char held[1024];
	child ch = hold_slots(CA2, held);
	r = run(ALICE, NULL, ms, 2, NULL);
	expect_error(r, SY_ERR_IDEMPOTENCY_CONFLICT);
	result_free(r);
	release_slots(ch);
	cap_total = 0;
	muts++; /* the holder's own mutation */
	CU_ASSERT_EQUAL(PQtransactionStatus(app), PQTRANS_IDLE);

	char v[160];
	fence_version("todo", b.id, v);
	CU_ASSERT_STRING_EQUAL(v, "");
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM synchro.mutations"), muts);
}

/*
 * Deadlocks and serialization failures retry the whole transaction (three times at
 * most); past that the request is a 503 with nothing committed. A trigger fails the
 * first inserts of labels 'retry-N' with SQLSTATE 40001 / 40P01 (a sequence counts
 * across rollbacks).
 */
void test_retry(void)
{
	pgt_exec(db, "CREATE SEQUENCE test_fail_seq");
	pgt_exec(db,
	         "CREATE FUNCTION test_fail() RETURNS trigger LANGUAGE plpgsql"
	         " SECURITY DEFINER AS $$ BEGIN"
	         " IF NEW.label LIKE 'retry-%' AND nextval('test_fail_seq') <="
	         "    split_part(NEW.label, '-', 2)::int THEN"
	         "   IF NEW.qty = 1 THEN RAISE EXCEPTION 'fail' USING ERRCODE = '40P01'; END IF;"
	         "   RAISE EXCEPTION 'fail' USING ERRCODE = '40001';"
	         " END IF; RETURN NEW; END $$");
	pgt_exec(db, "CREATE TRIGGER test_fail BEFORE INSERT ON item FOR EACH ROW"
	             " EXECUTE FUNCTION test_fail()");
	char p[32];
	char ids[1][SY_UUID_LEN + 1];
	fresh_item(p);
	long long e0 = epoch(CA1);
	mspec m = {.table = "item", .pk = p, .op = "insert", .cols = "{\"label\":\"retry-2\"}"};
	result *r = run(ALICE, NULL, &m, 1, ids);
	expect_200(r);
	check(r, ids[0], "applied", NULL, true, true);
	/* two failed attempts and the one that committed (the sequence outlives rollbacks) */
	CU_ASSERT_EQUAL(count("SELECT last_value FROM test_fail_seq"), 3);
	CU_ASSERT_EQUAL(epoch(CA1), e0 + 1);
	result_free(r);

	pgt_exec(db, "ALTER SEQUENCE test_fail_seq RESTART");
	fresh_item(p);
	m.cols = "{\"label\":\"retry-9\",\"qty\":1}";
	long long batches = count("SELECT count(*) FROM synchro.batches");
	r = run(ALICE, NULL, &m, 1, ids);
	expect_error(r, SY_ERR_TEMPORARY_UNAVAILABLE);
	/* three attempts, then 503; the server log names the SQLSTATE and nothing else */
	CU_ASSERT_EQUAL(count("SELECT last_value FROM test_fail_seq"), 3);
	CU_ASSERT_EQUAL(r->st, SY_STORE_FAILED);
	CU_ASSERT_TRUE(server_log_has("rolled back: SQLSTATE 40P01"));
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM synchro.batches"), batches);
	CU_ASSERT_EQUAL(epoch(CA1), e0 + 1);
	result_free(r);
	pgt_exec(db, "DROP TRIGGER test_fail ON item");
}

/* ---- concurrency (child processes, each a responder with its own connection) ---- */

/*
 * Forks a child that connects as the responders' role (application_name push_child),
 * waits until the parent closes go[1] (when go is not NULL), runs json as user and writes
 * "status replay error\n" and the body to its pipe.
 */
static child spawn(const char *user, const char *json, const int go[2], int lock_timeout_ms)
{
	int go_fd = go ? go[0] : -1;
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
		if (go != NULL)
			close(go[1]); /* only the parent's close may end the wait */
		sy_error e = {0};
		PGconn *c = sy_store_connect("user=" APP_ROLE " application_name=push_child",
		                             "push_child", &e);
		if (c == NULL)
			_exit(3);
		if (go_fd >= 0) {
			char b;
			while (read(go_fd, &b, 1) < 0 && errno == EINTR)
				;
		}
		answer a;
		sy_store_status st = call_push(c, user, json, lock_timeout_ms, &a, &e);
		char head[64];
		int n = snprintf(head, sizeof head, "%d %d %d %d\n", a.http_status,
		                 a.replay ? 1 : 0, (int)a.error, (int)st);
		int status = 0;
		if (write(fds[1], head, (size_t)n) != n ||
		    (a.body.len > 0 &&
		     write(fds[1], a.body.data, a.body.len) != (ssize_t)a.body.len))
			status = 4;
		/* freed, so that a child under valgrind is as clean as its parent */
		answer_clear(&a);
		sy_store_disconnect(c);
		_exit(status);
	}
	close(fds[1]);
	ch.pid = pid;
	ch.fd = fds[0];
	return ch;
}

static child_answer collect(child ch)
{
	child_answer a = {0};
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
	if (nl != NULL && sscanf(buf, "%d %d %d %d", &a.status, &a.replay, &a.error, &a.st) == 4) {
		a.len = len - (size_t)(nl + 1 - buf);
		a.body = malloc(a.len + 1);
		memcpy(a.body, nl + 1, a.len);
		a.body[a.len] = '\0';
	}
	free(buf);
	return a;
}

/* Validates a child's 200 body against its request; returns the parsed body. */
static sy_json_doc *child_body(const child_answer *a, const char *json)
{
	sy_error e = {0};
	CU_ASSERT_EQUAL(a->status, 200);
	if (a->status != 200 || a->body == NULL)
		return NULL;
	sy_json_doc *d = sy_json_parse(a->body, a->len, &e);
	sy_push_request *req = sy_push_parse(json, strlen(json), &e);
	CU_ASSERT_PTR_NOT_NULL(d);
	if (d && req)
		CU_ASSERT_TRUE(sy_outcome_validate_response(req, sy_json_doc_root(d), &e));
	sy_push_request_free(req);
	return d;
}

/* Polls (bounded) until n sessions of push_child wait for a lock. */
static bool wait_for_lock_waiters(int n)
{
	char want[16];
	snprintf(want, sizeof want, "%d", n);
	for (int i = 0; i < 2000; i++) {
		PGresult *r = PQexec(mon, "SELECT count(*) FROM pg_stat_activity"
		                          " WHERE application_name = 'push_child'"
		                          "   AND wait_event_type = 'Lock'");
		bool done = r && PQresultStatus(r) == PGRES_TUPLES_OK &&
		            strcmp(PQgetvalue(r, 0, 0), want) == 0;
		PQclear(r);
		if (done)
			return true;
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return false;
}

#define RACERS 20

/* 20 updates of one base from 20 clients at once: one applies, 19 are version conflicts. */
void test_concurrent_updates(void)
{
	char pk[32], v[160], b[64];
	make_item(pk, "{\"qty\":0}", v);
	char clients[RACERS][SY_UUID_LEN + 1];
	char *jsons[RACERS];
	child kids[RACERS];
	int go[2];
	CU_ASSERT_FATAL(pipe(go) == 0);
	for (int i = 0; i < RACERS; i++) {
		snprintf(clients[i], sizeof clients[i], "c0000000-0000-4000-8000-%012d", 500 + i);
		add_client(clients[i]);
		char cols[32];
		snprintf(cols, sizeof cols, "{\"qty\":%d}", i + 1);
		rspec rs = {.client = clients[i], .gen = 1};
		mspec m = {.table = "item", .pk = pk, .op = "update", .base = v, .cols = cols};
		jsons[i] = build(&rs, &m, 1, NULL);
		kids[i] = spawn(ALICE, jsons[i], go, 10000);
		CU_ASSERT_FATAL(kids[i].pid > 0);
	}
	close(go[0]);
	close(go[1]); /* go */
	int applied = 0, conflicts = 0;
	char winner_qty[16] = "";
	for (int i = 0; i < RACERS; i++) {
		child_answer a = collect(kids[i]);
		CU_ASSERT_EQUAL(a.exit_status, 0);
		sy_json_doc *d = child_body(&a, jsons[i]);
		const sy_json *root = d ? sy_json_doc_root(d) : NULL;
		const sy_json *acc = root ? sy_json_get(root, "accepted") : NULL;
		const sy_json *rej = root ? sy_json_get(root, "rejected") : NULL;
		if (acc && acc->u.array.count == 1) {
			applied++;
			snprintf(winner_qty, sizeof winner_qty, "%d", i + 1);
		} else if (rej && rej->u.array.count == 1 &&
		           strcmp(str(rej->u.array.items[0], "code"), "version_conflict") == 0) {
			conflicts++;
		}
		sy_json_doc_free(d);
		free(a.body);
		free(jsons[i]);
	}
	CU_ASSERT_EQUAL(applied, 1);
	CU_ASSERT_EQUAL(conflicts, RACERS - 1);
	const char *pp[] = {bare(pk, b)};
	char *qty = pgt_value(db, "SELECT qty::text FROM item WHERE id = $1::bigint", 1, pp);
	CU_ASSERT_PTR_NOT_NULL(qty);
	if (qty)
		CU_ASSERT_STRING_EQUAL(qty, winner_qty);
	free(qty);
}

/* 20 copies of one request at once: one first execution, 20 identical bodies. */
void test_concurrent_identical(void)
{
	char pk[32], b[64];
	fresh_item(pk);
	mspec m = {.table = "item", .pk = pk, .op = "insert", .cols = "{\"qty\":1}"};
	char *json = build(&(rspec){0}, &m, 1, NULL);
	long long e0 = epoch(CA1);
	child kids[RACERS];
	int go[2];
	CU_ASSERT_FATAL(pipe(go) == 0);
	for (int i = 0; i < RACERS; i++)
		kids[i] = spawn(ALICE, json, go, 10000);
	close(go[0]);
	close(go[1]);
	char *first = NULL;
	int replays = 0, ok = 0;
	for (int i = 0; i < RACERS; i++) {
		child_answer a = collect(kids[i]);
		CU_ASSERT_EQUAL(a.exit_status, 0);
		CU_ASSERT_EQUAL(a.status, 200);
		if (a.status == 200 && a.body) {
			ok++;
			replays += a.replay;
			if (first == NULL)
				first = strdup(a.body);
			else
				CU_ASSERT_STRING_EQUAL(a.body, first);
		}
		free(a.body);
	}
	CU_ASSERT_EQUAL(ok, RACERS);
	CU_ASSERT_EQUAL(replays, RACERS - 1);
	CU_ASSERT_EQUAL(epoch(CA1), e0 + 1);
	const char *pp[] = {bare(pk, b)};
	CU_ASSERT_EQUAL(pgt_int(db,
	                        "SELECT count(*) FROM synchro.row_fences WHERE table_id = 'item'"
	                        " AND pk = $1",
	                        1, pp),
	                1);
	free(first);
	free(json);
}

/* An insert racing a committed insert of the same identity: row_already_exists. */
void test_race_insert(void)
{
	todo_id a;
	fresh_todo(&a);
	char ids[1][SY_UUID_LEN + 1];
	mspec m = {.table = "todo", .pk = a.json, .op = "insert", .cols = "{\"title\":\"mine\"}"};
	char *json = build(&(rspec){0}, &m, 1, ids);
	const char *pa[] = {a.id};
	pgt_exec(db, "BEGIN");
	PQclear(pgt_query(db, "INSERT INTO todo (id, title, owner) VALUES ($1, 'direct', 'alice')",
	                  1, pa));
	child ch = spawn(ALICE, json, NULL, 10000);
	CU_ASSERT_TRUE(wait_for_lock_waiters(1));
	pgt_exec(db, "COMMIT");
	child_answer ans = collect(ch);
	sy_json_doc *d = child_body(&ans, json);
	if (d != NULL) {
		result r = {.doc = d};
		const sy_json *o = check(&r, ids[0], "conflict", "row_already_exists", true, true);
		CHECK_ROW_VALUE(o, "title", "\"direct\"");
		char v[160];
		fence_version("todo", a.id, v);
		CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v);
	}
	sy_json_doc_free(d);
	free(ans.body);
	free(json);
}

/* An insert racing a committed insert-and-delete: no resurrection, row_deleted. */
void test_race_resurrection(void)
{
	todo_id a;
	fresh_todo(&a);
	char ids[1][SY_UUID_LEN + 1];
	mspec m = {.table = "todo", .pk = a.json, .op = "insert", .cols = "{\"title\":\"again\"}"};
	char *json = build(&(rspec){0}, &m, 1, ids);
	const char *pa[] = {a.id};
	pgt_exec(db, "BEGIN");
	PQclear(pgt_query(db, "INSERT INTO todo (id, title, owner) VALUES ($1, 'gone', 'alice')", 1,
	                  pa));
	PQclear(pgt_query(db, "DELETE FROM todo WHERE id = $1", 1, pa));
	child ch = spawn(ALICE, json, NULL, 10000);
	CU_ASSERT_TRUE(wait_for_lock_waiters(1));
	pgt_exec(db, "COMMIT");
	child_answer ans = collect(ch);
	sy_json_doc *d = child_body(&ans, json);
	if (d != NULL) {
		result r = {.doc = d};
		const sy_json *o = check(&r, ids[0], "conflict", "row_deleted", true, false);
		char v[160];
		fence_version("todo", a.id, v);
		CU_ASSERT_STRING_EQUAL(str(o, "server_version"), v);
	}
	CU_ASSERT_EQUAL(pgt_int(db, "SELECT count(*) FROM todo WHERE id = $1", 1, pa), 0);
	char *state = fence_field("todo", a.id, "state");
	CU_ASSERT_STRING_EQUAL(state, "deleted");
	free(state);
	sy_json_doc_free(d);
	free(ans.body);
	free(json);
}

/* Waiting longer than lock_timeout_ms for the client is a 503 with nothing committed. */
void test_lock_timeout(void)
{
	todo_id a;
	fresh_todo(&a);
	mspec m = {.table = "todo", .pk = a.json, .op = "insert", .cols = "{\"title\":\"late\"}"};
	char *json = build(&(rspec){0}, &m, 1, NULL);
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "SELECT 1 FROM synchro.clients WHERE client_id = '" CA1 "' FOR UPDATE");
	long long batches = count("SELECT count(*) FROM synchro.batches");
	result *r = push_on(app, ALICE, json, 100);
	expect_error(r, SY_ERR_TEMPORARY_UNAVAILABLE);
	CU_ASSERT_EQUAL(r->st, SY_STORE_OK);
	CU_ASSERT_TRUE(server_log_has("not committed: SQLSTATE 55P03"));
	result_free(r);
	pgt_exec(db, "ROLLBACK");
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM synchro.batches"), batches);
	char v[160];
	fence_version("todo", a.id, v);
	CU_ASSERT_STRING_EQUAL(v, "");
	/* the same request once the lock is gone: first execution */
	r = push_as(ALICE, json);
	expect_200(r);
	CU_ASSERT_FALSE(r->a.replay);
	result_free(r);
	free(json);
}

/*
 * A push waiting for its client row while a connect (a new generation) or a deletion of the
 * client commits: the lock takes the row's newest version (or nothing, once deleted), and
 * the gates decide on what committed, as the lookup made again under the lock reads it
 * (409 client_generation_expired, 401); nothing is written.
 */
void test_client_changed_while_waiting(void)
{
	const char *client = "c0000000-0000-4000-8000-000000000600";
	const char *pc[] = {client};
	add_client(client);
	todo_id t;
	fresh_todo(&t);
	mspec m = {.table = "todo", .pk = t.json, .op = "insert", .cols = "{\"title\":\"late\"}"};
	long long batches = count("SELECT count(*) FROM synchro.batches");
	static const char *const changes[] = {
	        "UPDATE synchro.clients SET generation = 2 WHERE client_id = $1",
	        "DELETE FROM synchro.clients WHERE client_id = $1"};
	static const sy_errcode answers[] = {SY_ERR_CLIENT_GENERATION_EXPIRED,
	                                     SY_ERR_AUTH_REQUIRED};
	for (int i = 0; i < 2; i++) {
		/* the generation current when the push is looked up (the first change makes 2) */
		rspec rs = {.client = client, .gen = 1 + i};
		char *json = build(&rs, &m, 1, NULL);
		pgt_exec(db, "BEGIN");
		PQclear(pgt_query(db, changes[i], 1, pc));
		child ch = spawn(ALICE, json, NULL, 20000);
		CU_ASSERT_TRUE(wait_for_lock_waiters(1));
		pgt_exec(db, "COMMIT");
		child_answer a = collect(ch);
		CU_ASSERT_EQUAL(a.exit_status, 0);
		CU_ASSERT_EQUAL(a.error, (int)answers[i]);
		CU_ASSERT_EQUAL(a.status, sy_errcode_http_status(answers[i]));
		CU_ASSERT_FALSE(a.replay);
		free(a.body);
		free(json);
	}
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM synchro.batches"), batches);
	char v[160];
	fence_version("todo", t.id, v);
	CU_ASSERT_STRING_EQUAL(v, "");
}

/*
 * Under REPEATABLE READ, a client row changed after the transaction's snapshot fails the push
 * with 40001 and nothing written, as SELECT ... FOR NO KEY UPDATE fails there; run again in
 * a new transaction, it is executed.
 */
void test_client_changed_repeatable_read(void)
{
	const char *client = "c0000000-0000-4000-8000-000000000601";
	const char *pc[] = {client};
	add_client(client);
	todo_id t;
	fresh_todo(&t);
	mspec m = {.table = "todo", .pk = t.json, .op = "insert", .cols = "{\"title\":\"rr\"}"};
	rspec rs = {.client = client, .gen = 1};
	char *json = build(&rs, &m, 1, NULL);
	sy_error e = {0};
	PGconn *c = sy_store_connect("user=" APP_ROLE, "test_push_rr", &e);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	const char *args[] = {ALICE, json};
	static const char call[] =
	        "SELECT status, replay FROM synchro.synchro_push($1, convert_to($2, 'UTF8'))";
	PQclear(PQexec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ"));
	PQclear(PQexec(c, "SELECT 1")); /* the transaction's snapshot */
	PQclear(pgt_query(db,
	                  "UPDATE synchro.clients SET generation = generation WHERE client_id = $1",
	                  1, pc));
	PGresult *r = PQexecParams(c, call, 2, NULL, args, NULL, NULL, 0);
	const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	CU_ASSERT_EQUAL(PQresultStatus(r), PGRES_FATAL_ERROR);
	CU_ASSERT_STRING_EQUAL(state ? state : "", "40001");
	PQclear(r);
	PQclear(PQexec(c, "ROLLBACK"));
	char v[160];
	fence_version("todo", t.id, v);
	CU_ASSERT_STRING_EQUAL(v, "");
	/* a new transaction: executed */
	PQclear(PQexec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ"));
	r = PQexecParams(c, call, 2, NULL, args, NULL, NULL, 0);
	CU_ASSERT_EQUAL(PQresultStatus(r), PGRES_TUPLES_OK);
	if (PQresultStatus(r) == PGRES_TUPLES_OK) {
		CU_ASSERT_STRING_EQUAL(PQgetvalue(r, 0, 0), "200");
		CU_ASSERT_STRING_EQUAL(PQgetvalue(r, 0, 1), "f");
	}
	PQclear(r);
	PQclear(PQexec(c, "COMMIT"));
	fence_version("todo", t.id, v);
	CU_ASSERT_STRING_NOT_EQUAL(v, "");
	sy_store_disconnect(c);
	free(json);
}

/* A connection lost mid-request is a 503 and SY_STORE_CONNECTION; a new one works. */
void test_connection_lost(void)
{
	todo_id a;
	fresh_todo(&a);
	mspec m = {.table = "todo", .pk = a.json, .op = "insert", .cols = "{\"title\":\"t\"}"};
	char ids[1][SY_UUID_LEN + 1];
	char *json = build(&(rspec){0}, &m, 1, ids);
	char pid[16];
	snprintf(pid, sizeof pid, "%d", PQbackendPID(app));
	const char *pp[] = {pid};
	PQclear(pgt_query(db, "SELECT pg_terminate_backend($1::int, 5000)", 1, pp));
	result *r = push_as(ALICE, json);
	expect_error(r, SY_ERR_TEMPORARY_UNAVAILABLE);
	CU_ASSERT_EQUAL(r->st, SY_STORE_CONNECTION);
	result_free(r);
	sy_store_disconnect(app);
	sy_error e = {0};
	app = sy_store_connect("user=" APP_ROLE, "test_push", &e);
	CU_ASSERT_PTR_NOT_NULL_FATAL(app);
	r = push_as(ALICE, json);
	expect_200(r);
	check(r, ids[0], "applied", NULL, true, true);
	result_free(r);
	free(json);
}
