/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync_stats.h: the statistics of one synchro-walsync process.
 *
 * Rules: doc/operations.md#forged-messages (the skipped and refused messages).
 * Notes: They are what the periodic lag log reports (synchro-walsync(8), "[walsync]
 * lag_log_s"). They are what the heartbeat stores in the lease row: the last
 * commit-to-changelog lag. They count skipped and refused messages. They are counters
 * only. No row value is ever kept.
 */
#ifndef SY_WALSYNC_STATS_H
#define SY_WALSYNC_STATS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
	long long commits;         /* changelog transactions written since start */
	long long pieces;          /* pieces of transactions too large to hold, since start */
	long long changes, txns;   /* since the last lag log */
	int64_t since_ms;          /* sy_clock_ms() of the last lag log (or start) */
	long long lag_max_ms;      /* since the last lag log */
	long long last_lag_ms;     /* commit to changelog, of the last write; the heartbeat's */
	int64_t next_log_ms;       /* sy_clock_ms() when the lag log is next due */
	long long bad_messages;    /* malformed logical messages skipped */
	long long forged_messages; /* refused: unvouched version-fence and scope messages */
	/* Since start, for the metrics file (walsync_metrics.c): */
	long long entries_total;   /* changelog entries written */
	long long txns_total;      /* source transactions materialized */
	long long lease_acquired;  /* claims this instance won */
	long long lease_takeovers; /* of them, from another holder (expired or stale) */
	long long lease_lost;      /* demotions: the lease found lost while holding it */
	long long stream_restarts; /* the replication stream closed while not stopping */
	long long slot_breaks;     /* STREAM BREAKs resolved (slot continuity) */
} sy_ws_stats;

/* A written batch of rows changes whose newest commit was at newest_commit_pg, written at
 * now_pg (both the primary's clock: microseconds since 2000-01-01): counts it and its lag. */
void sy_ws_stats_written(sy_ws_stats *s, size_t rows, int64_t newest_commit_pg, int64_t now_pg);

#endif
