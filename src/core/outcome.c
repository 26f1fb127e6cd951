/* SPDX-License-Identifier: BSD-2-Clause */
/* Push outcomes: the ADR field table, the 200 and error bodies, the atomic group, the validator. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/fingerprint.h"
#include "synchro/jcs.h"
#include "synchro/outcome.h"

static bool nomem(sy_error *err)
{
	return sy_error_set(err, SY_ERR_NOMEM, "out of memory");
}

static bool schema_ref_ok(const sy_schema_ref *r)
{
	const char *nul = memchr(r->hash, '\0', sizeof r->hash);
	return r->version >= 1 && r->version <= SY_GENERATION_MAX && nul != NULL &&
	       sy_hash_hex_valid(r->hash, (size_t)(nul - r->hash));
}

static bool schema_ref_equal(const sy_schema_ref *a, const sy_schema_ref *b)
{
	return a->version == b->version && strcmp(a->hash, b->hash) == 0;
}

/* ---- one outcome ---- */

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

#define BAD(...) sy_error_set(err, SY_ERR_TEMPORARY_UNAVAILABLE, __VA_ARGS__)

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

static sy_json *schema_ref_json(sy_json_doc *doc, const sy_schema_ref *r)
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
	/* strcmp orders by unsigned bytes: the UTF-8 byte order the ADR asks for */
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
			return nomem(err);
		return BAD("outcome %s: server_row is not a canonical row (%s)", o->mutation_id,
		           e.message);
	}
	if (o->row_checksum != NULL && strcmp(o->row_checksum, sum) != 0)
		return BAD("outcome %s: row_checksum does not match server_row", o->mutation_id);
	return true;
}

static bool put(sy_json_doc *doc, sy_json *obj, const char *key, sy_json *value)
{
	return sy_json_object_put(doc, obj, key, value);
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
	    !put(doc, obj, "outcome_schema", schema_ref_json(doc, &o->outcome_schema)) ||
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
	     !put(doc, obj, "authored_schema", schema_ref_json(doc, &o->authored_schema)) ||
	     !put(doc, obj, "current_schema", schema_ref_json(doc, &o->current_schema)) ||
	     !put(doc, obj, "incompatible_field_ids", field_ids_json(doc, o))))
		goto fail;
	return obj;
fail:
	nomem(err);
	return NULL;
}

