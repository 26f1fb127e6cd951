/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_internal.h: the inside of libsynchro-client: the sy_client object and the helpers
 * its files share. It is not installed.
 *
 * Notes: Internal names are sy_cl_*. Public names are sy_client_*.
 */
#ifndef SYNCHRO_CLIENT_INTERNAL_H
#define SYNCHRO_CLIENT_INTERNAL_H

#include <sqlite3.h>

#include "synchro/buf.h"
#include "synchro/client.h"
#include "synchro/json.h"
#include "synchro/manifest.h"
#include "synchro/push.h"
#include "synchro/scalar.h"

/* What is in flight. */
typedef enum {
	SY_CL_REQ_NONE,
	SY_CL_REQ_CONNECT,
	SY_CL_REQ_SCHEMA,
	SY_CL_REQ_PUSH,
	SY_CL_REQ_PULL,
	SY_CL_REQ_REBUILD
} sy_cl_req;

typedef struct sy_cl_live sy_cl_live;

struct sy_client {
	sqlite3 *db;
	char client_id[SY_UUID_LEN + 1];
	sy_client_transport tr;
	char *token; /* the bearer token, wiped when freed; NULL: none */
	char *(*token_fn)(void *);
	void *token_ctx;
	int64_t (*clock_ms)(void *);
	void *clock_ctx;
	sy_client_listener listener;
	void *listener_ctx;
	unsigned pull_limit, rebuild_limit, batch_max, poll_interval_ms;

	/* durable state, cached from the meta table */
	uint64_t generation;  /* 0: connect needed */
	sy_schema_ref schema; /* version 0: no schema yet */
	sy_manifest *manifest;
	bool frozen, retired;

	/* volatile state of the state machine */
	sy_cl_req inflight;
	char inflight_batch[SY_UUID_LEN + 1];
	char *inflight_body; /* the bytes sent (push: the sealed bytes) */
	size_t inflight_len;
	const char *inflight_method, *inflight_path; /* string literals */
	char *rebuild_asked;     /* the page token the last rebuild request carried (NULL: first) */
	bool auth_retried;       /* this request went again after a 401 already */
	sy_client_response done; /* the completed response, once done_ready */
	bool done_ready;
	bool sealed_ahead; /* the next batch was sealed while this push is in flight */
	void (*sleep_ms)(void *, int64_t);
	bool need_connect; /* 409 client_generation_expired or first use */
	bool need_schema;  /* 422 schema_mismatch */
	bool pull_caught_up;
	bool stopped; /* auth, upgrade: needs the app */
	sy_client_phase phase;
	int64_t next_due_ms;
	int64_t clock_seen_ms; /* the clock at the last step: one read later is a step back */
	unsigned backoff_ms;
	struct {
		const char *sql; /* a string literal: looked up by its address */
		sqlite3_stmt *st;
	} cache[48]; /* prepared statements of the hot paths (client_store.c) */
	size_t ncache;
	struct {
		char batch_id[SY_UUID_LEN + 1];
		sy_push_request *req; /* its sealed bytes parsed, for the response validator */
	} reqs[2];
	char last_error[48];
	char last_message[256];
	bool last_retryable;
	sy_cl_live *live; /* the live subscription (client_live.c); NULL: none */

	/* The visible tables (client_visible.c): run before every COMMIT of the store. */
	sy_client_rc (*before_commit)(sy_client *c, sy_client_error *err);
	/* and before a statement replaces every server row (a rebuild's last page) */
	sy_client_rc (*rows_replacing)(sy_client *c, sy_client_error *err);
	struct sy_cl_visible *vis;
	/* The tables whose visible rows changed since the live queries last ran (new strings;
	 * changed_all: more than the array holds). */
	char *changed[32];
	size_t nchanged;
	bool changed_all;
	/* The app's queries (client_query.c): the read-only connection and the live queries,
	 * re-run by live_hook when a change is committed. */
	struct sy_cl_query *query;
	void (*live_hook)(sy_client *c);
};

struct sy_client_txn {
	sy_client *c;
	int64_t id;
	bool atomic;
};

/* client_live.c: the live subscription beside the transport (libcurl builds only) */
SY_MUST_CHECK sy_client_rc sy_cl_live_open(sy_client *c, const char *url, const char *user,
                                           const char *password, sy_client_error *err);
void sy_cl_live_close(sy_client *c);
/* Reads what arrived (a notification past the store's cursor kicks a pull) and subscribes
 * again when due. */
