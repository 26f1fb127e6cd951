/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_call.c: the adapter's side of synchro.synchro_push.
 *
 * Layer: middle of src/store (doc/hacking.md).
 * Notes: The push is one statement, binary in and out. It is prepared once per connection,
 * or runs unnamed behind a transaction pool. A deadlock runs it again after a pause.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/prepared.h"
#include "store/push_call.h"
#include "synchro/octets.h"
#include "synchro/sqlstate.h"

void sy_store_push_answer_clear(sy_store_push_answer *a)
{
	if (a != NULL)
		sy_buf_free(&a->body);
}

/* Prepared once per connection (parse, analysis and planning were a tenth of a one-mutation
 * push's backend CPU); unnamed behind a transaction pool. $1 text and $2 bytea take their
 * types from synchro_push's signature. */
static sy_store_stmt push_stmt = SY_STORE_STMT(
        "sy_push_call",
        "SELECT status, response, replay, retry_after, error, counts, sqlstate"
        "  FROM synchro.synchro_push($1, $2, $3::int4, $4::int4, $5::int4, $6::int4)",
        6);

/* doc/contract.md#operational-failures: a deadlock or serialization failure is tried again, a
 * bounded number of times. */
#define ATTEMPTS 3

/*
 * Before attempt n + 1: 10-40 ms times n, spread per process. Run at once, the loser of a
 * deadlock re-locks its first row before the winner, woken by the abort, takes it (a row
 * lock has no queue once its holder is gone), and meets the winner again: the e2e deadlock
 * case lost all three attempts that way under load, a deadlock_timeout apart.
 */
static void back_off(int n)
{
	static unsigned int seed;
	if (seed == 0)
		seed = (unsigned int)getpid() * 2654435761u;
	seed = seed * 1103515245u + 12345u;
	long ms = (10 + (long)((seed >> 16) % 31)) * n;
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* A binary text column into out (truncated to size - 1); "" when null. */
static void col_text(const PGresult *r, int col, char *out, size_t size)
{
	size_t n = PQgetisnull(r, 0, col) ? 0 : (size_t)PQgetlength(r, 0, col);
	if (n >= size)
		n = size - 1;
	memcpy(out, PQgetvalue(r, 0, col), n);
	out[n] = '\0';
}

/* The binary int4[] of counts (array_send: ndim, has-null flag, element type, then per
 * dimension its size and lower bound, then each element's length and value): true when it
 * is one dimension of n non-null int4. */
static bool col_counts(const PGresult *r, int col, int *out, size_t n)
{
	if (PQgetisnull(r, 0, col))
		return false;
	const unsigned char *p = (const unsigned char *)PQgetvalue(r, 0, col);
	size_t len = (size_t)PQgetlength(r, 0, col);
	if (len != 20 + n * 8 || sy_be_get(p, 4) != 1 || sy_be_get(p + 12, 4) != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		const unsigned char *e = p + 20 + i * 8;
		if (sy_be_get(e, 4) != 4)
			return false;
		out[i] = (int)(int32_t)sy_be_get(e + 4, 4);
	}
	return true;
}

/* A binary int4 column. */
static int col_int4(const PGresult *r, int col)
{
	if (PQgetisnull(r, 0, col) || PQgetlength(r, 0, col) != 4)
		return 0;
	return (int)(int32_t)sy_be_get((const unsigned char *)PQgetvalue(r, 0, col), 4);
}

sy_store_status sy_store_push_call(PGconn *c, const sy_store_push_params *p,
                                   sy_store_push_answer *out, char sqlstate[6], sy_error *err)
{
	sy_store_status st = SY_STORE_OK;
	char lt[16], mi[16], mc[16], ra[16];
	snprintf(lt, sizeof lt, "%d", p->lock_timeout_ms > 0 ? p->lock_timeout_ms : 0);
	snprintf(mi, sizeof mi, "%d", p->max_inflight > 0 ? p->max_inflight : 0);
	snprintf(mc, sizeof mc, "%d",
	         p->max_inflight_per_client > 0 ? p->max_inflight_per_client : 0);
	snprintf(ra, sizeof ra, "%d", p->retry_after_s > 0 ? p->retry_after_s : 1);
	const char *values[] = {p->user, p->body, lt, mi, mc, ra};
	int lengths[] = {0, (int)p->body_len, 0, 0, 0, 0};
	/* bytea travels as its octets (binary), never escaped or hex-encoded */
	int formats[] = {0, 1, 0, 0, 0, 0};
	if (sqlstate != NULL)
		sqlstate[0] = '\0';
	sy_buf_reset(&out->body);
	out->http_status = 0;
	out->replay = false;
	out->retry_after = 0;
	out->error[0] = out->sqlstate[0] = '\0';
	out->has_counts = false;
	if (p->body_len > (size_t)INT32_MAX)
		return sy_store_fail(err, SY_STORE_INVALID, "push: body too large");
	PGresult *r = NULL;
	for (int attempt = 1;; attempt++) {
		char state[6] = "";
		r = sy_store_exec_stmt_binary(c, &push_stmt, values, lengths, formats, 1,
		                              PGRES_TUPLES_OK, "push", state, &st, err);
		if (r != NULL && PQntuples(r) == 1 && PQnfields(r) == 7)
			break;
		if (r != NULL) {
			PQclear(r);
			st = sy_store_fail(err, SY_STORE_FAILED, "push: synchro_push answered no row");
		}
		if (sqlstate != NULL)
			memcpy(sqlstate, state, sizeof state);
		/* synchro_push rolled back everything: run it again in a new transaction */
		if (attempt < ATTEMPTS && st == SY_STORE_FAILED && sy_sqlstate_retryable(state)) {
			back_off(attempt);
			continue;
		}
		return st == SY_STORE_OK ? SY_STORE_FAILED : st;
	}
	out->http_status = col_int4(r, 0);
	out->replay = !PQgetisnull(r, 0, 2) && PQgetvalue(r, 0, 2)[0] != 0;
	out->retry_after = col_int4(r, 3);
	col_text(r, 4, out->error, sizeof out->error);
	out->has_counts = col_counts(r, 5, out->counts, SY_STORE_PUSH_COUNTS);
	col_text(r, 6, out->sqlstate, sizeof out->sqlstate);
	if (!sy_buf_append(&out->body, PQgetvalue(r, 0, 1), (size_t)PQgetlength(r, 0, 1))) {
		PQclear(r);
		return sy_store_fail(err, SY_STORE_NOMEM, "push: out of memory");
	}
	PQclear(r);
	return SY_STORE_OK;
}
