/* SPDX-License-Identifier: BSD-2-Clause */
/* Admission caps across processes (shared memory, racing announcers) and the metrics text. */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fcgi/admission.h"
#include "fcgi/metrics.h"
#include "testutil.h"

#define A "11111111-1111-4111-8111-111111111111"
#define B "22222222-2222-4222-8222-222222222222"
#define C "33333333-3333-4333-8333-333333333333"
#define X "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
#define Y "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"

static void test_caps(void)
{
	sy_admission *a = sy_admission_create(8, 2, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_TRUE(sy_admission_enter(a, 0, A, X));
	/* The same client again: over the per-client cap, and the refusal leaves no trace. */
	CU_ASSERT_FALSE(sy_admission_enter(a, 1, A, Y));
	CU_ASSERT_EQUAL(sy_admission_inflight(a), 1);
	CU_ASSERT_TRUE(sy_admission_enter(a, 1, B, X));
	/* Two in flight: the global cap refuses a third client. */
	CU_ASSERT_FALSE(sy_admission_enter(a, 2, C, X));
	CU_ASSERT_EQUAL(sy_admission_inflight(a), 2);
	sy_admission_leave(a, 0);
	CU_ASSERT_TRUE(sy_admission_enter(a, 2, C, X));
	/* A reaped responder's slot is cleared by the master. */
	sy_admission_clear(a, 1);
	CU_ASSERT_TRUE(sy_admission_enter(a, 3, A, X));
	CU_ASSERT_EQUAL(sy_admission_inflight(a), 2);
	/* Caps change on reload; 0 lifts them. */
	sy_admission_set_caps(a, 0, 0);
	CU_ASSERT_TRUE(sy_admission_enter(a, 4, A, X));
	CU_ASSERT_TRUE(sy_admission_enter(a, 5, A, X));
	CU_ASSERT_EQUAL(sy_admission_inflight(a), 4);
	/* Slots outside the table are refused, never written. */
	CU_ASSERT_FALSE(sy_admission_enter(a, 8, B, X));
	CU_ASSERT_FALSE(sy_admission_enter(a, -1, B, X));
	sy_admission_destroy(a);
	sy_admission_destroy(NULL);
	CU_ASSERT_PTR_NULL(sy_admission_create(0, 1, 1));
}

/* What the racing processes record: admitted now, the most seen at once, admissions. */
typedef struct {
	atomic_int current;
	atomic_int peak;
	atomic_int admitted;
} tally;

static void race(int procs, int rounds, int cap, int per_client, bool one_client, int limit)
{
	sy_admission *a = sy_admission_create(procs, cap, per_client);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	tally *t = mmap(NULL, sizeof *t, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(t != MAP_FAILED);
	memset(t, 0, sizeof *t);
	static const char *const ids[] = {A, B, C};
	for (int p = 0; p < procs; p++) {
		pid_t pid = fork();
		CU_ASSERT_FATAL(pid >= 0);
		if (pid == 0) {
			for (int i = 0; i < rounds; i++) {
				const char *id = one_client ? A : ids[(p + i) % 3];
				char batch[37];
				snprintf(batch, sizeof batch, "00000000-0000-4000-8000-%012d", p);
				if (!sy_admission_enter(a, p, id, batch))
					continue;
				int now = atomic_fetch_add(&t->current, 1) + 1;
				int peak = atomic_load(&t->peak);
				while (now > peak &&
				       !atomic_compare_exchange_weak(&t->peak, &peak, now))
					;
				atomic_fetch_add(&t->admitted, 1);
				for (volatile int spin = 0; spin < 200; spin++)
					;
				atomic_fetch_sub(&t->current, 1);
				sy_admission_leave(a, p);
			}
			_exit(0);
		}
	}
	for (int p = 0; p < procs; p++) {
		int status;
		CU_ASSERT(wait(&status) > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	CU_ASSERT(atomic_load(&t->peak) <= limit);
	CU_ASSERT(atomic_load(&t->peak) >= 1);
	CU_ASSERT(atomic_load(&t->admitted) > 0);
	CU_ASSERT_EQUAL(sy_admission_inflight(a), 0);
	munmap(t, sizeof *t);
	sy_admission_destroy(a);
}

static void test_race_global_cap(void)
{
	race(8, 20000, 2, 0, false, 2);
}

static void test_race_per_client_cap(void)
{
	race(8, 20000, 0, 1, true, 1);
}

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return true;
	return false;
}

/* Concurrent duplicates of one batch wait for its one execution: they count once per client. */
static void test_duplicate_batch(void)
{
	sy_admission *a = sy_admission_create(8, 0, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_TRUE(sy_admission_enter(a, 0, A, X));
	CU_ASSERT_TRUE(sy_admission_enter(a, 1, A, X));
	CU_ASSERT_TRUE(sy_admission_enter(a, 2, A, X));
	/* Another batch of the same client is over the per-client cap. */
	CU_ASSERT_FALSE(sy_admission_enter(a, 3, A, Y));
	/* The global cap still counts every duplicate: each holds a responder. */
	sy_admission_set_caps(a, 3, 1);
	CU_ASSERT_FALSE(sy_admission_enter(a, 4, A, X));
	CU_ASSERT_EQUAL(sy_admission_inflight(a), 3);
	sy_admission_destroy(a);
}

static void test_metrics_text(void)
{
	sy_metrics *m = sy_metrics_create();
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	sy_admission *a = sy_admission_create(4, 0, 0);
	CU_ASSERT_TRUE(sy_admission_enter(a, 2, A, X));
	sy_metrics_request(m, SY_ROUTE_CONNECT, 200, 0.002);
	sy_metrics_request(m, SY_ROUTE_CONNECT, 200, 0.3);
	sy_metrics_request(m, SY_ROUTE_CONNECT, 503, 20);
	sy_metrics_request(m, SY_ROUTE_OTHER, 418, 0.001);
	sy_metrics_event(m, SY_METRIC_DB_LOST);
	sy_buf b = SY_BUF_INIT;
	CU_ASSERT_TRUE_FATAL(sy_metrics_write(m, a, &b));
	CU_ASSERT(has_line(b.data, "# TYPE synchro_http_requests_total counter"));
	CU_ASSERT(has_line(b.data,
	                   "synchro_http_requests_total{route=\"connect\",status=\"200\"} 2"));
	CU_ASSERT(has_line(b.data,
	                   "synchro_http_requests_total{route=\"connect\",status=\"503\"} 1"));
	CU_ASSERT(has_line(b.data,
	                   "synchro_http_requests_total{route=\"other\",status=\"other\"} 1"));
	/* Unused combinations are not listed. */
	CU_ASSERT_PTR_NULL(strstr(b.data, "route=\"push\",status"));
	/* Histogram buckets are cumulative and end in +Inf = count. */
	CU_ASSERT(has_line(
	        b.data,
	        "synchro_http_request_duration_seconds_bucket{route=\"connect\",le=\"0.005\"} 1"));
	CU_ASSERT(has_line(
	        b.data,
	        "synchro_http_request_duration_seconds_bucket{route=\"connect\",le=\"0.5\"} 2"));
	CU_ASSERT(has_line(
	        b.data,
	        "synchro_http_request_duration_seconds_bucket{route=\"connect\",le=\"10\"} 2"));
	CU_ASSERT(has_line(
	        b.data,
	        "synchro_http_request_duration_seconds_bucket{route=\"connect\",le=\"+Inf\"} 3"));
	CU_ASSERT(has_line(b.data,
	                   "synchro_http_request_duration_seconds_count{route=\"connect\"} 3"));
	CU_ASSERT(has_line(
	        b.data, "synchro_http_request_duration_seconds_sum{route=\"connect\"} 20.302000"));
	CU_ASSERT(has_line(b.data, "synchro_db_connections_lost_total 1"));
	CU_ASSERT(has_line(b.data, "synchro_push_inflight 1"));
	/* Counters survive fork: a child's counts are the parent's. */
	pid_t pid = fork();
	if (pid == 0) {
		sy_metrics_request(m, SY_ROUTE_PUSH, 429, 0.01);
		_exit(0);
	}
	int status;
	CU_ASSERT(waitpid(pid, &status, 0) == pid);
	sy_buf_reset(&b);
	CU_ASSERT_TRUE_FATAL(sy_metrics_write(m, NULL, &b));
	CU_ASSERT(has_line(b.data, "synchro_http_requests_total{route=\"push\",status=\"429\"} 1"));
	CU_ASSERT(has_line(b.data, "synchro_push_inflight 0"));
	sy_buf_free(&b);
	sy_admission_destroy(a);
	sy_metrics_destroy(m);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"caps", test_caps},
	        {"racing processes never exceed the global cap", test_race_global_cap},
	        {"racing processes never exceed the per-client cap", test_race_per_client_cap},
	        {"duplicates of one batch count once per client", test_duplicate_batch},
	        {"metrics exposition", test_metrics_text},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("admission", tests);
	return sy_test_run();
}
