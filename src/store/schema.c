/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * schema.c: synchroctl schema publish and show.
 *
 * Layer: middle of src/store (doc/hacking.md).
 * Rules: doc/contract.md#schema-versions (versions are kept).
 * Interface:
 *   sy_store_schema_check()    a manifest against the catalog
 *   sy_store_schema_publish()  the check, the fences and the new version, in one transaction
 *   sy_store_schema_get()      a stored version (0: the latest); sy_store_schema_clear()
 * Notes: Manifests are checked against the catalog. Publish installs the fences and the
 * scope triggers (schema_scopes.c). Each version is kept.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/conn.h"
#include "store/migrate.h"
#include "store/schema.h"
#include "store/schema_pull_effect.h"
#include "store/schema_scopes.h"
#include "synchro/alloc.h"
#include "synchro/buf.h"

/* doc/contract.md#portable-types: the PostgreSQL types (pg_catalog typname) each portable type maps
 * to. */
static const struct {
	sy_type type;
	const char *pg[2];
	const char *want;
} typemap[] = {
        {SY_TYPE_TEXT, {"text", "varchar"}, "a text or varchar"},
        {SY_TYPE_INT32, {"int4", NULL}, "an integer"},
        {SY_TYPE_INT64, {"int8", NULL}, "a bigint"},
        {SY_TYPE_FLOAT64, {"float8", NULL}, "a double precision"},
        {SY_TYPE_NUMERIC, {"numeric", NULL}, "a numeric"},
        {SY_TYPE_BOOL, {"bool", NULL}, "a boolean"},
        {SY_TYPE_TIMESTAMP, {"timestamptz", NULL}, "a timestamp with time zone"},
        {SY_TYPE_DATE, {"date", NULL}, "a date"},
        {SY_TYPE_UUID, {"uuid", NULL}, "a uuid"},
        {SY_TYPE_BYTES, {"bytea", NULL}, "a bytea"},
        {SY_TYPE_JSON, {"jsonb", NULL}, "a jsonb"},
};

/* Columns of the catalog query below. */
enum {
	COL_NAME,
	COL_TYPNAME,
	COL_BUILTIN,
	COL_NOTNULL,
	COL_GENERATED,
	COL_ALWAYS,
	COL_HASDEF,
	COL_DISPLAY
};

static const char columns_sql[] =
        "SELECT a.attname, t.typname, tn.nspname = 'pg_catalog' AND t.typtype = 'b', a.attnotnull,"
        "       a.attgenerated <> '', a.attidentity = 'a', a.atthasdef OR a.attidentity <> '',"
        "       pg_catalog.format_type(a.atttypid, a.atttypmod)"
        "  FROM pg_catalog.pg_attribute a"
        "  JOIN pg_catalog.pg_type t ON t.oid = a.atttypid"
        "  JOIN pg_catalog.pg_namespace tn ON tn.oid = t.typnamespace"
        " WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped"
        " ORDER BY a.attnum";

static const char relation_sql[] = "SELECT c.oid, c.relkind FROM pg_catalog.pg_class c"
                                   " WHERE c.oid = pg_catalog.to_regclass($1)::oid";

static const char pkey_sql[] =
        "SELECT a.attname FROM pg_catalog.pg_index i"
        "  JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)"
        " WHERE i.indrelid = $1::oid AND i.indisprimary";

static void note_line(sy_store_note_fn note, void *arg, const char *line)
{
	if (note)
		note(arg, line);
}

static bool is_true(const PGresult *r, int row, int col)
{
	return strcmp(PQgetvalue(r, row, col), "t") == 0;
}

static int find_column(const PGresult *cols, const char *name)
{
	for (int i = 0; i < PQntuples(cols); i++)
		if (strcmp(PQgetvalue(cols, i, COL_NAME), name) == 0)
			return i;
	return -1;
}

static bool type_fits(sy_type type, const PGresult *cols, int row, const char **want)
{
	for (size_t i = 0; i < sizeof typemap / sizeof typemap[0]; i++) {
		if (typemap[i].type != type)
			continue;
		*want = typemap[i].want;
		if (!is_true(cols, row, COL_BUILTIN))
			return false;
		const char *typname = PQgetvalue(cols, row, COL_TYPNAME);
		for (size_t j = 0; j < 2; j++)
			if (typemap[i].pg[j] && strcmp(typemap[i].pg[j], typname) == 0)
				return true;
		return false;
	}
	*want = "a known";
	return false;
}

