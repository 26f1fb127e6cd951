/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stream_continuity.c: slot continuity: synchro.stream_position, synchro.stream_break()
 * and synchro.stream_breaks (migration 14).
 *
 * Layer: middle of src/store (doc/hacking.md).
 * Notes: The writer lease guards every write, in the write's own statement.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/conn.h"
#include "store/schema_scopes.h"
#include "store/stream_continuity.h"

static void copy_col(char *dst, size_t size, const PGresult *r, int col)
{
	snprintf(dst, size, "%s", PQgetisnull(r, 0, col) ? "" : PQgetvalue(r, 0, col));
}

sy_store_status sy_store_stream_position_get(PGconn *c, sy_store_stream_position *out,
                                             sy_error *err)
{
	memset(out, 0, sizeof *out);
	sy_store_status st;
	PGresult *r =
	        sy_store_exec(c, "SELECT materialized_lsn, slot FROM synchro.stream_position", 0,
	                      NULL, PGRES_TUPLES_OK, "read the stream position", NULL, &st, err);
	if (!r)
		return st;
	if (PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)) {
		unsigned long long v;
		if (!sy_store_lsn_parse(PQgetvalue(r, 0, 0), &v)) {
			PQclear(r);
			return sy_store_fail(err, SY_STORE_FAILED, "unexpected stream position");
		}
		out->known = true;
		out->lsn = v;
		copy_col(out->slot, sizeof out->slot, r, 1);
	}
	PQclear(r);
	return SY_STORE_OK;
}

static const char record_sql[] =
        "UPDATE synchro.stream_position SET slot = $4,"
        "   materialized_lsn = GREATEST(coalesce(materialized_lsn, '0/0'), $5::pg_lsn),"
        "   updated_at = now()"
        " WHERE EXISTS (SELECT 1 FROM synchro.writer_lease"
        "   WHERE role = $1 AND writer_epoch = $2::bigint AND fencing_token = $3::uuid"
        "     AND lease_until > now())";

sy_store_status sy_store_stream_position_record(PGconn *c, const sy_store_lease *l,
                                                const char *slot, uint64_t lsn, sy_error *err)
{
	char epoch[24], text[SY_STORE_LSN_MAX + 1];
	snprintf(epoch, sizeof epoch, "%lld", l->epoch);
	sy_store_lsn_format(lsn, text);
	const char *p[] = {SY_STORE_LEASE_ROLE, epoch, l->token, slot, text};
	sy_store_status st;
	PGresult *r = sy_store_exec(c, record_sql, 5, p, PGRES_COMMAND_OK,
	                            "record the stream position", NULL, &st, err);
	if (!r)
		return st;
	bool done = strcmp(PQcmdTuples(r), "1") == 0;
	PQclear(r);
	if (!done)
		return sy_store_fail(
		        err, SY_STORE_CONFLICT,
		        "the writer lease refused the stream position: epoch %lld is no "
		        "longer the holder's",
		        l->epoch);
	return SY_STORE_OK;
}

sy_store_status sy_store_stream_has_history(PGconn *c, bool *out, sy_error *err)
{
	*out = true;
	sy_store_status st;
	PGresult *r =
	        sy_store_exec(c,
	                      "SELECT EXISTS (SELECT 1 FROM synchro.changelog)"
	                      "    OR EXISTS (SELECT 1 FROM synchro.changelog_horizon"
	                      "                WHERE (commit_lsn, ordinal) > ('0/0'::pg_lsn, 0))"
	                      "    OR (EXISTS (SELECT 1 FROM synchro.clients)"
	                      "        AND EXISTS (SELECT 1 FROM synchro.row_fences))",
	                      0, NULL, PGRES_TUPLES_OK, "read the stream history", NULL, &st, err);
	if (!r)
		return st;
	*out = strcmp(PQgetvalue(r, 0, 0), "f") != 0;
	PQclear(r);
	return SY_STORE_OK;
}

/* The published manifest's scopes and links (migration 22), seeded again from the live
 * relations: the gap may hold membership changes walsync never decoded. */
static sy_store_status reseed_scopes(PGconn *c, sy_error *err)
{
	sy_store_status st;
	PGresult *r = sy_store_exec(c,
	                            "SELECT manifest FROM synchro.schema_versions"
	                            " WHERE to_regclass('synchro.scope_members') IS NOT NULL"
	                            " ORDER BY version DESC LIMIT 1",
	                            0, NULL, PGRES_TUPLES_OK, "read the published manifest", NULL,
	                            &st, err);
	if (!r)
		return st;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return SY_STORE_OK;
	}
	sy_error perr = {0};
	sy_manifest *m = sy_manifest_parse(PQgetvalue(r, 0, 0), (size_t)PQgetlength(r, 0, 0), &perr);
	PQclear(r);
	if (!m)
		return sy_store_fail(err, SY_STORE_FAILED, "the published manifest: %s", perr.message);
	st = sy_store_scopes_reseed(c, m, err);
	sy_manifest_free(m);
	return st;
}

