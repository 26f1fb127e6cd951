/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_intent.c: local intents and the visible state. Write transactions insert, update
 * or delete. Reads show server rows overlaid with the intents not yet settled.
 *
 * Layer: middle of src/client (doc/hacking.md).
 * Rules: doc/contract.md#identity-is-immutable (the mutation id is made here, once).
 * Notes: Each write is an immutable intent. Its mutation id is made here and committed with
 * it, in the same SQLite commit, before any batch can carry it.
 *
 * An update or delete may be written while another intent of the row is outstanding. Then
 * it has no usable server base, so it gets none (base NULL). Sealing folds it into the
 * unsealed chain. Behind a sealed predecessor, it waits for that predecessor's accepted
 * version (client_reconcile.c).
 */
#include "config.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "client_internal.h"
#include "synchro/alloc.h"
#include "synchro/jcs.h"

static const char *const state_names[SY_INTENT__COUNT] = {
        [SY_INTENT_PENDING] = "pending",
        [SY_INTENT_WAITING] = "waiting",
        [SY_INTENT_SEALED] = "sealed",
        [SY_INTENT_APPLIED] = "applied",
        [SY_INTENT_SUPERSEDED] = "superseded_before_send",
        [SY_INTENT_CANCELLED] = "cancelled_before_send",
        [SY_INTENT_CONFLICT] = "conflict",
        [SY_INTENT_REJECTED] = "rejected",
        [SY_INTENT_SCHEMA_INCOMPATIBLE] = "schema_incompatible",
        [SY_INTENT_BLOCKED_BY_PREDECESSOR] = "blocked_by_predecessor",
        [SY_INTENT_BLOCKED_LIMIT] = "blocked_limit",
        [SY_INTENT_RESOLVED] = "resolved",
};

const char *sy_client_intent_state_name(sy_intent_state s)
{
	return (unsigned)s < SY_INTENT__COUNT ? state_names[s] : "unknown";
}

sy_client_rc sy_cl_state_from_name(const char *s, sy_intent_state *out)
{
	for (int i = 0; i < SY_INTENT__COUNT; i++)
		if (s != NULL && strcmp(s, state_names[i]) == 0) {
			*out = (sy_intent_state)i;
			return SY_CLIENT_OK;
		}
	return SY_CLIENT_ESTORE;
}

const char *sy_client_row_state_name(sy_client_row_state s)
{
	switch (s) {
	case SY_ROW_SYNCED: return "synced";
	case SY_ROW_PENDING: return "pending";
	case SY_ROW_CONFLICT: return "conflict";
	case SY_ROW_BLOCKED: return "blocked";
	}
	return "unknown";
}

