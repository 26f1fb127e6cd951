/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One responder process: its configuration, its lazily opened PostgreSQL
 * connection, the cached current schema, and the handlers of the routes.
 */
#ifndef SY_FCGI_RESPONDER_H
#define SY_FCGI_RESPONDER_H

#include <libpq-fe.h>

#include "fcgi/http.h"
#include "store/cfg.h"
#include "synchro/manifest.h"

typedef struct sy_inflight sy_inflight; /* fcgi/inflight.h */
typedef struct sy_metrics sy_metrics;   /* fcgi/metrics.h */

/* The current schema as this responder last saw it. */
typedef struct {
	long long version; /* 0: none published */
	sy_schema_ref ref;
	sy_manifest *manifest; /* owned */
} sy_schema_cache;

typedef struct sy_responder {
	const sy_cfg *cfg;
	/* settings read from cfg at start */
	const char *conninfo;
	const char *auth_param;
	int lock_timeout_ms;
	unsigned retry_after_s;
	int pull_wait_ms;
	/* the connection, opened lazily; NULL while down */
	PGconn *pg;
	double next_connect_at; /* monotonic seconds: no attempt before (backoff) */
	int backoff_ms;
	/* the gauge of pushes in flight (shared memory) and this responder's slot in it */
	sy_inflight *inflight;
	int slot;
	sy_schema_cache schema;
	unsigned long requests;
	/* shared request counters (may be NULL) */
	sy_metrics *metrics;
} sy_responder;

/*
 * Sets r up from cfg (which must outlive r) for responder `slot`; no
 * connection is opened until a request needs one.
 */
void sy_responder_init(sy_responder *r, const sy_cfg *cfg, sy_inflight *inflight,
                       sy_metrics *metrics, int slot);
/* Closes the connection and frees the schema cache. */
void sy_responder_done(sy_responder *r);
/*
 * Serves requests from listen_fd until SIGTERM (after the request in flight),
 * max_requests (0: no limit), or a fatal accept error. Returns an exit status.
 */
int sy_responder_serve(sy_responder *r, int listen_fd, long max_requests);

/*
 * The connection, opened (with session settings and prepared statements) when
 * there is none and the backoff allows. NULL with *err set
 * (SY_ERR_TEMPORARY_UNAVAILABLE) when PostgreSQL cannot be reached: the
 * caller answers 503.
 */
PGconn *sy_responder_db(sy_responder *r, sy_error *err);
/*
 * Called after a failed statement: when the connection is gone, closes it so
 * the next request reconnects (with backoff). Returns whether it was lost.
 */
bool sy_responder_db_check(sy_responder *r);

/*
 * The gates every /v3/ route runs first, in the ADR's order: the auth
 * parameter (401 auth_required when absent or empty) and the protocol gate
 * (426 upgrade_required unless Synchro-Protocol is exactly "3"). On false the
 * error response has been written. *user receives the authenticated user.
 */
bool sy_responder_gates(sy_responder *r, sy_http *h, const char **user);

/* Answers a request-level error with the responder's Retry-After setting. */
void sy_responder_error(sy_responder *r, sy_http *h, sy_errcode code, const char *message);

/* Route handlers (each writes exactly one response). */
void sy_route_connect(sy_responder *r, sy_http *h);
void sy_route_push(sy_responder *r, sy_http *h);
void sy_route_retire(sy_responder *r, sy_http *h);
void sy_route_schema(sy_responder *r, sy_http *h);
void sy_route_healthz(sy_responder *r, sy_http *h);
void sy_route_metrics(sy_responder *r, sy_http *h);
void sy_route_pull(sy_responder *r, sy_http *h);
void sy_route_rebuild(sy_responder *r, sy_http *h);

/* Dispatches one request by method and path. */
void sy_route(sy_responder *r, sy_http *h);

#endif
