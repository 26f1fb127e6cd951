/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_module.h: synchro_push, the push as one PostgreSQL statement. It holds the state of
 * one call and the interface between the module's files.
 *
 * Rules: doc/contract.md#request-path (the push is one statement).
 * Interface: Each file holds one concept of the contract:
 *
 *   push_entry.c        the SQL-callable function, the dispatch order, the answer
 *   push_memory.c       libsynchro's allocator over PostgreSQL memory contexts
 *   push_statements.c   saved SPI plans and the datums they take and return
 *   push_schemas.c      published manifests and the SQL of their tables
 *   push_gates.c        the calling transaction, client, retirement, generation, schema
 *   push_replay.c       exact replay of the same octets, mutation ledger lookup,
 *                       cross-batch replay
 *   push_admission.c    caps on first executions across every responder (advisory locks)
 *   push_subxact.c      the internal subtransaction, as PL/pgSQL's exception block
 *   push_terminal.c     the per-mutation rules decided without the row
 *   push_cas.c          row and fence locks, the matrix, row reads, the source write
 *   push_scope.c        the read scope of a row: owner, membership (locked), the policy
 *   push_row_read.c     a synced row read by its pk index (how, decided once per table)
 *   push_unit.c         one subtransaction per mutation of a non-atomic request
 *   push_atomic_group.c one subtransaction for an atomic request
 *   push_ledger.c       the response, the ledger rows and the accepted-write epoch
 *   ledger_insert.c     ledger rows through the table and index access methods
 *   ledger_guards.c     the ledger's row rules and triggers (migration 17)
 *   version_fence.c     the version-fence trigger of every synced table (migration 20)
 *
 * Notes: The house has three rules. The core (libsynchro) is called outside PG_TRY and
 * never sees an ereport: its allocator returns NULL. Module code reports every operational
 * failure with sp_fail(). That is an ERROR, which the entry point turns into a 503 after it
 * rolls everything back. Errors caught to classify an outcome are flushed, never logged.
 */
#ifndef SY_PG_PUSH_MODULE_H
#define SY_PG_PUSH_MODULE_H

#include "postgres.h"

#include "executor/spi.h"

#include "synchro/fingerprint.h"
#include "synchro/json.h"
#include "synchro/manifest.h"
#include "synchro/matrix.h"
#include "synchro/outcome.h"
#include "synchro/push.h"
#include "synchro/scalar.h"

/* ---- push_memory.c ---- */

/* Points libsynchro's allocator at cxt (every allocation until the next call). */
void sp_core_memory(MemoryContext cxt);
/* The context libsynchro allocates in now. */
MemoryContext sp_core_context(void);
/* The module's long-lived context (manifests, table SQL), created on first use. */
MemoryContext sp_cache_context(void);
/* Installs the allocator bridge (from _PG_init). */
void sp_memory_init(void);

/* ---- push_statements.c ---- */

/* A saved plan for sql (prepared once per backend, kept across calls). */
SPIPlanPtr sp_plan(const char *sql, int nargs, const Oid *types);
/* Runs plan; fails the request unless SPI reports expect (SPI_OK_SELECT, ...). */
void sp_run(SPIPlanPtr plan, const Datum *values, const char *nulls, int expect);
/* Runs a read-only plan under snap (no command counter advance, no snapshot of its own). */
void sp_run_snapshot(SPIPlanPtr plan, const Datum *values, Snapshot snap, int expect);
/* Column col (1-based) of row i of the last result as text (NULL when null), in the
 * current memory context. */
char *sp_text(uint64 i, int col);
bool sp_isnull(uint64 i, int col);
bool sp_bool(uint64 i, int col);
int64 sp_int(uint64 i, int col);
/* An int2, int4 or int8 datum of that type as int64. */
int64 sp_int_datum(Datum d, Oid type);
/* A bytea or text column's octets (detoasted, in the current context); NULL when null. */
char *sp_bytes(uint64 i, int col, size_t *len);
/* The octets of a bytea or text datum, detoasted and NUL-terminated, in the current context. */
char *sp_datum_bytes(Datum d, size_t *len);
/* Datums from C values, in the current memory context. */
Datum sp_text_datum(const char *s, size_t len);
Datum sp_uuid_datum(const char *uuid);
Datum sp_bytea_datum(const void *p, size_t len);