/* Whether the server writes the column backing f (so it must not be generated). */
static bool server_writes(const sy_table *t, const sy_field *f)
{
	if (f->writable)
		return true;
	if (t->owner_field && strcmp(t->owner_field, f->field_id) == 0)
		return true;
	return t->delete_column && strcmp(t->delete_column, f->column) == 0;
}

/*
 * One column against one manifest entry. label is "field \"x\"" or "pk field \"x\"";
 * nullable < 0 skips the nullability rule.
 */
static sy_store_status check_column(const sy_table *t, const PGresult *cols, const char *label,
                                    const char *column, sy_type type, int nullable, bool written,
                                    sy_error *err)
{
	int row = find_column(cols, column);
	if (row < 0)
		return sy_store_fail(err, SY_STORE_INVALID,
		                     "table \"%s\": %s: column \"%s\" does not exist in %s",
		                     t->table_id, label, column, t->relation);
	const char *want;
	if (!type_fits(type, cols, row, &want))
		return sy_store_fail(
		        err, SY_STORE_INVALID,
		        "table \"%s\": %s: type %s needs %s column, but column \"%s\" is %s",
		        t->table_id, label, sy_type_name(type), want, column,
		        PQgetvalue(cols, row, COL_DISPLAY));
	bool notnull = is_true(cols, row, COL_NOTNULL);
	if (nullable == 0 && !notnull)
		return sy_store_fail(
		        err, SY_STORE_INVALID,
		        "table \"%s\": %s: declared nullable false, but column \"%s\" allows "
		        "NULL (add NOT NULL or declare it nullable)",
		        t->table_id, label, column);
	if (nullable == 1 && notnull)
		return sy_store_fail(
		        err, SY_STORE_INVALID,
		        "table \"%s\": %s: declared nullable true, but column \"%s\" is NOT "
		        "NULL (the server could not store the null it accepted)",
		        t->table_id, label, column);
	if (written && (is_true(cols, row, COL_GENERATED) || is_true(cols, row, COL_ALWAYS)))
		return sy_store_fail(
		        err, SY_STORE_INVALID,
		        "table \"%s\": %s: column \"%s\" is generated, but the server writes it",
		        t->table_id, label, column);
	return SY_STORE_OK;
}

static bool column_mapped(const sy_table *t, const char *column)
{
	if (strcmp(t->pk.column, column) == 0)
		return true;
	if (t->delete_column && strcmp(t->delete_column, column) == 0)
		return true;
	return sy_table_field_by_column(t, column, strlen(column)) != NULL;
}

