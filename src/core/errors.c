/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * errors.c: error reporting, and the table of error codes. Each code has its HTTP status
 * and says whether it is retryable.
 *
 * Layer: base of src/core (doc/hacking.md).
 * Rules: doc/contract.md#error-codes (the table).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "synchro/common.h"

static const struct {
	const char *name;
	int status;
	bool retryable;
} table[SY_ERR__COUNT] = {
        [SY_ERR_NONE] = {"none", 200, false},
        [SY_ERR_INVALID_REQUEST] = {"invalid_request", 400, false},
        [SY_ERR_AUTH_REQUIRED] = {"auth_required", 401, false},
        [SY_ERR_IDEMPOTENCY_CONFLICT] = {"idempotency_conflict", 409, false},
        [SY_ERR_CLIENT_RETIRED] = {"client_retired", 409, false},
        [SY_ERR_CLIENT_GENERATION_EXPIRED] = {"client_generation_expired", 409, false},
        [SY_ERR_REBUILD_REQUIRED] = {"rebuild_required", 409, false},
        [SY_ERR_CURSOR_EXPIRED] = {"cursor_expired", 409, false},
        [SY_ERR_REBUILD_INVALIDATED] = {"rebuild_invalidated", 409, false},
        [SY_ERR_SCHEMA_MISMATCH] = {"schema_mismatch", 422, false},
        [SY_ERR_UPGRADE_REQUIRED] = {"upgrade_required", 426, false},
        [SY_ERR_RETRY_LATER] = {"retry_later", 429, true},
        [SY_ERR_TEMPORARY_UNAVAILABLE] = {"temporary_unavailable", 503, true},
        [SY_ERR_NOT_FOUND] = {"not_found", 404, false},
        [SY_ERR_METHOD_NOT_ALLOWED] = {"method_not_allowed", 405, false},
        /* An allocation failure is an operational failure of the whole request. */
        [SY_ERR_NOMEM] = {"temporary_unavailable", 503, true},
};

bool sy_error_set(sy_error *err, sy_errcode code, const char *fmt, ...)
{
	if (err == NULL)
		return false;
	err->code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	return false;
}

void sy_error_clear(sy_error *err)
{
	if (err == NULL)
		return;
	err->code = SY_ERR_NONE;
	err->message[0] = '\0';
}

const char *sy_errcode_name(sy_errcode code)
{
	return (unsigned)code < SY_ERR__COUNT ? table[code].name : "internal";
}

int sy_errcode_http_status(sy_errcode code)
{
	return (unsigned)code < SY_ERR__COUNT ? table[code].status : 500;
}

bool sy_errcode_retryable(sy_errcode code)
{
	return (unsigned)code < SY_ERR__COUNT && table[code].retryable;
}
