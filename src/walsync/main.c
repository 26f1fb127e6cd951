/* SPDX-License-Identifier: BSD-2-Clause */
/* synchro-walsync: materializes the version-fence messages of the WAL into synchro.changelog in
 * commit order, as the single writer of the lease; standby instances wait to take over. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "store/changelog.h"
#include "store/cfg.h"
#include "store/conn.h"
#include "store/lease.h"
#include "store/stream_continuity.h"
#include "synchro/alloc.h"
#include "walsync/pgoutput.h"
#include "walsync/stream.h"
#include "walsync/walsync.h"
#include "walsync/walsync_continuity.h"

/* Standby status updates at least this often, well inside wal_sender_timeout (60 s). */
#define STATUS_INTERVAL_MS 10000
/* Longest wait between two reconnection attempts. */
#define BACKOFF_MAX_MS 10000
/* Attempts to start streaming while a displaced reader still holds the slot. */
#define START_TRIES 50

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t reload_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void on_hup(int sig)
{
	(void)sig;
	reload_requested = 1;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void lsn_text(uint64_t lsn, char buf[SY_STORE_LSN_MAX + 1])
{
	sy_store_lsn_format(lsn, buf);
}

/* Sleeps up to ms, returning early on a signal. */
static void nap(int64_t ms)
{
	if (ms <= 0 || stop_requested)
		return;
	(void)poll(NULL, 0, (int)(ms > 60000 ? 60000 : ms));
}

static long env_long(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? strtol(v, NULL, 10) : 0;
}

static bool apply_settings(walsync *w, sy_cfg *cfg, bool first)
{
	const char *slot = sy_cfg_str(cfg, "walsync", "slot");
	if (!sy_ws_slot_name_valid(slot)) {
		sy_log(SY_LOG_ERR, "[walsync] slot must be 1..63 characters of a-z, 0-9 and _");
		return false;
	}
	int lease_s = (int)sy_cfg_int(cfg, "walsync", "lease_s");
	int renew_s = (int)sy_cfg_int(cfg, "walsync", "renew_s");
	int stale_s = (int)sy_cfg_int(cfg, "walsync", "stale_heartbeat_s");
	if (renew_s >= lease_s || renew_s >= stale_s) {
		sy_log(SY_LOG_ERR, "[walsync] renew_s must be below lease_s and stale_heartbeat_s");
		return false;
	}
	if (!first && (strcmp(slot, w->slot) != 0 ||
	               strcmp(sy_cfg_str(cfg, "database", "conninfo"), w->conninfo) != 0 ||
	               strcmp(sy_cfg_str(cfg, "walsync", "writer_id"),
	                      sy_cfg_str(w->cfg, "walsync", "writer_id")) != 0 ||
	               sy_cfg_int(cfg, "walsync", "batch_rows") != (long long)w->batch_rows))
		sy_log(SY_LOG_WARNING,
		       "conninfo, slot, writer_id and batch_rows take effect at restart only");
	sy_log_level level = SY_LOG_INFO;
	(void)sy_log_level_parse(sy_cfg_str(cfg, "log", "level"), &level);
	sy_log_open("synchro-walsync", sy_cfg_str(cfg, "log", "target"), level);
	if (first) {
		w->conninfo = sy_cfg_str(cfg, "database", "conninfo");
		w->slot = slot;
		const char *id = sy_cfg_str(cfg, "walsync", "writer_id");
		if (id[0]) {
			snprintf(w->writer_id, sizeof w->writer_id, "%s", id);
		} else {
			char host[128] = "localhost";
			(void)gethostname(host, sizeof host - 1);
			host[sizeof host - 1] = '\0';
			snprintf(w->writer_id, sizeof w->writer_id, "%s:%ld", host, (long)getpid());
		}
	}
	w->lease_s = lease_s;
	w->renew_s = renew_s;
	w->stale_s = stale_s;
	w->lag_log_s = (int)sy_cfg_int(cfg, "walsync", "lag_log_s");
	if (first) {
		w->batch_rows = (size_t)sy_cfg_int(cfg, "walsync", "batch_rows");
		/* The most changes walsync holds of one transaction (its memory bound). */
		w->piece_rows = w->batch_rows * 8;
	}
	return true;
}

/* SIGHUP: lease timings, the lag log and log settings; the rest needs a restart. */
static void reload(walsync *w)
{
	if (!w->conf_path)
		return;
	sy_error err = {0};
	sy_cfg *cfg = sy_cfg_load(w->conf_path, &err);
	if (!cfg) {
		sy_log(SY_LOG_ERR, "reload: %s; keeping the running settings", err.message);
		return;
	}
	/* w->conninfo and w->slot keep pointing into the first configuration. */
	if (apply_settings(w, cfg, false))
		sy_log(SY_LOG_INFO, "reloaded %s", w->conf_path);
	sy_cfg_free(cfg);
}

static void reset_stream_state(walsync *w)
{
	w->in_txn = false;
	w->txn_skip = false;
	sy_store_changes_clear(w->batch);
	w->batch_txns = 0;
	w->batch_end = 0;
	w->batch_newest_time = 0;
	w->idle_lsn = 0;
	w->fences_known = false; /* a new stream sends its RELATION messages again */
	sy_ws_fences_clear(w->fences);
}

static void close_stream(walsync *w)
{
	if (w->repl) {
		PQfinish(w->repl);
		w->repl = NULL;
	}
	reset_stream_state(w);
}

static void close_db(walsync *w)
{
	sy_store_disconnect(w->db);
	w->db = NULL;
	sy_store_disconnect(w->hb);
	w->hb = NULL;
}

/* After a failure: the next attempt waits, longer each time up to BACKOFF_MAX_MS. */
static void backoff(walsync *w)
{
	w->backoff_ms = w->backoff_ms ? w->backoff_ms * 2 : 500;
	if (w->backoff_ms > BACKOFF_MAX_MS)
		w->backoff_ms = BACKOFF_MAX_MS;
	w->retry_at_ms = mono_ms() + w->backoff_ms;
}

static void demote(walsync *w, const char *why)
{
	if (w->leader)
		sy_log(SY_LOG_WARNING, "lost the writer lease (epoch %lld): %s; back to standby",
		       w->lease.epoch, why);
	w->leader = false;
	close_stream(w);
}

/* A failed store call: a lost connection is dropped (and retried), anything else logged. */
static void store_failed(walsync *w, sy_store_status st, const sy_error *err)
{
	sy_log(SY_LOG_ERR, "%s", err->message);
	if (st == SY_STORE_CONNECTION || PQstatus(w->db) != CONNECTION_OK) {
		close_db(w);
		/* Nothing can be written without it; the stream restarts from the slot. */
		close_stream(w);
	}
	backoff(w);
}

static bool connect_db(walsync *w)
{
	sy_error err = {0};
	w->db = sy_store_connect(w->conninfo, "synchro-walsync", &err);
	if (!w->db) {
		sy_log(SY_LOG_ERR, "%s", err.message);
		backoff(w);
		return false;
	}
	int migration = 0;
	sy_store_status st = sy_store_changelog_session(w->db, &err);
	if (st == SY_STORE_OK)
		st = sy_store_walsync_ready(w->db, &migration, &err);
	w->continuity = migration >= SY_STORE_CONTINUITY_MIGRATION;
	w->verify = false;
	if (st == SY_STORE_OK && migration >= SY_STORE_VERIFY_MIGRATION)
		st = sy_store_messages_verified_from(w->db, &w->verify, &w->verified_from, &err);
	if (st != SY_STORE_OK) {
		sy_log(SY_LOG_ERR, "%s", err.message);
		close_db(w);
		backoff(w);
		return false;
	}
	w->backoff_ms = 0;
	/* A leader first makes sure the lease survived the outage. */
	w->next_renew_ms = 0;
	return true;
}

static void try_claim(walsync *w)
{
	sy_error err = {0};
	bool acquired = false;
	char prev[SY_STORE_WRITER_ID_MAX + 1];
	sy_store_status st = sy_store_lease_claim(w->db, w->writer_id, w->lease_s, w->stale_s,
	                                          &w->lease, &acquired, prev, &err);
	if (st != SY_STORE_OK) {
		store_failed(w, st, &err);
		return;
	}
	if (!acquired) {
		sy_log(SY_LOG_DEBUG, "standby: the writer lease is held by %s", prev);
		w->retry_at_ms = mono_ms() + (int64_t)w->renew_s * 1000;
		return;
	}
	w->leader = true;
	w->next_renew_ms = mono_ms() + (int64_t)w->renew_s * 1000;
	w->retry_at_ms = 0;
	w->backoff_ms = 0;
	sy_log(SY_LOG_INFO, "holds the writer lease as %s, epoch %lld%s%s", w->writer_id,
	       w->lease.epoch, prev[0] ? ", taken over from " : "", prev);
}

/* The heartbeat's connection, opened when missing; NULL (logged) when it cannot be. */
static PGconn *hb_conn(walsync *w)
{
	if (w->hb && PQstatus(w->hb) != CONNECTION_OK) {
		sy_store_disconnect(w->hb);
		w->hb = NULL;
	}
	if (!w->hb) {
		sy_error err = {0};
		w->hb = sy_store_connect(w->conninfo, "synchro-walsync heartbeat", &err);
		if (!w->hb)
			sy_log(SY_LOG_WARNING, "heartbeat connection: %s", err.message);
	}
	return w->hb;
}

/* Between two statements of a changelog write: the heartbeat, on its own connection, so a
 * long write never lets the lease go stale (issue 16, item 5). Never demotes here: the
 * write's lease guard refuses what a lost lease must not write, and the caller demotes. */
static void write_tick(void *arg)
{
	walsync *w = arg;
	if (mono_ms() < w->next_renew_ms)
		return;
	PGconn *hb = hb_conn(w);
	if (!hb)
		return;
	sy_error err = {0};
	sy_store_lease_progress p = {w->slot, 0, -1};
	sy_store_status st = sy_store_lease_renew(hb, &w->lease, w->lease_s, &p, &err);
	if (st == SY_STORE_CONFLICT)
		w->hb_lost = true;
	else if (st != SY_STORE_OK)
		sy_log(SY_LOG_WARNING, "heartbeat during a write: %s", err.message);
	else
		w->next_renew_ms = mono_ms() + (int64_t)w->renew_s * 1000;
}

static void renew(walsync *w)
{
	sy_error err = {0};
	sy_store_lease_progress p = {w->slot, w->confirmed, w->last_lag_ms};
	PGconn *hb = hb_conn(w);
	sy_store_status st = sy_store_lease_renew(hb ? hb : w->db, &w->lease, w->lease_s, &p, &err);
	if (st == SY_STORE_CONFLICT) {
		demote(w, "the heartbeat found it taken over or expired");
		return;
	}
	if (st != SY_STORE_OK) {
		store_failed(w, st, &err);
		return;
	}
	w->next_renew_ms = mono_ms() + (int64_t)w->renew_s * 1000;
}

static bool send_status(walsync *w)
{
	sy_error err = {0};
	/* Slot continuity: the slot is never told of a position that is not durable. */
	if (w->continuity && w->confirmed > w->durable) {
		sy_store_status st = sy_store_stream_position_record(w->db, &w->lease, w->slot,
		                                                     w->confirmed, &err);
		if (st == SY_STORE_CONFLICT) {
			demote(w, "its stream position record was refused");
			return false;
		}
		if (st != SY_STORE_OK) {
			store_failed(w, st, &err);
			close_stream(w);
			return false;
		}
		w->durable = w->confirmed;
	}
	if (!sy_ws_send_status(w->repl, w->confirmed, &err)) {
		sy_log(SY_LOG_ERR, "%s", err.message);
		close_stream(w);
		backoff(w);
		return false;
	}
	w->next_status_ms = mono_ms() + STATUS_INTERVAL_MS;
	return true;
}

/* Leader without a stream: checks the slot (creating it), then streams from it, stopping
 * a displaced writer's walsender that still holds it. */
static void start_stream(walsync *w)
{
	sy_error err = {0};
	sy_store_slot slot;
	sy_store_status st = sy_store_slot_get(w->db, w->slot, &slot, &err);
	if (st != SY_STORE_OK) {
		store_failed(w, st, &err);
		return;
	}
	if (slot.found && !slot.usable) {
		sy_log(SY_LOG_ERR, "replication slot %s is not a pgoutput slot of this database",
		       w->slot);
		backoff(w);
		return;
	}
	w->repl = sy_ws_connect(w->conninfo, &err);
	if (!w->repl) {
		sy_log(SY_LOG_ERR, "%s", err.message);
		backoff(w);
		return;
	}
	bool created = false;
	if (!slot.found) {
		if (!sy_ws_slot_create(w->repl, w->slot, &created, &err)) {
			sy_log(SY_LOG_ERR, "%s", err.message);
			close_stream(w);
			backoff(w);
			return;
		}
		if (created)
			sy_log(SY_LOG_INFO, "created replication slot %s", w->slot);
		/* Its confirmed position is where streaming starts. */
		st = sy_store_slot_get(w->db, w->slot, &slot, &err);
		if (st != SY_STORE_OK) {
			store_failed(w, st, &err);
			return;
		}
	}
	sy_ws_continuity cont = SY_WS_CONTINUOUS;
	if (w->continuity)
		cont = sy_ws_continuity_check(w->db, &w->lease, w->slot, created,
		                              slot.confirmed_flush, &w->durable, &st, &err);
	switch (cont) {
	case SY_WS_CONTINUOUS:
	case SY_WS_RESOLVED: break;
	case SY_WS_REFUSED:
		close_stream(w);
		backoff(w);
		return;
	case SY_WS_FENCED: demote(w, "the lease refused the stream position"); return;
	case SY_WS_FAILED: store_failed(w, st, &err); return;
	}
	st = sy_store_changelog_last_position(w->db, &w->skip_upto, &w->skip_ord, &err);
	if (st != SY_STORE_OK) {
		store_failed(w, st, &err);
		return;
	}
	for (int tries = 0;; tries++) {
		sy_ws_start_status s = sy_ws_start(w->repl, w->slot, &err);
		if (s == SY_WS_START_OK)
			break;
		if (s == SY_WS_START_FAILED || tries >= START_TRIES || stop_requested) {
			sy_log(SY_LOG_ERR, "%s", err.message);
			close_stream(w);
			backoff(w);
			return;
		}
		/* Only the holder gets here: the slot's reader is a displaced writer (paused,
		 * or not yet aware); its stream must end for this one to begin. */
		bool evicted = false;
		st = sy_store_slot_evict(w->db, w->slot, &evicted, &err);
		if (st != SY_STORE_OK) {
			store_failed(w, st, &err);
			return;
		}
		if (evicted)
			sy_log(SY_LOG_INFO, "stopped the previous reader of slot %s", w->slot);
		nap(100);
	}
	reset_stream_state(w);
	w->confirmed = slot.confirmed_flush;
	w->backoff_ms = 0;
	char a[SY_STORE_LSN_MAX + 1], b[SY_STORE_LSN_MAX + 1];
	lsn_text(slot.confirmed_flush, a);
	lsn_text(w->skip_upto, b);
	sy_log(SY_LOG_INFO, "streaming slot %s from %s (changelog at %s)", w->slot, a, b);
	(void)send_status(w);
}

/* Writes the complete transactions of the batch, then confirms their end to the slot. */
static void flush_batch(walsync *w)
{
	if (w->batch_txns == 0)
		return;
	size_t rows = sy_store_changes_count(w->batch);
	if (rows > 0 || sy_store_changes_epoch_count(w->batch) > 0) {
		if (w->stop_before_write > 0 && --w->stop_before_write == 0) {
			sy_log(SY_LOG_INFO, "test switch: stopping before a changelog write");
			raise(SIGSTOP);
		}
		sy_error err = {0};
		sy_store_written wr;
		if (w->continuity)
			sy_store_changes_set_end(w->batch, w->slot, w->batch_end);
		w->hb_lost = false;
		sy_store_status st = sy_store_changelog_write(w->db, &w->lease, w->batch, false,
		                                              write_tick, w, &wr, &err);
		if (st == SY_STORE_CONFLICT || (st == SY_STORE_OK && w->hb_lost)) {
			sy_log(SY_LOG_WARNING, "%s",
			       st == SY_STORE_OK
			               ? "the heartbeat found the lease lost during a write"
			               : err.message);
			demote(w, "its changelog write was refused");
			return;
		}
		if (st != SY_STORE_OK) {
			store_failed(w, st, &err);
			/* The slot delivers the batch again: nothing was confirmed. */
			close_stream(w);
			return;
		}
		if (w->batch_end > w->durable)
			w->durable = w->batch_end;
		w->commits++;
		if (w->exit_after_commits > 0 && w->commits >= w->exit_after_commits) {
			sy_log(SY_LOG_INFO,
			       "test switch: exiting after changelog commit %lld, before "
			       "confirming it",
			       w->commits);
			_exit(75);
		}
		long long lag = (sy_ws_now_pg() - w->batch_newest_time) / 1000;
		if (lag < 0)
			lag = 0;
		w->last_lag_ms = lag;
		if (lag > w->lag_max_ms)
			w->lag_max_ms = lag;
		w->stat_changes += (long long)rows;
		sy_log(SY_LOG_DEBUG,
		       "wrote %zu changes of %zu transactions (%lld new, %lld epochs)", rows,
		       w->batch_txns, wr.inserted, wr.epochs_advanced);
	}
	w->stat_txns += (long long)w->batch_txns;
	if (w->batch_end > w->confirmed)
		w->confirmed = w->batch_end;
	sy_store_changes_clear(w->batch);
	w->batch_txns = 0;
	/* Every transaction before the last idle keepalive is now written. */
	if (w->idle_lsn > w->confirmed)
		w->confirmed = w->idle_lsn;
	(void)send_status(w);
}

static void log_lag(walsync *w)
{
	int64_t now = mono_ms();
	double secs = (double)(now - w->stat_since_ms) / 1000.0;
	long long behind = -1;
	if (w->db) {
		sy_error err = {0};
		sy_store_status st = sy_store_wal_behind(w->db, w->confirmed, &behind, &err);
		if (st != SY_STORE_OK) {
			store_failed(w, st, &err);
			return;
		}
	}
	char a[SY_STORE_LSN_MAX + 1];
	lsn_text(w->confirmed, a);
	sy_log(SY_LOG_INFO,
	       "lag: slot %s confirmed at %s, %lld bytes of WAL behind; last %lld ms, max %lld ms "
	       "commit to changelog; %lld changes in %lld transactions in %.0f s (%.0f/s)",
	       w->slot, a, behind, w->last_lag_ms, w->lag_max_ms, w->stat_changes, w->stat_txns,
	       secs, secs > 0 ? (double)w->stat_changes / secs : 0.0);
	w->stat_changes = 0;
	w->stat_txns = 0;
	w->lag_max_ms = 0;
	w->stat_since_ms = now;
}

/* Reads what the stream has (waiting at most until the next timer), writes complete
 * transactions, confirms. */
static void stream_step(walsync *w)
{
	int64_t now = mono_ms();
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
		close_stream(w);
		backoff(w);
		return;
	}
	if (flushing == 1)
		pfd.events |= POLLOUT;
	int pr = poll(&pfd, 1, timeout);
	if (pr < 0 && errno != EINTR) {
		sy_log(SY_LOG_ERR, "poll: %s", strerror(errno));
		close_stream(w);
		backoff(w);
		return;
	}
	if (pr <= 0)
		goto timers;
	sy_error err = {0};
	if (!sy_ws_consume(w->repl, &err)) {
		sy_log(SY_LOG_ERR, "%s", err.message);
		close_stream(w);
		backoff(w);
		return;
	}
	bool reply = false;
	for (;;) {
		char *buf = NULL;
		int n = sy_ws_read(w->repl, &buf, &err);
		if (n == 0)
			break;
		if (n < 0) {
			sy_log(SY_LOG_ERR, "%s", err.message);
			close_stream(w);
			backoff(w);
			return;
		}
		bool ok = sy_ws_on_frame(w, (const unsigned char *)buf, (size_t)n, &reply);
		PQfreemem(buf);
		if (!ok) {
			close_stream(w);
			backoff(w);
			return;
		}
		if (!w->in_txn && sy_store_changes_count(w->batch) >= w->batch_rows) {
			flush_batch(w);
			if (!w->repl || !w->leader)
				return;
		}
	}
	if (!w->in_txn)
		flush_batch(w);
	if (!w->repl || !w->leader)
		return;
	if (reply && !send_status(w))
		return;
timers:
	now = mono_ms();
	if (!w->in_txn && w->batch_txns == 0 && w->idle_lsn > w->confirmed)
		w->confirmed = w->idle_lsn;
	if (now >= w->next_status_ms)
		(void)send_status(w);
}

