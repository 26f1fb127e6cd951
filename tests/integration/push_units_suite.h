/* SPDX-License-Identifier: BSD-2-Clause */
/* What the files of test_push_units.pgt (synchro_push's units, subtransactions and triggers)
 * share: the suite's tables, the statement and its answer as the tests read it, database
 * state, the child responders, the tests. */
#ifndef SY_PUSH_UNITS_SUITE_H
#define SY_PUSH_UNITS_SUITE_H

#include <CUnit/CUnit.h>
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
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

#define APP_ROLE    "test_units_app"
#define PUBLIC_ROLE "test_units_public"
#define CHILD_APP   "units_child"

#define ALICE "alice"
#define CA1   "c0000000-0000-4000-8000-0000000000a1"

/* The manifest entries of the suite's tables (text pk "id" unless said otherwise). */
#define FIELD(name, nullable, writable)                                                            \
	"{\"field_id\": \"" name "\", \"column\": \"" name "\", \"type\": \"text\", "              \
	"\"nullable\": " nullable ", \"writable\": " writable "}"
#define TABLE(name, fields)                                                                        \
	"    {\"table_id\": \"" name "\", \"relation\": \"public." name "\",\n"                    \
	"     \"pk\": {\"field_id\": \"id\", \"column\": \"id\", \"type\": \"text\"},\n"           \
	"     \"fields\": [" fields "],\n"                                                         \
	"     \"delete\": {\"mode\": \"hard\"}, \"policy\": {\"read\": \"all\", \"write\": "       \
	"\"all\"}}"

/* A fresh text key "<prefix>-<n>" as its JSON value and bare. */
typedef struct {
	char id[40];
	char json[44];
} ukey;

/* What one statement answered, without CUnit (children use it too). */
typedef struct {
	bool ok;           /* the statement returned its row */
	bool conn_lost;    /* the connection is gone */
	char sqlstate[6];  /* of a failed statement */
	char message[256]; /* of a failed statement */
	int status;        /* HTTP status */
	bool replay;       /* exact replay */
	int retry_after;   /* -1: null */
	char *body;        /* the exact body bytes (malloc, NUL-terminated) */
	size_t len;
} raw;

/* One push as the tests read it. */
typedef struct {
	raw raw;
	sy_errcode error; /* SY_ERR_NONE for a 200; SY_ERR__COUNT: the statement failed */
	sy_json_doc *doc; /* the 200 body, parsed and validated against the request */
	size_t applied;   /* accepted outcomes */
} result;

#define expect_200(r) expect_200_at((r), __FILE__, __LINE__)

#define expect_error(r, code) expect_error_at((r), (code), __FILE__, __LINE__)

#define CHECK_FENCE_MUTATION(table, pk, want)                                                      \
	do {                                                                                       \
		char *m_ = fence_field((table), (pk), "mutation_id");                              \
		CU_ASSERT_STRING_EQUAL(m_ ? m_ : "<no fence>", (want));                            \
		free(m_);                                                                          \
	} while (0)

#define no_ledger(json, ids, n) no_ledger_at((json), (ids), (n), __FILE__, __LINE__)

#define absent(table, id) absent_at((table), (id), __FILE__, __LINE__)

extern PGconn *db;
extern PGconn *app;
extern PGconn *mon;
extern sy_schema_ref cur;
extern char *manifest_text;
extern const char table_ren[];
extern unsigned long serial;

void fresh_key(ukey *k, const char *prefix);

raw push_raw(PGconn *c, const char *user, const char *json, int lock_timeout_ms);

void result_free(result *r);

/* Reads an answer: a 200 body is validated against its request (sy_outcome_validate_response),
 * an error body gives its code. */
result *read_answer(const raw *a, const char *json);

result *push_on(PGconn *c, const char *json);

/* Builds and runs one request of alice on CA1 as the responders' role, outside any
 * explicit transaction (the adapter's shape). */
result *run(const rspec *rs, const mspec *ms, size_t n, char (*ids)[SY_UUID_LEN + 1]);