bool sy_outcome_write(sy_buf *out, const sy_outcome *o, sy_error *err)
{
	bool ok = false;
	sy_json_doc *doc = sy_json_doc_new();
	if (doc == NULL) {
		nomem(err);
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

/* ---- the 200 body ---- */

/*
 * The body as a tree (what the validator reads) and as bytes: the JCS bytes of each
 * outcome, written once when it is added (the mutation ledger keeps them too), joined
 * per array. The body's JCS is those arrays between its two strings, in JCS member
 * order ("accepted" < "batch_id" < "rejected" < "server_time"), so it is never
 * serialized a second time.
 */
struct sy_outcome_response {
	sy_json_doc *doc;
	sy_json *root;
	sy_json *accepted;
	sy_json *rejected;
	const sy_json *batch_id, *server_time; /* strings of root */
	sy_buf acc, rej;                       /* JCS bytes of the arrays' items, comma-joined */
};

void sy_outcome_response_free(sy_outcome_response *r)
{
	if (r == NULL)
		return;
	sy_json_doc_free(r->doc);
	sy_buf_free(&r->acc);
	sy_buf_free(&r->rej);
	sy_free(r);
}

sy_outcome_response *sy_outcome_response_new(const char *batch_id, const char *server_time,
                                             sy_error *err)
{
	if (!sy_uuid_valid(batch_id, strlen(batch_id)) ||
	    !sy_server_time_valid(server_time, strlen(server_time))) {
		BAD("response: invalid batch_id or server_time");
		return NULL;
	}
	sy_outcome_response *r = sy_calloc(1, sizeof *r);
	if (r == NULL || (r->doc = sy_json_doc_new()) == NULL)
		goto fail;
	sy_buf_init(&r->acc);
	sy_buf_init(&r->rej);
	sy_json_doc *doc = r->doc;
	r->root = sy_json_new_object(doc);
	r->accepted = sy_json_new_array(doc);
	r->rejected = sy_json_new_array(doc);
	if (r->root == NULL || !put(doc, r->root, "batch_id", sy_json_new_cstring(doc, batch_id)) ||
	    !put(doc, r->root, "server_time", sy_json_new_cstring(doc, server_time)) ||
	    !put(doc, r->root, "accepted", r->accepted) ||
	    !put(doc, r->root, "rejected", r->rejected))
		goto fail;
	r->batch_id = sy_json_get(r->root, "batch_id");
	r->server_time = sy_json_get(r->root, "server_time");
	return r;
fail:
	sy_outcome_response_free(r);
	nomem(err);
	return NULL;
}

/* Files outcome v (in r->doc) under its status, in the tree and as bytes; its JCS bytes
 * are also appended to out unless out is NULL. */
static bool add_item(sy_outcome_response *r, sy_json *v, bool applied, sy_buf *out, sy_error *err)
{
	if (!sy_json_array_push(r->doc, applied ? r->accepted : r->rejected, v))
		return nomem(err);
	sy_buf *items = applied ? &r->acc : &r->rej;
	size_t before = items->len;
	if (before > 0 && !sy_buf_putc(items, ','))
		return nomem(err);
	size_t at = items->len;
	if (!sy_jcs_write(items, v, err)) {
		if (!items->failed && items->data != NULL) {
			items->len = before; /* nothing of a value JCS cannot write */
			items->data[before] = '\0';
		}
		return false;
	}
	return out == NULL || sy_buf_append(out, items->data + at, items->len - at) || nomem(err);
}

bool sy_outcome_response_add_write(sy_outcome_response *r, const sy_outcome *o, sy_buf *out,
                                   sy_error *err)
{
	sy_json *v = sy_outcome_to_json(r->doc, o, err);
	return v != NULL && add_item(r, v, o->status == SY_STATUS_APPLIED, out, err);
}

bool sy_outcome_response_add(sy_outcome_response *r, const sy_outcome *o, sy_error *err)
{
	return sy_outcome_response_add_write(r, o, NULL, err);
}

bool sy_outcome_response_add_json(sy_outcome_response *r, const sy_json *outcome, sy_error *err)
{
	const sy_json *st = outcome->type == SY_JSON_OBJECT ? sy_json_get(outcome, "status") : NULL;
	sy_status status;
	if (st == NULL || st->type != SY_JSON_STRING ||
	    !sy_status_from_name(st->u.string.data, st->u.string.len, &status))
		return BAD("response: a stored outcome has no valid status");
	sy_json *v = sy_json_copy(r->doc, outcome);
	if (v == NULL)
		return nomem(err);
	return add_item(r, v, status == SY_STATUS_APPLIED, NULL, err);
}

bool sy_outcome_response_write(const sy_outcome_response *r, sy_buf *out, sy_error *err)
{
	if (r->acc.failed || r->rej.failed)
		return nomem(err);
	if (!sy_buf_puts(out, "{\"accepted\":[") || !sy_buf_append(out, r->acc.data, r->acc.len) ||
	    !sy_buf_puts(out, "],\"batch_id\":") ||
	    !sy_jcs_write_string(out, r->batch_id->u.string.data, r->batch_id->u.string.len) ||
	    !sy_buf_puts(out, ",\"rejected\":[") || !sy_buf_append(out, r->rej.data, r->rej.len) ||
	    !sy_buf_puts(out, "],\"server_time\":") ||
	    !sy_jcs_write_string(out, r->server_time->u.string.data,
	                         r->server_time->u.string.len) ||
	    !sy_buf_putc(out, '}'))
		return nomem(err);
	return true;
}

bool sy_outcome_write_response(sy_buf *out, const char *batch_id, const char *server_time,
                               const sy_outcome *outcomes, size_t n, sy_error *err)
{
	bool ok = false;
	sy_outcome_response *r = sy_outcome_response_new(batch_id, server_time, err);
	if (r == NULL)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!sy_outcome_response_add(r, &outcomes[i], err))
			goto fail;
	ok = sy_outcome_response_write(r, out, err);
fail:
	sy_outcome_response_free(r);
	return ok;
}

/* ---- request-level error bodies ---- */

bool sy_outcome_error_body(sy_buf *out, sy_errcode code, const char *message,
                           const sy_schema_ref *current, const sy_schema_ref *received,
                           sy_error *err)
{
	if (code == SY_ERR_NONE || (unsigned)code >= SY_ERR__COUNT || message == NULL)
		return BAD("error body: needs an error code and a message");
	bool mismatch = code == SY_ERR_SCHEMA_MISMATCH;
	if (mismatch != (current != NULL) || mismatch != (received != NULL))
		return BAD("error body: current and received schemas go with schema_mismatch only");
	if (mismatch && (!schema_ref_ok(current) || !schema_ref_ok(received)))
		return BAD("error body: invalid schema reference");
	bool ok = false;
	sy_json_doc *doc = sy_json_doc_new();
	if (doc == NULL) {
		nomem(err);
		goto fail;
	}
	sy_json *root = sy_json_new_object(doc);
	sy_json *e = sy_json_new_object(doc);
	if (root == NULL || e == NULL || !put(doc, root, "error", e) ||
	    !put(doc, e, "code", sy_json_new_cstring(doc, sy_errcode_name(code))) ||
	    !put(doc, e, "message", sy_json_new_cstring(doc, message)) ||
	    !put(doc, e, "retryable", sy_json_new_bool(doc, sy_errcode_retryable(code))) ||
	    (mismatch && (!put(doc, e, "current_schema", schema_ref_json(doc, current)) ||
	                  !put(doc, e, "received_schema", schema_ref_json(doc, received))))) {
		nomem(err);
		goto fail;
	}
	ok = sy_jcs_write(out, root, err);
fail:
	sy_json_doc_free(doc);
	return ok;
}

/* ---- the response validator ---- */

enum {
	M_MUTATION_ID,
	M_TABLE,
	M_PK,
	M_OPERATION,
	M_OUTCOME_SCHEMA,
	M_STATUS,
	M_CODE,
	M_MESSAGE,
	M_SERVER_VERSION,
	M_SERVER_ROW,
	M_ROW_CHECKSUM,
	M_RETRYABLE,
	M_AUTHORED_SCHEMA,
	M_CURRENT_SCHEMA,
	M_INCOMPATIBLE,
	M__COUNT
};

static const char *const member_names[M__COUNT] = {
        [M_MUTATION_ID] = "mutation_id",
        [M_TABLE] = "table",
        [M_PK] = "pk",
        [M_OPERATION] = "operation",
        [M_OUTCOME_SCHEMA] = "outcome_schema",
        [M_STATUS] = "status",
        [M_CODE] = "code",
        [M_MESSAGE] = "message",
        [M_SERVER_VERSION] = "server_version",
        [M_SERVER_ROW] = "server_row",
        [M_ROW_CHECKSUM] = "row_checksum",
        [M_RETRYABLE] = "retryable",
        [M_AUTHORED_SCHEMA] = "authored_schema",
        [M_CURRENT_SCHEMA] = "current_schema",
        [M_INCOMPATIBLE] = "incompatible_field_ids",
};

typedef struct {
	const sy_push_request *req;
	const sy_mutation **index; /* request mutations sorted by mutation_id */
	bool *seen;                /* by request ordinal */
	sy_buf a, b;               /* JCS scratch for pk comparisons */
	size_t failing;            /* outcomes whose code is not atomic_batch_rejected */
	bool own_checksums;        /* the builder's own body: checksums not computed again */
	sy_error *err;
} vctx;

#define VBAD(...) sy_error_set(c->err, SY_ERR_TEMPORARY_UNAVAILABLE, __VA_ARGS__)

static bool is_string(const sy_json *v)
{
	return v != NULL && v->type == SY_JSON_STRING;
}

static bool string_equals(const sy_json *v, const char *s, size_t len)
{
	return is_string(v) && v->u.string.len == len && memcmp(v->u.string.data, s, len) == 0;
}

static int compare_mutations(const void *a, const void *b)
{
	return strcmp((*(const sy_mutation *const *)a)->mutation_id,
	              (*(const sy_mutation *const *)b)->mutation_id);
}

static const sy_mutation *lookup(const vctx *c, const sy_json *id)
{
	if (!is_string(id) || id->u.string.len != SY_UUID_LEN)
		return NULL;
	size_t lo = 0, hi = c->req->mutation_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int d = memcmp(id->u.string.data, c->index[mid]->mutation_id, SY_UUID_LEN);
		if (d == 0)
			return c->index[mid];
		if (d < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static bool same_jcs(vctx *c, const sy_json *x, const sy_json *y, bool *same)
{
	sy_error e;
	sy_error_clear(&e);
	sy_buf_reset(&c->a);
	sy_buf_reset(&c->b);
	if (!sy_jcs_write(&c->a, x, &e) || !sy_jcs_write(&c->b, y, &e)) {
		if (e.code == SY_ERR_NOMEM)
			return nomem(c->err);
		/* a value JCS cannot serialize (an overflowing number) echoes nothing */
		*same = false;
		return true;
	}
	*same = c->a.len == c->b.len && memcmp(c->a.data, c->b.data, c->a.len) == 0;
	return true;
}

/* Strictly increasing by unsigned bytes, as the ADR sorts field IDs. */
static bool sorted_unique_strings(const sy_json *arr)
{
	for (size_t i = 0; i < arr->u.array.count; i++) {
		const sy_json *s = arr->u.array.items[i];
		if (!is_string(s))
			return false;
		if (i == 0)
			continue;
		const sy_json *p = arr->u.array.items[i - 1];
		size_t n = p->u.string.len < s->u.string.len ? p->u.string.len : s->u.string.len;
		int d = memcmp(p->u.string.data, s->u.string.data, n);
		if (d > 0 || (d == 0 && p->u.string.len >= s->u.string.len))
			return false;
	}
	return true;
}

static bool check_echo(vctx *c, const char *p, const sy_json **m, const sy_mutation *mut)
{
	if (!string_equals(m[M_TABLE], mut->table_id, mut->table_len))
		return VBAD("%s.table: does not echo the request", p);
	const sy_json *pk = m[M_PK];
	const sy_json *field = pk->type == SY_JSON_OBJECT ? sy_json_get(pk, "field") : NULL;
	const sy_json *value = pk->type == SY_JSON_OBJECT ? sy_json_get(pk, "value") : NULL;
	if (field == NULL || value == NULL || pk->u.object.count != 2)
		return VBAD("%s.pk: must be {\"field\", \"value\"}", p);
	if (!string_equals(field, mut->pk_field, mut->pk_field_len))
		return VBAD("%s.pk.field: does not echo the request", p);
	bool same = false;
	if (!same_jcs(c, value, mut->pk_value, &same))
		return false;
	if (!same)
		return VBAD("%s.pk.value: does not echo the request", p);
	const char *op = sy_op_name(mut->op);
	if (!string_equals(m[M_OPERATION], op, strlen(op)))
		return VBAD("%s.operation: does not echo the request", p);
	return true;
}

static bool check_schema_incompatible(vctx *c, const char *p, const sy_json **m,
                                      const sy_mutation *mut)
{
	static const int required[] = {M_RETRYABLE, M_AUTHORED_SCHEMA, M_CURRENT_SCHEMA,
	                               M_INCOMPATIBLE};
	for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
		if (m[required[i]] == NULL)
			return VBAD("%s: missing member \"%s\"", p, member_names[required[i]]);
	if (m[M_RETRYABLE]->type != SY_JSON_FALSE)
		return VBAD("%s.retryable: must be false", p);
	sy_schema_ref ref;
	if (!sy_schema_ref_parse(m[M_AUTHORED_SCHEMA], &ref) ||
	    !schema_ref_equal(&ref, &mut->authored_schema))
		return VBAD("%s.authored_schema: does not echo the request", p);
	if (!sy_schema_ref_parse(m[M_CURRENT_SCHEMA], &ref))
		return VBAD("%s.current_schema: not a valid schema reference", p);
	if (m[M_INCOMPATIBLE]->type != SY_JSON_ARRAY || !sorted_unique_strings(m[M_INCOMPATIBLE]))
		return VBAD("%s.incompatible_field_ids: must be sorted unique strings", p);
	return true;
}

static bool check_fields(vctx *c, const char *p, const sy_json **m, sy_status status,
                         const sy_mutation *mut, const sy_schema_ref *outcome_schema)
{
	const sy_push_request *req = c->req;
	const sy_json *row = m[M_SERVER_ROW], *sum = m[M_ROW_CHECKSUM], *ver = m[M_SERVER_VERSION];
	sy_code code = SY_CODE_NONE;

	if (status == SY_STATUS_APPLIED) {
		if (m[M_CODE] != NULL || m[M_MESSAGE] != NULL)
			return VBAD("%s.%s: not allowed with status applied", p,
			            m[M_CODE] != NULL ? "code" : "message");
		if (ver == NULL)
			return VBAD("%s: missing member \"server_version\"", p);
	} else {
		if (m[M_CODE] == NULL || m[M_MESSAGE] == NULL)
			return VBAD("%s: missing member \"%s\"", p,
			            m[M_CODE] == NULL ? "code" : "message");
		const sy_json *cv = m[M_CODE];
		if (!is_string(cv) ||
		    !sy_code_from_name(cv->u.string.data, cv->u.string.len, &code) ||
		    sy_code_status(code) != status)
			return VBAD("%s.code: not a %s code", p,
			            status == SY_STATUS_CONFLICT ? "conflict" : "terminal");
		if (!is_string(m[M_MESSAGE]) || m[M_MESSAGE]->u.string.len == 0)
			return VBAD("%s.message: must be a non-empty string", p);
	}
	if (ver != NULL &&
	    (!is_string(ver) || !sy_opaque_version_valid(ver->u.string.data, ver->u.string.len)))
		return VBAD("%s.server_version: not an opaque version", p);
	if (row != NULL && row->type != SY_JSON_OBJECT)
		return VBAD("%s.server_row: not an object", p);
	if (sum != NULL &&
	    (!is_string(sum) || !sy_hash_hex_valid(sum->u.string.data, sum->u.string.len)))
		return VBAD("%s.row_checksum: not a lowercase hex SHA-256", p);

	if (status == SY_STATUS_REJECTED_TERMINAL) {
		if (row != NULL || ver != NULL || sum != NULL)
			return VBAD("%s.%s: not allowed with status rejected_terminal", p,
			            row != NULL   ? "server_row"
			            : ver != NULL ? "server_version"
			                          : "row_checksum");
	} else {
		if (row != NULL && sum == NULL)
			return VBAD("%s.row_checksum: required with server_row", p);
		if (sum != NULL && row == NULL)
			return VBAD("%s.server_row: required with row_checksum", p);
		if (row != NULL && ver == NULL)
			return VBAD("%s.server_version: required with server_row", p);
	}

	if (code == SY_CODE_SCHEMA_INCOMPATIBLE) {
		if (!check_schema_incompatible(c, p, m, mut))
			return false;
	} else {
		static const int only[] = {M_RETRYABLE, M_AUTHORED_SCHEMA, M_CURRENT_SCHEMA,
		                           M_INCOMPATIBLE};
		for (size_t i = 0; i < sizeof only / sizeof only[0]; i++)
			if (m[only[i]] != NULL)
				return VBAD("%s.%s: only allowed with code schema_incompatible", p,
				            member_names[only[i]]);
	}

	if (code == SY_CODE_ATOMIC_BATCH_REJECTED) {
		if (!req->atomic)
			return VBAD("%s.code: atomic_batch_rejected in a non-atomic response", p);
		if (!string_equals(m[M_MESSAGE], SY_ATOMIC_REJECTED_MESSAGE,
		                   strlen(SY_ATOMIC_REJECTED_MESSAGE)))
			return VBAD("%s.message: must be \"" SY_ATOMIC_REJECTED_MESSAGE "\"", p);
	} else if (status != SY_STATUS_APPLIED) {
		c->failing++;
	}
	/*
	 * An atomic request never carries a mutation replayed from another batch
	 * (ADR: 400), so every outcome of its response was classified under the
	 * request schema.
	 */
	if (req->atomic && !schema_ref_equal(outcome_schema, &req->schema))
		return VBAD("%s.outcome_schema: must be the request schema in an atomic response",
		            p);
	return true;
}

/* ADR: the checksum binds outcome_schema.hash, so the row is checked under that schema. */
static bool check_checksum(vctx *c, const char *p, const sy_json **m, const sy_mutation *mut,
                           const sy_schema_ref *outcome_schema)
{
	char sum[SY_FP_HEX_LEN + 1];
	sy_error e;
	sy_error_clear(&e);
	if (!sy_fp_row_checksum(outcome_schema, mut->table_id, mut->table_len, mut->pk_field,
	                        mut->pk_field_len, mut->pk_value, m[M_SERVER_ROW], sum, &e)) {
		if (e.code == SY_ERR_NOMEM)
			return nomem(c->err);
		return VBAD("%s.server_row: not a canonical row (%s)", p, e.message);
	}
	const sy_json *given = m[M_ROW_CHECKSUM];
	if (given->u.string.len != SY_FP_HEX_LEN ||
	    memcmp(given->u.string.data, sum, SY_FP_HEX_LEN) != 0)
		return VBAD("%s.row_checksum: does not match server_row", p);
	return true;
}

static bool check_outcome(vctx *c, const char *p, const sy_json *o, bool in_accepted, size_t *last)
{
	if (o->type != SY_JSON_OBJECT)
		return VBAD("%s: not an object", p);
	const sy_json *m[M__COUNT] = {NULL};
	for (size_t i = 0; i < o->u.object.count; i++) {
		const sy_json_member *mem = &o->u.object.members[i];
		size_t k = 0;
		while (k < M__COUNT && !(strlen(member_names[k]) == mem->key_len &&
		                         memcmp(member_names[k], mem->key, mem->key_len) == 0))
			k++;
		if (k == M__COUNT)
			return VBAD("%s: unknown member \"%s\"", p, mem->key);
		if (m[k] != NULL)
			return VBAD("%s: duplicate member \"%s\"", p, mem->key);
		m[k] = mem->value;
	}
	for (size_t k = M_MUTATION_ID; k <= M_STATUS; k++)
		if (m[k] == NULL)
			return VBAD("%s: missing member \"%s\"", p, member_names[k]);

	sy_status status;
	const sy_json *st = m[M_STATUS];
	if (!is_string(st) || !sy_status_from_name(st->u.string.data, st->u.string.len, &status))
		return VBAD("%s.status: not a status", p);
	if (in_accepted && status != SY_STATUS_APPLIED)
		return VBAD("%s.status: accepted holds only applied", p);
	if (!in_accepted && status == SY_STATUS_APPLIED)
		return VBAD("%s.status: rejected holds only conflict or rejected_terminal", p);

	const sy_mutation *mut = lookup(c, m[M_MUTATION_ID]);
	if (mut == NULL)
		return VBAD("%s.mutation_id: not in the request", p);
	size_t ordinal = (size_t)(mut - c->req->mutations);
	if (c->seen[ordinal])
		return VBAD("%s.mutation_id: appears more than once", p);
	if (*last != SIZE_MAX && ordinal < *last)
		return VBAD("%s.mutation_id: out of request order", p);
	c->seen[ordinal] = true;
	*last = ordinal;

	if (!check_echo(c, p, m, mut))
		return false;
	sy_schema_ref outcome_schema;
	if (!sy_schema_ref_parse(m[M_OUTCOME_SCHEMA], &outcome_schema))
		return VBAD("%s.outcome_schema: not a valid schema reference", p);
	if (!check_fields(c, p, m, status, mut, &outcome_schema))
		return false;
	if (m[M_SERVER_ROW] != NULL && !c->own_checksums)
		return check_checksum(c, p, m, mut, &outcome_schema);
	return true;
}

static bool check_array(vctx *c, const char *name, const sy_json *arr, bool in_accepted)
{
	if (arr->type != SY_JSON_ARRAY)
		return VBAD("%s: not an array", name);
	size_t last = SIZE_MAX;
	for (size_t i = 0; i < arr->u.array.count; i++) {
		char p[48];
		snprintf(p, sizeof p, "%s[%zu]", name, i);
		if (!check_outcome(c, p, arr->u.array.items[i], in_accepted, &last))
			return false;
	}
	return true;
}

static bool check_response(vctx *c, const sy_json *resp)
{
	static const char *const top[] = {"batch_id", "server_time", "accepted", "rejected"};
	const sy_push_request *req = c->req;
	if (resp->type != SY_JSON_OBJECT)
		return VBAD("response: not an object");
	for (size_t i = 0; i < resp->u.object.count; i++) {
		const sy_json_member *mem = &resp->u.object.members[i];
		size_t k = 0;
		while (k < 4 && !(strlen(top[k]) == mem->key_len &&
		                  memcmp(top[k], mem->key, mem->key_len) == 0))
			k++;
		if (k == 4)
			return VBAD("response: unknown member \"%s\"", mem->key);
	}
	for (size_t k = 0; k < 4; k++)
		if (sy_json_get(resp, top[k]) == NULL)
			return VBAD("response: missing member \"%s\"", top[k]);
	if (resp->u.object.count != 4)
		return VBAD("response: duplicate member");
	if (!string_equals(sy_json_get(resp, "batch_id"), req->batch_id, strlen(req->batch_id)))
		return VBAD("batch_id: does not echo the request");
	const sy_json *t = sy_json_get(resp, "server_time");
	if (!is_string(t) || !sy_server_time_valid(t->u.string.data, t->u.string.len))
		return VBAD("server_time: not a server time");
	const sy_json *accepted = sy_json_get(resp, "accepted");
	const sy_json *rejected = sy_json_get(resp, "rejected");
	if (!check_array(c, "accepted", accepted, true) ||
	    !check_array(c, "rejected", rejected, false))
		return false;
	for (size_t i = 0; i < req->mutation_count; i++)
		if (!c->seen[i])
			return VBAD("mutations[%zu] (%s): missing from the response", i,
			            req->mutations[i].mutation_id);
	/* ADR: an atomic group applies completely, or fails at exactly one mutation. */
	if (req->atomic && rejected->u.array.count > 0) {
		if (accepted->u.array.count > 0)
			return VBAD("atomic response: accepted must be empty when a mutation "
			            "did not apply");
		if (c->failing != 1)
			return VBAD("atomic response: %zu outcomes carry a code other than "
			            "atomic_batch_rejected, not exactly one",
			            c->failing);
	}
	return true;
}

static bool validate(const sy_push_request *req, const sy_json *response, bool own_checksums,
                     sy_error *err)
{
	vctx c = {.req = req, .own_checksums = own_checksums, .err = err};
	sy_buf_init(&c.a);
	sy_buf_init(&c.b);
	bool ok = false;
	size_t n = req->mutation_count;
	c.index = sy_calloc(n, sizeof *c.index);
	c.seen = sy_calloc(n, sizeof *c.seen);
	if (c.index == NULL || c.seen == NULL) {
		nomem(err);
		goto fail;
	}
	for (size_t i = 0; i < n; i++)
		c.index[i] = &req->mutations[i];
	qsort(c.index, n, sizeof *c.index, compare_mutations);
	ok = check_response(&c, response);
fail:
	sy_free(c.index);
	sy_free(c.seen);
	sy_buf_free(&c.a);
	sy_buf_free(&c.b);
	return ok;
}

bool sy_outcome_validate_response(const sy_push_request *req, const sy_json *response,
                                  sy_error *err)
{
	return validate(req, response, false, err);
}

bool sy_outcome_response_check(const sy_outcome_response *r, const sy_push_request *req,
                               sy_error *err)
{
	return validate(req, r->root, true, err);
}
