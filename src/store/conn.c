/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * conn.c: connecting to PostgreSQL, by conninfo or the libpq environment, then fixed
 * session settings.
 *
 * Layer: base of src/store (doc/hacking.md).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "store/conn.h"

/*
 * Every text the store reads or writes assumes these (timestamps, floats, bytea).
 * JIT is off: the store's statements are short, and one misestimated row count
 * once cost a pull 860 ms of compilation.
 */
static const char session_sql[] = "SELECT pg_catalog.set_config('DateStyle', 'ISO', false),"
                                  "       pg_catalog.set_config('TimeZone', 'UTC', false),"
                                  "       pg_catalog.set_config('extra_float_digits', '1', false),"
                                  "       pg_catalog.set_config('bytea_output', 'hex', false),"
                                  "       pg_catalog.set_config('jit', 'off', false)";

/*
 * The same for one transaction (behind a transaction pool), with the responders' lock_timeout
 * ($1; NULL keeps the server's). PgBouncer sets the client encoding its client asked for on
 * every server session it lends it; a session with another one fails this statement, so the
 * statement after it never runs there (the ELSE names a parameter that does not exist).
 */
static const char txn_sql[] =
        "SELECT pg_catalog.set_config('DateStyle', 'ISO', true),"
        "       pg_catalog.set_config('TimeZone', 'UTC', true),"
        "       pg_catalog.set_config('extra_float_digits', '1', true),"
        "       pg_catalog.set_config('bytea_output', 'hex', true),"
        "       pg_catalog.set_config('jit', 'off', true),"
        "       pg_catalog.set_config('lock_timeout',"
        "           COALESCE($1, pg_catalog.current_setting('lock_timeout')), true),"
        "       CASE WHEN pg_catalog.current_setting('client_encoding') = 'UTF8' THEN 'UTF8'"
        "            ELSE pg_catalog.current_setting('synchro.client_encoding_is_not_utf8') END";

/* One process, one mode (set by the program from its configuration before connecting). */
static sy_store_pooler pooler = SY_STORE_POOLER_NONE;
static char txn_lock_timeout[32];
static bool txn_lock_timeout_set;

bool sy_store_pooler_parse(const char *word, sy_store_pooler *out)
{
	if (word != NULL && strcmp(word, "none") == 0)
		*out = SY_STORE_POOLER_NONE;
	else if (word != NULL && strcmp(word, "transaction") == 0)
		*out = SY_STORE_POOLER_TRANSACTION;
	else
		return false;
	return true;
}

void sy_store_set_pooler(sy_store_pooler p)
{
	pooler = p;
}

sy_store_pooler sy_store_get_pooler(void)
{
	return pooler;
}

void sy_store_txn_lock_timeout(const char *value)
{
	txn_lock_timeout_set = value != NULL;
	snprintf(txn_lock_timeout, sizeof txn_lock_timeout, "%s", value ? value : "");
}

/* The first result of the pipeline's next query, the others cleared (libpq ends each with
 * NULL). NULL when the connection gave none. */
static PGresult *next_result(PGconn *c)
{
	PGresult *first = NULL, *x;
	while ((x = PQgetResult(c)) != NULL) {
		if (first == NULL)
			first = x;
		else
			PQclear(x);
	}
	return first;
}

/* Reads up to the pipeline's sync point; false when the connection ended first. */
static bool to_sync(PGconn *c)
{
	for (int nulls = 0; nulls < 2;) {
		PGresult *x = PQgetResult(c);
		if (x == NULL) {
			if (PQstatus(c) == CONNECTION_BAD)
				return false;
			nulls++;
			continue;
		}
		nulls = 0;
		bool sync = PQresultStatus(x) == PGRES_PIPELINE_SYNC;
		PQclear(x);
		if (sync)
			return true;
	}
	return false;
}