/* ---- push_index_probe.c ---- */

/* Primary-key probes of a table of schema synchro; a found row stays in slot until the next
 * probe or sp_probe_close. */
typedef struct {
	Relation rel, idx;
	TupleTableSlot *slot;
	void *entry; /* what the backend keeps of the table (push_index_probe.c); or NULL */
	bool found;
	int nkeys;                       /* key columns of the index */
	RegProcedure eq[INDEX_MAX_KEYS]; /* their equality procedures */
} sp_probe;

/* The snapshot of a group of probes, as SPI takes one for a statement (after advancing the
 * command counter); end it with sp_probe_snapshot_end. */
Snapshot sp_probe_snapshot(void);
void sp_probe_snapshot_end(Snapshot snap);
/* Opens synchro.<table> and its primary key (AccessShareLock until the transaction ends). */
void sp_probe_open(sp_probe *p, const char *table);
/* The visible row whose first nkeys primary-key columns equal values (typed as the index
 * columns); false when there is none. */
bool sp_probe_find(sp_probe *p, int nkeys, const Datum *values, Snapshot snap);
/* The visible row with the greatest primary key. */
bool sp_probe_find_last(sp_probe *p, Snapshot snap);
/* The row version at tid when it is visible (false, nothing found, when tid is invalid). */
bool sp_probe_fetch(sp_probe *p, ItemPointer tid, Snapshot snap);
/* Columns of the found row, by name: the datum (valid until the next probe), text (NULL when
 * null), an integer of any width (0 when null), or bytes as sp_datum_bytes. */
Datum sp_probe_get(sp_probe *p, const char *column, bool *isnull);
char *sp_probe_text(sp_probe *p, const char *column);
int64 sp_probe_int(sp_probe *p, const char *column);
char *sp_probe_bytes(sp_probe *p, const char *column, size_t *len);
/* Whether the table has the column. */
bool sp_probe_has(const sp_probe *p, const char *column);
void sp_probe_close(sp_probe *p);
/* The relcache callback of the probes' per-backend table entries (_PG_init). */
void sp_probe_forget(Datum arg, Oid relid);

/* ---- push_schemas.c ---- */

/* How a synced table's row is read without a statement (push_row_read.c). */
typedef struct sp_row_reader sp_row_reader;

/* A synced table of a cached manifest: quoted identifiers and its fixed statements. */
typedef struct {
	const sy_table *t;
	char *rel;           /* quoted, possibly schema-qualified */
	char *pk;            /* quoted pk column */
	char **cols;         /* quoted column per field of t */
	int owner;           /* index of the owner field in t->fields, or -1 */
	int scope;           /* index of the members path's hop-1 field in t->fields, or -1 */
	const char *pk_type; /* the PostgreSQL type the pk text is cast to */
	char *lock_sql;      /* $1 pk: the row FOR UPDATE (pk, then every field) */
	char *read_sql;      /* $1 pk: the row (pk, then every field) */
	char *delete_sql;    /* $1 pk: the hard or soft delete */
	/* $1 hop-1 value, $2 user: the live membership rows naming the user, FOR KEY SHARE
	 * (two hops: with the hop-1 row); NULL without a members policy */
	char *member_sql;
	sp_row_reader *reader;
} sp_table;

typedef struct sp_schema {
	int64 version;
	char hash[SY_HASH_HEX_LEN + 1];
	sy_manifest *m;
	sp_table *tables; /* per m->tables, built when first used as the current schema */
	struct sp_schema *next;
} sp_schema;

/* The published schema version (cached once read); NULL when no such version. */
sp_schema *sp_schema_get(int64 version);
/* The table info of t in s (s used as the current schema). */
const sp_table *sp_schema_table(sp_schema *s, const sy_table *t);

/* ---- the call ---- */

