/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * router.c: the route table of synchro-fcgi and its dispatch (router.h).
 *
 * Layer: middle of src/fcgi (doc/hacking.md).
 * Rules: doc/contract.md#dispatch-order (the gates run in its order).
 * Notes: The router matches the path, then the method (404, 405). It runs the route's gates
 * that need no database, in the order sy_dispatch_decide() (src/core/dispatch.c) gives.
 * Then it calls the handler. Every request is answered once, timed and counted. A
 * transaction that a handler left open is rolled back.
 */
#include "config.h"

#include <assert.h>
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

/* doc/contract.md#request-bodies: request bodies are at most 1,048,576 octets. */
#define BODY_MAX 1048576

typedef struct {
	const char *path;
	const char *method;
	sy_route_id id;  /* the label it is counted by */
	unsigned gates;  /* synchro/dispatch.h: the gates of the route's kind */
	size_t body_max; /* the body limit of SY_GATE_STRUCTURE */
	sy_route_handler handler;
} route;

static const route routes[] = {
        {"/v3/connect", "POST", SY_ROUTE_CONNECT, SY_GATES_CLIENT, BODY_MAX, sy_route_connect},
        {"/v3/push", "POST", SY_ROUTE_PUSH, SY_GATES_PUSH, SY_PUSH_MAX_BODY, sy_route_push},
        {"/v3/pull", "POST", SY_ROUTE_PULL, SY_GATES_READ, BODY_MAX, sy_route_pull},
        {"/v3/rebuild", "POST", SY_ROUTE_REBUILD, SY_GATES_READ, BODY_MAX, sy_route_rebuild},
        {"/v3/retire", "POST", SY_ROUTE_RETIRE, SY_GATES_CLIENT, BODY_MAX, sy_route_retire},
        {"/v3/schema", "GET", SY_ROUTE_SCHEMA, SY_GATES_FRONT, 0, sy_route_schema},
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

/*
 * A body that did not come within [fcgi] body_timeout_ms: 408 in the protocol's error form,
 * retryable (nothing was done; the same request may be sent again), and the responder is
 * free for the next request.
 */
static void body_timeout(sy_responder *r, sy_http *h, const char *message)
{
	char header[64];
	snprintf(header, sizeof header, "Retry-After: %u\r\n", r->retry_after_s);
	sy_buf body = SY_BUF_INIT;
	sy_error err;
	sy_log(SY_LOG_INFO, "%s %s answered 408: %s", h->method, h->path, message);
	if (sy_outcome_error_body(&body, SY_ERR_TEMPORARY_UNAVAILABLE, message, NULL, NULL, &err)) {
		h->error = SY_ERR_TEMPORARY_UNAVAILABLE;
		sy_http_json(h, 408, &body, header);
	} else {
		sy_responder_error(r, h, SY_ERR_NOMEM, "out of memory");
	}
	sy_buf_free(&body);
}

/*
 * Authentication (doc/contract.md#user-identity): the user comes from SYNCHRO_USER alone, the
 * parameter that only the web server's configuration sets (conf/nginx, conf/apache), from the user
 * it authenticated. A client's header reaches a responder as an HTTP_ parameter and never
 * names the user. A request whose identity is ambiguous authenticates nobody: the parameter
 * twice (a second line in the site, e.g. beside an include that sets it too; libfcgi would
 * return the first), or a Synchro-User header (HTTP_SYNCHRO_USER: a client trying to name
 * a user). Either is logged with its reason, never with a value. A value no route could use
 * as a user id (control characters, invalid UTF-8, too long) authenticates nobody either.
 */
#define SY_USER_PARAM "SYNCHRO_USER"

static bool check_auth(sy_http *h, sy_request *req, sy_error *why)
{
	static const char name[] = SY_USER_PARAM "=";
	static const char header[] = "HTTP_" SY_USER_PARAM "=";
	const char *u = NULL;
	unsigned count = 0;
	bool spoof = false;
	for (char **e = h->fcgx->envp; e != NULL && *e != NULL; e++) {
		if (strncmp(*e, name, sizeof name - 1) == 0) {
			if (count++ == 0)
				u = *e + sizeof name - 1;
		} else if (strncmp(*e, header, sizeof header - 1) == 0) {
			spoof = true;
		}
	}
	if (count > 1) {
		sy_log(SY_LOG_WARNING,
		       "%s %s refused (401): the parameter " SY_USER_PARAM
		       " came %u times; the web server's configuration must set it once",
		       h->method, h->path, count);
		return sy_error_set(why, SY_ERR_AUTH_REQUIRED, "authentication required");
	}
	if (spoof) {
		sy_log(SY_LOG_WARNING,
		       "%s %s refused (401): the request carries a Synchro-User header "
		       "(HTTP_" SY_USER_PARAM "); only the web server names the user",
		       h->method, h->path);
		return sy_error_set(why, SY_ERR_AUTH_REQUIRED, "authentication required");
	}
	sy_error err;
	if (u == NULL || !sy_fp_user_valid(u, strlen(u), &err))
		return sy_error_set(why, SY_ERR_AUTH_REQUIRED, "authentication required");
	req->user = u;
	return true;
}

static bool check_protocol(sy_http *h, sy_error *why)
{
	const char *proto = sy_http_param(h, "HTTP_SYNCHRO_PROTOCOL");
	if (proto == NULL || strcmp(proto, "3") != 0)
		return sy_error_set(why, SY_ERR_UPGRADE_REQUIRED,
		                    "this server speaks Synchro-Protocol: 3");
	return true;
}

/*
 * The route's gates that need no database, each once, in the order sy_dispatch_decide()
 * asks for them. True when the handler takes over (its next gate is its own or the
 * database's); false when one refused: its error response has been written.
 */
static bool run_gates(sy_responder *r, sy_http *h, const route *rt, sy_request *req)
{
	sy_gate_facts facts;
	sy_gate_facts_init(&facts, rt->gates);
	sy_error why = {0};
	for (;;) {
		sy_dispatch d = sy_dispatch_decide(&facts);
		/* Gates are looked at in order, so a refusal is never behind an unknown one. */
		assert(d.verdict != SY_DISPATCH_CHECK);
		if (d.verdict == SY_DISPATCH_REFUSE) {
			assert(why.code != SY_ERR_NONE); /* the failed check said why */
			/* The gate says the code; memory that ran out is a 503 whatever the gate. */
			sy_errcode code = why.code == SY_ERR_NOMEM ? SY_ERR_TEMPORARY_UNAVAILABLE
			                                           : sy_gate_errcode(d.gate);
			sy_responder_error(r, h, code, why.message);
			return false;
		}
		bool pass;
		switch (d.gate) {
		case SY_GATE_AUTH: pass = check_auth(h, req, &why); break;
		case SY_GATE_PROTOCOL: pass = check_protocol(h, &why); break;
		case SY_GATE_STRUCTURE:
			assert(rt->body_max > 0);
			/* The body within its limit (doc/contract.md#request-bodies: CONTENT_LENGTH
			 * above it is refused before a byte is read); its structure is the
			 * handler's. */
			if (sy_http_read_body(h, rt->body_max, r->body_timeout_ms, &why))
				return true;
			if (h->timed_out) {
				body_timeout(r, h, why.message);
				return false;
			}
			pass = false;
			break;
		default: return true; /* the handler's gates, or the database's, or none left */
		}
		facts.check[d.gate] = pass ? SY_CHECK_PASS : SY_CHECK_FAIL;
	}
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
	sy_metrics_error(r->metrics, id, h->error);
	sy_log(SY_LOG_DEBUG, "%s %s %d %.1f ms", h->method, found != NULL ? found->path : "-",
	       h->status, took * 1000);
}
