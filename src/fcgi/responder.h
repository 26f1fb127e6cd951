/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * responder.h: one responder process: its configuration, its lazily opened PostgreSQL
 * connection, the shared counters it reports to, and the request-level error answer.
 *
 * Notes: Its accept loop is in accept_loop.h. Its routes are in router.h.
 */
#ifndef SY_FCGI_RESPONDER_H
#define SY_FCGI_RESPONDER_H

#include <libpq-fe.h>

#include "fcgi/http.h"
#include "store/cfg.h"

typedef struct sy_inflight sy_inflight; /* fcgi/inflight.h */
typedef struct sy_metrics sy_metrics;   /* fcgi/metrics.h */

typedef struct sy_responder {
	const sy_cfg *cfg;
	/* settings read from cfg at start */
	const char *conninfo;
	int lock_timeout_ms;
	unsigned retry_after_s;
	int pull_wait_ms;
	int body_timeout_ms;
	/* the connection, opened lazily; NULL while down */
	PGconn *pg;
	double next_connect_at; /* monotonic seconds: no attempt before (backoff) */
	int backoff_ms;
	/* the gauge of pushes in flight (shared memory) and this responder's slot in it */
	sy_inflight *inflight;
	int slot;
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
/* Closes the connection. */
void sy_responder_done(sy_responder *r);
/*
 * The connection, opened (with the session's limits; statements are prepared again on
 * first use) when there is none and the backoff allows. NULL with *err set
 * (SY_ERR_TEMPORARY_UNAVAILABLE) when PostgreSQL cannot be reached: the
 * caller answers 503.
 */
PGconn *sy_responder_db(sy_responder *r, sy_error *err);
/*
 * Called after a failed statement: when the connection is gone, closes it so
 * the next request reconnects (with backoff). Returns whether it was lost.
 */
bool sy_responder_db_check(sy_responder *r);

/* Answers a request-level error with the responder's Retry-After setting. */
void sy_responder_error(sy_responder *r, sy_http *h, sy_errcode code, const char *message);

#endif
