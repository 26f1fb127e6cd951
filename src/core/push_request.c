/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_request.c: the push request (push.h). It parses the body and checks every
 * structural rule. It also writes the normalized mutation bytes (JCS) the fingerprints hash.
 *
 * Layer: middle of src/core (doc/hacking.md).
 * Rules: doc/contract.md#push-request (what answers 400 invalid_request),
 * doc/contract.md#mutation-shapes (the shape of each mutation),
 * doc/contract.md#normalized-mutation (the bytes the fingerprints hash).
 * Interface:
 *   sy_push_parse()             the body, checked against every structural rule
 *   sy_push_check_schema()      the request against the current schema
 *   sy_push_check_pk()          one mutation's pk against its table
 *   sy_push_write_schema_ref()  a normalized schema_ref as JCS bytes
 * Notes: The checks cover members, types and limits. An atomic request names each
 * (table, pk) once. The current schema's pk rule is checked here too.
 */
#include "config.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/jcs.h"
#include "synchro/push.h"
#include "synchro/types.h"

#define QUOTE_MAX 48 /* input octets of a name quoted in a message */
#define ID_RULE   "must be 1 to 63 octets of UTF-8 without control characters"

typedef struct {
	char s[QUOTE_MAX * 6 + 8];
} quoted;

static const char *const envelope_members[] = {
        "client_id", "client_generation", "batch_id", "schema", "mutations", "atomic",
};

static const char *const mutation_members[] = {
        "mutation_id", "table",          "pk",           "authored_schema",
        "operation",   "client_version", "base_version", "columns",
};

static const char *const pk_members[] = {"field", "value"};

const char *sy_op_name(sy_op op)
{
	switch (op) {
	case SY_OP_INSERT: return "insert";
	case SY_OP_UPDATE: return "update";
	case SY_OP_DELETE: return "delete";
	}
	return "?";
}

/*
 * A name from the request as a double-quoted literal for a message: quote,
 * backslash and control octets escaped so the message stays one line, cut
 * at a character boundary after QUOTE_MAX octets.
 */
static const char *quote(quoted *q, const char *s, size_t len)
{
	size_t o = 0;
	q->s[o++] = '"';
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (i >= QUOTE_MAX && (c & 0xC0) != 0x80) {
			memcpy(q->s + o, "...", 3);
			o += 3;
			break;
		}
		if (c == '"' || c == '\\') {
			q->s[o++] = '\\';
			q->s[o++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			o += (size_t)snprintf(q->s + o, sizeof q->s - o, "\\u%04x", c);
		} else {
			q->s[o++] = (char)c;
		}
	}
	q->s[o++] = '"';
	q->s[o] = '\0';
	return q->s;
}

static bool nomem(sy_error *err)
{
	return sy_error_set(err, SY_ERR_NOMEM, "out of memory");
}

static bool name_is(const char *key, size_t key_len, const char *name)
{
	size_t n = strlen(name);
	return key_len == n && memcmp(key, name, n) == 0;
}

/* The first member of obj whose name is not in names, or NULL. */
static const sy_json_member *unknown_member(const sy_json *obj, const char *const *names,
                                            size_t count)
{
	for (size_t i = 0; i < obj->u.object.count; i++) {
		const sy_json_member *mb = &obj->u.object.members[i];
		bool known = false;
		for (size_t j = 0; j < count && !known; j++)
			known = name_is(mb->key, mb->key_len, names[j]);
		if (!known)
			return mb;
	}
	return NULL;
}

/* Whether every number in v is finite, so JCS (and the fingerprint) can encode it. */
static bool all_finite(const sy_json *v)
{
	switch (v->type) {
	case SY_JSON_NUMBER: return isfinite(v->u.number.value);
	case SY_JSON_ARRAY:
		for (size_t i = 0; i < v->u.array.count; i++)
			if (!all_finite(v->u.array.items[i]))
				return false;
		return true;
	case SY_JSON_OBJECT:
		for (size_t i = 0; i < v->u.object.count; i++)
			if (!all_finite(v->u.object.members[i].value))
				return false;
		return true;
	default: return true;
	}
}