void expect_200_at(const result *r, const char *file, int line);

void expect_error_at(const result *r, sy_errcode code, const char *file, int line);

const char *version_of(const sy_json *o);

/* ---- database state (read as the superuser) ---- */

/* The fence version of (table, pk), or "" without a fence. */
void fence_version(const char *table, const char *pk, char out[160]);

/* A column of the fence of (table, pk) as text ("<null>"; NULL without a fence). */
char *fence_field(const char *table, const char *pk, const char *column);

long long count(const char *sql);

/* A column of a row of the suite's table (text), NULL when there is no row. */
char *row_field(const char *table, const char *id, const char *column);

long long epoch(void);

long long seq_value(const char *seq);

/* Nothing of a request remains: no batch row, no mutation row of ids. */
void no_ledger_at(const char *json, char (*ids)[SY_UUID_LEN + 1], size_t n, const char *file,
                  int line);

/* No row and no fence of (table, id). */
void absent_at(const char *table, const char *id, const char *file, int line);

bool server_log_has(const char *needle);

/* Runs sql on c expecting the SQLSTATE (the transaction, if any, is then aborted). */
bool fails_with(PGconn *c, const char *sql, const char *state);

void test_pending_event(void);

/*
 * doc/contract.md#push-units: after a first execution, every deferrable constraint of the calling
 * transaction is IMMEDIATE. Seen from a caller's explicit transaction: a deferred event queued
 * after the call fires at its own statement, not at commit, also when no unit of the call was
 * released (a refusal, a conflict).
 */
void test_mode_after_push(void);

/* ---- 2. authority ---- */

void test_trigger_authority(void);

/* ---- 3. one subtransaction per unit ---- */

void test_unit_modes(void);

void test_unit_end_refusals(void);

void test_unit_end_operational(void);

/* ---- 4. the row after its unit ---- */

void test_row_after_unit(void);

/* ---- 5. no redo ---- */

void test_no_redo(void);

/* ---- 6. fences of deferred writes ---- */

void test_deferred_fences(void);

/*
 * The push's own names (synchro.mutation_id, client_id, user_id, no_resurrection) and its
 * lock_timeout end with the call: a direct write later in the caller's transaction is a
 * direct write (its fence names no mutation), not the last unit's.
 */
void test_settings_end_with_call(void);

/* ---- 7. conflicts whatever the pk's deferrability ---- */

/* Makes (table, id) live through a push; its version in v. */
void make_row(const char *table, const ukey *k, const char *cols, char v[160]);

void test_deferrable_pk(void);

/*
 * doc/protocol.md ("Terminal checks come before the compare-and-swap;
 * constraints come with the write": "Only a mutation the matrix applies writes, and only then
 * does the database evaluate its constraints and triggers"; an insert's refusal "is
 * classified from the committed state ..., the answer a read first would give"): an insert
 * over a live or deleted identity is a conflict even when its values would fail a constraint
 * or a trigger, it executes nothing (no sequence default consumed), and a row conflict is
 * always a per-mutation 200 outcome (doc/contract.md#push-units), in a non-atomic as in an atomic
 * request. (74fb4ad, reverted by efa00a0, failed cases 0, 2 and 3 of the non-atomic request and
 * the execution count.)
 */
void test_conflict_before_write(void);

void test_pk_race(void);

/* A row without a fence (the trigger bypassed) fails the statement, never a write over it. */
void test_fenceless_row(void);

/* ---- 9. a backend killed mid-push ---- */

PGconn *connect_app(void);

void test_terminated(void);

void test_killed(void);

/* ---- 10. grants ---- */

void test_grants(void);

void test_publish_pk(void);

/* ---- 12. rows read and written without statements (test_push_units_direct.c) ---- */

void test_ledger_rows_direct(void);

void test_ledger_operator_changes(void);

void test_row_read_security(void);
void test_row_read_after_grant(void);

/* ---- 8. nothing caught reaches the server log (last: scans everything before) ---- */

void test_log_markers(void);

#endif
