/* SPDX-License-Identifier: BSD-2-Clause */
/* What the core knows of PostgreSQL: the SQLSTATE table (src/core/sqlstate.c) and the type of
 * each manifest type (src/core/pgtypes.c), shared by the server module and the store. */
#include "config.h"

#include <string.h>

#include "synchro/pgtypes.h"
#include "synchro/sqlstate.h"
#include "testutil.h"

static void test_retryable(void)
{
	CU_ASSERT_TRUE(sy_sqlstate_retryable("40001"));
	CU_ASSERT_TRUE(sy_sqlstate_retryable("40P01"));
	/* Other class 40 codes, a lock timeout, a unique violation: not tried again. */
	CU_ASSERT_FALSE(sy_sqlstate_retryable("40000"));
	CU_ASSERT_FALSE(sy_sqlstate_retryable("40002"));
	CU_ASSERT_FALSE(sy_sqlstate_retryable("55P03"));
	CU_ASSERT_FALSE(sy_sqlstate_retryable("23505"));
	CU_ASSERT_FALSE(sy_sqlstate_retryable("57014"));
	CU_ASSERT_FALSE(sy_sqlstate_retryable(""));
	CU_ASSERT_FALSE(sy_sqlstate_retryable(NULL));
	CU_ASSERT_FALSE(sy_sqlstate_retryable("4000"));
	CU_ASSERT_FALSE(sy_sqlstate_retryable("40001x"));
	CU_ASSERT_FALSE(sy_sqlstate_retryable("40p01"));
}

static void test_mapping(void)
{
	static const char *const yes[] = {"42703", "42P01", "42804", "42883", "42000", "42501"};
	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
		CU_ASSERT_TRUE(sy_sqlstate_is_mapping(yes[i]));
	static const char *const no[] = {"40001", "23505", "22P02", "XX000", "4", "42", ""};
	for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
		CU_ASSERT_FALSE(sy_sqlstate_is_mapping(no[i]));
	CU_ASSERT_FALSE(sy_sqlstate_is_mapping(NULL));
	/* No code is both. */
	CU_ASSERT_FALSE(sy_sqlstate_retryable("42P01"));
}

static void test_pg_type_names(void)
{
	/* doc/contract.md#portable-types: the PostgreSQL column of each portable type. */
	static const struct {
		sy_type t;
		const char *pg;
	} rows[] = {
	        {SY_TYPE_TEXT, "text"},
	        {SY_TYPE_INT32, "int4"},
	        {SY_TYPE_INT64, "int8"},
	        {SY_TYPE_FLOAT64, "float8"},
	        {SY_TYPE_NUMERIC, "numeric"},
	        {SY_TYPE_BOOL, "bool"},
	        {SY_TYPE_TIMESTAMP, "timestamptz"},
	        {SY_TYPE_DATE, "date"},
	        {SY_TYPE_UUID, "uuid"},
	        {SY_TYPE_BYTES, "bytea"},
	        {SY_TYPE_JSON, "jsonb"},
	};
	CU_ASSERT_EQUAL(sizeof rows / sizeof rows[0], SY_TYPE__COUNT);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		CU_ASSERT_STRING_EQUAL(sy_type_pg_name(rows[i].t), rows[i].pg);
	/* Only text maps to text: the twin this replaced answered text for most types. */
	for (unsigned t = 0; t < SY_TYPE__COUNT; t++)
		CU_ASSERT_EQUAL(strcmp(sy_type_pg_name((sy_type)t), "text") == 0,
		                t == SY_TYPE_TEXT);
	CU_ASSERT_STRING_EQUAL(sy_type_pg_name(SY_TYPE__COUNT), "text");
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"retryable", test_retryable},
	        {"mapping", test_mapping},
	        {"pg type names", test_pg_type_names},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("pg rules", tests);
	return sy_test_run();
}
