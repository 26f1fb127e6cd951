/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A fake Synchro server behind libsynchro-client's transport hook, for the unit
 * suites (no network): push with the matrix of doc/contract.md#operation-and-row-state-matrix,
 * exact batch replay and the mutation ledger, the generation and schema gates, atomic groups;
 * connect, schema, pull and rebuild; a fake clock; and knobs that fail, drop, delay or
 * corrupt responses. Responses are built with the core's own outcome encoder, so
 * they pass the validator the client runs unless a knob corrupts them.
 */
#ifndef SY_TEST_CLIENT_FAKE_H
#define SY_TEST_CLIENT_FAKE_H

#include "synchro/client.h"

typedef struct fake fake;

/* Non-zero while the fake itself runs (its allocations are exempt from injected failures). */
extern int fake_alloc_guard;

fake *fake_new(void);
void fake_free(fake *f);
/* The transport (ctx = f; destroy does nothing: the test frees f). */
sy_client_transport fake_transport(fake *f);
/* Options wired to f: transport, clock, sleep. */
void fake_options(fake *f, sy_client_options *o);
int64_t fake_now(fake *f);
/* The clock steps by ms (back when negative) during the client's next sleep. */
void fake_step_clock_at_sleep(fake *f, int64_t ms);
void fake_advance(fake *f, int64_t ms);

/* The next push answers status with the error code (Retry-After when >= 0), without executing. */
void fake_fail_next_push(fake *f, int status, const char *code, int retry_after);
/* The next push executes and commits, then its response is lost (status 0). */
void fake_drop_next_push(fake *f);
/* The next push's 200 body gets a corrupted row_checksum (not executed again on retry). */
void fake_corrupt_next_push(fake *f);
/* While held, a request stays in flight (poll returns 0). */
void fake_hold(fake *f, bool hold);
/* Another device writes the row directly (row_json: every non-pk field; NULL deletes). */
void fake_direct_write(fake *f, const char *table, const char *pk_json, const char *row_json);
/* The row leaves the user's read scope: from now on the server answers as if it had never
 * existed (no row, no fence), as it does for a row outside a user's scope. */
void fake_hide_row(fake *f, const char *table, const char *pk_json);
/* The row leaves the user's scope as fake_hide_row, and the next pull says so: a delete with
 * "left_scope": true at its current version. */
void fake_scope_exit(fake *f, const char *table, const char *pk_json);
/* Publishes schema v2: the todo table without the "note" field. */
void fake_publish_v2(fake *f);
/* Opens a new generation, as another connect of this client would. */
void fake_bump_generation(fake *f);
/* The next pull answers 409 rebuild_required. */
void fake_require_rebuild(fake *f);
/* The next rebuild page after the first carries a row whose checksum does not match it. */
void fake_bad_next_page(fake *f);
/* The next pull (after a cursor) answers 200 with a truncated body. */
void fake_garble_next_pull(fake *f);
/* 409 client_retired from now on. */
void fake_retire(fake *f);
/* From now on a request without this bearer token answers 401 auth_required; NULL: none needed. */
void fake_require_token(fake *f, const char *token);
/* The exact bytes of the push refused 401 number i (from 0), or NULL. */
const char *fake_refused_push(const fake *f, size_t i, size_t *len);

size_t fake_push_count(const fake *f);
/* The exact bytes of push number i (from 0). */
const char *fake_push_body(const fake *f, size_t i, size_t *len);
/* How many requests went to path. */
size_t fake_requests(const fake *f, const char *path);
/* Executed (non-replayed) first executions of mutations. */
size_t fake_executions(const fake *f);
/* The server's version of a row, or NULL. */
const char *fake_row_version(fake *f, const char *table, const char *pk_json);
/* The server's row JSON (non-pk fields), or NULL when absent or deleted. */
const char *fake_row(fake *f, const char *table, const char *pk_json);

#endif
