/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * changelog.h: the writer side of synchro.changelog, for synchro-walsync only.
 *
 * Notes: It holds batched inserts, fenced by the writer lease in the same statement, and
 * materialized write epochs. It also checks the pipeline's source: the replication slot,
 * the publication and the migrations.
 */
#ifndef SY_STORE_CHANGELOG_H
#define SY_STORE_CHANGELOG_H

#include <stdint.h>

#include "store/lease.h"
#include "store/store.h"

/* The lowest synchro.migrations version walsync runs against (0009_client_progress, where
 * it records the materialized epochs). */
#define SY_STORE_WALSYNC_MIGRATION 9
/* From this migration on (0014_stream_continuity) walsync keeps synchro.stream_position and
 * checks slot continuity; below it, it streams as before. */
#define SY_STORE_CONTINUITY_MIGRATION 14
/* From this migration on (0015_verified_messages) the publication streams the fence
 * transitions that vouch for each version-fence message. */
#define SY_STORE_VERIFY_MIGRATION 15
/* From this migration on (0022_scopes) walsync mirrors the membership and hop relations of
 * members-scoped tables (synchro.scope_members, synchro.scope_links) and records each
 * entry's readers. */
#define SY_STORE_SCOPES_MIGRATION 22
/* From this migration on (0023_verified_scope_changes) membership and link changes come as
 * rows of synchro.scope_changes, and their messages are refused. */
#define SY_STORE_SCOPE_VERIFY_MIGRATION 23
/* The entries a scope change produces (a membership that comes or goes, a link that moves:
 * one per row of the scope) take the ordinals from here on within their transaction's
 * commit LSN: after its own messages' ordinals, never one of them. */
#define SY_STORE_SCOPE_ORDINAL 1073741824
/* The publication walsync names (migration 3): no table, messages only. */
#define SY_STORE_PUBLICATION "synchro"

/* One decoded version-fence message at its stream position. Strings are NUL-terminated and
 * copied by sy_store_changes_add(); NULL is SQL NULL. */
typedef struct {
	uint64_t commit_lsn; /* position: the commit LSN of the source transaction ... */
	int ordinal;         /* ... and the message's ordinal within it */
	uint32_t xid;        /* the source transaction (32 bits, as the stream gives it) */
	int64_t commit_time; /* microseconds since 2000-01-01 00:00:00 UTC */
	const char *table_id;
	const char *pk;
	const char *version;
	bool deleted; /* state deleted, else live */
	const char *mutation_id;
	const char *client_id;
	const char *user_id;
	const char *owner_before;
	const char *owner_after;
	/* A members-scoped row's readers before and after, as text[] literals; NULL for other
	 * tables (written only by a batch with sy_store_changes_set_scopes()). */
	const char *readers_before;
	const char *readers_after;
} sy_store_change;

/* A scope change's entries: one per live row of table_id whose hop 1 column (hop_column)
 * holds one of keys (a text[] literal: the scope key itself with one hop, the hop values the
 * link mirror leads to it from with two, or the hop value that moved); each at the current
 * fence version, with these readers, and the row's owner (owner_column, NULL when none)
 * before and after. The identifiers are quoted already; hop_type is the PostgreSQL type of
 * hop_column. */
typedef struct {
	uint64_t commit_lsn;
	uint32_t xid;
	int64_t commit_time;
	const char *table_id;
	const char *relation;
	const char *pk_column;
	const char *hop_column;
	const char *hop_type;
	const char *owner_column;
	const char *keys;
	const char *readers_before;
	const char *readers_after;
} sy_store_scope_rows;

/* A batch of changes and epoch advances, written by one sy_store_changelog_write(). */
typedef struct sy_store_changes sy_store_changes;

/* A new empty batch that sends at most chunk_rows changes per statement (>= 1). NULL when out
 * of memory. */
