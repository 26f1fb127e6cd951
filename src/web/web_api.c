/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The C face the worker (worker.ts) calls through the WebAssembly module's exports:
 * libsynchro-client's functions with strings in and JSON text out, so that JavaScript
 * never reads a C struct. Each call's failure is kept (sy_web_error_rc/_message) until
 * the next call; returned strings are new (sy_web_free). The worker is the only caller
 * and calls one function at a time (one event loop, no threads).
 *
 * query: read-only SQL over the visible rows. The store's own tables are never in
 * reach of the app's SQL: each call copies the visible state (sy_client_rows) of the
 * tables the statement reads into a new in-memory database with one table per manifest
 * table (the pk's field and every field as columns, plus _state), and runs the statement
 * there; an authorizer allows only reading those tables (no ATTACH, PRAGMA or writes).
 * The listener records the tables whose rows changed, for live queries (sy_web_changed).
 * Layer: top of src/web (doc/hacking.md).
 */
#include "config.h"

#include <emscripten.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "client_internal.h"
#include "client_json.h"
#include "synchro/alloc.h"
#include "synchro/buf.h"
#include "synchro/client.h"
#include "web.h"

static sy_client_error last;
static double next_due;

/* The tables whose visible rows changed since the last sy_web_changed(). */
static char *changed[64];
static size_t changed_count;
static bool changed_all; /* more tables than changed[] holds */

static void on_event(void *ctx, sy_client_event_kind kind, const char *table,
                     const char *pk_json, const char *mutation_id)
{
	(void)ctx;
	(void)pk_json;
	(void)mutation_id;
	if (kind != SY_CLIENT_EVENT_ROW || table == NULL || changed_all)
		return;
	for (size_t i = 0; i < changed_count; i++)
		if (strcmp(changed[i], table) == 0)
			return;
	char *t = changed_count < sizeof changed / sizeof changed[0] ? strdup(table) : NULL;
	if (t == NULL) {
		changed_all = true;
		return;
	}
	changed[changed_count++] = t;
}

static void ok(void)
{
	last.rc = SY_CLIENT_OK;
	last.message[0] = '\0';
}

static char *steal(sy_buf *b)
{
	if (b->failed) {
		sy_buf_free(b);
		last.rc = SY_CLIENT_ENOMEM;
		snprintf(last.message, sizeof last.message, "out of memory");
		return NULL;
	}
	return sy_buf_steal(b, NULL);
}

EMSCRIPTEN_KEEPALIVE int sy_web_error_rc(void)
{
	return (int)last.rc;
}

EMSCRIPTEN_KEEPALIVE const char *sy_web_error_name(void)
{
	return sy_client_rc_name(last.rc);
}

EMSCRIPTEN_KEEPALIVE const char *sy_web_error_message(void)
{
	return last.message;
}

EMSCRIPTEN_KEEPALIVE void sy_web_free(void *p)
{
	sy_client_free(p);
}

/* Opens the store at path (its files already opened by the worker) with fetch's transport. */
EMSCRIPTEN_KEEPALIVE sy_client *sy_web_open(const char *path, const char *url,
                                            unsigned poll_interval_ms)
{
	sy_client_transport tr = sy_web_transport();
	sy_client_options opts = {
	        .url = url,
	        .transport = &tr,
	        .poll_interval_ms = poll_interval_ms,
	        .listener = on_event};
	sy_client *c = NULL;
	ok();
	if (sy_client_open(path, &opts, &c, &last) != SY_CLIENT_OK)
		return NULL;
	return c;
}

EMSCRIPTEN_KEEPALIVE void sy_web_close(sy_client *c)
{
	sy_client_close(c);
}

/* One step; the clock time of the next due step is sy_web_next_due(). */
EMSCRIPTEN_KEEPALIVE int sy_web_step(sy_client *c)
{
	int64_t due = 0;
	ok();
	sy_client_rc rc = sy_client_step(c, &due, &last);
	next_due = (double)due;
	return (int)rc;
}

EMSCRIPTEN_KEEPALIVE double sy_web_next_due(void)
{
	return next_due;
}

EMSCRIPTEN_KEEPALIVE void sy_web_kick(sy_client *c)
{
	sy_client_kick(c);
}

EMSCRIPTEN_KEEPALIVE sy_client_txn *sy_web_begin(sy_client *c, int atomic)
{
	sy_client_txn *t = NULL;
	ok();
	if (sy_client_begin(c, atomic != 0, &t, &last) != SY_CLIENT_OK)
		return NULL;
	return t;
}

/* op: 'i'nsert, 'u'pdate, 'd'elete. The new intent's mutation id (static), or NULL. */
EMSCRIPTEN_KEEPALIVE const char *sy_web_write(sy_client_txn *t, int op, const char *table,
                                              const char *pk_json, const char *columns_json)
{
	static char id[SY_CLIENT_ID_LEN + 1];
	sy_client_rc rc;
	ok();
	if (op == 'i')
		rc = sy_client_insert(t, table, pk_json, columns_json, id, &last);
	else if (op == 'u')
		rc = sy_client_update(t, table, pk_json, columns_json, id, &last);
	else
		rc = sy_client_delete(t, table, pk_json, id, &last);
	return rc == SY_CLIENT_OK ? id : NULL;
}

EMSCRIPTEN_KEEPALIVE int sy_web_commit(sy_client_txn *t)
{
	ok();
	return (int)sy_client_commit(t, &last);
}

EMSCRIPTEN_KEEPALIVE void sy_web_rollback(sy_client_txn *t)
{
	sy_client_rollback(t);
}

static void row_member(sy_buf *b, const char *pk_json, const char *row_json,
                       sy_client_row_state state)
{
	bool f = true;
	sy_buf_putc(b, '{');
	sy_cl_json_raw(b, &f, "pk", pk_json);
	sy_cl_json_member(b, &f, "state", sy_client_row_state_name(state));
	sy_cl_json_raw(b, &f, "row", row_json);
	sy_buf_putc(b, '}');
}

/* {"pk":..,"state":..,"row":{..} or null}, or NULL (ENOTFOUND: no such row). */
EMSCRIPTEN_KEEPALIVE char *sy_web_get(sy_client *c, const char *table, const char *pk_json)
{
	char *row = NULL;
	sy_client_row_state state;
	ok();
	if (sy_client_get(c, table, pk_json, &row, &state, &last) != SY_CLIENT_OK)
		return NULL;
	sy_buf b = SY_BUF_INIT;
	row_member(&b, pk_json, row, state);
	sy_client_free(row);
	return steal(&b);
}

typedef struct {
	sy_buf *b;
	bool first;
} listing;

static void on_row(void *ctx, const char *pk_json, const char *row_json, sy_client_row_state state)
{
	listing *l = ctx;
	if (!l->first)
		sy_buf_putc(l->b, ',');
	l->first = false;
	row_member(l->b, pk_json, row_json, state);
}

/* Every known row of table, in pk order: [{"pk","state","row"}, ...]. */
EMSCRIPTEN_KEEPALIVE char *sy_web_rows(sy_client *c, const char *table)
{
	sy_buf b = SY_BUF_INIT;
	listing l = {&b, true};
	ok();
	sy_buf_putc(&b, '[');
	if (sy_client_rows(c, table, on_row, &l, &last) != SY_CLIENT_OK) {
		sy_buf_free(&b);
		return NULL;
	}
	sy_buf_putc(&b, ']');
	return steal(&b);
}

static void on_intent(void *ctx, const sy_client_intent *i)
{
	listing *l = ctx;
	if (!l->first)
		sy_buf_putc(l->b, ',');
	l->first = false;
	sy_cl_intent_json(l->b, i);
}

/* The intents in local order (all 0: the unsettled ones), as synchro-cli pending --json. */
EMSCRIPTEN_KEEPALIVE char *sy_web_intents(sy_client *c, int all)
{
	sy_buf b = SY_BUF_INIT;
	listing l = {&b, true};
	ok();
	sy_buf_putc(&b, '[');
	if (sy_client_intents(c, all != 0, on_intent, &l, &last) != SY_CLIENT_OK) {
		sy_buf_free(&b);
		return NULL;
	}
	sy_buf_putc(&b, ']');
	return steal(&b);
}

/* The status as synchro-cli status --json prints it. */
EMSCRIPTEN_KEEPALIVE char *sy_web_status(sy_client *c)
{
	sy_client_status s;
	ok();
	if (sy_client_status_get(c, &s, &last) != SY_CLIENT_OK)
		return NULL;
	sy_buf b = SY_BUF_INIT;
	sy_cl_status_json(&b, &s);
	return steal(&b);
}

EMSCRIPTEN_KEEPALIVE char *sy_web_explain(sy_client *c, const char *mutation_id)
{
	char *text = NULL;
	ok();
	if (sy_client_explain(c, mutation_id, &text, &last) != SY_CLIENT_OK)
		return NULL;
	return text;
}

/* The tables changed since the last call, as a JSON array; "*" when they were too many. */
EMSCRIPTEN_KEEPALIVE char *sy_web_changed(void)
{
	sy_buf b = SY_BUF_INIT;
	ok();
	sy_buf_putc(&b, '[');
	if (changed_all)
		sy_cl_json_str(&b, "*");
	for (size_t i = 0; i < changed_count; i++) {
		if (i > 0 || changed_all)
			sy_buf_putc(&b, ',');
		sy_cl_json_str(&b, changed[i]);
		free(changed[i]);
	}
	sy_buf_putc(&b, ']');
	changed_count = 0;
	changed_all = false;
	return steal(&b);
}

/* --- query ------------------------------------------------------------------------- */

typedef struct {
	const sy_manifest *m;
	bool reads[256]; /* by manifest table index */
	bool denied;
	char what[96]; /* the first thing refused, for the message */
} q_auth;

static int q_table(const sy_manifest *m, const char *name)
{
	for (size_t i = 0; i < m->table_count && i < 256; i++)
		if (name != NULL && strcmp(m->tables[i].table_id, name) == 0)
			return (int)i;
	return -1;
}

static const char *q_action(int action)
{
	switch (action) {
	case SQLITE_INSERT:
		return "INSERT INTO";
	case SQLITE_UPDATE:
		return "UPDATE of";
	case SQLITE_DELETE:
		return "DELETE FROM";
	case SQLITE_ATTACH:
		return "ATTACH";
	case SQLITE_DETACH:
		return "DETACH";
	case SQLITE_PRAGMA:
		return "PRAGMA";
	case SQLITE_TRANSACTION:
		return "a transaction:";
	default:
		return "changing";
	}
}

static int q_authorize(void *ctx, int action, const char *a, const char *b, const char *db,
                       const char *trigger)
{
	q_auth *q = ctx;
	(void)b;
	(void)trigger;
	if (action == SQLITE_SELECT || action == SQLITE_FUNCTION || action == SQLITE_RECURSIVE)
		return SQLITE_OK;
	/* db is NULL for a table read without a column (count(*)) */
	if (action == SQLITE_READ && (db == NULL || strcmp(db, "main") == 0)) {
		int t = q_table(q->m, a);
		if (t >= 0) {
			q->reads[t] = true;
			return SQLITE_OK;
		}
	}
	if (!q->denied) {
		if (action == SQLITE_READ)
			snprintf(q->what, sizeof q->what, "reading %s", a ? a : "?");
		else
			snprintf(q->what, sizeof q->what, "%s %s", q_action(action), a ? a : "");
	}
	q->denied = true;
	return SQLITE_DENY;
}

static void q_ident(sy_buf *b, const char *name)
{
	sy_buf_putc(b, '"');
	for (const char *p = name; *p; p++) {
		if (*p == '"')
			sy_buf_putc(b, '"');
		sy_buf_putc(b, *p);
	}
	sy_buf_putc(b, '"');
}

static bool q_fail(sqlite3 *db, const char *what)
{
	last.rc = SY_CLIENT_ESTORE;
	snprintf(last.message, sizeof last.message, "query: %s: %s", what, sqlite3_errmsg(db));
	return false;
}

/* CREATE TABLE "t"(pk, fields..., _state) for every manifest table. */
static bool q_schema(sqlite3 *db, const sy_manifest *m)
{
	for (size_t i = 0; i < m->table_count; i++) {
		const sy_table *t = &m->tables[i];
		sy_buf b = SY_BUF_INIT;
		sy_buf_puts(&b, "CREATE TABLE ");
		q_ident(&b, t->table_id);
		sy_buf_putc(&b, '(');
		q_ident(&b, t->pk.field_id);
		for (size_t f = 0; f < t->field_count; f++) {
			sy_buf_putc(&b, ',');
			q_ident(&b, t->fields[f].field_id);
		}
		sy_buf_puts(&b, ",_state)");
		if (b.failed) {
			sy_buf_free(&b);
			last.rc = SY_CLIENT_ENOMEM;
			snprintf(last.message, sizeof last.message, "out of memory");
			return false;
		}
		int rc = sqlite3_exec(db, b.data, NULL, NULL, NULL);
		sy_buf_free(&b);
		if (rc != SQLITE_OK)
			return q_fail(db, "the tables");
	}
	return true;
}

typedef struct {
	sqlite3_stmt *ins;
	bool failed;
} q_fill;

static void q_row(void *ctx, const char *pk_json, const char *row_json, sy_client_row_state state)
{
	q_fill *f = ctx;
	if (f->failed || row_json == NULL)
		return; /* deleted: not visible */
	sqlite3_bind_text(f->ins, 1, pk_json, -1, SQLITE_STATIC);
	sqlite3_bind_text(f->ins, 2, row_json, -1, SQLITE_STATIC);
	sqlite3_bind_text(f->ins, 3, sy_client_row_state_name(state), -1, SQLITE_STATIC);
	if (sqlite3_step(f->ins) != SQLITE_DONE)
		f->failed = true;
	sqlite3_reset(f->ins);
}

/* Copies table t's visible rows into its in-memory table. */
static bool q_load(sy_client *c, sqlite3 *db, const sy_table *t)
{
	sy_buf b = SY_BUF_INIT;
	sy_buf_puts(&b, "INSERT INTO ");
	q_ident(&b, t->table_id);
	sy_buf_puts(&b, " VALUES(json_extract(?1,'$')");
	for (size_t f = 0; f < t->field_count; f++)
		sy_buf_printf(&b, ",json_extract(?2,?%zu)", f + 4);
	sy_buf_puts(&b, ",?3)");
	if (b.failed) {
		sy_buf_free(&b);
		last.rc = SY_CLIENT_ENOMEM;
		snprintf(last.message, sizeof last.message, "out of memory");
		return false;
	}
	q_fill fill = {NULL, false};
	int rc = sqlite3_prepare_v2(db, b.data, -1, &fill.ins, NULL);
	sy_buf_free(&b);
	if (rc != SQLITE_OK)
		return q_fail(db, "loading");
	for (size_t f = 0; f < t->field_count && rc == SQLITE_OK; f++) {
		/* the JSON path $."field" */
		char *path = sqlite3_mprintf("$.\"%w\"", t->fields[f].field_id);
		rc = path ? sqlite3_bind_text(fill.ins, (int)f + 4, path, -1, sqlite3_free) : SQLITE_NOMEM;
	}
	if (rc != SQLITE_OK) {
		sqlite3_finalize(fill.ins);
		return q_fail(db, "loading");
	}
	sy_client_rc crc = sy_client_rows(c, t->table_id, q_row, &fill, &last);
	sqlite3_finalize(fill.ins);
	if (crc != SY_CLIENT_OK)
		return false;
	if (fill.failed)
		return q_fail(db, "loading");
	return true;
}

static bool q_bind(sqlite3 *db, sqlite3_stmt *st, const char *params_json)
{
	int want = sqlite3_bind_parameter_count(st), got = 0;
	if (params_json != NULL && want > 0) {
		sqlite3_stmt *each = NULL;
		if (sqlite3_prepare_v2(db, "SELECT value FROM json_each(?1)", -1, &each, NULL) != SQLITE_OK)
			return q_fail(db, "the parameters");
		sqlite3_bind_text(each, 1, params_json, -1, SQLITE_STATIC);
		int rc;
		while ((rc = sqlite3_step(each)) == SQLITE_ROW && got < want)
			sqlite3_bind_value(st, ++got, sqlite3_column_value(each, 0));
		if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
			sqlite3_finalize(each);
			return q_fail(db, "the parameters (a JSON array)");
		}
		sqlite3_finalize(each);
	}
	if (got != want) {
		last.rc = SY_CLIENT_EINVAL;
		snprintf(last.message, sizeof last.message,
		         "query: the statement takes %d parameters, %d given", want, got);
		return false;
	}
	return true;
}