/* A mutation identity found in the mutation ledger. */
typedef struct {
	size_t index; /* in the request */
	bool same_batch;
	bool fp_equal;
	bool atomic_rejected; /* its stored outcome is atomic_batch_rejected */
	char *outcome;        /* the exact stored canonical outcome */
	size_t outcome_len;
} sp_ledgered;

/* What the gates read. */
typedef struct {
	bool client_found;
	bool bound;                 /* the client is the caller's */
	ItemPointerData client_tid; /* the client row version found */
	/* the lookup snapshot's count of completed transactions (0: unknown): a snapshot with
	 * the same count sees exactly what it saw (sp_lock_client) */
	uint64 completions;
	bool retired;
	int64 generation;
	int64 latest; /* the latest published schema version; 0: none */
	bool batch_found;
	bool batch_complete;
	bool batch_fp_equal; /* set by sp_compare_batch_fp, or by an equal request digest */
	int batch_status;
	char *response;
	size_t response_len;
	/* the batch row's fingerprint, compared with the request's once it is parsed */
	char *fp_algorithm;
	int fp_version;
	char *fp_domain;
	char *fp_digest;
	size_t fp_digest_len;
	/* the batch row's request digest (migration 19; NULL when it has none) */
	bool digest_column; /* synchro.batches has the column: the ledger writes it */
	char *request_digest;
	size_t request_digest_len;
	bool probed; /* the mutation ledger was read */
	sp_ledgered *led;
	size_t nled;
} sp_lookup;

/* A mutation's classification before its row is read (push_terminal.c). */
typedef struct {
	const sp_table *ti; /* NULL when the table is not in the current schema */
	unsigned rules;     /* SY_RULE_* that apply without the row */
	bool row_scoped;    /* the policy must be judged on the current row (push_scope.c) */
	const char *validation_message;
	const char *rule_message; /* of schema_incompatible, table_not_synced, policy none */
	const char **incompat;
	size_t nincompat;
	const char *pk_text; /* the key as PostgreSQL text (the fence pk) */
	const char **vals;   /* per column: PostgreSQL text input, NULL for null */
	const sy_field **fields;
} sp_pre;

typedef struct {
	sy_outcome o;
	bool decided;
	const sy_json *stored; /* cross-batch replay: the stored outcome */
} sp_res;

/* The state of one identity, copied out of a lock or a read. */
typedef struct {
	sy_row_state state;
	char *version; /* NULL without a fence */
	bool has_row;
	char **vals; /* per field of the table (text output, NULL for null) */
} sp_row;

typedef struct {
	/* the call's arguments */
	const char *user;
	sy_push_request *req;
	int lock_timeout_ms;
	int max_inflight;
	int max_per_client;
	int retry_after_s;
	bool admission_refused; /* sp_admit refused: the gate after every other (sp_decide) */
	/* identities as datums; looked_up: lk holds the head lookup of these, made with the
	 * ids peeked from the body (peek_client, peek_batch) before it was parsed */
	Datum user_d;
	Datum client_d;
	/* the client row version this call locked (sp_lock_client); invalid when none */
	ItemPointerData client_locked;
	Datum batch_d;
	bool looked_up;
	char peek_client[SY_UUID_LEN + 1];
	char peek_batch[SY_UUID_LEN + 1];
	/* the request's digest (request_digest.h), stored with the batch it executes */
	bool has_request_digest;
	uint8_t request_digest[SY_FP_DIGEST_LEN];
	sy_fingerprint bfp;
	sy_fingerprint *mfp; /* made when the mutation ledger is first needed */
	sp_lookup lk;
	sp_schema *cur;
	/* first execution */
	sy_json_doc *doc; /* outcomes and their rows */
	sp_pre *pre;
	sp_res *res;
	size_t applied;
	char server_time[SY_SERVER_TIME_LEN + 1];
	/* the answer */
	int status;
	sy_errcode error; /* SY_ERR_NONE: body is the 200 body (or a replay's stored one) */
	char message[SY_ERROR_MESSAGE_MAX];
	sy_schema_ref current;
	sy_schema_ref received;
	bool replay;
	char *body;
	size_t body_len;
	/* what the answer reports beside the body (migration 18): a 200 first execution's
	 * outcomes per sy_code, then its cross-batch replays; the SQLSTATE behind a 503 */
	bool has_counts;
	int32 counts[SY_CODE__COUNT + 1];
	char sqlstate[6];
} sp_push;

