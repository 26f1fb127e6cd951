/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_reconcile.c: reconciliation of a push response with its sealed batch.
 *
 * Layer: middle of src/client (doc/hacking.md).
 * Rules: doc/contract.md#response-validation (every response is checked first).
 * Notes: Nothing applies before the core's validator passes the response. It checks the
 * complete partition of exactly the sealed batch's mutation ids, every field rule, and each
 * row_checksum under its outcome_schema. Then one SQLite transaction commits the outcomes,
 * the rows they carry, the dependents they unblock or block, and the batch's completion. So
 * a crash leaves either the sealed batch or the completed one. A sealed batch is sent again
 * and answered by exact replay.
 *
 * An outcome's row replaces the stored row only when the store still holds the version the
 * mutation was based on. Otherwise a pull already delivered a later state: a replay answers
 * with the state of the first execution. The pull stream orders the rows, not a push
 * response.
 */
#include "config.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "synchro/alloc.h"
#include "synchro/outcome.h"

static sy_client_rc attempt_insert(sy_client *c, const char *batch_id, const sy_client_response *r,
                                   sy_client_error *err)
{
	sqlite3_stmt *st;
	sy_client_rc rc =
	        sy_cl_prepare_cached(c,
	                             "INSERT INTO attempts(batch_id, at_ms, status, retry_after,"
	                             " response) VALUES (?, ?, ?, ?, ?)",
	                             &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, batch_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, sy_cl_now(c));
	sqlite3_bind_int(st, 3, r->status);
	if (r->retry_after_s >= 0)
		sqlite3_bind_int(st, 4, r->retry_after_s);
	if (r->body != NULL)
		sqlite3_bind_blob(st, 5, r->body, (int)r->body_len, SQLITE_STATIC);
	return sy_cl_run_cached(c, st, err);
}

sy_client_rc sy_cl_attempt_log(sy_client *c, const char *batch_id, const sy_client_response *r,
                               sy_client_error *err)
{
	sy_client_rc rc = sy_cl_begin(c, err);
	if (rc == SY_CLIENT_OK && (rc = attempt_insert(c, batch_id, r, err)) == SY_CLIENT_OK)
		return sy_cl_commit(c, err);
	sy_cl_rollback(c);
	return rc;
}

sy_client_rc sy_cl_settle_dependents(sy_client *c, const char *mutation_id, bool accepted,
                                     const char *server_version, sy_client_error *err)
{
	assert(!sqlite3_get_autocommit(c->db));      /* inside the caller's transaction */
	assert(!accepted || server_version != NULL); /* an accepted write has its version */
	sqlite3_stmt *st;
	sy_client_rc rc;
	/* "+state" in these: the pred and row indexes, never a scan of the state index. */
	if (accepted) {
		/*
		 * doc/contract.md#base-refresh: an accepted predecessor supplies the opaque base of
		 * the next unsealed update or delete of the row; only that server-owned base is
		 * refreshed.
		 */
		rc = sy_cl_prepare_cached(
		        c,
		        "UPDATE intents SET base = ?2 WHERE seq = (SELECT seq FROM intents"
		        " WHERE pred = ?1 AND +state = 'waiting' ORDER BY ord, seq LIMIT 1)"
		        " AND op <> 'insert' AND base IS NULL",
		        &st, err);
		if (rc != SY_CLIENT_OK)
			return rc;
		sqlite3_bind_text(st, 1, mutation_id, -1, SQLITE_STATIC);
		if (server_version != NULL)
			sqlite3_bind_text(st, 2, server_version, -1, SQLITE_STATIC);
		if ((rc = sy_cl_run_cached(c, st, err)) != SY_CLIENT_OK)
			return rc;
		rc = sy_cl_prepare_cached(c,
		                          "UPDATE intents SET state = 'pending', updated_ms = ?2"
		                          " WHERE pred = ?1 AND +state = 'waiting'",
		                          &st, err);
	} else {
		/* doc/contract.md#blocked-predecessors: a conflicted or rejected predecessor leaves
		 * its dependents inspectable. */
		rc = sy_cl_prepare_cached(
		        c,
		        "UPDATE intents SET state = 'blocked_by_predecessor', link = ?1,"
		        " updated_ms = ?2 WHERE tbl = (SELECT tbl FROM intents WHERE"
		        " mutation_id = ?1) AND pk = (SELECT pk FROM intents WHERE"
		        " mutation_id = ?1) AND +state IN ('waiting', 'pending')",
		        &st, err);
	}
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, mutation_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, sy_cl_now(c));
	return sy_cl_run_cached(c, st, err);
}

