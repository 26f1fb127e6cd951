/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store.h: the store, the only code that speaks SQL: status codes, and the libpq helpers
 * its modules share.
 */
#ifndef SY_STORE_STORE_H
#define SY_STORE_STORE_H

#include <libpq-fe.h>

#include "synchro/buf.h"
#include "synchro/common.h"

/*
 * Outcome of a store operation. Details (one line, never a credential, never a
 * ledger body) go to the caller's sy_error.
 */
typedef enum {
	SY_STORE_OK = 0,
	SY_STORE_FAILED,     /* the database refused or failed the operation */
	SY_STORE_INVALID,    /* the input cannot be used (bad identifier, bad manifest) */
	SY_STORE_NOT_FOUND,  /* the named object does not exist (for the named user) */
	SY_STORE_CONFLICT,   /* the object is in a state that forbids it (e.g. already retired) */
	SY_STORE_CONNECTION, /* cannot connect, or the connection was lost */
	SY_STORE_NOMEM
} sy_store_status;

/* Receives one line of progress for the operator ("applied migration 2 (fences)"). */
typedef void (*sy_store_note_fn)(void *arg, const char *line);

/* Length of a timestamp as the store reports it: YYYY-MM-DDTHH:MM:SS.ffffffZ (server_time). */
#define SY_STORE_TIME_LEN 27

/*
 * A timestamptz as PostgreSQL prints it with DateStyle ISO ("2026-01-02 03:04:05.5+00"; any
 * offset, "+05:30", "-08", "+00:53:28", is converted to UTC exactly, so the session's TimeZone
 * does not matter) in server_time form ("2026-01-02T03:04:05.500000Z"). An empty pg (SQL NULL)
 * gives "". Text of any other shape (years past 9999 or before 1 in UTC, BC, infinity, no
 * offset) is copied as is, cut to fit, and false returned.
 */
bool sy_store_format_time(const char *pg, char out[SY_STORE_TIME_LEN + 1]);

/*
 * Runs sql with text parameters (values always go here, never into sql) as it is, on a server
 * session of this process's own, without the settings a transaction pool needs (most callers
 * want sy_store_exec() of store/conn.h, which adds them behind a pool). Returns the result,
 * which the caller clears, when its status is `expect`. Otherwise clears it, sets *err to
 * "what: <server's primary message>" (one line), *st to SY_STORE_CONNECTION when the
 * connection is gone and SY_STORE_FAILED otherwise, copies the SQLSTATE into sqlstate (may be
 * NULL; "" when none) and returns NULL.
 */
SY_MUST_CHECK PGresult *sy_store_exec_plain(PGconn *c, const char *sql, int nparams,
                                            const char *const *params, ExecStatusType expect,
                                            const char *what, char sqlstate[6], sy_store_status *st,
                                            sy_error *err);
/*
 * A process-wide observer of the errors PostgreSQL returned: fn (NULL: none) is called with
 * the SQLSTATE of every failed statement that carried one (the program's metrics count them
 * by class), before the failure is reported. arg is passed through.
 */
typedef void (*sy_store_error_observer)(const char *sqlstate, void *arg);
void sy_store_observe_errors(sy_store_error_observer fn, void *arg);

/*
 * Whether c can still carry this process's statements on the primary: open, not reported
 * in_hot_standby or default_transaction_read_only (PostgreSQL 14+ reports both), and its
 * server never answered with a SQLSTATE that ends the session's use (25006
 * read_only_sql_transaction: a standby or a fenced old primary; 57P0x: shutting down;
 * 08xxx). Not for a replica's connection (it is a standby). A failure with one of those is
 * SY_STORE_CONNECTION, like a lost connection: the caller drops the connection and the next
 * connect follows the conninfo to the current primary (doc/operations.md "Failover").
 */
bool sy_store_connection_usable(const PGconn *c);
/* Forgets c's mark before it is freed (sy_store_disconnect() does it). */
void sy_store_connection_forget(const PGconn *c);
/*
 * The failure report of sy_store_exec_plain() for a result r that is not the expected one
 * (r may be NULL): clears r, fills sqlstate, *st and *err as sy_store_exec_plain() does, and
 * returns NULL. For callers that send statements their own way (prepared, pipelined).
 * A SQLSTATE of sy_store_connection_usable()'s list gives SY_STORE_CONNECTION.
 */
PGresult *sy_store_result_failure(PGconn *c, PGresult *r, const char *what, char sqlstate[6],
                                  sy_store_status *st, sy_error *err);
/*
 * The same for a statement without rows (BEGIN, COMMIT, DDL): SY_STORE_OK or the failure.
 * Sent as it is, also behind a transaction pool (a BEGIN must be its transaction's first).
 */
SY_MUST_CHECK sy_store_status sy_store_command(PGconn *c, const char *sql, const char *what,
                                               sy_error *err);
/* Rolls back the open transaction, if any; best effort (used on failure paths). */
void sy_store_rollback(PGconn *c);

/*
 * "schema.name" or "name" as a quoted SQL identifier ("schema"."name") for statement
 * text; a new string the caller frees with sy_free(); NULL with *err set.
 */
SY_MUST_CHECK char *sy_store_quote_relation(PGconn *c, const char *relation, sy_error *err);
/* One quoted identifier; a new string the caller frees with sy_free(); NULL with *err set. */
SY_MUST_CHECK char *sy_store_quote_ident(PGconn *c, const char *name, sy_error *err);

/*
 * The names every operation on one client starts with: a non-empty user and a canonical
 * client id (a lowercase non-nil UUID). SY_STORE_OK, or SY_STORE_INVALID with *err set.
 */
SY_MUST_CHECK sy_store_status sy_store_check_client(const char *user, const char *client_id,
                                                    sy_error *err);

/* One step of a transaction (sy_store_transaction). */
typedef sy_store_status (*sy_store_txn_fn)(PGconn *c, void *arg, sy_error *err);
/*
 * Runs fn(c, arg, err) between BEGIN and COMMIT; rolls back when any of the three fails.
 * Returns fn's status, or the failure of BEGIN or COMMIT (c is left idle either way).
 */
SY_MUST_CHECK sy_store_status sy_store_transaction(PGconn *c, sy_store_txn_fn fn, void *arg,
                                                   sy_error *err);

/*
 * Appends one element of a text[] literal to b: "NULL" for a NULL s, else s double-quoted
 * with \ and " escaped; a comma before it unless first. b's failed flag records a lack of
 * memory.
 */
void sy_store_array_elem(sy_buf *b, bool first, const char *s);

/* Sets *err to msg and returns st (so callers can `return sy_store_fail(...)`). */
sy_store_status sy_store_fail(sy_error *err, sy_store_status st, const char *fmt, ...)
        SY_PRINTF(3, 4);

#endif