/* Gate decisions. SP_PROBE: a later gate refuses, but the mutation ledger, which
 * precedes it, was not read yet. */
typedef enum { SP_GO, SP_DONE, SP_PROBE } sp_next;

/* push_errors.c: a request-level error answer (the canonical body is written later). */
void sp_answer_error(sp_push *x, sy_errcode code, const char *fmt, ...) SY_PRINTF(3, 4);
/* An operational failure of the whole request: an ERROR (503 once rolled back). */
void sp_fail(const char *step) pg_attribute_noreturn();
/* A core allocation failed. */
void sp_nomem(const char *step) pg_attribute_noreturn();
/* A copy of s[0..len) in the outcome arena. */
char *sp_arena_dup(sp_push *x, const char *s, size_t len);

/* push_gates.c */
void sp_check_calling_transaction(void);
void sp_invalidate_deferrable(Datum arg, Oid relid);
void sp_lookup_head(sp_push *x);
void sp_compare_batch_fp(sp_push *x);
void sp_lock_client(sp_push *x);
sp_next sp_decide(sp_push *x);
void sp_current_schema(sp_push *x);

/* push_replay.c */
/* The request's digest; then, when the body's ids can be peeked, the head lookup of them
 * (x->looked_up), and true when the batch row found holds the same digest: the call's answer
 * is set (the stored response, or a refusal of a gate before replay). */
bool sp_replay_octets(sp_push *x, const char *body, size_t len);
void sp_probe_ledger(sp_push *x);
void sp_take_stored(sp_push *x);

/* push_admission.c: false when a cap refuses (429); the slots last until the end of the
 * transaction. */
bool sp_admit(sp_push *x);

/* push_terminal.c */
void sp_prepare(sp_push *x);
void sp_set_terminal(sp_push *x, size_t k, sy_code code, const char *message);
bool sp_needs_row(const sp_push *x, size_t k);
void sp_settle_without_row(sp_push *x, size_t k);

/* push_cas.c */
/* The compare-and-swap's first half: k's row state (update and delete lock row, then fence)
 * and its classification; true when k may write. */
bool sp_lock_and_classify(sp_push *x, size_t k);
void sp_read(sp_push *x, size_t k, sp_row *row);
void sp_fill_row(sp_push *x, size_t k, const sp_row *row);
void sp_applied(sp_push *x, size_t k, const sp_row *row);
bool sp_classify(sp_push *x, size_t k, const sp_row *row);
void sp_write(sp_push *x, size_t k);
void sp_name_mutation(const sp_push *x, size_t k);
void sp_constraints(bool deferred);
bool sp_unit_error(int sqlerrcode);
void sp_refused(sp_push *x, size_t k, int sqlerrcode);
extern const char sp_msg_constraint[];

/* push_scope.c: the policy of mutation k judged on its current row (update and delete:
 * locked), before the matrix: *row becomes an absent row when the caller does not read it
 * (update, delete), and *rules gets SY_RULE_POLICY_REJECTED when the row or the new values
 * refuse the write. */
void sp_scope_judge(sp_push *x, size_t k, const sp_row **row, unsigned *rules);

/* push_row_read.c */
sp_row_reader *sp_row_reader_new(void);
/* Its invalidation callbacks (_PG_init): relcache; roles, role memberships, operators. */
void sp_row_reader_forget(Datum arg, Oid relid);
void sp_row_reader_forget_syscache(Datum arg, int cacheid, uint32 hashvalue);
/* read_sql's row of ti under snap without the statement; false, nothing read, when the table
 * must be read by read_sql (see there). */
bool sp_read_row_direct(const sp_table *ti, const char *pk_text, Snapshot snap, sp_row *row);

/* push_subxact.c: runs fn in an internal subtransaction, released when fn returns true and
 * rolled back when it returns false. NULL when fn returned; else fn raised, everything it
 * did is rolled back, and the caller owns the copied error (FreeErrorData, or ReThrowError),
 * which has not been logged. */
