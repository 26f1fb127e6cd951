/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client.h: libsynchro-client, the client half of protocol version 3, over one SQLite file.
 *
 * Rules: doc/contract.md#client-rules (what the client must do).
 * Notes: The app writes through transactions. Each write is an immutable local intent with
 * its mutation id, saved in the same SQLite commit. The app reads the visible state: server
 * rows overlaid with pending intents. It drives synchronization with a non-blocking step
 * function. The library starts no thread and keeps no global state. Every callback runs on
 * the thread that called into the library, inside the call.
 *
 * Ownership takes libsynchro's three words (synchro/common.h). A "new" result belongs to
 * the caller, who frees it with the named function (strings with sy_client_free()). A
 * "borrowed" pointer stays owned by the library. Unless said otherwise, it is valid until
 * the next call on the same sy_client. A function that "steals" an argument releases it
 * itself, also on failure. Every fallible function returns an sy_client_rc. When err is not
 * NULL, it fills *err with the same code and a message. The message never holds a row, a
 * body or a credential. One thread at a time uses an sy_client.
 */
#ifndef SYNCHRO_CLIENT_H
#define SYNCHRO_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "synchro/common.h"
#include "synchro/manifest.h"

#define SY_CLIENT_ID_LEN 36 /* a canonical UUID, without its NUL */

typedef enum {
	SY_CLIENT_OK = 0,
	SY_CLIENT_EINVAL,    /* an argument or value is invalid (unknown field, bad wire value) */
	SY_CLIENT_ENOTFOUND, /* no such table, row, intent or batch */
	SY_CLIENT_ESTATE,    /* not allowed in the current state (e.g. no schema yet) */
	SY_CLIENT_EREADONLY, /* the server retired this client: the store is read-only */
	SY_CLIENT_EFROZEN,   /* the queue is frozen after idempotency_conflict or a 400 */
	SY_CLIENT_ESTORE,    /* SQLite failed (message from sqlite3_errmsg) */
	SY_CLIENT_ENETWORK,  /* no response arrived; retried automatically */
	SY_CLIENT_ESERVER,   /* a request-level error from the server (see status) */
	SY_CLIENT_EPROTOCOL, /* a response broke the contract; it was not applied */
	SY_CLIENT_ETIMEOUT,  /* sy_client_sync ran out of time with work left */
	SY_CLIENT_ENOMEM
} sy_client_rc;

typedef struct {
	sy_client_rc rc;
	char message[256];
} sy_client_error;

/*
 * The library's allocator: a transport allocates response bodies with
 * sy_client_alloc(); every "new" string or buffer the library returns is freed
 * with sy_client_free() (which accepts NULL).
 */
void *sy_client_alloc(size_t n);
void sy_client_free(void *p);

/* The text of rc ("ok", "einval", ...; borrowed, static). */
const char *sy_client_rc_name(sy_client_rc rc);

/* --- transport ------------------------------------------------------------ */

/* One HTTP request of the protocol; every member borrowed for the call. */
typedef struct {
	const char *method; /* "POST" or "GET" */
	const char *path;   /* "/v3/push", ... */
	const char *body;   /* NULL for GET */
	size_t body_len;
	const char *token; /* bearer token to send, or NULL: the transport's own credentials */
} sy_client_request;

/* What the transport hands back: body new from sy_client_alloc(); the library steals it. */
typedef struct {
	int status; /* HTTP status; 0 when no response arrived (timeout, reset, dropped) */
	char *body;
	size_t body_len;
	int retry_after_s; /* the Retry-After header in seconds; -1 when absent */
} sy_client_response;

/*
 * The transport hook. At most one request is in flight. start() begins it and
 * returns false when it could not (then it counts as status 0). poll() waits at
 * most timeout_ms for it and returns 1 with *out filled when it completed, 0 when
 * it is still in flight. cancel() abandons it. destroy() frees ctx at close.
 * The default (opts->transport NULL) is libcurl's multi interface.
 */
typedef struct {
	void *ctx;
	bool (*start)(void *ctx, const sy_client_request *req);
	int (*poll)(void *ctx, int timeout_ms, sy_client_response *out);
	void (*cancel)(void *ctx);
	void (*destroy)(void *ctx);
} sy_client_transport;

/* --- events --------------------------------------------------------------- */

typedef enum {
	SY_CLIENT_EVENT_ROW,    /* table, pk: the visible state of a row may have changed */
	SY_CLIENT_EVENT_INTENT, /* mutation_id: an intent changed state */
	SY_CLIENT_EVENT_PHASE   /* the sync phase changed (sy_client_status) */
} sy_client_event_kind;

