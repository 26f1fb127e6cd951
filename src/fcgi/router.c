/* SPDX-License-Identifier: BSD-2-Clause */
/* Dispatch by path and method; every request is answered once, timed and counted. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "fcgi/metrics.h"
#include "fcgi/responder.h"
#include "store/store.h"
#include "synchro/outcome.h"

typedef struct {
	const char *path;
	const char *method;
	sy_route_id id;
	void (*handler)(sy_responder *r, sy_http *h);
} route;

static const route routes[] = {
        {"/v3/connect", "POST", SY_ROUTE_CONNECT, sy_route_connect},
        {"/v3/push", "POST", SY_ROUTE_PUSH, sy_route_push},
        {"/v3/pull", "POST", SY_ROUTE_PULL, sy_route_pull},
        {"/v3/rebuild", "POST", SY_ROUTE_REBUILD, sy_route_rebuild},
        {"/v3/retire", "POST", SY_ROUTE_RETIRE, sy_route_retire},
        {"/v3/schema", "GET", SY_ROUTE_SCHEMA, sy_route_schema},
        {"/healthz", "GET", SY_ROUTE_HEALTHZ, sy_route_healthz},
        {"/metrics", "GET", SY_ROUTE_METRICS, sy_route_metrics},
};

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void method_not_allowed(sy_responder *r, sy_http *h, const char *allowed)
{
	char message[64], header[64];
	snprintf(message, sizeof message, "this route accepts %s only", allowed);
	snprintf(header, sizeof header, "Allow: %s\r\n", allowed);
	sy_buf body = SY_BUF_INIT;
	sy_error err;
	if (sy_outcome_error_body(&body, SY_ERR_METHOD_NOT_ALLOWED, message, NULL, NULL, &err))
		sy_http_json(h, 405, &body, header);
	else
		sy_responder_error(r, h, SY_ERR_NOMEM, "out of memory");
	sy_buf_free(&body);
}

void sy_route(sy_responder *r, sy_http *h)
{
	double start = mono_now();
	const route *found = NULL;
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		if (strcmp(h->path, routes[i].path) == 0) {
			found = &routes[i];
			break;
		}
	}
	if (found == NULL)
		sy_responder_error(r, h, SY_ERR_NOT_FOUND, "no such route");
	else if (strcmp(h->method, found->method) != 0)
		method_not_allowed(r, h, found->method);
	else
		found->handler(r, h);

	if (!h->answered) {
		sy_log(SY_LOG_ERR, "bug: %s %s ended without an answer", h->method, h->path);
		sy_responder_error(r, h, SY_ERR_TEMPORARY_UNAVAILABLE, "request not completed");
	}
	/* A handler never leaves a transaction open; if one did, the next request must not
	 * inherit it. */
	if (r->pg != NULL && PQtransactionStatus(r->pg) != PQTRANS_IDLE &&
	    PQtransactionStatus(r->pg) != PQTRANS_UNKNOWN) {
		sy_log(SY_LOG_ERR, "bug: %s %s left a transaction open; rolled back", h->method,
		       h->path);
		sy_store_rollback(r->pg);
	}
	sy_responder_db_check(r);

	double took = mono_now() - start;
	sy_route_id id = found != NULL ? found->id : SY_ROUTE_OTHER;
	sy_metrics_request(r->metrics, id, h->status, took);
	sy_log(SY_LOG_DEBUG, "%s %s %d %.1f ms", h->method, found != NULL ? found->path : "-",
	       h->status, took * 1000);
}
