/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pull_answer.c: the answer of a pull or a rebuild page: request-level errors, the 503 of
 * every operational failure, and the canonical 200 body.
 *
 * Layer: middle of src/store (doc/hacking.md).
 * Rules: doc/contract.md#pull-and-rebuild (the answers).
 * Notes: The 200 body is written one change or row at a time. Each row is in wire form
 * under the current schema, with its row_checksum and the mutation_id echo.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "store/pull_internal.h"
#include "synchro/fingerprint.h"
#include "synchro/jcs.h"
#include "synchro/json.h"

void sy_store_read_answer_clear(sy_store_read_answer *a)
{
	sy_buf_free(&a->body);
}

sy_store_status sy_store_read_error(sy_store_read *x, sy_errcode code, const char *message)
{
	x->out->error = code;
	snprintf(x->out->message, sizeof x->out->message, "%s", message);
	return SY_STORE_OK;
}

/* An operational failure: 503, and the status behind it for the caller. */
sy_store_status sy_store_read_fail(sy_store_read *x, sy_store_status st)
{
	sy_store_rollback(x->c);
	x->out->error = SY_ERR_TEMPORARY_UNAVAILABLE;
	snprintf(x->out->message, sizeof x->out->message, "temporarily unavailable; retry");
	return st == SY_STORE_OK ? SY_STORE_FAILED : st;
}

sy_store_status sy_store_read_nomem(sy_store_read *x)
{
	sy_store_fail(x->err, SY_STORE_NOMEM, "out of memory");
	return sy_store_read_fail(x, SY_STORE_NOMEM);
}

sy_store_status sy_store_read_bad_result(sy_store_read *x, const char *what)
{
	sy_store_fail(x->err, SY_STORE_FAILED, "%s: unexpected result", what);
	return sy_store_read_fail(x, SY_STORE_FAILED);
}

static sy_json *schema_json(sy_json_doc *doc, const sy_schema_ref *ref)
{
	sy_json *o = sy_json_new_object(doc);
	if (o == NULL || !sy_json_object_put(doc, o, "hash", sy_json_new_cstring(doc, ref->hash)) ||
	    !sy_json_object_put(doc, o, "version", sy_json_new_int(doc, (int64_t)ref->version)))
		return NULL;
	return o;
}

/* Starts the body document of a 200 answer. */
bool sy_store_read_body_start(sy_store_read *x)
{
	x->doc = sy_json_doc_new();
	if (x->doc == NULL)
		return false;
	sy_schema_ref ref = {.version = (uint64_t)x->p->version};
	memcpy(ref.hash, x->p->hash, sizeof ref.hash);
	x->schema = schema_json(x->doc, &ref);
	x->items = sy_json_new_array(x->doc);
	return x->schema != NULL && x->items != NULL;
}

/*
 * Appends one change (or rebuild row) to the body: the row from r's columns col.. when
 * upsert, its checksum under the current schema, the mutation id when given, the scope
 * exit's marker when left_scope (doc/protocol.md "Membership scopes").
 */
