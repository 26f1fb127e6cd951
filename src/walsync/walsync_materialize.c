/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync_materialize.c: the leader's stream into synchro.changelog.
 *
 * Layer: middle of src/walsync (doc/hacking.md).
 * Rules: doc/contract.md#wal-alone-publishes (WAL alone creates pull-visible effects,
 * materialized in commit order, with the versions the source transactions allocated),
 * doc/operations.md#slot-continuity (the slot's position),
 * doc/operations.md#large-transactions (a transaction written in pieces).
 * Notes: The stream starts from the slot. A missing slot is created. Its continuity is
 * checked, and a displaced reader is stopped. Frames are read until the next timer.
 * Complete transactions are assembled into batches. Each batch is written in one fenced
 * changelog transaction. A transaction too large to hold is written in pieces. Only
 * positions already durable are confirmed to the slot. walsync_decode.c decodes the frames.
 * The SQL is in src/store/changelog.c.
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "store/changelog.h"
#include "store/conn.h"
#include "store/lease.h"
#include "store/stream_continuity.h"
#include "walsync/stream.h"
#include "walsync/walsync.h"
#include "walsync/walsync_continuity.h"

/* Standby status updates at least this often, well inside wal_sender_timeout (60 s). */
#define STATUS_INTERVAL_MS 10000
/* Attempts to start streaming while a displaced reader still holds the slot. */
#define START_TRIES 50

/* A failure of the stream itself: it restarts from the slot after a backoff. */
static void stream_failed(walsync *w)
{
	sy_ws_stream_close(w);
	sy_ws_backoff(w);
}

static bool send_status(walsync *w)
{
	sy_error err = {0};
	/* Slot continuity: the slot is never told of a position that is not durable. */
	if (w->continuity && w->confirmed > w->durable) {
		sy_store_status st = sy_store_stream_position_record(w->db, &w->lease, w->slot,
		                                                     w->confirmed, &err);
		if (st == SY_STORE_CONFLICT) {
			sy_ws_demote(w, "its stream position record was refused");
			return false;
		}
		if (st != SY_STORE_OK) {
			sy_ws_store_failed(w, st, &err);
			sy_ws_stream_close(w);
			return false;
		}
		w->durable = w->confirmed;
	}
	if (!sy_ws_send_status(w->repl, w->confirmed, &err)) {
		sy_log(SY_LOG_ERR, "%s", err.message);
		stream_failed(w);
		return false;
	}
	w->next_status_ms = sy_clock_ms() + STATUS_INTERVAL_MS;
	return true;
}

/* Stops a displaced writer's walsender that still holds the slot, until this one can
 * stream; false when it cannot (logged, the stream closed). */
static bool start_streaming(walsync *w)
{
	sy_error err = {0};
	for (int tries = 0;; tries++) {
		sy_ws_start_status s = sy_ws_start(w->repl, w->slot, &err);
		if (s == SY_WS_START_OK)
			return true;
		if (s == SY_WS_START_FAILED || tries >= START_TRIES || sy_ws_stopping()) {
			sy_log(SY_LOG_ERR, "%s", err.message);
			stream_failed(w);
			return false;
		}
		/* Only the holder gets here: the slot's reader is a displaced writer (paused,
		 * or not yet aware); its stream must end for this one to begin. */
		bool evicted = false;
		sy_store_status st = sy_store_slot_evict(w->db, w->slot, &evicted, &err);
		if (st != SY_STORE_OK) {
			sy_ws_store_failed(w, st, &err);
			return false;
		}
		if (evicted)
			sy_log(SY_LOG_INFO, "stopped the previous reader of slot %s", w->slot);
		sy_ws_nap(100);
	}
}

static bool flush_piece(walsync *w);

