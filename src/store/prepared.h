/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * prepared.h: named prepared statements for long-lived connections (the responders).
 *
 * Notes: Each statement is prepared on its connection the first time it runs there. After
 * a reconnect, it is prepared again on the next connection. A transaction pool keeps no
 * prepared statement from one transaction to the next. So there they run unnamed.
 */
#ifndef SY_STORE_PREPARED_H
#define SY_STORE_PREPARED_H

#include "store/store.h"

/*
 * How many long-lived connections a process alternates between without preparing its
 * statements again: a responder's primary and its read replica ([database] pull_conninfo).
 */
#define SY_STORE_STMT_SLOTS 2

/* A statement; define one `static sy_store_stmt` per statement text. */
typedef struct {
	const char *name; /* unique in the process: "sy_<module>_<what>" */
	const char *sql;
	int nparams;
	/* private: the serials of the connections it was prepared on, one per slot */
	unsigned long prepared_on[SY_STORE_STMT_SLOTS];
} sy_store_stmt;

#define SY_STORE_STMT(name, sql, nparams)                                                          \
	{                                                                                          \
		(name), (sql), (nparams), { 0 }                                                    \
	}

/*
 * Runs s with text parameters on c, preparing it first when this connection
 * has not seen it. Behind a transaction pool ([database] pooler = transaction)
 * it is never prepared: it runs unnamed, with the settings of every store
 * statement, through sy_store_exec_pooled(). Result and errors exactly as
 * sy_store_exec().
 */
SY_MUST_CHECK PGresult *sy_store_exec_stmt(PGconn *c, sy_store_stmt *s, const char *const *params,
                                           ExecStatusType expect, const char *what,
                                           char sqlstate[6], sy_store_status *st, sy_error *err);

/*
 * As sy_store_exec_stmt, with PQexecPrepared's parameter lengths and formats (e.g. a binary
 * bytea) and the result's format. Behind a transaction pool it runs unnamed with
 * PQexecParams, without the settings statement: the statement carries what it needs.
 */
SY_MUST_CHECK PGresult *sy_store_exec_stmt_binary(PGconn *c, sy_store_stmt *s,
                                                  const char *const *params, const int *lengths,
                                                  const int *formats, int result_format,
                                                  ExecStatusType expect, const char *what,
                                                  char sqlstate[6], sy_store_status *st,
                                                  sy_error *err);

/*
 * Forgets which statements were prepared (call after opening a new connection
 * or PQreset). A changed PGconn or backend process is also noticed on its own: up to
 * SY_STORE_STMT_SLOTS connections keep their statements side by side, the one used
 * least recently making room for a new one.
 */
void sy_store_stmt_forget(void);

#endif