typedef bool (*sp_subxact_fn)(sp_push *x, void *arg);
ErrorData *sp_subtransaction(sp_subxact_fn fn, sp_push *x, void *arg);

/* push_unit.c / push_atomic_group.c */
void sp_run_units(sp_push *x);
void sp_run_group(sp_push *x);

/* push_ledger.c: the 200 body validated, the ledger rows and the epoch. */
void sp_finish(sp_push *x);

/* ledger_insert.c: ledger rows through the table and index access methods (and the client
 * row's epoch). */
typedef struct {
	const char *table;          /* of schema synchro */
	const char *const *columns; /* every column the rows have, by name */
	const Oid *types;           /* their types */
	int ncols;
	bool update;                 /* rows are updated (other columns kept), not inserted */
	const char *const *checks;   /* every CHECK, whose rules the caller applies; or NULL */
	const char *const *triggers; /* the INSERT (UPDATE) triggers whose rules it applies */
	const char *fk_table;        /* the one foreign key's table, its row locked; or NULL */
} sp_ledger_shape;

typedef struct {
	Relation rel;
	struct EState *estate;
	struct ResultRelInfo *rri;
	TupleTableSlot *slot;
	int *col; /* per attribute: its index in the shape's columns, -1 when dropped */
	CommandId cid;
} sp_ledger_table;

/* Opens the table for sp_ledger_insert: false when it is not exactly of the shape s (the
 * caller then writes by SQL; nothing is held but the table's RowExclusiveLock). */
bool sp_ledger_open(sp_ledger_table *t, const sp_ledger_shape *s);
/* One row, values and nulls in the shape's column order; refused as an INSERT would be. */
void sp_ledger_insert(sp_ledger_table *t, const Datum *values, const bool *nulls);
/* The row old (a slot holding a row of the table found under a snapshot taken after the
 * caller locked it) with the shape's column col set to value, a key column never; the
 * executor's refusals, and the index entries a non-HOT update needs. */
void sp_ledger_update(sp_ledger_table *t, TupleTableSlot *old, int col, Datum value);
/* Closes the table; the rows are visible to what follows (the command counter advances). */
void sp_ledger_close(sp_ledger_table *t);
/* The relcache callback of the ledger tables' per-backend shape entries (_PG_init). */
void sp_ledger_forget(Datum arg, Oid relid);

/* ledger_guards.c: the row rules of the ledger's CHECK constraints, called directly (their
 * arguments in the order of synchro.batch_row_rules and synchro.mutation_row_rules). */
void sp_batch_row_rules(const Datum *args, const bool *nulls);
void sp_mutation_row_rules(const Datum *args, const bool *nulls);
/* clients_accepted_epoch's logical message ("synchro-epoch", transactional), as it writes it. */
void sp_emit_accepted_epoch(Datum client, int64 epoch);

/* fence_store.c: the version fence's row of synchro.row_fences written through the table
 * and index access methods. */
/* The columns of synchro.row_fences, in the order of the upsert's values. */
enum {
	FC_TABLE_ID,
	FC_PK,
	FC_STATE,
	FC_VERSION,
	FC_MUTATION,
	FC_CLIENT,
	FC_USER,
	FC_XID,
	FC_LSN,
	FC_UPDATED,
	FC_N
};

/* How a fence row is written through the access methods (fence_store.c). */
typedef struct {
	bool checked; /* sp_fence_store_check ran for this statement */
	bool direct;  /* the table is as the migrations left it: write it directly */
	Oid relid, pkey;
	AttrNumber att[FC_N];
	IndexInfo *index;
} sp_fence_store;
/* Whether the fence table is as the migrations left it (s->direct), once per statement. */
void sp_fence_store_check(sp_fence_store *s, MemoryContext cxt);
/* The fence's upsert of values v (FC_TABLE_ID .. FC_USER, nulls 'n') as the statement runs
 * it; false when a push's insert (push_insert) meets a deleted fence, which it keeps. */
bool sp_fence_write_direct(sp_fence_store *s, const Datum *v, const char *nulls, bool push_insert);

#endif
