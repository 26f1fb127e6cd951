/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_query.c: the app's SQL over the visible tables (client_visible.c):
 * sy_client_query and live queries.
 *
 * Layer: middle of src/client (doc/hacking.md).
 * Interface:
 *   sy_client_query()   runs the app's SQL, a row at a time to a callback
 *   sy_client_live()    a live query, run again when a table it reads changes
 *   sy_cl_query_json()  the same query's answer as JSON, for the browser API
 *   sy_cl_live_run()    runs again the live queries whose tables changed
 * Notes: The statements run on a second connection to the store's file. It opens read-only
 * on the first query. So no statement can write there, and it sees committed state only.
 * On it, each visible table "visible:t" has a TEMP view named t. So the app's SQL says t.
 * A manifest table named like one of the store's own (rows, meta) means the view, because
 * temp names come first.
 *
 * An authorizer stays installed for the connection's life, so a statement prepared again
 * after a schema change is checked again. It allows SELECT, functions, recursive queries,
 * and reads of those views and of the visible tables. It allows nothing else. A read of the
 * store's own tables (main.rows, sqlite_master), ATTACH, PRAGMA, and any write or
 * transaction statement are refused at prepare time. Besides, sqlite3_stmt_readonly must
 * hold, and only spaces and semicolons may follow the statement. The views are made again
 * when the visible tables were built for another schema (meta visible_schema). This is
 * checked before each run.
 *
 * Live queries keep their prepared statement and the visible tables it reads (from the
 * authorizer). client_visible.c lists the tables whose rows changed in each commit. The
 * events after a commit (client_events.c) and every sy_client_step call live_hook. It runs
 * again the live queries that read one of those tables, and clears the list.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "synchro/alloc.h"
#include "synchro/jcs.h"

#define PREFIX     "visible:"
#define PREFIX_LEN 8

struct sy_client_live_query {
	sy_client *c;
	sqlite3_stmt *st;
	char **tables; /* the manifest tables it reads (new strings) */
	size_t ntables;
	sy_client_live_fn fn;
	void *ctx;
	bool failed; /* reported once; never run again */
	bool due;    /* a table it reads changed */
	sy_client_live_query *next;
};

struct sy_cl_query {
	sqlite3 *db;
	int64_t views_for; /* the visible_schema the views were made for; -1: none */
	bool internal;     /* our own statements run: the authorizer allows them */
	bool running;      /* the live queries are being run */
	bool shared;       /* db is the store's own connection (the browser's single one) */
	/* of the statement being prepared */
	char **reads;
	size_t nreads;
	bool denied, oom;
	char what[128];
	sy_client_live_query *lives;
	/* the names of the store's own tables, views and indexes (new strings) */
	char **store;
	size_t nstore;
};

static void reads_free(char **t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sy_free(t[i]);
	sy_free(t);
}

static void read_add(struct sy_cl_query *q, const char *table)
{
	for (size_t i = 0; i < q->nreads; i++)
		if (strcmp(q->reads[i], table) == 0)
			return;
	char **n = sy_realloc(q->reads, (q->nreads + 1) * sizeof *n);
	char *t = n != NULL ? sy_strndup(table, strlen(table)) : NULL;
	if (n != NULL)
		q->reads = n;
	if (t == NULL) {
		q->oom = true;
		return;
	}
	q->reads[q->nreads++] = t;
}

static const char *action_name(int action)
{
	switch (action) {
	case SQLITE_ATTACH: return "ATTACH";
	case SQLITE_DETACH: return "DETACH";
	case SQLITE_PRAGMA: return "PRAGMA";
	case SQLITE_TRANSACTION: return "a transaction statement";
	case SQLITE_SAVEPOINT: return "a savepoint";
	case SQLITE_INSERT: return "INSERT into";
	case SQLITE_UPDATE: return "UPDATE of";
	case SQLITE_DELETE: return "DELETE from";
	default: return "a change of the schema or the data:";
	}
}