/* One result row as a JSON object; text and numbers as SQLite has them, a blob as hex. */
static void q_json_row(sy_buf *b, sqlite3_stmt *st)
{
	sy_buf_putc(b, '{');
	for (int i = 0; i < sqlite3_column_count(st); i++) {
		if (i > 0)
			sy_buf_putc(b, ',');
		sy_cl_json_str(b, sqlite3_column_name(st, i));
		sy_buf_putc(b, ':');
		sy_web_put_column(b, st, i, false);
	}
	sy_buf_putc(b, '}');
}

/*
 * Runs one read-only SQL statement over the visible rows (see the head comment) with
 * params_json (a JSON array, or NULL) bound in order:
 * {"tables":[the manifest tables it reads],"rows":[{column: value, ...}, ...]}.
 */
EMSCRIPTEN_KEEPALIVE char *sy_web_query(sy_client *c, const char *sql, const char *params_json)
{
	ok();
	if (c->manifest == NULL) {
		last.rc = SY_CLIENT_ESTATE;
		snprintf(last.message, sizeof last.message, "query: no schema yet (sync first)");
		return NULL;
	}
	const sy_manifest *m = c->manifest;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	sy_buf b = SY_BUF_INIT;
	q_auth auth = {.m = m};
	if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK) {
		q_fail(db, "an in-memory database");
		goto fail;
	}
	if (!q_schema(db, m))
		goto fail;
	sqlite3_set_authorizer(db, q_authorize, &auth);
	const char *tail = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, &tail);
	sqlite3_set_authorizer(db, NULL, NULL);
	if (rc != SQLITE_OK || st == NULL) {
		last.rc = SY_CLIENT_EINVAL;
		snprintf(last.message, sizeof last.message, "query: %s%s%s%s",
		         st == NULL && rc == SQLITE_OK ? "no statement" : sqlite3_errmsg(db),
		         auth.denied ? " (" : "", auth.denied ? auth.what : "",
		         auth.denied ? ": a query reads the synced tables only: no writes, ATTACH or PRAGMA)"
		                     : "");
		goto fail;
	}
	while (*tail == ' ' || *tail == '\t' || *tail == '\n' || *tail == '\r' || *tail == ';')
		tail++;
	if (*tail != '\0' || !sqlite3_stmt_readonly(st)) {
		last.rc = SY_CLIENT_EINVAL;
		snprintf(last.message, sizeof last.message, "query: %s",
		         *tail != '\0' ? "one statement only"
		                       : "read-only SQL only (write with transaction())");
		goto fail;
	}
	if (!q_bind(db, st, params_json))
		goto fail;
	bool first = true;
	sy_buf_puts(&b, "{\"tables\":[");
	for (size_t i = 0; i < m->table_count && i < 256; i++) {
		if (!auth.reads[i])
			continue;
		if (!q_load(c, db, &m->tables[i]))
			goto fail;
		if (!first)
			sy_buf_putc(&b, ',');
		first = false;
		sy_cl_json_str(&b, m->tables[i].table_id);
	}
	sy_buf_puts(&b, "],\"rows\":[");
	first = true;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (!first)
			sy_buf_putc(&b, ',');
		first = false;
		q_json_row(&b, st);
	}
	if (rc != SQLITE_DONE) {
		last.rc = SY_CLIENT_EINVAL;
		snprintf(last.message, sizeof last.message, "query: %s", sqlite3_errmsg(db));
		goto fail;
	}
	sy_buf_puts(&b, "]}");
	sqlite3_finalize(st);
	sqlite3_close(db);
	return steal(&b);