static sy_store_status check_table(PGconn *c, const sy_table *t, char oid[16],
                                   sy_store_note_fn note, void *arg, sy_error *err)
{
	sy_store_status st;
	PGresult *cols = NULL, *pk = NULL;
	char *quoted = sy_store_quote_relation(c, t->relation, err);
	if (!quoted)
		return SY_STORE_INVALID;
	const char *p1[] = {quoted};
	PGresult *r = sy_store_exec(c, relation_sql, 1, p1, PGRES_TUPLES_OK, "relation lookup",
	                            NULL, &st, err);
	sy_free(quoted);
	if (!r)
		return st;
	if (PQntuples(r) != 1) {
		PQclear(r);
		return sy_store_fail(err, SY_STORE_INVALID,
		                     "table \"%s\": relation %s does not exist", t->table_id,
		                     t->relation);
	}
	char kind = PQgetvalue(r, 0, 1)[0];
	snprintf(oid, 16, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	if (kind != 'r' && kind != 'p')
		return sy_store_fail(err, SY_STORE_INVALID,
		                     "table \"%s\": relation %s is not a table (relkind '%c')",
		                     t->table_id, t->relation, kind);

	const char *p2[] = {oid};
	pk = sy_store_exec(c, pkey_sql, 1, p2, PGRES_TUPLES_OK, "primary key lookup", NULL, &st,
	                   err);
	if (!pk)
		goto fail;
	if (PQntuples(pk) == 0) {
		st = sy_store_fail(
		        err, SY_STORE_INVALID,
		        "table \"%s\": relation %s has no primary key (pk column \"%s\")",
		        t->table_id, t->relation, t->pk.column);
		goto fail;
	}
	if (PQntuples(pk) > 1) {
		st = sy_store_fail(
		        err, SY_STORE_INVALID,
		        "table \"%s\": pk column \"%s\": the primary key of %s has %d columns; "
		        "synchro needs a one-column primary key",
		        t->table_id, t->pk.column, t->relation, PQntuples(pk));
		goto fail;
	}
	if (strcmp(PQgetvalue(pk, 0, 0), t->pk.column) != 0) {
		st = sy_store_fail(
		        err, SY_STORE_INVALID,
		        "table \"%s\": pk column \"%s\" is not the primary key of %s (its "
		        "primary key is \"%s\")",
		        t->table_id, t->pk.column, t->relation, PQgetvalue(pk, 0, 0));
		goto fail;
	}

	cols = sy_store_exec(c, columns_sql, 1, p2, PGRES_TUPLES_OK, "column lookup", NULL, &st,
	                     err);
	if (!cols)
		goto fail;
	char label[SY_MANIFEST_NAME_MAX + 16];
	snprintf(label, sizeof label, "pk field \"%s\"", t->pk.field_id);
	st = check_column(t, cols, label, t->pk.column, t->pk.type, -1, true, err);
	if (st != SY_STORE_OK)
		goto fail;
	for (size_t i = 0; i < t->field_count; i++) {
		const sy_field *f = &t->fields[i];
		snprintf(label, sizeof label, "field \"%s\"", f->field_id);
		st = check_column(t, cols, label, f->column, f->type, f->nullable ? 1 : 0,
		                  server_writes(t, f), err);
		if (st != SY_STORE_OK)
			goto fail;
	}
	if (t->delete_mode == SY_DELETE_SOFT) {
		snprintf(label, sizeof label, "soft-delete column");
		st = check_column(t, cols, label, t->delete_column, SY_TYPE_TIMESTAMP, 1, true,
		                  err);
		if (st != SY_STORE_OK)
			goto fail;
	}
	for (int i = 0; i < PQntuples(cols); i++) {
		const char *name = PQgetvalue(cols, i, COL_NAME);
		if (is_true(cols, i, COL_NOTNULL) && !is_true(cols, i, COL_HASDEF) &&
		    !is_true(cols, i, COL_GENERATED) && !column_mapped(t, name)) {
			char line[SY_ERROR_MESSAGE_MAX];
			snprintf(line, sizeof line,
			         "warning: table \"%s\": column \"%s\" of %s is NOT NULL without a "
			         "default and not in the manifest: synchro inserts will fail",
			         t->table_id, name, t->relation);
			note_line(note, arg, line);
		}
	}
	st = SY_STORE_OK;
fail:
	PQclear(pk);
	PQclear(cols);
	return st;
}

/* oids[i] receives the oid of table i's relation (decimal text). */
static sy_store_status check_all(PGconn *c, const sy_manifest *m, char (*oids)[16],
                                 sy_store_note_fn note, void *arg, sy_error *err)
{
	for (size_t i = 0; i < m->table_count; i++) {
		sy_store_status st = check_table(c, &m->tables[i], oids[i], note, arg, err);
		if (st == SY_STORE_OK)
			st = sy_store_scopes_check(c, &m->tables[i], oids[i], err);
		if (st != SY_STORE_OK)
			return st;
		for (size_t j = 0; j < i; j++)
			if (strcmp(oids[j], oids[i]) == 0)
				return sy_store_fail(
				        err, SY_STORE_INVALID,
				        "tables \"%s\" and \"%s\" map the same relation %s",
				        m->tables[j].table_id, m->tables[i].table_id,
				        m->tables[i].relation);
	}
	return SY_STORE_OK;
}

sy_store_status sy_store_schema_check(PGconn *c, const sy_manifest *m, sy_store_note_fn note,
                                      void *arg, sy_error *err)
{
	char(*oids)[16] = sy_calloc(m->table_count ? m->table_count : 1, sizeof *oids);
	if (!oids)
		return sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	sy_store_status st = check_all(c, m, oids, note, arg, err);
	sy_free(oids);
	return st;
}

/* "schema.name" of a relation oid, quoted for statement text; sy_free(). */
static char *quoted_name(PGconn *c, const char *nsp, const char *rel, sy_error *err)
{
	char *qn = sy_store_quote_ident(c, nsp, err);
	char *qr = qn ? sy_store_quote_ident(c, rel, err) : NULL;
	char *out = NULL;
	if (qr) {
		size_t n = strlen(qn) + strlen(qr) + 2;
		out = sy_malloc(n);
		if (out)
			snprintf(out, n, "%s.%s", qn, qr);
		else
			sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	}
	sy_free(qn);
	sy_free(qr);
	return out;
}

/*
 * A trigger on another relation that still fences a table_id this manifest maps elsewhere
 * would write that table's fences from two relations: drop it.
 */
static sy_store_status drop_moved_triggers(PGconn *c, const sy_manifest *m, char (*oids)[16],
                                           sy_store_note_fn note, void *arg, sy_error *err)
{
	sy_store_status st;
	PGresult *r = sy_store_exec(
	        c,
	        "SELECT t.tgrelid, n.nspname, c.relname, t.tgargs FROM pg_catalog.pg_trigger t"
	        "  JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid"
	        "  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
	        " WHERE t.tgname = 'synchro_version_fence' AND NOT t.tgisinternal"
	        "   AND t.tgnargs > 0",
	        0, NULL, PGRES_TUPLES_OK, "trigger lookup", NULL, &st, err);
	if (!r)
		return st;
	for (int i = 0; i < PQntuples(r) && st == SY_STORE_OK; i++) {
		bool mapped = false;
		for (size_t j = 0; j < m->table_count; j++)
			if (strcmp(oids[j], PQgetvalue(r, i, 0)) == 0)
				mapped = true;
		if (mapped)
			continue;
		size_t n = 0;
		unsigned char *args =
		        PQunescapeBytea((const unsigned char *)PQgetvalue(r, i, 3), &n);
		if (!args) {
			st = sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
			break;
		}
		const unsigned char *nul = memchr(args, '\0', n);
		size_t idlen = nul ? (size_t)(nul - args) : n;
		const sy_table *t = sy_manifest_table(m, (const char *)args, idlen);
		PQfreemem(args);
		if (!t)
			continue; /* a table the manifest dropped: its trigger keeps its fences
			             exact */
		char *rel = quoted_name(c, PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), err);
		if (!rel) {
			st = SY_STORE_FAILED;
			break;
		}
		size_t sn = strlen(rel) + 64;
		char *sql = sy_malloc(sn);
		if (!sql) {
			sy_free(rel);
			st = sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
			break;
		}
		snprintf(sql, sn, "DROP TRIGGER synchro_version_fence ON %s", rel);
		st = sy_store_command(c, sql, "dropping a moved fence trigger", err);
		if (st == SY_STORE_OK) {
			char line[SY_ERROR_MESSAGE_MAX];
			snprintf(line, sizeof line,
			         "table \"%s\": dropped the fence trigger of %s.%s (now %s)",
			         t->table_id, PQgetvalue(r, i, 1), PQgetvalue(r, i, 2),
			         t->relation);
			note_line(note, arg, line);
		}
		sy_free(sql);
		sy_free(rel);
	}
	PQclear(r);
	return st;
}