void sy_cl_live_step(sy_client *c, int64_t now);
/* Waits at most timeout_ms for the subscription; false when none is open. */
bool sy_cl_live_wait(sy_client *c, int timeout_ms);

/* errors.c-like helpers */
sy_client_rc sy_cl_fail(sy_client_error *err, sy_client_rc rc, const char *fmt, ...)
        SY_PRINTF(3, 4);
sy_client_rc sy_cl_store_fail(sy_client *c, sy_client_error *err, const char *what);
int64_t sy_cl_now(const sy_client *c);
void sy_cl_new_uuid(char out[SY_UUID_LEN + 1]);
/* client_version of now: RFC 3339 UTC with microseconds. */
void sy_cl_client_version(const sy_client *c, char out[SY_SERVER_TIME_LEN + 1]);

/* client_store.c: the SQLite schema, meta values, statements */
SY_MUST_CHECK sy_client_rc sy_cl_store_open(sy_client *c, const char *path, sy_client_error *err);
SY_MUST_CHECK sy_client_rc sy_cl_exec(sy_client *c, const char *sql, sy_client_error *err);
SY_MUST_CHECK sy_client_rc sy_cl_prepare(sy_client *c, const char *sql, sqlite3_stmt **st,
                                         sy_client_error *err);
/*
 * The cached form for statements run per row or per outcome: sql must be a string
 * literal (the cache keys on its address). The statement comes back reset and
 * unbound; give it back with sy_cl_release() (or run it with sy_cl_run_cached),
 * never sqlite3_finalize(): sy_client_close finalizes the cache.
 */
SY_MUST_CHECK sy_client_rc sy_cl_prepare_cached(sy_client *c, const char *sql, sqlite3_stmt **st,
                                                sy_client_error *err);
SY_MUST_CHECK sy_client_rc sy_cl_run_cached(sy_client *c, sqlite3_stmt *st, sy_client_error *err);
void sy_cl_release(sqlite3_stmt *st);
void sy_cl_cache_free(sy_client *c);
/* Steps a statement that returns no row (SQLITE_DONE) and finalizes it. */
SY_MUST_CHECK sy_client_rc sy_cl_run(sy_client *c, sqlite3_stmt *st, sy_client_error *err);
SY_MUST_CHECK sy_client_rc sy_cl_begin(sy_client *c, sy_client_error *err);
SY_MUST_CHECK sy_client_rc sy_cl_commit(sy_client *c, sy_client_error *err);
void sy_cl_rollback(sy_client *c);
/* Meta: a new string (sy_free) or NULL when absent. */
SY_MUST_CHECK sy_client_rc sy_cl_meta_get(sy_client *c, const char *key, char **value,
                                          sy_client_error *err);
SY_MUST_CHECK sy_client_rc sy_cl_meta_set(sy_client *c, const char *key, const char *value,
                                          sy_client_error *err);
SY_MUST_CHECK sy_client_rc sy_cl_meta_set_int(sy_client *c, const char *key, int64_t value,
                                              sy_client_error *err);
/* Loads generation, schema, manifest, flags into c. */
SY_MUST_CHECK sy_client_rc sy_cl_load_state(sy_client *c, sy_client_error *err);
/* Stores a schema version (and makes it current when current). */
SY_MUST_CHECK sy_client_rc sy_cl_schema_store(sy_client *c, const sy_schema_ref *ref,
                                              const char *manifest, size_t len, bool current,
                                              sy_client_error *err);
/* A historical manifest by version (new, sy_manifest_free) or NULL when unknown. */
sy_manifest *sy_cl_schema_manifest(sy_client *c, uint64_t version);
/* A column as a new string (NULL for SQL NULL). */
char *sy_cl_col_text(sqlite3_stmt *st, int i);

/* client_visible.c: the visible tables (see its head comment) */
/* The physical name of table's visible table ("visible:" then the table id), quoted for SQL,
 * appended to b. */
void sy_cl_visible_ident(sy_buf *b, const char *table);
/* Sets the maintenance up on an open store and builds the tables when they are not current. */
SY_MUST_CHECK sy_client_rc sy_cl_visible_open(sy_client *c, sy_client_error *err);
void sy_cl_visible_free(sy_client *c);
/* Checks every visible table against the overlay computed from scratch; a line per problem. */
void sy_cl_visible_verify(sy_client *c, sy_buf *rep, size_t *bad);
/* Clears the list of changed tables. */
void sy_cl_changed_clear(sy_client *c);

