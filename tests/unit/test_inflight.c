/* SPDX-License-Identifier: BSD-2-Clause */
/* The gauge of pushes in flight across processes (shared memory) and the metrics text. */
#include "config.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fcgi/inflight.h"
#include "fcgi/metrics.h"
#include "testutil.h"

/* Flags set by forked responders are seen by the master; a reaped slot is cleared. */
static void test_gauge(void)
{
	sy_inflight *f = sy_inflight_create(4);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(sy_inflight_count(f), 0);
	for (int i = 0; i < 3; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			sy_inflight_enter(f, i);
			_exit(0);
		}
		int status;
		CU_ASSERT(waitpid(pid, &status, 0) == pid);
	}
	CU_ASSERT_EQUAL(sy_inflight_count(f), 3);
	sy_inflight_leave(f, 1);
	CU_ASSERT_EQUAL(sy_inflight_count(f), 2);
	/* Slots out of range and NULL are ignored. */
	sy_inflight_enter(f, 4);
	sy_inflight_enter(f, -1);
	sy_inflight_enter(NULL, 0);
	CU_ASSERT_EQUAL(sy_inflight_count(f), 2);
	CU_ASSERT_EQUAL(sy_inflight_count(NULL), 0);
	CU_ASSERT_PTR_NULL(sy_inflight_create(0));
	sy_inflight_destroy(f);
	sy_inflight_destroy(NULL);
}

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return true;
	return false;
}

static void test_metrics_text(void)
{
	sy_metrics *m = sy_metrics_create();
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	sy_inflight *a = sy_inflight_create(4);
	sy_inflight_enter(a, 2);
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
	sy_inflight_destroy(a);
	sy_metrics_destroy(m);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"the gauge across processes", test_gauge},
	        {"metrics exposition", test_metrics_text},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("inflight", tests);
	return sy_test_run();
}
