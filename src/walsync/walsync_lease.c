/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync_lease.c: the single-writer lease of synchro-walsync (synchro-walsync(8), "THE
 * WRITER LEASE").
 *
 * Layer: middle of src/walsync (doc/hacking.md).
 * Rules: doc/contract.md#wal-alone-publishes (only the lease's holder writes the changelog,
 * and its epoch and token fence every write).
 * Notes: The file holds the SQL connection and its backoff. It claims the lease as a
 * standby. The heartbeat runs on a connection of its own, also between the statements of a
 * long write. When the lease is found lost, the process is demoted. On stop, the lease is
 * released. The SQL is in src/store/lease.c.
 */
#include "config.h"

#include <assert.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "store/conn.h"
#include "store/lease.h"
#include "store/stream_continuity.h"
#include "walsync/walsync.h"

bool sy_ws_db_open(walsync *w)
{
	sy_error err = {0};
	w->db = sy_store_connect(w->conninfo, "synchro-walsync", &err);
	if (!w->db) {
		sy_log(SY_LOG_ERR, "%s", err.message);
		sy_ws_backoff(w);
		return false;
	}
	int migration = 0;
	sy_store_status st = sy_store_changelog_session(w->db, &err);
	if (st == SY_STORE_OK)
		st = sy_store_walsync_ready(w->db, &migration, &err);
	w->continuity = migration >= SY_STORE_CONTINUITY_MIGRATION;
	w->scopes_db = migration >= SY_STORE_SCOPES_MIGRATION;
	sy_store_changes_set_scopes(w->batch, w->scopes_db);
	w->verify = false;
	if (st == SY_STORE_OK && migration >= SY_STORE_VERIFY_MIGRATION)
		st = sy_store_messages_verified_from(w->db, &w->verify, &w->verified_from, &err);
	w->scope_verify = false;
	if (st == SY_STORE_OK && migration >= SY_STORE_SCOPE_VERIFY_MIGRATION)
		st = sy_store_scope_messages_verified_from(w->db, &w->scope_verify,
		                                           &w->scope_verified_from, &err);
	if (st != SY_STORE_OK) {
		sy_log(SY_LOG_ERR, "%s", err.message);
		sy_ws_db_close(w);
		sy_ws_backoff(w);
		return false;
	}
	w->backoff_ms = 0;
	/* A leader first makes sure the lease survived the outage. */
	w->next_renew_ms = 0;
	return true;
}

void sy_ws_lease_claim(walsync *w)
{
	assert(w->db && !w->leader && !w->repl);
	sy_error err = {0};
	bool acquired = false;
	char prev[SY_STORE_WRITER_ID_MAX + 1];
	sy_store_status st = sy_store_lease_claim(w->db, w->writer_id, w->lease_s, w->stale_s,
	                                          &w->lease, &acquired, prev, &err);
	if (st != SY_STORE_OK) {
		sy_ws_store_failed(w, st, &err);
		return;
	}
	if (!acquired) {
		sy_log(SY_LOG_DEBUG, "standby: the writer lease is held by %s", prev);
		w->retry_at_ms = sy_clock_ms() + (int64_t)w->renew_s * 1000;
		return;
	}
	w->leader = true;
	w->stats.lease_acquired++;
	if (prev[0] && strcmp(prev, w->writer_id) != 0)
		w->stats.lease_takeovers++;
	w->next_renew_ms = sy_clock_ms() + (int64_t)w->renew_s * 1000;
	w->retry_at_ms = 0;
	w->backoff_ms = 0;
	sy_log(SY_LOG_INFO, "holds the writer lease as %s, epoch %lld%s%s", w->writer_id,
	       w->lease.epoch, prev[0] ? ", taken over from " : "", prev);
}

/* The heartbeat's connection, opened when missing; NULL (logged) when it cannot be. */
static PGconn *hb_conn(walsync *w)
{
	if (w->hb && !sy_store_connection_usable(w->hb)) {
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
 * long write never lets the lease go stale. Never demotes here: the
 * write's lease guard refuses what a lost lease must not write, and the caller demotes. */
void sy_ws_lease_tick(void *arg)
{
	walsync *w = arg;
	if (sy_clock_ms() < w->next_renew_ms)
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
		w->next_renew_ms = sy_clock_ms() + (int64_t)w->renew_s * 1000;
}

void sy_ws_lease_renew(walsync *w)
{
	assert(w->db && w->leader);
	sy_error err = {0};
	sy_store_lease_progress p = {w->slot, w->confirmed, w->stats.last_lag_ms};
	PGconn *hb = hb_conn(w);
	sy_store_status st = sy_store_lease_renew(hb ? hb : w->db, &w->lease, w->lease_s, &p, &err);
	if (st == SY_STORE_CONFLICT) {
		sy_ws_demote(w, "the heartbeat found it taken over or expired");
		return;
	}
	if (st != SY_STORE_OK) {
		sy_ws_store_failed(w, st, &err);
		return;
	}
	w->next_renew_ms = sy_clock_ms() + (int64_t)w->renew_s * 1000;
}

void sy_ws_lease_release(walsync *w)
{
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
