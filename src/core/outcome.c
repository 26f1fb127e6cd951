/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outcome.c: one push outcome. It checks the outcome and writes its JSON and JCS bytes. It
 * also builds the failed group of an atomic batch.
 *
 * Layer: middle of src/core (doc/hacking.md).
 * Rules: doc/contract.md#outcome-field-rules (the members of an outcome),
 * doc/contract.md#atomic-batches (one failure, every other mutation atomic_batch_rejected).
 * Notes: The row checksum is bound to outcome_schema.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/fingerprint.h"
#include "synchro/jcs.h"
#include "synchro/outcome.h"

#include "outcome_common.h"

void sy_outcome_init(sy_outcome *o, const sy_mutation *m, const sy_schema_ref *outcome_schema)
{
	memset(o, 0, sizeof *o);
	memcpy(o->mutation_id, m->mutation_id, sizeof o->mutation_id);
	o->table_id = m->table_id;
	o->table_len = m->table_len;
	o->pk_field = m->pk_field;
	o->pk_field_len = m->pk_field_len;
	o->pk_value = m->pk_value;
	o->op = m->op;
	o->outcome_schema = *outcome_schema;
	o->status = SY_STATUS_APPLIED;
	o->code = SY_CODE_NONE;
	o->authored_schema = m->authored_schema;
}

void sy_outcome_init_atomic_rejected(sy_outcome *o, const sy_mutation *m,
                                     const sy_schema_ref *request_schema)
{
	sy_outcome_init(o, m, request_schema);
	o->status = SY_STATUS_REJECTED_TERMINAL;
	o->code = SY_CODE_ATOMIC_BATCH_REJECTED;
	o->message = SY_ATOMIC_REJECTED_MESSAGE;
}

bool sy_outcome_check(const sy_outcome *o, sy_error *err)
{
	const char *id = o->mutation_id;
	if (!sy_uuid_valid(id, strnlen(id, sizeof o->mutation_id)))
		return BAD("outcome: invalid mutation_id");
	if (o->table_id == NULL || o->pk_field == NULL || o->pk_value == NULL)
		return BAD("outcome %s: table and pk are required", id);
	if ((unsigned)o->op > SY_OP_DELETE)
		return BAD("outcome %s: invalid operation", id);
	if (!schema_ref_ok(&o->outcome_schema))
		return BAD("outcome %s: invalid outcome_schema", id);
	if ((unsigned)o->status >= SY_STATUS__COUNT || (unsigned)o->code >= SY_CODE__COUNT ||
	    sy_code_status(o->code) != o->status)
		return BAD("outcome %s: code does not belong to status", id);
	if (o->status == SY_STATUS_APPLIED ? o->message != NULL
	                                   : o->message == NULL || o->message[0] == '\0')
		return BAD("outcome %s: a message goes with conflicts and rejections only", id);
	if (o->server_version != NULL &&
	    !sy_opaque_version_valid(o->server_version, strlen(o->server_version)))
		return BAD("outcome %s: invalid server_version", id);
	if (o->server_row != NULL && o->server_row->type != SY_JSON_OBJECT)
		return BAD("outcome %s: server_row is not an object", id);
	if (o->row_checksum != NULL && !sy_hash_hex_valid(o->row_checksum, strlen(o->row_checksum)))
		return BAD("outcome %s: invalid row_checksum", id);
	if (o->row_checksum != NULL && o->server_row == NULL)
		return BAD("outcome %s: row_checksum without server_row", id);
	switch (o->status) {
	case SY_STATUS_APPLIED:
		if (o->server_version == NULL)
			return BAD("outcome %s: applied requires server_version", id);
		break;
	case SY_STATUS_CONFLICT:
		/* a fence-only delete has a version without a row; a row always has its version */
		if (o->server_row != NULL && o->server_version == NULL)
			return BAD("outcome %s: server_row requires server_version", id);
		break;
	default:
		if (o->server_row != NULL || o->server_version != NULL)
			return BAD("outcome %s: rejected_terminal returns no row or version", id);
		break;
	}
	if (o->code == SY_CODE_ATOMIC_BATCH_REJECTED &&
	    strcmp(o->message, SY_ATOMIC_REJECTED_MESSAGE) != 0)
		return BAD("outcome %s: atomic_batch_rejected has the fixed message", id);
	if (o->code == SY_CODE_SCHEMA_INCOMPATIBLE) {
		if (!schema_ref_ok(&o->authored_schema) || !schema_ref_ok(&o->current_schema))
			return BAD("outcome %s: schema_incompatible requires both schemas", id);
		if (o->incompatible_count > 0 && o->incompatible_field_ids == NULL)
			return BAD("outcome %s: incompatible_field_ids missing", id);
		for (size_t i = 0; i < o->incompatible_count; i++)
			if (o->incompatible_field_ids[i] == NULL)
				return BAD("outcome %s: incompatible_field_ids missing", id);
	} else if (o->incompatible_count != 0) {
		return BAD("outcome %s: incompatible_field_ids only with schema_incompatible", id);
	}
	return true;
}

