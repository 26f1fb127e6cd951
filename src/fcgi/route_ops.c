/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * route_ops.c: the operational routes. They sit outside the protocol and without its gates.
 *
 * Layer: middle of src/fcgi (doc/hacking.md).
 * Notes: GET /healthz answers 200 when this responder reaches PostgreSQL. Otherwise it
 * answers 503 with Retry-After. GET /metrics gives the shared counters and the pushes in
 * flight, in Prometheus text format 0.0.4.
 */
#include "config.h"

#include <stdio.h>

#include "common/log.h"
#include "fcgi/metrics.h"
#include "fcgi/router.h"
#include "store/conn.h"
#include "store/session.h"

void sy_route_healthz(sy_responder *r, sy_http *h, const sy_request *req)
{
	(void)req;
	sy_error err = {0};
	PGconn *c = sy_responder_db(r, &err);
	if (c != NULL && sy_store_ping(c, &err) == SY_STORE_OK) {
		sy_http_respond(h, 200, "text/plain; charset=utf-8", NULL, "ok\n", 3);
		return;
	}
	if (c != NULL) {
		sy_responder_db_check(r);
		sy_log(SY_LOG_WARNING, "healthz: %s", err.message);
	}
	char header[64];
	snprintf(header, sizeof header, "Retry-After: %u\r\n", r->retry_after_s);
	sy_http_respond(h, 503, "text/plain; charset=utf-8", header, "unavailable\n", 12);
}

void sy_route_metrics(sy_responder *r, sy_http *h, const sy_request *req)
{
	(void)req;
	sy_buf b = SY_BUF_INIT;
	if (!sy_metrics_write(r->metrics, r->inflight, &b))
		sy_responder_error(r, h, SY_ERR_NOMEM, "out of memory");
	else
		sy_http_respond(h, 200, "text/plain; version=0.0.4; charset=utf-8", NULL, b.data,
		                b.len);
	sy_buf_free(&b);
}
