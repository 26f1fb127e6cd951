/* SPDX-License-Identifier: BSD-2-Clause */
/* What the files of test_push.pgt (synchro_push as the responders' role) share: the fixture,
 * the call and its answer as the tests read it, database state, the tests. */
#ifndef SY_PUSH_SUITE_H
#define SY_PUSH_SUITE_H

#include <CUnit/CUnit.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "pgtest.h"
#include "store/conn.h"
#include "store/migrations.h"
#include "store/push_call.h"
#include "store/schema.h"
#include "synchro/alloc.h"
#include "synchro/jcs.h"
#include "synchro/json.h"
#include "synchro/manifest.h"
#include "synchro/outcome.h"
#include "synchro/push.h"
#include "testutil.h"

#include "push_request.h"

#define APP_ROLE "test_push_app"

#define ALICE "alice"
#define BOB   "bob"

/* Clients registered in main(): alice's A1 (and A2..), bob's B1. */
#define CA1 "c0000000-0000-4000-8000-0000000000a1"
#define CA2 "c0000000-0000-4000-8000-0000000000a2"
#define CB1 "c0000000-0000-4000-8000-0000000000b1"

/* synchro_push's answer as the tests read it: an error body is parsed into its code,
 * message and schemas (and body is then empty); applied counts accepted outcomes. */
typedef struct {
	int http_status;
	sy_errcode error;
	char message[SY_ERROR_MESSAGE_MAX];
	bool replay;
	int retry_after;
	sy_schema_ref current;
	sy_schema_ref received;
	sy_buf body;
	size_t applied;
} answer;

typedef struct {
	answer a;
	sy_store_status st;
	sy_error err;
	sy_json_doc *doc; /* the 200 body, parsed */
	int parse_error;  /* the request did not parse (400 before the store) */
} result;

/* "\"<uuid>\"" of a fresh todo id, and the bare uuid. */
typedef struct {
	char id[SY_UUID_LEN + 1];
	char json[SY_UUID_LEN + 3];
} todo_id;

extern PGconn *db;
extern PGconn *app;
extern PGconn *mon;
extern sy_schema_ref cur;
extern sy_schema_ref schema_v1;
extern char *manifest_text;
extern unsigned long serial;

/* A fresh item id as its int64 wire value ("\"1001\""). */
void fresh_item(char out[32]);

void answer_clear(answer *a);
extern int cap_total, cap_client;

/* Runs synchro_push on c; SY_STORE_OK unless the statement itself failed. */
sy_store_status call_push(PGconn *c, const char *user, const char *json, int lock_timeout_ms,
                          answer *a, sy_error *err);

void result_free(result *r);

/* Runs one request as user on conn c; every 200 body is validated. */
result *push_on(PGconn *c, const char *user, const char *json, int lock_timeout_ms);

result *push_as(const char *user, const char *json);

/* Builds and runs one request of alice on CA1 (unless rs says otherwise). */
result *run(const char *user, const rspec *rs, const mspec *ms, size_t n,
            char (*ids)[SY_UUID_LEN + 1]);

void expect_200(const result *r);

void expect_error(const result *r, sy_errcode code);

char *jcs_of(const sy_json *v);

/* ---- database state ---- */

/* The fence version of (table, pk text), or "" when there is no fence. */
void fence_version(const char *table, const char *pk, char out[160]);

char *fence_field(const char *table, const char *pk, const char *column);

long long epoch(const char *client);

/* Whether the fixture's server log holds needle (with-pg exports SYNCHRO_PG_LOG). */
bool server_log_has(const char *needle);

long long count(const char *sql);

/* Registers client of alice at generation 1 (as the superuser). */
void add_client(const char *client);

void fresh_todo(todo_id *t);

/* Inserts todo t of user through push and returns its version in v. */
void make_todo(const char *user, const char *client, todo_id *t, char v[160]);

void make_item(char pk[32], const char *cols, char v[160]);

const char *bare(const char *json_string, char out[64]);

/* ---- the matrix ---- */

