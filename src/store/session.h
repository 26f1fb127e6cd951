/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * session.h: what the responders ask the store outside push.
 *
 * Notes: They open a client generation (/v3/connect), read the current schema
 * (/v3/schema) and check liveness (/healthz). They set the per-session limits of a
 * responder's connection.
 */
#ifndef SY_STORE_SESSION_H
#define SY_STORE_SESSION_H

#include "store/store.h"
#include "synchro/scalar.h"

/*
 * Sets the session's lock_timeout (0: wait forever); behind a transaction pool, the one
 * every later statement sets for its transaction (sy_store_txn_lock_timeout).
 */
SY_MUST_CHECK sy_store_status sy_store_session_limits(PGconn *c, int lock_timeout_ms,
                                                      sy_error *err);

/* SELECT 1: SY_STORE_OK when the server answers. */
SY_MUST_CHECK sy_store_status sy_store_ping(PGconn *c, sy_error *err);

typedef enum {
	SY_CONNECT_OPENED,   /* registered (generation 1) or reconnected (generation n+1) */
	SY_CONNECT_FOREIGN,  /* the client belongs to another user (retired or not) */
	SY_CONNECT_RETIRED,  /* the caller's client is retired */
	SY_CONNECT_NO_SCHEMA /* no schema is published yet; nothing was written */
} sy_connect_result;

typedef struct {
	sy_connect_result result;
	long long generation;
	sy_schema_ref schema; /* the current schema (SY_CONNECT_OPENED) */
	char server_time[SY_STORE_TIME_LEN + 1];
} sy_store_connected;

/*
 * doc/contract.md#connect: registers client_id (a canonical UUID) to user with
 * generation 1, or opens generation n+1 of the user's client, in one statement
 * (one transaction; the client row lock orders concurrent connects, so each
 * gets its own generation, and orders them against a retirement). *out tells
 * which; server_time is the committing transaction's now().
 */
SY_MUST_CHECK sy_store_status sy_store_client_connect(PGconn *c, const char *user,
                                                      const char *client_id,
                                                      sy_store_connected *out, sy_error *err);

/*
 * The latest published schema: *ref and its manifest (the exact stored JCS
 * bytes, a new NUL-terminated string the caller frees with sy_free(); NULL to
 * skip). SY_STORE_NOT_FOUND when none is published.
 */
SY_MUST_CHECK sy_store_status sy_store_schema_current(PGconn *c, sy_schema_ref *ref,
                                                      char **manifest, size_t *manifest_len,
                                                      sy_error *err);

#endif
