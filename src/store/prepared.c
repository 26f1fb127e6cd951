/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Prepared statements, prepared lazily once per connection; behind a transaction pool, unnamed
 * statements with the store's settings (store/conn.h).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "store/conn.h"
#include "store/prepared.h"

/*
 * A process holds one long-lived connection at a time; the serial names it.
 * Statements remember the serial they were prepared under.
 */
static unsigned long conn_serial = 1;
static const PGconn *seen_conn;
static int seen_pid;

void sy_store_stmt_forget(void)
{
	conn_serial++;
	seen_conn = NULL;
	seen_pid = 0;
}

/* 26000 on a statement this process prepared: another server session answered. */
static PGresult *failure(PGconn *c, PGresult *r, const char *what, char sqlstate[6],
                         sy_store_status *st, sy_error *err)
{
	char state[6] = "";
	sy_store_result_failure(c, r, what, state, st, err);
	if (sqlstate)
		memcpy(sqlstate, state, sizeof state);
	if (strcmp(state, "26000") == 0 && err) {
		size_t n = strlen(err->message);
		snprintf(err->message + n, sizeof err->message - n,
		         " (behind a transaction pool? set [database] pooler = transaction)");
	}
	return NULL;
}

PGresult *sy_store_exec_stmt(PGconn *c, sy_store_stmt *s, const char *const *params,
                             ExecStatusType expect, const char *what, char sqlstate[6],
                             sy_store_status *st, sy_error *err)
{
	/* Nothing outlives a transaction there: the statement goes unnamed with its settings. */
	if (sy_store_get_pooler() == SY_STORE_POOLER_TRANSACTION)
		return sy_store_exec_pooled(c, s->sql, s->nparams, params, expect, what, sqlstate,
		                            st, err);
	if (sqlstate)
		sqlstate[0] = '\0';
	if (c != seen_conn || PQbackendPID(c) != seen_pid) {
		conn_serial++;
		seen_conn = c;
		seen_pid = PQbackendPID(c);
	}
	if (s->prepared_on != conn_serial) {
		PGresult *p = PQprepare(c, s->name, s->sql, s->nparams, NULL);
		if (p == NULL || PQresultStatus(p) != PGRES_COMMAND_OK) {
			const char *code = p ? PQresultErrorField(p, PG_DIAG_SQLSTATE) : NULL;
			/* 42P05: already prepared on this connection (the serial was reset
			 * needlessly). */
			if (code == NULL || strcmp(code, "42P05") != 0)
				return sy_store_result_failure(c, p, what, sqlstate, st, err);
		}
		PQclear(p);
		s->prepared_on = conn_serial;
	}
	PGresult *r = PQexecPrepared(c, s->name, s->nparams, params, NULL, NULL, 0);
	if (r && PQresultStatus(r) == expect) {
		*st = SY_STORE_OK;
		return r;
	}
	return failure(c, r, what, sqlstate, st, err);
}
