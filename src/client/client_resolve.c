/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_resolve.c: explicit resolution of a settled intent.
 *
 * Layer: middle of src/client (doc/hacking.md).
 * Rules: doc/contract.md#schema-incompatible-intents (only the app or the user makes a
 * replacement, as a new mutation with a new id).
 * Notes: Nothing here rewrites history. The settled intent keeps its id, payload and
 * outcome. It becomes "resolved", with how. A rebase or remap is a new intent with a new
 * mutation id, linked from it.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "client_internal.h"
#include "synchro/alloc.h"

static bool resolvable(sy_intent_state s)
{
	return s == SY_INTENT_CONFLICT || s == SY_INTENT_REJECTED ||
	       s == SY_INTENT_SCHEMA_INCOMPATIBLE || s == SY_INTENT_BLOCKED_BY_PREDECESSOR ||
	       s == SY_INTENT_BLOCKED_LIMIT;
}

static sy_client_rc mark(sy_client *c, const char *id, const char *how, const char *link,
                         sy_client_error *err)
{
	sqlite3_stmt *st;
	sy_client_rc rc = sy_cl_prepare(c,
	                                "UPDATE intents SET state = 'resolved', resolution = ?,"
	                                " link = COALESCE(?, link), updated_ms = ?"
	                                " WHERE mutation_id = ?",
	                                &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, how, -1, SQLITE_STATIC);
	if (link != NULL)
		sqlite3_bind_text(st, 2, link, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, sy_cl_now(c));
	sqlite3_bind_text(st, 4, id, -1, SQLITE_STATIC);
	return sy_cl_run(c, st, err);
}

