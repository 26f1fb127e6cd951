/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * overview.c: the facts of synchroctl status (store/overview.h).
 *
 * Layer: middle of src/store (doc/hacking.md).
 * Notes: The facts come from five groups of read-only statements. Each group is one READ
 * ONLY transaction, with its statement and lock timeouts. Values go as parameters. lease.c
 * and stream_continuity.c read the writer lease and the last stream break, as synchroctl
 * lease status reads them.
 */
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/conn.h"
#include "store/migrate.h"
#include "store/overview.h"

typedef struct {
	sy_store_overview *out;
	const char *slot;
	long long exact_max_bytes;
	int timeout_ms;
} ov_ctx;

static void copy_col(char *dst, size_t size, const PGresult *r, int row, int col)
{
	snprintf(dst, size, "%s", PQgetisnull(r, row, col) ? "" : PQgetvalue(r, row, col));
}

static long long ll_col(const PGresult *r, int row, int col, long long if_null)
{
	return PQgetisnull(r, row, col) ? if_null : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

static void time_col(char out[SY_STORE_TIME_LEN + 1], const PGresult *r, int row, int col)
{
	(void)sy_store_format_time(PQgetisnull(r, row, col) ? "" : PQgetvalue(r, row, col), out);
}

/* Runs sql (nparams text parameters) expecting rows; the result, or NULL with *st set. */
static PGresult *query(PGconn *c, const char *sql, int nparams, const char *const *params,
                       const char *what, sy_store_status *st, sy_error *err)
{
	return sy_store_exec(c, sql, nparams, params, PGRES_TUPLES_OK, what, NULL, st, err);
}

/* The first statements of every group: nothing it runs can write, wait long or run long. */
static sy_store_status read_only(PGconn *c, const ov_ctx *x, sy_error *err)
{
	sy_store_status st = sy_store_command(c, "SET TRANSACTION READ ONLY", "read only", err);
	if (st != SY_STORE_OK)
		return st;
	char ms[24];
	snprintf(ms, sizeof ms, "%d", x->timeout_ms);
	const char *p[] = {ms};
	PGresult *r = query(c,
	                    "SELECT pg_catalog.set_config('statement_timeout', $1, true),"
	                    "       pg_catalog.set_config('lock_timeout', $1, true)",
	                    1, p, "set the status timeouts", &st, err);
	PQclear(r);
	return st;
}

/* SY_OV_SCHEMA ------------------------------------------------------------------------------ */

static sy_store_status read_schema(PGconn *c, void *arg, sy_error *err)
{
	ov_ctx *x = arg;
	sy_store_overview *o = x->out;
	sy_store_status st = read_only(c, x, err);
	if (st == SY_STORE_OK)
		st = sy_store_migration_state(c, &o->migration, &o->migrations_pending, err);
	if (st != SY_STORE_OK)
		return st;
	PGresult *r = query(c,
	                    "SELECT version, hash, published_at FROM synchro.schema_versions"
	                    " ORDER BY version DESC LIMIT 1",
	                    0, NULL, "read the current schema version", &st, err);
	if (!r)
		return st;
	if (PQntuples(r) == 1) {
		o->schema_found = true;
		o->schema_version = ll_col(r, 0, 0, 0);
		copy_col(o->schema_hash, sizeof o->schema_hash, r, 0, 1);
		time_col(o->schema_published_at, r, 0, 2);
	}
	PQclear(r);
	return SY_STORE_OK;
}

/* SY_OV_SERVER ------------------------------------------------------------------------------ */

/* On a standby pg_current_wal_flush_lsn() raises an error; CASE evaluates one branch only. */
static const char server_sql[] =
        "SELECT pg_catalog.current_setting('server_version'),"
        "       pg_catalog.current_setting('server_version_num'),"
        "       pg_catalog.pg_is_in_recovery(), pg_catalog.current_database(), now(),"
        "       CASE WHEN pg_catalog.pg_is_in_recovery() THEN pg_catalog.pg_last_wal_replay_lsn()"
        "            ELSE pg_catalog.pg_current_wal_flush_lsn() END";

/* Every walsync process keeps one SQL session (leader and standby alike); the leader's
 * walsender has the same application_name and is left out by its pid. application_name and
 * pid are visible to every role (backend_type is not). */
static const char sessions_sql[] =
        "SELECT count(*) FROM pg_catalog.pg_stat_activity a"
        " WHERE a.datname = pg_catalog.current_database() AND a.application_name = $1"
        "   AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_replication r WHERE r.pid = a.pid)";

static const char slot_sql[] =
        "SELECT s.active, coalesce(s.active_pid, 0), s.restart_lsn, s.confirmed_flush_lsn,"
        "       s.wal_status, s.safe_wal_size,"
        "       pg_catalog.pg_wal_lsn_diff($2::pg_lsn, s.restart_lsn)::bigint,"
        "       pg_catalog.pg_wal_lsn_diff($2::pg_lsn, s.confirmed_flush_lsn)::bigint"
        "  FROM pg_catalog.pg_replication_slots s WHERE s.slot_name = $1";

static sy_store_status read_server(PGconn *c, void *arg, sy_error *err)
{
	ov_ctx *x = arg;
	sy_store_overview *o = x->out;
	sy_store_status st = read_only(c, x, err);
	if (st != SY_STORE_OK)
		return st;
	PGresult *r = query(c, server_sql, 0, NULL, "read the server", &st, err);
	if (!r)
		return st;
	copy_col(o->server_version, sizeof o->server_version, r, 0, 0);
	o->server_version_num = (int)ll_col(r, 0, 1, 0);
	o->in_recovery = strcmp(PQgetvalue(r, 0, 2), "t") == 0;
	copy_col(o->database, sizeof o->database, r, 0, 3);
	time_col(o->now, r, 0, 4);
	copy_col(o->wal_lsn, sizeof o->wal_lsn, r, 0, 5);
	PQclear(r);

	/* walsync connects to the primary: a standby's own sessions say nothing of it. */
	if (!o->in_recovery) {
		const char *app[] = {SY_STORE_WALSYNC_APPNAME};
		r = query(c, sessions_sql, 1, app, "count the walsync sessions", &st, err);
		if (!r)
			return st;
		o->walsync_sessions = ll_col(r, 0, 0, -1);
		PQclear(r);
	}

	snprintf(o->slot, sizeof o->slot, "%s", x->slot ? x->slot : "");
	if (!o->slot[0])
		return SY_STORE_OK;
	const char *p[] = {o->slot, o->wal_lsn[0] ? o->wal_lsn : NULL};
	r = query(c, slot_sql, 2, p, "read the replication slot", &st, err);
	if (!r)
		return st;
	if (PQntuples(r) == 1) {
		o->slot_found = true;
		o->slot_active = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
		o->slot_pid = ll_col(r, 0, 1, 0);
		copy_col(o->restart_lsn, sizeof o->restart_lsn, r, 0, 2);
		copy_col(o->confirmed_flush_lsn, sizeof o->confirmed_flush_lsn, r, 0, 3);
		copy_col(o->wal_status, sizeof o->wal_status, r, 0, 4);
		o->safe_wal_size = ll_col(r, 0, 5, -1);
		o->retained_bytes = ll_col(r, 0, 6, -1);
		o->slot_lag_bytes = ll_col(r, 0, 7, -1);
	}
	PQclear(r);
	return SY_STORE_OK;
}

/* SY_OV_LEASE ------------------------------------------------------------------------------- */

static const char position_sql[] =
        "SELECT p.materialized_lsn, p.updated_at,"
        "       extract(epoch FROM now() - p.updated_at)::float8,"
        "       pg_catalog.pg_wal_lsn_diff($1::pg_lsn, p.materialized_lsn)::bigint"
        "  FROM synchro.stream_position p";

static sy_store_status read_lease(PGconn *c, void *arg, sy_error *err)
{
	ov_ctx *x = arg;
	sy_store_overview *o = x->out;
	sy_store_status st = read_only(c, x, err);
	if (st == SY_STORE_OK)
		st = sy_store_lease_status_get(c, x->slot, &o->lease, err);
	if (st != SY_STORE_OK)
		return st;
	/* synchro.stream_position is migration 14's: an older database has no position. */
	PGresult *r =
	        query(c, "SELECT pg_catalog.to_regclass('synchro.stream_position') IS NOT NULL", 0,
	              NULL, "read the stream position", &st, err);
	if (!r)
		return st;
	bool present = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	if (present) {
		const char *p[] = {o->wal_lsn[0] ? o->wal_lsn : NULL};
		r = query(c, position_sql, 1, p, "read the stream position", &st, err);
		if (!r)
			return st;
		if (PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)) {
			o->position_known = true;
			copy_col(o->materialized_lsn, sizeof o->materialized_lsn, r, 0, 0);
			time_col(o->position_at, r, 0, 1);
			if (!PQgetisnull(r, 0, 2))
				o->position_age_s = strtod(PQgetvalue(r, 0, 2), NULL);
			o->materialized_lag_bytes = ll_col(r, 0, 3, -1);
		}
		PQclear(r);
	}
	return sy_store_last_break_get(c, &o->last_break, err);
}