/* client_query.c */
void sy_cl_query_free(sy_client *c);
/* sy_client_query's result as {"tables":[the synced tables it reads],"rows":[row objects]}
 * appended to out (the browser API's answer: an integer beyond 2^53 - 1 is a string). */
SY_MUST_CHECK sy_client_rc sy_cl_query_json(sy_client *c, const char *sql, const char *params_json,
                                            sy_buf *out, sy_client_error *err);
/* Re-runs the live queries that read a table changed since they last ran. */
void sy_cl_live_run(sy_client *c);

/* client_events.c: the application's listener (the event of kind, table, pk, mutation id;
 * NULL where none). */
void sy_cl_emit(sy_client *c, sy_client_event_kind kind, const char *table, const char *pk,
                const char *mutation_id);
/* A ROW event for every {table, pk:{value}} of items (pull changes, push outcomes). */
void sy_cl_emit_rows(sy_client *c, const sy_json *items);

/* client_rows.c */
/* Writes a server row into rows (or a tombstone when row is NULL and deleted). */
SY_MUST_CHECK sy_client_rc sy_cl_row_put(sy_client *c, const char *table, const char *pk,
                                         const char *row, bool deleted, const char *server_version,
                                         const sy_schema_ref *schema, const char *checksum,
                                         bool rebuild, sy_client_error *err);
SY_MUST_CHECK sy_client_rc sy_cl_row_delete(sy_client *c, const char *table, const char *pk,
                                            sy_client_error *err);
/* The row left the user's scope (a pull's delete with left_scope): removed from rows, and
 * recorded in scope_exits while it has unsettled intents. */
SY_MUST_CHECK sy_client_rc sy_cl_row_exit(sy_client *c, const char *table, const char *pk,
                                          const char *server_version, sy_client_error *err);
/* Whether the row is recorded as having left the user's scope. */
SY_MUST_CHECK sy_client_rc sy_cl_row_left_scope(sy_client *c, const char *table, const char *pk,
                                                bool *left, sy_client_error *err);
/* The server_version of a stored row (new string) or NULL when absent. */
SY_MUST_CHECK sy_client_rc sy_cl_row_version(sy_client *c, const char *table, const char *pk,
                                             char **version, sy_client_error *err);

/* client_intent.c */
/* The visible state of one row: the server's row with the intents not yet settled laid over. */
typedef struct {
	bool known;      /* the server or an intent knows the row */
	bool visible;    /* live after the overlay */
	bool left_scope; /* the row left the user's scope: its intents do not show */
	sy_client_row_state state;
	char *row; /* new JCS object with the pk field, or NULL */
} sy_cl_overlay;
/* Computes (table, pk)'s overlay from the rows and intents tables (pk: its JCS text). */
SY_MUST_CHECK sy_client_rc sy_cl_overlay_compute(sy_client *c, const char *table, const char *pk,
                                                 sy_cl_overlay *out, sy_client_error *err);
SY_MUST_CHECK sy_client_rc sy_cl_state_from_name(const char *s, sy_intent_state *out);
/*
 * Adds an intent row inside the current SQLite transaction (writes, rebase,
 * remap, normalization). base may be NULL; pred the sealed predecessor (state
 * waiting) or NULL.
 */
SY_MUST_CHECK sy_client_rc sy_cl_intent_insert(
        sy_client *c, int64_t txn, bool normalized, int64_t ord, const char *table, const char *pk,
        const char *pk_field, const char *op, const char *columns, const char *base,
        const char *client_version, const sy_schema_ref *schema, const char *state,
        const char *pred, char id[SY_UUID_LEN + 1], sy_client_error *err);
/*
 * Whether the row has a pending, waiting or sealed intent (*any), and the newest
 * sealed one (*sealed_pred, new string, or NULL): a new intent of the row then
 * has no usable base and waits behind it.
 */
SY_MUST_CHECK sy_client_rc sy_cl_outstanding(sy_client *c, const char *table, const char *pk,
                                             bool *any, char **sealed_pred, sy_client_error *err);
/* Checks columns_json against table t (fields, writability, wire values); *out its JCS. */
SY_MUST_CHECK sy_client_rc sy_cl_check_columns(const sy_table *t, const char *columns_json,
                                               bool nonempty, char **out, sy_client_error *err);
SY_MUST_CHECK sy_client_rc sy_cl_new_txn(sy_client *c, bool atomic, int64_t *id,
                                         sy_client_error *err);

