/* SPDX-License-Identifier: BSD-2-Clause */
/* The state of one synchro-walsync process, shared by its files: main.c (settings, lease,
 * stream start, batches), walsync_decode.c (the frames and messages of the stream). */
#ifndef SY_WALSYNC_WALSYNC_H
#define SY_WALSYNC_WALSYNC_H

#include <libpq-fe.h>
#include <stdint.h>

#include "store/cfg.h"
#include "store/changelog.h"
#include "store/lease.h"
#include "walsync/walsync_fences.h"

typedef struct walsync {
	/* settings */
	const char *conf_path;
	sy_cfg *cfg;
	const char *conninfo;
	const char *slot;
	char writer_id[SY_STORE_WRITER_ID_MAX + 1];
	int lease_s, renew_s, stale_s, lag_log_s;
	size_t batch_rows;
	/* test switches (environment, see synchro-walsync(8)) */
	long exit_after_commits;
	long stop_before_write;

	PGconn *db;   /* SQL: lease, changelog */
	PGconn *repl; /* the replication stream; only while leader */

	bool leader;
	sy_store_lease lease;
	int64_t next_renew_ms; /* monotonic */
	int64_t backoff_ms;
	int64_t retry_at_ms;

	/* stream state */
	uint64_t skip_upto; /* transactions committed below it are in the changelog ... */
	int skip_ord;       /* ... and the one at it up to this ordinal (-1: none of it) */
	int txn_skip_ord;   /* the current transaction's changes up to here are written */
	size_t piece_rows;  /* a transaction's changes are written in pieces of this many */
	long long pieces;   /* pieces written (statistics) */
	PGconn *hb;         /* the heartbeat's own connection: renews while db writes */
	bool hb_lost;       /* a heartbeat during a write found the lease lost */
	bool in_txn;
	uint64_t txn_lsn;
	uint32_t txn_xid;
	int64_t txn_time;
	int txn_ordinal;
	bool txn_skip;
	sy_store_changes *batch;
	size_t batch_txns;
	uint64_t batch_end;
	int64_t batch_newest_time;
	uint64_t idle_lsn;  /* a keepalive's position outside any transaction */
	uint64_t confirmed; /* the position the slot was told is flushed */
	uint64_t durable;   /* synchro.stream_position: never below confirmed */
	bool continuity;    /* the database has migration 14 (stream_position) */
	int64_t next_status_ms;
	char *arena; /* strings of one decoded message */
	size_t arena_size;

	/* statistics for the lag log and the heartbeat */
	long long commits;
	long long stat_changes, stat_txns;
	int64_t stat_since_ms;
	long long lag_max_ms;
	long long last_lag_ms;
	int64_t next_lag_log_ms;
	long long bad_messages;
	long long forged_messages;

	/* forged messages (migration 15) */
	bool verify;            /* the publication streams synchro.row_fences */
	uint64_t verified_from; /* transactions committed after it are checked */
	sy_ws_fences *fences;   /* the transitions of the transaction being decoded */
	bool fences_known;      /* the RELATION of synchro.row_fences was seen */
	uint32_t fences_oid;
	sy_ws_fence_cols fence_cols;
} walsync;

/* One frame of the stream (XLogData or keepalive): decodes it into w's transaction and
 * batch; *reply when the server asked for a status update. false when the stream must
 * restart (malformed framing, out of memory). */
SY_MUST_CHECK bool sy_ws_on_frame(walsync *w, const unsigned char *p, size_t n, bool *reply);

/* Writes the changes decoded so far of a transaction too large to hold (piece_rows), in a
 * changelog transaction of their own, keeping its epochs for its last piece; false when
 * the stream must restart (the failure is logged). */
SY_MUST_CHECK bool sy_ws_flush_piece(walsync *w);

#endif
