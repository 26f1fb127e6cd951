/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * responder.c: one responder's state (responder.h): its settings, its PostgreSQL
 * connection, and the request-level error answer with its Retry-After.
 *
 * Layer: middle of src/fcgi (doc/hacking.md).
 * Notes: The connection opens lazily and reconnects with a backoff. A lost connection is a
 * whole-request 503 and a reconnect, never a crash. The accept loop is in accept_loop.c.
 * The routes are in router.c.
 */
#include "config.h"

#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "fcgi/metrics.h"
#include "fcgi/responder.h"
#include "store/conn.h"
#include "store/prepared.h"
#include "store/session.h"

/* Reconnect backoff after failed attempts: doubles from the first step up to the cap. */
#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS   2000

static void observe_db_error(const char *sqlstate, void *arg)
{
	sy_metrics_db_error(arg, sqlstate);
}

void sy_responder_init(sy_responder *r, const sy_cfg *cfg, sy_inflight *inflight,
                       sy_metrics *metrics, int slot)
{
	memset(r, 0, sizeof *r);
	r->cfg = cfg;
	r->conninfo = sy_cfg_str(cfg, "database", "conninfo");
	r->lock_timeout_ms = (int)sy_cfg_int(cfg, "fcgi", "lock_timeout_ms");
	r->retry_after_s = (unsigned)sy_cfg_int(cfg, "fcgi", "retry_after_s");
	r->pull_wait_ms = (int)sy_cfg_int(cfg, "fcgi", "pull_wait_ms");
	r->body_timeout_ms = (int)sy_cfg_int(cfg, "fcgi", "body_timeout_ms");
	r->inflight = inflight;
	r->metrics = metrics;
	r->slot = slot;
	/* Every SQLSTATE a statement of this process meets, by class (metrics_push.c). */
	sy_store_observe_errors(observe_db_error, metrics);
	/* Before this responder's first connection; the value was checked on reading. */
	sy_store_pooler pooler = SY_STORE_POOLER_NONE;
	(void)sy_store_pooler_parse(sy_cfg_str(cfg, "database", "pooler"), &pooler);
	sy_store_set_pooler(pooler);
}

void sy_responder_done(sy_responder *r)
{
	sy_store_disconnect(r->pg);
	r->pg = NULL;
}

PGconn *sy_responder_db(sy_responder *r, sy_error *err)
{
	/* A connection a failed pipeline left in pipeline mode is dropped like a broken one. */
	if (sy_store_connection_usable(r->pg) && PQpipelineStatus(r->pg) == PQ_PIPELINE_OFF)
		return r->pg;
	if (r->pg != NULL) {
		if (PQstatus(r->pg) == CONNECTION_OK && PQpipelineStatus(r->pg) == PQ_PIPELINE_OFF)
			sy_log(SY_LOG_WARNING, "database: the server is read only or a standby now; "
			                       "reconnecting");
		sy_store_disconnect(r->pg);
		r->pg = NULL;
	}
	double now = sy_clock_s();
	if (now < r->next_connect_at) {
		sy_error_set(err, SY_ERR_TEMPORARY_UNAVAILABLE, "database unavailable");
		return NULL;
	}
	sy_error e = {0};
	PGconn *c = sy_store_connect(r->conninfo, "synchro-fcgi", &e);
	if (c != NULL && sy_store_session_limits(c, r->lock_timeout_ms, &e) != SY_STORE_OK) {
		sy_store_disconnect(c);
		c = NULL;
	}
	if (c == NULL) {
		r->backoff_ms = r->backoff_ms == 0 ? BACKOFF_FIRST_MS : r->backoff_ms * 2;
		if (r->backoff_ms > BACKOFF_MAX_MS)
			r->backoff_ms = BACKOFF_MAX_MS;
		r->next_connect_at = now + r->backoff_ms / 1000.0;
		sy_metrics_event(r->metrics, SY_METRIC_DB_CONNECT_FAILURES);
		sy_log(SY_LOG_WARNING, "database: %s (next attempt in %d ms)", e.message,
		       r->backoff_ms);
		sy_error_set(err, SY_ERR_TEMPORARY_UNAVAILABLE, "database unavailable");
		return NULL;
	}
	if (r->backoff_ms != 0)
		sy_log(SY_LOG_INFO, "database: connected again");
	r->backoff_ms = 0;
	r->next_connect_at = 0;
	/* Prepared statements belong to the old session. */
	sy_store_stmt_forget();
	sy_metrics_event(r->metrics, SY_METRIC_DB_CONNECTS);
	r->pg = c;
	return c;
}

bool sy_responder_db_check(sy_responder *r)
{
	if (r->pg == NULL || sy_store_connection_usable(r->pg))
		return false;
	if (PQstatus(r->pg) == CONNECTION_BAD)
		sy_log(SY_LOG_WARNING, "database: connection lost; reconnecting on the next request");
	else
		sy_log(SY_LOG_WARNING, "database: the server can no longer serve this session (read "
		                       "only or shutting down); reconnecting on the next request");
	sy_metrics_event(r->metrics, SY_METRIC_DB_LOST);
	sy_store_disconnect(r->pg);
	r->pg = NULL;
	return true;
}

void sy_responder_error(sy_responder *r, sy_http *h, sy_errcode code, const char *message)
{
	sy_http_error(h, code, message, r->retry_after_s, NULL, NULL);
}
