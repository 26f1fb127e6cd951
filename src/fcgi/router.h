/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * router.h: the routes of synchro-fcgi as one table (router.c). Each path has its method,
 * the label it is counted by, the gates it runs, and its handler.
 *
 * Rules: doc/contract.md#dispatch-order (the order of the gates),
 * doc/contract.md#user-identity (the parameter the web server sets).
 * Notes: The gates are a mask of synchro/dispatch.h: SY_GATES_PUSH, SY_GATES_READ,
 * SY_GATES_CLIENT, SY_GATES_FRONT. The router runs the gates that need no database, once,
 * in the order sy_dispatch_decide() gives. They are authentication, the protocol gate, and
 * the part of structural validation that reads the body within the route's limit. A
 * handler starts where those end. Its other gates are its own (the structure of the body)
 * or the database's (src/store, and synchro.synchro_push in src/pg for push).
 */
#ifndef SY_FCGI_ROUTER_H
#define SY_FCGI_ROUTER_H

#include "fcgi/http.h"
#include "fcgi/responder.h"
#include "synchro/dispatch.h"

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
