/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lease.c: the writer lease of synchro-walsync. Each claim, heartbeat and release is one
 * statement.
 *
 * Layer: middle of src/store (doc/hacking.md).
 * Notes: Each statement is a compare-and-swap on writer_epoch and fencing_token.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/conn.h"
#include "store/lease.h"
#include "synchro/octets.h"

void sy_store_lsn_format(unsigned long long lsn, char buf[SY_STORE_LSN_MAX + 1])
{
	snprintf(buf, SY_STORE_LSN_MAX + 1, "%X/%X", (unsigned)(lsn >> 32),
	         (unsigned)(lsn & 0xffffffffu));
}

static bool hex_part(const char *s, size_t n, unsigned long long *out)
{
	if (n == 0 || n > 8)
		return false;
	unsigned long long v = 0;
	for (size_t i = 0; i < n; i++) {
		int d = sy_hex_digit(s[i]);
		if (d < 0)
			return false;
		v = v * 16 + (unsigned)d;
	}
	*out = v;
	return true;
}

bool sy_store_lsn_parse(const char *s, unsigned long long *out)
{
	const char *slash = strchr(s, '/');
	unsigned long long hi, lo;
	if (!slash || !hex_part(s, (size_t)(slash - s), &hi) ||
	    !hex_part(slash + 1, strlen(slash + 1), &lo))
		return false;
	*out = hi << 32 | lo;
	return true;
}

static void copy_text(char *dst, size_t size, const PGresult *r, int col)
{
	snprintf(dst, size, "%s", PQgetisnull(r, 0, col) ? "" : PQgetvalue(r, 0, col));
}

static const char claim_sql[] =
        "INSERT INTO synchro.writer_lease AS l"
        "   (role, writer_id, writer_epoch, fencing_token, lease_until, heartbeat_at)"
        " VALUES ($1, $2, 1, pg_catalog.gen_random_uuid(),"
        "         now() + $3::integer * interval '1 second', now())"
        " ON CONFLICT (role) DO UPDATE SET"
        "   writer_id = EXCLUDED.writer_id, writer_epoch = l.writer_epoch + 1,"
        "   fencing_token = EXCLUDED.fencing_token, lease_until = EXCLUDED.lease_until,"
        "   heartbeat_at = EXCLUDED.heartbeat_at, slot = NULL, lag_ms = NULL"
        " WHERE l.lease_until <= now()"
        "    OR l.heartbeat_at < now() - $4::integer * interval '1 second'"
        " RETURNING l.writer_epoch, l.fencing_token";

static const char holder_sql[] = "SELECT writer_id FROM synchro.writer_lease WHERE role = $1";

sy_store_status sy_store_lease_claim(PGconn *c, const char *writer_id, int lease_s, int stale_s,
                                     sy_store_lease *out, bool *acquired,
                                     char prev_holder[SY_STORE_WRITER_ID_MAX + 1], sy_error *err)
{
	char lease[16], stale[16];
	snprintf(lease, sizeof lease, "%d", lease_s);
	snprintf(stale, sizeof stale, "%d", stale_s);
	*acquired = false;
	if (prev_holder)
		prev_holder[0] = '\0';
	if (strlen(writer_id) > SY_STORE_WRITER_ID_MAX)
		return sy_store_fail(err, SY_STORE_INVALID, "writer_id longer than %d bytes",
		                     SY_STORE_WRITER_ID_MAX);
	sy_store_status st;
	const char *role[] = {SY_STORE_LEASE_ROLE};
	if (prev_holder) {
		/* Read first and only for the log line: the claim itself decides. */
		PGresult *h = sy_store_exec(c, holder_sql, 1, role, PGRES_TUPLES_OK,
		                            "read the writer lease", NULL, &st, err);
		if (!h)
			return st;
		if (PQntuples(h) == 1)
			copy_text(prev_holder, SY_STORE_WRITER_ID_MAX + 1, h, 0);
		PQclear(h);
	}
	const char *p[] = {SY_STORE_LEASE_ROLE, writer_id, lease, stale};
	PGresult *r = sy_store_exec(c, claim_sql, 4, p, PGRES_TUPLES_OK, "claim the writer lease",
	                            NULL, &st, err);
	if (!r)
		return st;
	if (PQntuples(r) == 1) {
		memset(out, 0, sizeof *out);
		snprintf(out->writer_id, sizeof out->writer_id, "%s", writer_id);
		out->epoch = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
		copy_text(out->token, sizeof out->token, r, 1);
		*acquired = true;
	}
	PQclear(r);
	return SY_STORE_OK;
}

static const char renew_sql[] =
        "UPDATE synchro.writer_lease SET"
        "   lease_until = now() + $5::integer * interval '1 second', heartbeat_at = now(),"
        "   slot = coalesce($6, slot), materialized_lsn = coalesce($7::pg_lsn, materialized_lsn),"
        "   lag_ms = coalesce($8::bigint, lag_ms)"
        " WHERE role = $1 AND writer_id = $2 AND writer_epoch = $3::bigint"
        "   AND fencing_token = $4::uuid AND lease_until > now()";

