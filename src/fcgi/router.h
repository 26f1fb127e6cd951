/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The routes of synchro-fcgi as one table (router.c): for each path its method, the label
 * it is counted by, the gates it runs and its handler. The router runs the gates once, in
 * the ADR's dispatch order ("Dispatch precedence is authentication, protocol gate,
 * structural validation, ..."), before the handler: a handler starts where its gates end.
 * What follows the gates (the structure of the body, the gates that need the database) is
 * the handler's, or the database's (push: synchro.synchro_push, src/pg).
 */
#ifndef SY_FCGI_ROUTER_H
#define SY_FCGI_ROUTER_H

#include "fcgi/http.h"
#include "fcgi/responder.h"

/* The gates a route runs, in this order. */
typedef enum {
	/* PROTOCOL §1: the identity is the parameter the web server sets ([fcgi] auth_param);
	 * absent, empty or not a valid user id: 401 auth_required. */
	SY_GATE_AUTH = 1 << 0,
	/* Synchro-Protocol exactly "3", or 426 upgrade_required. */
	SY_GATE_PROTOCOL = 1 << 1,
	/* The body, read whole within the route's limit (PROTOCOL §1: CONTENT_LENGTH above it
	 * is refused before a byte is read): 400 invalid_request. */
	SY_GATE_BODY = 1 << 2,
} sy_gate;

/* A request past its gates: who sent it (NULL on routes without SY_GATE_AUTH); the body,
 * when read, is h->body. */
typedef struct {
	const char *user;
} sy_request;

/* Route handlers: each writes exactly one response. */
typedef void (*sy_route_handler)(sy_responder *r, sy_http *h, const sy_request *req);
void sy_route_connect(sy_responder *r, sy_http *h, const sy_request *req); /* route_clients.c */
void sy_route_retire(sy_responder *r, sy_http *h, const sy_request *req);  /* route_clients.c */
void sy_route_schema(sy_responder *r, sy_http *h, const sy_request *req);  /* route_clients.c */
void sy_route_push(sy_responder *r, sy_http *h, const sy_request *req);    /* route_push.c */
void sy_route_pull(sy_responder *r, sy_http *h, const sy_request *req);    /* route_pull.c */
void sy_route_rebuild(sy_responder *r, sy_http *h, const sy_request *req); /* route_pull.c */
void sy_route_healthz(sy_responder *r, sy_http *h, const sy_request *req); /* route_ops.c */
void sy_route_metrics(sy_responder *r, sy_http *h, const sy_request *req); /* route_ops.c */

/* Dispatches one request by path and method, its gates first; answers it exactly once,
 * then times and counts it. */
void sy_route(sy_responder *r, sy_http *h);

#endif
