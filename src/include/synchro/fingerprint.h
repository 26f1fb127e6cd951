/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fingerprint.h: SHA-256 push fingerprints and row checksums, over the normalized arrays of
 * push.h.
 *
 * Rules: doc/contract.md#fingerprints (the fingerprints), doc/contract.md#row-checksum (the
 * checksums).
 */
#ifndef SYNCHRO_FINGERPRINT_H
#define SYNCHRO_FINGERPRINT_H

#include "synchro/buf.h"
#include "synchro/push.h"

#define SY_FP_ALGORITHM       "sha256"
#define SY_FP_VERSION         1
#define SY_FP_BATCH_DOMAIN    "synchro:v3:push-batch-fingerprint:v1"
#define SY_FP_MUTATION_DOMAIN "synchro:v3:push-mutation-fingerprint:v1"
#define SY_FP_ROW_DOMAIN      "synchro:v3:row-checksum:v1"
#define SY_FP_DIGEST_LEN      32
#define SY_FP_HEX_LEN         64
#define SY_FP_USER_MAX        256 /* octets of an authenticated user id */

/*
 * A fingerprint as the ledgers store it: algorithm, version and domain tell
 * which normalization produced the digest, so a later revision never
 * reinterprets an existing entry. algorithm and domain are borrowed: the
 * static strings above.
 */
typedef struct sy_fingerprint {
	const char *algorithm;
	int version;
	const char *domain;
	uint8_t digest[SY_FP_DIGEST_LEN];
} sy_fingerprint;

/*
 * The authenticated user id the web server hands over: non-empty, valid UTF-8,
 * no control character (C0, DEL, C1), at most SY_FP_USER_MAX octets. Returns
 * false with *err set (SY_ERR_AUTH_REQUIRED) otherwise.
 */
SY_MUST_CHECK bool sy_fp_user_valid(const char *user, size_t len, sy_error *err);

/*
 * batch_fingerprint of a parsed request for the authenticated user; the tag
 * is "atomic-batch-v1" for an atomic request. False with *err set on an
 * invalid user (SY_ERR_AUTH_REQUIRED) or no memory (SY_ERR_NOMEM).
 */
SY_MUST_CHECK bool sy_fp_batch(const sy_push_request *req, const char *user, size_t user_len,
                               sy_fingerprint *out, sy_error *err);
/* mutation_fingerprint of one mutation of req (same errors). */
SY_MUST_CHECK bool sy_fp_mutation(const sy_push_request *req, const sy_mutation *m,
                                  const char *user, size_t user_len, sy_fingerprint *out,
                                  sy_error *err);
/* mutations[i] for every i < req->mutation_count (same errors; the caller provides the array). */
SY_MUST_CHECK bool sy_fp_mutations(const sy_push_request *req, const char *user, size_t user_len,
                                   sy_fingerprint *mutations, sy_error *err);
/*
 * Both at once: *batch and mutations[i] for every i < req->mutation_count
 * (the caller provides the array).
 */
SY_MUST_CHECK bool sy_fp_push(const sy_push_request *req, const char *user, size_t user_len,
                              sy_fingerprint *batch, sy_fingerprint *mutations, sy_error *err);

/*
 * The exact preimages after the domain and its 0x00: JCS(normalized_batch)
 * and JCS(normalized_mutation_scope), appended to out. For golden vectors
 * and diagnostics; the fingerprints above hash the same bytes.
 */
SY_MUST_CHECK bool sy_fp_batch_preimage(const sy_push_request *req, const char *user,
                                        size_t user_len, sy_buf *out, sy_error *err);
SY_MUST_CHECK bool sy_fp_mutation_preimage(const sy_push_request *req, const sy_mutation *m,
                                           const char *user, size_t user_len, sy_buf *out,
                                           sy_error *err);

/* Lowercase hex of a digest; hex receives 65 bytes (NUL-terminated). */
void sy_fp_hex(const uint8_t digest[SY_FP_DIGEST_LEN], char hex[SY_FP_HEX_LEN + 1]);
/* Parses 64 hex digits (either case) into digest; false otherwise. */
bool sy_fp_from_hex(const char *hex, size_t len, uint8_t digest[SY_FP_DIGEST_LEN]);
/* Equal algorithm, version, domain and digest. */
bool sy_fp_equal(const sy_fingerprint *a, const sy_fingerprint *b);
/*
 * Whether a stored ledger fingerprint (algorithm, version, domain, digest of
 * digest_len octets) is exactly fp.
 */
bool sy_fp_matches(const sy_fingerprint *fp, const char *algorithm, int version, const char *domain,
                   const uint8_t *digest, size_t digest_len);

/*
 * row_checksum (doc/contract.md#row-checksum): lowercase hex SHA-256(SY_FP_ROW_DOMAIN 0x00
 * JCS(["row-v1", schema_ref(outcome_schema), table_id, [pk_field, pk_value],
 * [[field_id, wire_value], ...]])) with the fields of server_row (an object of
 * every non-pk field of the table) sorted by unsigned UTF-8 bytes of field_id.
 * hex receives 65 bytes. False with *err set: SY_ERR_INVALID_REQUEST when
 * server_row is not an object, repeats a field or holds pk_field, pk_value is
 * null or a container, or a value is not serializable; SY_ERR_NOMEM.
 */
SY_MUST_CHECK bool sy_fp_row_checksum(const sy_schema_ref *outcome_schema, const char *table_id,
                                      size_t table_len, const char *pk_field, size_t pk_field_len,
                                      const sy_json *pk_value, const sy_json *server_row,
                                      char hex[SY_FP_HEX_LEN + 1], sy_error *err);
/* The row checksum preimage (after the domain and 0x00), appended to out. */
SY_MUST_CHECK bool sy_fp_row_preimage(const sy_schema_ref *outcome_schema, const char *table_id,
                                      size_t table_len, const char *pk_field, size_t pk_field_len,
                                      const sy_json *pk_value, const sy_json *server_row,
                                      sy_buf *out, sy_error *err);

#endif