sy_store_status sy_store_lease_renew(PGconn *c, const sy_store_lease *l, int lease_s,
                                     const sy_store_lease_progress *p, sy_error *err)
{
	char epoch[24], lease[16], lsn[SY_STORE_LSN_MAX + 1], lag[24];
	snprintf(epoch, sizeof epoch, "%lld", l->epoch);
	snprintf(lease, sizeof lease, "%d", lease_s);
	const char *params[8] = {
	        SY_STORE_LEASE_ROLE, l->writer_id, epoch, l->token, lease, NULL, NULL, NULL};
	if (p) {
		params[5] = p->slot;
		if (p->materialized_lsn) {
			sy_store_lsn_format(p->materialized_lsn, lsn);
			params[6] = lsn;
		}
		if (p->lag_ms >= 0) {
			snprintf(lag, sizeof lag, "%lld", p->lag_ms);
			params[7] = lag;
		}
	}
	sy_store_status st;
	PGresult *r = sy_store_exec(c, renew_sql, 8, params, PGRES_COMMAND_OK,
	                            "renew the writer lease", NULL, &st, err);
	if (!r)
		return st;
	bool renewed = strcmp(PQcmdTuples(r), "1") == 0;
	PQclear(r);
	if (!renewed)
		return sy_store_fail(err, SY_STORE_CONFLICT,
		                     "writer lease epoch %lld is no longer ours (taken over or "
		                     "expired)",
		                     l->epoch);
	return SY_STORE_OK;
}

static const char release_sql[] =
        "UPDATE synchro.writer_lease SET lease_until = now()"
        " WHERE role = $1 AND writer_id = $2 AND writer_epoch = $3::bigint"
        "   AND fencing_token = $4::uuid AND lease_until > now()";

sy_store_status sy_store_lease_release(PGconn *c, const sy_store_lease *l, sy_error *err)
{
	char epoch[24];
	snprintf(epoch, sizeof epoch, "%lld", l->epoch);
	const char *p[] = {SY_STORE_LEASE_ROLE, l->writer_id, epoch, l->token};
	sy_store_status st;
	PGresult *r = sy_store_exec(c, release_sql, 4, p, PGRES_COMMAND_OK,
	                            "release the writer lease", NULL, &st, err);
	PQclear(r);
	return st;
}

static const char status_sql[] =
        "SELECT writer_id, writer_epoch, fencing_token, lease_until,"
        "       extract(epoch FROM lease_until - now())::float8, heartbeat_at,"
        "       extract(epoch FROM now() - heartbeat_at)::float8, slot, materialized_lsn, lag_ms"
        "  FROM synchro.writer_lease WHERE role = $1";

static const char slot_sql[] = "SELECT active, coalesce(active_pid, 0), confirmed_flush_lsn,"
                               "       pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_lsn(),"
                               "                                  confirmed_flush_lsn)::bigint"
                               "  FROM pg_catalog.pg_replication_slots WHERE slot_name = $1";

sy_store_status sy_store_lease_status_get(PGconn *c, const char *slot, sy_store_lease_status *out,
                                          sy_error *err)
{
	memset(out, 0, sizeof *out);
	out->lag_ms = -1;
	out->lag_bytes = -1;
	out->heartbeat_age_s = -1;
	sy_store_status st;
	const char *role[] = {SY_STORE_LEASE_ROLE};
	PGresult *r = sy_store_exec(c, status_sql, 1, role, PGRES_TUPLES_OK,
	                            "read the writer lease", NULL, &st, err);
	if (!r)
		return st;
	if (PQntuples(r) == 1) {
		out->found = true;
		copy_text(out->writer_id, sizeof out->writer_id, r, 0);
		out->epoch = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
		copy_text(out->token, sizeof out->token, r, 2);
		(void)sy_store_format_time(PQgetvalue(r, 0, 3), out->lease_until);
		out->expires_in_s = strtod(PQgetvalue(r, 0, 4), NULL);
		if (!PQgetisnull(r, 0, 5)) {
			(void)sy_store_format_time(PQgetvalue(r, 0, 5), out->heartbeat_at);
			out->heartbeat_age_s = strtod(PQgetvalue(r, 0, 6), NULL);
		}
		copy_text(out->slot, sizeof out->slot, r, 7);
		copy_text(out->materialized_lsn, sizeof out->materialized_lsn, r, 8);
		if (!PQgetisnull(r, 0, 9))
			out->lag_ms = strtoll(PQgetvalue(r, 0, 9), NULL, 10);
	}
	PQclear(r);
	const char *name = slot && slot[0] ? slot : out->slot;
	if (!name[0])
		return SY_STORE_OK;
	const char *p[] = {name};
	r = sy_store_exec(c, slot_sql, 1, p, PGRES_TUPLES_OK, "read the replication slot", NULL,
	                  &st, err);
	if (!r)
		return st;
	if (PQntuples(r) == 1) {
		out->slot_found = true;
		if (name != out->slot)
			snprintf(out->slot, sizeof out->slot, "%s", name);
		out->slot_active = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
		out->slot_pid = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
		copy_text(out->confirmed_flush_lsn, sizeof out->confirmed_flush_lsn, r, 2);
		if (!PQgetisnull(r, 0, 3))
			out->lag_bytes = strtoll(PQgetvalue(r, 0, 3), NULL, 10);
	} else if (name != out->slot) {
		snprintf(out->slot, sizeof out->slot, "%s", name);
	}
	PQclear(r);
	return SY_STORE_OK;
}