static int compare_columns(const void *pa, const void *pb)
{
	const sy_column *a = pa, *b = pb;
	return sy_manifest_name_compare(a->field_id, a->field_len, b->field_id, b->field_len);
}

/* A name no manifest can hold is malformed intent, not an unknown table or field. */
static bool id_json_valid(const sy_json *v)
{
	return v->type == SY_JSON_STRING &&
	       sy_manifest_name_valid(v->u.string.data, v->u.string.len);
}

bool sy_push_write_schema_ref(sy_buf *out, const sy_schema_ref *ref)
{
	char dec[24];
	int n = snprintf(dec, sizeof dec, "%" PRIu64, ref->version);
	return sy_buf_putc(out, '[') && sy_jcs_write_string(out, dec, (size_t)n) &&
	       sy_buf_putc(out, ',') && sy_jcs_write_string(out, ref->hash, SY_HASH_HEX_LEN) &&
	       sy_buf_putc(out, ']');
}

/* [field_id, wire_value] */
static bool write_pair(sy_buf *out, const char *field, size_t len, const sy_json *value,
                       sy_error *err)
{
	if (!sy_buf_putc(out, '[') || !sy_jcs_write_string(out, field, len) ||
	    !sy_buf_putc(out, ','))
		return nomem(err);
	if (!sy_jcs_write(out, value, err))
		return false;
	return sy_buf_putc(out, ']') || nomem(err);
}

/* JCS(normalized_mutation), written element by element (arrays keep their order). */
static bool write_normalized(sy_buf *out, const sy_mutation *m, sy_error *err)
{
	const char *op = sy_op_name(m->op);
	bool ok = sy_buf_puts(out, "[\"mutation-v1\",") &&
	          sy_jcs_write_string(out, m->mutation_id, SY_UUID_LEN) && sy_buf_putc(out, ',') &&
	          sy_jcs_write_string(out, m->table_id, m->table_len) && sy_buf_putc(out, ',') &&
	          sy_buf_append(out, m->pk_canonical, m->pk_canonical_len) &&
	          sy_buf_putc(out, ',') && sy_push_write_schema_ref(out, &m->authored_schema) &&
	          sy_buf_putc(out, ',') && sy_jcs_write_string(out, op, strlen(op)) &&
	          sy_buf_putc(out, ',');
	if (ok && m->base_version != NULL)
		ok = sy_buf_puts(out, "[1,") &&
		     sy_jcs_write_string(out, m->base_version, m->base_len) &&
		     sy_buf_putc(out, ']');
	else if (ok)
		ok = sy_buf_puts(out, "[0]");
	ok = ok && sy_buf_putc(out, ',') &&
	     sy_jcs_write_string(out, m->client_version, m->client_version_len) &&
	     sy_buf_putc(out, ',');
	if (!ok)
		return nomem(err);
	if (!m->has_columns)
		return sy_buf_puts(out, "[0]]") || nomem(err);
	if (!sy_buf_puts(out, "[1,["))
		return nomem(err);
	for (size_t i = 0; i < m->column_count; i++) {
		const sy_column *c = &m->columns[i];
		if (i > 0 && !sy_buf_putc(out, ','))
			return nomem(err);
		if (!write_pair(out, c->field_id, c->field_len, c->value, err))
			return false;
	}
	return sy_buf_puts(out, "]]]") || nomem(err);
}

static bool invalid(sy_error *err, size_t i, const char *member, const char *what)
{
	return sy_error_set(err, SY_ERR_INVALID_REQUEST, "mutations[%zu].%s: %s", i, member, what);
}