static int authorize(void *ctx, int action, const char *a, const char *b, const char *db,
                     const char *trigger)
{
	struct sy_cl_query *q = ctx;
	(void)b;
	(void)trigger;
	if (q->internal || action == SQLITE_SELECT || action == SQLITE_FUNCTION ||
	    action == SQLITE_RECURSIVE)
		return SQLITE_OK;
	if (action == SQLITE_READ && a != NULL && db == NULL) {
		/* a table read without a column (count(*)) names no database; nor does a CTE */
		if (strncmp(a, PREFIX, PREFIX_LEN) == 0) {
			read_add(q, a + PREFIX_LEN);
			return SQLITE_OK;
		}
		bool store = strncmp(a, "sqlite_", 7) == 0;
		for (size_t i = 0; !store && i < q->nstore; i++)
			store = strcmp(q->store[i], a) == 0;
		if (!store)
			return SQLITE_OK;
	} else if (action == SQLITE_READ && a != NULL) {
		if (strcmp(db, "main") == 0 && strncmp(a, PREFIX, PREFIX_LEN) == 0) {
			read_add(q, a + PREFIX_LEN);
			return SQLITE_OK;
		}
		/* the views: nothing else can be in temp (the app creates nothing) */
		if (strcmp(db, "temp") == 0 && strncmp(a, "sqlite_", 7) != 0)
			return SQLITE_OK;
	}
	if (!q->denied) {
		if (action == SQLITE_READ)
			snprintf(q->what, sizeof q->what, "reading %s%s%s", db ? db : "",
			         db ? "." : "", a ? a : "?");
		else
			snprintf(q->what, sizeof q->what, "%s %s", action_name(action), a ? a : "");
	}
	q->denied = true;
	return SQLITE_DENY;
}

void sy_cl_query_free(sy_client *c)
{
	struct sy_cl_query *q = c->query;
	if (q == NULL)
		return;
	/* live queries the app did not free: their statements go with the connection */
	for (sy_client_live_query *l = q->lives; l != NULL; l = l->next) {
		sqlite3_finalize(l->st);
		l->st = NULL;
		l->c = NULL;
	}
	if (!q->shared)
		sqlite3_close(q->db);
	reads_free(q->reads, q->nreads);
	reads_free(q->store, q->nstore);
	sy_free(q);
	c->query = NULL;
	c->live_hook = NULL;
}

static sy_client_rc q_fail(struct sy_cl_query *q, sy_client_error *err, const char *what)
{
	if (sqlite3_errcode(q->db) == SQLITE_NOMEM)
		return sy_cl_fail(err, SY_CLIENT_ENOMEM, "query: out of memory");
	return sy_cl_fail(err, SY_CLIENT_ESTORE, "query: %s: %s", what, sqlite3_errmsg(q->db));
}

static void live_hook(sy_client *c);

/* The view of visible table %w (its name twice), as the app's SQL names it. */
#define CREATE_VIEW "CREATE TEMP VIEW \"%w\" AS SELECT * FROM main.\"" PREFIX "%w\";"

/* Appends s (from sqlite3_mprintf; NULL when out of memory) to the script b, and frees it. */
static void add_sql(sy_buf *b, char *s)
{
	if (s == NULL)
		b->failed = true;
	else
		sy_buf_puts(b, s);
	sqlite3_free(s);
}

/* The connection, opened on first use, with views for the current visible tables. */
static sy_client_rc q_ready(sy_client *c, sy_client_error *err)
{
	struct sy_cl_query *q = c->query;
	if (q == NULL) {
		const char *path = sqlite3_db_filename(c->db, "main");
		if (path == NULL || path[0] == '\0')
			return sy_cl_fail(err, SY_CLIENT_ESTATE, "query: the store has no file");
		if ((q = sy_calloc(1, sizeof *q)) == NULL)
			return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
		q->views_for = -1;
		c->query = q;
		c->live_hook = live_hook;
#ifdef SY_WEB
		q->shared = true;
		q->db = c->db;
		(void)path;
	}
#else
		if (sqlite3_open_v2(path, &q->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
		                    NULL) != SQLITE_OK) {
			sy_client_rc rc =
			        q->db != NULL ? q_fail(q, err, "opening the store")
			                      : sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
			sy_cl_query_free(c);
			return rc;
		}
		sqlite3_busy_timeout(q->db, 5000);
		sqlite3_set_authorizer(q->db, authorize, q);
	}