void sy_ws_stream_start(walsync *w)
{
	assert(w->leader && w->db && !w->repl);
	w->write_piece = flush_piece;
	sy_error err = {0};
	sy_store_slot slot;
	sy_store_status st = sy_store_slot_get(w->db, w->slot, &slot, &err);
	if (st != SY_STORE_OK) {
		sy_ws_store_failed(w, st, &err);
		return;
	}
	if (slot.found && !slot.usable) {
		sy_log(SY_LOG_ERR, "replication slot %s is not a pgoutput slot of this database",
		       w->slot);
		sy_ws_backoff(w);
		return;
	}
	w->repl = sy_ws_connect(w->conninfo, &err);
	if (!w->repl) {
		sy_log(SY_LOG_ERR, "%s", err.message);
		sy_ws_backoff(w);
		return;
	}
	bool created = false;
	if (!slot.found) {
		if (!sy_ws_slot_create(w->repl, w->slot, &created, &err)) {
			sy_log(SY_LOG_ERR, "%s", err.message);
			stream_failed(w);
			return;
		}
		if (created)
			sy_log(SY_LOG_INFO, "created replication slot %s", w->slot);
		/* Its confirmed position is where streaming starts. */
		st = sy_store_slot_get(w->db, w->slot, &slot, &err);
		if (st != SY_STORE_OK) {
			sy_ws_store_failed(w, st, &err);
			return;
		}
	}
	sy_ws_continuity cont = SY_WS_CONTINUOUS;
	if (w->continuity)
		cont = sy_ws_continuity_check(w->db, &w->lease, w->slot, created,
		                              slot.confirmed_flush, &w->durable, &st, &err);
	switch (cont) {
	case SY_WS_CONTINUOUS: break;
	case SY_WS_RESOLVED: w->stats.slot_breaks++; break;
	case SY_WS_REFUSED: stream_failed(w); return;
	case SY_WS_FENCED: sy_ws_demote(w, "the lease refused the stream position"); return;
	case SY_WS_FAILED: sy_ws_store_failed(w, st, &err); return;
	}
	st = sy_store_changelog_last_position(w->db, &w->skip_upto, &w->skip_ord, &err);
	if (st != SY_STORE_OK) {
		sy_ws_store_failed(w, st, &err);
		return;
	}
	/* The mirror as the changelog has it, whoever wrote it last. */
	if (!sy_ws_mirror_start(w)) {
		sy_ws_stream_close(w);
		return;
	}
	if (!start_streaming(w))
		return;
	sy_ws_stream_reset(w);
	w->confirmed = slot.confirmed_flush;
	/* The backoff starts afresh after a changelog write (or a stream that stayed up, see
	 * sy_ws_backoff), not here: a stream that starts and fails its first write backs off. */
	w->stream_up_ms = sy_clock_ms();
	char a[SY_STORE_LSN_MAX + 1], b[SY_STORE_LSN_MAX + 1];
	sy_store_lsn_format(slot.confirmed_flush, a);
	sy_store_lsn_format(w->skip_upto, b);
	sy_log(SY_LOG_INFO, "streaming slot %s from %s (changelog at %s)", w->slot, a, b);
	(void)send_status(w);
}

/* One changelog write of the batch (whole transactions, or a piece of one), fenced by the
 * lease with the heartbeat running between its statements. OK, or the failure handled:
 * CONFLICT demoted, anything else through sy_ws_store_failed. */
static sy_store_status write_batch(walsync *w, bool piece, sy_store_written *wr)
{
	sy_error err = {0};
	if (!sy_ws_mirror_to_batch(w)) {
		sy_ws_backoff(w);
		return SY_STORE_NOMEM;
	}
	w->hb_lost = false;
	sy_store_status st = sy_store_changelog_write(w->db, &w->lease, w->batch, piece,
	                                              sy_ws_lease_tick, w, wr, &err);
	if (st == SY_STORE_CONFLICT || (st == SY_STORE_OK && w->hb_lost)) {
		sy_log(SY_LOG_WARNING, "%s",
		       st == SY_STORE_OK ? "the heartbeat found the lease lost during a write"
		                         : err.message);
		sy_ws_demote(w, "its changelog write was refused");
		return SY_STORE_CONFLICT;
	}
	if (st == SY_STORE_OK)
		w->backoff_ms = 0; /* a changelog write: the backoff starts afresh */
	/* The scope changes it wrote read the live tables before this position. */
	uint64_t horizon = 0;
	if (st == SY_STORE_OK && sy_ws_mirror_pending(w) &&
	    (st = sy_store_wal_insert_lsn(w->db, &horizon, &err)) == SY_STORE_OK)
		sy_ws_mirror_written(w, horizon);
	if (st != SY_STORE_OK)
		sy_ws_store_failed(w, st, &err);
	return st;
}