static bool parse_pk(sy_mutation *m, size_t i, const sy_json *pk, sy_error *err)
{
	quoted q;
	if (pk == NULL)
		return invalid(err, i, "pk", "required");
	if (pk->type != SY_JSON_OBJECT)
		return invalid(err, i, "pk", "must be an object {\"field\",\"value\"}");
	const sy_json_member *mb = unknown_member(pk, pk_members, 2);
	if (mb != NULL)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "mutations[%zu].pk: unknown member %s", i,
		                    quote(&q, mb->key, mb->key_len));
	const sy_json *field = sy_json_get(pk, "field");
	const sy_json *value = sy_json_get(pk, "value");
	if (field == NULL)
		return invalid(err, i, "pk.field", "required");
	if (!id_json_valid(field))
		return invalid(err, i, "pk.field", ID_RULE);
	if (value == NULL)
		return invalid(err, i, "pk.value", "required");
	if (value->type != SY_JSON_STRING && value->type != SY_JSON_NUMBER)
		return invalid(err, i, "pk.value", "must be a string or a number");
	if (!all_finite(value))
		return invalid(err, i, "pk.value", "number out of range");
	m->pk_field = field->u.string.data;
	m->pk_field_len = field->u.string.len;
	m->pk_value = value;
	return true;
}

static bool parse_operation(sy_mutation *m, size_t i, const sy_json *v, sy_error *err)
{
	static const sy_op ops[] = {SY_OP_INSERT, SY_OP_UPDATE, SY_OP_DELETE};
	quoted q;
	if (v == NULL)
		return invalid(err, i, "operation", "required");
	if (v->type != SY_JSON_STRING)
		return invalid(err, i, "operation", "must be \"insert\", \"update\" or \"delete\"");
	for (size_t k = 0; k < 3; k++) {
		if (name_is(v->u.string.data, v->u.string.len, sy_op_name(ops[k]))) {
			m->op = ops[k];
			return true;
		}
	}
	/* doc/contract.md#mutation-shapes: create is not a wire operation; upsert is a pull
	 * operation only. */
	return sy_error_set(err, SY_ERR_INVALID_REQUEST,
	                    "mutations[%zu].operation: unsupported operation %s "
	                    "(push accepts only insert, update, delete)",
	                    i, quote(&q, v->u.string.data, v->u.string.len));
}

/* The presence table of doc/contract.md#mutation-shapes. */
static bool parse_presence(sy_mutation *m, size_t i, const sy_json *base, const sy_json *cols,
                           sy_error *err)
{
	char what[64];
	const char *op = sy_op_name(m->op);
	if (m->op == SY_OP_INSERT) {
		if (base != NULL) /* present null is present: it never satisfies "absent" */
			return invalid(err, i, "base_version", "must be absent for insert");
	} else {
		if (base == NULL) {
			snprintf(what, sizeof what, "required for %s", op);
			return invalid(err, i, "base_version", what);
		}
		if (base->type != SY_JSON_STRING ||
		    !sy_opaque_version_valid(base->u.string.data, base->u.string.len))
			return invalid(err, i, "base_version",
			               "must be a non-empty opaque version (printable ASCII, at "
			               "most 128 octets)");
		m->base_version = base->u.string.data;
		m->base_len = base->u.string.len;
	}
	if (m->op == SY_OP_DELETE) {
		if (cols != NULL)
			return invalid(err, i, "columns", "must be absent for delete");
		return true;
	}
	if (cols == NULL) {
		snprintf(what, sizeof what, "required for %s", op);
		return invalid(err, i, "columns", what);
	}
	if (cols->type != SY_JSON_OBJECT)
		return invalid(err, i, "columns", "must be an object");
	if (m->op == SY_OP_UPDATE && cols->u.object.count == 0)
		return invalid(err, i, "columns", "must not be empty for update");
	if (cols->u.object.count > SY_PUSH_MAX_COLUMNS)
		return invalid(err, i, "columns", "more than 256 columns");
	for (size_t k = 0; k < cols->u.object.count; k++) {
		const sy_json_member *mb = &cols->u.object.members[k];
		quoted q;
		if (!sy_manifest_name_valid(mb->key, mb->key_len))
			return sy_error_set(err, SY_ERR_INVALID_REQUEST,
			                    "mutations[%zu].columns[%s]: field id %s", i,
			                    quote(&q, mb->key, mb->key_len), ID_RULE);
		if (!all_finite(mb->value))
			return sy_error_set(err, SY_ERR_INVALID_REQUEST,
			                    "mutations[%zu].columns[%s]: number out of range", i,
			                    quote(&q, mb->key, mb->key_len));
	}
	m->has_columns = true;
	m->column_count = cols->u.object.count;
	if (m->column_count == 0)
		return true;
	m->columns = sy_calloc(m->column_count, sizeof *m->columns);
	if (m->columns == NULL)
		return nomem(err);
	for (size_t k = 0; k < m->column_count; k++) {
		const sy_json_member *mb = &cols->u.object.members[k];
		m->columns[k].field_id = mb->key;
		m->columns[k].field_len = mb->key_len;
		m->columns[k].value = mb->value;
	}
	qsort(m->columns, m->column_count, sizeof *m->columns, compare_columns);
	return true;
}

