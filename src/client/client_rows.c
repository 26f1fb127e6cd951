/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_rows.c: the server's rows as the store keeps them, in the table rows, and in
 * rebuild_rows while a rebuild fills.
 *
 * Layer: base of src/client (doc/hacking.md).
 * Notes: It reads a row's server_version. It writes a row or tombstone, removes a row, and
 * records a row that left the user's scope (scope_exits). A scope exit is kept while the row
 * has unsettled intents. Pull, push reconciliation, local writes and resolution all read
 * and write rows through these calls.
 */
#include "config.h"

#include <assert.h>
#include "client_internal.h"

sy_client_rc sy_cl_row_version(sy_client *c, const char *table, const char *pk, char **version,
                               sy_client_error *err)
{
	sqlite3_stmt *st;
	*version = NULL;
	sy_client_rc rc = sy_cl_prepare_cached(
	        c, "SELECT server_version FROM rows WHERE tbl = ? AND pk = ?", &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, pk, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW && (*version = sy_cl_col_text(st, 0)) == NULL)
		rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	sy_cl_release(st);
	return rc;
}

sy_client_rc sy_cl_row_put(sy_client *c, const char *table, const char *pk, const char *row,
                           bool deleted, const char *server_version, const sy_schema_ref *schema,
                           const char *checksum, bool rebuild, sy_client_error *err)
{
	assert(!sqlite3_get_autocommit(c->db)); /* inside the caller's transaction */
	assert(deleted == (row == NULL));
	sqlite3_stmt *st;
	sy_client_rc rc = sy_cl_prepare_cached(
	        c,
	        rebuild ? "INSERT OR REPLACE INTO rebuild_rows(tbl, pk, row, deleted, "
	                  "server_version,"
	                  " schema_version, schema_hash, checksum) VALUES (?,?,?,?,?,?,?,?)"
	                : "INSERT OR REPLACE INTO rows(tbl, pk, row, deleted, server_version,"
	                  " schema_version, schema_hash, checksum) VALUES (?,?,?,?,?,?,?,?)",
	        &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, pk, -1, SQLITE_STATIC);
	if (row != NULL)
		sqlite3_bind_text(st, 3, row, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 4, deleted);
	sqlite3_bind_text(st, 5, server_version, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)schema->version);
	sqlite3_bind_text(st, 7, schema->hash, -1, SQLITE_STATIC);
	if (checksum != NULL)
		sqlite3_bind_text(st, 8, checksum, -1, SQLITE_STATIC);
	if ((rc = sy_cl_run_cached(c, st, err)) != SY_CLIENT_OK || rebuild)
		return rc;
	/* A row the server sends again is in the user's scope again. */
	if ((rc = sy_cl_prepare_cached(c, "DELETE FROM scope_exits WHERE tbl = ? AND pk = ?", &st,
	                               err)) != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, pk, -1, SQLITE_STATIC);
	return sy_cl_run_cached(c, st, err);
}

sy_client_rc sy_cl_row_exit(sy_client *c, const char *table, const char *pk,
                            const char *server_version, sy_client_error *err)
{
	assert(!sqlite3_get_autocommit(c->db)); /* inside the caller's transaction */
	sy_client_rc rc = sy_cl_row_delete(c, table, pk, err);
	sqlite3_stmt *st;
	if (rc != SY_CLIENT_OK ||
	    (rc = sy_cl_prepare_cached(
	             c,
	             "INSERT OR REPLACE INTO scope_exits(tbl, pk, server_version)"
	             " SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM intents WHERE tbl = ?1"
	             " AND pk = ?2 AND state NOT IN ('applied', 'superseded_before_send',"
	             " 'cancelled_before_send', 'resolved'))",
	             &st, err)) != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, pk, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, server_version, -1, SQLITE_STATIC);
	return sy_cl_run_cached(c, st, err);
}

sy_client_rc sy_cl_row_left_scope(sy_client *c, const char *table, const char *pk, bool *left,
                                  sy_client_error *err)
{
	sqlite3_stmt *st;
	*left = false;
	sy_client_rc rc = sy_cl_prepare_cached(
	        c, "SELECT 1 FROM scope_exits WHERE tbl = ? AND pk = ?", &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, pk, -1, SQLITE_STATIC);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		*left = true;
	else if (s != SQLITE_DONE)
		rc = sy_cl_store_fail(c, err, "scope_exits");
	sy_cl_release(st);
	return rc;
}

sy_client_rc sy_cl_row_delete(sy_client *c, const char *table, const char *pk, sy_client_error *err)
{
	assert(!sqlite3_get_autocommit(c->db)); /* inside the caller's transaction */
	sqlite3_stmt *st;
	sy_client_rc rc =
	        sy_cl_prepare_cached(c, "DELETE FROM rows WHERE tbl = ? AND pk = ?", &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, pk, -1, SQLITE_STATIC);
	return sy_cl_run_cached(c, st, err);
}
