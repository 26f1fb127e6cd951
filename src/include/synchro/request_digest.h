/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * request_digest.h: the exact octets of a push request as a replay key.
 *
 * Rules: doc/contract.md#exact-replay (a replay answers with the stored response).
 * Notes: The key is a SHA-256 digest over a domain, the authenticated user and the body. It
 * is stored with the batch when the batch first runs. The two ids that key the batch
 * ledger are peeked from the body without parsing it. A later request with an equal digest
 * is the same octets from the same user. So its parse, structural validation and
 * fingerprint are those of the stored batch. The stored response answers it, without doing
 * them again.
 */
#ifndef SYNCHRO_REQUEST_DIGEST_H
#define SYNCHRO_REQUEST_DIGEST_H

#include "synchro/common.h"
#include "synchro/fingerprint.h"
#include "synchro/scalar.h"

/*
 * Names the rules a stored digest stands for: SHA-256 over these octets and the request's
 * structural validation (sy_push_parse) and batch fingerprint. A release whose structural
 * validation refuses a request an earlier one accepted, or whose batch fingerprint of the
 * same request differs, changes the version here, so that no digest stored before answers
 * for a request the rules of that release would judge differently.
 */
#define SY_REQUEST_DIGEST_DOMAIN "synchro:v3:push-request-octets:v1"

/*
 * SHA-256(SY_REQUEST_DIGEST_DOMAIN || 0x00 || uint32 big-endian user_len || user || body)
 * into out. False with *err set (SY_ERR_NOMEM) when the digest cannot be made.
 */
SY_MUST_CHECK bool sy_request_digest(const char *user, size_t user_len, const char *body,
                                     size_t len, uint8_t out[SY_FP_DIGEST_LEN], sy_error *err);

/*
 * The string members "client_id" and "batch_id" of the top-level object of body, each a
 * non-nil canonical UUID (sy_uuid_valid) written without escapes, copied NUL-terminated into
 * client_id and batch_id: true when both were found. False whenever the scan is not sure (not
 * an object, a key or one of the two values with an escape, a repeated key, either missing
 * or not a UUID, a truncated body). Only the top-level members are scanned, up to the two
 * found: a body this accepts may still be invalid. For a body sy_push_parse accepts, the
 * answer is false or that request's own client_id and batch_id.
 */
bool sy_request_peek_ids(const char *body, size_t len, char client_id[SY_UUID_LEN + 1],
                         char batch_id[SY_UUID_LEN + 1]);

#endif
