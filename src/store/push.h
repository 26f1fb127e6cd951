/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The push path's SQL (ADR 002): the replay lookup, the gates that need the
 * database, and the first-execution transaction with its ledger writes.
 */
#ifndef SY_STORE_PUSH_H
#define SY_STORE_PUSH_H

#include "store/store.h"
#include "synchro/buf.h"
#include "synchro/push.h"
#include "synchro/scalar.h"

/*
 * Per-process push state: the statements prepared on the current connection
 * (noticed anew when the connection or its backend changes) and the schema
 * manifests read so far (published versions never change).
 */
typedef struct sy_store_push sy_store_push;

/* Returns new state the caller frees with sy_store_push_free(); NULL when out of memory. */
SY_MUST_CHECK sy_store_push *sy_store_push_new(void);
/* Accepts NULL. */
void sy_store_push_free(sy_store_push *p);

/* Admission control before a first execution (ADR dispatch step 9): false refuses (429). */
typedef bool (*sy_store_push_admit_fn)(void *arg, const char *client_id);
/* Withdraws an admission granted by the admit function. */
typedef void (*sy_store_push_leave_fn)(void *arg);

typedef struct {
	const char *user;             /* the authenticated user (sy_fp_user_valid) */
	const sy_push_request *req;   /* parsed by sy_push_parse() */
	int lock_timeout_ms;          /* > 0: SET LOCAL lock_timeout of the transaction */
	sy_store_push_admit_fn admit; /* NULL: always admitted */
	sy_store_push_leave_fn leave;
	void *admit_arg;
} sy_store_push_params;

/* The answer to one push request. */
typedef struct {
	int http_status;
	/*
	 * SY_ERR_NONE: body holds the 200 body to send (newly committed or, with
	 * replay, the exact stored bytes with their stored http_status). Otherwise
	 * the request-level error (message in message; schema_mismatch also fills
	 * current and received) whose canonical body the caller writes.
	 */
	sy_errcode error;
	char message[SY_ERROR_MESSAGE_MAX];
	bool replay; /* exact batch replay: answer with Synchro-Replay: batch */
	sy_schema_ref current;
	sy_schema_ref received;
	sy_buf body;
	/* Diagnostics (counts only; never logged with payloads). */
	unsigned attempts;    /* first-execution transactions started */
	unsigned round_trips; /* pipeline round trips to the server, lookup included */
	size_t applied;       /* mutations applied by this execution */
} sy_store_push_answer;

/* Frees the body; accepts a zeroed or already cleared answer. */
void sy_store_push_answer_clear(sy_store_push_answer *a);

/*
 * Runs one push request after the structural parse, in the ADR's dispatch order:
 * sy_push_check_schema() against the current schema (400), the client bound to
 * the user (401), retirement (409 client_retired), the batch and mutation replay
 * lookup (exact replay; 409 idempotency_conflict; 400 for an atomic request naming
 * a mutation ledgered by another batch), the generation gate (409
 * client_generation_expired), the schema gate (422 schema_mismatch), admission
 * (429 retry_later), then the first-execution transaction, retried up to three
 * times on a deadlock or serialization failure. The lookup is one round trip; the
 * transaction re-checks every gate under the client's row lock, so concurrent
 * requests with one batch identity execute once and the others replay its
 * response (or answer 503 when lock_timeout_ms passes first).
 *
 * c must be idle (no transaction, no pipeline); it is left idle. *out (zeroed by
 * the caller or cleared) always receives an answer, 503 temporary_unavailable on
 * every operational failure (nothing committed). Returns SY_STORE_OK, or the
 * failure behind a 503: SY_STORE_CONNECTION when the connection was lost (the
 * caller reconnects), SY_STORE_FAILED / SY_STORE_NOMEM otherwise, with a one-line
 * diagnostic in *err that holds no value of the request or of any row.
 */
SY_MUST_CHECK sy_store_status sy_store_push_handle(sy_store_push *p, PGconn *c,
                                                   const sy_store_push_params *params,
                                                   sy_store_push_answer *out, sy_error *err);

#endif