fail:
	sy_buf_free(&b);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return NULL;
}

/* --- resolve / verify ------------------------------------------------------------ */

/*
 * Resolves an intent as synchro-cli resolve does: how is "discard", "accept" (the
 * server's row), "rebase" (columns_json may be NULL: the same columns) or "remap"
 * (columns_json required). The successor's mutation id ("" for discard/accept; static),
 * or NULL.
 */
EMSCRIPTEN_KEEPALIVE const char *sy_web_resolve(sy_client *c, const char *how, const char *id,
                                                const char *columns_json)
{
	static char nid[SY_CLIENT_ID_LEN + 1];
	sy_client_rc rc;
	ok();
	nid[0] = '\0';
	if (strcmp(how, "discard") == 0)
		rc = sy_client_discard(c, id, &last);
	else if (strcmp(how, "accept") == 0)
		rc = sy_client_accept_server(c, id, &last);
	else if (strcmp(how, "rebase") == 0)
		rc = sy_client_rebase(c, id, columns_json, nid, &last);
	else if (strcmp(how, "remap") == 0 && columns_json != NULL)
		rc = sy_client_remap(c, id, columns_json, nid, &last);
	else {
		last.rc = SY_CLIENT_EINVAL;
		snprintf(last.message, sizeof last.message,
		         "resolve: how is discard, accept, rebase or remap (remap with columns)");
		return NULL;
	}
	return rc == SY_CLIENT_OK ? nid : NULL;
}

/* {"ok":true|false,"report":text or null}, as synchro-cli verify --json; NULL on a failure. */
EMSCRIPTEN_KEEPALIVE char *sy_web_verify(sy_client *c)
{
	char *rep = NULL;
	ok();
	sy_client_rc rc = sy_client_verify(c, &rep, &last);
	if (rc != SY_CLIENT_OK && rc != SY_CLIENT_EPROTOCOL) {
		sy_client_free(rep);
		return NULL;
	}
	ok();
	sy_buf b = SY_BUF_INIT;
	bool f = true;
	sy_buf_putc(&b, '{');
	sy_cl_json_raw(&b, &f, "ok", rc == SY_CLIENT_OK ? "true" : "false");
	sy_cl_json_member(&b, &f, "report", rep != NULL && rep[0] != '\0' ? rep : NULL);
	sy_buf_putc(&b, '}');
	sy_client_free(rep);
	return steal(&b);
}
