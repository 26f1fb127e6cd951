/* SPDX-License-Identifier: BSD-2-Clause */
/* The store behind a transaction pool ([database] pooler = transaction) against a real
 * PostgreSQL: every statement runs unnamed with the store's settings for its own transaction,
 * whatever the session has, leaves the session as it found it, and never runs on a session
 * whose client_encoding is not UTF8; failures and a lost connection leave no pipeline behind. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgtest.h"
#include "store/conn.h"
#include "store/prepared.h"
#include "store/store.h"
#include "testutil.h"

/* What another client of the pool may have left on a server session. */
#define HOSTILE                                                                                    \
	"SET DateStyle = 'SQL, DMY'; SET TimeZone = 'Asia/Kathmandu';"                             \
	" SET extra_float_digits = -3; SET bytea_output = 'escape'; SET lock_timeout = '1min';"    \
	" SET jit = on"

#define PROBE                                                                                      \
	"SELECT '2026-01-02 03:04:05.5+00'::timestamptz::text, '2026-03-04'::date::text,"          \
	" 0.30000000000000004::float8::text, '\\x00ff10'::bytea::text,"                            \
	" current_setting('lock_timeout'), current_setting('jit')"

static PGconn *fresh(void)
{
	PGconn *c = pgt_connect(NULL);
	pgt_must(c, "SET client_min_messages = warning");
	pgt_must(c, HOSTILE);
	return c;
}

/* The session's own value of a setting (a plain statement, outside the store). */
static char *session_setting(PGconn *c, const char *name)
{
	const char *p[] = {name};
	return pgt_value(c, "SELECT current_setting($1)", 1, p);
}

static void expect_probe(PGresult *r)
{
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL_FATAL(PQntuples(r), 1);
	CU_ASSERT_STRING_EQUAL(PQgetvalue(r, 0, 0), "2026-01-02 03:04:05.5+00");
	CU_ASSERT_STRING_EQUAL(PQgetvalue(r, 0, 1), "2026-03-04");
	CU_ASSERT_STRING_EQUAL(PQgetvalue(r, 0, 2), "0.30000000000000004");
	CU_ASSERT_STRING_EQUAL(PQgetvalue(r, 0, 3), "\\x00ff10");
	CU_ASSERT_STRING_EQUAL(PQgetvalue(r, 0, 4), "2s");
	CU_ASSERT_STRING_EQUAL(PQgetvalue(r, 0, 5), "off");
}

static void expect_session_hostile(PGconn *c)
{
	char *v = session_setting(c, "DateStyle");
	CU_ASSERT_STRING_EQUAL(v ? v : "", "SQL, DMY");
	free(v);
	v = session_setting(c, "extra_float_digits");
	CU_ASSERT_STRING_EQUAL(v ? v : "", "-3");
	free(v);
	v = session_setting(c, "lock_timeout");
	CU_ASSERT_STRING_EQUAL(v ? v : "", "1min");
	free(v);
}

/* sy_store_exec and sy_store_exec_stmt: the store's settings, none left on the session, no
 * prepared statement. */
static void test_settings_per_statement(void)
{
	PGconn *c = fresh();
	sy_store_status st;
	sy_error err = {0};
	PGresult *r = sy_store_exec(c, PROBE, 0, NULL, PGRES_TUPLES_OK, "probe", NULL, &st, &err);
	CU_ASSERT_EQUAL(st, SY_STORE_OK);
	expect_probe(r);
	PQclear(r);
	static sy_store_stmt probe = SY_STORE_STMT("sy_test_pooled_probe", PROBE, 0);
	for (int i = 0; i < 3; i++) {
		r = sy_store_exec_stmt(c, &probe, NULL, PGRES_TUPLES_OK, "probe", NULL, &st, &err);
		CU_ASSERT_EQUAL(st, SY_STORE_OK);
		expect_probe(r);
		PQclear(r);
	}
	CU_ASSERT_EQUAL(pgt_int(c, "SELECT count(*) FROM pg_prepared_statements", 0, NULL), 0);
	CU_ASSERT_EQUAL(PQpipelineStatus(c), PQ_PIPELINE_OFF);
	expect_session_hostile(c);
	PQfinish(c);
}

/* sy_store_exec_stmt_binary (synchro_push's call): binary parameters and result; unnamed
 * behind the pool, prepared once per connection without one. */
