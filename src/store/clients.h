/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clients.h: clients and their irreversible retirement.
 *
 * Rules: doc/contract.md#retirement (retirement is permanent).
 */
#ifndef SY_STORE_CLIENTS_H
#define SY_STORE_CLIENTS_H

#include "store/store.h"
#include "synchro/scalar.h"

/* One client as listed; the pointed-to strings live for the duration of the callback. */
typedef struct {
	const char *client_id;
	const char *user_id;
	long long generation;
	long long accepted_write_epoch;
	long long materialized_write_epoch;
	char created_at[SY_STORE_TIME_LEN + 1];   /* server_time form */
	char last_seen_at[SY_STORE_TIME_LEN + 1]; /* "" when never */
	char retired_at[SY_STORE_TIME_LEN + 1];   /* "" when not retired */
} sy_store_client;

/* Return false to stop the listing. */
typedef bool (*sy_store_client_fn)(void *arg, const sy_store_client *client);

/*
 * Calls fn for each client of user (NULL: every user), ordered by user and client id,
 * retired ones included. *count (may be NULL) receives the number listed.
 */
SY_MUST_CHECK sy_store_status sy_store_client_list(PGconn *c, const char *user,
                                                   sy_store_client_fn fn, void *arg, size_t *count,
                                                   sy_error *err);

typedef struct {
	char client_id[SY_UUID_LEN + 1];
	char retirement_id[SY_UUID_LEN + 1];
	char retired_at[SY_STORE_TIME_LEN + 1];
} sy_store_retirement;

/*
 * Retires client_id of user in one transaction: writes the permanent marker
 * (synchro.retirements, a fresh retirement_id). SY_STORE_INVALID when client_id is
 * not a canonical UUID; SY_STORE_NOT_FOUND when the client is unknown or belongs to
 * another user (the message does not say which); SY_STORE_CONFLICT when it is already
 * retired (*out then describes the existing marker).
 */
SY_MUST_CHECK sy_store_status sy_store_client_retire(PGconn *c, const char *user,
                                                     const char *client_id,
                                                     sy_store_retirement *out, sy_error *err);

#endif