sy_client_rc sy_cl_new_txn(sy_client *c, bool atomic, int64_t *id, sy_client_error *err)
{
	sqlite3_stmt *st;
	sy_client_rc rc = sy_cl_prepare_cached(
	        c, "INSERT INTO txns(atomic, created_ms) VALUES (?, ?)", &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_int(st, 1, atomic);
	sqlite3_bind_int64(st, 2, sy_cl_now(c));
	if ((rc = sy_cl_run_cached(c, st, err)) == SY_CLIENT_OK)
		*id = sqlite3_last_insert_rowid(c->db);
	return rc;
}

sy_client_rc sy_cl_intent_insert(sy_client *c, int64_t txn, bool normalized, int64_t ord,
                                 const char *table, const char *pk, const char *pk_field,
                                 const char *op, const char *columns, const char *base,
                                 const char *client_version, const sy_schema_ref *schema,
                                 const char *state, const char *pred, char id[SY_UUID_LEN + 1],
                                 sy_client_error *err)
{
	assert(!sqlite3_get_autocommit(c->db)); /* inside the caller's transaction */
	/* a waiting intent waits behind a predecessor; no other state has one yet */
	assert((pred != NULL) == (strcmp(state, "waiting") == 0));
	sqlite3_stmt *st;
	sy_client_rc rc = sy_cl_prepare_cached(
	        c,
	        "INSERT INTO intents(mutation_id, txn, normalized, ord, tbl, pk, pk_field, op,"
	        " columns, base, client_version, schema_version, schema_hash, state, pred,"
	        " created_ms, updated_ms, seq) VALUES (?,?,?,"
	        " CASE WHEN ?4 = 0 THEN (SELECT IFNULL(MAX(seq), 0) + 1 FROM intents) ELSE ?4 END,"
	        " ?,?,?,?,?,?,?,?,?,?,?,?,?,"
	        " CASE WHEN ?4 = 0 THEN (SELECT IFNULL(MAX(seq), 0) + 1 FROM intents) END)",
	        &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sy_cl_new_uuid(id);
	int64_t now = sy_cl_now(c);
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, txn);
	sqlite3_bind_int(st, 3, normalized);
	/* An authored intent's local order is its own sequence number (ord 0). */
	sqlite3_bind_int64(st, 4, ord);
	sqlite3_bind_text(st, 5, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, pk, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 7, pk_field, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 8, op, -1, SQLITE_STATIC);
	if (columns != NULL)
		sqlite3_bind_text(st, 9, columns, -1, SQLITE_STATIC);
	if (base != NULL)
		sqlite3_bind_text(st, 10, base, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 11, client_version, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 12, (sqlite3_int64)schema->version);
	sqlite3_bind_text(st, 13, schema->hash, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 14, state, -1, SQLITE_STATIC);
	if (pred != NULL)
		sqlite3_bind_text(st, 15, pred, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 16, now);
	sqlite3_bind_int64(st, 17, now);
	if ((rc = sy_cl_run_cached(c, st, err)) != SY_CLIENT_OK)
		return rc;
	return SY_CLIENT_OK;
}

/* --- visible state ---------------------------------------------------------- */

/* A new object: a's members not in b, then b's. */
static sy_json *merge(sy_json_doc *doc, const sy_json *a, const sy_json *b)
{
	sy_json *o = sy_json_new_object(doc);
	if (o == NULL)
		return NULL;
	if (a != NULL && a->type == SY_JSON_OBJECT)
		for (size_t i = 0; i < a->u.object.count; i++) {
			const sy_json_member *m = &a->u.object.members[i];
			if (b != NULL && sy_json_get(b, m->key) != NULL)
				continue;
			if (!sy_json_object_putn(doc, o, m->key, m->key_len,
			                         sy_json_copy(doc, m->value)))
				return NULL;
		}
	if (b != NULL && b->type == SY_JSON_OBJECT)
		for (size_t i = 0; i < b->u.object.count; i++) {
			const sy_json_member *m = &b->u.object.members[i];
			if (!sy_json_object_putn(doc, o, m->key, m->key_len,
			                         sy_json_copy(doc, m->value)))
				return NULL;
		}
	return o;
}

static const sy_json *parse_into(sy_json_doc *doc, const char *text)
{
	if (text == NULL)
		return NULL;
	sy_error e = {0};
	sy_json_doc *d = sy_json_parse(text, strlen(text), &e);
	if (d == NULL)
		return NULL;
	sy_json *copy = sy_json_copy(doc, sy_json_doc_root(d));
	sy_json_doc_free(d);
	return copy;
}

typedef sy_cl_overlay overlay;

/*
 * The visible state of (table, pk): the server's row, then every pending,
 * waiting or sealed intent in local order. A conflicted, rejected or blocked
 * intent does not overlay the row: the server's row shows, marked.
 */
sy_client_rc sy_cl_overlay_compute(sy_client *c, const char *table, const char *pk, overlay *out,
                                   sy_client_error *err)
{
	memset(out, 0, sizeof *out);
	sy_json_doc *doc = sy_json_doc_new();
	sqlite3_stmt *st = NULL;
	sy_client_rc rc = SY_CLIENT_OK;
	if (doc == NULL)
		return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	const sy_json *row = NULL;
	const char *pk_field = NULL;
	char *pk_field_owned = NULL;
	if ((rc = sy_cl_prepare_cached(c, "SELECT row, deleted FROM rows WHERE tbl = ? AND pk = ?",
	                               &st, err)) != SY_CLIENT_OK)
		goto fail;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, pk, -1, SQLITE_STATIC);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW) {
		out->known = true;
		if (!sqlite3_column_int(st, 1)) {
			const char *text = (const char *)sqlite3_column_text(st, 0);
			row = text != NULL ? parse_into(doc, text) : sy_json_new_object(doc);
			/* a stored row is JSON (verify checks it): only memory can fail here */
			if (row == NULL) {
				rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
				goto fail;
			}
		}
	} else if (s != SQLITE_DONE) {
		rc = sy_cl_store_fail(c, err, "overlay");
		goto fail;
	}
	sy_cl_release(st);
	st = NULL;
	if (s == SQLITE_DONE) {
		/* No server row: did it leave the user's scope? Then nothing shows. */
		if ((rc = sy_cl_row_left_scope(c, table, pk, &out->left_scope, err)) !=
		    SY_CLIENT_OK)
			goto fail;
		out->known = out->left_scope;
	}
	bool pending = false, conflict = false, blocked = false;
	if ((rc = sy_cl_prepare_cached(c,
	                               "SELECT op, columns, state, pk_field FROM intents"
	                               " WHERE tbl = ? AND pk = ? ORDER BY ord, seq",
	                               &st, err)) != SY_CLIENT_OK)
		goto fail;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, pk, -1, SQLITE_STATIC);
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		out->known = true;
		const char *op = (const char *)sqlite3_column_text(st, 0);
		const char *state = (const char *)sqlite3_column_text(st, 2);
		if (pk_field_owned == NULL)
			pk_field_owned = sy_cl_col_text(st, 3);
		if (strcmp(state, "conflict") == 0) {
			conflict = true;
			continue;
		}
		if (strcmp(state, "rejected") == 0 || strcmp(state, "schema_incompatible") == 0 ||
		    strncmp(state, "blocked", 7) == 0) {
			blocked = true;
			continue;
		}
		if (strcmp(state, "pending") != 0 && strcmp(state, "waiting") != 0 &&
		    strcmp(state, "sealed") != 0)
			continue;
		pending = true;
		const char *ctext = (const char *)sqlite3_column_text(st, 1);
		const sy_json *cols = ctext != NULL ? parse_into(doc, ctext) : NULL;
		if (ctext != NULL && cols == NULL) {
			rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
			goto fail;
		}
		if (strcmp(op, "delete") == 0)
			row = NULL;
		else if (strcmp(op, "insert") == 0)
			row = merge(doc, NULL, cols);
		else
			row = merge(doc, row, cols);
		if (row == NULL && strcmp(op, "delete") != 0) {
			rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
			goto fail;
		}
	}
	if (s != SQLITE_DONE) {
		rc = sy_cl_store_fail(c, err, "overlay");
		goto fail;
	}
	out->state = conflict  ? SY_ROW_CONFLICT
	             : blocked ? SY_ROW_BLOCKED
	             : pending ? SY_ROW_PENDING
	                       : SY_ROW_SYNCED;
	if (out->left_scope)
		row = NULL;
	out->visible = row != NULL;
	if (row != NULL) {
		pk_field = pk_field_owned;
		const sy_table *t = c->manifest != NULL
		                            ? sy_manifest_table(c->manifest, table, strlen(table))
		                            : NULL;
		if (pk_field == NULL && t != NULL)
			pk_field = t->pk.field_id;
		sy_json *full = merge(doc, row, NULL);
		const sy_json *pkv = parse_into(doc, pk);
		if (full == NULL || pkv == NULL ||
		    (pk_field != NULL &&
		     !sy_json_object_put(doc, full, pk_field, sy_json_copy(doc, pkv))) ||
		    (out->row = sy_cl_jcs(full, NULL)) == NULL) {
			rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
			goto fail;
		}
	}