/* SY_OV_CLIENTS ----------------------------------------------------------------------------- */

static sy_store_status read_clients(PGconn *c, void *arg, sy_error *err)
{
	ov_ctx *x = arg;
	sy_store_overview *o = x->out;
	sy_store_status st = read_only(c, x, err);
	if (st != SY_STORE_OK)
		return st;
	PGresult *r =
	        query(c,
	              "SELECT count(*), count(*) FILTER (WHERE last_seen_at > now() - interval "
	              "'1 day'), (SELECT count(*) FROM synchro.retirements)"
	              "  FROM synchro.clients",
	              0, NULL, "count the clients", &st, err);
	if (!r)
		return st;
	o->clients = ll_col(r, 0, 0, 0);
	o->seen_1d = ll_col(r, 0, 1, 0);
	o->retired = ll_col(r, 0, 2, 0);
	PQclear(r);
	return SY_STORE_OK;
}

/* SY_OV_SIZES ------------------------------------------------------------------------------- */

/* The planner's own extrapolation: tuples per page at the last analyze times today's pages. */
static const char sizes_sql[] =
        "SELECT c.relname, pg_catalog.pg_total_relation_size(c.oid),"
        "       pg_catalog.pg_relation_size(c.oid),"
        "       CASE WHEN c.reltuples < 0 THEN NULL"
        "            WHEN c.relpages = 0 THEN c.reltuples"
        "            ELSE c.reltuples / c.relpages * (pg_catalog.pg_relation_size(c.oid)"
        "                 / pg_catalog.current_setting('block_size')::float8) END::bigint"
        "  FROM pg_catalog.pg_class c"
        "  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = 'synchro' AND c.relname = ANY ($1::text[])";