static bool parse_mutation(sy_mutation *m, size_t i, const sy_json *v, sy_error *err)
{
	quoted q;
	sy_buf b = SY_BUF_INIT;
	m->ordinal = i;
	if (v->type != SY_JSON_OBJECT)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "mutations[%zu]: must be an object", i);
	const sy_json_member *mb = unknown_member(v, mutation_members, 8);
	if (mb != NULL)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "mutations[%zu]: unknown member %s", i,
		                    quote(&q, mb->key, mb->key_len));

	const sy_json *x = sy_json_get(v, "mutation_id");
	if (x == NULL)
		return invalid(err, i, "mutation_id", "required");
	if (x->type != SY_JSON_STRING || !sy_uuid_valid(x->u.string.data, x->u.string.len))
		return invalid(err, i, "mutation_id", "not a canonical UUID");
	memcpy(m->mutation_id, x->u.string.data, SY_UUID_LEN);
	m->mutation_id[SY_UUID_LEN] = '\0';

	x = sy_json_get(v, "table");
	if (x == NULL)
		return invalid(err, i, "table", "required");
	if (!id_json_valid(x))
		return invalid(err, i, "table", ID_RULE);
	m->table_id = x->u.string.data;
	m->table_len = x->u.string.len;

	if (!parse_pk(m, i, sy_json_get(v, "pk"), err))
		return false;

	x = sy_json_get(v, "authored_schema");
	if (x == NULL)
		return invalid(err, i, "authored_schema", "required");
	if (!sy_schema_ref_parse(x, &m->authored_schema))
		return invalid(err, i, "authored_schema", "not a schema reference");

	if (!parse_operation(m, i, sy_json_get(v, "operation"), err))
		return false;

	x = sy_json_get(v, "client_version");
	if (x == NULL)
		return invalid(err, i, "client_version", "required");
	if (x->type != SY_JSON_STRING ||
	    !sy_client_version_valid(x->u.string.data, x->u.string.len))
		return invalid(err, i, "client_version", "not an RFC 3339 UTC timestamp");
	m->client_version = x->u.string.data;
	m->client_version_len = x->u.string.len;

	if (!parse_presence(m, i, sy_json_get(v, "base_version"), sy_json_get(v, "columns"), err))
		return false;

	if (!write_pair(&b, m->pk_field, m->pk_field_len, m->pk_value, err))
		goto fail;
	m->pk_canonical = sy_buf_steal(&b, &m->pk_canonical_len);
	if (m->pk_canonical == NULL) {
		nomem(err);
		goto fail;
	}
	if (!write_normalized(&b, m, err))
		goto fail;
	if (b.len > SY_PUSH_MAX_MUTATION) {
		sy_error_set(err, SY_ERR_INVALID_REQUEST,
		             "mutations[%zu]: normalized mutation exceeds %d octets", i,
		             SY_PUSH_MAX_MUTATION);
		goto fail;
	}
	m->normalized = sy_buf_steal(&b, &m->normalized_len);
	if (m->normalized == NULL) {
		nomem(err);
		goto fail;
	}
	return true;