PGresult *sy_store_exec_pooled(PGconn *c, const char *sql, int nparams, const char *const *params,
                               ExecStatusType expect, const char *what, char sqlstate[6],
                               sy_store_status *st, sy_error *err)
{
	if (sqlstate)
		sqlstate[0] = '\0';
	if (PQpipelineStatus(c) != PQ_PIPELINE_OFF || PQisBusy(c) || !PQenterPipelineMode(c)) {
		*st = PQstatus(c) == CONNECTION_BAD ? SY_STORE_CONNECTION : SY_STORE_FAILED;
		sy_store_fail(err, *st, "%s: the connection is busy", what);
		return NULL;
	}
	const char *tp[] = {txn_lock_timeout_set ? txn_lock_timeout : NULL};
	/* Both statements before one sync: one implicit transaction, one round trip. */
	int queued = 0;
	if (PQsendQueryParams(c, txn_sql, 1, NULL, tp, NULL, NULL, 0) == 1) {
		queued++;
		if (PQsendQueryParams(c, sql, nparams, NULL, params, NULL, NULL, 0) == 1)
			queued++;
	}
	bool synced = PQpipelineSync(c) == 1;
	PGresult *set = NULL, *res = NULL;
	if (synced) {
		if (queued >= 1)
			set = next_result(c);
		if (queued >= 2)
			res = next_result(c);
		synced = to_sync(c);
	}
	bool left = PQexitPipelineMode(c) == 1;
	if (queued < 2 || !synced || !left) {
		/* The connection failed under the pipeline (or libpq could not send it): the
		 * caller drops a connection that is bad or still in pipeline mode. */
		PQclear(set);
		PQclear(res);
		*st = PQstatus(c) == CONNECTION_BAD || !left ? SY_STORE_CONNECTION
		                                             : SY_STORE_FAILED;
		char msg[SY_ERROR_MESSAGE_MAX];
		snprintf(msg, sizeof msg, "%s", PQerrorMessage(c));
		sy_store_fail(err, *st, "%s: %s", what,
		              msg[0] != '\0' ? msg : "the pipelined statement failed");
		return NULL;
	}
	if (set == NULL || PQresultStatus(set) != PGRES_TUPLES_OK) {
		PQclear(res); /* PGRES_PIPELINE_ABORTED: the statement did not run */
		return sy_store_result_failure(c, set, what, sqlstate, st, err);
	}
	PQclear(set);
	if (res != NULL && PQresultStatus(res) == expect) {
		*st = SY_STORE_OK;
		return res;
	}
	return sy_store_result_failure(c, res, what, sqlstate, st, err);
}

PGresult *sy_store_exec(PGconn *c, const char *sql, int nparams, const char *const *params,
                        ExecStatusType expect, const char *what, char sqlstate[6],
                        sy_store_status *st, sy_error *err)
{
	if (pooler == SY_STORE_POOLER_TRANSACTION)
		return sy_store_exec_pooled(c, sql, nparams, params, expect, what, sqlstate, st,
		                            err);
	return sy_store_exec_plain(c, sql, nparams, params, expect, what, sqlstate, st, err);
}

sy_store_status sy_store_session_setup(PGconn *c, sy_error *err)
{
	if (PQsetClientEncoding(c, "UTF8") != 0)
		return sy_store_fail(
		        err, PQstatus(c) == CONNECTION_BAD ? SY_STORE_CONNECTION : SY_STORE_FAILED,
		        "cannot set the client encoding to UTF8");
	/* Session settings would land on whichever server session the pool lent: each
	 * statement carries its own instead (sy_store_exec_pooled). */
	if (pooler == SY_STORE_POOLER_TRANSACTION)
		return SY_STORE_OK;
	sy_store_status st;
	PGresult *r = sy_store_exec_plain(c, session_sql, 0, NULL, PGRES_TUPLES_OK,
	                                  "session settings", NULL, &st, err);
	PQclear(r);
	return st;
}

bool sy_store_conninfo_check(const char *conninfo)
{
	/* libpq expands a dbname holding '=' or a URI; anything else is a plain database name. */
	bool expands =
	        conninfo && (strchr(conninfo, '=') || strncmp(conninfo, "postgres://", 11) == 0 ||
	                     strncmp(conninfo, "postgresql://", 13) == 0);
	if (!expands)
		return true;
	char *perr = NULL;
	PQconninfoOption *opts = PQconninfoParse(conninfo, &perr);
	if (perr)
		PQfreemem(perr);
	if (!opts)
		return false;
	PQconninfoFree(opts);
	return true;
}

PGconn *sy_store_connect(const char *conninfo, const char *application_name, sy_error *err)
{
	if (!sy_store_conninfo_check(conninfo)) {
		sy_store_fail(err, SY_STORE_INVALID,
		              "invalid connection string (not shown: it may hold a password)");
		return NULL;
	}
	const char *keys[] = {"fallback_application_name", "dbname", NULL};
	const char *vals[] = {application_name ? application_name : "synchro",
	                      conninfo ? conninfo : "", NULL};
	PGconn *c = PQconnectdbParams(keys, vals, 1);
	if (!c) {
		sy_store_fail(err, SY_STORE_NOMEM, "cannot connect: out of memory");
		return NULL;
	}
	if (PQstatus(c) != CONNECTION_OK) {
		/* libpq's message names host, port and user, never the password. */
		sy_store_fail(err, SY_STORE_CONNECTION, "cannot connect: %s", PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	if (sy_store_session_setup(c, err) != SY_STORE_OK) {
		PQfinish(c);
		return NULL;
	}
	return c;
}

void sy_store_disconnect(PGconn *c)
{
	sy_store_connection_forget(c);
	if (c)
		PQfinish(c);
}