static const struct {
	const char *name;
	const char *count_sql;
	size_t offset;
} tables[] = {
        {"batches", "SELECT count(*) FROM synchro.batches", offsetof(sy_store_overview, batches)},
        {"mutations", "SELECT count(*) FROM synchro.mutations",
         offsetof(sy_store_overview, mutations)},
        {"changelog", "SELECT count(*) FROM synchro.changelog",
         offsetof(sy_store_overview, changelog)},
};
#define NTABLES (sizeof tables / sizeof tables[0])

static sy_store_status count_rows(PGconn *c, size_t i, sy_store_table_size *t, sy_error *err)
{
	sy_store_status st;
	PGresult *r = query(c, tables[i].count_sql, 0, NULL, "count the rows", &st, err);
	if (!r)
		return st;
	t->rows = ll_col(r, 0, 0, 0);
	t->estimated = false;
	PQclear(r);
	return SY_STORE_OK;
}

/* The first or the last changelog entry by the primary key (one index probe). */
static sy_store_status changelog_end(PGconn *c, bool last, char lsn[SY_STORE_LSN_MAX + 1],
                                     char at[SY_STORE_TIME_LEN + 1], sy_error *err)
{
	sy_store_status st;
	PGresult *r = query(c,
	                    last ? "SELECT commit_lsn, committed_at FROM synchro.changelog"
	                           " ORDER BY commit_lsn DESC, ordinal DESC LIMIT 1"
	                         : "SELECT commit_lsn, committed_at FROM synchro.changelog"
	                           " ORDER BY commit_lsn, ordinal LIMIT 1",
	                    0, NULL, "read the changelog's ends", &st, err);
	if (!r)
		return st;
	if (PQntuples(r) == 1) {
		copy_col(lsn, SY_STORE_LSN_MAX + 1, r, 0, 0);
		time_col(at, r, 0, 1);
	}
	PQclear(r);
	return SY_STORE_OK;
}

