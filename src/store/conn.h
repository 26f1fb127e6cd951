/* SPDX-License-Identifier: BSD-2-Clause */
/* Connecting to PostgreSQL with the session settings every store query relies on. */
#ifndef SY_STORE_CONN_H
#define SY_STORE_CONN_H

#include <libpq-fe.h>

#include "store/store.h"

/*
 * Whether libpq can parse conninfo (checked before connecting because libpq's own
 * parse errors quote pieces of the string, which may hold a password).
 */
bool sy_store_conninfo_check(const char *conninfo);
/*
 * Connects with conninfo (a libpq connection string or URI; NULL or "" uses the libpq
 * environment: PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD, PGSERVICE, ...), with
 * application_name as the fallback application name. Then fixes the session: client
 * encoding UTF8, DateStyle ISO, TimeZone UTC, extra_float_digits 1, bytea_output hex.
 * Returns the connection the caller closes with sy_store_disconnect(); NULL with *err
 * set to one line that never repeats the connection string (it may hold a password).
 */
SY_MUST_CHECK PGconn *sy_store_connect(const char *conninfo, const char *application_name,
                                       sy_error *err);
/* Applies the session settings again (after PQreset). */
SY_MUST_CHECK sy_store_status sy_store_session_setup(PGconn *c, sy_error *err);
/* Accepts NULL. */
void sy_store_disconnect(PGconn *c);

#endif
