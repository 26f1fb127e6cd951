/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * conn.h: connecting to PostgreSQL with the settings every store query relies on.
 *
 * Notes: On a connection of its own, the settings are made once per session. Behind a
 * transaction pool ([database] pooler), every statement makes them.
 */
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
/*
 * Applies the session settings again (after PQreset). Behind a transaction pool only the
 * client encoding (PgBouncer keeps it for its client), the rest goes with every statement.
 */
SY_MUST_CHECK sy_store_status sy_store_session_setup(PGconn *c, sy_error *err);
/* Accepts NULL. */
void sy_store_disconnect(PGconn *c);

/* What stands between this process and PostgreSQL: [database] pooler of synchro.conf(5). */
typedef enum {
	/* A server session of our own (direct, or a session pool): settings and named prepared
	 * statements last as long as the connection. */
	SY_STORE_POOLER_NONE = 0,
	/* A transaction pool (PgBouncer pool_mode = transaction): the next transaction may run
	 * in another server session, so nothing may outlive the transaction. */
	SY_STORE_POOLER_TRANSACTION
} sy_store_pooler;

/* "none" or "transaction"; false for any other word. */
bool sy_store_pooler_parse(const char *word, sy_store_pooler *out);
/* The mode of every connection of this process; set it before the first connection. */
void sy_store_set_pooler(sy_store_pooler p);
sy_store_pooler sy_store_get_pooler(void);
/*
 * Behind a transaction pool: the lock_timeout (text, e.g. "2000") every later statement
 * runs with; NULL: the server's. (On a session of its own the caller sets it once.)
 */
void sy_store_txn_lock_timeout(const char *value);
/*
 * Runs sql with text parameters (values always go here, never into sql): as
 * sy_store_exec_plain() on a session of this process's own, as sy_store_exec_pooled() behind
 * a transaction pool ([database] pooler). Returns the result, which the caller clears, when
 * its status is `expect`. Otherwise clears it, sets *err to "what: <server's primary
 * message>" (one line), *st to SY_STORE_CONNECTION when the connection is gone and
 * SY_STORE_FAILED otherwise, copies the SQLSTATE into sqlstate (may be NULL; "" when none)
 * and returns NULL.
 */
SY_MUST_CHECK PGresult *sy_store_exec(PGconn *c, const char *sql, int nparams,
                                      const char *const *params, ExecStatusType expect,
                                      const char *what, char sqlstate[6], sy_store_status *st,
                                      sy_error *err);
/*
 * Behind a transaction pool: runs sql in one transaction with the settings of every store
 * statement (DateStyle ISO, TimeZone UTC, extra_float_digits 1, bytea_output hex, jit off,
 * the lock_timeout above), set with set_config(..., true) by a statement pipelined before it
 * in the same round trip and undone when that transaction ends; refuses a server session whose
 * client_encoding is not UTF8. Unnamed, never prepared. Inside an explicit transaction the
 * settings hold until its end. Result and errors exactly as sy_store_exec_plain().
 */
SY_MUST_CHECK PGresult *sy_store_exec_pooled(PGconn *c, const char *sql, int nparams,
                                             const char *const *params, ExecStatusType expect,
                                             const char *what, char sqlstate[6],
                                             sy_store_status *st, sy_error *err);

#endif