/*
 * Migration 13: every push write runs inside synchro.synchro_push, as synchro_owner, so
 * the owner gets the writes (and its triggers run with its authority, doc/contract.md#push-units);
 * synchro_app, the responders, only reads the table (pull, rebuild) and loses any write an earlier
 * publish granted it.
 */
static const struct {
	const char *kind;
	const char *head; /* the statement before the quoted name */
	const char *tail; /* and after it */
} grants[] = {
        {"TABLE", "GRANT SELECT ON TABLE ", " TO synchro_app"},
        /* walsync reads the rows of a scope key when a membership comes or goes. */
        {"TABLE", "GRANT SELECT ON TABLE ", " TO synchro_walsync"},
        {"TABLE", "REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON TABLE ", " FROM synchro_app"},
        {"TABLE", "GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE ", " TO synchro_owner"},
        {"SEQUENCE", "GRANT USAGE ON SEQUENCE ", " TO synchro_owner"},
        {"SEQUENCE", "REVOKE USAGE ON SEQUENCE ", " FROM synchro_app"},
        {"SCHEMA", "GRANT USAGE ON SCHEMA ", " TO synchro_app, synchro_owner, synchro_walsync"},
};

static sy_store_status grant_all(PGconn *c, const char *oid, sy_error *err)
{
	sy_store_status st;
	const char *p[] = {oid};
	/* The relation, the sequences behind its serial/identity columns, its schema. */
	PGresult *r = sy_store_exec(
	        c,
	        "SELECT 'TABLE', n.nspname, c.relname FROM pg_catalog.pg_class c"
	        "  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = $1::oid"
	        " UNION ALL "
	        "SELECT 'SEQUENCE', sn.nspname, s.relname FROM pg_catalog.pg_depend d"
	        "  JOIN pg_catalog.pg_class s ON s.oid = d.objid AND s.relkind = 'S'"
	        "  JOIN pg_catalog.pg_namespace sn ON sn.oid = s.relnamespace"
	        " WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass"
	        "   AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass"
	        "   AND d.refobjid = $1::oid AND d.deptype IN ('a', 'i')"
	        " UNION ALL "
	        "SELECT 'SCHEMA', n.nspname, NULL FROM pg_catalog.pg_class c"
	        "  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
	        " WHERE c.oid = $1::oid"
	        "   AND NOT (pg_catalog.has_schema_privilege('synchro_app', n.oid, 'USAGE')"
	        "            AND pg_catalog.has_schema_privilege('synchro_owner', n.oid, 'USAGE')"
	        "            AND pg_catalog.has_schema_privilege('synchro_walsync', n.oid, "
	        "'USAGE'))",
	        1, p, PGRES_TUPLES_OK, "grant lookup", NULL, &st, err);
	if (!r)
		return st;
	for (int i = 0; i < PQntuples(r) && st == SY_STORE_OK; i++) {
		const char *kind = PQgetvalue(r, i, 0);
		char *name =
		        strcmp(kind, "SCHEMA") == 0
		                ? sy_store_quote_ident(c, PQgetvalue(r, i, 1), err)
		                : quoted_name(c, PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), err);
		if (!name) {
			st = SY_STORE_FAILED;
			break;
		}
		for (size_t g = 0; g < sizeof grants / sizeof grants[0] && st == SY_STORE_OK; g++) {
			if (strcmp(kind, grants[g].kind) != 0)
				continue;
			sy_buf sql = SY_BUF_INIT;
			sy_buf_puts(&sql, grants[g].head);
			sy_buf_puts(&sql, name);
			sy_buf_puts(&sql, grants[g].tail);
			st = sql.failed ? sy_store_fail(err, SY_STORE_NOMEM, "out of memory")
			                : sy_store_command(c, sql.data, "grants", err);
			sy_buf_free(&sql);
		}
		sy_free(name);
	}
	PQclear(r);
	return st;
}