bool sy_ws_flush_piece(walsync *w)
{
	sy_error err = {0};
	sy_store_written wr;
	w->hb_lost = false;
	sy_store_status st = sy_store_changelog_write(w->db, &w->lease, w->batch, true, write_tick,
	                                              w, &wr, &err);
	if (st == SY_STORE_CONFLICT || (st == SY_STORE_OK && w->hb_lost)) {
		sy_log(SY_LOG_WARNING, "%s",
		       st == SY_STORE_OK ? "the heartbeat found the lease lost during a write"
		                         : err.message);
		demote(w, "its changelog write was refused");
		return false;
	}
	if (st != SY_STORE_OK) {
		store_failed(w, st, &err);
		return false;
	}
	sy_store_changes_clear_rows(w->batch);
	w->pieces++;
	sy_log(SY_LOG_DEBUG,
	       "wrote a piece of %lld changes of the transaction at %X/%X (%lld pieces)",
	       wr.inserted, (unsigned)(w->txn_lsn >> 32), (unsigned)w->txn_lsn, w->pieces);
	return true;
}

static void shutdown_leader(walsync *w)
{
	if (w->repl && w->leader && !w->in_txn)
		flush_batch(w);
	close_stream(w);
	if (w->leader && w->db) {
		sy_error err = {0};
		if (sy_store_lease_release(w->db, &w->lease, &err) != SY_STORE_OK)
			sy_log(SY_LOG_WARNING, "%s", err.message);
		else
			sy_log(SY_LOG_INFO, "released the writer lease (epoch %lld)",
			       w->lease.epoch);
	}
	w->leader = false;
}

