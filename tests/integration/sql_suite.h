/* SPDX-License-Identifier: BSD-2-Clause */
/* What the files of test_sql.pgt (the database contract against a real PostgreSQL) share: the
 * fixture's connection, fences and logical messages as the suite reads them, the tests. */
#ifndef SY_SQL_SUITE_H
#define SY_SQL_SUITE_H

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pgtest.h"
#include "store/migrations.h"
#include "testutil.h"

#define SLOT "synchro_t"

#define TODO1  "11111111-1111-4111-8111-111111111111"
#define TODO2  "22222222-2222-4222-8222-222222222222"
#define TODO3  "33333333-3333-4333-8333-333333333333"
#define MUT1   "a0000000-0000-4000-8000-000000000001"
#define MUT2   "a0000000-0000-4000-8000-000000000002"
#define CLI1   "c0000000-0000-4000-8000-000000000001"
#define HASH64 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define FP32   "'\\x" HASH64 "'::bytea"

/* One row fence; NULL columns read as "<null>". */
typedef struct {
	bool found;
	char state[16];
	char version[160];
	char mutation_id[40];
	char client_id[40];
	char user_id[64];
	char source_xid[24];
} fence;

/* One decoded logical message of prefix synchro. */
typedef struct {
	char xid[24];
	char table_id[32];
	char pk[64];
	char version[160];
	char state[16];
	char mutation_id[40];
	char client_id[40];
	char user_id[64];
	char owner_before[64];
	char owner_after[64];
	int nkeys;
} message;

#define MAX_MESSAGES 64

extern PGconn *db;

fence get_fence(const char *table_id, const char *pk);

bool is_hex32(const char *s);

/* The current transaction's xid as the 32-bit text the decoding output shows. */
void current_xid(char *dst, size_t size);

/* Consumes everything the test slot holds; returns the number of synchro messages stored
 * in out (in decoding order), or -1 after a failed assertion. Every message must be a
 * transactional one of prefix synchro whose content is a JSON object, except the
 * accepted-epoch messages of migration 5 (prefix synchro-epoch, tested with walsync). */
int drain(message *out, int max);
extern message msgs[MAX_MESSAGES];

/* Consumes whatever earlier tests left in the slot. */
void discard(void);

void check_message(const message *m, const char *xid, const char *table_id, const char *pk,
                   const char *version, const char *state, const char *mutation_id,
                   const char *client_id, const char *user_id, const char *owner_before,
                   const char *owner_after);

/* Every transition of a row mints a distinct random version and moves its fence; the
 * transaction-local settings name the push mutation and a later direct write clears them. */
void test_transitions(void);

/* A primary-key UPDATE of a synced row is refused (SQLSTATE SY001) and changes nothing. */
void test_pk_update_refused(void);

/* Versions are random: 1000 inserts mint 1000 distinct 32-hex versions that neither follow
 * the insert order nor share prefixes the way time-derived identifiers do. */
void test_versions_random(void);

/* One transactional message per row transition, in the transaction that made it, carrying
 * the fence's version; nothing for rolled-back work, savepoints included. */
void test_messages(void);

/* walsync's pgoutput stream (publication synchro, messages on) carries the fence messages
 * and no application row image: the publication holds synchro.row_fences alone (migration 15:
 * the fence transitions that vouch for each message). */
void test_pgoutput(void);

/*
 * The responders' role (migration 13): it registers clients and reads, but writes no
 * ledger, no fence and no application table; every push write is synchro_push's, as
 * synchro_owner. The ledger rules hold for the owner too: append-only, a claim
 * completes once.
 */
void test_app_role(void);

/* Retirement is permanent even for the owner; it alone makes ledger rows deletable. */
void test_retirement(void);

/* The owner cannot rewrite history either: complete batches, mutations, manifests. */
void test_ledger_immutable(void);

/* Fences for rows that predate the trigger, once each, with one message each. */
void test_backfill(void);

/* install_fence_trigger refuses configurations whose fences could be wrong, reinstalls in
 * place, and synced tables refuse TRUNCATE (it would skip the fences). */
void test_fence_config(void);

/* contrib/example: the manifest is the test vectors' copy, byte for byte, and every field
 * maps to a column of its portable type and nullability; no other column exists. */
void test_example(void);

#endif
