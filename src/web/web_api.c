/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * web_api.c: the C face the worker (worker.ts) calls through the WebAssembly module's
 * exports. It offers libsynchro-client's functions with strings in and JSON text out. So
 * JavaScript never reads a C struct.
 *
 * Layer: top of src/web (doc/hacking.md).
 * Notes: Each call's failure is kept until the next call (sy_web_error_rc, _message).
 * Returned strings are new (sy_web_free). The worker is the only caller. It calls one
 * function at a time: one event loop, no threads.
 *
 * query runs read-only SQL in place over the synced tables the store keeps
 * (client_visible.c, client_query.c). Here it runs on the store's one connection, and
 * SQLite's authorizer checks the app's statement. The listener records the tables whose
 * rows changed, for live queries (sy_web_changed).
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

/*
 * Runs one read-only SQL statement in place over the synced tables (client_query.c) with
 * params_json (a JSON array, or NULL) bound in order:
 * {"tables":[the synced tables it reads],"rows":[{column: value, ...}, ...]}.
 */
EMSCRIPTEN_KEEPALIVE char *sy_web_query(sy_client *c, const char *sql, const char *params_json)
{
	ok();
	if (c->manifest == NULL) {
		last.rc = SY_CLIENT_ESTATE;
		snprintf(last.message, sizeof last.message, "query: no schema yet (sync first)");
		return NULL;
	}
	sy_buf b = SY_BUF_INIT;
	if (sy_cl_query_json(c, sql, params_json, &b, &last) != SY_CLIENT_OK) {
		sy_buf_free(&b);
		return NULL;
	}
	return steal(&b);
}

/* An index on a synced table's columns (columns_json: a JSON array of names); 1, or 0. */
EMSCRIPTEN_KEEPALIVE int sy_web_index(sy_client *c, const char *table, const char *columns_json)
{
	ok();
	return sy_client_index(c, table, columns_json, &last) == SY_CLIENT_OK;
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
