/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_call.h: the push as one statement (migration 13), and the adapter's side of it over
 * libpq.
 *
 * Rules: doc/contract.md#request-path (the push is one statement).
 * Notes: Inside PostgreSQL, synchro.synchro_push runs every gate after authentication and
 * the protocol gate. It runs the replay, admission and the first execution.
 */
#ifndef SY_STORE_PUSH_CALL_H
#define SY_STORE_PUSH_CALL_H

#include "store/store.h"
#include "synchro/buf.h"

typedef struct {
	const char *user; /* the authenticated user (from the auth param) */
	const char *body; /* the request body as received, body_len octets */
	size_t body_len;
	int lock_timeout_ms; /* > 0: lock_timeout of the first execution */
	int max_inflight;    /* admission caps across every responder; 0: none */
	int max_inflight_per_client;
	int retry_after_s; /* Retry-After of a 429 or 503 */
} sy_store_push_params;

/* synchro_push's counts (migration 18): outcomes per sy_code (synchro/matrix.h), then the
 * mutations answered with another batch's stored outcome. */
#define SY_STORE_PUSH_COUNTS 11
#define SY_STORE_PUSH_REPLAYED 10

/* What synchro_push answered. */
typedef struct {
	int http_status;
	sy_buf body;     /* the exact body to send (a 200 body, a replay's, or an error body) */
	bool replay;     /* an exact batch replay: answer with Synchro-Replay: batch */
	int retry_after; /* seconds for Retry-After (429, 503); 0: none */
	/* For the metrics, never for the answer: */
	char error[32];  /* the request-level error code ("retry_later"); "" for a 200 */
	bool has_counts; /* a first execution answered 200: counts holds its outcomes */
	int counts[SY_STORE_PUSH_COUNTS];
	char sqlstate[6]; /* the SQLSTATE that rolled a first execution back (503); "" none */
} sy_store_push_answer;

/* Frees the body; accepts a zeroed or already cleared answer. */
void sy_store_push_answer_clear(sy_store_push_answer *a);

/*
 * Runs "SELECT status, response, replay, retry_after, error, counts, sqlstate FROM
 * synchro.synchro_push(...)" (migration 18) as one
 * unnamed statement in its own
 * (implicit) transaction: c must be idle, and it works through a pooler in transaction
 * mode. A deadlock or serialization failure (which synchro_push rolled back) runs it
 * again, three attempts in all. Returns SY_STORE_OK with *out filled, or the failure behind a 503
 * the caller answers itself: SY_STORE_CONNECTION when the connection was lost (reconnect),
 * SY_STORE_FAILED otherwise, with the step and SQLSTATE in *err (never a value: the
 * function's own errors carry none). sqlstate (may be NULL) receives the SQLSTATE.
 * Every failed attempt's SQLSTATE also reaches the store's error observer (store.h).
 */
SY_MUST_CHECK sy_store_status sy_store_push_call(PGconn *c, const sy_store_push_params *p,
                                                 sy_store_push_answer *out, char sqlstate[6],
                                                 sy_error *err);

#endif
