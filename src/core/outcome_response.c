/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outcome_response.c: the bodies of push responses. It writes the 200 body and the
 * request-level error body.
 *
 * Layer: middle of src/core (doc/hacking.md).
 * Rules: doc/contract.md#outcome-partition (the 200 body), doc/contract.md#error-body (the
 * error body).
 * Notes: The 200 body is built twice: as a tree for the validator, and as JCS bytes written
 * once per outcome. The error body is {"error": {code, message, retryable[, current_schema,
 * received_schema]}}.
 */
#include "config.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/jcs.h"
#include "synchro/outcome.h"

#include "outcome_common.h"

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
	outcome_nomem(err);
	return NULL;
}

/* Files outcome v (in r->doc) under its status, in the tree and as bytes; its JCS bytes
 * are also appended to out unless out is NULL. */
static bool add_item(sy_outcome_response *r, sy_json *v, bool applied, sy_buf *out, sy_error *err)
{
	if (!sy_json_array_push(r->doc, applied ? r->accepted : r->rejected, v))
		return outcome_nomem(err);
	sy_buf *items = applied ? &r->acc : &r->rej;
	size_t before = items->len;
	if (before > 0 && !sy_buf_putc(items, ','))
		return outcome_nomem(err);
	size_t at = items->len;
	if (!sy_jcs_write(items, v, err)) {
		if (!items->failed && items->data != NULL) {
			items->len = before; /* nothing of a value JCS cannot write */
			items->data[before] = '\0';
		}
		return false;
	}
	return out == NULL || sy_buf_append(out, items->data + at, items->len - at) ||
	       outcome_nomem(err);
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
		return outcome_nomem(err);
	return add_item(r, v, status == SY_STATUS_APPLIED, NULL, err);
}

bool sy_outcome_response_write(const sy_outcome_response *r, sy_buf *out, sy_error *err)
{
	/* sy_outcome_response_new() made both, or returned NULL. */
	assert(r->batch_id != NULL && r->batch_id->type == SY_JSON_STRING);
	assert(r->server_time != NULL && r->server_time->type == SY_JSON_STRING);
	if (r->acc.failed || r->rej.failed)
		return outcome_nomem(err);
	if (!sy_buf_puts(out, "{\"accepted\":[") || !sy_buf_append(out, r->acc.data, r->acc.len) ||
	    !sy_buf_puts(out, "],\"batch_id\":") ||
	    !sy_jcs_write_string(out, r->batch_id->u.string.data, r->batch_id->u.string.len) ||
	    !sy_buf_puts(out, ",\"rejected\":[") || !sy_buf_append(out, r->rej.data, r->rej.len) ||
	    !sy_buf_puts(out, "],\"server_time\":") ||
	    !sy_jcs_write_string(out, r->server_time->u.string.data,
	                         r->server_time->u.string.len) ||
	    !sy_buf_putc(out, '}'))
		return outcome_nomem(err);
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
		outcome_nomem(err);
		goto fail;
	}
	sy_json *root = sy_json_new_object(doc);
	sy_json *e = sy_json_new_object(doc);
	if (root == NULL || e == NULL || !put(doc, root, "error", e) ||
	    !put(doc, e, "code", sy_json_new_cstring(doc, sy_errcode_name(code))) ||
	    !put(doc, e, "message", sy_json_new_cstring(doc, message)) ||
	    !put(doc, e, "retryable", sy_json_new_bool(doc, sy_errcode_retryable(code))) ||
	    (mismatch &&
	     (!put(doc, e, "current_schema", sy_outcome_schema_ref_json(doc, current)) ||
	      !put(doc, e, "received_schema", sy_outcome_schema_ref_json(doc, received))))) {
		outcome_nomem(err);
		goto fail;
	}
	ok = sy_jcs_write(out, root, err);
fail:
	sy_json_doc_free(doc);
	return ok;
}

bool sy_outcome_response_check(const sy_outcome_response *r, const sy_push_request *req,
                               sy_error *err)
{
	return sy_outcome_validate_tree(req, r->root, true, err);
}