#endif
	q->internal = true;
	sqlite3_stmt *st = NULL;
	int64_t built = -1;
	sy_client_rc rc = SY_CLIENT_OK;
	if (sqlite3_prepare_v2(q->db, "SELECT value FROM main.meta WHERE key = 'visible_schema'",
	                       -1, &st, NULL) != SQLITE_OK) {
		rc = q_fail(q, err, "the visible tables");
		goto done;
	}
	if (sqlite3_step(st) == SQLITE_ROW)
		built = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (built == q->views_for)
		goto done;
	sy_buf b = SY_BUF_INIT;
	if (sqlite3_prepare_v2(q->db, "SELECT name FROM temp.sqlite_master WHERE type = 'view'", -1,
	                       &st, NULL) != SQLITE_OK) {
		rc = q_fail(q, err, "the views");
		goto done;
	}
	while (sqlite3_step(st) == SQLITE_ROW)
		add_sql(&b, sqlite3_mprintf("DROP VIEW temp.\"%w\";", sqlite3_column_text(st, 0)));
	sqlite3_finalize(st);
	st = NULL;
	if (sqlite3_prepare_v2(q->db,
	                       "SELECT CASE WHEN is_store THEN name ELSE substr(name, 9) END,"
	                       " is_store FROM (SELECT name, substr(name, 1, 8) != '" PREFIX "'"
	                       " AS is_store, type FROM main.sqlite_master)"
	                       " WHERE is_store OR type = 'table' ORDER BY is_store DESC",
	                       -1, &st, NULL) != SQLITE_OK) {
		sy_buf_free(&b);
		rc = q_fail(q, err, "the visible tables");
		goto done;
	}
	reads_free(q->store, q->nstore);
	q->store = NULL;
	q->nstore = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(st, 0);
		if (sqlite3_column_int(st, 1)) {
			char **n = sy_realloc(q->store, (q->nstore + 1) * sizeof *n);
			char *name = n != NULL
			                     ? sy_strndup((const char *)t, strlen((const char *)t))
			                     : NULL;
			if (n != NULL)
				q->store = n;
			if (name == NULL)
				b.failed = true;
			else
				q->store[q->nstore++] = name;
			continue;
		}
		/* on the store's own connection, a view never hides one of the store's names
		 * (its statements would read the view): such a table is read by its
		 * physical name there */
		bool hidden = false;
		for (size_t i = 0; q->shared && i < q->nstore; i++)
			hidden = hidden || strcmp(q->store[i], (const char *)t) == 0;
		if (hidden || (q->shared && strcmp((const char *)t, "visible_dirty") == 0))
			continue;
		add_sql(&b, sqlite3_mprintf(CREATE_VIEW, t, t));
	}
	sqlite3_finalize(st);
	st = NULL;
	if (b.failed)
		rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	else if (b.data != NULL && sqlite3_exec(q->db, b.data, NULL, NULL, NULL) != SQLITE_OK)
		rc = q_fail(q, err, "the views");
	else /* made inside a write transaction that may yet roll back: checked again */
		q->views_for = sqlite3_get_autocommit(q->db) ? built : -1;
	sy_buf_free(&b);
done:
	q->internal = false;
	return rc;
}

