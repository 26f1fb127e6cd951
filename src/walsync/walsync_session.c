/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync_session.c: what every file of synchro-walsync does with the process's
 * connections and state when something fails or ends (walsync.h).
 *
 * Layer: base of src/walsync (doc/hacking.md).
 * Notes: It holds the stop flag that the signals set, and the naps the flag cuts short. It
 * closes the stream, and forgets what was decoded but not written. It closes the SQL
 * connections. It holds the backoff before the next attempt, a failed store call, and
 * demotion to standby.
 */
#include "config.h"

#include <poll.h>
#include <signal.h>

#include "common/clock.h"
#include "common/log.h"
#include "store/conn.h"
#include "walsync/walsync.h"

/* Longest wait between two reconnection attempts. */
#define BACKOFF_MAX_MS 10000

static volatile sig_atomic_t stop_requested;

void sy_ws_on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

bool sy_ws_stopping(void)
{
	return stop_requested != 0;
}

void sy_ws_nap(int64_t ms)
{
	if (ms <= 0 || stop_requested)
		return;
	(void)poll(NULL, 0, (int)(ms > 60000 ? 60000 : ms));
}

void sy_ws_stream_reset(walsync *w)
{
	w->in_txn = false;
	w->txn_skip = false;
	sy_store_changes_clear(w->batch);
	w->batch_txns = 0;
	w->batch_end = 0;
	w->batch_newest_time = 0;
	w->idle_lsn = 0;
	w->fences_known = false; /* a new stream sends its RELATION messages again */
	w->scope_rows_known = false;
	sy_ws_fences_clear(w->fences);
	sy_ws_notify_forget(w->notify);
}

void sy_ws_stream_close(walsync *w)
{
	if (w->repl) {
		if (!sy_ws_stopping())
			w->stats.stream_restarts++;
		sy_store_disconnect(w->repl); /* forgets an unusable mark with the connection */
		w->repl = NULL;
	}
	sy_ws_stream_reset(w);
}

void sy_ws_db_close(walsync *w)
{
	sy_store_disconnect(w->db);
	w->db = NULL;
	sy_store_disconnect(w->hb);
	w->hb = NULL;
}

void sy_ws_backoff(walsync *w)
{
	int64_t now = sy_clock_ms();
	/* A stream that ran longer than the longest wait before this failure (closed before
	 * it or not) starts afresh; one that fails as soon as it starts (a full disk) backs
	 * off further. */
	if (w->stream_up_ms && now - w->stream_up_ms >= BACKOFF_MAX_MS)
		w->backoff_ms = 0;
	w->stream_up_ms = 0;
	w->backoff_ms = w->backoff_ms ? w->backoff_ms * 2 : 500;
	if (w->backoff_ms > BACKOFF_MAX_MS)
		w->backoff_ms = BACKOFF_MAX_MS;
	w->retry_at_ms = now + w->backoff_ms;
}

void sy_ws_demote(walsync *w, const char *why)
{
	if (w->leader) {
		sy_log(SY_LOG_WARNING, "lost the writer lease (epoch %lld): %s; back to standby",
		       w->lease.epoch, why);
		w->stats.lease_lost++;
	}
	w->leader = false;
	sy_ws_stream_close(w);
}

void sy_ws_store_failed(walsync *w, sy_store_status st, const sy_error *err)
{
	sy_log(SY_LOG_ERR, "%s", err->message);
	if (st == SY_STORE_CONNECTION || !sy_store_connection_usable(w->db)) {
		sy_ws_db_close(w);
		/* Nothing can be written without it; the stream restarts from the slot. */
		sy_ws_stream_close(w);
	}
	sy_ws_backoff(w);
}
