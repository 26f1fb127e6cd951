/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * metrics.h: the request counters every responder shares, and their Prometheus text for
 * /metrics.
 *
 * Notes: The master creates the MAP_SHARED mapping before it forks.
 */
#ifndef SY_FCGI_METRICS_H
#define SY_FCGI_METRICS_H

#include "fcgi/inflight.h"
#include "store/push_call.h"
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
	SY_METRIC_REPLICA_READS,       /* pulls and later rebuild pages read on the replica */
	SY_METRIC_REPLICA_FALLBACKS,   /* ... read on the primary though a replica is configured */
	SY_METRIC__COUNT
} sy_metric_event;

/* What becomes of a rebuild (POST /v3/rebuild). */
typedef enum {
	SY_REBUILD_STARTED,     /* a first page (no page token) answered 200 */
	SY_REBUILD_COMPLETED,   /* a last page (no more) answered 200 */
	SY_REBUILD_INVALIDATED, /* answered 409 rebuild_invalidated */
	SY_REBUILD__COUNT
} sy_rebuild_event;

typedef struct sy_metrics sy_metrics;

/* The route's label value ("connect", ..., "other"). */
static inline const char *sy_route_name(sy_route_id route)
{
	static const char *const names[SY_ROUTE__COUNT] = {
	        "connect", "push", "pull", "rebuild", "retire", "schema", "healthz", "metrics", "other"};
	return (unsigned)route < SY_ROUTE__COUNT ? names[route] : "other";
}

/* Maps zeroed shared counters, inherited across fork(); NULL when mmap fails. */
sy_metrics *sy_metrics_create(void);
void sy_metrics_destroy(sy_metrics *m);

/* Counts one answered request (m may be NULL: nothing is counted). */
void sy_metrics_request(sy_metrics *m, sy_route_id route, int status, double seconds);
void sy_metrics_event(sy_metrics *m, sy_metric_event event);

/* The protocol's counters (metrics_push.c); each accepts m NULL. */
/* A request answered with a request-level error of the protocol (code != SY_ERR_NONE). */
void sy_metrics_error(sy_metrics *m, sy_route_id route, sy_errcode code);
/* What synchro_push answered: its outcome counts, a batch replay, an admission refusal. */
void sy_metrics_push(sy_metrics *m, const sy_store_push_answer *ans);
/* A database error with this SQLSTATE (5 characters): by class, and a lock failure. */
void sy_metrics_db_error(sy_metrics *m, const char *sqlstate);
void sy_metrics_rebuild(sy_metrics *m, sy_rebuild_event event);

/*
 * Appends the Prometheus text exposition (format 0.0.4) of every counter, and
 * the pushes in flight from a (may be NULL). False when out of memory.
 */
SY_MUST_CHECK bool sy_metrics_write(sy_metrics *m, sy_inflight *a, sy_buf *out);

#endif