/* Binds the JSON array params_json to st, checking the count. */
static sy_client_rc bind_params(sqlite3_stmt *st, const char *params_json, sy_client_error *err)
{
	int want = sqlite3_bind_parameter_count(st);
	size_t got = 0;
	sy_client_rc rc = SY_CLIENT_OK;
	sy_json_doc *d = NULL;
	if (params_json != NULL) {
		sy_error e = {0};
		d = sy_json_parse(params_json, strlen(params_json), &e);
		if (d == NULL)
			return sy_cl_fail(err, SY_CLIENT_EINVAL, "query: parameters: %s",
			                  e.message);
		const sy_json *a = sy_json_doc_root(d);
		if (a->type != SY_JSON_ARRAY) {
			rc = sy_cl_fail(err, SY_CLIENT_EINVAL,
			                "query: parameters are a JSON array");
			goto done;
		}
		got = a->u.array.count;
		for (size_t i = 0; i < got && (int)i < want; i++) {
			const sy_json *v = a->u.array.items[i];
			int s, at = (int)i + 1;
			switch (v->type) {
			case SY_JSON_NULL: s = sqlite3_bind_null(st, at); break;
			case SY_JSON_TRUE: s = sqlite3_bind_int(st, at, 1); break;
			case SY_JSON_FALSE: s = sqlite3_bind_int(st, at, 0); break;
			case SY_JSON_STRING:
				s = sqlite3_bind_text(st, at, v->u.string.data,
				                      (int)v->u.string.len, SQLITE_TRANSIENT);
				break;
			case SY_JSON_NUMBER: {
				char *end = NULL;
				long long n = v->u.number.is_integer
				                      ? strtoll(v->u.number.text, &end, 10)
				                      : 0;
				s = end == v->u.number.text + v->u.number.text_len
				            ? sqlite3_bind_int64(st, at, n)
				            : sqlite3_bind_double(st, at, v->u.number.value);
				break;
			}
			default: {
				size_t len;
				char *text = sy_cl_jcs(v, &len);
				s = text != NULL ? sqlite3_bind_text(st, at, text, (int)len,
				                                     SQLITE_TRANSIENT)
				                 : SQLITE_NOMEM;
				sy_free(text);
			}
			}
			if (s != SQLITE_OK) {
				rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
				goto done;
			}
		}
	}
	if (got != (size_t)want)
		rc = sy_cl_fail(err, SY_CLIENT_EINVAL,
		                "query: the statement takes %d parameter(s), %zu given", want, got);
done:
	sy_json_doc_free(d);
	return rc;
}

