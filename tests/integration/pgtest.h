/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers of the CUnit integration suites that run inside tests/integration/with-pg: connect,
 * execute SQL that must succeed or must fail with one SQLSTATE, read single values, apply the
 * embedded migrations the way synchroctl's runner does. */
#ifndef SY_PGTEST_H
#define SY_PGTEST_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "store/migrations.h"

/* Exits 77 (skip) with a message unless the program runs inside with-pg (SYNCHRO_PG_TMP). */
void pgt_require_fixture(void);

/* Connects with PQconnectdb(conninfo) (NULL = ""), i.e. PGHOST/PGPORT/PGUSER/PGDATABASE of
 * the fixture; e.g. "user=test_app" or "dbname=other". Exits 99 after printing
 * PQerrorMessage when the connection fails: every suite needs its database. */
PGconn *pgt_connect(const char *conninfo);

/* Setup outside a test: runs sql (one or more statements, simple query protocol); exits 99
 * after printing the error when it fails. */
void pgt_must(PGconn *c, const char *sql);

/* Inside a test, every function below records a CUnit failure at the caller's file and line
 * (and prints the SQL and PQerrorMessage to stderr) when the database does not answer as
 * required; they never abort the test. */

/* Runs sql (simple query protocol, several statements allowed); true when it succeeded. */
bool pgt_exec_at(PGconn *c, const char *sql, const char *file, int line);
#define pgt_exec(c, sql) pgt_exec_at((c), (sql), __FILE__, __LINE__)

/* Runs one parameterized statement (text parameters, NULL entries are SQL NULL) that must
 * succeed; returns its result (the caller PQclear()s it), or NULL. */
PGresult *pgt_query_at(PGconn *c, const char *sql, int nparams, const char *const *params,
                       const char *file, int line);
#define pgt_query(c, sql, n, p) pgt_query_at((c), (sql), (n), (p), __FILE__, __LINE__)

/* Runs a statement that must return exactly one row of one column; returns a new string
 * (free()) holding the value, or NULL when the value is SQL NULL or the statement did not
 * answer as required (then the test failed). */
char *pgt_value_at(PGconn *c, const char *sql, int nparams, const char *const *params,
                   const char *file, int line);
#define pgt_value(c, sql, n, p) pgt_value_at((c), (sql), (n), (p), __FILE__, __LINE__)

/* As pgt_value for an integer value; -1 (and a failed test) when it is not one. */
long long pgt_int_at(PGconn *c, const char *sql, int nparams, const char *const *params,
                     const char *file, int line);
#define pgt_int(c, sql, n, p) pgt_int_at((c), (sql), (n), (p), __FILE__, __LINE__)

/* Runs sql, which must fail with exactly this SQLSTATE (e.g. "42501"); true when it did.
 * Inside a transaction block the transaction is then aborted: use a savepoint or ROLLBACK. */
bool pgt_fails_at(PGconn *c, const char *sql, const char *sqlstate, const char *file, int line);
#define pgt_fails(c, sql, state) pgt_fails_at((c), (sql), (state), __FILE__, __LINE__)

/* Applies the migrations of list not yet recorded in synchro.migrations, each in its own
 * transaction that also records it, as synchroctl's runner does. Returns how many it
 * applied, or -1 after printing the error (nothing of the failed migration remains). */
int pgt_migrate(PGconn *c, const sy_sql_migration *list, size_t count);

#endif