SY_MUST_CHECK sy_store_changes *sy_store_changes_new(size_t chunk_rows);
/* Accepts NULL. */
void sy_store_changes_free(sy_store_changes *b);
/* Empties b, keeping its storage. */
void sy_store_changes_clear(sy_store_changes *b);
/* Forgets b's changes (written as a piece of a large transaction), keeping its epochs. */
void sy_store_changes_clear_rows(sy_store_changes *b);
/* Appends one change; false when out of memory (b is then unusable until cleared). */
SY_MUST_CHECK bool sy_store_changes_add(sy_store_changes *b, const sy_store_change *ch);
/* Records that client_id (canonical UUID text) accepted a push with this epoch, in the
 * transaction with this (32-bit stream) xid; the write waits until that transaction is
 * visible before it caps the epoch at accepted_write_epoch. */
SY_MUST_CHECK bool sy_store_changes_add_epoch(sy_store_changes *b, const char *client_id,
                                              long long epoch, uint32_t xid);
/* The stream position (a COMMIT's end) the batch covers up to, read from slot: the write
 * records it as synchro.stream_position in its own transaction (only call it when the
 * database has migration 14). Cleared by sy_store_changes_clear(). */
void sy_store_changes_set_end(sy_store_changes *b, const char *slot, uint64_t end_lsn);
size_t sy_store_changes_count(const sy_store_changes *b);
/* The batch writes readers_before and readers_after (the database has migration 22). */
void sy_store_changes_set_scopes(sy_store_changes *b, bool on);
/* The mirror as the batch leaves it: (scope, key) has exactly these users now; (link, key)
 * this target (NULL: none). Written before the batch's entries; false when out of memory. */
SY_MUST_CHECK bool sy_store_changes_mirror_member(sy_store_changes *b, const char *scope,
                                                  const char *key, const char *const *users,
                                                  size_t n);
SY_MUST_CHECK bool sy_store_changes_mirror_link(sy_store_changes *b, const char *link,
                                                const char *key, const char *target);
/* Appends a scope change's entries, written after the batch's changes; false when out of
 * memory. */
SY_MUST_CHECK bool sy_store_changes_add_scope_rows(sy_store_changes *b,
                                                   const sy_store_scope_rows *x);
/* Mirror rows and scope changes the batch holds. */
size_t sy_store_changes_scope_count(const sy_store_changes *b);
size_t sy_store_changes_epoch_count(const sy_store_changes *b);

typedef struct {
	long long inserted;        /* changelog rows added (a position already there adds none) */
	long long epochs_advanced; /* clients whose materialized_write_epoch was raised or first
	                              recorded in synchro.client_progress */
} sy_store_written;

/*
 * Writes b in one transaction: every statement inserts its changes (INSERT ... SELECT FROM
 * unnest(...) ON CONFLICT (commit_lsn, ordinal) DO NOTHING, so a position the slot delivers
 * again adds nothing) and raises materialized_write_epoch in synchro.client_progress (to
 * the decoded epoch, never past accepted_write_epoch, never down), each guarded IN THE SAME
 * STATEMENT by EXISTS (writer_lease row with l's epoch and token whose lease_until > now()).
 * SY_STORE_CONFLICT when the lease refused the write: nothing was written and the caller
 * is no longer the writer. The caller confirms the stream position only after SY_STORE_OK.
 * b is unchanged afterwards (it is only borrowed to close its array literals).
 * rows_only: a piece of a transaction too large to hold: its changes only, no epoch (they
 * wait for the transaction's last piece) and no stream position. tick (may be NULL) runs
 * between statements.
 */
/* Called between two statements of a write (walsync's heartbeat on its own connection). */
typedef void (*sy_store_tick_fn)(void *arg);

SY_MUST_CHECK sy_store_status sy_store_changelog_write(PGconn *c, const sy_store_lease *l,
                                                       sy_store_changes *b, bool rows_only,
                                                       sy_store_tick_fn tick, void *tick_arg,
                                                       sy_store_written *out, sy_error *err);

