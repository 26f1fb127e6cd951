/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pull_internal.h: what the files of the read side share. It is not an API.
 *
 * Notes: It holds the per-process state (pull_cache.c), the gates (pull_gates.c) and one
 * request's answer (pull_answer.c). It holds the statements' text (pull_statements.c), the
 * rebuild statements (rebuild.c) and the broken tables (pull_broken.c).
 */
#ifndef SY_STORE_PULL_INTERNAL_H
#define SY_STORE_PULL_INTERNAL_H

#include "store/prepared.h"
#include "store/pull.h"
#include "synchro/buf.h"
#include "synchro/json.h"
#include "synchro/manifest.h"

/* A synced table of the current manifest, with its quoted names and rebuild statements. */
typedef struct {
	const sy_table *t;
	bool owner_scope; /* policy.read owner: only rows whose owner field is the caller */
	/* policy.read members: rows whose owner (when there is one) is the caller, or whose scope
	 * key a live membership row gives the caller (sy_store_pull_put_reads) */
	bool members_scope;
	bool user_scope; /* owner_scope or members_scope: its statements take the caller */
	bool broken;     /* its mapping no longer matches the relation (pull_broken.h) */
	char *lit;       /* table_id as an SQL literal */
	char *rel;
	char *pk;
	char *owner; /* quoted owner column, or NULL */
	/* members_scope, quoted: the hop column, the membership relation, its match and user
	 * columns; two hops: hop 1's relation, its key and the column hop 2 reads (else NULL) */
	char *hop_col, *m_rel, *m_match, *m_user, *h_rel, *h_key, *h_col;
	char **cols; /* per field */
	char first_name[64], after_name[64], count_name[64];
	char *first_sql, *after_sql, *count_sql;
	sy_store_stmt first, after, count; /* count: the rows a rebuild of it delivers */
} sy_store_ptab;

struct sy_store_pull {
	long long version; /* 0: nothing cached */
	char hash[SY_HASH_HEX_LEN + 1];
	sy_manifest *m;
	sy_store_ptab *tabs;             /* per table of m, in m's order */
	size_t *order;                   /* indexes into tabs sorted by table_id bytes */
	size_t maxf;                     /* most fields of a table */
	char *all_tables, *owner_tables; /* text[] literals for the page statement */
	char *members_tables;            /* ... NULL when no table is read by members */
	char page_name[64];
	char *page_sql;
	sy_store_stmt page;
	char *broken_tables; /* text[] literal of the broken tables' table_ids */
	size_t nbroken;
	long long probe_at_ms; /* when the broken tables are probed again */
};

/* Reloads of the current manifest (or retries of a racing first page) before giving up. */
#define SY_STORE_READ_ATTEMPTS 3

/*
 * A number no statement name built in this process had before: a state built again for the
 * same manifest (after a failure, or a new state on the same connection) must not meet the
 * statements its predecessor prepared (42P05 would abort a rebuild's transaction).
 */
unsigned long sy_store_pull_name_serial(void);
/* b's bytes as a new string (b is emptied); NULL when b failed or memory ran out. */
char *sy_store_pull_steal(sy_buf *b);
/* Appends ", <column j of x as text>" over alias r (the statements' common row shape). */
void sy_store_pull_put_value(sy_buf *b, const sy_store_ptab *x, size_t j);
/* Appends the condition that the caller (the SQL text user, e.g. "$2::text") reads the row
 * of the members-scoped x at alias r now: its owner, or a live membership row of the row's
 * scope key names the caller (doc/protocol.md, the manifest's members policy). */
void sy_store_pull_put_reads(sy_buf *b, const sy_store_ptab *x, const char *user);
/* Reads the current manifest into p (when its version is not the cached one) and builds its
 * statements; SY_STORE_NOT_FOUND when nothing is published (p is then empty). */
SY_MUST_CHECK sy_store_status sy_store_pull_cache_load(sy_store_pull *p, PGconn *c, sy_error *err);
/* (Re)builds the page statement of p's manifest without its broken tables; false with
 * *err set when out of memory. */
SY_MUST_CHECK bool sy_store_pull_build_page_sql(sy_store_pull *p, sy_error *err);
/* Builds the three rebuild statements of x (first page, after a key, count); false when
 * out of memory. */
SY_MUST_CHECK bool sy_store_rebuild_build_sql(sy_store_ptab *x);

/* ---- the gates (pull_gates.c) ---- */

/*
 * The gate columns both statements start with (see sy_store_gates_read): the client bound to $2,
 * its generation and write epochs, retirement, the current schema, the compaction horizon,
 * the last changelog position and now().
 */
#define SY_STORE_GATE_COLS                                                                         \
	"c.user_id = $2, c.generation, c.accepted_write_epoch,"                                    \
	" CASE WHEN c.client_id IS NOT NULL THEN COALESCE(mp.materialized_write_epoch, 1) END,"    \
	" EXISTS (SELECT 1 FROM synchro.retirements rt WHERE rt.client_id = c.client_id),"         \
	" sv.version, sv.hash, h.commit_lsn, h.ordinal, t.commit_lsn, t.ordinal, now()"
