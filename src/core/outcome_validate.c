/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outcome_validate.c: the validator every push response passes before it is committed.
 *
 * Layer: middle of src/core (doc/hacking.md).
 * Rules: doc/contract.md#outcome-partition (each mutation once, in order, under its
 * status), doc/contract.md#outcome-members (the members each code allows),
 * doc/contract.md#atomic-batches (all applied, or one failure and the rest
 * atomic_batch_rejected).
 * Notes: The row checksum is bound to outcome_schema.
 */
#include "config.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/fingerprint.h"
#include "synchro/jcs.h"
#include "synchro/outcome.h"

#include "outcome_common.h"

static bool schema_ref_equal(const sy_schema_ref *a, const sy_schema_ref *b)
{
	return a->version == b->version && strcmp(a->hash, b->hash) == 0;
}

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
			return outcome_nomem(c->err);
		/* a value JCS cannot serialize (an overflowing number) echoes nothing */
		*same = false;
		return true;
	}
	*same = c->a.len == c->b.len && memcmp(c->a.data, c->b.data, c->a.len) == 0;
	return true;
}

/* Strictly increasing by unsigned bytes, as doc/contract.md#normalized-mutation sorts field IDs. */
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
	 * (doc/contract.md#atomic-batches: 400), so every outcome of its response was classified
	 * under the request schema.
	 */
	if (req->atomic && !schema_ref_equal(outcome_schema, &req->schema))
		return VBAD("%s.outcome_schema: must be the request schema in an atomic response",
		            p);
	return true;
}

/* doc/contract.md#row-checksum: the checksum binds outcome_schema.hash, so the row is checked under
 * that schema. */
static bool check_checksum(vctx *c, const char *p, const sy_json **m, const sy_mutation *mut,
                           const sy_schema_ref *outcome_schema)
{
	char sum[SY_FP_HEX_LEN + 1];
	sy_error e;
	sy_error_clear(&e);
	if (!sy_fp_row_checksum(outcome_schema, mut->table_id, mut->table_len, mut->pk_field,
	                        mut->pk_field_len, mut->pk_value, m[M_SERVER_ROW], sum, &e)) {
		if (e.code == SY_ERR_NOMEM)
			return outcome_nomem(c->err);
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
	assert(ordinal < c->req->mutation_count); /* lookup() answers from the request's index */
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
	/* doc/contract.md#failed-atomic-group: an atomic group applies completely, or fails at
	 * exactly one mutation. */
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

bool sy_outcome_validate_tree(const sy_push_request *req, const sy_json *response,
                              bool own_checksums, sy_error *err)
{
	vctx c = {.req = req, .own_checksums = own_checksums, .err = err};
	sy_buf_init(&c.a);
	sy_buf_init(&c.b);
	bool ok = false;
	size_t n = req->mutation_count;
	c.index = sy_calloc(n, sizeof *c.index);
	c.seen = sy_calloc(n, sizeof *c.seen);
	if (c.index == NULL || c.seen == NULL) {
		outcome_nomem(err);
		goto fail;
	}
	for (size_t i = 0; i < n; i++)
		c.index[i] = &req->mutations[i];
	qsort(c.index, n, sizeof *c.index, compare_mutations);
#ifndef NDEBUG
	/* lookup() bisects: ids strictly increasing (sy_push_parse refused repeats). */
	for (size_t i = 1; i < n; i++)
		assert(compare_mutations(&c.index[i - 1], &c.index[i]) < 0);
#endif
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
	return sy_outcome_validate_tree(req, response, false, err);
}