/* Every pointer is borrowed for the call; NULL when it does not apply. */
typedef void (*sy_client_listener)(void *ctx, sy_client_event_kind kind, const char *table,
                                   const char *pk_json, const char *mutation_id);

/* --- open / close --------------------------------------------------------- */

typedef struct {
	const char *url;      /* base URL, e.g. "https://sync.example.com" (copied) */
	const char *user;     /* HTTP basic credentials (copied, never stored on disk) */
	const char *password; /* may be NULL */
	/* A bearer token (copied, never logged or stored on disk), sent as "Authorization:
	 * Bearer" on every request instead of user and password. */
	const char *token;
	/* Called when there is no token yet and after a 401: a fresh token new from
	 * sy_client_alloc() (the library wipes and frees it), or NULL when there is none.
	 * A request answered 401 goes again once, with the same bytes, under the new token. */
	char *(*token_fn)(void *ctx);
	void *token_ctx;
	/* NULL: libcurl. sy_client_open steals it (destroyed at close, also on failure). */
	const sy_client_transport *transport;
	/* Clock in milliseconds since the epoch; NULL: CLOCK_REALTIME. For tests. */
	int64_t (*clock_ms)(void *ctx);
	/* How sy_client_sync waits for a due time; NULL: nanosleep. Gets clock_ctx. */
	void (*sleep_ms)(void *ctx, int64_t ms);
	void *clock_ctx;
	sy_client_listener listener; /* may be NULL */
	void *listener_ctx;
	unsigned pull_limit;        /* rows a pull or rebuild page; 0: 500, a rebuild 1000 */
	/* mutations per sealed batch; 0: 1000 (the limit of doc/contract.md#push-limits) */
	unsigned batch_max;
	unsigned poll_interval_ms;  /* idle interval between pulls; 0: 30000 */
	unsigned request_timeout_s; /* libcurl transport; 0: 60 */
	/* Live updates (libcurl transport): a subscription to the user's notifications
	 * (/v3/live) makes a pull due as soon as the server has changes; true: the poll only. */
	bool live_off;
} sy_client_options;

typedef struct sy_client sy_client;

/*
 * Opens (creating when absent) the store at path: WAL journal, full synchronous
 * commits, schema upgraded to the current version. A new store gets its
 * client_id here, persisted before anything is sent (doc/contract.md#persist-before-sending:
 * identities generated once and persisted before transmission). *out is a new client the caller
 * closes with sy_client_close(); NULL on failure.
 */
SY_MUST_CHECK sy_client_rc sy_client_open(const char *path, const sy_client_options *opts,
                                          sy_client **out, sy_client_error *err);
/* Abandons an in-flight request (a sealed batch is simply resent later) and frees c. Accepts NULL.
 */
void sy_client_close(sy_client *c);
/* The client_id (borrowed). */
const char *sy_client_id(const sy_client *c);
/* The current schema manifest (borrowed; NULL before the first connect). */
const sy_manifest *sy_client_manifest(const sy_client *c);

/* --- writes ---------------------------------------------------------------- */

typedef struct sy_client_txn sy_client_txn;

/*
 * Begins a write transaction (SQLite BEGIN IMMEDIATE). atomic: its intents are
 * sealed together as one "atomic": true batch, all or nothing on the server.
 * Requires a schema (after the first connect). EREADONLY after client_retired,
 * EFROZEN is not an obstacle to writing (only to sending).
 */
SY_MUST_CHECK sy_client_rc sy_client_begin(sy_client *c, bool atomic, sy_client_txn **out,
                                           sy_client_error *err);
/*
 * The writes. pk_json is the wire value of the primary key (e.g. "\"3f2...\"" or
 * "\"42\"" for int64); columns_json an object field_id -> wire value
 * (doc/contract.md#portable-types), which update requires non-empty. Values are checked against the
 * current schema. On success mutation_id (37 bytes, may be NULL) receives the new intent's id,
 * already in the transaction. Update and delete need a visible row (ENOTFOUND otherwise); insert
 * needs an invisible one (ESTATE otherwise). A failed write leaves the transaction usable.
 */
SY_MUST_CHECK sy_client_rc sy_client_insert(sy_client_txn *t, const char *table,
                                            const char *pk_json, const char *columns_json,
                                            char *mutation_id, sy_client_error *err);
SY_MUST_CHECK sy_client_rc sy_client_update(sy_client_txn *t, const char *table,
                                            const char *pk_json, const char *columns_json,
                                            char *mutation_id, sy_client_error *err);
SY_MUST_CHECK sy_client_rc sy_client_delete(sy_client_txn *t, const char *table,
                                            const char *pk_json, char *mutation_id,
                                            sy_client_error *err);
