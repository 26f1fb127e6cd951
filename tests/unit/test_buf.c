/* SPDX-License-Identifier: BSD-2-Clause */
/* The byte buffer's contract (buf.h): NUL-terminated whenever data is non-NULL, a
 * sticky failure, and the storage handed over by sy_buf_steal(). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/buf.h"
#include "testutil.h"

static void test_terminated(void)
{
	sy_buf b = SY_BUF_INIT;
	CU_ASSERT_TRUE(sy_buf_reserve(&b, 10));
	CU_ASSERT_PTR_NOT_NULL_FATAL(b.data);
	CU_ASSERT_EQUAL(b.len, 0);
	CU_ASSERT_STRING_EQUAL(b.data, ""); /* reserved, nothing appended yet */
	CU_ASSERT_TRUE(sy_buf_puts(&b, "abc") && sy_buf_putc(&b, 'd'));
	CU_ASSERT_TRUE(sy_buf_printf(&b, "%d", 42));
	CU_ASSERT_STRING_EQUAL(b.data, "abcd42");
	CU_ASSERT_EQUAL(b.len, 6);
	sy_buf_reset(&b);
	CU_ASSERT_STRING_EQUAL(b.data, "");
	CU_ASSERT_EQUAL(b.len, 0);
	sy_buf_free(&b);
	CU_ASSERT_PTR_NULL(b.data);
	sy_buf_free(NULL);
}

static void test_steal(void)
{
	sy_buf b = SY_BUF_INIT;
	size_t len = 99;
	char *s = sy_buf_steal(&b, &len); /* an empty buffer gives a new "" */
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_STRING_EQUAL(s, "");
	CU_ASSERT_EQUAL(len, 0);
	sy_free(s);

	CU_ASSERT_TRUE(sy_buf_reserve(&b, 1));
	s = sy_buf_steal(&b, &len); /* reserved only: still "" */
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_STRING_EQUAL(s, "");
	CU_ASSERT_EQUAL(len, 0);
	sy_free(s);

	CU_ASSERT_TRUE(sy_buf_append(&b, "xyz", 3));
	s = sy_buf_steal(&b, NULL);
	CU_ASSERT_STRING_EQUAL(s, "xyz");
	CU_ASSERT_PTR_NULL(b.data);
	CU_ASSERT_EQUAL(b.len, 0);
	CU_ASSERT_EQUAL(b.cap, 0);
	sy_free(s);
}

static void test_sticky_failure(void)
{
	sy_buf b = SY_BUF_INIT;
	sy_test_alloc_install(0, true);
	CU_ASSERT_FALSE(sy_buf_puts(&b, "a"));
	CU_ASSERT_TRUE(b.failed);
	sy_test_alloc_install(-1, false);
	CU_ASSERT_FALSE(sy_buf_puts(&b, "b")); /* sticky: memory is back, b stays failed */
	CU_ASSERT_PTR_NULL(b.data);
	sy_buf_reset(&b);
	CU_ASSERT_FALSE(b.failed);
	CU_ASSERT_TRUE(sy_buf_puts(&b, "c"));
	CU_ASSERT_STRING_EQUAL(b.data, "c");
	sy_test_alloc_install(0, true);
	CU_ASSERT_PTR_NULL(sy_buf_steal(&(sy_buf)SY_BUF_INIT, NULL));
	sy_test_alloc_remove();
	sy_buf_free(&b);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"NUL-terminated", test_terminated},
	        {"steal", test_steal},
	        {"sticky failure", test_sticky_failure},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("buf", tests);
	return sy_test_run();
}