static sy_client_rc settle(sy_client *c, const char *id, const char *how, bool conflict_only,
                           sy_client_error *err)
{
	if (c->retired)
		return sy_cl_fail(err, SY_CLIENT_EREADONLY, "the store is read-only");
	sy_client_intent *i = NULL;
	sy_client_rc rc = sy_client_intent_get(c, id, &i, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	if (conflict_only ? i->state != SY_INTENT_CONFLICT : !resolvable(i->state))
		rc = sy_cl_fail(err, SY_CLIENT_ESTATE, "intent %s is %s: nothing to resolve", id,
		                sy_client_intent_state_name(i->state));
	if (rc == SY_CLIENT_OK && (rc = sy_cl_begin(c, err)) == SY_CLIENT_OK) {
		if ((rc = mark(c, id, how, NULL, err)) == SY_CLIENT_OK)
			rc = sy_cl_commit(c, err);
		else
			sy_cl_rollback(c);
	}
	if (rc == SY_CLIENT_OK)
		sy_cl_emit(c, SY_CLIENT_EVENT_ROW, i->table, i->pk_json, id);
	sy_client_intent_free(i);
	return rc;
}

sy_client_rc sy_client_discard(sy_client *c, const char *mutation_id, sy_client_error *err)
{
	return settle(c, mutation_id, "discarded", false, err);
}

sy_client_rc sy_client_accept_server(sy_client *c, const char *mutation_id, sy_client_error *err)
{
	return settle(c, mutation_id, "accepted_server", true, err);
}

/* A new intent replacing i: op on the server's current row (remap: under the current schema). */
static sy_client_rc replace(sy_client *c, const char *id, const char *columns_json, bool remap,
                            char *new_id, sy_client_error *err)
{
	if (c->retired)
		return sy_cl_fail(err, SY_CLIENT_EREADONLY, "the store is read-only");
	if (c->manifest == NULL)
		return sy_cl_fail(err, SY_CLIENT_ESTATE, "no schema yet: connect first");
	sy_client_intent *i = NULL;
	char *base = NULL, *cols = NULL, *pred = NULL;
	sy_client_rc rc = sy_client_intent_get(c, id, &i, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	bool ok = remap ? i->state == SY_INTENT_SCHEMA_INCOMPATIBLE
	                : (i->state == SY_INTENT_CONFLICT ||
	                   i->state == SY_INTENT_BLOCKED_BY_PREDECESSOR);
	const sy_table *t = sy_manifest_table(c->manifest, i->table, strlen(i->table));
	if (!ok) {
		rc = sy_cl_fail(err, SY_CLIENT_ESTATE, "intent %s is %s: cannot %s it", id,
		                sy_client_intent_state_name(i->state), remap ? "remap" : "rebase");
		goto done;
	}
	if (t == NULL) {
		rc = sy_cl_fail(err, SY_CLIENT_ESTATE, "table %s is not in the current schema",
		                i->table);
		goto done;
	}
	if ((rc = sy_cl_row_version(c, i->table, i->pk_json, &base, err)) != SY_CLIENT_OK)
		goto done;
	/* The server's row decides the operation: there is no resurrection. */
	sqlite3_stmt *st;
	bool live = false;
	if ((rc = sy_cl_prepare(c, "SELECT deleted FROM rows WHERE tbl = ? AND pk = ?", &st,
	                        err)) != SY_CLIENT_OK)
		goto done;
	sqlite3_bind_text(st, 1, i->table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, i->pk_json, -1, SQLITE_STATIC);
	live = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 0;
	sqlite3_finalize(st);
	const char *op = i->op;
	if (strcmp(op, "insert") == 0 && live)
		op = "update";
	if (strcmp(op, "insert") != 0 && !live) {
		rc = sy_cl_fail(err, SY_CLIENT_ESTATE,
		                "the server has no live row to %s onto (no resurrection)",
		                remap ? "remap" : "rebase");
		goto done;
	}
	if (strcmp(op, "insert") == 0) {
		sy_free(base);
		base = NULL;
	}
	if (strcmp(op, "delete") != 0 &&
	    (rc = sy_cl_check_columns(
	             t, columns_json ? columns_json : (i->columns_json ? i->columns_json : "{}"),
	             strcmp(op, "update") == 0, &cols, err)) != SY_CLIENT_OK)
		goto done;
	char cv[SY_SERVER_TIME_LEN + 1];
	sy_cl_client_version(c, cv);
	int64_t txn = 0;
	char nid[SY_UUID_LEN + 1];
	/* As for a write: behind an outstanding intent of the row there is no usable base. */
	bool busy = false;
	if ((rc = sy_cl_outstanding(c, i->table, i->pk_json, &busy, &pred, err)) != SY_CLIENT_OK ||
	    (rc = sy_cl_begin(c, err)) != SY_CLIENT_OK)
		goto done;
	rc = sy_cl_new_txn(c, false, &txn, err);
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_intent_insert(c, txn, false, 0, i->table, i->pk_json, t->pk.field_id, op,
		                         cols, busy ? NULL : base, cv, &c->schema,
		                         pred != NULL ? "waiting" : "pending", pred, nid, err);
	if (rc == SY_CLIENT_OK)
		rc = mark(c, id, remap ? "remapped" : "rebased", nid, err);
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_commit(c, err);
	else
		sy_cl_rollback(c);
	if (rc == SY_CLIENT_OK) {
		if (new_id != NULL)
			memcpy(new_id, nid, sizeof nid);
		sy_cl_emit(c, SY_CLIENT_EVENT_ROW, i->table, i->pk_json, nid);
	}
done:
	sy_free(base);
	sy_free(cols);
	sy_free(pred);
	sy_client_intent_free(i);
	return rc;
}

sy_client_rc sy_client_rebase(sy_client *c, const char *mutation_id, const char *columns_json,
                              char *new_id, sy_client_error *err)
{
	return replace(c, mutation_id, columns_json, false, new_id, err);
}

sy_client_rc sy_client_remap(sy_client *c, const char *mutation_id, const char *columns_json,
                             char *new_id, sy_client_error *err)
{
	return replace(c, mutation_id, columns_json, true, new_id, err);
}