/* Prepares one read-only statement of the app's; *tables what it reads (new). */
static sy_client_rc q_prepare(sy_client *c, const char *sql, const char *params_json,
                              sqlite3_stmt **out, char ***tables, size_t *ntables,
                              sy_client_error *err)
{
	*out = NULL;
	if (sql == NULL)
		return sy_cl_fail(err, SY_CLIENT_EINVAL, "query: no statement");
	sy_client_rc rc = q_ready(c, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	struct sy_cl_query *q = c->query;
	q->denied = q->oom = false;
	q->what[0] = '\0';
	reads_free(q->reads, q->nreads);
	q->reads = NULL;
	q->nreads = 0;
	sqlite3_stmt *st = NULL;
	const char *tail = NULL;
	/* on a shared connection, the authorizer checks the app's statement alone */
	if (q->shared)
		sqlite3_set_authorizer(q->db, authorize, q);
	int s = sqlite3_prepare_v2(q->db, sql, -1, &st, &tail);
	if (q->shared)
		sqlite3_set_authorizer(q->db, NULL, NULL);
	if (s == SQLITE_NOMEM || q->oom) {
		rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
		goto fail;
	}
	if (s != SQLITE_OK || st == NULL) {
		rc = sy_cl_fail(err, SY_CLIENT_EINVAL, "query: %s%s%s%s",
		                st == NULL && s == SQLITE_OK ? "no statement"
		                                             : sqlite3_errmsg(q->db),
		                q->denied ? " (" : "", q->denied ? q->what : "",
		                q->denied ? ": a query only reads the synced tables)" : "");
		goto fail;
	}
	while (*tail == ' ' || *tail == '\t' || *tail == '\n' || *tail == '\r' || *tail == ';')
		tail++;
	if (*tail != '\0') {
		rc = sy_cl_fail(err, SY_CLIENT_EINVAL, "query: one statement only");
		goto fail;
	}
	if (!sqlite3_stmt_readonly(st)) {
		rc = sy_cl_fail(err, SY_CLIENT_EINVAL,
		                "query: read-only SQL only (write with a transaction)");
		goto fail;
	}
	if ((rc = bind_params(st, params_json, err)) != SY_CLIENT_OK)
		goto fail;
	*out = st;
	if (tables != NULL) {
		*tables = q->reads;
		*ntables = q->nreads;
		q->reads = NULL;
		q->nreads = 0;
	}
	return SY_CLIENT_OK;
fail:
	sqlite3_finalize(st);
	return rc;
}

/* The largest integer a JavaScript number holds exactly (2^53 - 1). */
#define JS_SAFE_MAX 9007199254740991LL

/* One result row as a JSON object: integers and reals as numbers, text as strings, a blob
 * as a hex string, NULL as null. For the browser (js), an integer a JavaScript number cannot
 * hold exactly is a string of its decimal, as the browser API gives int64 fields. */
static void row_json(sy_buf *b, sqlite3_stmt *st, bool js)
{
	sy_buf_putc(b, '{');
	for (int i = 0; i < sqlite3_column_count(st); i++) {
		if (i > 0)
			sy_buf_putc(b, ',');
		const char *name = sqlite3_column_name(st, i);
		if (name == NULL || !sy_jcs_write_string(b, name, strlen(name)))
			b->failed = true;
		sy_buf_putc(b, ':');
		switch (sqlite3_column_type(st, i)) {
		case SQLITE_INTEGER: {
			long long v = (long long)sqlite3_column_int64(st, i);
			sy_buf_printf(b,
			              js && (v > JS_SAFE_MAX || v < -JS_SAFE_MAX) ? "\"%lld\""
			                                                          : "%lld",
			              v);
			break;
		}
		case SQLITE_FLOAT: {
			double d = sqlite3_column_double(st, i);
			if (!isfinite(d) || !sy_jcs_write_number(b, d))
				sy_buf_puts(b, "null");
			break;
		}
		case SQLITE_TEXT: {
			const char *t = (const char *)sqlite3_column_text(st, i);
			if (t == NULL ||
			    !sy_jcs_write_string(b, t, (size_t)sqlite3_column_bytes(st, i)))
				b->failed = true;
			break;
		}
		case SQLITE_BLOB: {
			const unsigned char *p = sqlite3_column_blob(st, i);
			int n = sqlite3_column_bytes(st, i);
			sy_buf_putc(b, '"');
			for (int k = 0; k < n; k++)
				sy_buf_printf(b, "%02x", p[k]);
			sy_buf_putc(b, '"');
			break;
		}
		default: sy_buf_puts(b, "null");
		}
	}
	sy_buf_putc(b, '}');
}

/* Steps st to its end: fn per row (when fn), or the rows as one JSON array into all. */
static sy_client_rc q_run(sy_client *c, sqlite3_stmt *st, sy_client_query_fn fn, void *ctx,
                          sy_buf *all, bool js, sy_client_error *err)
{
	sy_buf b = SY_BUF_INIT;
	sy_client_rc rc = SY_CLIENT_OK;
	int s;
	if (all != NULL)
		sy_buf_putc(all, '[');
	bool first = true;
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		if (all != NULL) {
			if (!first)
				sy_buf_putc(all, ',');
			first = false;
			row_json(all, st, js);
			continue;
		}
		sy_buf_reset(&b);
		row_json(&b, st, js);
		if (b.failed) {
			rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
			break;
		}
		fn(ctx, b.data);
	}
	if (all != NULL)
		sy_buf_putc(all, ']');
	if (rc == SY_CLIENT_OK && s != SQLITE_DONE)
		rc = s == SQLITE_NOMEM ? sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory")
		                       : sy_cl_fail(err, SY_CLIENT_EINVAL, "query: %s",
		                                    sqlite3_errmsg(c->query->db));
	if (rc == SY_CLIENT_OK && all != NULL && all->failed)
		rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	sqlite3_reset(st);
	sy_buf_free(&b);
	return rc;
}