static void run(walsync *w)
{
	int64_t now = mono_ms();
	w->stat_since_ms = now;
	w->next_lag_log_ms = now + (int64_t)w->lag_log_s * 1000;
	while (!stop_requested) {
		if (reload_requested) {
			reload_requested = 0;
			reload(w);
		}
		now = mono_ms();
		if (w->lag_log_s > 0 && now >= w->next_lag_log_ms) {
			w->next_lag_log_ms = now + (int64_t)w->lag_log_s * 1000;
			if (w->leader && w->repl)
				log_lag(w);
		}
		if (now < w->retry_at_ms) {
			/* The lease is renewed through a backoff too. */
			int64_t until = w->retry_at_ms;
			if (w->leader && w->db && w->next_renew_ms < until)
				until = w->next_renew_ms;
			nap(until - now);
			if (!(w->leader && w->db && mono_ms() >= w->next_renew_ms))
				continue;
		}
		if (!w->db && !connect_db(w))
			continue;
		if (!w->leader) {
			try_claim(w);
			continue;
		}
		if (mono_ms() >= w->next_renew_ms) {
			renew(w);
			if (!w->leader || !w->db)
				continue;
		}
		if (mono_ms() < w->retry_at_ms)
			continue;
		if (!w->repl) {
			start_stream(w);
			continue;
		}
		stream_step(w);
	}
	shutdown_leader(w);
}

