/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push.h: push requests. It validates the structure of a request, and builds the
 * normalized arrays the fingerprints hash.
 *
 * Rules: doc/contract.md#mutation-shapes (the shape of each mutation),
 * doc/contract.md#push-request (what answers 400 invalid_request).
 * Notes: It checks everything of a 400 invalid_request that needs no database.
 */
#ifndef SYNCHRO_PUSH_H
#define SYNCHRO_PUSH_H

#include "synchro/buf.h"
#include "synchro/json.h"
#include "synchro/manifest.h"
#include "synchro/scalar.h"

#define SY_PUSH_MAX_BODY      1048576 /* raw and canonical request octets */
#define SY_PUSH_MAX_MUTATIONS 1000
#define SY_PUSH_MAX_MUTATION  65536 /* octets of one normalized mutation (JCS) */
#define SY_PUSH_MAX_COLUMNS   256

typedef enum { SY_OP_INSERT, SY_OP_UPDATE, SY_OP_DELETE } sy_op;

/* "insert", "update", "delete" (borrowed, static). */
const char *sy_op_name(sy_op op);

typedef struct {
	const char *field_id; /* decoded UTF-8, borrowed from the request document */
	size_t field_len;
	const sy_json *value; /* the exact submitted JSON value, borrowed likewise */
} sy_column;

/*
 * One mutation of a request: its strings and JSON values are borrowed from the
 * request's document; columns, pk_canonical and normalized are owned by the
 * request. All live until sy_push_request_free().
 */
typedef struct {
	size_t ordinal; /* position in the request, from 0 */
	char mutation_id[SY_UUID_LEN + 1];
	const char *table_id;
	size_t table_len;
	const char *pk_field;
	size_t pk_field_len;
	const sy_json *pk_value; /* a JSON string or finite number */
	sy_schema_ref authored_schema;
	sy_op op;
	const char *base_version; /* NULL when absent */
	size_t base_len;
	const char *client_version;
	size_t client_version_len;
	bool has_columns;
	sy_column *columns; /* sorted by unsigned UTF-8 bytes of field_id */
	size_t column_count;
	/* JCS bytes of the normalized pk [field_id, wire_value]: the typed pk identity */
	char *pk_canonical;
	size_t pk_canonical_len;
	/* JCS bytes of normalized_mutation (doc/contract.md#normalized-mutation), NUL-terminated */
	char *normalized;
	size_t normalized_len;
} sy_mutation;

typedef struct {
	sy_json_doc *doc; /* owned by the request: the mutations' strings and values live in it */
	char client_id[SY_UUID_LEN + 1];
	uint64_t client_generation;
	char batch_id[SY_UUID_LEN + 1];
	sy_schema_ref schema;
	bool atomic;
	sy_mutation *mutations; /* in request order */
	size_t mutation_count;
} sy_push_request;

/*
 * Parses and structurally validates a push body: every rule doc/contract.md#push-request answers
 * with 400 invalid_request that needs neither the database nor the current
 * schema, including the atomic rule that one request must not repeat a
 * (table, canonical pk) pair. body is borrowed for the call. Returns a new
 * request (sy_push_request_free()); NULL with *err set: SY_ERR_INVALID_REQUEST with a
 * message naming the member path ("mutations[3].base_version: required for
 * update"; "(root)" for the body itself), or SY_ERR_NOMEM.
 */
SY_MUST_CHECK sy_push_request *sy_push_parse(const char *body, size_t len, sy_error *err);
/* Accepts NULL. */
void sy_push_request_free(sy_push_request *req);

/*
 * The 400 rule that needs the current schema but no database (doc/contract.md#push-request):
 * for every mutation whose table is in `current`, the pk field must be the
 * table's pk field and its value a canonical wire value of the pk's type.
 * Tables absent from `current` are left to per-mutation classification.
 * Returns false with *err set (SY_ERR_INVALID_REQUEST naming the member path, or
 * SY_ERR_NOMEM).
 */
SY_MUST_CHECK bool sy_push_check_schema(const sy_push_request *req, const sy_manifest *current,
                                        sy_error *err);
/*
 * The same rule for mutation i (< req->mutation_count) against table t alone (whichever
 * schema version t is of): its pk field must be t's and its value canonical for t's pk type. False
 * with *err set: SY_ERR_INVALID_REQUEST naming the member path, or SY_ERR_NOMEM.
 */
SY_MUST_CHECK bool sy_push_check_pk(const sy_push_request *req, size_t i, const sy_table *t,
                                    sy_error *err);

/*
 * Appends the normalized schema_ref [version_decimal_string, hash] as JCS
 * bytes; false when memory runs out (out->failed is set).
 */
SY_MUST_CHECK bool sy_push_write_schema_ref(sy_buf *out, const sy_schema_ref *ref);

#endif
