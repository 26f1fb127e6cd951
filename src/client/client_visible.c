/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_visible.c: the visible tables. They hold what the device sees of each manifest
 * table: the server's rows with the device's unsettled intents laid over them, and _state.
 * They are real SQLite tables, and the app queries them in place (client_query.c).
 *
 * Layer: middle of src/client (doc/hacking.md).
 * Interface:
 *   sy_cl_visible_open()    sets the maintenance up; builds the tables when not current
 *   sy_cl_visible_ident()   a visible table's physical name, quoted for SQL
 *   sy_cl_visible_verify()  every visible table against the overlay computed from scratch
 *   sy_cl_changed_clear()   clears the list of changed tables
 *   sy_client_index()       an index the app asks for
 * Notes: Names. Each manifest table t has one physical table named "visible:t" in the
 * store's main database. It has the pk field (the PRIMARY KEY), every manifest field in
 * manifest order, then _state ('synced', 'pending', 'conflict', 'blocked'). A manifest name
 * is any UTF-8 without control characters. So it may be "rows" or "meta", a table of the
 * store's own. The prefix keeps every physical name apart from the store's tables (none
 * starts with it) and from the other manifest tables. The app never writes the prefix.
 * Natively its SQL runs on a second, read-only connection, where each table has a TEMP
 * view under the app's name (client_query.c). Temp names come first in SQLite's lookup
 * there. The store's own connection has no such views, so its own statements always mean
 * its own tables. In the browser, the store has one connection. The views are on it,
 * except for a name the store uses itself.
 *
 * Types. int32, int64 and bool are INTEGER (true is 1). float64 is REAL. Every other type
 * is TEXT in its wire form: numeric as its exact decimal, timestamps, dates and uuids as
 * text, bytes as base64, json as its JSON text. A field absent from a row is NULL. SQLite
 * ignores ASCII case in names. So a field named as the pk, _state or an earlier field, but
 * for case, has no column (has_column).
 *
 * Maintenance. Temporary triggers on this connection's rows and intents tables record each
 * (table, pk) whose inputs a statement touched. They write it to temp.visible_dirty, in the
 * statement's own transaction, so a rolled-back savepoint forgets it too. Just before every
 * COMMIT of the store, sy_cl_commit calls c->before_commit. It computes the dirty rows'
 * overlays (sy_cl_overlay_compute, the code sy_client_get reads with) and writes them. A
 * row the overlay no longer shows is deleted. So the tables change in the same SQLite
 * transaction as the change of their inputs, whichever code path made it: a local commit,
 * a reconciled answer, a pull or rebuild page, a resolve or a schema change. A crash leaves
 * both or neither. A row whose visible form did not change is not written (the upsert's
 * WHERE). Only tables with a real change go on the changed list that live queries read.
 *
 * When the current schema version differs from the one the tables were built for (meta
 * visible_schema), the tables are dropped and built again for the new manifest, in that
 * same commit. A store whose tables are not current, such as a store from before they
 * existed, builds them at opening, in a transaction of its own. A rebuild's last page
 * replaces every server row. It deletes visible_schema in its transaction. The triggers
 * record nothing while it is absent (their WHEN), and the commit builds the tables from
 * scratch. So a million-row swap is not a million-entry dirty list. Reads never build or
 * fix anything. The indexes the app asked for (sy_client_index) are kept in visible_indexes
 * and made again with the tables.
 */
#include "config.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "synchro/alloc.h"
#include "synchro/jcs.h"

#define PREFIX "visible:"
/* While no visible_schema is recorded, the next commit builds every table from scratch:
 * nothing to record until then. */
#define TRACKING "WHEN EXISTS (SELECT 1 FROM main.meta WHERE key = 'visible_schema')"

typedef struct {
	sqlite3_stmt *upsert, *del, *check;
} vis_table;

struct sy_cl_visible {
	uint64_t version; /* the schema version the tables are built for */
	sy_manifest *m;   /* its manifest, NULL for version 0 */
	vis_table *t;     /* one per manifest table, statements prepared on first use */
};

static void ident(sy_buf *b, const char *name)
{
	sy_buf_putc(b, '"');
	for (const char *p = name; *p; p++) {
		if (*p == '"')
			sy_buf_putc(b, '"');
		sy_buf_putc(b, *p);
	}
	sy_buf_putc(b, '"');
}

