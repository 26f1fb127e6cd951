/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * schema_pull_effect.c: a publish that changes what pull delivers expires every cursor.
 * This file compares two manifests as pull sees them, and moves the horizon.
 *
 * Layer: middle of src/store (doc/hacking.md).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "store/conn.h"
#include "store/schema_pull_effect.h"
#include "synchro/alloc.h"

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool same_field(const sy_field *a, const sy_field *b)
{
	return strcmp(a->field_id, b->field_id) == 0 && strcmp(a->column, b->column) == 0 &&
	       a->type == b->type;
}

/* The same membership path, as written (the scope names walsync mirrors follow it). */
static bool same_members(const sy_members *a, const sy_members *b)
{
	if (!a || !b)
		return a == b;
	if (a->hop_count != b->hop_count || strcmp(a->relation, b->relation) != 0 ||
	    strcmp(a->match, b->match) != 0 || strcmp(a->user, b->user) != 0)
		return false;
	for (size_t i = 0; i < a->hop_count; i++)
		if (strcmp(a->hops[i].column, b->hops[i].column) != 0 ||
		    strcmp(a->hops[i].relation, b->hops[i].relation) != 0 ||
		    strcmp(a->hops[i].key, b->hops[i].key) != 0)
			return false;
	return true;
}

/* The first difference of what t delivers between a and b, or NULL. */
static const char *table_change(const sy_table *a, const sy_table *b)
{
	if (strcmp(a->relation, b->relation) != 0)
		return "its relation";
	if (!same_field(&a->pk, &b->pk))
		return "its key";
	if (a->field_count != b->field_count)
		return "its fields";
	for (size_t i = 0; i < a->field_count; i++) {
		const sy_field *f =
		        sy_table_field(b, a->fields[i].field_id, strlen(a->fields[i].field_id));
		if (!f || !same_field(&a->fields[i], f))
			return "its fields";
	}
	if (a->delete_mode != b->delete_mode || !same_str(a->delete_column, b->delete_column))
		return "its delete mode";
	if (a->read != b->read || !same_str(a->owner_field, b->owner_field))
		return "its read scope";
	if (a->read == SY_POLICY_MEMBERS && !same_members(a->members, b->members))
		return "its members";
	return NULL;
}

bool sy_store_schema_pull_change(const sy_manifest *prev, const sy_manifest *m,
                                 bool (*ever_synced)(void *arg, const char *table_id), void *arg,
                                 char *why, size_t size)
{
	why[0] = '\0';
	for (size_t i = 0; i < m->table_count; i++) {
		const sy_table *t = &m->tables[i];
		const sy_table *old =
		        prev ? sy_manifest_table(prev, t->table_id, strlen(t->table_id)) : NULL;
		const char *what = old ? table_change(old, t) : NULL;
		if (!old && ever_synced(arg, t->table_id))
			what = "its return after a version without it";
		if (what) {
			snprintf(why, size, "table \"%s\" changed %s", t->table_id, what);
			return true;
		}
	}
	return false;
}

sy_store_status sy_store_expire_cursors(PGconn *c, char horizon[40], sy_error *err)
{
	/* As synchro.stream_break (migration 14) does it, without the epochs: no write is lost
	 * here, every one still reaches the changelog. */
	static const char sql[] =
	        "WITH old AS (SELECT h.commit_lsn, h.ordinal FROM synchro.changelog_horizon h"
	        "              FOR UPDATE),"
	        " tail AS (SELECT l.commit_lsn, l.ordinal FROM synchro.changelog l"
	        "           ORDER BY l.commit_lsn DESC, l.ordinal DESC LIMIT 1),"
	        " hz AS (SELECT CASE WHEN t.commit_lsn IS NOT NULL AND (t.commit_lsn, t.ordinal) >"
	        "                        (o.commit_lsn, o.ordinal) THEN t.commit_lsn"
	        "                    ELSE o.commit_lsn END AS commit_lsn,"
	        "               CASE WHEN t.commit_lsn IS NOT NULL AND (t.commit_lsn, t.ordinal) >"
	        "                        (o.commit_lsn, o.ordinal) THEN t.ordinal"
	        "                    ELSE o.ordinal END + 1 AS ordinal"
	        "          FROM old o LEFT JOIN tail t ON true),"
	        " up AS (UPDATE synchro.changelog_horizon h SET commit_lsn = hz.commit_lsn,"
	        "          ordinal = hz.ordinal, compacted_at = now() FROM hz RETURNING 1),"
	        " ses AS (DELETE FROM synchro.rebuild_sessions s USING hz"
	        "          WHERE (s.stream_lsn, s.stream_ordinal) < (hz.commit_lsn, hz.ordinal)"
	        "          RETURNING 1)"
	        " SELECT hz.commit_lsn || '.' || hz.ordinal, (SELECT count(*) FROM up) FROM hz";
	sy_store_status st;
	PGresult *r = sy_store_exec(c, sql, 0, NULL, PGRES_TUPLES_OK, "expire the cursors", NULL,
	                            &st, err);
	if (!r)
		return st;
	bool ok = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 1), "1") == 0;
	if (ok)
		snprintf(horizon, 40, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	if (!ok)
		return sy_store_fail(err, SY_STORE_FAILED,
		                     "expire the cursors: synchro.changelog_horizon has no row");
	return SY_STORE_OK;
}

/* The table_ids some version had (synchro.synced_tables), for ever_synced(). */
typedef struct {
	PGresult *r;
} synced;

static bool in_synced(void *arg, const char *table_id)
{
	const synced *s = arg;
	for (int i = 0; s->r && i < PQntuples(s->r); i++)
		if (strcmp(PQgetvalue(s->r, i, 0), table_id) == 0)
			return true;
	return false;
}

sy_store_status sy_store_schema_pull_effect(PGconn *c, const sy_manifest *m, long long prev_version,
                                            bool *expired, char *why, size_t size, char horizon[40],
                                            sy_error *err)
{
	*expired = false;
	why[0] = '\0';
	horizon[0] = '\0';
	if (prev_version <= 0)
		return SY_STORE_OK;
	char v[24];
	snprintf(v, sizeof v, "%lld", prev_version);
	const char *p[] = {v};
	sy_store_status st;
	PGresult *r = sy_store_exec(c,
	                            "SELECT manifest FROM synchro.schema_versions WHERE version ="
	                            " $1::bigint",
	                            1, p, PGRES_TUPLES_OK, "schema version lookup", NULL, &st, err);
	if (!r)
		return st;
	sy_error e = {0};
	sy_manifest *prev = PQntuples(r) == 1 ? sy_manifest_parse(PQgetvalue(r, 0, 0),
	                                                          (size_t)PQgetlength(r, 0, 0), &e)
	                                      : NULL;
	PQclear(r);
	if (!prev)
		return sy_store_fail(err, e.code == SY_ERR_NOMEM ? SY_STORE_NOMEM : SY_STORE_FAILED,
		                     "schema version %lld cannot be read back", prev_version);
	synced s = {NULL};
	s.r = sy_store_exec(c, "SELECT table_id FROM synchro.synced_tables", 0, NULL,
	                    PGRES_TUPLES_OK, "synced tables lookup", NULL, &st, err);
	if (!s.r) {
		sy_manifest_free(prev);
		return st;
	}
	bool change = sy_store_schema_pull_change(prev, m, in_synced, &s, why, size);
	PQclear(s.r);
	sy_manifest_free(prev);
	if (!change)
		return SY_STORE_OK;
	st = sy_store_expire_cursors(c, horizon, err);
	*expired = st == SY_STORE_OK;
	return st;
}
