/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * read_target.c: the read target of pull and rebuild (read_target.h).
 *
 * Layer: middle of src/store (doc/hacking.md).
 * Notes: It holds the replica's connection, with its reconnect backoff. It checks the
 * position: the primary's WAL flush position at arrival, against the replica's replay
 * position.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "store/conn.h"
#include "store/lease.h"
#include "store/prepared.h"
#include "store/read_target.h"
#include "store/session.h"
#include "synchro/alloc.h"

/* Reconnect backoff after failed attempts: doubles from the first step up to the cap. */
#define BACKOFF_FIRST_MS 500
#define BACKOFF_MAX_MS   10000
/* The replay position is polled with sleeps growing to this. */
#define POLL_STEP_MAX_MS 4

struct sy_read_target {
	const char *conninfo;
	int wait_ms;
	int lock_timeout_ms;
	PGconn *pg;
	int64_t next_connect_at; /* monotonic ms: no attempt before (backoff) */
	int backoff_ms;
	bool lagging; /* the last request found it behind: do not wait for it */
	bool decided; /* a verdict was given before */
	sy_read_verdict last;
};

/*
 * The primary's flush position: every transaction committed (synchronous_commit local or
 * on: its commit record flushed before the commit returned) is at or before it. No table,
 * no snapshot: the cost of a round trip.
 */
static sy_store_stmt flush_stmt =
        SY_STORE_STMT("sy_read_primary_flush", "SELECT pg_catalog.pg_current_wal_flush_lsn()", 0);
/* The replica's state; the functions of recovery only while in recovery. */
static sy_store_stmt replay_stmt = SY_STORE_STMT(
        "sy_read_replica_replay",
        "SELECT pg_catalog.pg_is_in_recovery(),"
        " CASE WHEN pg_catalog.pg_is_in_recovery() THEN pg_catalog.pg_last_wal_replay_lsn() END,"
        " CASE WHEN pg_catalog.pg_is_in_recovery()"
        "  THEN pg_catalog.pg_get_wal_replay_pause_state() <> 'not paused' END",
        0);

const char *sy_read_verdict_name(sy_read_verdict v)
{
	switch (v) {
	case SY_READ_REPLICA: return "replica";
	case SY_READ_NO_REPLICA: return "no replica";
	case SY_READ_DOWN: return "replica down";
	case SY_READ_PAUSED: return "replica replay paused";
	case SY_READ_BEHIND: return "replica behind";
	case SY_READ_NOT_STANDBY: return "replica not in recovery";
	case SY_READ_PRIMARY_FAILED: return "primary position unknown";
	}
	return "?";
}

sy_read_target *sy_read_target_new(const char *conninfo, int wait_ms, int lock_timeout_ms)
{
	sy_read_target *t = sy_calloc(1, sizeof *t);
	if (t == NULL)
		return NULL;
	t->conninfo = conninfo;
	t->wait_ms = wait_ms;
	t->lock_timeout_ms = lock_timeout_ms;
	return t;
}

static void drop(sy_read_target *t)
{
	sy_store_disconnect(t->pg);
	t->pg = NULL;
	t->backoff_ms = t->backoff_ms == 0 ? BACKOFF_FIRST_MS : t->backoff_ms * 2;
	if (t->backoff_ms > BACKOFF_MAX_MS)
		t->backoff_ms = BACKOFF_MAX_MS;
	t->next_connect_at = sy_clock_ms() + t->backoff_ms;
}

void sy_read_target_free(sy_read_target *t)
{
	if (t == NULL)
		return;
	sy_store_disconnect(t->pg);
	sy_free(t);
}

void sy_read_target_failed(sy_read_target *t)
{
	if (t != NULL && t->pg != NULL &&
	    (PQstatus(t->pg) != CONNECTION_OK || PQpipelineStatus(t->pg) != PQ_PIPELINE_OFF))
		drop(t);
}

