/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * metrics.c: the shared request counters (metrics.h) and their Prometheus text for
 * /metrics.
 *
 * Layer: middle of src/fcgi (doc/hacking.md).
 * Notes: The counters are per route and status, latency histograms and process events. They
 * live in one shared mapping. The protocol's counters are in metrics_push.c. The text
 * exposition appends metrics_push.c's.
 */
#include "config.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#include "fcgi/metrics.h"
#include "fcgi/metrics_push.h"

/* The statuses the responders answer; anything else is counted as "other". */
static const int statuses[] = {200, 400, 401, 404, 405, 408, 409, 422, 426, 429, 500, 503};
#define NSTATUS (sizeof statuses / sizeof statuses[0] + 1)

/* Latency bucket upper bounds in seconds (Prometheus' defaults). */
static const double bounds[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
static const char *const bound_labels[] = {"0.005", "0.01", "0.025", "0.05", "0.1", "0.25",
                                           "0.5",   "1",    "2.5",   "5",    "10"};
#define NBUCKET (sizeof bounds / sizeof bounds[0] + 1)

/* The mapping: the protocol's counters first (metrics_push.h reaches them at its start),
 * then this file's. */
struct sy_metrics {
	sy_metrics_proto proto; /* metrics_push.c */
	_Atomic uint64_t requests[SY_ROUTE__COUNT][NSTATUS];
	_Atomic uint64_t buckets[SY_ROUTE__COUNT][NBUCKET]; /* not cumulative; summed on output */
	_Atomic uint64_t usec_sum[SY_ROUTE__COUNT];
	_Atomic uint64_t events[SY_METRIC__COUNT];
};
_Static_assert(offsetof(struct sy_metrics, proto) == 0,
               "the protocol's counters start the mapping (sy_metrics_proto_of)");

sy_metrics *sy_metrics_create(void)
{
	void *p = mmap(NULL, sizeof(sy_metrics), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
	               -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void sy_metrics_destroy(sy_metrics *m)
{
	if (m != NULL)
		munmap(m, sizeof *m);
}

static size_t status_index(int status)
{
	for (size_t i = 0; i < NSTATUS - 1; i++)
		if (statuses[i] == status)
			return i;
	return NSTATUS - 1;
}

void sy_metrics_request(sy_metrics *m, sy_route_id route, int status, double seconds)
{
	if (m == NULL)
		return;
	if ((unsigned)route >= SY_ROUTE__COUNT)
		route = SY_ROUTE_OTHER;
	atomic_fetch_add_explicit(&m->requests[route][status_index(status)], 1,
	                          memory_order_relaxed);
	size_t b = 0;
	while (b < NBUCKET - 1 && seconds > bounds[b])
		b++;
	atomic_fetch_add_explicit(&m->buckets[route][b], 1, memory_order_relaxed);
	uint64_t usec = seconds > 0 ? (uint64_t)(seconds * 1e6 + 0.5) : 0;
	atomic_fetch_add_explicit(&m->usec_sum[route], usec, memory_order_relaxed);
}

void sy_metrics_event(sy_metrics *m, sy_metric_event event)
{
	if (m != NULL && (unsigned)event < SY_METRIC__COUNT)
		atomic_fetch_add_explicit(&m->events[event], 1, memory_order_relaxed);
}

static uint64_t get(_Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

bool sy_metrics_write(sy_metrics *m, sy_inflight *a, sy_buf *out)
{
	static const struct {
		const char *name, *help;
	} events[SY_METRIC__COUNT] = {
	        {"synchro_db_connects_total", "PostgreSQL connections the responders opened."},
	        {"synchro_db_connect_failures_total", "Failed PostgreSQL connection attempts."},
	        {"synchro_db_connections_lost_total", "PostgreSQL connections found lost."},
	        {"synchro_responders_started_total", "Responder processes started."},
	        {"synchro_responders_exited_total", "Responder processes that ended."},
	        {"synchro_replica_reads_total",
	         "Pulls and later rebuild pages read on the replica of pull_conninfo."},
	        {"synchro_replica_fallbacks_total",
	         "Pulls and later rebuild pages read on the primary though pull_conninfo is set "
	         "(the replica behind, paused, down, or failing the request)."},
	};
	sy_buf_puts(out, "# HELP synchro_http_requests_total Requests answered, by route and "
	                 "status.\n# TYPE synchro_http_requests_total counter\n");
	for (int r = 0; r < SY_ROUTE__COUNT && m != NULL; r++) {
		for (size_t s = 0; s < NSTATUS; s++) {
			uint64_t n = get(&m->requests[r][s]);
			if (n == 0)
				continue;
			if (s < NSTATUS - 1)
				sy_buf_printf(out,
				              "synchro_http_requests_total{route=\"%s\",status=\"%"
				              "d\"} %llu\n",
				              sy_route_name((sy_route_id)r), statuses[s], (unsigned long long)n);
			else
				sy_buf_printf(out,
				              "synchro_http_requests_total{route=\"%s\",status="
				              "\"other\"} %llu\n",
				              sy_route_name((sy_route_id)r), (unsigned long long)n);
		}
	}
	sy_buf_puts(out, "# HELP synchro_http_request_duration_seconds Time from the request's "
	                 "acceptance to its answer.\n"
	                 "# TYPE synchro_http_request_duration_seconds histogram\n");
	for (int r = 0; r < SY_ROUTE__COUNT && m != NULL; r++) {
		uint64_t cum = 0;
		for (size_t b = 0; b < NBUCKET; b++) {
			cum += get(&m->buckets[r][b]);
			sy_buf_printf(out,
			              "synchro_http_request_duration_seconds_bucket{route=\"%s\","
			              "le=\"%s\"} "
			              "%llu\n",
			              sy_route_name((sy_route_id)r), b < NBUCKET - 1 ? bound_labels[b] : "+Inf",
			              (unsigned long long)cum);
		}
		uint64_t usec = get(&m->usec_sum[r]);
		sy_buf_printf(
		        out,
		        "synchro_http_request_duration_seconds_sum{route=\"%s\"} %llu.%06llu\n"
		        "synchro_http_request_duration_seconds_count{route=\"%s\"} %llu\n",
		        sy_route_name((sy_route_id)r), (unsigned long long)(usec / 1000000),
		        (unsigned long long)(usec % 1000000), sy_route_name((sy_route_id)r),
		        (unsigned long long)cum);
	}
	for (int e = 0; e < SY_METRIC__COUNT; e++)
		sy_buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", events[e].name,
		              events[e].help, events[e].name, events[e].name,
		              m != NULL ? (unsigned long long)get(&m->events[e]) : 0ULL);
	sy_buf_printf(out,
	              "# HELP synchro_push_inflight Pushes in flight on this host now.\n"
	              "# TYPE synchro_push_inflight gauge\nsynchro_push_inflight %d\n",
	              sy_inflight_count(a));
	if (m != NULL)
		sy_metrics_proto_write(&m->proto, out);
	return !out->failed;
}