/* Steals t: commits it (durably) and frees it, also on failure (then nothing was written). */
SY_MUST_CHECK sy_client_rc sy_client_commit(sy_client_txn *t, sy_client_error *err);
/* Steals t: rolls it back and frees it. Accepts NULL. */
void sy_client_rollback(sy_client_txn *t);

/* --- reads ----------------------------------------------------------------- */

typedef enum {
	SY_ROW_SYNCED,   /* the server's row, no intent outstanding */
	SY_ROW_PENDING,  /* intents not yet settled overlay the server's row */
	SY_ROW_CONFLICT, /* an intent conflicted: the server's row is shown, the intent kept */
	SY_ROW_BLOCKED   /* an intent was rejected or is blocked: the server's row is shown */
} sy_client_row_state;

/* "synced", "pending", ... (borrowed, static). */
const char *sy_client_row_state_name(sy_client_row_state s);

/*
 * The visible row: *row_json is a new JSON object (sy_client_free()) of the row's
 * fields, the pk field included, or NULL when the row is not visible (absent or
 * deleted); *state its state. ENOTFOUND when neither the server nor an intent
 * knows the row.
 */
SY_MUST_CHECK sy_client_rc sy_client_get(sy_client *c, const char *table, const char *pk_json,
                                         char **row_json, sy_client_row_state *state,
                                         sy_client_error *err);
/* Calls fn for every known row of table in pk order (row_json NULL for a row not visible);
 * fn's strings are borrowed for its call. */
typedef void (*sy_client_row_fn)(void *ctx, const char *pk_json, const char *row_json,
                                 sy_client_row_state state);
SY_MUST_CHECK sy_client_rc sy_client_rows(sy_client *c, const char *table, sy_client_row_fn fn,
                                          void *ctx, sy_client_error *err);

/* --- queries over the visible tables (doc/client.md "Querying") ------------- */

/*
 * Each manifest table is a real SQLite table of the visible rows, named as the table:
 * its pk field, every field, and _state ('synced', 'pending', 'conflict', 'blocked').
 * sy_client_query runs one read-only SELECT over them with params_json (a JSON array, or
 * NULL for none) bound in order, and calls fn with each result row as a JSON object
 * {column: value} (borrowed for the call). A write, ATTACH, PRAGMA, a second statement,
 * a read of the store's own tables, a statement that does not compile or the wrong
 * number of parameters: EINVAL with SQLite's message, and nothing changes. Queries see
 * committed state (not the rows of a write transaction still open).
 */
typedef void (*sy_client_query_fn)(void *ctx, const char *row_json);
SY_MUST_CHECK sy_client_rc sy_client_query(sy_client *c, const char *sql, const char *params_json,
                                           sy_client_query_fn fn, void *ctx, sy_client_error *err);
/*
 * A live query: fn gets the whole result as a JSON array of row objects now, and again
 * after each commit, step or resolve that changed a row of a table the statement reads.
 * A statement that fails when it runs is reported once (rows_json NULL, err set) and
 * the live query runs no more. *out is freed with sy_client_live_free (before close).
 */
typedef struct sy_client_live_query sy_client_live_query;
typedef void (*sy_client_live_fn)(void *ctx, const char *rows_json, const sy_client_error *err);
SY_MUST_CHECK sy_client_rc sy_client_live(sy_client *c, const char *sql, const char *params_json,
                                          sy_client_live_fn fn, void *ctx,
                                          sy_client_live_query **out, sy_client_error *err);
void sy_client_live_free(sy_client_live_query *l);
/*
 * Asks for an index on a visible table: columns_json is a JSON array of its column names
 * (e.g. ["done","title"]). Kept in the store and made again when a new schema rebuilds
 * the tables (left out while the schema lacks one of its columns).
 */
SY_MUST_CHECK sy_client_rc sy_client_index(sy_client *c, const char *table,
                                           const char *columns_json, sy_client_error *err);

/* --- synchronization ------------------------------------------------------- */

typedef enum {
	SY_PHASE_IDLE,       /* nothing due before the next poll interval */
	SY_PHASE_CONNECTING, /* /v3/connect: new generation */
	SY_PHASE_SCHEMA,     /* /v3/schema: fetching the current manifest */
	SY_PHASE_PUSHING,    /* a sealed batch is in flight */
	SY_PHASE_PULLING,    /* /v3/pull */
	SY_PHASE_REBUILDING, /* /v3/rebuild pages */
	SY_PHASE_BACKOFF,    /* waiting for Retry-After or a network retry */
	SY_PHASE_STOPPED     /* needs the app: frozen, retired, auth or upgrade */
} sy_client_phase;

