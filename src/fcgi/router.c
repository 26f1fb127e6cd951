/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The route table of synchro-fcgi and its dispatch (router.h): path, then method (404,
 * 405), then the route's gates in the ADR's dispatch order (authentication, the protocol
 * gate, the body within its limit), then the handler; every request is answered once,
 * timed and counted, and a transaction a handler left open is rolled back.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "fcgi/metrics.h"
#include "fcgi/router.h"
#include "store/store.h"
#include "synchro/fingerprint.h"
#include "synchro/outcome.h"
#include "synchro/push.h"

/* PROTOCOL §1: request bodies are at most 1,048,576 octets. */
#define BODY_MAX 1048576

typedef struct {
	const char *path;
	const char *method;
	sy_route_id id;   /* the label it is counted by */
	unsigned gates;   /* sy_gate bits */
	size_t body_max;  /* with SY_GATE_BODY */
	sy_route_handler handler;
} route;

#define V3_GATES (SY_GATE_AUTH | SY_GATE_PROTOCOL)

static const route routes[] = {
        {"/v3/connect", "POST", SY_ROUTE_CONNECT, V3_GATES | SY_GATE_BODY, BODY_MAX,
         sy_route_connect},
        {"/v3/push", "POST", SY_ROUTE_PUSH, V3_GATES | SY_GATE_BODY, SY_PUSH_MAX_BODY,
         sy_route_push},
        {"/v3/pull", "POST", SY_ROUTE_PULL, V3_GATES | SY_GATE_BODY, BODY_MAX, sy_route_pull},
        {"/v3/rebuild", "POST", SY_ROUTE_REBUILD, V3_GATES | SY_GATE_BODY, BODY_MAX,
         sy_route_rebuild},
        {"/v3/retire", "POST", SY_ROUTE_RETIRE, V3_GATES | SY_GATE_BODY, BODY_MAX,
         sy_route_retire},
        {"/v3/schema", "GET", SY_ROUTE_SCHEMA, V3_GATES, 0, sy_route_schema},
        {"/healthz", "GET", SY_ROUTE_HEALTHZ, 0, 0, sy_route_healthz},
        {"/metrics", "GET", SY_ROUTE_METRICS, 0, 0, sy_route_metrics},
};

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

/* The route's gates, each once, in the order of sy_gate. False when one failed: its error
 * response has been written. */
static bool run_gates(sy_responder *r, sy_http *h, const route *rt, sy_request *req)
{
	if ((rt->gates & SY_GATE_AUTH) != 0) {
		/* PROTOCOL §1: identity only from the parameter the web server sets; a value
		 * no route could use as a user id (control characters, invalid UTF-8, too
		 * long) authenticates nobody. */
		const char *u = sy_http_param(h, r->auth_param);
		sy_error err;
		if (u == NULL || !sy_fp_user_valid(u, strlen(u), &err)) {
			sy_responder_error(r, h, SY_ERR_AUTH_REQUIRED, "authentication required");
			return false;
		}
		req->user = u;
	}
	if ((rt->gates & SY_GATE_PROTOCOL) != 0) {
		const char *proto = sy_http_param(h, "HTTP_SYNCHRO_PROTOCOL");
		if (proto == NULL || strcmp(proto, "3") != 0) {
			sy_responder_error(r, h, SY_ERR_UPGRADE_REQUIRED,
			                   "this server speaks Synchro-Protocol: 3");
			return false;
		}
	}
	if ((rt->gates & SY_GATE_BODY) != 0) {
		sy_error err = {0};
		if (!sy_http_read_body(h, rt->body_max, &err)) {
			sy_responder_error(r, h,
			                   err.code == SY_ERR_NOMEM ? SY_ERR_TEMPORARY_UNAVAILABLE
			                                            : SY_ERR_INVALID_REQUEST,
			                   err.message);
			return false;
		}
	}
	return true;
}

void sy_route(sy_responder *r, sy_http *h)
{
	double start = sy_clock_s();
	const route *found = NULL;
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		if (strcmp(h->path, routes[i].path) == 0) {
			found = &routes[i];
			break;
		}
	}
	sy_request req = {NULL};
	if (found == NULL)
		sy_responder_error(r, h, SY_ERR_NOT_FOUND, "no such route");
	else if (strcmp(h->method, found->method) != 0)
		method_not_allowed(r, h, found->method);
	else if (run_gates(r, h, found, &req))
		found->handler(r, h, &req);

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

	double took = sy_clock_s() - start;
	sy_route_id id = found != NULL ? found->id : SY_ROUTE_OTHER;
	sy_metrics_request(r->metrics, id, h->status, took);
	sy_log(SY_LOG_DEBUG, "%s %s %d %.1f ms", h->method, found != NULL ? found->path : "-",
	       h->status, took * 1000);
}
