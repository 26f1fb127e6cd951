/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pull.h: the read side's SQL: /v3/pull over synchro.changelog and the current source rows,
 * /v3/rebuild sessions and pages, and synchroctl changelog compact.
 *
 * Rules: doc/contract.md#pull-and-rebuild (pull and rebuild).
 */
#ifndef SY_STORE_PULL_H
#define SY_STORE_PULL_H

#include <stdint.h>

#include "store/store.h"
#include "synchro/buf.h"
#include "synchro/scalar.h"

/* A changelog position: the source transaction's commit LSN and the entry's ordinal in it.
 * Positions order the changelog in commit order. */
typedef struct {
	uint64_t lsn;
	uint32_t ordinal; /* 0..INT32_MAX (synchro.changelog.ordinal is an integer) */
} sy_store_position;

/* -1, 0 or 1 as a is before, at or after b. */
int sy_store_position_cmp(const sy_store_position *a, const sy_store_position *b);

/* A cursor is "c1." 16 lowercase hex digits of the LSN "." 8 of the ordinal. */
#define SY_STORE_CURSOR_LEN 28

/* The cursor of p; out receives SY_STORE_CURSOR_LEN + 1 bytes. */
void sy_store_cursor_format(const sy_store_position *p, char out[SY_STORE_CURSOR_LEN + 1]);
/* Whether s[0..len) is exactly a cursor (the form above, ordinal in range); *out when so. */
bool sy_store_cursor_parse(const char *s, size_t len, sy_store_position *out);

/*
 * A rebuild page token names the last row a page delivered: "r1." hex(table_id) "." hex(pk
 * text), lowercase hex of the bytes. Parsing returns new NUL-terminated strings the caller
 * frees with sy_free(); false when s is not such a token (an empty table_id or pk, a NUL
 * byte, odd or uppercase hex) or memory runs out (*nomem tells which).
 */
SY_MUST_CHECK bool sy_store_page_token_parse(const char *s, size_t len, char **table_id, char **pk,
                                             bool *nomem);
/* Appends the token of (table_id, pk) to out; false when out of memory. */
SY_MUST_CHECK bool sy_store_page_token_format(sy_buf *out, const char *table_id, const char *pk);

/*
 * Per-process read state: the current schema manifest with the statements built for it
 * (prepared per connection, again after a reconnect). A responder keeps one.
 */
typedef struct sy_store_pull sy_store_pull;

/* New state the caller frees with sy_store_pull_free(); NULL when out of memory. */
SY_MUST_CHECK sy_store_pull *sy_store_pull_new(void);
/* Accepts NULL. */
void sy_store_pull_free(sy_store_pull *p);

/* A structurally valid pull request (doc/contract.md#pull-request) of the authenticated user. */
typedef struct {
	const char *user;
	const char *client_id;
	uint64_t client_generation;
	sy_schema_ref schema;
	bool has_cursor; /* false: cursor was null */
	sy_store_position cursor;
	unsigned limit; /* 1..1000 */
	int wait_ms;    /* the longest read-your-writes wait (pull_wait_ms) */
} sy_store_pull_request;

/* A structurally valid rebuild request (doc/contract.md#rebuild). */
typedef struct {
	const char *user;
	const char *client_id;
	uint64_t client_generation;
	sy_schema_ref schema;
	const char *rebuild_id;
	const char *token_table; /* from the page token; NULL: page_token was null */
	const char *token_pk;
	unsigned limit; /* 1..1000 */
} sy_store_rebuild_request;

