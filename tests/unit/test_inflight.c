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
#include "synchro/matrix.h"
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

/* The protocol's counters: outcomes, replays, errors by code, SQLSTATE classes, rebuilds. */
static void test_protocol_counters(void)
{
	sy_metrics *m = sy_metrics_create();
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	sy_store_push_answer a;
	memset(&a, 0, sizeof a);
	a.http_status = 200;
	a.has_counts = true;
	a.counts[SY_CODE_NONE] = 3;
	a.counts[SY_CODE_VERSION_CONFLICT] = 1;
	a.counts[SY_CODE_ATOMIC_BATCH_REJECTED] = 2;
	a.counts[SY_STORE_PUSH_REPLAYED] = 4;
	sy_metrics_push(m, &a);
	memset(&a, 0, sizeof a);
	a.http_status = 200;
	a.replay = true;
	sy_metrics_push(m, &a);
	memset(&a, 0, sizeof a);
	a.http_status = 429;
	sy_metrics_push(m, &a);
	sy_metrics_error(m, SY_ROUTE_PUSH, SY_ERR_RETRY_LATER);
	memset(&a, 0, sizeof a);
	a.http_status = 503;
	memcpy(a.sqlstate, "55P03", 6);
	sy_metrics_push(m, &a);
	sy_metrics_error(m, SY_ROUTE_PUSH, SY_ERR_NOMEM);
	sy_metrics_db_error(m, "40P01");
	sy_metrics_db_error(m, "SY004");
	sy_metrics_db_error(m, "ZZ999");
	sy_metrics_db_error(m, "bad");
	sy_metrics_rebuild(m, SY_REBUILD_STARTED);
	sy_metrics_rebuild(m, SY_REBUILD_INVALIDATED);
	sy_buf b = SY_BUF_INIT;
	CU_ASSERT_TRUE_FATAL(sy_metrics_write(m, NULL, &b));
	CU_ASSERT(has_line(b.data,
	                   "synchro_push_outcomes_total{status=\"applied\",code=\"none\"} 3"));
	CU_ASSERT(has_line(b.data, "synchro_push_outcomes_total{status=\"conflict\","
	                           "code=\"version_conflict\"} 1"));
	CU_ASSERT(has_line(b.data, "synchro_push_outcomes_total{status=\"rejected_terminal\","
	                           "code=\"atomic_batch_rejected\"} 2"));
	CU_ASSERT(has_line(b.data, "synchro_push_outcomes_total{status=\"conflict\","
	                           "code=\"row_deleted\"} 0"));
	CU_ASSERT(has_line(b.data, "synchro_push_mutation_replays_total 4"));
	CU_ASSERT(has_line(b.data, "synchro_push_batch_replays_total 1"));
	CU_ASSERT(has_line(b.data, "synchro_push_admission_refusals_total 1"));
	CU_ASSERT(has_line(b.data, "synchro_http_errors_total{route=\"push\",status=\"429\","
	                           "code=\"retry_later\"} 1"));
	/* Out of memory is answered, and counted, as temporary_unavailable. */
	CU_ASSERT(has_line(b.data, "synchro_http_errors_total{route=\"push\",status=\"503\","
	                           "code=\"temporary_unavailable\"} 1"));
	CU_ASSERT(has_line(b.data, "synchro_db_errors_total{class=\"55\"} 1"));
	CU_ASSERT(has_line(b.data, "synchro_db_errors_total{class=\"40\"} 1"));
	CU_ASSERT(has_line(b.data, "synchro_db_errors_total{class=\"SY\"} 1"));
	CU_ASSERT(has_line(b.data, "synchro_db_errors_total{class=\"other\"} 1"));
	CU_ASSERT(has_line(b.data, "synchro_db_lock_failures_total{reason=\"lock_timeout\"} 1"));
	CU_ASSERT(has_line(b.data, "synchro_db_lock_failures_total{reason=\"deadlock\"} 1"));
	CU_ASSERT(has_line(b.data,
	                   "synchro_db_lock_failures_total{reason=\"serialization_failure\"} 0"));
	CU_ASSERT(has_line(b.data, "synchro_rebuilds_started_total 1"));
	CU_ASSERT(has_line(b.data, "synchro_rebuilds_completed_total 0"));
	CU_ASSERT(has_line(b.data, "synchro_rebuilds_invalidated_total 1"));
	sy_buf_free(&b);
	sy_metrics_destroy(m);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"the gauge across processes", test_gauge},
	        {"metrics exposition", test_metrics_text},
	        {"the protocol's counters", test_protocol_counters},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("inflight", tests);
	return sy_test_run();
}