void sy_ws_flush_batch(walsync *w)
{
	/* Only between transactions, by the leader on its stream (a stream implies the lease
	 * and the SQL connection: losing either closes it). */
	assert(!w->in_txn && w->repl && w->leader && w->db);
	if (w->batch_txns == 0)
		return;
	size_t rows = sy_store_changes_count(w->batch);
	if (rows > 0 || sy_store_changes_epoch_count(w->batch) > 0 ||
	    sy_store_changes_scope_count(w->batch) > 0 ||
	    (w->scopes && sy_ws_scopes_dirty_count(w->scopes) > 0)) {
		if (w->stop_before_write > 0 && --w->stop_before_write == 0) {
			sy_log(SY_LOG_INFO, "test switch: stopping before a changelog write");
			raise(SIGSTOP);
		}
		sy_store_written wr;
		if (w->continuity)
			sy_store_changes_set_end(w->batch, w->slot, w->batch_end);
		sy_store_status st = write_batch(w, false, &wr);
		if (st == SY_STORE_CONFLICT)
			return;
		if (st != SY_STORE_OK) {
			/* The slot delivers the batch again: nothing was confirmed. */
			sy_ws_stream_close(w);
			return;
		}
		if (w->batch_end > w->durable)
			w->durable = w->batch_end;
		w->stats.commits++;
		if (w->exit_after_commits > 0 && w->stats.commits >= w->exit_after_commits) {
			sy_log(SY_LOG_INFO,
			       "test switch: exiting after changelog commit %lld, before "
			       "confirming it",
			       w->stats.commits);
			_exit(75);
		}
		sy_ws_stats_written(&w->stats, rows, w->batch_newest_time, sy_ws_server_now(w));
		/* In the changelog: the users it touched may pull it now. */
		sy_ws_notify_publish(w->notify);
		w->stats.entries_total += wr.inserted;
		sy_log(SY_LOG_DEBUG,
		       "wrote %zu changes of %zu transactions (%lld new, %lld epochs)", rows,
		       w->batch_txns, wr.inserted, wr.epochs_advanced);
	}
	w->stats.txns += (long long)w->batch_txns;
	w->stats.txns_total += (long long)w->batch_txns;
	if (w->batch_end > w->confirmed)
		w->confirmed = w->batch_end;
	sy_store_changes_clear(w->batch);
	w->batch_txns = 0;
	/* Every transaction before the last idle keepalive is now written. */
	if (w->idle_lsn > w->confirmed)
		w->confirmed = w->idle_lsn;
	(void)send_status(w);
}

/* w->write_piece: writes the changes decoded so far of a transaction too large to hold
 * (piece_rows), in a changelog transaction of their own, keeping its epochs for its last
 * piece; false when the stream must restart (the failure is logged). */
static bool flush_piece(walsync *w)
{
	assert(w->in_txn && w->repl && w->leader && w->db);
	sy_store_written wr;
	if (write_batch(w, true, &wr) != SY_STORE_OK)
		return false;
	sy_store_changes_clear_rows(w->batch);
	w->stats.pieces++;
	w->stats.entries_total += wr.inserted;
	sy_log(SY_LOG_DEBUG,
	       "wrote a piece of %lld changes of the transaction at %X/%X (%lld pieces)",
	       wr.inserted, (unsigned)(w->txn_lsn >> 32), (unsigned)w->txn_lsn, w->stats.pieces);
	return true;
}

/* Reads the frames libpq has buffered, flushing the batch when it is full between two
 * transactions; false when the stream ended or the lease was lost (handled). */
static bool read_frames(walsync *w, bool *reply)
{
	sy_error err = {0};
	if (!sy_ws_consume(w->repl, &err)) {
		sy_log(SY_LOG_ERR, "%s", err.message);
		stream_failed(w);
		return false;
	}
	for (;;) {
		char *buf = NULL;
		int n = sy_ws_read(w->repl, &buf, &err);
		if (n == 0)
			return true;
		if (n < 0) {
			sy_log(SY_LOG_ERR, "%s", err.message);
			stream_failed(w);
			return false;
		}
		bool ok = sy_ws_on_frame(w, (const unsigned char *)buf, (size_t)n, reply);
		PQfreemem(buf);
		if (!ok) {
			stream_failed(w);
			return false;
		}
		if (!w->in_txn && sy_store_changes_count(w->batch) >= w->batch_rows) {
			sy_ws_flush_batch(w);
			if (!w->repl || !w->leader)
				return false;
		}
	}
}

void sy_ws_stream_step(walsync *w)
{
	assert(w->repl && w->leader && w->db);
	int64_t now = sy_clock_ms();
	int64_t until = w->next_renew_ms < w->next_status_ms ? w->next_renew_ms : w->next_status_ms;
	int timeout = (int)(until - now);
	if (timeout < 0)
		timeout = 0;
	if (timeout > 1000)
		timeout = 1000;
	struct pollfd pfd = {PQsocket(w->repl), POLLIN, 0};
	int flushing = PQflush(w->repl);
	if (flushing < 0) {
		sy_log(SY_LOG_ERR, "replication stream: %s", PQerrorMessage(w->repl));
		stream_failed(w);
		return;
	}
	if (flushing == 1)
		pfd.events |= POLLOUT;
	int pr = poll(&pfd, 1, timeout);
	if (pr < 0 && errno != EINTR) {
		sy_log(SY_LOG_ERR, "poll: %s", strerror(errno));
		stream_failed(w);
		return;
	}
	if (pr > 0) {
		bool reply = false;
		if (!read_frames(w, &reply))
			return;
		if (!w->in_txn)
			sy_ws_flush_batch(w);
		if (!w->repl || !w->leader)
			return;
		if (reply && !send_status(w))
			return;
	}
	if (!w->in_txn && w->batch_txns == 0 && w->idle_lsn > w->confirmed)
		w->confirmed = w->idle_lsn;
	if (sy_clock_ms() >= w->next_status_ms)
		(void)send_status(w);
}
