/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The suites' failing allocator (testutil.h): it fails one allocation, or every one from
 * a given number on, and counts the blocks alive. A file of its own, so that programs
 * that never fail an allocation link without libsynchro's allocator.
 */
#include "config.h"

#include <stdbool.h>
#include <stdlib.h>

#include "synchro/alloc.h"
#include "testutil.h"

sy_test_alloc_state sy_test_alloc;

static bool alloc_fails(void)
{
	long n = sy_test_alloc.calls++;
	if (sy_test_alloc.fail_at < 0)
		return false;
	return sy_test_alloc.sticky ? n >= sy_test_alloc.fail_at : n == sy_test_alloc.fail_at;
}

static void *test_malloc(size_t n)
{
	if (alloc_fails())
		return NULL;
	void *p = malloc(n);
	if (p != NULL)
		sy_test_alloc.live++;
	return p;
}

static void *test_realloc(void *p, size_t n)
{
	if (alloc_fails())
		return NULL;
	void *q = realloc(p, n);
	if (q != NULL && p == NULL)
		sy_test_alloc.live++;
	return q;
}

static void test_free(void *p)
{
	if (p != NULL)
		sy_test_alloc.live--;
	free(p);
}

void sy_test_alloc_install(long fail_at, bool sticky)
{
	static const sy_allocator a = {test_malloc, test_realloc, test_free};
	sy_test_alloc.calls = 0;
	sy_test_alloc.fail_at = fail_at;
	sy_test_alloc.sticky = sticky;
	sy_test_alloc.live = 0;
	sy_set_allocator(&a);
}

void sy_test_alloc_remove(void)
{
	sy_set_allocator(NULL);
}