/* client_normalize.c: the same-row normalizations (doc/contract.md#normalization) (pure) */
typedef struct {
	sy_op op;
	bool has_base;
} sy_cl_chain_item;

typedef enum {
	SY_CL_NORM_SINGLE,   /* items[0] goes on the wire as it is */
	SY_CL_NORM_MERGED,   /* a new mutation of op replaces items[0..consumed) */
	SY_CL_NORM_CANCELLED /* items[0..consumed) have no server effect */
} sy_cl_norm_kind;

typedef struct {
	sy_cl_norm_kind kind;
	size_t consumed; /* items folded into this wire mutation (or cancelled) */
	sy_op op;        /* of the wire mutation */
} sy_cl_norm;

/* The first wire step of a same-row chain of unsealed intents (n >= 1). */
void sy_cl_normalize(const sy_cl_chain_item *items, size_t n, sy_cl_norm *out);
/* Merges column objects (JCS text each, later wins) into a new JCS object text (sy_free). */
SY_MUST_CHECK char *sy_cl_merge_columns(const char *const *columns, size_t n, sy_client_error *err);

/* client_seal.c */
/* Whether the state machine would push now: a sealed batch, or intents to seal (neither
 * counts when the queue is frozen or the client retired). */
SY_MUST_CHECK sy_client_rc sy_cl_push_due(sy_client *c, bool *due, sy_client_error *err);
/* Seals the next batch from pending intents; *sealed false when nothing is ready. */
SY_MUST_CHECK sy_client_rc sy_cl_seal_next(sy_client *c, bool *sealed, sy_client_error *err);
/*
 * Inside the caller's transaction: when the batch in flight is the only sealed one,
 * seals the next (*req its parsed request, new, and id; NULL when nothing was ready).
 * *ran: the sealing ran to its end (false: it failed and was undone alone, the
 * transaction's earlier work kept). An error: the transaction must be rolled back.
 */
SY_MUST_CHECK sy_client_rc sy_cl_seal_ahead(sy_client *c, bool *ran, char id[SY_UUID_LEN + 1],
                                            sy_push_request **req, sy_client_error *err);
/* Seals a successor of batch_id under the current generation and schema
 * (doc/contract.md#successor-batches). */
SY_MUST_CHECK sy_client_rc sy_cl_seal_successor(sy_client *c, const char *batch_id,
                                                sy_client_error *err);

/* client_request.c */
/* What a wire mutation carries of its intent row besides id, operation, columns and base. */
typedef struct {
	uint64_t schema_version;
	const char *hash, *cv, *pk_field, *pk, *tbl;
} sy_cl_wire_head;
/* Appends the JCS text of one wire mutation to b; *id_at: the offset of the mutation id's
 * first character (a merged mutation gets its stored id there). False when out of memory. */
SY_MUST_CHECK bool sy_cl_mutation_text(sy_buf *b, const char *id, const sy_cl_wire_head *x,
                                       sy_op op, const char *columns, const char *base,
                                       size_t *id_at);
/* Appends the JCS text of a request around mutations (their JCS texts joined by commas). */
SY_MUST_CHECK bool sy_cl_envelope_text(sy_buf *b, const sy_client *c, const char *batch_id,
                                       bool atomic, const char *mutations, size_t len);
/* Whether one mutation (its JCS text m) passes the push limits and shapes alone
 * (doc/contract.md#mutation-shapes: at most 256 columns, 65,536 octets normalized), checked by the
 * core's own parser over a one-mutation request: 1 it fits; 0 it does not, *why says why; -1 out of
 * memory (nothing is decided). */
int sy_cl_mutation_fits(const sy_client *c, const sy_buf *m, const char *columns, char *why,
                        size_t whylen);
/* The parsed request of a batch just sealed: put takes req over; take hands it back (or NULL). */
void sy_cl_req_put(sy_client *c, const char *batch_id, sy_push_request *req);
sy_push_request *sy_cl_req_take(sy_client *c, const char *batch_id);
void sy_cl_req_free(sy_client *c);

/* client_reconcile.c */
/*
 * Applies a 200 push response to the sealed batch batch_id (validated first). ahead: the
 * next batch is in flight; the one after it is sealed in the same commit (sy_cl_seal_ahead),
 * and c->sealed_ahead says whether that sealing ran.
 */
SY_MUST_CHECK sy_client_rc sy_cl_reconcile(sy_client *c, const char *batch_id, const char *body,
                                           size_t len, int status, bool ahead,
                                           sy_client_error *err);