/* The answer to a pull or a rebuild page. */
typedef struct {
	/*
	 * SY_ERR_NONE: body holds the canonical 200 body. Otherwise the request-level error
	 * (message in message; schema_mismatch also fills current and received) whose body
	 * the caller writes.
	 */
	sy_errcode error;
	char message[SY_ERROR_MESSAGE_MAX];
	sy_schema_ref current;
	sy_schema_ref received;
	sy_buf body;
	/* Diagnostics (counts only). */
	size_t items;        /* changes or rows in the body */
	size_t scanned;      /* changelog entries of the window (pull) */
	bool more;           /* has_more, or a page_token (rebuild) */
	unsigned waited_ms;  /* read-your-writes wait */
	unsigned statements; /* statements sent */
	/* Entries of the page skipped because their key has no wire form under the current
	 * schema (a damaged entry must not fail every pull): how many, and the table of one. */
	size_t skipped;
	char skipped_table[64];
} sy_store_read_answer;

/* Frees the body; accepts a zeroed or already cleared answer. */
void sy_store_read_answer_clear(sy_store_read_answer *a);

/*
 * Answers one pull after the structural checks, in the gate order of push without replay
 * (sy_dispatch_decide): the client bound to the user (401), retired (409 client_retired), a
 * schema published (503), generation (409 client_generation_expired), schema (422); then a null
 * cursor (409 rebuild_required), a cursor below the compaction horizon or past the materialized end
 * (409 cursor_expired); then the read-your-writes wait until the client's materialized_write_epoch
 * reaches the accepted_write_epoch it had when the request arrived (at most wait_ms; then 503
 * temporary_unavailable); then one page: the first `limit` changelog entries after the
 * cursor that concern the caller's read scope, in commit order, each row delivered once by
 * its latest entry in the window with the current source row (an entry whose fence moved
 * on is skipped: a later entry, also in scope, delivers the newer state; an entry after
 * which the row left the caller's scope is a delete with that entry's version).
 * Gates, horizon, window and rows come from one statement, so from one snapshot.
 *
 * c must be idle; it is left idle. *out (zeroed or cleared) always receives an answer, 503
 * on every operational failure. Returns SY_STORE_OK, or the failure behind a 503
 * (SY_STORE_CONNECTION when the connection was lost) with a one-line diagnostic in *err
 * that holds no value of any row.
 */
SY_MUST_CHECK sy_store_status sy_store_pull_handle(sy_store_pull *p, PGconn *c,
                                                   const sy_store_pull_request *req,
                                                   sy_store_read_answer *out, sy_error *err);

/*
 * Answers one rebuild page, after the same gates as pull, in one REPEATABLE READ
 * transaction: the first page (no token) creates the session of (user, client, rebuild_id)
 * binding the client's accepted_write_epoch and the position of the last materialized
 * changelog entry (or serves the first page again when that session exists); every page of
 * a session whose bound epoch is no longer the client's accepted_write_epoch answers 409
 * rebuild_invalidated, as does a token naming no session. Rows: live rows and soft
 * tombstones of the caller's read scope ordered by table_id (bytes) then the primary key;
 * the last page carries the cursor of the bound position. A token whose key is not a value
 * of its table's key type is 400 invalid_request. Return value and *out as for pull.
 */
SY_MUST_CHECK sy_store_status sy_store_rebuild_handle(sy_store_pull *p, PGconn *c,
                                                      const sy_store_rebuild_request *req,
                                                      sy_store_read_answer *out, sy_error *err);

typedef struct {
	long long removed;  /* changelog entries deleted */
	long long sessions; /* rebuild sessions whose position fell below the horizon */
	bool moved;         /* the horizon moved */
	sy_store_position horizon;
	char cutoff[SY_STORE_TIME_LEN + 1]; /* now() - before, in server_time form */
} sy_store_compacted;

/*
 * synchroctl changelog compact --before: in one transaction, raises the compaction horizon
 * to the last position whose entry committed before now() - before_s seconds (never
 * lowers it), deletes every changelog entry at or below the horizon and every rebuild
 * session bound below it. Cursors below the horizon then answer 409 cursor_expired. Needs
 * the owner's privileges (synchroctl's connection).
 */
SY_MUST_CHECK sy_store_status sy_store_changelog_compact(PGconn *c, long long before_s,
                                                         sy_store_compacted *out, sy_error *err);

#endif