static sy_store_status install_table(PGconn *c, const sy_table *t, const char *oid,
                                     sy_store_note_fn note, void *arg, sy_error *err)
{
	sy_store_status st;
	const sy_field *owner =
	        t->owner_field ? sy_table_field(t, t->owner_field, strlen(t->owner_field)) : NULL;
	const char *soft = t->delete_mode == SY_DELETE_SOFT ? t->delete_column : "";
	/* A members table's fence also names its hop column (the message's scope). */
	const char *p[] = {oid,
	                   t->table_id,
	                   t->pk.column,
	                   soft,
	                   owner ? owner->column : "",
	                   t->members ? t->members->hops[0].column : ""};
	PGresult *r = sy_store_exec(
	        c,
	        t->members ? "SELECT synchro.install_fence_trigger($1::oid::pg_catalog.regclass,"
	                     " $2::text, $3::text, $4::text, $5::text, $6::text)"
	                   : "SELECT synchro.install_fence_trigger($1::oid::pg_catalog.regclass,"
	                     " $2::text, $3::text, $4::text, $5::text)",
	        t->members ? 6 : 5, p, PGRES_TUPLES_OK, "installing the fence trigger", NULL, &st,
	        err);
	PQclear(r);
	if (st != SY_STORE_OK)
		return st;
	r = sy_store_exec(
	        c,
	        t->members ? "SELECT synchro.backfill_fences($1::oid::pg_catalog.regclass,"
	                     " $2::text, $3::text, $4::text, $5::text, $6::text)"
	                   : "SELECT synchro.backfill_fences($1::oid::pg_catalog.regclass,"
	                     " $2::text, $3::text, $4::text, $5::text)",
	        t->members ? 6 : 5, p, PGRES_TUPLES_OK, "backfilling fences", NULL, &st, err);
	if (!r)
		return st;
	char line[SY_ERROR_MESSAGE_MAX];
	snprintf(line, sizeof line,
	         "table \"%s\" (%s): fence trigger installed, %s fences backfilled", t->table_id,
	         t->relation, PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "0");
	PQclear(r);
	st = grant_all(c, oid, err);
	if (st == SY_STORE_OK)
		note_line(note, arg, line);
	return st;
}

