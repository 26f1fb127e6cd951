/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync_stats.c: synchro-walsync's statistics (walsync_stats.h) and the periodic lag log.
 *
 * Layer: middle of src/walsync (doc/hacking.md).
 * Notes: The log reports the slot's confirmed position and the bytes of WAL behind it. It
 * reports the commit-to-changelog lag, and the throughput since the last log
 * (synchro-walsync(8), "[walsync] lag_log_s").
 */
#include "config.h"

#include "common/clock.h"
#include "common/log.h"
#include "walsync/stream.h"
#include "walsync/walsync.h"
#include "walsync/walsync_stats.h"

int64_t sy_ws_server_now(const walsync *w)
{
	if (w->server_time_at_ms == 0)
		return sy_ws_now_pg();
	return w->server_time + (sy_clock_ms() - w->server_time_at_ms) * 1000;
}

void sy_ws_stats_written(sy_ws_stats *s, size_t rows, int64_t newest_commit_pg, int64_t now_pg)
{
	long long lag = (now_pg - newest_commit_pg) / 1000;
	if (lag < 0)
		lag = 0;
	s->last_lag_ms = lag;
	if (lag > s->lag_max_ms)
		s->lag_max_ms = lag;
	s->changes += (long long)rows;
}

void sy_ws_log_lag(walsync *w)
{
	sy_ws_stats *s = &w->stats;
	int64_t now = sy_clock_ms();
	double secs = (double)(now - s->since_ms) / 1000.0;
	long long behind = -1;
	if (w->db) {
		sy_error err = {0};
		sy_store_status st = sy_store_wal_behind(w->db, w->confirmed, &behind, &err);
		if (st != SY_STORE_OK) {
			sy_ws_store_failed(w, st, &err);
			return;
		}
	}
	char a[SY_STORE_LSN_MAX + 1];
	sy_store_lsn_format(w->confirmed, a);
	sy_log(SY_LOG_INFO,
	       "lag: slot %s confirmed at %s, %lld bytes of WAL behind; last %lld ms, max %lld ms "
	       "commit to changelog; %lld changes in %lld transactions in %.0f s (%.0f/s)",
	       w->slot, a, behind, s->last_lag_ms, s->lag_max_ms, s->changes, s->txns, secs,
	       secs > 0 ? (double)s->changes / secs : 0.0);
	s->changes = 0;
	s->txns = 0;
	s->lag_max_ms = 0;
	s->since_ms = now;
}