/* The phase's name (borrowed, static). */
const char *sy_client_phase_name(sy_client_phase p);

/*
 * Does whatever is due now without blocking: reads a completed response (and
 * applies it in one SQLite transaction with the batch's completion or the pull
 * page's cursor), or starts the next request. *next_due_ms receives the clock
 * time at which to call again: now when more is ready, the Retry-After time
 * after a 429/503, the poll interval when idle. Listener callbacks run inside,
 * after the SQLite commit they report.
 * Returns OK unless the store failed (ESTORE, ENOMEM), the queue froze in this
 * step (EFROZEN: pulls go on, pushes stop), or the client stopped (EREADONLY
 * after client_retired; ESERVER after auth_required or upgrade_required, until
 * the client is opened again); network and server trouble shows in status.
 */
SY_MUST_CHECK sy_client_rc sy_client_step(sy_client *c, int64_t *next_due_ms, sy_client_error *err);
/*
 * Makes the next step due now (the network came back, the app came to the
 * foreground), unless a server's Retry-After is running. A commit does this too.
 */
void sy_client_kick(sy_client *c);
/* Waits at most timeout_ms: for the in-flight request (the transport's poll), else for a live
 * notification; with neither, the time passes. Call sy_client_step after it. */
void sy_client_wait(sy_client *c, int timeout_ms);
/*
 * The blocking loop over sy_client_step: returns OK once every sendable intent
 * was pushed and the pull caught up (has_more false), EFROZEN when that round
 * ended with a frozen queue, ETIMEOUT after timeout_ms (0: wait for ever) with
 * work left, or the step's error.
 */
SY_MUST_CHECK sy_client_rc sy_client_sync(sy_client *c, int timeout_ms, sy_client_error *err);

/* --- status and inspection ------------------------------------------------- */

typedef enum {
	SY_INTENT_PENDING,    /* authored, not sealed; will be sent */
	SY_INTENT_WAITING,    /* behind a sealed predecessor of the same row */
	SY_INTENT_SEALED,     /* in a sealed batch, no outcome yet */
	SY_INTENT_APPLIED,    /* accepted by the server */
	SY_INTENT_SUPERSEDED, /* superseded_before_send: folded into a normalized mutation */
	SY_INTENT_CANCELLED,  /* cancelled_before_send: insert then delete, no server effect */
	SY_INTENT_CONFLICT,   /* the server's row differs; resolve it */
	SY_INTENT_REJECTED,   /* rejected_terminal (policy, validation, atomic group ...) */
	SY_INTENT_SCHEMA_INCOMPATIBLE,    /* kept whole, out of automatic retry; remap or discard */
	SY_INTENT_BLOCKED_BY_PREDECESSOR, /* its predecessor conflicted, was rejected or blocked */
	SY_INTENT_BLOCKED_LIMIT,          /* exceeds a push limit; never sent */
	SY_INTENT_RESOLVED,               /* settled by an explicit resolution (see link) */
	SY_INTENT__COUNT
} sy_intent_state;

/* "pending", ..., "superseded_before_send", "cancelled_before_send", "blocked_by_predecessor"
 * (borrowed, static). */
const char *sy_client_intent_state_name(sy_intent_state s);

typedef struct {
	sy_client_phase phase;
	char client_id[SY_CLIENT_ID_LEN + 1];
	uint64_t generation;     /* 0 before the first connect */
	uint64_t schema_version; /* 0 before the first schema */
	char schema_hash[65];
	bool has_cursor;
	char cursor[128];
	bool rebuilding;
	/* While rebuilding: the rows received so far, and the rows the server said the whole
	 * rebuild holds (-1 when it did not say; rows changing meanwhile may make the final
	 * count differ). A progress bar draws rebuild_rows / rebuild_total. */
	uint64_t rebuild_rows;
	int64_t rebuild_total;
	bool frozen;
	bool retired;
	char last_error[48]; /* wire code ("retry_later", "network", ...) or "" */
	char last_message[256];
	bool last_error_retryable;
	int64_t next_attempt_ms; /* 0 when nothing is scheduled */
	size_t counts[SY_INTENT__COUNT];
	size_t unsettled_batches;
} sy_client_status;

SY_MUST_CHECK sy_client_rc sy_client_status_get(sy_client *c, sy_client_status *out,
                                                sy_client_error *err);