/* The intent's table, pk, op and base, and its row's stored server_version (new strings;
 * cur NULL when the store has no row). */
typedef struct {
	char *tbl, *pk, *op, *base, *cur;
} target;

static void target_free(target *t)
{
	sy_free(t->tbl);
	sy_free(t->pk);
	sy_free(t->op);
	sy_free(t->base);
	sy_free(t->cur);
}

/* One statement for the intent and its row (the rows primary key answers the join). */
static sy_client_rc load_target(sy_client *c, const char *id, target *t, sy_client_error *err)
{
	sqlite3_stmt *st;
	memset(t, 0, sizeof *t);
	sy_client_rc rc = sy_cl_prepare_cached(
	        c,
	        "SELECT i.tbl, i.pk, i.op, i.base, r.server_version FROM intents i"
	        " LEFT JOIN rows r ON r.tbl = i.tbl AND r.pk = i.pk WHERE i.mutation_id = ?",
	        &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW)
		rc = sy_cl_fail(err, SY_CLIENT_EPROTOCOL, "outcome for unknown mutation %s", id);
	else {
		t->tbl = sy_cl_col_text(st, 0);
		t->pk = sy_cl_col_text(st, 1);
		t->op = sy_cl_col_text(st, 2);
		t->base = sy_cl_col_text(st, 3);
		t->cur = sy_cl_col_text(st, 4);
		if (t->tbl == NULL || t->pk == NULL || t->op == NULL ||
		    (t->base == NULL && sqlite3_column_type(st, 3) != SQLITE_NULL) ||
		    (t->cur == NULL && sqlite3_column_type(st, 4) != SQLITE_NULL))
			rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	}
	sy_cl_release(st);
	return rc;
}

/* Applies the row an outcome carries, when the store has seen nothing newer (see NOTES). */
static sy_client_rc apply_outcome_row(sy_client *c, const target *t, const sy_json *o,
                                      sy_client_error *err)
{
	bool untouched = strcmp(t->op, "insert") == 0 ? t->cur == NULL
	                                              : (t->cur != NULL && t->base != NULL &&
	                                                 strcmp(t->cur, t->base) == 0);
	if (!untouched)
		return SY_CLIENT_OK;
	sy_schema_ref ref;
	if (!sy_schema_ref_parse(sy_json_get(o, "outcome_schema"), &ref))
		return sy_cl_fail(err, SY_CLIENT_EPROTOCOL, "outcome_schema");
	const char *sv = sy_cl_jstr(o, "server_version");
	const sy_json *row = sy_json_get(o, "server_row");
	if (row != NULL) {
		char *text = sy_cl_jcs(row, NULL);
		if (text == NULL)
			return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
		sy_client_rc rc = sy_cl_row_put(c, t->tbl, t->pk, text, false, sv, &ref,
		                                sy_cl_jstr(o, "row_checksum"), false, err);
		sy_free(text);
		return rc;
	}
	if (sv != NULL) /* a deletion: the fence's version, no row */
		return sy_cl_row_put(c, t->tbl, t->pk, NULL, true, sv, &ref, NULL, false, err);
	return sy_cl_row_delete(c, t->tbl, t->pk, err); /* true absence */
}

/*
 * The mutations of a batch that have a waiting dependent: one query per batch,
 * instead of two statements per accepted outcome that nearly always change
 * nothing. Sorted, for bsearch. Reconciling never makes an intent wait, so the
 * set stays true through the batch's transaction.
 */
typedef struct {
	char (*ids)[SY_UUID_LEN + 1];
	size_t n;
} id_set;

static int compare_ids(const void *a, const void *b)
{
	return strcmp(a, b);
}