static sy_store_status read_sizes(PGconn *c, void *arg, sy_error *err)
{
	ov_ctx *x = arg;
	sy_store_overview *o = x->out;
	sy_store_status st = read_only(c, x, err);
	if (st != SY_STORE_OK)
		return st;
	const char *names[] = {"{batches,mutations,changelog}"};
	PGresult *r = query(c, sizes_sql, 1, names, "read the table sizes", &st, err);
	if (!r)
		return st;
	bool exact[NTABLES] = {false};
	for (int row = 0; row < PQntuples(r); row++)
		for (size_t i = 0; i < NTABLES; i++) {
			if (strcmp(PQgetvalue(r, row, 0), tables[i].name) != 0)
				continue;
			sy_store_table_size *t =
			        (sy_store_table_size *)((char *)o + tables[i].offset);
			t->bytes = ll_col(r, row, 1, -1);
			t->rows = ll_col(r, row, 3, -1);
			t->estimated = true;
			exact[i] = ll_col(r, row, 2, 0) <= x->exact_max_bytes;
		}
	PQclear(r);
	for (size_t i = 0; i < NTABLES && st == SY_STORE_OK; i++)
		if (exact[i])
			st = count_rows(c, i, (sy_store_table_size *)((char *)o + tables[i].offset),
			                err);
	if (st != SY_STORE_OK)
		return st;
	r = query(
	        c,
	        "SELECT commit_lsn || '.' || ordinal, compacted_at FROM synchro.changelog_horizon",
	        0, NULL, "read the changelog horizon", &st, err);
	if (!r)
		return st;
	if (PQntuples(r) == 1) {
		copy_col(o->horizon, sizeof o->horizon, r, 0, 0);
		time_col(o->compacted_at, r, 0, 1);
	}
	PQclear(r);
	st = changelog_end(c, false, o->oldest_lsn, o->oldest_at, err);
	if (st == SY_STORE_OK)
		st = changelog_end(c, true, o->newest_lsn, o->newest_at, err);
	return st;
}

/* -------------------------------------------------------------------------------------------- */

sy_store_status sy_store_overview_get(PGconn *c, const char *slot, long long exact_max_bytes,
                                      int timeout_ms, sy_store_overview *out, sy_error *err)
{
	static const struct {
		unsigned group;
		sy_store_txn_fn fn;
	} groups[] = {{SY_OV_SCHEMA, read_schema},
	              {SY_OV_SERVER, read_server},
	              {SY_OV_LEASE, read_lease},
	              {SY_OV_CLIENTS, read_clients},
	              {SY_OV_SIZES, read_sizes}};
	memset(out, 0, sizeof *out);
	out->walsync_sessions = -1;
	out->retained_bytes = out->safe_wal_size = out->slot_lag_bytes = -1;
	out->materialized_lag_bytes = -1;
	out->position_age_s = -1;
	out->batches.rows = out->mutations.rows = out->changelog.rows = -1;
	out->batches.bytes = out->mutations.bytes = out->changelog.bytes = -1;
	out->clients = out->retired = out->seen_1d = -1;
	out->migration_latest =
	        sy_sql_migration_count ? sy_sql_migrations[sy_sql_migration_count - 1].version : 0;
	ov_ctx x = {out, slot, exact_max_bytes, timeout_ms};
	for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
		sy_error gerr = {0};
		sy_store_status st = sy_store_transaction(c, groups[i].fn, &x, &gerr);
		if (st == SY_STORE_OK)
			continue;
		if (st == SY_STORE_CONNECTION || st == SY_STORE_NOMEM ||
		    PQstatus(c) != CONNECTION_OK) {
			*err = gerr;
			return st == SY_STORE_NOMEM ? st : SY_STORE_CONNECTION;
		}
		if (!out->unread)
			snprintf(out->unread_why, sizeof out->unread_why, "%s", gerr.message);
		out->unread |= groups[i].group;
	}
	return SY_STORE_OK;
}
