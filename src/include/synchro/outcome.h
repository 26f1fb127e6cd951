/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outcome.h: push outcomes on the wire. It encodes one outcome, the 200 body, request-level
 * error bodies and the atomic failed group. It holds the validator every response must
 * pass.
 *
 * Rules: doc/contract.md#outcome-partition (the 200 body), doc/contract.md#failed-atomic-group
 * (the failed group), doc/contract.md#error-body (error bodies),
 * doc/contract.md#outcome-field-rules (what an outcome may hold).
 * Notes: A contract violation found here is a server bug: an outcome that breaks the field
 * rules, or a response that breaks the partition. It is reported as
 * SY_ERR_TEMPORARY_UNAVAILABLE. So the caller rolls back and answers 503, rather than commit
 * a response the contract forbids. Memory exhaustion is SY_ERR_NOMEM.
 */
#ifndef SYNCHRO_OUTCOME_H
#define SYNCHRO_OUTCOME_H

#include "synchro/buf.h"
#include "synchro/json.h"
#include "synchro/matrix.h"
#include "synchro/push.h"
#include "synchro/scalar.h"

/* The fixed message of every atomic_batch_rejected outcome. */
#define SY_ATOMIC_REJECTED_MESSAGE "atomic batch rejected"

/*
 * One mutation outcome. Every pointer is borrowed (from the request, the
 * caller's rows, static strings) and must stay valid while the outcome is
 * encoded; NULL means "absent on the wire".
 */
typedef struct {
	char mutation_id[SY_UUID_LEN + 1];
	const char *table_id; /* table_len bytes */
	size_t table_len;
	const char *pk_field; /* pk_field_len bytes */
	size_t pk_field_len;
	const sy_json *pk_value; /* the request's wire value */
	sy_op op;
	sy_schema_ref outcome_schema; /* the schema that classified the outcome */
	sy_status status;
	sy_code code;               /* SY_CODE_NONE exactly when applied */
	const char *message;        /* required unless applied, where it must be NULL */
	const char *server_version; /* applied: required; conflict: fence or row version */
	const sy_json *server_row;  /* object field_id -> wire value; live row or tombstone */
	/*
	 * NULL: the encoder computes the checksum of server_row (sy_fp_row_checksum
	 * under outcome_schema); else it must be that checksum.
	 */
	const char *row_checksum;
	/* schema_incompatible only ("retryable": false is implied) */
	sy_schema_ref authored_schema;
	sy_schema_ref current_schema;
	const char *const *incompatible_field_ids; /* any order; encoded sorted and unique */
	size_t incompatible_count;
} sy_outcome;

/*
 * Resets o to an applied outcome of m under outcome_schema, with no row and no
 * version, and authored_schema = m's authored schema. The caller then sets
 * status, code, message, row and version.
 */
void sy_outcome_init(sy_outcome *o, const sy_mutation *m, const sy_schema_ref *outcome_schema);
/* Sets o to m's atomic_batch_rejected outcome (doc/contract.md#atomic-batches). */
void sy_outcome_init_atomic_rejected(sy_outcome *o, const sy_mutation *m,
                                     const sy_schema_ref *request_schema);

/* Whether o satisfies the field rules of doc/contract.md#outcome-field-rules for its status and
 * code. */
SY_MUST_CHECK bool sy_outcome_check(const sy_outcome *o, sy_error *err);

/*
 * The wire object of o (checked with sy_outcome_check), borrowed from doc, where it
 * is allocated (o's values are copied). NULL with *err set.
 */
SY_MUST_CHECK sy_json *sy_outcome_to_json(sy_json_doc *doc, const sy_outcome *o, sy_error *err);
/* Appends the JCS bytes of o's wire object (the mutation ledger's canonical outcome). */
SY_MUST_CHECK bool sy_outcome_write(sy_buf *out, const sy_outcome *o, sy_error *err);