/* Records one attempt of a batch (its own transaction). */
SY_MUST_CHECK sy_client_rc sy_cl_attempt_log(sy_client *c, const char *batch_id,
                                             const sy_client_response *r, sy_client_error *err);
/* Settles the dependents of a settled wire mutation (inside a transaction). */
SY_MUST_CHECK sy_client_rc sy_cl_settle_dependents(sy_client *c, const char *mutation_id,
                                                   bool accepted, const char *server_version,
                                                   sy_client_error *err);
/* client_intent.c: whether atomic transaction txn can be sealed now (0), waits for a
 * member's predecessor (1) or never can, its members now blocked (-1). */
SY_MUST_CHECK sy_client_rc sy_cl_atomic_group_check(sy_client *c, int64_t txn, int *verdict,
                                                    sy_client_error *err);
/* client_intent.c: waiting intents whose predecessor is blocked_limit become blocked. */
SY_MUST_CHECK sy_client_rc sy_cl_block_waiters(sy_client *c, sy_client_error *err);
/* client_intent.c: the row's intent authored last before ord, not folded (new), or NULL. */
char *sy_cl_row_pred(sy_client *c, const char *table, const char *pk, int64_t ord);

/* client_pull.c */
SY_MUST_CHECK sy_client_rc sy_cl_pull_body(sy_client *c, bool rebuild, sy_buf *out,
                                           sy_client_error *err);
/* Called with a rebuild page's next token once the page is checked, before it is applied. */
typedef sy_client_rc (*sy_cl_ahead_fn)(sy_client *c, const char *token, sy_client_error *err);
SY_MUST_CHECK sy_client_rc sy_cl_pull_apply(sy_client *c, bool rebuild, const char *body,
                                            size_t len, sy_cl_ahead_fn ahead, bool *has_more,
                                            sy_client_error *err);
/* The body of the rebuild request for the page after token (its answer applies over it). */
SY_MUST_CHECK sy_client_rc sy_cl_rebuild_body_after(sy_client *c, const char *token, sy_buf *out,
                                                    sy_client_error *err);
SY_MUST_CHECK sy_client_rc sy_cl_rebuild_start(sy_client *c, sy_client_error *err);
/* Checks one server row (pk {field,value}, row object) against its checksum. */
SY_MUST_CHECK bool sy_cl_row_checksum_ok(const sy_schema_ref *schema, const char *table,
                                         const sy_json *pk, const sy_json *row,
                                         const char *checksum, char *why, size_t whylen);

/* The Retry-After header's value in seconds (0 to 86399), -1 when it is not that
 * (client_sync.c; every transport parses it here). */
int sy_cl_retry_after(const char *value, size_t len);

/* client_token.c: whether t is a bearer token (printable ASCII without space, at most 16 KiB);
 * sy_cl_token_take takes t (new, may be NULL) as c's token when it is one, else wipes and frees
 * it and keeps the old one (false); sy_cl_wipe_free zeroes a string, then frees it. */
bool sy_cl_token_ok(const char *t);
bool sy_cl_token_take(sy_client *c, char *t);
void sy_cl_wipe_free(char *s);

/* client_curl.c (not in the WebAssembly build): the options every libcurl handle of the
 * client takes (easy: a CURL *): basic credentials when user is set (user:password in a new
 * string *userpwd, which the caller wipes and frees), the body and header callbacks called
 * with ud, the transfer's timeout, no signals, HTTP and HTTPS only. False when out of
 * memory. */
typedef size_t (*sy_cl_curl_cb)(char *p, size_t size, size_t n, void *ud);
bool sy_cl_curl_setup(void *easy, const char *user, const char *password, char **userpwd,
                      sy_cl_curl_cb body_cb, sy_cl_curl_cb header_cb, void *ud, long timeout_s);

/* client_transport.c (not in the WebAssembly build, whose transport is fetch) */
SY_MUST_CHECK sy_client_rc sy_cl_curl_transport(const char *url, const char *user,
                                                const char *password, unsigned timeout_s,
                                                sy_client_transport *out, sy_client_error *err);

/* JSON helpers */
/* The JCS text of v as a new string (sy_free), NULL on failure. */
char *sy_cl_jcs(const sy_json *v, size_t *len);
/* A string member's text or NULL. */
const char *sy_cl_jstr(const sy_json *obj, const char *key);

#endif