/* Latest version and hash; version 0 when none. */
static sy_store_status latest(PGconn *c, long long *version, char hash[SY_HASH_HEX_LEN + 1],
                              sy_error *err)
{
	sy_store_status st;
	PGresult *r =
	        sy_store_exec(c,
	                      "SELECT version, hash FROM synchro.schema_versions"
	                      " ORDER BY version DESC LIMIT 1",
	                      0, NULL, PGRES_TUPLES_OK, "schema version lookup", NULL, &st, err);
	if (!r)
		return st;
	*version = 0;
	hash[0] = '\0';
	if (PQntuples(r) == 1) {
		*version = atoll(PQgetvalue(r, 0, 0));
		snprintf(hash, SY_HASH_HEX_LEN + 1, "%s", PQgetvalue(r, 0, 1));
	}
	PQclear(r);
	return SY_STORE_OK;
}

static sy_store_status require_migrated(PGconn *c, sy_error *err)
{
	int version;
	size_t pending;
	sy_store_status st = sy_store_migration_state(c, &version, &pending, err);
	if (st != SY_STORE_OK)
		return st;
	if (version == 0)
		return sy_store_fail(err, SY_STORE_FAILED,
		                     "schema synchro is not installed: run synchroctl init");
	if (pending > 0)
		return sy_store_fail(err, SY_STORE_FAILED,
		                     "%zu migration(s) not applied: run synchroctl migrate",
		                     pending);
	return SY_STORE_OK;
}

/* Bookkeeping of every table_id ever published, where migrations keep it. */
static sy_store_status record_tables(PGconn *c, const sy_manifest *m, long long version,
                                     sy_error *err)
{
	sy_store_status st;
	PGresult *r = sy_store_exec(c, "SELECT to_regclass('synchro.synced_tables') IS NOT NULL", 0,
	                            NULL, PGRES_TUPLES_OK, "synced tables lookup", NULL, &st, err);
	if (!r)
		return st;
	bool have = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	if (!have)
		return SY_STORE_OK;
	char v[24];
	snprintf(v, sizeof v, "%lld", version);
	for (size_t i = 0; i < m->table_count && st == SY_STORE_OK; i++) {
		const char *p[] = {m->tables[i].table_id, v};
		r = sy_store_exec(c,
		                  "INSERT INTO synchro.synced_tables (table_id, first_version)"
		                  " VALUES ($1, $2::bigint) ON CONFLICT (table_id) DO NOTHING",
		                  2, p, PGRES_COMMAND_OK, "recording synced tables", NULL, &st,
		                  err);
		PQclear(r);
	}
	return st;
}

/*
 * A published table keeps its primary key (doc/protocol.md): the pk's field_id and type
 * are the typed identity of every row, fence and ledgered mutation of the table, so a
 * manifest that changes either for a table_id some version had is refused here, against
 * the latest version that had the table.
 */