/* One intent record: every string new, freed with sy_client_intent_free(). */
typedef struct {
	char mutation_id[SY_CLIENT_ID_LEN + 1];
	int64_t local_order;
	bool normalized; /* created by normalization at sealing, not by the app */
	int64_t txn;
	bool atomic;
	char *table;
	char *pk_json;
	char *op;           /* "insert", "update", "delete" */
	char *columns_json; /* NULL for delete */
	char *base_version; /* NULL when absent */
	char *client_version;
	uint64_t schema_version;
	char *schema_hash;
	sy_intent_state state;
	char *link;         /* normalized mutation, predecessor or resolution successor; or NULL */
	char *batch_id;     /* the batch that carried it last, or NULL */
	char *code;         /* outcome code, or NULL */
	char *outcome_json; /* the outcome as received, or NULL */
	char *resolution;   /* resolved: "discarded", "accepted_server", "rebased", "remapped" */
} sy_client_intent;

/* *out is a new intent record (sy_client_intent_free()). */
SY_MUST_CHECK sy_client_rc sy_client_intent_get(sy_client *c, const char *mutation_id,
                                                sy_client_intent **out, sy_client_error *err);
/* Accepts NULL. */
void sy_client_intent_free(sy_client_intent *i);
/* Calls fn for every intent in local order (i borrowed for fn's call); all false: only the
 * unsettled ones. */
typedef void (*sy_client_intent_fn)(void *ctx, const sy_client_intent *i);
SY_MUST_CHECK sy_client_rc sy_client_intents(sy_client *c, bool all, sy_client_intent_fn fn,
                                             void *ctx, sy_client_error *err);
/* A new one-paragraph explanation (sy_client_free()) of why the intent is in its state. */
SY_MUST_CHECK sy_client_rc sy_client_explain(sy_client *c, const char *mutation_id, char **text,
                                             sy_client_error *err);

typedef struct {
	int64_t at_ms;
	int status; /* 0: no response */
	int retry_after_s;
	char *response; /* new; NULL when none */
	size_t response_len;
} sy_client_attempt;

/* A sealed batch: every member new, freed with sy_client_batch_free(). */
typedef struct {
	char batch_id[SY_CLIENT_ID_LEN + 1];
	char *state; /* "sealed", "completed", "superseded", "frozen" */
	uint64_t generation;
	uint64_t schema_version;
	char *schema_hash;
	bool atomic;
	char *body; /* the exact request bytes every attempt sends */
	size_t body_len;
	char sha256[65];
	char *successor; /* the successor batch after 409/422, or NULL */
	char **mutation_ids;
	size_t mutation_count;
	sy_client_attempt *attempts;
	size_t attempt_count;
} sy_client_batch;

SY_MUST_CHECK sy_client_rc sy_client_batch_get(sy_client *c, const char *batch_id,
                                               sy_client_batch **out, sy_client_error *err);
void sy_client_batch_free(sy_client_batch *b);

/* --- resolution (never rewrites history) ----------------------------------- */

/* Marks a conflicted, rejected or blocked intent resolved without a successor. */
SY_MUST_CHECK sy_client_rc sy_client_discard(sy_client *c, const char *mutation_id,
                                             sy_client_error *err);
/* The same for a conflict, stating that the server's row is the intended state. */
SY_MUST_CHECK sy_client_rc sy_client_accept_server(sy_client *c, const char *mutation_id,
                                                   sy_client_error *err);
/*
 * Rebases a conflicted or blocked intent onto the server's current row: a new
 * intent (new mutation id into new_id, 37 bytes) with the same operation and
 * columns (or columns_json when not NULL) and the server row's version as base;
 * the old one becomes resolved, linked to it. An insert that met an existing
 * row becomes an update; a row the server deleted cannot be rebased (ESTATE).
 */
SY_MUST_CHECK sy_client_rc sy_client_rebase(sy_client *c, const char *mutation_id,
                                            const char *columns_json, char *new_id,
                                            sy_client_error *err);
/*
 * Remaps a schema-incompatible intent: a new intent under the current schema
 * with columns_json (which the app built from the kept payload), new mutation
 * id into new_id; the original stays inspectable, resolved and linked.
 */
SY_MUST_CHECK sy_client_rc sy_client_remap(sy_client *c, const char *mutation_id,
                                           const char *columns_json, char *new_id,
                                           sy_client_error *err);

/*
 * Checks the store: SQLite's integrity check, every stored row's checksum
 * under its schema, every sealed batch's SHA-256 against its bytes, every
 * intent's links, and every synced table against the overlay computed from scratch. *report (new, sy_client_free(); may be NULL) lists what failed.
 * OK when all holds, EPROTOCOL when something does not.
 */
SY_MUST_CHECK sy_client_rc sy_client_verify(sy_client *c, char **report, sy_client_error *err);

#endif
