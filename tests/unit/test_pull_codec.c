/* SPDX-License-Identifier: BSD-2-Clause */
/* Pull cursors and rebuild page tokens (src/store/pull_cursor.c): exact forms, strict parsing,
 * order. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "store/pull.h"
#include "synchro/alloc.h"
#include "testutil.h"

static void test_cursor_format(void)
{
	char out[SY_STORE_CURSOR_LEN + 1];
	sy_store_position p = {0, 0};
	sy_store_cursor_format(&p, out);
	CU_ASSERT_STRING_EQUAL(out, "c1.0000000000000000.00000000");
	p.lsn = 0x1A2B3C4D5E6FULL;
	p.ordinal = 0x7fffffff;
	sy_store_cursor_format(&p, out);
	CU_ASSERT_STRING_EQUAL(out, "c1.00001a2b3c4d5e6f.7fffffff");
	CU_ASSERT_EQUAL(strlen(out), SY_STORE_CURSOR_LEN);
	sy_store_position q;
	CU_ASSERT_TRUE(sy_store_cursor_parse(out, strlen(out), &q));
	CU_ASSERT_EQUAL(q.lsn, p.lsn);
	CU_ASSERT_EQUAL(q.ordinal, p.ordinal);
	p.lsn = UINT64_MAX;
	p.ordinal = 3;
	sy_store_cursor_format(&p, out);
	CU_ASSERT_STRING_EQUAL(out, "c1.ffffffffffffffff.00000003");
	CU_ASSERT_TRUE(sy_store_cursor_parse(out, strlen(out), &q));
	CU_ASSERT_EQUAL(q.lsn, UINT64_MAX);
}

static void test_cursor_refused(void)
{
	static const char *const bad[] = {
	        "",
	        "c1",
	        "c1.0000000000000000.0000000",   /* short ordinal */
	        "c1.000000000000000.00000000",   /* short lsn */
	        "c1.0000000000000000.000000000", /* long */
	        "c2.0000000000000000.00000000",  /* version */
	        "C1.0000000000000000.00000000",
	        "c1.000000000000000A.00000000", /* uppercase */
	        "c1.0000000000000000.80000000", /* ordinal beyond integer */
	        "c1.0000000000000000-00000000",
	        "c1.00000000000000g0.00000000",
	        " c1.0000000000000000.0000000",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		sy_store_position q;
		CU_ASSERT_FALSE(sy_store_cursor_parse(bad[i], strlen(bad[i]), &q));
	}
	/* The length is the caller's: a NUL inside is not the end. */
	const char nul[] = "c1.0000000000000000.0000000\0";
	sy_store_position q;
	CU_ASSERT_FALSE(sy_store_cursor_parse(nul, sizeof nul - 1, &q));
}

static void test_position_order(void)
{
	sy_store_position a = {5, 9}, b = {6, 0}, c = {6, 1};
	CU_ASSERT_EQUAL(sy_store_position_cmp(&a, &b), -1);
	CU_ASSERT_EQUAL(sy_store_position_cmp(&b, &a), 1);
	CU_ASSERT_EQUAL(sy_store_position_cmp(&b, &c), -1);
	CU_ASSERT_EQUAL(sy_store_position_cmp(&c, &c), 0);
	/* Cursor strings order as their positions (fixed-width lowercase hex). */
	char x[SY_STORE_CURSOR_LEN + 1], y[SY_STORE_CURSOR_LEN + 1];
	sy_store_cursor_format(&a, x);
	sy_store_cursor_format(&b, y);
	CU_ASSERT_TRUE(strcmp(x, y) < 0);
}

static void test_token(void)
{
	sy_buf b = SY_BUF_INIT;
	CU_ASSERT_TRUE(
	        sy_store_page_token_format(&b, "todo", "0b7e5c1e-6b4a-4f4e-9d0c-3a2f1e0d9c8b"));
	CU_ASSERT_STRING_EQUAL(b.data, "r1.746f646f."
	                               "30623765356331652d366234612d346634652d396430632d33613266"
	                               "3165306439633862");
	char *t = NULL, *k = NULL;
	bool nomem = true;
	CU_ASSERT_TRUE(sy_store_page_token_parse(b.data, b.len, &t, &k, &nomem));
	CU_ASSERT_FALSE(nomem);
	CU_ASSERT_STRING_EQUAL(t, "todo");
	CU_ASSERT_STRING_EQUAL(k, "0b7e5c1e-6b4a-4f4e-9d0c-3a2f1e0d9c8b");
	sy_free(t);
	sy_free(k);
	/* Non-ASCII table ids and keys with any bytes but NUL round-trip. */
	sy_buf_reset(&b);
	CU_ASSERT_TRUE(sy_store_page_token_format(&b, "t\xc3\xa4.x", "a.b\"\\ c"));
	CU_ASSERT_TRUE(sy_store_page_token_parse(b.data, b.len, &t, &k, &nomem));
	CU_ASSERT_STRING_EQUAL(t, "t\xc3\xa4.x");
	CU_ASSERT_STRING_EQUAL(k, "a.b\"\\ c");
	sy_free(t);
	sy_free(k);
	sy_buf_free(&b);
}

static void test_token_refused(void)
{
	static const char *const bad[] = {
	        "",
	        "r1.",
	        "r1.74",
	        "r1.74.",
	        "r1..31",
	        "r2.74.31",
	        "r1.7.31",
	        "r1.74.3",
	        "r1.7G.31",
	        "r1.74.3A",
	        "r1.0074.31", /* NUL in table */
	        "r1.74.3100", /* NUL in key */
	        "r1.74.31.32",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *t = (char *)1, *k = (char *)1;
		bool nomem = true;
		CU_ASSERT_FALSE(sy_store_page_token_parse(bad[i], strlen(bad[i]), &t, &k, &nomem));
		CU_ASSERT_PTR_NULL(t);
		CU_ASSERT_PTR_NULL(k);
		CU_ASSERT_FALSE(nomem);
	}
}

static void test_token_alloc_failures(void)
{
	const char *tok = "r1.746f646f.3432";
	bool succeeded = false;
	long failures = 0;
	for (long n = 0; n < 10 && !succeeded; n++) {
		sy_test_alloc_install(n, true);
		char *t, *k;
		bool nomem = false;
		succeeded = sy_store_page_token_parse(tok, strlen(tok), &t, &k, &nomem);
		if (succeeded) {
			CU_ASSERT_STRING_EQUAL(k, "42");
			sy_free(t);
			sy_free(k);
		} else {
			CU_ASSERT_TRUE(nomem);
			failures++;
		}
		CU_ASSERT_EQUAL(sy_test_alloc.live, 0);
	}
	sy_test_alloc_remove();
	CU_ASSERT_TRUE(succeeded);
	CU_ASSERT(failures > 0);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"cursor format", test_cursor_format},
	        {"cursors refused", test_cursor_refused},
	        {"position order", test_position_order},
	        {"page token", test_token},
	        {"page tokens refused", test_token_refused},
	        {"page token allocation failures", test_token_alloc_failures},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("pull codecs", tests);
	return sy_test_run();
}