static sy_store_status check_pk_history(PGconn *c, const sy_manifest *m, sy_error *err)
{
	sy_store_status st = SY_STORE_OK;
	PGresult *r = sy_store_exec(c,
	                            "SELECT version, manifest FROM synchro.schema_versions"
	                            " ORDER BY version DESC",
	                            0, NULL, PGRES_TUPLES_OK, "schema history", NULL, &st, err);
	if (!r)
		return st;
	bool *seen = sy_calloc(m->table_count + 1, sizeof *seen);
	if (!seen) {
		PQclear(r);
		return sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	}
	size_t left = m->table_count;
	for (int i = 0; i < PQntuples(r) && left > 0 && st == SY_STORE_OK; i++) {
		sy_error pe = {0};
		sy_manifest *old =
		        sy_manifest_parse(PQgetvalue(r, i, 1), (size_t)PQgetlength(r, i, 1), &pe);
		if (!old) {
			st = sy_store_fail(
			        err, pe.code == SY_ERR_NOMEM ? SY_STORE_NOMEM : SY_STORE_FAILED,
			        "schema version %s does not parse", PQgetvalue(r, i, 0));
			break;
		}
		for (size_t t = 0; t < m->table_count && st == SY_STORE_OK; t++) {
			const sy_table *now = &m->tables[t];
			const sy_table *was = seen[t] ? NULL
			                              : sy_manifest_table(old, now->table_id,
			                                                  strlen(now->table_id));
			if (!was)
				continue;
			seen[t] = true;
			left--;
			if (strcmp(was->pk.field_id, now->pk.field_id) != 0 ||
			    was->pk.type != now->pk.type)
				st = sy_store_fail(
				        err, SY_STORE_CONFLICT,
				        "table \"%s\": its primary key was field \"%s\" of type %s "
				        "in "
				        "version %s and cannot change (rows, fences and ledgered "
				        "mutations are identified by it); map a new table_id "
				        "instead",
				        now->table_id, was->pk.field_id, sy_type_name(was->pk.type),
				        PQgetvalue(r, i, 0));
		}
		sy_manifest_free(old);
	}
	sy_free(seen);
	PQclear(r);
	return st;
}

typedef struct {
	const sy_manifest *m;
	char (*oids)[16];
	sy_store_note_fn note;
	void *arg;
	sy_store_published *out;
} publication;