static sy_client_rc load_awaited(sy_client *c, const char *batch_id, id_set *out,
                                 sy_client_error *err)
{
	sqlite3_stmt *st;
	memset(out, 0, sizeof *out);
	sy_client_rc rc = sy_cl_prepare_cached(
	        c,
	        "SELECT DISTINCT i.pred FROM batch_members m JOIN intents i"
	        " ON i.pred = m.mutation_id WHERE m.batch_id = ? AND +i.state = 'waiting'",
	        &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, batch_id, -1, SQLITE_STATIC);
	int s;
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		const char *id = (const char *)sqlite3_column_text(st, 0);
		char(*nv)[SY_UUID_LEN + 1] = sy_realloc(out->ids, (out->n + 1) * sizeof *nv);
		if (nv == NULL) {
			rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
			break;
		}
		out->ids = nv;
		snprintf(out->ids[out->n++], SY_UUID_LEN + 1, "%s", id ? id : "");
	}
	if (rc == SY_CLIENT_OK && s != SQLITE_DONE)
		rc = sy_cl_store_fail(c, err, "dependents");
	sy_cl_release(st);
	if (out->n > 1)
		qsort(out->ids, out->n, sizeof *out->ids, compare_ids);
	return rc;
}

static bool awaited(const id_set *s, const char *id)
{
	return s->n > 0 && bsearch(id, s->ids, s->n, sizeof *s->ids, compare_ids) != NULL;
}

static sy_client_rc apply_outcome(sy_client *c, const sy_json *o, const id_set *deps,
                                  sy_client_error *err)
{
	const char *id = sy_cl_jstr(o, "mutation_id");
	const char *status = sy_cl_jstr(o, "status");
	const char *code = sy_cl_jstr(o, "code");
	target t;
	sy_client_rc rc = load_target(c, id, &t, err);
	char *text = rc == SY_CLIENT_OK ? sy_cl_jcs(o, NULL) : NULL;
	if (rc == SY_CLIENT_OK && text == NULL)
		rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	const char *state = strcmp(status, "applied") == 0    ? "applied"
	                    : strcmp(status, "conflict") == 0 ? "conflict"
	                    : code != NULL && strcmp(code, "schema_incompatible") == 0
	                            ? "schema_incompatible"
	                            : "rejected";
	if (rc == SY_CLIENT_OK && strcmp(status, "rejected_terminal") != 0)
		rc = apply_outcome_row(c, &t, o, err);
	sqlite3_stmt *st = NULL;
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_prepare_cached(
		        c,
		        "UPDATE intents SET state = ?, code = ?, outcome = ?, updated_ms = ?"
		        " WHERE mutation_id = ?",
		        &st, err);
	if (rc == SY_CLIENT_OK) {
		/* doc/contract.md#schema-incompatible-intents: schema_incompatible keeps the whole
		 * intent, out of automatic retry. */
		sqlite3_bind_text(st, 1, state, -1, SQLITE_STATIC);
		if (code != NULL)
			sqlite3_bind_text(st, 2, code, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, text, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, sy_cl_now(c));
		sqlite3_bind_text(st, 5, id, -1, SQLITE_STATIC);
		rc = sy_cl_run_cached(c, st, err);
	}
	/* An accepted mutation nothing waits for has nothing to settle; any other
	 * outcome blocks what follows on its row, waiting or not yet sealed. */
	bool accepted = strcmp(state, "applied") == 0;
	if (rc == SY_CLIENT_OK && (!accepted || awaited(deps, id)))
		rc = sy_cl_settle_dependents(c, id, accepted, sy_cl_jstr(o, "server_version"), err);
	sy_free(text);
	target_free(&t);
	return rc;
}

