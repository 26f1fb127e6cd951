/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * web.h: the private interface between the C files of the WebAssembly build (src/web).
 */
#ifndef SY_WEB_H
#define SY_WEB_H

#include <sqlite3.h>
#include <stdbool.h>

#include "synchro/buf.h"
#include "synchro/client.h"

/* web_transport.c: the transport over the worker's fetch (Module.syFetch). */
sy_client_transport sy_web_transport(void);

/* web_api.c: the exports the worker calls (see there). */
int sy_web_error_rc(void);
const char *sy_web_error_name(void);
const char *sy_web_error_message(void);
void sy_web_free(void *p);
sy_client *sy_web_open(const char *path, const char *url, unsigned poll_interval_ms);
void sy_web_close(sy_client *c);
int sy_web_step(sy_client *c);
double sy_web_next_due(void);
void sy_web_kick(sy_client *c);
sy_client_txn *sy_web_begin(sy_client *c, int atomic);
const char *sy_web_write(sy_client_txn *t, int op, const char *table, const char *pk_json,
                         const char *columns_json);
int sy_web_commit(sy_client_txn *t);
void sy_web_rollback(sy_client_txn *t);
char *sy_web_get(sy_client *c, const char *table, const char *pk_json);
char *sy_web_rows(sy_client *c, const char *table);
char *sy_web_intents(sy_client *c, int all);
char *sy_web_status(sy_client *c);
char *sy_web_explain(sy_client *c, const char *mutation_id);
char *sy_web_changed(void);
char *sy_web_query(sy_client *c, const char *sql, const char *params_json);
int sy_web_index(sy_client *c, const char *table, const char *columns_json);
const char *sy_web_resolve(sy_client *c, const char *how, const char *id, const char *columns_json);
char *sy_web_verify(sy_client *c);

/* web_columns.c: column i of st's current row appended to b as JSON; a blob as a hex
 * string, or as {"hex": ...} when blob_tagged (so that it cannot be read as text). */
void sy_web_put_column(sy_buf *b, sqlite3_stmt *st, int i, bool blob_tagged);

/* web_inspect.c: the store's own records as JSON (see there). */
char *sy_web_records(sy_client *c);

#endif
