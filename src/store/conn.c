/* SPDX-License-Identifier: BSD-2-Clause */
/* Connecting to PostgreSQL: conninfo or the libpq environment, then fixed session settings. */
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

sy_store_status sy_store_session_setup(PGconn *c, sy_error *err)
{
	if (PQsetClientEncoding(c, "UTF8") != 0)
		return sy_store_fail(
		        err, PQstatus(c) == CONNECTION_BAD ? SY_STORE_CONNECTION : SY_STORE_FAILED,
		        "cannot set the client encoding to UTF8");
	sy_store_status st;
	PGresult *r = sy_store_exec(c, session_sql, 0, NULL, PGRES_TUPLES_OK, "session settings",
	                            NULL, &st, err);
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
	if (c)
		PQfinish(c);
}