fail:
	sy_buf_free(&b);
	return false;
}

static int by_ordinal(const sy_mutation *a, const sy_mutation *b)
{
	return a->ordinal < b->ordinal ? -1 : a->ordinal > b->ordinal;
}

static int key_id(const sy_mutation *a, const sy_mutation *b)
{
	return memcmp(a->mutation_id, b->mutation_id, SY_UUID_LEN);
}

/* (table, canonical pk): the row identity an atomic request may address once */
static int key_row(const sy_mutation *a, const sy_mutation *b)
{
	int c = sy_manifest_name_compare(a->table_id, a->table_len, b->table_id, b->table_len);
	return c ? c
	         : sy_manifest_name_compare(a->pk_canonical, a->pk_canonical_len, b->pk_canonical,
	                                    b->pk_canonical_len);
}

static int compare_ids(const void *pa, const void *pb)
{
	const sy_mutation *a = *(const sy_mutation *const *)pa,
	                  *b = *(const sy_mutation *const *)pb;
	int c = key_id(a, b);
	return c ? c : by_ordinal(a, b);
}

static int compare_rows(const void *pa, const void *pb)
{
	const sy_mutation *a = *(const sy_mutation *const *)pa,
	                  *b = *(const sy_mutation *const *)pb;
	int c = key_row(a, b);
	return c ? c : by_ordinal(a, b);
}

/*
 * order is sorted by (key, ordinal). Finds the earliest request position that
 * repeats an earlier key, and that earlier position, so the message does not
 * depend on the sort; false when no key repeats.
 */
static bool first_repeat(const sy_mutation *const *order, size_t n,
                         int (*key)(const sy_mutation *, const sy_mutation *), size_t *later,
                         size_t *earlier)
{
	bool found = false;
	size_t run = 0;
	for (size_t k = 1; k < n; k++) {
		if (key(order[run], order[k]) != 0) {
			run = k;
			continue;
		}
		if (k == run + 1 && (!found || order[k]->ordinal < *later)) {
			*later = order[k]->ordinal;
			*earlier = order[run]->ordinal;
			found = true;
		}
	}
	return found;
}

/* doc/contract.md#atomic-batches: a request repeating a mutation_id, or an atomic one repeating a
 * row, is invalid. */
static bool check_repeats(const sy_push_request *req, sy_error *err)
{
	size_t n = req->mutation_count, later = 0, earlier = 0;
	const sy_mutation **order = sy_calloc(n, sizeof *order);
	if (order == NULL)
		return nomem(err);
	for (size_t k = 0; k < n; k++)
		order[k] = &req->mutations[k];
	bool ok = true;
	qsort(order, n, sizeof *order, compare_ids);
	if (first_repeat(order, n, key_id, &later, &earlier)) {
		ok = sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                  "mutations[%zu].mutation_id: duplicates mutations[%zu]", later,
		                  earlier);
	} else if (req->atomic) {
		qsort(order, n, sizeof *order, compare_rows);
		if (first_repeat(order, n, key_row, &later, &earlier))
			ok = sy_error_set(
			        err, SY_ERR_INVALID_REQUEST,
			        "mutations[%zu]: atomic request repeats the table and pk of "
			        "mutations[%zu]",
			        later, earlier);
	}
	sy_free(order);
	return ok;
}