static void test_binary_statement(void)
{
	static sy_store_stmt echo =
	        SY_STORE_STMT("sy_test_pooled_echo", "SELECT $1::bytea, $2::int4 + 1", 2);
	static const char octets[] = {'\0', '\xff', 'x', '\'', '\\'};
	const char *values[] = {octets, "41"};
	int lengths[] = {(int)sizeof octets, 0};
	int formats[] = {1, 0};
	sy_store_pooler modes[] = {SY_STORE_POOLER_TRANSACTION, SY_STORE_POOLER_NONE};
	for (size_t m = 0; m < 2; m++) {
		sy_store_set_pooler(modes[m]);
		PGconn *c = fresh();
		for (int i = 0; i < 3; i++) {
			sy_store_status st;
			sy_error err = {0};
			PGresult *r = sy_store_exec_stmt_binary(c, &echo, values, lengths, formats, 1,
			                                        PGRES_TUPLES_OK, "echo", NULL, &st, &err);
			CU_ASSERT_EQUAL(st, SY_STORE_OK);
			CU_ASSERT_PTR_NOT_NULL_FATAL(r);
			CU_ASSERT_EQUAL(PQgetlength(r, 0, 0), (int)sizeof octets);
			CU_ASSERT(memcmp(PQgetvalue(r, 0, 0), octets, sizeof octets) == 0);
			CU_ASSERT_EQUAL(PQgetlength(r, 0, 1), 4);
			CU_ASSERT_EQUAL((unsigned char)PQgetvalue(r, 0, 1)[3], 42);
			PQclear(r);
		}
		CU_ASSERT_EQUAL(pgt_int(c, "SELECT count(*) FROM pg_prepared_statements", 0, NULL),
		                modes[m] == SY_STORE_POOLER_NONE ? 1 : 0);
		PQfinish(c);
	}
	sy_store_set_pooler(SY_STORE_POOLER_TRANSACTION);
}

/* timestamptz text of another session TimeZone: the same instant. */
static void test_format_time_offsets(void)
{
	PGconn *c = pgt_connect(NULL);
	pgt_must(c, "SET DateStyle = 'ISO'; SET TimeZone = 'Asia/Kathmandu'");
	char *v = pgt_value(c, "SELECT '2026-01-02 03:04:05.5+00'::timestamptz::text", 0, NULL);
	CU_ASSERT_STRING_EQUAL(v ? v : "", "2026-01-02 08:49:05.5+05:45");
	char out[SY_STORE_TIME_LEN + 1];
	CU_ASSERT_TRUE(sy_store_format_time(v ? v : "", out));
	CU_ASSERT_STRING_EQUAL(out, "2026-01-02T03:04:05.500000Z");
	free(v);
	PQfinish(c);
}

/* BEGIN goes as it is; the statements after it hold the settings until COMMIT. */
static void test_explicit_transaction(void)
{
	PGconn *c = fresh();
	sy_store_status st;
	sy_error err = {0};
	CU_ASSERT_EQUAL(sy_store_command(c, "BEGIN ISOLATION LEVEL REPEATABLE READ", "begin", &err),
	                SY_STORE_OK);
	PGresult *r = sy_store_exec(c, "SELECT current_setting('transaction_isolation')", 0, NULL,
	                            PGRES_TUPLES_OK, "isolation", NULL, &st, &err);
	CU_ASSERT_EQUAL(st, SY_STORE_OK);
	if (r != NULL)
		CU_ASSERT_STRING_EQUAL(PQgetvalue(r, 0, 0), "repeatable read");
	PQclear(r);
	r = sy_store_exec(c, PROBE, 0, NULL, PGRES_TUPLES_OK, "probe", NULL, &st, &err);
	expect_probe(r);
	PQclear(r);
	CU_ASSERT_EQUAL(PQtransactionStatus(c), PQTRANS_INTRANS);
	CU_ASSERT_EQUAL(sy_store_command(c, "COMMIT", "commit", &err), SY_STORE_OK);
	expect_session_hostile(c);
	PQfinish(c);
}

/* A session with another client_encoding: the statement never runs there. */
static void test_encoding_guard(void)
{
	PGconn *c = fresh();
	pgt_must(c, "CREATE TEMP TABLE pooled_t (v text)");
	pgt_must(c, "SET client_encoding = 'LATIN1'");
	sy_store_status st;
	sy_error err = {0};
	char state[6];
	PGresult *r = sy_store_exec(c, "INSERT INTO pooled_t VALUES ('x')", 0, NULL,
	                            PGRES_COMMAND_OK, "insert", state, &st, &err);
	CU_ASSERT_PTR_NULL(r);
	CU_ASSERT_EQUAL(st, SY_STORE_FAILED);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "synchro.client_encoding_is_not_utf8"));
	CU_ASSERT_EQUAL(PQpipelineStatus(c), PQ_PIPELINE_OFF);
	pgt_must(c, "SET client_encoding = 'UTF8'");
	CU_ASSERT_EQUAL(pgt_int(c, "SELECT count(*) FROM pooled_t", 0, NULL), 0);
	r = sy_store_exec(c, "INSERT INTO pooled_t VALUES ('x')", 0, NULL, PGRES_COMMAND_OK,
	                  "insert", state, &st, &err);
	CU_ASSERT_EQUAL(st, SY_STORE_OK);
	PQclear(r);
	CU_ASSERT_EQUAL(pgt_int(c, "SELECT count(*) FROM pooled_t", 0, NULL), 1);
	PQfinish(c);
}