/* Reads the scope mirror: fn(arg, member, name, key, value) for every row of
 * synchro.scope_members (member true: scope, key, user) whose scope is in scopes, and of
 * synchro.scope_links (false: link, key, target) whose link is in links and target not null;
 * scopes and links are text[] literals, NULL for all. fn returns false when out of memory. */
typedef bool (*sy_store_mirror_fn)(void *arg, bool member, const char *name, const char *key,
                                   const char *value);
SY_MUST_CHECK sy_store_status sy_store_scope_mirror_load(PGconn *c, const char *scopes,
                                                         const char *links, sy_store_mirror_fn fn,
                                                         void *arg, sy_error *err);

/* The WAL insert position now (after a changelog write: every transaction its statements
 * saw committed is below it). */
SY_MUST_CHECK sy_store_status sy_store_wal_insert_lsn(PGconn *c, uint64_t *out, sy_error *err);

/* The highest commit_lsn in the changelog, or the compaction horizon (synchro.changelog_horizon,
 * when it exists) if that is higher; 0 when both are empty. Every transaction at or below it
 * that the slot delivers again was written already (batches commit in stream order) or was
 * compacted away since. */
SY_MUST_CHECK sy_store_status sy_store_changelog_last_lsn(PGconn *c, uint64_t *out, sy_error *err);
/* The same as a position: the last entry's ordinal at that LSN (or the horizon's, when the
 * horizon is later); a transaction at that LSN may have been written in pieces up to it. */
SY_MUST_CHECK sy_store_status sy_store_changelog_last_position(PGconn *c, uint64_t *lsn,
                                                               int *ordinal, sy_error *err);

/* Session settings of walsync's SQL connection: its commits are durable locally before it
 * confirms a stream position (synchronous_commit local, whatever the server default). */
SY_MUST_CHECK sy_store_status sy_store_changelog_session(PGconn *c, sy_error *err);

/* SY_STORE_OK when the database is ready for walsync: migrations up to
 * SY_STORE_WALSYNC_MIGRATION applied and the publication present, with the latest migration
 * in *migration; SY_STORE_INVALID naming what is missing. */
SY_MUST_CHECK sy_store_status sy_store_walsync_ready(PGconn *c, int *migration, sy_error *err);

typedef struct {
	bool found;
	bool usable;   /* logical, plugin pgoutput, in the connected database */
	bool active;   /* a walsender streams from it */
	long long pid; /* that walsender, 0 when none */
	uint64_t confirmed_flush;
} sy_store_slot;

SY_MUST_CHECK sy_store_status sy_store_slot_get(PGconn *c, const char *slot, sy_store_slot *out,
                                                sy_error *err);
/* Terminates the walsender that holds slot (a displaced writer's stream); *evicted tells
 * whether there was one. Only the lease holder calls it. */
SY_MUST_CHECK sy_store_status sy_store_slot_evict(PGconn *c, const char *slot, bool *evicted,
                                                  sy_error *err);
/* What walsync's metrics read (walsync_metrics.c), in one statement. */
typedef struct {
	uint64_t flush_lsn;      /* pg_current_wal_flush_lsn() */
	bool slot_found;         /* the slot exists and has a confirmed position */
	uint64_t slot_confirmed; /* its confirmed_flush_lsn */
	bool lease_found;
	long long lease_epoch; /* the writer lease's writer_epoch */
} sy_store_walsync_positions;
SY_MUST_CHECK sy_store_status sy_store_walsync_positions_get(PGconn *c, const char *slot,
                                                             sy_store_walsync_positions *out,
                                                             sy_error *err);
/* Bytes of WAL between the server's current position and lsn (-1 when unknown). */
SY_MUST_CHECK sy_store_status sy_store_wal_behind(PGconn *c, uint64_t lsn, long long *bytes,
                                                  sy_error *err);

#endif