static bool parse_envelope(sy_push_request *req, const sy_json *root, sy_error *err)
{
	quoted q;
	if (root->type != SY_JSON_OBJECT)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "(root): must be an object");
	const sy_json_member *mb = unknown_member(root, envelope_members, 6);
	if (mb != NULL)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "(root): unknown member %s",
		                    quote(&q, mb->key, mb->key_len));

	const sy_json *x = sy_json_get(root, "client_id");
	if (x == NULL)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "client_id: required");
	if (x->type != SY_JSON_STRING || !sy_uuid_valid(x->u.string.data, x->u.string.len))
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "client_id: not a canonical UUID");
	memcpy(req->client_id, x->u.string.data, SY_UUID_LEN);

	x = sy_json_get(root, "client_generation");
	if (x == NULL)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "client_generation: required");
	if (!sy_generation_parse(x, &req->client_generation))
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "client_generation: not a positive integer literal at most "
		                    "9007199254740991");

	x = sy_json_get(root, "batch_id");
	if (x == NULL)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "batch_id: required");
	if (x->type != SY_JSON_STRING || !sy_uuid_valid(x->u.string.data, x->u.string.len))
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "batch_id: not a canonical UUID");
	memcpy(req->batch_id, x->u.string.data, SY_UUID_LEN);

	x = sy_json_get(root, "schema");
	if (x == NULL)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "schema: required");
	if (!sy_schema_ref_parse(x, &req->schema))
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "schema: not a schema reference");

	x = sy_json_get(root, "atomic");
	if (x != NULL && x->type != SY_JSON_TRUE)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "atomic: only true is allowed");
	req->atomic = x != NULL;

	x = sy_json_get(root, "mutations");
	if (x == NULL)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "mutations: required");
	if (x->type != SY_JSON_ARRAY)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "mutations: must be an array");
	if (x->u.array.count < 1 || x->u.array.count > SY_PUSH_MAX_MUTATIONS)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "mutations: must hold 1 to %d mutations",
		                    SY_PUSH_MAX_MUTATIONS);
	req->mutations = sy_calloc(x->u.array.count, sizeof *req->mutations);
	if (req->mutations == NULL)
		return nomem(err);
	for (size_t i = 0; i < x->u.array.count; i++) {
		/* counted first, so sy_push_request_free() sees a partly built mutation */
		req->mutation_count = i + 1;
		if (!parse_mutation(&req->mutations[i], i, x->u.array.items[i], err))
			return false;
	}
	return true;
}

/* An upper bound of JCS(request) octets per raw octet (see sy_push_parse). */
enum { CANONICAL_GROWTH_MAX = 6 };

/*
 * Adds to *n the numbers in v (nesting is bounded by the parser's depth limit); false when
 * one is not finite (an overflowing literal), which JCS refuses to write: the caller then
 * writes the form to get that refusal.
 */
static bool count_numbers(const sy_json *v, size_t *n)
{
	switch (v->type) {
	case SY_JSON_NUMBER: (*n)++; return isfinite(v->u.number.value);
	case SY_JSON_ARRAY:
		for (size_t i = 0; i < v->u.array.count; i++)
			if (!count_numbers(v->u.array.items[i], n))
				return false;
		return true;
	case SY_JSON_OBJECT:
		for (size_t i = 0; i < v->u.object.count; i++)
			if (!count_numbers(v->u.object.members[i].value, n))
				return false;
		return true;
	default: return true;
	}
}

/* True when JCS(root) of a body of len octets cannot exceed the limit: every number
 * grows by less than SY_JCS_NUMBER_MAX octets, and nothing else grows (sy_push_parse). */
static bool canonical_fits(const sy_json *root, size_t len)
{
	if (len <= SY_PUSH_MAX_BODY / CANONICAL_GROWTH_MAX)
		return true;
	size_t numbers = 0;
	return count_numbers(root, &numbers) &&
	       numbers <= (SY_PUSH_MAX_BODY - len) / SY_JCS_NUMBER_MAX;
}

