/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Request counters shared by every responder (a MAP_SHARED mapping the master
 * creates before it forks) and their Prometheus text exposition for /metrics.
 */
#ifndef SY_FCGI_METRICS_H
#define SY_FCGI_METRICS_H

#include "fcgi/inflight.h"
#include "synchro/buf.h"

/* The routes requests are counted by; SY_ROUTE_OTHER is every unknown path. */
typedef enum {
	SY_ROUTE_CONNECT,
	SY_ROUTE_PUSH,
	SY_ROUTE_PULL,
	SY_ROUTE_REBUILD,
	SY_ROUTE_RETIRE,
	SY_ROUTE_SCHEMA,
	SY_ROUTE_HEALTHZ,
	SY_ROUTE_METRICS,
	SY_ROUTE_OTHER,
	SY_ROUTE__COUNT
} sy_route_id;

/* Process events counted beside the requests. */
typedef enum {
	SY_METRIC_DB_CONNECTS,         /* PostgreSQL connections opened */
	SY_METRIC_DB_CONNECT_FAILURES, /* attempts that failed */
	SY_METRIC_DB_LOST,             /* connections found broken after a statement */
	SY_METRIC_RESPONDERS_STARTED,  /* responder processes started */
	SY_METRIC_RESPONDERS_REAPED,   /* responder processes ended (any cause) */
	SY_METRIC__COUNT
} sy_metric_event;

typedef struct sy_metrics sy_metrics;

/* The route's label value ("connect", ..., "other"). */
const char *sy_route_name(sy_route_id route);

/* Maps zeroed shared counters, inherited across fork(); NULL when mmap fails. */
sy_metrics *sy_metrics_create(void);
void sy_metrics_destroy(sy_metrics *m);

/* Counts one answered request (m may be NULL: nothing is counted). */
void sy_metrics_request(sy_metrics *m, sy_route_id route, int status, double seconds);
void sy_metrics_event(sy_metrics *m, sy_metric_event event);

/*
 * Appends the Prometheus text exposition (format 0.0.4) of every counter, and
 * the pushes in flight from a (may be NULL). False when out of memory.
 */
SY_MUST_CHECK bool sy_metrics_write(sy_metrics *m, sy_inflight *a, sy_buf *out);

#endif
