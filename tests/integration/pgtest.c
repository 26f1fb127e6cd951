/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers of the CUnit integration suites (tests/integration/pgtest.h). */
#include "config.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgtest.h"

void pgt_require_fixture(void)
{
	const char *tmp = getenv("SYNCHRO_PG_TMP");
	if (tmp == NULL || *tmp == '\0') {
		fprintf(stderr, "not inside tests/integration/with-pg (no SYNCHRO_PG_TMP): skip\n");
		exit(77);
	}
}

PGconn *pgt_connect(const char *conninfo)
{
	PGconn *c = PQconnectdb(conninfo ? conninfo : "");
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "cannot connect (%s): %s", conninfo ? conninfo : "",
		        PQerrorMessage(c));
		PQfinish(c);
		exit(99);
	}
	return c;
}

void pgt_must(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	ExecStatusType s = PQresultStatus(r);
	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
		fprintf(stderr, "setup failed: %s\n-- in:\n%.2000s\n", PQerrorMessage(c), sql);
		PQclear(r);
		exit(99);
	}
	PQclear(r);
}

static void fail_at(const char *file, int line, const char *what, PGconn *c, const char *sql)
{
	fprintf(stderr, "%s:%d: %s\n  sql: %.500s\n  error: %s", file, line, what, sql,
	        c ? PQerrorMessage(c) : "\n");
	CU_assertImplementation(CU_FALSE, (unsigned)line, what, file, "", CU_FALSE);
}

static void pass_at(const char *file, int line)
{
	CU_assertImplementation(CU_TRUE, (unsigned)line, "database answered as required", file, "",
	                        CU_FALSE);
}

bool pgt_exec_at(PGconn *c, const char *sql, const char *file, int line)
{
	PGresult *r = PQexec(c, sql);
	ExecStatusType s = PQresultStatus(r);
	PQclear(r);
	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
		fail_at(file, line, "SQL failed", c, sql);
		return false;
	}
	pass_at(file, line);
	return true;
}

PGresult *pgt_query_at(PGconn *c, const char *sql, int nparams, const char *const *params,
                       const char *file, int line)
{
	PGresult *r = PQexecParams(c, sql, nparams, NULL, params, NULL, NULL, 0);
	ExecStatusType s = PQresultStatus(r);
	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
		fail_at(file, line, "SQL failed", c, sql);
		PQclear(r);
		return NULL;
	}
	pass_at(file, line);
	return r;
}

char *pgt_value_at(PGconn *c, const char *sql, int nparams, const char *const *params,
                   const char *file, int line)
{
	PGresult *r = pgt_query_at(c, sql, nparams, params, file, line);
	if (r == NULL)
		return NULL;
	if (PQntuples(r) != 1 || PQnfields(r) != 1) {
		char what[96];
		snprintf(what, sizeof what, "expected 1 row of 1 column, got %d of %d",
		         PQntuples(r), PQnfields(r));
		fail_at(file, line, what, NULL, sql);
		PQclear(r);
		return NULL;
	}
	char *v = NULL;
	if (!PQgetisnull(r, 0, 0)) {
		v = strdup(PQgetvalue(r, 0, 0));
		if (v == NULL) {
			fprintf(stderr, "out of memory\n");
			exit(99);
		}
	}
	PQclear(r);
	return v;
}

long long pgt_int_at(PGconn *c, const char *sql, int nparams, const char *const *params,
                     const char *file, int line)
{
	char *v = pgt_value_at(c, sql, nparams, params, file, line);
	if (v == NULL) {
		fail_at(file, line, "expected an integer, got NULL or nothing", NULL, sql);
		return -1;
	}
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	bool ok = errno == 0 && end != v && *end == '\0';
	free(v);
	if (!ok) {
		fail_at(file, line, "expected an integer value", NULL, sql);
		return -1;
	}
	return n;
}

bool pgt_fails_at(PGconn *c, const char *sql, const char *sqlstate, const char *file, int line)
{
	PGresult *r = PQexec(c, sql);
	ExecStatusType s = PQresultStatus(r);
	const char *got = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	bool ok = s == PGRES_FATAL_ERROR && got != NULL && strcmp(got, sqlstate) == 0;
	if (!ok) {
		char what[128];
		if (s == PGRES_FATAL_ERROR)
			snprintf(what, sizeof what, "expected SQLSTATE %s, got %s", sqlstate,
			         got ? got : "none");
		else
			snprintf(what, sizeof what, "expected SQLSTATE %s, the SQL succeeded",
			         sqlstate);
		fail_at(file, line, what, s == PGRES_FATAL_ERROR ? c : NULL, sql);
	} else {
		pass_at(file, line);
	}
	PQclear(r);
	return ok;
}

/* Simple query protocol, no test bookkeeping: the runner also runs outside tests. */
static bool run(PGconn *c, const char *sql, const char *what, int version)
{
	PGresult *r = PQexec(c, sql);
	ExecStatusType s = PQresultStatus(r);
	PQclear(r);
	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
		fprintf(stderr, "migration %d: %s: %s", version, what, PQerrorMessage(c));
		return false;
	}
	return true;
}

int pgt_migrate(PGconn *c, const sy_sql_migration *list, size_t count)
{
	int applied = 0;
	for (size_t i = 0; i < count; i++) {
		const sy_sql_migration *m = &list[i];
		char v[16];
		snprintf(v, sizeof v, "%d", m->version);
		const char *p[] = {v, m->name};
		if (!run(c, "BEGIN", "begin", m->version))
			return -1;
		/* Migration 1 creates the ledger of migrations. */
		bool done = false;
		PGresult *r = PQexec(c, "SELECT to_regclass('synchro.migrations') IS NOT NULL");
		bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
		bool have = ok && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
		PQclear(r);
		if (ok && have) {
			r = PQexecParams(c,
			                 "SELECT 1 FROM synchro.migrations WHERE version = $1::int",
			                 1, NULL, p, NULL, NULL, 0);
			ok = PQresultStatus(r) == PGRES_TUPLES_OK;
			done = ok && PQntuples(r) == 1;
			PQclear(r);
		}
		if (!ok) {
			fprintf(stderr, "migration %d: lookup: %s", m->version, PQerrorMessage(c));
			run(c, "ROLLBACK", "rollback", m->version);
			return -1;
		}
		if (done) {
			if (!run(c, "ROLLBACK", "rollback", m->version))
				return -1;
			continue;
		}
		if (!run(c, m->sql, m->name, m->version)) {
			run(c, "ROLLBACK", "rollback", m->version);
			return -1;
		}
		r = PQexecParams(c,
		                 "INSERT INTO synchro.migrations (version, name)"
		                 " VALUES ($1::int, $2)",
		                 2, NULL, p, NULL, NULL, 0);
		ok = PQresultStatus(r) == PGRES_COMMAND_OK;
		if (!ok)
			fprintf(stderr, "migration %d: recording: %s", m->version,
			        PQerrorMessage(c));
		PQclear(r);
		if (!ok) {
			run(c, "ROLLBACK", "rollback", m->version);
			return -1;
		}
		if (!run(c, "COMMIT", "commit", m->version))
			return -1;
		applied++;
	}
	return applied;
}