static sy_store_status publish(PGconn *c, void *pub, sy_error *err)
{
	const publication *a = pub;
	const sy_manifest *m = a->m;
	char(*oids)[16] = a->oids;
	sy_store_note_fn note = a->note;
	void *arg = a->arg;
	sy_store_published *out = a->out;
	sy_store_status st = sy_store_command(
	        c, "LOCK TABLE synchro.schema_versions IN SHARE ROW EXCLUSIVE MODE", "lock", err);
	if (st != SY_STORE_OK)
		return st;
	if ((st = check_all(c, m, oids, note, arg, err)) != SY_STORE_OK)
		return st;
	if ((st = check_pk_history(c, m, err)) != SY_STORE_OK)
		return st;
	char hash[SY_HASH_HEX_LEN + 1];
	if ((st = latest(c, &out->version, hash, err)) != SY_STORE_OK)
		return st;
	bool same = out->version > 0 && strcmp(hash, m->hash) == 0;
	if (!same) {
		const char *p[] = {m->hash};
		PGresult *r = sy_store_exec(
		        c, "SELECT version FROM synchro.schema_versions WHERE hash = $1", 1, p,
		        PGRES_TUPLES_OK, "schema version lookup", NULL, &st, err);
		if (!r)
			return st;
		if (PQntuples(r) > 0) {
			st = sy_store_fail(
			        err, SY_STORE_CONFLICT,
			        "the manifest equals version %s (hash %s), not the latest version "
			        "%lld: a schema reference names one manifest forever, so it cannot "
			        "be published again",
			        PQgetvalue(r, 0, 0), m->hash, out->version);
			PQclear(r);
			return st;
		}
		PQclear(r);
	}
	if ((st = drop_moved_triggers(c, m, oids, note, arg, err)) != SY_STORE_OK)
		return st;
	for (size_t i = 0; i < m->table_count; i++)
		if ((st = install_table(c, &m->tables[i], oids[i], note, arg, err)) != SY_STORE_OK)
			return st;
	if ((st = sy_store_scopes_install(c, m, note, arg, err)) != SY_STORE_OK)
		return st;
	snprintf(out->hash, sizeof out->hash, "%s", m->hash);
	out->created = !same;
	if (same)
		return SY_STORE_OK;
	/* A publish that changes what pull delivers makes every client rebuild. */
	bool expired;
	char why[SY_ERROR_MESSAGE_MAX], horizon[40];
	if ((st = sy_store_schema_pull_effect(c, m, out->version, &expired, why, sizeof why,
	                                      horizon, err)) != SY_STORE_OK)
		return st;
	if (expired) {
		char line[SY_ERROR_MESSAGE_MAX + 128];
		snprintf(line, sizeof line,
		         "%s: every cursor before %s expired, every client rebuilds under the new "
		         "version",
		         why, horizon);
		note_line(note, arg, line);
	}
	const char *p[] = {m->hash, m->canonical};
	PGresult *r = sy_store_exec(c,
	                            "INSERT INTO synchro.schema_versions (version, hash, manifest)"
	                            " SELECT coalesce(max(version), 0) + 1, $1, $2"
	                            "   FROM synchro.schema_versions RETURNING version",
	                            2, p, PGRES_TUPLES_OK, "recording the schema version", NULL,
	                            &st, err);
	if (!r)
		return st;
	out->version = atoll(PQgetvalue(r, 0, 0));
	PQclear(r);
	return record_tables(c, m, out->version, err);
}

sy_store_status sy_store_schema_publish(PGconn *c, const sy_manifest *m, sy_store_note_fn note,
                                        void *arg, sy_store_published *out, sy_error *err)
{
	memset(out, 0, sizeof *out);
	sy_store_status st = require_migrated(c, err);
	if (st != SY_STORE_OK)
		return st;
	char(*oids)[16] = sy_calloc(m->table_count ? m->table_count : 1, sizeof *oids);
	if (!oids)
		return sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	publication a = {m, oids, note, arg, out};
	st = sy_store_transaction(c, publish, &a, err);
	sy_free(oids);
	return st;
}

sy_store_status sy_store_schema_get(PGconn *c, long long version, sy_store_schema *out,
                                    sy_error *err)
{
	memset(out, 0, sizeof *out);
	sy_store_status st = require_migrated(c, err);
	if (st != SY_STORE_OK)
		return st;
	char v[24];
	snprintf(v, sizeof v, "%lld", version);
	const char *p[] = {v};
	PGresult *r =
	        sy_store_exec(c,
	                      "SELECT version, hash, published_at, manifest"
	                      "  FROM synchro.schema_versions WHERE $1::bigint IN (0, version)"
	                      " ORDER BY version DESC LIMIT 1",
	                      1, p, PGRES_TUPLES_OK, "schema version lookup", NULL, &st, err);
	if (!r)
		return st;
	if (PQntuples(r) == 0) {
		PQclear(r);
		if (version == 0)
			return sy_store_fail(err, SY_STORE_NOT_FOUND,
			                     "no schema has been published");
		return sy_store_fail(err, SY_STORE_NOT_FOUND, "schema version %lld does not exist",
		                     version);
	}
	out->version = atoll(PQgetvalue(r, 0, 0));
	snprintf(out->hash, sizeof out->hash, "%s", PQgetvalue(r, 0, 1));
	sy_store_format_time(PQgetvalue(r, 0, 2), out->published_at);
	out->manifest_len = (size_t)PQgetlength(r, 0, 3);
	out->manifest = sy_strndup(PQgetvalue(r, 0, 3), out->manifest_len);
	PQclear(r);
	if (!out->manifest)
		return sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	return SY_STORE_OK;
}

void sy_store_schema_clear(sy_store_schema *s)
{
	if (!s)
		return;
	sy_free(s->manifest);
	s->manifest = NULL;
	s->manifest_len = 0;
}
