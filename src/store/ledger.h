/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ledger.h: the batch and mutation ledgers for operators: inspection, and the purge after
 * retirement.
 */
#ifndef SY_STORE_LEDGER_H
#define SY_STORE_LEDGER_H

#include "store/store.h"
#include "synchro/scalar.h"

typedef struct {
	char state[16];       /* "claimed" or "complete" */
	int http_status;      /* 0 when not recorded yet */
	char fingerprint[65]; /* lowercase hex of the 32-byte request fingerprint */
	char fp_algorithm[32];
	int fp_version;
	char fp_domain[128];
	int protocol_version;
	long long client_generation;
	long long schema_version;
	char schema_hash[SY_HASH_HEX_LEN + 1];
	bool atomic;
	char created_at[SY_STORE_TIME_LEN + 1];
	char completed_at[SY_STORE_TIME_LEN + 1]; /* "" when not complete */
	long long mutation_count;
	/* Only when asked for: the exact stored response bytes (sy_free()); NULL otherwise. */
	char *response;
	size_t response_len;
} sy_store_batch;

/*
 * Fetches the ledger row of (user, client_id, batch_id). with_body also fetches the stored
 * response (protected sync metadata: callers show it only on explicit request).
 * SY_STORE_INVALID for a malformed id, SY_STORE_NOT_FOUND when there is no such batch.
 * Release with sy_store_batch_clear().
 */
SY_MUST_CHECK sy_store_status sy_store_ledger_batch(PGconn *c, const char *user,
                                                    const char *client_id, const char *batch_id,
                                                    bool with_body, sy_store_batch *out,
                                                    sy_error *err);
/* Frees the response; accepts a zeroed or already cleared struct. */
void sy_store_batch_clear(sy_store_batch *b);

/* One mutation ledger row of a batch; strings live for the duration of the callback. */
typedef struct {
	const char *mutation_id;
	int ordinal;
	const char *table_id;
	const char *pk;
	const char *operation;
	const char *status;      /* applied | conflict | rejected_terminal */
	const char *code;        /* "" when none */
	const char *fingerprint; /* hex */
	char completed_at[SY_STORE_TIME_LEN + 1];
	const char *outcome; /* exact stored outcome bytes when asked for, else NULL */
	size_t outcome_len;
} sy_store_mutation;

typedef bool (*sy_store_mutation_fn)(void *arg, const sy_store_mutation *m);

/* Calls fn for the mutations first recorded by the batch, by ordinal. */
SY_MUST_CHECK sy_store_status sy_store_ledger_mutations(PGconn *c, const char *user,
                                                        const char *client_id, const char *batch_id,
                                                        bool with_body, sy_store_mutation_fn fn,
                                                        void *arg, sy_error *err);

typedef struct {
	long long clients;   /* retired clients that had ledger rows */
	long long batches;   /* batch ledger rows deleted */
	long long mutations; /* mutation ledger rows deleted */
} sy_store_purged;

/*
 * Deletes, in one transaction, the batch and mutation ledger rows of retired clients
 * only (a client without a retirement marker keeps every row: doc/contract.md#ledger-retention).
 * Row fences, clients and retirement markers stay.
 */
SY_MUST_CHECK sy_store_status sy_store_ledger_purge_retired(PGconn *c, sy_store_purged *out,
                                                            sy_error *err);

#endif
