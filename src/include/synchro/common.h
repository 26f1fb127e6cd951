/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * common.h: the shared vocabulary of libsynchro: status, error reporting and attributes.
 *
 * Notes: Every public header, libsynchro's and libsynchro-client's, uses three words for
 * ownership:
 *
 *   new       The caller owns the result and releases it with the function
 *             named beside it ("a new request (sy_push_request_free())").
 *   borrowed  No ownership passes: the holder never frees it, and it stays
 *             valid only while its owner, named beside it, lives ("borrowed
 *             from doc"; "borrowed for the call": not kept after it returns).
 *   steals    The function takes ownership of an argument: from the call on
 *             (also when it fails, unless the contract says otherwise) the
 *             callee releases it, and the caller does not use it again.
 *
 * A document owns every value in it (json.h). Values and strings a function makes "in doc"
 * are borrowed from doc. Every *_free() accepts NULL.
 */
#ifndef SYNCHRO_COMMON_H
#define SYNCHRO_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define SY_MUST_CHECK   __attribute__((warn_unused_result))
#define SY_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SY_MUST_CHECK
#define SY_PRINTF(f, a)
#endif

/*
 * Protocol error codes (doc/contract.md#error-codes). SY_ERR_NONE means success. SY_ERR_NOMEM is
 * internal: the caller answers it as an operational failure (503), never as a 400.
 */
typedef enum {
	SY_ERR_NONE = 0,
	SY_ERR_INVALID_REQUEST,           /* 400 */
	SY_ERR_AUTH_REQUIRED,             /* 401 */
	SY_ERR_IDEMPOTENCY_CONFLICT,      /* 409 */
	SY_ERR_CLIENT_RETIRED,            /* 409 */
	SY_ERR_CLIENT_GENERATION_EXPIRED, /* 409 */
	SY_ERR_REBUILD_REQUIRED,          /* 409 */
	SY_ERR_CURSOR_EXPIRED,            /* 409 */
	SY_ERR_REBUILD_INVALIDATED,       /* 409 */
	SY_ERR_SCHEMA_MISMATCH,           /* 422 */
	SY_ERR_UPGRADE_REQUIRED,          /* 426 */
	SY_ERR_RETRY_LATER,               /* 429 */
	SY_ERR_TEMPORARY_UNAVAILABLE,     /* 503 */
	SY_ERR_NOT_FOUND,                 /* 404, unknown route */
	SY_ERR_METHOD_NOT_ALLOWED,        /* 405 */
	SY_ERR_NOMEM,                     /* internal: allocation failed -> 503 */
	SY_ERR__COUNT
} sy_errcode;

#define SY_ERROR_MESSAGE_MAX 256

/* Details of a failure; the caller's own (usually on the stack), filled in by the callee. */
typedef struct {
	sy_errcode code;
	char message[SY_ERROR_MESSAGE_MAX];
} sy_error;

/* Sets err (when non-NULL) and returns false, so callers can `return sy_error_set(...)`. */
bool sy_error_set(sy_error *err, sy_errcode code, const char *fmt, ...) SY_PRINTF(3, 4);
void sy_error_clear(sy_error *err);

/*
 * Wire name of a code ("invalid_request"; borrowed, static). SY_ERR_NOMEM is
 * "temporary_unavailable" (a 503), an out-of-range code "internal".
 */
const char *sy_errcode_name(sy_errcode code);
/* HTTP status of a request-level error code; 500 for an out-of-range code. */
int sy_errcode_http_status(sy_errcode code);
/* Whether the client may retry the same request unchanged (429, 503). */
bool sy_errcode_retryable(sy_errcode code);

#endif