void sy_cl_visible_ident(sy_buf *b, const char *table)
{
	sy_buf_putc(b, '"');
	sy_buf_puts(b, PREFIX);
	for (const char *p = table; *p; p++) {
		if (*p == '"')
			sy_buf_putc(b, '"');
		sy_buf_putc(b, *p);
	}
	sy_buf_putc(b, '"');
}

/*
 * Whether field f has a column: SQLite's names ignore ASCII case, so a field whose name is
 * that of the pk, of _state or of an earlier field but for case has none (sy_client_get
 * still shows it).
 */
static bool has_column(const sy_table *t, size_t f)
{
	const char *name = t->fields[f].field_id;
	if (sqlite3_stricmp(name, t->pk.field_id) == 0 || sqlite3_stricmp(name, "_state") == 0)
		return false;
	for (size_t k = 0; k < f; k++)
		if (sqlite3_stricmp(name, t->fields[k].field_id) == 0 && has_column(t, k))
			return false;
	return true;
}

static const char *col_type(sy_type t)
{
	switch (t) {
	case SY_TYPE_INT32:
	case SY_TYPE_INT64:
	case SY_TYPE_BOOL: return "INTEGER";
	case SY_TYPE_FLOAT64: return "REAL";
	default: return "TEXT";
	}
}

static void vis_free(struct sy_cl_visible *v)
{
	if (v == NULL)
		return;
	if (v->t != NULL && v->m != NULL)
		for (size_t i = 0; i < v->m->table_count; i++) {
			sqlite3_finalize(v->t[i].upsert);
			sqlite3_finalize(v->t[i].del);
			sqlite3_finalize(v->t[i].check);
		}
	sy_free(v->t);
	sy_manifest_free(v->m);
	sy_free(v);
}

void sy_cl_visible_free(sy_client *c)
{
	vis_free(c->vis);
	c->vis = NULL;
	sy_cl_changed_clear(c);
}

void sy_cl_changed_clear(sy_client *c)
{
	for (size_t i = 0; i < c->nchanged; i++)
		sy_free(c->changed[i]);
	c->nchanged = 0;
	c->changed_all = false;
}

static void changed_add(sy_client *c, const char *table)
{
	if (c->changed_all)
		return;
	for (size_t i = 0; i < c->nchanged; i++)
		if (strcmp(c->changed[i], table) == 0)
			return;
	char *t = c->nchanged < sizeof c->changed / sizeof c->changed[0]
	                  ? sy_strndup(table, strlen(table))
	                  : NULL;
	if (t == NULL)
		c->changed_all = true;
	else
		c->changed[c->nchanged++] = t;
}

static sy_client_rc oom(sy_client_error *err)
{
	return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
}

/* A new cache for version (its manifest loaded; NULL manifest for version 0). */
static sy_client_rc vis_new(sy_client *c, uint64_t version, struct sy_cl_visible **out,
                            sy_client_error *err)
{
	struct sy_cl_visible *v = sy_calloc(1, sizeof *v);
	if (v == NULL)
		return oom(err);
	v->version = version;
	if (version != 0) {
		v->m = sy_cl_schema_manifest(c, version);
		if (v->m == NULL) {
			vis_free(v);
			return sy_cl_fail(err, SY_CLIENT_ESTORE,
			                  "visible tables: schema %llu is not stored",
			                  (unsigned long long)version);
		}
		v->t = sy_calloc(v->m->table_count ? v->m->table_count : 1, sizeof *v->t);
		if (v->t == NULL) {
			vis_free(v);
			return oom(err);
		}
	}
	*out = v;
	return SY_CLIENT_OK;
}

/* The schema version now current (meta schema_version) and the one the tables are built for
 * (meta visible_schema; -1 when never built). */
