/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * prepared.c: prepared statements, prepared lazily, once per connection.
 *
 * Layer: base of src/store (doc/hacking.md).
 * Notes: Behind a transaction pool, the statements run unnamed, with the store's settings
 * (store/conn.h).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "store/conn.h"
#include "store/prepared.h"

/*
 * A process holds up to SY_STORE_STMT_SLOTS long-lived connections (a responder's primary and
 * its read replica); a serial names each (connection, backend) seen in a slot. Statements
 * remember, per slot, the serial they were prepared under.
 */
static unsigned long next_serial = 1;
static struct {
	const PGconn *conn;
	int pid;
	unsigned long serial;
	unsigned long used; /* when last used, in next_serial ticks */
} seen[SY_STORE_STMT_SLOTS];
static unsigned long use_clock;

void sy_store_stmt_forget(void)
{
	memset(seen, 0, sizeof seen);
}

/*
 * The slot of c's current session, taking the least recently used one for a session not in a
 * slot; *serial receives the session's serial. A session that takes a slot may still hold
 * statements prepared under an earlier serial (its slot went to another connection, or
 * sy_store_stmt_forget() cleared it): they are deallocated first (DEALLOCATE is allowed inside
 * a transaction block), so preparing one again never meets 42P05, which would abort the open
 * transaction of a rebuild page.
 */
static int slot_of(PGconn *c, unsigned long *serial)
{
	int pid = PQbackendPID(c);
	int k = 0;
	for (int i = 0; i < SY_STORE_STMT_SLOTS; i++) {
		if (seen[i].serial != 0 && seen[i].conn == c && seen[i].pid == pid) {
			k = i;
			goto found;
		}
		if (seen[i].used < seen[k].used)
			k = i;
	}
	PQclear(PQexec(c, "DEALLOCATE ALL"));
	seen[k].conn = c;
	seen[k].pid = pid;
	seen[k].serial = next_serial++;
found:
	seen[k].used = ++use_clock;
	*serial = seen[k].serial;
	return k;
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

/* Prepares s on c unless this connection has it already; false (the failure reported) when
 * PostgreSQL refused it. */
static bool ensure_prepared(PGconn *c, sy_store_stmt *s, const char *what, char sqlstate[6],
                            sy_store_status *st, sy_error *err)
{
	unsigned long serial;
	int k = slot_of(c, &serial);
	if (s->prepared_on[k] == serial)
		return true;
	PGresult *p = PQprepare(c, s->name, s->sql, s->nparams, NULL);
	if (p == NULL || PQresultStatus(p) != PGRES_COMMAND_OK) {
		const char *code = p ? PQresultErrorField(p, PG_DIAG_SQLSTATE) : NULL;
		/* 42P05: already prepared on this connection (the serial was reset needlessly). */
		if (code == NULL || strcmp(code, "42P05") != 0) {
			(void)sy_store_result_failure(c, p, what, sqlstate, st, err);
			return false;
		}
	}
	PQclear(p);
	s->prepared_on[k] = serial;
	return true;
}

/* The statement is gone from the session (26000: DEALLOCATE ALL, DISCARD, a pooler that
 * switched sessions) or its plan no longer fits (0A000 "cached plan must not change result
 * type" after DDL), and nothing else was lost with it: the session is outside a transaction
 * block, so the failed statement ended its own implicit transaction. */
static bool prepare_again(PGconn *c, const PGresult *r)
{
	const char *code = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	return code != NULL && (strcmp(code, "26000") == 0 || strcmp(code, "0A000") == 0) &&
	       PQtransactionStatus(c) == PQTRANS_IDLE;
}

/* PQexecPrepared of s, preparing it first where this connection lacks it, and once more when
 * the session lost it; NULL (the failure reported) when it could not be prepared or libpq
 * gave no result. */
static PGresult *exec_prepared(PGconn *c, sy_store_stmt *s, const char *const *params,
                               const int *lengths, const int *formats, int result_format,
                               ExecStatusType expect, const char *what, char sqlstate[6],
                               sy_store_status *st, sy_error *err)
{
	if (!ensure_prepared(c, s, what, sqlstate, st, err))
		return NULL;
	PGresult *r = PQexecPrepared(c, s->name, s->nparams, params, lengths, formats,
	                             result_format);
	/* libpq gives no result at all when it cannot send (a connection lost meanwhile). */
	if (r == NULL)
		return failure(c, NULL, what, sqlstate, st, err);
	if (PQresultStatus(r) == expect)
		return r;
	if (!prepare_again(c, r))
		return r;
	PQclear(r);
	/* 0A000: the old statement is still there; 26000: DEALLOCATE answers an error, ignored. */
	char sql[128];
	snprintf(sql, sizeof sql, "DEALLOCATE %s", s->name);
	PQclear(PQexec(c, sql));
	unsigned long serial;
	s->prepared_on[slot_of(c, &serial)] = 0;
	if (!ensure_prepared(c, s, what, sqlstate, st, err))
		return NULL;
	r = PQexecPrepared(c, s->name, s->nparams, params, lengths, formats, result_format);
	return r != NULL ? r : failure(c, NULL, what, sqlstate, st, err);
}

PGresult *sy_store_exec_stmt(PGconn *c, sy_store_stmt *s, const char *const *params,
                             ExecStatusType expect, const char *what, char sqlstate[6],
                             sy_store_status *st, sy_error *err)
{
	/* Nothing outlives a transaction there: the statement goes unnamed with its settings. */
	if (sy_store_get_pooler() == SY_STORE_POOLER_TRANSACTION)
		return sy_store_exec_pooled(c, s->sql, s->nparams, params, expect, what, sqlstate,
		                            st, err);
	/* Text parameters and result: the binary form with nothing binary in it. */
	return sy_store_exec_stmt_binary(c, s, params, NULL, NULL, 0, expect, what, sqlstate, st,
	                                 err);
}

PGresult *sy_store_exec_stmt_binary(PGconn *c, sy_store_stmt *s, const char *const *params,
                                    const int *lengths, const int *formats, int result_format,
                                    ExecStatusType expect, const char *what, char sqlstate[6],
                                    sy_store_status *st, sy_error *err)
{
	if (sqlstate)
		sqlstate[0] = '\0';
	PGresult *r;
	if (sy_store_get_pooler() == SY_STORE_POOLER_TRANSACTION) {
		r = PQexecParams(c, s->sql, s->nparams, NULL, params, lengths, formats, result_format);
	} else {
		r = exec_prepared(c, s, params, lengths, formats, result_format, expect, what,
		                  sqlstate, st, err);
		if (r == NULL)
			return NULL;
	}
	if (r && PQresultStatus(r) == expect) {
		*st = SY_STORE_OK;
		return r;
	}
	return failure(c, r, what, sqlstate, st, err);
}
