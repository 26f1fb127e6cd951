/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * web_inspect.c: the store's own records as JSON, for the worker's "records" call
 * (Synchro.records()).
 *
 * Layer: top of src/web (doc/hacking.md).
 * Notes: It gives what a native store's SQLite file holds, as a tool reading that file would
 * see it. That is the meta keys, the server rows, the schemas and the transactions. It is
 * every intent with its state and links, and the sealed batches with their members and
 * every attempt. A browser store has no file outside the browser. So this is how a test or
 * a support tool reads it. It only reads, in one read transaction. The bodies and responses
 * (BLOBs) come in hex, so their bytes are exact.
 */
#include "config.h"

#include <emscripten.h>
#include <sqlite3.h>
#include <stdio.h>

#include "client_internal.h"
#include "client_json.h"
#include "synchro/buf.h"
#include "web.h"

/* The tables given, in order; each as SELECT * in its primary key's order. */
static const char *const tables[] = {"meta",  "rows",          "schemas",  "txns",
                                     "intents", "batches", "batch_members", "attempts"};

static bool table(sy_buf *b, sqlite3 *db, const char *name)
{
	char sql[64];
	sqlite3_stmt *st = NULL;
	snprintf(sql, sizeof sql, "SELECT * FROM %s", name);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return false;
	sy_cl_json_str(b, name);
	sy_buf_puts(b, ":[");
	int rc;
	for (bool first = true; (rc = sqlite3_step(st)) == SQLITE_ROW; first = false) {
		sy_buf_puts(b, first ? "{" : ",{");
		for (int i = 0; i < sqlite3_column_count(st); i++) {
			if (i > 0)
				sy_buf_putc(b, ',');
			sy_cl_json_str(b, sqlite3_column_name(st, i));
			sy_buf_putc(b, ':');
			sy_web_put_column(b, st, i, true);
		}
		sy_buf_putc(b, '}');
	}
	sy_buf_putc(b, ']');
	sqlite3_finalize(st);
	return rc == SQLITE_DONE;
}

/* {"meta":[{...}],...,"attempts":[...]}, or {"error":"..."} when the store cannot be read. */
EMSCRIPTEN_KEEPALIVE char *sy_web_records(sy_client *c)
{
	sy_buf b = SY_BUF_INIT;
	bool began = sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
	bool ok = began;
	sy_buf_putc(&b, '{');
	for (size_t i = 0; ok && i < sizeof tables / sizeof tables[0]; i++) {
		if (i > 0)
			sy_buf_putc(&b, ',');
		ok = table(&b, c->db, tables[i]);
	}
	sy_buf_putc(&b, '}');
	if (!ok) {
		sy_buf_reset(&b);
		sy_buf_puts(&b, "{\"error\":");
		sy_cl_json_str(&b, sqlite3_errmsg(c->db));
		sy_buf_putc(&b, '}');
	}
	if (began)
		sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
	if (b.failed) {
		sy_buf_free(&b);
		return NULL;
	}
	return sy_buf_steal(&b, NULL);
}