/* A failing statement: its SQLSTATE, nothing left pending, the connection usable. */
static void test_failures(void)
{
	PGconn *c = fresh();
	sy_store_status st;
	sy_error err = {0};
	char state[6];
	PGresult *r = sy_store_exec(c, "SELECT 1 / 0", 0, NULL, PGRES_TUPLES_OK, "divide", state,
	                            &st, &err);
	CU_ASSERT_PTR_NULL(r);
	CU_ASSERT_EQUAL(st, SY_STORE_FAILED);
	CU_ASSERT_STRING_EQUAL(state, "22012");
	CU_ASSERT_EQUAL(PQpipelineStatus(c), PQ_PIPELINE_OFF);
	CU_ASSERT_EQUAL(PQtransactionStatus(c), PQTRANS_IDLE);
	/* In an explicit transaction: aborted until ROLLBACK, as without a pool. */
	CU_ASSERT_EQUAL(sy_store_command(c, "BEGIN", "begin", &err), SY_STORE_OK);
	r = sy_store_exec(c, "SELECT 1 / 0", 0, NULL, PGRES_TUPLES_OK, "divide", state, &st, &err);
	CU_ASSERT_PTR_NULL(r);
	CU_ASSERT_STRING_EQUAL(state, "22012");
	r = sy_store_exec(c, "SELECT 1", 0, NULL, PGRES_TUPLES_OK, "one", state, &st, &err);
	CU_ASSERT_PTR_NULL(r);
	CU_ASSERT_STRING_EQUAL(state, "25P02");
	sy_store_rollback(c);
	CU_ASSERT_EQUAL(PQtransactionStatus(c), PQTRANS_IDLE);
	r = sy_store_exec(c, PROBE, 0, NULL, PGRES_TUPLES_OK, "probe", NULL, &st, &err);
	expect_probe(r);
	PQclear(r);
	/* A wrong expectation is a failure too, the result cleared. */
	r = sy_store_exec(c, "SELECT 1", 0, NULL, PGRES_COMMAND_OK, "one", state, &st, &err);
	CU_ASSERT_PTR_NULL(r);
	CU_ASSERT_EQUAL(st, SY_STORE_FAILED);
	CU_ASSERT_EQUAL(PQpipelineStatus(c), PQ_PIPELINE_OFF);
	PQfinish(c);
}

/* The backend ends under the pipeline: a connection failure, no hang. */
static void test_connection_lost(void)
{
	PGconn *c = fresh();
	sy_store_status st;
	sy_error err = {0};
	PGresult *r = sy_store_exec(c, "SELECT pg_terminate_backend(pg_backend_pid())", 0, NULL,
	                            PGRES_TUPLES_OK, "terminate", NULL, &st, &err);
	CU_ASSERT_PTR_NULL(r);
	PQclear(r);
	CU_ASSERT_EQUAL(st, SY_STORE_CONNECTION);
	CU_ASSERT_EQUAL(PQstatus(c), CONNECTION_BAD);
	r = sy_store_exec(c, "SELECT 1", 0, NULL, PGRES_TUPLES_OK, "one", NULL, &st, &err);
	CU_ASSERT_PTR_NULL(r);
	CU_ASSERT_EQUAL(st, SY_STORE_CONNECTION);
	PQfinish(c);
}

int main(void)
{
	pgt_require_fixture();
	sy_store_set_pooler(SY_STORE_POOLER_TRANSACTION);
	sy_store_txn_lock_timeout("2000");
	static const CU_TestInfo tests[] = {
	        {"the store's settings with every statement, none left",
	         test_settings_per_statement},
	        {"timestamptz text of any offset in UTC", test_format_time_offsets},
	        {"explicit transactions keep them until COMMIT", test_explicit_transaction},
	        {"no statement on a session that is not UTF8", test_encoding_guard},
	        {"failures leave no pipeline", test_failures},
	        {"a lost connection under the pipeline", test_connection_lost},
	        {"binary statements: unnamed in the pool, prepared without", test_binary_statement},
	        {NULL, NULL},
	};
	sy_test_add_suite("pooled", tests);
	return sy_test_run();
}