sy_store_status sy_store_stream_break(PGconn *c, const sy_store_lease *l, const char *slot,
                                      const char *reason, uint64_t slot_lsn,
                                      sy_store_break_result *out, sy_error *err)
{
	memset(out, 0, sizeof *out);
	char epoch[24], text[SY_STORE_LSN_MAX + 1], sqlstate[6] = "";
	snprintf(epoch, sizeof epoch, "%lld", l->epoch);
	sy_store_lsn_format(slot_lsn, text);
	const char *p[] = {epoch, l->token, slot, reason, text};
	sy_store_status st = sy_store_command(c, "BEGIN", "resolve the stream break", err);
	if (st != SY_STORE_OK)
		return st;
	PGresult *r = sy_store_exec(c,
	                            "SELECT horizon_lsn, horizon_ordinal, clients FROM"
	                            " synchro.stream_break($1::bigint, $2::uuid, $3, $4,"
	                            " $5::pg_lsn)",
	                            5, p, PGRES_TUPLES_OK, "resolve the stream break", sqlstate,
	                            &st, err);
	if (!r) {
		sy_store_rollback(c);
		if (strcmp(sqlstate, "SY020") == 0)
			return SY_STORE_CONFLICT;
		if (strcmp(sqlstate, "SY021") == 0)
			return SY_STORE_INVALID;
		return st;
	}
	unsigned long long v = 0;
	bool ok = PQntuples(r) == 1 && sy_store_lsn_parse(PQgetvalue(r, 0, 0), &v);
	if (ok) {
		out->horizon_lsn = v;
		out->horizon_ordinal = atoi(PQgetvalue(r, 0, 1));
		out->clients = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
	}
	PQclear(r);
	if (!ok)
		st = sy_store_fail(err, SY_STORE_FAILED,
		                   "resolve the stream break: unexpected "
		                   "result");
	/* In the break's transaction: its lease row stays locked until the commit. */
	if (st == SY_STORE_OK)
		st = reseed_scopes(c, err);
	if (st == SY_STORE_OK)
		st = sy_store_command(c, "COMMIT", "resolve the stream break", err);
	if (st != SY_STORE_OK) {
		sy_store_rollback(c);
		memset(out, 0, sizeof *out);
	}
	return st;
}

static sy_store_status verified_from(PGconn *c, const char *sql, bool *verify, uint64_t *from,
                                     sy_error *err)
{
	*verify = false;
	*from = 0;
	sy_store_status st;
	PGresult *r = sy_store_exec(c, sql, 0, NULL, PGRES_TUPLES_OK, "read the stream position",
	                            NULL, &st, err);
	if (!r)
		return st;
	unsigned long long v = 0;
	if (PQntuples(r) == 1 && sy_store_lsn_parse(PQgetvalue(r, 0, 0), &v)) {
		*verify = true;
		*from = v;
	}
	PQclear(r);
	return SY_STORE_OK;
}

sy_store_status sy_store_messages_verified_from(PGconn *c, bool *verify, uint64_t *from,
                                                sy_error *err)
{
	return verified_from(c,
	                     "SELECT messages_verified_from FROM synchro.stream_position"
	                     " WHERE messages_verified_from IS NOT NULL",
	                     verify, from, err);
}

sy_store_status sy_store_scope_messages_verified_from(PGconn *c, bool *verify, uint64_t *from,
                                                      sy_error *err)
{
	return verified_from(c,
	                     "SELECT scope_messages_verified_from FROM synchro.stream_position"
	                     " WHERE scope_messages_verified_from IS NOT NULL",
	                     verify, from, err);
}

sy_store_status sy_store_last_break_get(PGconn *c, sy_store_last_break *out, sy_error *err)
{
	memset(out, 0, sizeof *out);
	sy_store_status st;
	PGresult *r = sy_store_exec(
	        c, "SELECT pg_catalog.to_regclass('synchro.stream_breaks') IS NOT NULL", 0, NULL,
	        PGRES_TUPLES_OK, "read the stream breaks", NULL, &st, err);
	if (!r)
		return st;
	bool present = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	if (!present)
		return SY_STORE_OK;
	r = sy_store_exec(c,
	                  "SELECT b.detected_at, b.reason, b.slot_lsn,"
	                  "       b.horizon_lsn || '.' || b.horizon_ordinal, b.clients,"
	                  "       (SELECT count(*) FROM synchro.stream_breaks)"
	                  "  FROM synchro.stream_breaks b ORDER BY b.break_id DESC LIMIT 1",
	                  0, NULL, PGRES_TUPLES_OK, "read the stream breaks", NULL, &st, err);
	if (!r)
		return st;
	if (PQntuples(r) == 1) {
		out->found = true;
		(void)sy_store_format_time(PQgetvalue(r, 0, 0), out->detected_at);
		copy_col(out->reason, sizeof out->reason, r, 1);
		copy_col(out->slot_lsn, sizeof out->slot_lsn, r, 2);
		copy_col(out->horizon, sizeof out->horizon, r, 3);
		out->clients = strtoll(PQgetvalue(r, 0, 4), NULL, 10);
		out->count = strtoll(PQgetvalue(r, 0, 5), NULL, 10);
	}
	PQclear(r);
	return SY_STORE_OK;
}