sy_json *sy_outcome_schema_ref_json(sy_json_doc *doc, const sy_schema_ref *r)
{
	sy_json *obj = sy_json_new_object(doc);
	if (obj == NULL ||
	    !sy_json_object_put(doc, obj, "version", sy_json_new_int(doc, (int64_t)r->version)) ||
	    !sy_json_object_put(doc, obj, "hash", sy_json_new_cstring(doc, r->hash)))
		return NULL;
	return obj;
}

static int compare_ids(const void *a, const void *b)
{
	/* strcmp orders by unsigned bytes: the UTF-8 byte order doc/contract.md#normalized-mutation
	 * asks for */
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static sy_json *field_ids_json(sy_json_doc *doc, const sy_outcome *o)
{
	sy_json *arr = sy_json_new_array(doc);
	if (arr == NULL || o->incompatible_count == 0)
		return arr;
	const char **ids = sy_json_doc_alloc(doc, o->incompatible_count * sizeof *ids);
	if (ids == NULL)
		return NULL;
	memcpy(ids, o->incompatible_field_ids, o->incompatible_count * sizeof *ids);
	qsort(ids, o->incompatible_count, sizeof *ids, compare_ids);
	for (size_t i = 0; i < o->incompatible_count; i++) {
		if (i > 0 && strcmp(ids[i - 1], ids[i]) == 0)
			continue;
		if (!sy_json_array_push(doc, arr, sy_json_new_cstring(doc, ids[i])))
			return NULL;
	}
	return arr;
}

/*
 * The checksum of o's row under its outcome schema; a checksum the caller
 * supplied must be that one, so a stale or foreign row can never be encoded.
 */
static bool row_checksum(const sy_outcome *o, char sum[SY_FP_HEX_LEN + 1], sy_error *err)
{
	sy_error e;
	sy_error_clear(&e);
	if (!sy_fp_row_checksum(&o->outcome_schema, o->table_id, o->table_len, o->pk_field,
	                        o->pk_field_len, o->pk_value, o->server_row, sum, &e)) {
		if (e.code == SY_ERR_NOMEM)
			return outcome_nomem(err);
		return BAD("outcome %s: server_row is not a canonical row (%s)", o->mutation_id,
		           e.message);
	}
	if (o->row_checksum != NULL && strcmp(o->row_checksum, sum) != 0)
		return BAD("outcome %s: row_checksum does not match server_row", o->mutation_id);
	return true;
}

sy_json *sy_outcome_to_json(sy_json_doc *doc, const sy_outcome *o, sy_error *err)
{
	if (!sy_outcome_check(o, err))
		return NULL;
	sy_json *obj = sy_json_new_object(doc);
	sy_json *pk = sy_json_new_object(doc);
	if (obj == NULL || pk == NULL)
		goto fail;
	if (!put(doc, pk, "field", sy_json_new_string(doc, o->pk_field, o->pk_field_len)) ||
	    !put(doc, pk, "value", sy_json_copy(doc, o->pk_value)))
		goto fail;
	if (!put(doc, obj, "mutation_id", sy_json_new_cstring(doc, o->mutation_id)) ||
	    !put(doc, obj, "table", sy_json_new_string(doc, o->table_id, o->table_len)) ||
	    !put(doc, obj, "pk", pk) ||
	    !put(doc, obj, "operation", sy_json_new_cstring(doc, sy_op_name(o->op))) ||
	    !put(doc, obj, "outcome_schema", sy_outcome_schema_ref_json(doc, &o->outcome_schema)) ||
	    !put(doc, obj, "status", sy_json_new_cstring(doc, sy_status_name(o->status))))
		goto fail;
	if (o->status != SY_STATUS_APPLIED &&
	    (!put(doc, obj, "code", sy_json_new_cstring(doc, sy_code_name(o->code))) ||
	     !put(doc, obj, "message", sy_json_new_cstring(doc, o->message))))
		goto fail;
	if (o->server_version != NULL &&
	    !put(doc, obj, "server_version", sy_json_new_cstring(doc, o->server_version)))
		goto fail;
	if (o->server_row != NULL) {
		char sum[SY_FP_HEX_LEN + 1];
		if (!row_checksum(o, sum, err))
			return NULL;
		if (!put(doc, obj, "server_row", sy_json_copy(doc, o->server_row)) ||
		    !put(doc, obj, "row_checksum", sy_json_new_cstring(doc, sum)))
			goto fail;
	}
	if (o->code == SY_CODE_SCHEMA_INCOMPATIBLE &&
	    (!put(doc, obj, "retryable", sy_json_new_bool(doc, false)) ||
	     !put(doc, obj, "authored_schema",
	          sy_outcome_schema_ref_json(doc, &o->authored_schema)) ||
	     !put(doc, obj, "current_schema",
	          sy_outcome_schema_ref_json(doc, &o->current_schema)) ||
	     !put(doc, obj, "incompatible_field_ids", field_ids_json(doc, o))))
		goto fail;
	return obj;
fail:
	outcome_nomem(err);
	return NULL;
}

bool sy_outcome_write(sy_buf *out, const sy_outcome *o, sy_error *err)
{
	bool ok = false;
	sy_json_doc *doc = sy_json_doc_new();
	if (doc == NULL) {
		outcome_nomem(err);
		goto fail;
	}
	const sy_json *v = sy_outcome_to_json(doc, o, err);
	if (v == NULL || !sy_jcs_write(out, v, err))
		goto fail;
	ok = true;
fail:
	sy_json_doc_free(doc);
	return ok;
}

bool sy_outcome_atomic_failed_group(const sy_push_request *req, size_t failing,
                                    const sy_outcome *failing_outcome, sy_outcome *out,
                                    sy_error *err)
{
	if (!req->atomic)
		return BAD("atomic group: the request is not atomic");
	if (failing >= req->mutation_count)
		return BAD("atomic group: failing index %zu out of range", failing);
	if (strcmp(failing_outcome->mutation_id, req->mutations[failing].mutation_id) != 0)
		return BAD("atomic group: the failing outcome belongs to another mutation");
	if (failing_outcome->status == SY_STATUS_APPLIED ||
	    failing_outcome->code == SY_CODE_ATOMIC_BATCH_REJECTED)
		return BAD("atomic group: the failing outcome must carry its own failure");
	if (!sy_outcome_check(failing_outcome, err))
		return false;
	for (size_t i = 0; i < req->mutation_count; i++) {
		if (i == failing)
			out[i] = *failing_outcome;
		else
			sy_outcome_init_atomic_rejected(&out[i], &req->mutations[i], &req->schema);
	}
	return true;
}