/* todo (hard delete, owner policy): every cell, each in a batch of its own. */
void test_matrix_todo(void);

/* item (soft delete, write all): the deleted state is a source tombstone, returned as a row. */
void test_matrix_item(void);

/* One non-atomic batch evaluates its mutations in order, each seeing the ones before. */
void test_sequential_batch(void);

/* Consecutive inserts share a round trip; a refusal inside the run leaves the others. */
void test_insert_run(void);

/* Every portable type goes in as its wire value and comes back exactly. */
void test_types(void);

/* ---- replay and identity ---- */

/* An exact replay answers the stored status and bytes and does nothing else. */
void test_replay(void);

/* A ledgered mutation moved into a new batch contributes its stored outcome. */
void test_cross_batch(void);

/* The same octets again are answered by the batch's request digest, before the parse; other
 * octets of the same request by the parse; retirement, the client's owner first. */
void test_replay_octets(void);

/* A body whose ids the peek cannot read executes and replays through the parse. */
void test_replay_unpeeked(void);

/* ---- atomic groups ---- */

void test_atomic_success(void);

/*
 * A run of inserts refused anywhere: each refused insert is settled as its own unit
 * would have been (deferred label check, existing row, immediate check), every other
 * one applied with its own mutation id on its fence, an update between runs.
 */
void test_insert_run_refusals(void);

/*
 * One run of 40 inserts, each with its own set of columns, so its own statement, on a
 * push state that starts empty: the statement table grows while the pipeline holds the
 * statements it prepares (they were moved by the growth once; AddressSanitizer saw the
 * pipeline write to the freed table).
 */
void test_insert_run_statements(void);

/* One run over two tables: each applied outcome carries its own row and version. */
void test_insert_run_tables(void);

/* In a non-atomic batch the unit boundary checks the deferred constraint per mutation. */
void test_nonatomic_deferred(void);

/* The first non-applied outcome stops the group; a conflict shows the committed row. */
void test_atomic_conflict(void);

/* ---- terminal rules ---- */

/* bob is refused on alice's todo, and the refusal shows nothing of her row. */
void test_policy(void);

void test_validation(void);

void test_table_not_synced(void);

/* accepted_write_epoch moves once per batch that applied anything, never otherwise. */
void test_epoch(void);

/* ---- gates ---- */

void test_gates(void);

/* Statements the session lost (DEALLOCATE ALL, a pooler) are prepared again. */
void test_lost_statements(void);

/*
 * Admission (429 retry_later with Retry-After) comes after every gate, holds across
 * every session (advisory-lock slots in the database, not per process), never refuses a
 * replay, and counts a concurrent duplicate of an executing batch once.
 */
void test_admission(void);

/*
 * The mutation ledger's answers (409 idempotency_conflict, the atomic 400s) precede the
 * generation, schema and admission gates, whichever round trip reads the ledger.
 */
void test_ledger_precedence(void);

/*
 * Deadlocks and serialization failures retry the whole transaction (three times at
 * most); past that the request is a 503 with nothing committed. A trigger fails the
 * first inserts of labels 'retry-N' with SQLSTATE 40001 / 40P01 (a sequence counts
 * across rollbacks).
 */
void test_retry(void);

/* 20 updates of one base from 20 clients at once: one applies, 19 are version conflicts. */
void test_concurrent_updates(void);

/* 20 copies of one request at once: one first execution, 20 identical bodies. */
void test_concurrent_identical(void);

/* An insert racing a committed insert of the same identity: row_already_exists. */
void test_race_insert(void);

/* An insert racing a committed insert-and-delete: no resurrection, row_deleted. */
void test_race_resurrection(void);

/* Waiting longer than lock_timeout_ms for the client is a 503 with nothing committed. */
void test_lock_timeout(void);
void test_client_changed_while_waiting(void);
void test_client_changed_repeatable_read(void);

/* A connection lost mid-request is a 503 and SY_STORE_CONNECTION; a new one works. */
void test_connection_lost(void);

void test_schema_history(void);

#endif