sy_push_request *sy_push_parse(const char *body, size_t len, sy_error *err)
{
	sy_push_request *req = NULL;
	sy_buf canon = SY_BUF_INIT;
	/* doc/contract.md#push-limits: byte limits are enforced while reading, before anything else
	 * */
	if (len > SY_PUSH_MAX_BODY) {
		sy_error_set(err, SY_ERR_INVALID_REQUEST, "(root): request body exceeds %d octets",
		             SY_PUSH_MAX_BODY);
		return NULL;
	}
	req = sy_calloc(1, sizeof *req);
	if (req == NULL) {
		nomem(err);
		return NULL;
	}
	req->doc = sy_json_parse(body, len, err);
	if (req->doc == NULL)
		goto fail;
	const sy_json *root = sy_json_doc_root(req->doc);
	if (!parse_envelope(req, root, err) || !check_repeats(req, err))
		goto fail;
	/*
	 * The canonical form is wanted for its length only. JCS writes no token longer
	 * than its raw text except a number: at most 21 octets for at least 4 ("1e20"),
	 * never SY_JCS_NUMBER_MAX octets more than its literal. A body of at most a sixth of
	 * the limit cannot reach it, nor a larger one whose numbers could not add what it
	 * lacks (canonical_fits: a 1000-mutation push of 310 KB spent a third of its
	 * parsing writing its form out); only a body that could is written to be measured.
	 */
	if (!canonical_fits(root, len)) {
		if (!sy_jcs_write(&canon, root, err))
			goto fail;
		if (canon.len > SY_PUSH_MAX_BODY) {
			sy_error_set(err, SY_ERR_INVALID_REQUEST,
			             "(root): canonical request exceeds %d octets",
			             SY_PUSH_MAX_BODY);
			goto fail;
		}
		sy_buf_free(&canon);
	}
	return req;
fail:
	sy_buf_free(&canon);
	sy_push_request_free(req);
	return NULL;
}

void sy_push_request_free(sy_push_request *req)
{
	if (req == NULL)
		return;
	for (size_t i = 0; i < req->mutation_count; i++) {
		sy_free(req->mutations[i].columns);
		sy_free(req->mutations[i].pk_canonical);
		sy_free(req->mutations[i].normalized);
	}
	sy_free(req->mutations);
	sy_json_doc_free(req->doc);
	sy_free(req);
}

bool sy_push_check_pk(const sy_push_request *req, size_t i, const sy_table *t, sy_error *err)
{
	assert(i < req->mutation_count);
	const sy_mutation *m = &req->mutations[i];
	if (!name_is(m->pk_field, m->pk_field_len, t->pk.field_id)) {
		quoted q1, q2;
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "mutations[%zu].pk.field: table %s has primary key %s", i,
		                    quote(&q1, t->table_id, strlen(t->table_id)),
		                    quote(&q2, t->pk.field_id, strlen(t->pk.field_id)));
	}
	const char *why = NULL;
	sy_wire_status st = sy_wire_check(t->pk.type, m->pk_value, &why, NULL);
	if (st == SY_WIRE_NOMEM)
		return nomem(err);
	/* doc/contract.md#portable-types: a non-canonical pk value is 400, unlike a column value */
	if (st != SY_WIRE_OK)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "mutations[%zu].pk.value: %s", i,
		                    why != NULL ? why : "not a canonical wire value");
	return true;
}

bool sy_push_check_schema(const sy_push_request *req, const sy_manifest *current, sy_error *err)
{
	for (size_t i = 0; i < req->mutation_count; i++) {
		const sy_mutation *m = &req->mutations[i];
		const sy_table *t = sy_manifest_table(current, m->table_id, m->table_len);
		if (t != NULL && !sy_push_check_pk(req, i, t, err))
			return false;
	}
	return true;
}