sy_client_rc sy_cl_query_json(sy_client *c, const char *sql, const char *params_json, sy_buf *out,
                              sy_client_error *err)
{
	sqlite3_stmt *st;
	char **tables = NULL;
	size_t n = 0;
	sy_client_rc rc = q_prepare(c, sql, params_json, &st, &tables, &n, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sy_buf_puts(out, "{\"tables\":[");
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			sy_buf_putc(out, ',');
		if (!sy_jcs_write_string(out, tables[i], strlen(tables[i])))
			out->failed = true;
	}
	sy_buf_puts(out, "],\"rows\":");
	rc = q_run(c, st, NULL, NULL, out, true, err);
	sy_buf_putc(out, '}');
	if (rc == SY_CLIENT_OK && out->failed)
		rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	sqlite3_finalize(st);
	reads_free(tables, n);
	return rc;
}

sy_client_rc sy_client_query(sy_client *c, const char *sql, const char *params_json,
                             sy_client_query_fn fn, void *ctx, sy_client_error *err)
{
	sqlite3_stmt *st;
	sy_client_rc rc = q_prepare(c, sql, params_json, &st, NULL, NULL, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	rc = q_run(c, st, fn, ctx, NULL, false, err);
	sqlite3_finalize(st);
	return rc;
}

/* Runs l and calls its function (a failure once, then never again). */
static void live_once(sy_client_live_query *l)
{
	sy_client_error e = {SY_CLIENT_OK, ""};
	sy_buf all = SY_BUF_INIT;
	sy_client_rc rc = q_ready(l->c, &e);
	if (rc == SY_CLIENT_OK)
		rc = q_run(l->c, l->st, NULL, NULL, &all, false, &e);
	if (rc == SY_CLIENT_OK) {
		l->fn(l->ctx, all.data, NULL);
	} else {
		l->failed = true;
		l->fn(l->ctx, NULL, &e);
	}
	sy_buf_free(&all);
}

static bool reads_changed(const sy_client *c, const sy_client_live_query *l)
{
	if (c->changed_all)
		return true;
	for (size_t i = 0; i < l->ntables; i++)
		for (size_t k = 0; k < c->nchanged; k++)
			if (strcmp(l->tables[i], c->changed[k]) == 0)
				return true;
	return false;
}

static void live_hook(sy_client *c)
{
	struct sy_cl_query *q = c->query;
	if (q == NULL || (c->nchanged == 0 && !c->changed_all))
		return;
	for (sy_client_live_query *l = q->lives; l != NULL; l = l->next)
		if (!l->failed && reads_changed(c, l))
			l->due = true;
	sy_cl_changed_clear(c);
	if (q->running)
		return; /* a function committed: the outer loop runs what it marked */
	/* one at a time from the head: a function may free a live query or make one */
	q->running = true;
	for (;;) {
		sy_client_live_query *l = q->lives;
		while (l != NULL && !l->due)
			l = l->next;
		if (l == NULL)
			break;
		l->due = false;
		if (!l->failed)
			live_once(l);
	}
	q->running = false;
}

void sy_cl_live_run(sy_client *c)
{
	if (c->live_hook != NULL)
		c->live_hook(c);
	else
		sy_cl_changed_clear(c);
}

sy_client_rc sy_client_live(sy_client *c, const char *sql, const char *params_json,
                            sy_client_live_fn fn, void *ctx, sy_client_live_query **out,
                            sy_client_error *err)
{
	*out = NULL;
	sy_client_live_query *l = sy_calloc(1, sizeof *l);
	if (l == NULL)
		return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	sy_client_rc rc = q_prepare(c, sql, params_json, &l->st, &l->tables, &l->ntables, err);
	if (rc != SY_CLIENT_OK) {
		sy_free(l);
		return rc;
	}
	l->c = c;
	l->fn = fn;
	l->ctx = ctx;
	l->next = c->query->lives;
	c->query->lives = l;
	*out = l;
	live_once(l);
	return SY_CLIENT_OK;
}

void sy_client_live_free(sy_client_live_query *l)
{
	if (l == NULL)
		return;
	if (l->c != NULL && l->c->query != NULL)
		for (sy_client_live_query **p = &l->c->query->lives; *p != NULL; p = &(*p)->next)
			if (*p == l) {
				*p = l->next;
				break;
			}
	sqlite3_finalize(l->st);
	reads_free(l->tables, l->ntables);
	sy_free(l);
}