sy_client_rc sy_cl_reconcile(sy_client *c, const char *batch_id, const char *body, size_t len,
                             int status, bool ahead, sy_client_error *err)
{
	/* a 200 answer of the batch that was in flight; ahead: the next one went meanwhile */
	assert(status == 200 && batch_id != NULL && batch_id[0] != '\0');
	assert(!ahead || c->inflight == SY_CL_REQ_PUSH);
	sqlite3_stmt *st = NULL;
	sy_push_request *req = NULL, *next = NULL;
	char next_id[SY_UUID_LEN + 1];
	bool ran = false;
	sy_json_doc *resp = NULL;
	sy_error e = {0};
	sy_client_rc rc = SY_CLIENT_OK;
	/* The request as sealed: kept from sealing, else parsed again from the stored bytes. */
	req = sy_cl_req_take(c, batch_id);
	if (req == NULL) {
		rc = sy_cl_prepare(c, "SELECT body FROM batches WHERE batch_id = ?", &st, err);
		if (rc != SY_CLIENT_OK)
			return rc;
		sqlite3_bind_text(st, 1, batch_id, -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW)
			req = sy_push_parse(sqlite3_column_blob(st, 0),
			                    (size_t)sqlite3_column_bytes(st, 0), &e);
		sqlite3_finalize(st);
	}
	if (req == NULL)
		return sy_cl_fail(err, SY_CLIENT_ESTORE, "sealed batch %s: %s", batch_id,
		                  e.message);
	resp = sy_json_parse(body, len, &e);
	if (resp == NULL || !sy_outcome_validate_response(req, sy_json_doc_root(resp), &e)) {
		rc = sy_cl_fail(err, SY_CLIENT_EPROTOCOL, "push response refused: %s", e.message);
		goto done;
	}
	if ((rc = sy_cl_begin(c, err)) != SY_CLIENT_OK)
		goto done;
	const sy_json *root = sy_json_doc_root(resp);
	static const char *const parts[] = {"accepted", "rejected"};
	id_set deps;
	rc = load_awaited(c, batch_id, &deps, err);
	for (int p = 0; p < 2 && rc == SY_CLIENT_OK; p++) {
		const sy_json *arr = sy_json_get(root, parts[p]);
		for (size_t i = 0; rc == SY_CLIENT_OK && i < arr->u.array.count; i++)
			rc = apply_outcome(c, arr->u.array.items[i], &deps, err);
	}
	sy_free(deps.ids);
	sy_client_response r = {
	        .status = status, .body = (char *)body, .body_len = len, .retry_after_s = -1};
	if (rc == SY_CLIENT_OK)
		rc = attempt_insert(c, batch_id, &r, err);
	if (rc == SY_CLIENT_OK &&
	    (rc = sy_cl_prepare(c,
	                        "UPDATE batches SET state = 'completed', completed_ms = ?"
	                        " WHERE batch_id = ?",
	                        &st, err)) == SY_CLIENT_OK) {
		/* The response's bytes are those of the attempt just logged (one copy). */
		sqlite3_bind_int64(st, 1, sy_cl_now(c));
		sqlite3_bind_text(st, 2, batch_id, -1, SQLITE_STATIC);
		rc = sy_cl_run(c, st, err);
	}
	/*
	 * The batch after the one in flight is sealed in this commit: one fsync less per
	 * batch. Each rule stands as in two commits: this response is applied with its
	 * batch's completion, the new batch is durable before it is first sent (after
	 * the 200 of the one in flight), and sealing sees what this response settled.
	 */
	if (rc == SY_CLIENT_OK && ahead)
		rc = sy_cl_seal_ahead(c, &ran, next_id, &next, err);
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_commit(c, err);
	else
		sy_cl_rollback(c);
	if (rc == SY_CLIENT_OK && ahead) {
		c->sealed_ahead = ran;
		if (next != NULL)
			sy_cl_req_put(c, next_id, next);
		next = NULL;
	}
	sy_push_request_free(next);
	for (int p = 0; p < 2 && rc == SY_CLIENT_OK; p++) {
		const sy_json *arr = sy_json_get(root, parts[p]);
		for (size_t i = 0; i < arr->u.array.count; i++)
			sy_cl_emit(c, SY_CLIENT_EVENT_INTENT, NULL, NULL,
			           sy_cl_jstr(arr->u.array.items[i], "mutation_id"));
		sy_cl_emit_rows(c, arr);
	}
done:
	sy_json_doc_free(resp);
	sy_push_request_free(req);
	return rc;
}
