/* SPDX-License-Identifier: BSD-2-Clause */
/* The table of doc/contract.md#error-codes: error code -> HTTP status and retryable. */
#include "config.h"

#include <string.h>

#include "synchro/common.h"
#include "testutil.h"

static void test_dispatch_table(void)
{
	static const struct {
		sy_errcode code;
		const char *name;
		int status;
		bool retryable;
	} rows[] = {
	        {SY_ERR_INVALID_REQUEST, "invalid_request", 400, false},
	        {SY_ERR_AUTH_REQUIRED, "auth_required", 401, false},
	        {SY_ERR_IDEMPOTENCY_CONFLICT, "idempotency_conflict", 409, false},
	        {SY_ERR_CLIENT_RETIRED, "client_retired", 409, false},
	        {SY_ERR_CLIENT_GENERATION_EXPIRED, "client_generation_expired", 409, false},
	        {SY_ERR_SCHEMA_MISMATCH, "schema_mismatch", 422, false},
	        {SY_ERR_UPGRADE_REQUIRED, "upgrade_required", 426, false},
	        {SY_ERR_RETRY_LATER, "retry_later", 429, true},
	        {SY_ERR_TEMPORARY_UNAVAILABLE, "temporary_unavailable", 503, true},
	        {SY_ERR_REBUILD_REQUIRED, "rebuild_required", 409, false},
	        {SY_ERR_CURSOR_EXPIRED, "cursor_expired", 409, false},
	        {SY_ERR_REBUILD_INVALIDATED, "rebuild_invalidated", 409, false},
	        {SY_ERR_NOMEM, "temporary_unavailable", 503, true},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		CU_ASSERT_STRING_EQUAL(sy_errcode_name(rows[i].code), rows[i].name);
		CU_ASSERT_EQUAL(sy_errcode_http_status(rows[i].code), rows[i].status);
		CU_ASSERT_EQUAL(sy_errcode_retryable(rows[i].code), rows[i].retryable);
	}
	CU_ASSERT_STRING_EQUAL(sy_errcode_name((sy_errcode)999), "internal");
	CU_ASSERT_EQUAL(sy_errcode_http_status((sy_errcode)999), 500);
}

static void test_error_set(void)
{
	sy_error e;
	sy_error_clear(&e);
	CU_ASSERT_EQUAL(e.code, SY_ERR_NONE);
	CU_ASSERT_FALSE(sy_error_set(&e, SY_ERR_INVALID_REQUEST, "mutations[%d].x: bad", 3));
	CU_ASSERT_EQUAL(e.code, SY_ERR_INVALID_REQUEST);
	CU_ASSERT_STRING_EQUAL(e.message, "mutations[3].x: bad");
	CU_ASSERT_FALSE(sy_error_set(NULL, SY_ERR_INVALID_REQUEST, "ignored"));
	char big[600];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	sy_error_set(&e, SY_ERR_INVALID_REQUEST, "%s", big);
	CU_ASSERT_EQUAL(strlen(e.message), SY_ERROR_MESSAGE_MAX - 1);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"dispatch table", test_dispatch_table},
	        {"error set", test_error_set},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("errors", tests);
	return sy_test_run();
}