sy_store_item_status sy_store_read_add_item(sy_store_read *x, const sy_store_ptab *pt,
                                            const char *pk, const char *version,
                                            const char *mutation_id, bool upsert, bool left_scope,
                                            const PGresult *r, int row, int col, sy_error *why)
{
	sy_json_doc *doc = x->doc;
	const sy_table *t = pt->t;
	sy_json *pkv = NULL;
	sy_wire_status ws = sy_wire_decode_pg_text(doc, t->pk.type, pk, strlen(pk), &pkv);
	if (ws != SY_WIRE_OK) {
		sy_error_set(why, SY_ERR_INVALID_REQUEST, "table %s: a key has no wire form",
		             t->table_id);
		return ws == SY_WIRE_NOMEM ? SY_STORE_ITEM_NOMEM : SY_STORE_ITEM_BAD_KEY;
	}
	sy_json *o = sy_json_new_object(doc);
	sy_json *pko = sy_json_new_object(doc);
	if (o == NULL || pko == NULL ||
	    !sy_json_object_put(doc, pko, "field", sy_json_new_cstring(doc, t->pk.field_id)) ||
	    !sy_json_object_put(doc, pko, "value", pkv) ||
	    !sy_json_object_put(doc, o, "table", sy_json_new_cstring(doc, t->table_id)) ||
	    !sy_json_object_put(doc, o, "pk", pko) ||
	    !sy_json_object_put(doc, o, "op",
	                        sy_json_new_cstring(doc, upsert ? "upsert" : "delete")) ||
	    !sy_json_object_put(doc, o, "server_version", sy_json_new_cstring(doc, version)) ||
	    !sy_json_object_put(doc, o, "schema", x->schema))
		return SY_STORE_ITEM_NOMEM;
	if (mutation_id != NULL &&
	    !sy_json_object_put(doc, o, "mutation_id", sy_json_new_cstring(doc, mutation_id)))
		return SY_STORE_ITEM_NOMEM;
	if (!upsert && left_scope &&
	    !sy_json_object_put(doc, o, "left_scope", sy_json_new_bool(doc, true)))
		return SY_STORE_ITEM_NOMEM;
	if (upsert) {
		sy_json *rowo = sy_json_new_object(doc);
		if (rowo == NULL)
			return SY_STORE_ITEM_NOMEM;
		for (size_t j = 0; j < t->field_count; j++) {
			const sy_field *f = &t->fields[j];
			int cj = col + (int)j;
			sy_json *v = NULL;
			if (PQgetisnull(r, row, cj)) {
				v = sy_json_new_null(doc);
			} else {
				ws = sy_wire_decode_pg_text(doc, f->type, PQgetvalue(r, row, cj),
				                            (size_t)PQgetlength(r, row, cj), &v);
				if (ws != SY_WIRE_OK) {
					sy_error_set(why, SY_ERR_INVALID_REQUEST,
					             "table %s field %s: a stored value has no "
					             "wire form",
					             t->table_id, f->field_id);
					return ws == SY_WIRE_NOMEM ? SY_STORE_ITEM_NOMEM
					                           : SY_STORE_ITEM_INVALID;
				}
			}
			if (v == NULL || !sy_json_object_put(doc, rowo, f->field_id, v))
				return SY_STORE_ITEM_NOMEM;
		}
		char hex[SY_FP_HEX_LEN + 1];
		sy_schema_ref ref = {.version = (uint64_t)x->p->version};
		memcpy(ref.hash, x->p->hash, sizeof ref.hash);
		sy_error e = {0};
		if (!sy_fp_row_checksum(&ref, t->table_id, strlen(t->table_id), t->pk.field_id,
		                        strlen(t->pk.field_id), pkv, rowo, hex, &e)) {
			sy_error_set(why, e.code, "table %s: row checksum: %s", t->table_id,
			             e.message);
			return e.code == SY_ERR_NOMEM ? SY_STORE_ITEM_NOMEM : SY_STORE_ITEM_INVALID;
		}
		if (!sy_json_object_put(doc, o, "row", rowo) ||
		    !sy_json_object_put(doc, o, "row_checksum", sy_json_new_cstring(doc, hex)))
			return SY_STORE_ITEM_NOMEM;
	}
	if (!sy_json_array_push(doc, x->items, o))
		return SY_STORE_ITEM_NOMEM;
	x->out->items++;
	return SY_STORE_ITEM_OK;
}

sy_store_status sy_store_read_item_failed(sy_store_read *x, sy_store_item_status s,
                                          const sy_error *why)
{
	if (s == SY_STORE_ITEM_NOMEM)
		return sy_store_read_nomem(x);
	sy_store_fail(x->err, SY_STORE_FAILED, "%s", why->message);
	return sy_store_read_fail(x, SY_STORE_FAILED);
}

/* Writes the finished document as the canonical 200 body. */
sy_store_status sy_store_read_body_finish(sy_store_read *x, sy_json *root)
{
	sy_error e = {0};
	sy_json_doc_set_root(x->doc, root);
	sy_buf_reset(&x->out->body);
	if (!sy_jcs_write(&x->out->body, root, &e)) {
		if (e.code == SY_ERR_NOMEM)
			return sy_store_read_nomem(x);
		sy_store_fail(x->err, SY_STORE_FAILED, "response: %s", e.message);
		return sy_store_read_fail(x, SY_STORE_FAILED);
	}
	x->out->error = SY_ERR_NONE;
	return SY_STORE_OK;
}
