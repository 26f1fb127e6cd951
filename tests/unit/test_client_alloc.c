/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libsynchro-client when memory runs out: each allocation of a write-and-sync
 * round fails in turn (a stride over the round when it is long), and every time
 * the call fails cleanly (no crash, no leak under valgrind, nothing half
 * written), and a later round with memory converges: every committed intent is
 * applied and the store verifies.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_harness.h"
#include "synchro/alloc.h"

static long countdown = -1; /* fail when it reaches 0; -1: never */
static long counted;

static void *t_malloc(size_t n)
{
	if (fake_alloc_guard == 0) {
		counted++;
		if (countdown >= 0 && countdown-- == 0)
			return NULL;
	}
	return malloc(n);
}

static void *t_realloc(void *p, size_t n)
{
	if (fake_alloc_guard == 0) {
		counted++;
		if (countdown >= 0 && countdown-- == 0)
			return NULL;
	}
	return realloc(p, n);
}

static const sy_allocator failing = {t_malloc, t_realloc, free};

/* One round: rows pairs of writes (each pair normalized) and a sync; whether all went. */
static bool round_trip(int k, int rows)
{
	sy_client_txn *t = NULL;
	char pk[32], id[SY_UUID_LEN + 1];
	bool ok = true;
	if (sy_client_begin(C, false, &t, &E) != SY_CLIENT_OK)
		return false;
	for (int r = 0; r < rows; r++) {
		snprintf(pk, sizeof pk, "\"r%d.%d\"", k, r);
		if (sy_client_insert(t, "todo", pk, "{\"title\":\"x\"}", id, &E) != SY_CLIENT_OK ||
		    sy_client_update(t, "todo", pk, "{\"done\":true}", id, &E) != SY_CLIENT_OK) {
			sy_client_rollback(t);
			return false;
		}
	}
	if (sy_client_commit(t, &E) != SY_CLIENT_OK)
		return false;
	if (sy_client_sync(C, 600000, &E) != SY_CLIENT_OK)
		ok = false;
	char *row = NULL;
	if (sy_client_get(C, "todo", pk, &row, NULL, &E) != SY_CLIENT_OK)
		ok = false;
	sy_free(row);
	return ok;
}

/* batch_max 0: the default. */
static void each_allocation_fails(unsigned batch_max, int rows)
{
	start();
	if (batch_max > 0) {
		sy_client_close(C);
		sy_client_options o;
		fake_options(F, &o);
		o.batch_max = batch_max;
		OK(sy_client_open(path, &o, &C, &E));
	}
	/* How many allocations one round makes. */
	sy_set_allocator(&failing);
	counted = 0;
	CU_ASSERT_TRUE_FATAL(round_trip(0, rows));
	sy_set_allocator(NULL);
	long total = counted, stride = total / 200 + 1, failures = 0;
	for (long n = 0; n < total; n += stride) {
		countdown = n;
		sy_set_allocator(&failing);
		if (!round_trip((int)(n + 1), rows))
			failures++;
		sy_set_allocator(NULL);
		countdown = -1;
	}
	CU_ASSERT(failures > 0);
	/* With memory again, everything committed converges. */
	for (int k = 0; k < 3; k++)
		if (sy_client_sync(C, 600000, &E) == SY_CLIENT_OK)
			break;
	sy_client_status s;
	OK(sy_client_status_get(C, &s, &E));
	CU_ASSERT_EQUAL(s.counts[SY_INTENT_PENDING] + s.counts[SY_INTENT_WAITING] +
	                        s.counts[SY_INTENT_SEALED] + s.counts[SY_INTENT_BLOCKED_LIMIT],
	                0);
	CU_ASSERT_EQUAL(s.unsettled_batches, 0);
	char *rep = NULL;
	sy_client_rc rc = sy_client_verify(C, &rep, &E);
	if (rc != SY_CLIENT_OK)
		fprintf(stderr, "verify: %s\n", rep ? rep : E.message);
	CU_ASSERT_EQUAL(rc, SY_CLIENT_OK);
	sy_free(rep);
	printf("\n  %ld allocations per round, %ld failed in turn (stride %ld), %ld rounds "
	       "failed\n",
	       total, (total + stride - 1) / stride, stride, failures);
	stop();
}

static void test_each_allocation_fails(void)
{
	each_allocation_fails(0, 1);
}

/* Three batches a round: the third is sealed in the commit that reconciles the first. */
static void test_each_allocation_fails_pipelined(void)
{
	each_allocation_fails(1, 3);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"each allocation of a round fails in turn", test_each_allocation_fails},
	        {"each allocation of a pipelined round fails in turn",
	         test_each_allocation_fails_pipelined},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("client allocation failures", tests);
	return sy_test_run();
}