static void usage(FILE *f)
{
	fputs("usage: synchro-walsync [-c synchro.conf]\n"
	      "Materializes the version-fence messages of the WAL into synchro.changelog as the\n"
	      "single writer of the writer lease; see synchro-walsync(8).\n",
	      f);
}

int main(int argc, char **argv)
{
	walsync w;
	memset(&w, 0, sizeof w);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
			w.conf_path = argv[++i];
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "--version") == 0) {
			printf("synchro-walsync %s\n", PACKAGE_VERSION);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	sy_log_open("synchro-walsync", "stderr", SY_LOG_INFO);
	if (w.conf_path) {
		sy_error err = {0};
		w.cfg = sy_cfg_load(w.conf_path, &err);
		if (!w.cfg) {
			sy_log(SY_LOG_ERR, "%s", err.message);
			return 2;
		}
	}
	if (!apply_settings(&w, w.cfg, true)) {
		sy_cfg_free(w.cfg);
		return 2;
	}
	w.exit_after_commits = env_long("SYNCHRO_WALSYNC_TEST_EXIT_AFTER_COMMITS");
	w.stop_before_write = env_long("SYNCHRO_WALSYNC_TEST_STOP_BEFORE_WRITE");
	w.batch = sy_store_changes_new(w.batch_rows);
	w.fences = sy_ws_fences_new();
	if (!w.batch || !w.fences) {
		sy_ws_fences_free(w.fences);
		sy_log(SY_LOG_ERR, "out of memory");
		sy_cfg_free(w.cfg);
		return 1;
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_stop; /* no SA_RESTART: poll() returns at once */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);

	sy_log(SY_LOG_INFO, "starting as %s, slot %s, lease %d s, renew %d s, stale heartbeat %d s",
	       w.writer_id, w.slot, w.lease_s, w.renew_s, w.stale_s);
	run(&w);
	close_db(&w);
	sy_store_changes_free(w.batch);
	sy_ws_fences_free(w.fences);
	sy_free(w.arena);
	sy_cfg_free(w.cfg);
	sy_log(SY_LOG_INFO, "stopped");
	return 0;
}