fail:
	sy_cl_release(st);
	sy_free(pk_field_owned);
	sy_json_doc_free(doc);
	if (rc != SY_CLIENT_OK) {
		sy_free(out->row);
		out->row = NULL;
	}
	return rc;
}

/* The canonical pk text of pk_json checked against table t. */
static sy_client_rc canonical_pk(const sy_table *t, const char *pk_json, char **out,
                                 sy_client_error *err)
{
	sy_error e = {0};
	*out = NULL;
	sy_json_doc *d = sy_json_parse(pk_json, strlen(pk_json), &e);
	if (d == NULL)
		return sy_cl_fail(err, SY_CLIENT_EINVAL, "pk: %s", e.message);
	const char *why = NULL;
	sy_client_rc rc = SY_CLIENT_OK;
	if (t != NULL && !sy_wire_valid(t->pk.type, sy_json_doc_root(d), &why))
		rc = sy_cl_fail(err, SY_CLIENT_EINVAL, "pk: not a %s wire value (%s)",
		                sy_type_name(t->pk.type), why != NULL ? why : "invalid");
	else if ((*out = sy_cl_jcs(sy_json_doc_root(d), NULL)) == NULL)
		rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	sy_json_doc_free(d);
	return rc;
}

sy_client_rc sy_client_get(sy_client *c, const char *table, const char *pk_json, char **row_json,
                           sy_client_row_state *state, sy_client_error *err)
{
	char *pk = NULL;
	const sy_table *t =
	        c->manifest != NULL ? sy_manifest_table(c->manifest, table, strlen(table)) : NULL;
	sy_client_rc rc = canonical_pk(t, pk_json, &pk, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	overlay o;
	rc = sy_cl_overlay_compute(c, table, pk, &o, err);
	sy_free(pk);
	if (rc != SY_CLIENT_OK)
		return rc;
	if (!o.known)
		return sy_cl_fail(err, SY_CLIENT_ENOTFOUND, "no such row");
	if (row_json != NULL)
		*row_json = o.row;
	else
		sy_free(o.row);
	if (state != NULL)
		*state = o.state;
	return SY_CLIENT_OK;
}

sy_client_rc sy_client_rows(sy_client *c, const char *table, sy_client_row_fn fn, void *ctx,
                            sy_client_error *err)
{
	sqlite3_stmt *st;
	sy_client_rc rc = sy_cl_prepare(c,
	                                "SELECT pk FROM rows WHERE tbl = ?1 UNION"
	                                " SELECT pk FROM intents WHERE tbl = ?1 ORDER BY 1",
	                                &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	int s;
	while (rc == SY_CLIENT_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
		const char *pk = (const char *)sqlite3_column_text(st, 0);
		overlay o;
		if ((rc = sy_cl_overlay_compute(c, table, pk, &o, err)) == SY_CLIENT_OK) {
			fn(ctx, pk, o.row, o.state);
			sy_free(o.row);
		}
	}
	if (rc == SY_CLIENT_OK && s != SQLITE_DONE)
		rc = sy_cl_store_fail(c, err, "rows");
	sqlite3_finalize(st);
	return rc;
}

/* --- writes ------------------------------------------------------------------ */

sy_client_rc sy_client_begin(sy_client *c, bool atomic, sy_client_txn **out, sy_client_error *err)
{
	*out = NULL;
	if (c->retired)
		return sy_cl_fail(err, SY_CLIENT_EREADONLY,
		                  "the server retired this client; the store is read-only");
	if (c->manifest == NULL)
		return sy_cl_fail(err, SY_CLIENT_ESTATE, "no schema yet: connect first");
	sy_client_txn *t = sy_calloc(1, sizeof *t);
	if (t == NULL)
		return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	t->c = c;
	t->atomic = atomic;
	sy_client_rc rc = sy_cl_begin(c, err);
	if (rc == SY_CLIENT_OK && (rc = sy_cl_new_txn(c, atomic, &t->id, err)) != SY_CLIENT_OK)
		sy_cl_rollback(c);
	if (rc != SY_CLIENT_OK) {
		sy_free(t);
		return rc;
	}
	*out = t;
	return SY_CLIENT_OK;
}

sy_client_rc sy_cl_check_columns(const sy_table *t, const char *columns_json, bool nonempty,
                                 char **out, sy_client_error *err)
{
	sy_error e = {0};
	*out = NULL;
	sy_json_doc *d = sy_json_parse(columns_json, strlen(columns_json), &e);
	if (d == NULL)
		return sy_cl_fail(err, SY_CLIENT_EINVAL, "columns: %s", e.message);
	const sy_json *o = sy_json_doc_root(d);
	sy_client_rc rc = SY_CLIENT_OK;
	if (o->type != SY_JSON_OBJECT) {
		rc = sy_cl_fail(err, SY_CLIENT_EINVAL, "columns: expected an object");
		goto done;
	}
	if (nonempty && o->u.object.count == 0) {
		rc = sy_cl_fail(err, SY_CLIENT_EINVAL, "columns: an update needs a field");
		goto done;
	}
	for (size_t i = 0; i < o->u.object.count; i++) {
		const sy_json_member *m = &o->u.object.members[i];
		const sy_field *f = sy_table_field(t, m->key, m->key_len);
		const char *why = NULL;
		if (f == NULL) {
			rc = sy_cl_fail(err, SY_CLIENT_EINVAL, "columns: %s has no field %s",
			                t->table_id, m->key);
			goto done;
		}
		if (!sy_field_writable(t, f)) {
			rc = sy_cl_fail(err, SY_CLIENT_EINVAL, "columns: %s is not writable",
			                m->key);
			goto done;
		}
		if (m->value->type == SY_JSON_NULL ? !f->nullable
		                                   : !sy_wire_valid(f->type, m->value, &why)) {
			rc = sy_cl_fail(err, SY_CLIENT_EINVAL, "columns: %s: not a %s%s value",
			                m->key, f->nullable ? "nullable " : "",
			                sy_type_name(f->type));
			goto done;
		}
	}
	if ((*out = sy_cl_jcs(o, NULL)) == NULL)
		rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
done:
	sy_json_doc_free(d);
	return rc;
}

sy_client_rc sy_cl_outstanding(sy_client *c, const char *table, const char *pk, bool *any,
                               char **sealed_pred, sy_client_error *err)
{
	sqlite3_stmt *st;
	*any = false;
	*sealed_pred = NULL;
	sy_client_rc rc =
	        sy_cl_prepare_cached(c,
	                             "SELECT state, mutation_id FROM intents WHERE tbl = ? AND"
	                             " pk = ? AND state IN ('pending','waiting','sealed')"
	                             " ORDER BY ord, seq",
	                             &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, pk, -1, SQLITE_STATIC);
	while (sqlite3_step(st) == SQLITE_ROW) {
		*any = true;
		if (strcmp((const char *)sqlite3_column_text(st, 0), "sealed") == 0) {
			sy_free(*sealed_pred);
			*sealed_pred = sy_cl_col_text(st, 1);
		}
	}
	sy_cl_release(st);
	return SY_CLIENT_OK;
}

static sy_client_rc write_intent(sy_client_txn *t, sy_op op, const char *table, const char *pk_json,
                                 const char *columns_json, char *mutation_id, sy_client_error *err)
{
	sy_client *c = t->c;
	char *pk = NULL, *cols = NULL, *pred = NULL, *base = NULL;
	overlay o = {0};
	const sy_table *tb = sy_manifest_table(c->manifest, table, strlen(table));
	if (tb == NULL)
		return sy_cl_fail(err, SY_CLIENT_EINVAL, "no synced table %s", table);
	sy_client_rc rc = canonical_pk(tb, pk_json, &pk, err);
	if (rc == SY_CLIENT_OK && op != SY_OP_DELETE)
		rc = sy_cl_check_columns(tb, columns_json != NULL ? columns_json : "{}",
		                         op == SY_OP_UPDATE, &cols, err);
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_overlay_compute(c, table, pk, &o, err);
	if (rc != SY_CLIENT_OK)
		goto done;
	if (op == SY_OP_INSERT && o.visible) {
		rc = sy_cl_fail(err, SY_CLIENT_ESTATE, "the row exists: update it");
		goto done;
	}
	if (op != SY_OP_INSERT && !o.visible) {
		/* doc/contract.md#blocked-predecessors: no resurrection, and no update or delete
		 * without a real base. */
		rc = sy_cl_fail(err, SY_CLIENT_ENOTFOUND, "no visible row to %s",
		                op == SY_OP_UPDATE ? "update" : "delete");
		goto done;
	}
	bool any = false;
	if ((rc = sy_cl_outstanding(c, table, pk, &any, &pred, err)) != SY_CLIENT_OK)
		goto done;
	if (!any && op != SY_OP_INSERT &&
	    (rc = sy_cl_row_version(c, table, pk, &base, err)) != SY_CLIENT_OK)
		goto done;
	char cv[SY_SERVER_TIME_LEN + 1];
	sy_cl_client_version(c, cv);
	char id[SY_UUID_LEN + 1];
	rc = sy_cl_intent_insert(c, t->id, false, 0, table, pk, tb->pk.field_id, sy_op_name(op),
	                         cols, base, cv, &c->schema, pred != NULL ? "waiting" : "pending",
	                         pred, id, err);
	if (rc == SY_CLIENT_OK && mutation_id != NULL)
		memcpy(mutation_id, id, SY_UUID_LEN + 1);
done:
	sy_free(pk);
	sy_free(cols);
	sy_free(pred);
	sy_free(base);
	sy_free(o.row);
	return rc;
}

sy_client_rc sy_client_insert(sy_client_txn *t, const char *table, const char *pk_json,
                              const char *columns_json, char *mutation_id, sy_client_error *err)
{
	return write_intent(t, SY_OP_INSERT, table, pk_json, columns_json, mutation_id, err);
}

sy_client_rc sy_client_update(sy_client_txn *t, const char *table, const char *pk_json,
                              const char *columns_json, char *mutation_id, sy_client_error *err)
{
	return write_intent(t, SY_OP_UPDATE, table, pk_json, columns_json, mutation_id, err);
}

sy_client_rc sy_client_delete(sy_client_txn *t, const char *table, const char *pk_json,
                              char *mutation_id, sy_client_error *err)
{
	return write_intent(t, SY_OP_DELETE, table, pk_json, NULL, mutation_id, err);
}

sy_client_rc sy_client_commit(sy_client_txn *t, sy_client_error *err)
{
	sy_client *c = t->c;
	sy_free(t);
	sy_client_rc rc = sy_cl_commit(c, err);
	if (rc == SY_CLIENT_OK) {
		sy_client_kick(c);
		sy_cl_emit(c, SY_CLIENT_EVENT_INTENT, NULL, NULL, NULL);
	}
	return rc;
}

void sy_client_rollback(sy_client_txn *t)
{
	if (t == NULL)
		return;
	sy_cl_rollback(t->c);
	sy_free(t);
}

/*
 * doc/contract.md#atomic-batches: an atomic transaction goes in one batch, whole.
 * A member waiting behind an in-flight predecessor of its row holds the group
 * back (*verdict 1) until that predecessor is answered; a member that can no
 * longer go (blocked behind a failed predecessor, resolved) means the group
 * never can: its pending and waiting members become blocked_limit
 * atomic_group_blocked (*verdict -1). 0: every member is pending.
 */
sy_client_rc sy_cl_atomic_group_check(sy_client *c, int64_t txn, int *verdict, sy_client_error *err)
{
	assert(!sqlite3_get_autocommit(c->db)); /* inside the caller's transaction */
	sqlite3_stmt *st;
	*verdict = 0;
	sy_client_rc rc = sy_cl_prepare_cached(
	        c,
	        "SELECT coalesce(sum(state = 'waiting'), 0),"
	        " coalesce(sum(state NOT IN ('pending', 'waiting')), 0) FROM intents WHERE txn = ?",
	        &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_int64(st, 1, txn);
	if (sqlite3_step(st) != SQLITE_ROW) {
		rc = sy_cl_store_fail(c, err, "atomic group");
		sy_cl_release(st);
		return rc;
	}
	int64_t waiting = sqlite3_column_int64(st, 0), gone = sqlite3_column_int64(st, 1);
	sy_cl_release(st);
	if (gone == 0) {
		*verdict = waiting > 0 ? 1 : 0;
		return SY_CLIENT_OK;
	}
	*verdict = -1;
	if ((rc = sy_cl_prepare_cached(c,
	                               "UPDATE intents SET state = 'blocked_limit',"
	                               " code = 'atomic_group_blocked', updated_ms = ?"
	                               " WHERE txn = ? AND state IN ('pending', 'waiting')",
	                               &st, err)) != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_int64(st, 1, sy_cl_now(c));
	sqlite3_bind_int64(st, 2, txn);
	if ((rc = sy_cl_run_cached(c, st, err)) != SY_CLIENT_OK)
		return rc;
	return sy_cl_block_waiters(c, err);
}

/*
 * An intent waiting behind a mutation that an atomic group's blocking kept off the wire
 * (blocked_limit) would wait for ever: it is blocked_by_predecessor, linked to it.
 */
sy_client_rc sy_cl_block_waiters(sy_client *c, sy_client_error *err)
{
	assert(!sqlite3_get_autocommit(c->db)); /* inside the caller's transaction */
	sqlite3_stmt *st;
	sy_client_rc rc = sy_cl_prepare_cached(
	        c,
	        "UPDATE intents SET state = 'blocked_by_predecessor', link = pred, updated_ms = ?"
	        " WHERE state = 'waiting' AND pred IN"
	        " (SELECT mutation_id FROM intents WHERE state = 'blocked_limit')",
	        &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_int64(st, 1, sy_cl_now(c));
	return sy_cl_run_cached(c, st, err);
}

/* The intent of the row authored last before local order ord that is not folded (a
 * new string), or NULL: the predecessor a dependent without a base is blocked behind. */
char *sy_cl_row_pred(sy_client *c, const char *table, const char *pk, int64_t ord)
{
	sqlite3_stmt *st;
	if (sy_cl_prepare_cached(
	            c,
	            "SELECT mutation_id FROM intents WHERE tbl = ? AND pk = ? AND ord < ?"
	            " AND state NOT IN ('superseded_before_send', 'cancelled_before_send')"
	            " ORDER BY ord DESC, seq DESC LIMIT 1",
	            &st, NULL) != SY_CLIENT_OK)
		return NULL;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, pk, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, ord);
	char *id = sqlite3_step(st) == SQLITE_ROW ? sy_cl_col_text(st, 0) : NULL;
	sy_cl_release(st);
	return id;
}