/*
 * The failed-group outcomes of an atomic request (doc/contract.md#atomic-batches): out[failing] =
 * *failing_outcome, which must be m's own, not applied and not atomic_batch_rejected (for a
 * conflict the caller has already rebuilt it from the row read after the rollback); every other
 * out[i] is the atomic_batch_rejected outcome of mutation i under the request schema.
 * out holds req->mutation_count outcomes, all of which go to "rejected".
 */
SY_MUST_CHECK bool sy_outcome_atomic_failed_group(const sy_push_request *req, size_t failing,
                                                  const sy_outcome *failing_outcome,
                                                  sy_outcome *out, sy_error *err);

/*
 * The 200 body {"batch_id","server_time","accepted","rejected"}. Outcomes are
 * added in request order; each goes to "accepted" when its status is applied,
 * else to "rejected". The builder does not check the partition: run
 * sy_outcome_validate_response on the result.
 */
typedef struct sy_outcome_response sy_outcome_response;

/*
 * A new builder (sy_outcome_response_free()); batch_id and server_time are copied.
 * NULL with *err set: an invalid batch_id or server_time, or no memory.
 */
SY_MUST_CHECK sy_outcome_response *sy_outcome_response_new(const char *batch_id,
                                                           const char *server_time, sy_error *err);
/* Accepts NULL. */
void sy_outcome_response_free(sy_outcome_response *r);
/* Adds a newly evaluated outcome (checked and encoded; o borrowed for the call, copied). */
SY_MUST_CHECK bool sy_outcome_response_add(sy_outcome_response *r, const sy_outcome *o,
                                           sy_error *err);
/*
 * The same, and appends the outcome's own JCS bytes (what the mutation ledger keeps,
 * byte for byte the outcome inside the body) to out: encoded once for both.
 */
SY_MUST_CHECK bool sy_outcome_response_add_write(sy_outcome_response *r, const sy_outcome *o,
                                                 sy_buf *out, sy_error *err);
/*
 * Adds a stored outcome object verbatim (cross-batch mutation replay); it is
 * borrowed for the call (copied), and filed by its "status" member.
 */
SY_MUST_CHECK bool sy_outcome_response_add_json(sy_outcome_response *r, const sy_json *outcome,
                                                sy_error *err);
/* Appends the JCS bytes of the body. */
SY_MUST_CHECK bool sy_outcome_response_write(const sy_outcome_response *r, sy_buf *out,
                                             sy_error *err);
/*
 * sy_outcome_validate_response on the body being built, every rule but one: the row
 * checksums are not computed again, since the builder computed each from the very row
 * it encodes (a stored outcome's from its row when it was first answered). What is
 * checked is the tree the bytes are written from; that they are its JCS form is the
 * writer's own contract (its tests).
 */
SY_MUST_CHECK bool sy_outcome_response_check(const sy_outcome_response *r,
                                             const sy_push_request *req, sy_error *err);

/* One call: the body of outcomes[0..n) (request order). */
SY_MUST_CHECK bool sy_outcome_write_response(sy_buf *out, const char *batch_id,
                                             const char *server_time, const sy_outcome *outcomes,
                                             size_t n, sy_error *err);

/*
 * Appends the JCS request-level error body {"error":{"code","message","retryable"}}
 * of code (SY_ERR_NOMEM is written as temporary_unavailable). SY_ERR_SCHEMA_MISMATCH
 * requires current and received, which go inside "error" as "current_schema" and
 * "received_schema"; every other code requires both NULL.
 */
SY_MUST_CHECK bool sy_outcome_error_body(sy_buf *out, sy_errcode code, const char *message,
                                         const sy_schema_ref *current,
                                         const sy_schema_ref *received, sy_error *err);

/*
 * The validator doc/contract.md#response-validation requires of every response: whether response (a
 * parsed 200 body) is a complete, ordered outcome partition of req with every field
 * rule of doc/contract.md#outcome-field-rules, the atomic group rule and, where a row is returned,
 * the row checksum. On false, *err names the first violation by member path
 * ("rejected[2].row_checksum: required with server_row").
 */
SY_MUST_CHECK bool sy_outcome_validate_response(const sy_push_request *req, const sy_json *response,
                                                sy_error *err);

#endif