/* The replica's connection, opened when the backoff allows; NULL (*err set) when down. */
static PGconn *connection(sy_read_target *t, sy_error *err)
{
	if (t->pg != NULL &&
	    (PQstatus(t->pg) != CONNECTION_OK || PQpipelineStatus(t->pg) != PQ_PIPELINE_OFF))
		drop(t);
	if (t->pg != NULL)
		return t->pg;
	if (sy_clock_ms() < t->next_connect_at) {
		sy_store_fail(err, SY_STORE_CONNECTION, "reconnect backoff");
		return NULL;
	}
	PGconn *c = sy_store_connect(t->conninfo, "synchro-fcgi", err);
	if (c != NULL && sy_store_session_limits(c, t->lock_timeout_ms, err) != SY_STORE_OK) {
		sy_store_disconnect(c);
		c = NULL;
	}
	if (c == NULL) {
		drop(t);
		return NULL;
	}
	t->pg = c;
	t->backoff_ms = 0;
	t->next_connect_at = 0;
	return c;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* The replica's verdict against the primary's position `target`. */
static sy_read_verdict check(sy_read_target *t, unsigned long long target, sy_error *err)
{
	int64_t deadline = sy_clock_ms() + (t->lagging ? 0 : t->wait_ms);
	for (int step = 1;; step = step * 2 > POLL_STEP_MAX_MS ? POLL_STEP_MAX_MS : step * 2) {
		sy_store_status st;
		PGresult *r = sy_store_exec_stmt(t->pg, &replay_stmt, NULL, PGRES_TUPLES_OK,
		                                 "replica position", NULL, &st, err);
		if (r == NULL) {
			drop(t);
			return SY_READ_DOWN;
		}
		bool standby = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
		bool paused = standby && strcmp(PQgetvalue(r, 0, 2), "t") == 0;
		unsigned long long replayed = 0;
		bool known = standby && !PQgetisnull(r, 0, 1) &&
		             sy_store_lsn_parse(PQgetvalue(r, 0, 1), &replayed);
		PQclear(r);
		if (!standby)
			return SY_READ_NOT_STANDBY;
		if (known && replayed >= target)
			return SY_READ_REPLICA;
		if (paused)
			return SY_READ_PAUSED;
		if (sy_clock_ms() >= deadline)
			return SY_READ_BEHIND;
		sleep_ms(step);
	}
}

PGconn *sy_read_target_choose(sy_read_target *t, PGconn *primary, sy_read_verdict *verdict,
                              bool *changed, sy_error *err)
{
	sy_read_verdict v;
	*changed = false;
	if (t == NULL || t->conninfo == NULL || t->conninfo[0] == '\0') {
		*verdict = SY_READ_NO_REPLICA;
		return NULL;
	}
	bool backing_off = t->pg == NULL && sy_clock_ms() < t->next_connect_at;
	if (connection(t, err) == NULL) {
		v = SY_READ_DOWN;
		goto done;
	}
	sy_store_status st;
	sy_error perr = {0};
	PGresult *r = sy_store_exec_stmt(primary, &flush_stmt, NULL, PGRES_TUPLES_OK,
	                                 "primary position", NULL, &st, &perr);
	unsigned long long target;
	bool ok = r != NULL && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0) &&
	          sy_store_lsn_parse(PQgetvalue(r, 0, 0), &target);
	PQclear(r);
	if (!ok) {
		/* The request reads the primary, which reports its own failure. */
		v = SY_READ_PRIMARY_FAILED;
		goto done;
	}
	v = check(t, target, err);
	t->lagging = v == SY_READ_BEHIND || v == SY_READ_PAUSED;
done:
	*verdict = v;
	/* A backoff that keeps the replica down is no news. */
	*changed = (!t->decided || v != t->last) && !(backing_off && t->last == SY_READ_DOWN);
	t->decided = true;
	t->last = v;
	return v == SY_READ_REPLICA ? t->pg : NULL;
}
