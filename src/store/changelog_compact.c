/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * changelog_compact.c: synchroctl changelog compact. It raises the compaction horizon and
 * deletes what lies at or below it.
 *
 * Layer: middle of src/store (doc/hacking.md).
 * Rules: doc/contract.md#cursors (a cursor below the horizon expires).
 * Notes: A cursor below the horizon then answers 409 cursor_expired. Rebuild sessions bound
 * below it go with it.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "store/conn.h"
#include "store/pull.h"
#include "store/pull_internal.h"

sy_store_status sy_store_changelog_compact(PGconn *c, long long before_s, sy_store_compacted *out,
                                           sy_error *err)
{
	/*
	 * The horizon row lock orders concurrent compactions. The cut is the last position
	 * whose entry committed before the cutoff; every entry at or below the (never lowered)
	 * horizon goes, with the rebuild sessions whose cursor would have expired.
	 */
	static const char sql[] =
	        "WITH cut AS ("
	        "  SELECT l.commit_lsn, l.ordinal FROM synchro.changelog l"
	        "   WHERE l.committed_at < now() - $1::bigint * interval '1 second'"
	        "   ORDER BY l.commit_lsn DESC, l.ordinal DESC LIMIT 1),"
	        " old AS (SELECT h.commit_lsn, h.ordinal FROM synchro.changelog_horizon h FOR "
	        "UPDATE),"
	        " hz AS ("
	        "  SELECT CASE WHEN cut.commit_lsn IS NOT NULL"
	        "               AND (cut.commit_lsn, cut.ordinal) > (old.commit_lsn, old.ordinal)"
	        "              THEN cut.commit_lsn ELSE old.commit_lsn END AS commit_lsn,"
	        "         CASE WHEN cut.commit_lsn IS NOT NULL"
	        "               AND (cut.commit_lsn, cut.ordinal) > (old.commit_lsn, old.ordinal)"
	        "              THEN cut.ordinal ELSE old.ordinal END AS ordinal,"
	        "         cut.commit_lsn IS NOT NULL"
	        "           AND (cut.commit_lsn, cut.ordinal) > (old.commit_lsn, old.ordinal) AS "
	        "moved"
	        "    FROM old LEFT JOIN cut ON true),"
	        " up AS ("
	        "  UPDATE synchro.changelog_horizon h SET commit_lsn = hz.commit_lsn,"
	        "         ordinal = hz.ordinal, compacted_at = now()"
	        "    FROM hz WHERE hz.moved RETURNING 1),"
	        " del AS ("
	        "  DELETE FROM synchro.changelog l USING hz"
	        "   WHERE (l.commit_lsn, l.ordinal) <= (hz.commit_lsn, hz.ordinal) RETURNING 1),"
	        " ses AS ("
	        "  DELETE FROM synchro.rebuild_sessions s USING hz"
	        "   WHERE (s.stream_lsn, s.stream_ordinal) < (hz.commit_lsn, hz.ordinal) RETURNING "
	        "1)"
	        " SELECT (SELECT count(*) FROM del), (SELECT count(*) FROM ses), hz.moved,"
	        "        hz.commit_lsn, hz.ordinal, now() - $1::bigint * interval '1 second',"
	        "        (SELECT count(*) FROM up)"
	        "   FROM hz";
	memset(out, 0, sizeof *out);
	if (before_s < 0)
		return sy_store_fail(err, SY_STORE_INVALID, "changelog compact: negative duration");
	char secs[24];
	snprintf(secs, sizeof secs, "%lld", before_s);
	const char *pv[] = {secs};
	sy_store_status st;
	PGresult *r =
	        sy_store_exec(c, sql, 1, pv, PGRES_TUPLES_OK, "changelog compact", NULL, &st, err);
	if (r == NULL)
		return st;
	bool ok = PQntuples(r) == 1 && sy_store_get_ll(r, 0, 0, &out->removed) &&
	          sy_store_get_ll(r, 0, 1, &out->sessions) &&
	          sy_store_get_pos(r, 0, 3, &out->horizon) &&
	          sy_store_format_time(PQgetvalue(r, 0, 5), out->cutoff);
	if (ok)
		out->moved = strcmp(PQgetvalue(r, 0, 2), "t") == 0;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return sy_store_fail(err, SY_STORE_FAILED,
		                     "changelog compact: synchro.changelog_horizon has no row");
	}
	PQclear(r);
	if (!ok)
		return sy_store_fail(err, SY_STORE_FAILED, "changelog compact: unexpected result");
	return SY_STORE_OK;
}