static sy_client_rc versions(sy_client *c, uint64_t *current, int64_t *built, sy_client_error *err)
{
	sqlite3_stmt *st;
	sy_client_rc rc =
	        sy_cl_prepare_cached(c,
	                             "SELECT (SELECT value FROM meta WHERE key = 'schema_version'),"
	                             " (SELECT value FROM meta WHERE key = 'visible_schema')",
	                             &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	if (sqlite3_step(st) != SQLITE_ROW) {
		rc = sy_cl_store_fail(c, err, "visible tables");
	} else {
		*current = sqlite3_column_type(st, 0) == SQLITE_NULL
		                   ? 0
		                   : (uint64_t)sqlite3_column_int64(st, 0);
		*built = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1
		                                                   : sqlite3_column_int64(st, 1);
	}
	sy_cl_release(st);
	return rc;
}

static sy_client_rc exec_buf(sy_client *c, sy_buf *b, sy_client_error *err)
{
	if (b->failed) {
		sy_buf_free(b);
		return oom(err);
	}
	sy_client_rc rc = sy_cl_exec(c, b->data, err);
	sy_buf_free(b);
	return rc;
}

static sy_client_rc prepare_buf(sy_client *c, sy_buf *b, sqlite3_stmt **st, sy_client_error *err)
{
	if (b->failed) {
		sy_buf_free(b);
		return oom(err);
	}
	sy_client_rc rc = sy_cl_prepare(c, b->data, st, err);
	sy_buf_free(b);
	return rc;
}

/* The app's index on table over columns (a JSON array of column names, checked). */
static sy_client_rc make_index(sy_client *c, const sy_table *t, const char *columns, bool strict,
                               sy_client_error *err)
{
	sy_error e = {0};
	sy_json_doc *d = sy_json_parse(columns, strlen(columns), &e);
	const sy_json *a = d != NULL ? sy_json_doc_root(d) : NULL;
	sy_client_rc rc = SY_CLIENT_OK;
	if (a == NULL || a->type != SY_JSON_ARRAY || a->u.array.count == 0) {
		rc = strict ? sy_cl_fail(err, SY_CLIENT_EINVAL,
		                         "index: columns are a non-empty JSON array of names")
		            : SY_CLIENT_OK;
		goto done;
	}
	sy_buf b = SY_BUF_INIT;
	sy_buf iname = SY_BUF_INIT;
	sy_buf_printf(&iname, PREFIX "%s:%s", t->table_id, columns);
	sy_buf_puts(&b, "CREATE INDEX IF NOT EXISTS main.");
	if (!iname.failed)
		ident(&b, iname.data);
	else
		b.failed = true;
	sy_buf_free(&iname);
	sy_buf_puts(&b, " ON ");
	sy_cl_visible_ident(&b, t->table_id);
	sy_buf_putc(&b, '(');
	for (size_t i = 0; i < a->u.array.count; i++) {
		const sy_json *n = a->u.array.items[i];
		const char *name = n->type == SY_JSON_STRING ? n->u.string.data : NULL;
		const sy_field *fd = name != NULL ? sy_table_field(t, name, n->u.string.len) : NULL;
		bool known = name != NULL &&
		             (strcmp(name, "_state") == 0 || strcmp(name, t->pk.field_id) == 0 ||
		              (fd != NULL && has_column(t, (size_t)(fd - t->fields))));
		if (!known) {
			sy_buf_free(&b);
			/* a column the schema no longer has: the index is not made again */
			rc = strict ? sy_cl_fail(err, SY_CLIENT_EINVAL,
			                         "index: %s has no column %s", t->table_id,
			                         name != NULL ? name : "(not a string)")
			            : SY_CLIENT_OK;
			goto done;
		}
		if (i > 0)
			sy_buf_putc(&b, ',');
		ident(&b, name);
	}
	sy_buf_putc(&b, ')');
	rc = exec_buf(c, &b, err);
done:
	sy_json_doc_free(d);
	return rc;
}

/* Drops every visible table and makes those of version's manifest, empty, with the app's
 * indexes. */
static sy_client_rc make_tables(sy_client *c, struct sy_cl_visible *v, sy_client_error *err)
{
	sqlite3_stmt *st;
	sy_client_rc rc = sy_cl_prepare(c,
	                                "SELECT name FROM main.sqlite_master WHERE type = 'table'"
	                                " AND substr(name, 1, 8) = '" PREFIX "'",
	                                &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sy_buf drops = SY_BUF_INIT;
	while (sqlite3_step(st) == SQLITE_ROW) {
		sy_buf_puts(&drops, "DROP TABLE main.");
		ident(&drops, (const char *)sqlite3_column_text(st, 0));
		sy_buf_puts(&drops, ";");
	}
	sqlite3_finalize(st);
	if (drops.data != NULL && (rc = exec_buf(c, &drops, err)) != SY_CLIENT_OK)
		return rc;
	sy_buf_free(&drops);
	for (size_t i = 0; v->m != NULL && i < v->m->table_count; i++) {
		const sy_table *t = &v->m->tables[i];
		sy_buf b = SY_BUF_INIT;
		sy_buf_puts(&b, "CREATE TABLE main.");
		sy_cl_visible_ident(&b, t->table_id);
		sy_buf_putc(&b, '(');
		ident(&b, t->pk.field_id);
		sy_buf_printf(&b, " %s PRIMARY KEY NOT NULL", col_type(t->pk.type));
		for (size_t f = 0; f < t->field_count; f++) {
			if (!has_column(t, f))
				continue;
			sy_buf_putc(&b, ',');
			ident(&b, t->fields[f].field_id);
			sy_buf_printf(&b, " %s", col_type(t->fields[f].type));
		}
		sy_buf_puts(&b, ",\"_state\" TEXT NOT NULL)");
		if ((rc = exec_buf(c, &b, err)) != SY_CLIENT_OK)
			return rc;
	}
	if (v->m == NULL)
		return SY_CLIENT_OK;
	if ((rc = sy_cl_prepare(c, "SELECT tbl, columns FROM visible_indexes ORDER BY 1, 2", &st,
	                        err)) != SY_CLIENT_OK)
		return rc;
	while (rc == SY_CLIENT_OK && sqlite3_step(st) == SQLITE_ROW) {
		const char *tbl = (const char *)sqlite3_column_text(st, 0);
		const sy_table *t = sy_manifest_table(v->m, tbl, strlen(tbl));
		if (t != NULL)
			rc = make_index(c, t, (const char *)sqlite3_column_text(st, 1), false, err);
	}
	sqlite3_finalize(st);
	return rc;
}

/* The statements of table i, prepared on first use. */
static sy_client_rc table_stmts(sy_client *c, struct sy_cl_visible *v, size_t i,
                                sy_client_error *err)
{
	vis_table *vt = &v->t[i];
	if (vt->upsert != NULL)
		return SY_CLIENT_OK;
	const sy_table *t = &v->m->tables[i];
	sy_buf b = SY_BUF_INIT;
	sy_buf_puts(&b, "INSERT INTO main.");
	sy_cl_visible_ident(&b, t->table_id);
	sy_buf_putc(&b, '(');
	ident(&b, t->pk.field_id);
	for (size_t f = 0; f < t->field_count; f++) {
		if (!has_column(t, f))
			continue;
		sy_buf_putc(&b, ',');
		ident(&b, t->fields[f].field_id);
	}
	sy_buf_puts(&b, ",\"_state\") VALUES (?1");
	for (size_t f = 0; f < t->field_count; f++) {
		if (has_column(t, f))
			sy_buf_printf(&b, ",?%zu", f + 2);
	}
	sy_buf_printf(&b, ",?%zu) ON CONFLICT(", t->field_count + 2);
	ident(&b, t->pk.field_id);
	sy_buf_puts(&b, ") DO UPDATE SET ");
	for (size_t f = 0; f < t->field_count; f++) {
		if (!has_column(t, f))
			continue;
		ident(&b, t->fields[f].field_id);
		sy_buf_puts(&b, "=excluded.");
		ident(&b, t->fields[f].field_id);
		sy_buf_putc(&b, ',');
	}
	sy_buf_puts(&b, "\"_state\"=excluded.\"_state\" WHERE (");
	for (size_t f = 0; f < t->field_count; f++) {
		if (!has_column(t, f))
			continue;
		ident(&b, t->fields[f].field_id);
		sy_buf_putc(&b, ',');
	}
	sy_buf_puts(&b, "\"_state\") IS NOT (");
	for (size_t f = 0; f < t->field_count; f++) {
		if (!has_column(t, f))
			continue;
		sy_buf_puts(&b, "excluded.");
		ident(&b, t->fields[f].field_id);
		sy_buf_putc(&b, ',');
	}
	sy_buf_puts(&b, "excluded.\"_state\")");
	sy_client_rc rc = prepare_buf(c, &b, &vt->upsert, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sy_buf_puts(&b, "DELETE FROM main.");
	sy_cl_visible_ident(&b, t->table_id);
	sy_buf_puts(&b, " WHERE ");
	ident(&b, t->pk.field_id);
	sy_buf_puts(&b, " = ?1");
	if ((rc = prepare_buf(c, &b, &vt->del, err)) != SY_CLIENT_OK)
		return rc;
	/* verify: the row as the overlay has it, every column compared with IS */
	sy_buf_puts(&b, "SELECT count(*) FROM main.");
	sy_cl_visible_ident(&b, t->table_id);
	sy_buf_puts(&b, " WHERE ");
	ident(&b, t->pk.field_id);
	sy_buf_puts(&b, " = ?1");
	for (size_t f = 0; f < t->field_count; f++) {
		if (!has_column(t, f))
			continue;
		sy_buf_puts(&b, " AND ");
		ident(&b, t->fields[f].field_id);
		sy_buf_printf(&b, " IS ?%zu", f + 2);
	}
	sy_buf_printf(&b, " AND \"_state\" IS ?%zu", t->field_count + 2);
	return prepare_buf(c, &b, &vt->check, err);
}

/* Binds one wire value as its column holds it. */
static int bind_wire(sqlite3_stmt *st, int i, const sy_json *v)
{
	if (v == NULL || v->type == SY_JSON_NULL)
		return sqlite3_bind_null(st, i);
	switch (v->type) {
	case SY_JSON_TRUE: return sqlite3_bind_int(st, i, 1);
	case SY_JSON_FALSE: return sqlite3_bind_int(st, i, 0);
	case SY_JSON_STRING:
		return sqlite3_bind_text(st, i, v->u.string.data, (int)v->u.string.len,
		                         SQLITE_TRANSIENT);
	case SY_JSON_NUMBER:
		if (v->u.number.is_integer) {
			char *end;
			long long n = strtoll(v->u.number.text, &end, 10);
			if (end == v->u.number.text + v->u.number.text_len)
				return sqlite3_bind_int64(st, i, n);
		}
		return sqlite3_bind_double(st, i, v->u.number.value);
	default: {
		size_t len;
		char *text = sy_cl_jcs(v, &len);
		if (text == NULL)
			return SQLITE_NOMEM;
		int rc = sqlite3_bind_text(st, i, text, (int)len, SQLITE_TRANSIENT);
		sy_free(text);
		return rc;
	}
	}
}

/* Binds (pk, fields..., _state) of the visible row row_json to st. */
static sy_client_rc bind_row(sy_client *c, const sy_table *t, sqlite3_stmt *st, const char *pk,
                             const char *row_json, sy_client_row_state state, sy_client_error *err)
{
	sy_error e = {0};
	sy_json_doc *pd = sy_json_parse(pk, strlen(pk), &e);
	sy_json_doc *rd = sy_json_parse(row_json, strlen(row_json), &e);
	sy_client_rc rc = SY_CLIENT_OK;
	if (pd == NULL || rd == NULL) {
		rc = sy_cl_fail(err, e.code == SY_ERR_NOMEM ? SY_CLIENT_ENOMEM : SY_CLIENT_ESTORE,
		                "visible row %s %s: %s", t->table_id, pk, e.message);
		goto done;
	}
	const sy_json *row = sy_json_doc_root(rd);
	int s = bind_wire(st, 1, sy_json_doc_root(pd));
	for (size_t f = 0; s == SQLITE_OK && f < t->field_count; f++)
		s = bind_wire(st, (int)f + 2, sy_json_get(row, t->fields[f].field_id));
	if (s == SQLITE_OK)
		s = sqlite3_bind_text(st, (int)t->field_count + 2, sy_client_row_state_name(state),
		                      -1, SQLITE_STATIC);
	if (s != SQLITE_OK)
		rc = sy_cl_store_fail(c, err, "visible row");
done:
	sy_json_doc_free(pd);
	sy_json_doc_free(rd);
	return rc;
}

/* Brings the visible row of (table, pk) up to date. */
static sy_client_rc apply(sy_client *c, struct sy_cl_visible *v, const char *table, const char *pk,
                          sy_client_error *err)
{
	const sy_table *t = v->m != NULL ? sy_manifest_table(v->m, table, strlen(table)) : NULL;
	if (t == NULL)
		return SY_CLIENT_OK; /* a table the current schema does not have */
	size_t i = (size_t)(t - v->m->tables);
	sy_client_rc rc = table_stmts(c, v, i, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sy_cl_overlay o;
	if ((rc = sy_cl_overlay_compute(c, table, pk, &o, err)) != SY_CLIENT_OK)
		return rc;
	sqlite3_stmt *st = o.visible ? v->t[i].upsert : v->t[i].del;
	if (o.visible)
		rc = bind_row(c, t, st, pk, o.row, o.state, err);
	else {
		sy_error e = {0};
		sy_json_doc *pd = sy_json_parse(pk, strlen(pk), &e);
		if (pd == NULL || bind_wire(st, 1, sy_json_doc_root(pd)) != SQLITE_OK)
			rc = sy_cl_fail(err, SY_CLIENT_ESTORE, "visible row %s %s: bad pk", table,
			                pk);
		sy_json_doc_free(pd);
	}
	sy_free(o.row);
	if (rc == SY_CLIENT_OK) {
		int s = sqlite3_step(st);
		if (s != SQLITE_DONE)
			rc = sy_cl_store_fail(c, err, "visible row");
		else if (sqlite3_changes(c->db) > 0)
			changed_add(c, table);
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc;
}

/* Applies every (tbl, pk) that sql returns. */
static sy_client_rc apply_all(sy_client *c, struct sy_cl_visible *v, const char *sql,
                              sy_client_error *err)
{
	sqlite3_stmt *st;
	sy_client_rc rc = sy_cl_prepare(c, sql, &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	int s;
	while (rc == SY_CLIENT_OK && (s = sqlite3_step(st)) == SQLITE_ROW)
		rc = apply(c, v, (const char *)sqlite3_column_text(st, 0),
		           (const char *)sqlite3_column_text(st, 1), err);
	if (rc == SY_CLIENT_OK && s != SQLITE_DONE)
		rc = sy_cl_store_fail(c, err, "visible tables");
	sqlite3_finalize(st);
	return rc;
}

/* What records the (table, pk) a statement touches (see the head comment). */
#define RECORD(t, when, keys)                                                                      \
	"CREATE TEMP TRIGGER IF NOT EXISTS visible_" t " " when " " TRACKING                       \
	" BEGIN INSERT OR IGNORE INTO visible_dirty VALUES " keys "; END;"
/* clang-format off */
static const char *const triggers =
	RECORD("rows_insert", "AFTER INSERT ON main.rows", "(NEW.tbl, NEW.pk)")
	RECORD("rows_update", "AFTER UPDATE ON main.rows", "(OLD.tbl, OLD.pk), (NEW.tbl, NEW.pk)")
	RECORD("rows_delete", "AFTER DELETE ON main.rows", "(OLD.tbl, OLD.pk)")
	RECORD("intents_insert", "AFTER INSERT ON main.intents", "(NEW.tbl, NEW.pk)")
	RECORD("intents_update", "AFTER UPDATE OF state ON main.intents", "(NEW.tbl, NEW.pk)");
/* clang-format on */

/* Inside a write transaction: the tables made again for version and filled from scratch. */
static sy_client_rc build(sy_client *c, uint64_t version, sy_client_error *err)
{
	assert(!sqlite3_get_autocommit(c->db));
	vis_free(c->vis);
	c->vis = NULL;
	struct sy_cl_visible *v = NULL;
	sy_client_rc rc = vis_new(c, version, &v, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	c->vis = v;
	if ((rc = make_tables(c, v, err)) != SY_CLIENT_OK)
		return rc;
	for (size_t i = 0; v->m != NULL && i < v->m->table_count; i++)
		changed_add(c, v->m->tables[i].table_id);
	/* in index order, no sort held in memory; a row with intents is written twice, the
	 * same both times */
	if ((rc = apply_all(c, v, "SELECT tbl, pk FROM rows", err)) != SY_CLIENT_OK ||
	    (rc = apply_all(c, v, "SELECT DISTINCT tbl, pk FROM intents", err)) != SY_CLIENT_OK)
		return rc;
	if ((rc = sy_cl_meta_set_int(c, "visible_schema", (int64_t)version, err)) != SY_CLIENT_OK ||
	    (rc = sy_cl_exec(c, triggers, err)) != SY_CLIENT_OK)
		return rc;
	return sy_cl_exec(c, "DELETE FROM temp.visible_dirty", err);
}

/* The hook run just before a statement replaces every server row (a rebuild's last page):
 * the tables are built from scratch at the commit, and until then nothing is recorded,
 * not even the keys of the rows deleted (SQLite deletes every row at once only from a
 * table without triggers; with them it first collects every key, in memory). */
static sy_client_rc rows_replacing(sy_client *c, sy_client_error *err)
{
	assert(!sqlite3_get_autocommit(c->db));
	return sy_cl_exec(c,
	                  "DELETE FROM meta WHERE key = 'visible_schema';"
	                  " DROP TRIGGER temp.visible_rows_insert;"
	                  " DROP TRIGGER temp.visible_rows_update;"
	                  " DROP TRIGGER temp.visible_rows_delete",
	                  err);
}

/* The hook run before every COMMIT (see the head comment). */
static sy_client_rc before_commit(sy_client *c, sy_client_error *err)
{
	assert(!sqlite3_get_autocommit(c->db));
	uint64_t current = 0;
	int64_t built = -1;
	sy_client_rc rc = versions(c, &current, &built, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	if (built < 0 || (uint64_t)built != current)
		return build(c, current, err);
	if (c->vis == NULL || c->vis->version != current) {
		/* the tables are current in the file; the cache is not (a rolled-back build) */
		vis_free(c->vis);
		c->vis = NULL;
		if ((rc = vis_new(c, current, &c->vis, err)) != SY_CLIENT_OK)
			return rc;
	}
	sqlite3_stmt *st;
	if ((rc = sy_cl_prepare_cached(c, "SELECT EXISTS (SELECT 1 FROM temp.visible_dirty)", &st,
	                               err)) != SY_CLIENT_OK)
		return rc;
	bool any = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) != 0;
	sy_cl_release(st);
	if (!any)
		return SY_CLIENT_OK;
	if ((rc = apply_all(c, c->vis, "SELECT tbl, pk FROM temp.visible_dirty", err)) !=
	    SY_CLIENT_OK)
		return rc;
	if ((rc = sy_cl_prepare_cached(c, "DELETE FROM temp.visible_dirty", &st, err)) !=
	    SY_CLIENT_OK)
		return rc;
	return sy_cl_run_cached(c, st, err);
}

sy_client_rc sy_cl_visible_open(sy_client *c, sy_client_error *err)
{
	sy_client_rc rc = sy_cl_exec(c,
	                             "CREATE TEMP TABLE visible_dirty(tbl TEXT NOT NULL,"
	                             " pk TEXT NOT NULL, PRIMARY KEY(tbl, pk)) WITHOUT ROWID",
	                             err);
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_exec(c, triggers, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	c->before_commit = before_commit;
	c->rows_replacing = rows_replacing;
	uint64_t current = 0;
	int64_t built = -1;
	if ((rc = versions(c, &current, &built, err)) != SY_CLIENT_OK)
		return rc;
	if (built >= 0 && (uint64_t)built == current)
		return vis_new(c, current, &c->vis, err);
	/* a store from before the visible tables, or one whose build never committed */
	if ((rc = sy_cl_begin(c, err)) != SY_CLIENT_OK)
		return rc;
	return sy_cl_commit(c, err); /* before_commit builds them */
}

sy_client_rc sy_client_index(sy_client *c, const char *table, const char *columns_json,
                             sy_client_error *err)
{
	if (c->manifest == NULL)
		return sy_cl_fail(err, SY_CLIENT_ESTATE, "no schema yet: connect first");
	const sy_table *t = sy_manifest_table(c->manifest, table, strlen(table));
	if (t == NULL)
		return sy_cl_fail(err, SY_CLIENT_EINVAL, "index: no synced table %s", table);
	sy_error e = {0};
	sy_json_doc *d = sy_json_parse(columns_json, strlen(columns_json), &e);
	if (d == NULL)
		return sy_cl_fail(err, SY_CLIENT_EINVAL, "index: %s", e.message);
	char *jcs = sy_cl_jcs(sy_json_doc_root(d), NULL);
	sy_json_doc_free(d);
	if (jcs == NULL)
		return oom(err);
	sqlite3_stmt *st = NULL;
	sy_client_rc rc = sy_cl_begin(c, err);
	if (rc == SY_CLIENT_OK && (rc = make_index(c, t, jcs, true, err)) == SY_CLIENT_OK &&
	    (rc = sy_cl_prepare(c,
	                        "INSERT OR IGNORE INTO visible_indexes(tbl, columns) VALUES (?, ?)",
	                        &st, err)) == SY_CLIENT_OK) {
		sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, jcs, -1, SQLITE_STATIC);
		rc = sy_cl_run(c, st, err);
	}
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_commit(c, err);
	else
		sy_cl_rollback(c);
	sy_free(jcs);
	return rc;
}

static void problem(sy_buf *rep, size_t *bad, const char *table, const char *pk, const char *what)
{
	(*bad)++;
	sy_buf_printf(rep, "visible %s %s: %s\n", table, pk != NULL ? pk : "", what);
}

void sy_cl_visible_verify(sy_client *c, sy_buf *rep, size_t *bad)
{
	struct sy_cl_visible *v = c->vis;
	sqlite3_stmt *st = NULL;
	uint64_t current = 0;
	int64_t built = -1;
	if (v == NULL || versions(c, &current, &built, NULL) != SY_CLIENT_OK || built < 0 ||
	    (uint64_t)built != current || v->version != current) {
		problem(rep, bad, "tables", NULL, "not built for the current schema");
		return;
	}
	if (sqlite3_get_autocommit(c->db) &&
	    sy_cl_prepare(c, "SELECT tbl, pk FROM temp.visible_dirty", &st, NULL) == SY_CLIENT_OK) {
		while (sqlite3_step(st) == SQLITE_ROW)
			problem(rep, bad, (const char *)sqlite3_column_text(st, 0),
			        (const char *)sqlite3_column_text(st, 1),
			        "changed outside a commit");
		sqlite3_finalize(st);
	}
	for (size_t i = 0; v->m != NULL && i < v->m->table_count; i++) {
		const sy_table *t = &v->m->tables[i];
		int64_t want = 0;
		if (table_stmts(c, v, i, NULL) != SY_CLIENT_OK ||
		    sy_cl_prepare(c,
		                  "SELECT pk FROM rows WHERE tbl = ?1 UNION"
		                  " SELECT pk FROM intents WHERE tbl = ?1 ORDER BY 1",
		                  &st, NULL) != SY_CLIENT_OK) {
			problem(rep, bad, t->table_id, NULL, "cannot be read");
			continue;
		}
		sqlite3_bind_text(st, 1, t->table_id, -1, SQLITE_STATIC);
		while (sqlite3_step(st) == SQLITE_ROW) {
			const char *pk = (const char *)sqlite3_column_text(st, 0);
			sy_cl_overlay o;
			if (sy_cl_overlay_compute(c, t->table_id, pk, &o, NULL) != SY_CLIENT_OK) {
				problem(rep, bad, t->table_id, pk, "overlay failed");
				continue;
			}
			if (o.visible) {
				want++;
				sqlite3_stmt *ck = v->t[i].check;
				if (bind_row(c, t, ck, pk, o.row, o.state, NULL) != SY_CLIENT_OK ||
				    sqlite3_step(ck) != SQLITE_ROW ||
				    sqlite3_column_int(ck, 0) != 1)
					problem(rep, bad, t->table_id, pk,
					        "differs from the overlay (or is missing)");
				sqlite3_reset(ck);
				sqlite3_clear_bindings(ck);
			}
			sy_free(o.row);
		}
		sqlite3_finalize(st);
		sy_buf b = SY_BUF_INIT;
		sy_buf_puts(&b, "SELECT count(*) FROM main.");
		sy_cl_visible_ident(&b, t->table_id);
		if (b.failed || sy_cl_prepare(c, b.data, &st, NULL) != SY_CLIENT_OK) {
			problem(rep, bad, t->table_id, NULL, "cannot be counted");
		} else {
			if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_int64(st, 0) != want)
				problem(rep, bad, t->table_id, NULL,
				        "holds rows the overlay does not show");
			sqlite3_finalize(st);
		}
		sy_buf_free(&b);
	}
}