#define SY_STORE_GATE_FROM                                                                         \
	" FROM (SELECT 1) one"                                                                     \
	" LEFT JOIN synchro.clients c ON c.client_id = $1::uuid"                                   \
	" LEFT JOIN synchro.client_progress mp ON mp.client_id = c.client_id"                      \
	" LEFT JOIN (SELECT version, hash FROM synchro.schema_versions"                            \
	"             ORDER BY version DESC LIMIT 1) sv ON true"                                   \
	" LEFT JOIN (SELECT commit_lsn, ordinal FROM synchro.changelog_horizon LIMIT 1) h ON true" \
	" LEFT JOIN (SELECT commit_lsn, ordinal FROM synchro.changelog"                            \
	"             ORDER BY commit_lsn DESC, ordinal DESC LIMIT 1) t ON true"
#define SY_STORE_GATE_NCOLS 12

/* What the gate columns say. */
typedef struct {
	bool found, bound, retired;
	long long generation, accepted, materialized;
	bool schema_found;
	sy_schema_ref current;
	sy_store_position horizon, tail; /* tail: the last entry, or the horizon when later */
	char now[SY_STORE_TIME_LEN + 1];
} sy_store_gates;

/* A bigint column; false when NULL or not a number. */
SY_MUST_CHECK bool sy_store_get_ll(const PGresult *r, int row, int col, long long *out);
/* A position from columns col (pg_lsn) and col + 1 (ordinal); NULL reads as 0/0. */
SY_MUST_CHECK bool sy_store_get_pos(const PGresult *r, int row, int col, sy_store_position *out);
/* Reads the gate columns of r's first row; false when they are not what the statement
 * returns. */
SY_MUST_CHECK bool sy_store_gates_read(const PGresult *r, sy_store_gates *g);
/* The gate statement alone: $1 client, $2 user, $3 rebuild_id (NULL: no session), then the
 * session's accepted_write_epoch and stream position after the gate columns. */
extern sy_store_stmt sy_store_gates_stmt;

/* ---- one request (pull_answer.c) ---- */

typedef struct {
	sy_store_pull *p;
	PGconn *c;
	sy_store_read_answer *out;
	sy_error *err;
	sy_json_doc *doc;
	sy_json *schema; /* the current schema reference, shared by every change */
	sy_json *items;
} sy_store_read;

/*
 * The gates after the structural ones. *pass true: continue; false: the answer is set,
 * unless *reload: the current schema is not the cached one (read it, then decide again).
 */
void sy_store_gates_decide(sy_store_read *x, const sy_store_gates *g, uint64_t generation,
                           const sy_schema_ref *schema, bool *pass, bool *reload);

/* Sets the request-level error of the answer; returns SY_STORE_OK. */
sy_store_status sy_store_read_error(sy_store_read *x, sy_errcode code, const char *message);
/* An operational failure: rolls back, answers 503, and returns the status behind it. */
sy_store_status sy_store_read_fail(sy_store_read *x, sy_store_status st);
/* Out of memory: a 503, SY_STORE_NOMEM. */
sy_store_status sy_store_read_nomem(sy_store_read *x);
/* A result of an unexpected shape: a 503, SY_STORE_FAILED. */
sy_store_status sy_store_read_bad_result(sy_store_read *x, const char *what);
/* Starts the body document of a 200 answer; false when out of memory. */
SY_MUST_CHECK bool sy_store_read_body_start(sy_store_read *x);

typedef enum {
	SY_STORE_ITEM_OK,
	SY_STORE_ITEM_NOMEM,
	SY_STORE_ITEM_INVALID,
	SY_STORE_ITEM_BAD_KEY
} sy_store_item_status;

/*
 * Appends one change (or rebuild row) to the body: the row from r's columns col.. when
 * upsert, its checksum under the current schema, the mutation id when given, and on a
 * delete of a row that still exists but left the caller's scope, "left_scope": true; *why
 * says why when not SY_STORE_ITEM_OK.
 */
sy_store_item_status sy_store_read_add_item(sy_store_read *x, const sy_store_ptab *pt,
                                            const char *pk, const char *version,
                                            const char *mutation_id, bool upsert, bool left_scope,
                                            const PGresult *r, int row, int col, sy_error *why);
/* The 503 of an item that could not be added. */
sy_store_status sy_store_read_item_failed(sy_store_read *x, sy_store_item_status s,
                                          const sy_error *why);
/* Writes the finished document as the canonical 200 body. */
sy_store_status sy_store_read_body_finish(sy_store_read *x, sy_json *root);

/*
 * Probes the tables of p (only those marked broken when only_broken) with a statement that
 * reads every mapped column and no row; marks each broken or not and, when that changed
 * anything, builds the page statement again (*changed). Probes again are due
 * SY_STORE_PROBE_INTERVAL_MS later.
 */
SY_MUST_CHECK sy_store_status sy_store_pull_probe_tables(sy_store_pull *p, PGconn *c,
                                                         bool only_broken, bool *changed,
                                                         sy_error *err);

#endif
