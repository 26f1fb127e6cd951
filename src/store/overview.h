/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * overview.h: the facts synchroctl status shows (synchroctl(1), "STATUS";
 * doc/operations.md#status).
 *
 * Notes: The facts are the server, the writer lease and the walsync sessions, and the slot
 * with its retained WAL. They are the lag, the last stream break, and the sizes of clients,
 * ledger and changelog. They are the schema and the migration level. Every read is read
 * only. Each group is one short READ ONLY transaction, with a statement and a lock timeout.
 * A member of synchro_app alone may read every relation and view it reads.
 */
#ifndef SY_STORE_OVERVIEW_H
#define SY_STORE_OVERVIEW_H

#include "store/lease.h"
#include "store/store.h"
#include "store/stream_continuity.h"

/* The application_name walsync's SQL session has (src/store/conn.c's fallback): how the walsync
 * processes connected to the database are counted, leader and standbys alike. */
#define SY_STORE_WALSYNC_APPNAME "synchro-walsync"

/* The groups of facts, each read in a transaction of its own, in this order; a group that
 * cannot be read (a missing grant, a timeout) is reported in sy_store_overview.unread and the
 * others are still read. SY_OV_SERVER reads PostgreSQL's catalogs and views only. */
typedef enum {
	SY_OV_SCHEMA = 1,  /* the migration level and the current schema version */
	SY_OV_SERVER = 2,  /* version, recovery, WAL position, the slot, walsync sessions */
	SY_OV_LEASE = 4,   /* the writer lease, the materialized position, the last stream break */
	SY_OV_CLIENTS = 8, /* clients and retirements */
	SY_OV_SIZES = 16,  /* batches, mutations and changelog: rows and bytes; the horizon */
} sy_store_ov_group;

/* A table's size: rows exact when the table is small (or never analyzed), else the planner's
 * estimate (pg_class.reltuples); bytes with its indexes and TOAST (pg_total_relation_size). */
typedef struct {
	long long rows; /* -1 unknown (a big table never analyzed) */
	bool estimated;
	long long bytes;
} sy_store_table_size;

typedef struct {
	/* SY_OV_SERVER */
	char server_version[64];
	int server_version_num;
	bool in_recovery;
	char database[64];
	char now[SY_STORE_TIME_LEN + 1];
	char wal_lsn[SY_STORE_LSN_MAX + 1]; /* flush position; on a standby the replayed one */
	long long walsync_sessions;         /* of walsync processes; -1 unknown (on a standby) */
	/* The slot named by the caller (pg_replication_slots). */
	char slot[64];
	bool slot_found;
	bool slot_active;
	long long slot_pid; /* 0 when inactive */
	char restart_lsn[SY_STORE_LSN_MAX + 1];
	char confirmed_flush_lsn[SY_STORE_LSN_MAX + 1];
	char wal_status[16];
	long long retained_bytes; /* wal_lsn minus restart_lsn; -1 unknown */
	long long safe_wal_size;  /* -1 unlimited or unknown (NULL) */
	long long slot_lag_bytes; /* wal_lsn minus confirmed_flush_lsn; -1 unknown */

	/* SY_OV_LEASE: sy_store_lease_status_get() (its slot members repeat the ones above),
	 * synchro.stream_position (migration 14) and sy_store_last_break_get(). */
	sy_store_lease_status lease;
	bool position_known;
	char materialized_lsn[SY_STORE_LSN_MAX + 1];
	long long materialized_lag_bytes; /* wal_lsn minus materialized_lsn; -1 unknown */
	char position_at[SY_STORE_TIME_LEN + 1];
	double position_age_s; /* < 0 unknown */

	sy_store_last_break last_break;

	/* SY_OV_CLIENTS */
	long long clients; /* registered */
	long long retired; /* with a retirement marker */
	long long seen_1d; /* connected (last_seen_at) within the last 24 hours */

	/* SY_OV_SIZES */
	sy_store_table_size batches, mutations, changelog;
	char horizon[SY_STORE_LSN_MAX + 16];      /* "LSN.ordinal": older cursors are expired */
	char compacted_at[SY_STORE_TIME_LEN + 1]; /* "" never */
	char oldest_lsn[SY_STORE_LSN_MAX + 1], newest_lsn[SY_STORE_LSN_MAX + 1]; /* "" empty */
	char oldest_at[SY_STORE_TIME_LEN + 1], newest_at[SY_STORE_TIME_LEN + 1];

	/* SY_OV_SCHEMA */
	bool schema_found;
	long long schema_version;
	char schema_hash[65];
	char schema_published_at[SY_STORE_TIME_LEN + 1];
	int migration;             /* highest applied */
	int migration_latest;      /* highest embedded in this build */
	size_t migrations_pending; /* embedded in this build and not applied */

	unsigned unread;      /* the groups that could not be read (SY_OV_*) */
	char unread_why[512]; /* the first failure's message */
} sy_store_overview;

/*
 * Reads every group into *out. slot names the replication slot to examine (synchroctl passes
 * [walsync] slot). exact_max_bytes: a table whose heap is at most this big is counted exactly
 * (count(*)), a bigger one estimated. timeout_ms bounds each
 * statement and each lock wait. SY_STORE_OK also when some groups could not be read (then
 * out->unread says which); SY_STORE_CONNECTION when the connection is lost (nothing more is
 * read) and SY_STORE_NOMEM with *err set.
 */
SY_MUST_CHECK sy_store_status sy_store_overview_get(PGconn *c, const char *slot,
                                                    long long exact_max_bytes, int timeout_ms,
                                                    sy_store_overview *out, sy_error *err);

#endif
