/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http.h: one FastCGI request as HTTP: parameters, the capped body and the response.
 */
#ifndef SY_FCGI_HTTP_H
#define SY_FCGI_HTTP_H

#include <fcgiapp.h>

#include "synchro/buf.h"
#include "synchro/scalar.h"

typedef struct {
	FCGX_Request *fcgx;
	const char *method; /* "GET", "POST", ... ("" when absent) */
	char path[256];     /* from REQUEST_URI without the query; "" when too long */
	char *body;         /* NUL-terminated; owned; NULL until read */
	size_t body_len;
	int status; /* the status answered, for logs and metrics */
	sy_errcode error; /* the request-level error answered (SY_ERR_NONE: none), for metrics */
	bool answered;
	bool timed_out; /* the body did not come within its deadline: close without waiting */
} sy_http;

void sy_http_init(sy_http *h, FCGX_Request *fcgx);
/* Frees the body. */
void sy_http_done(sy_http *h);
/* A FastCGI parameter, or NULL. */
const char *sy_http_param(const sy_http *h, const char *name);

/*
 * Reads the request body. CONTENT_LENGTH above max is refused before a byte
 * is read (doc/contract.md#request-bodies); a missing or malformed length, or a body shorter
 * than announced, is refused too. False with *err set (SY_ERR_INVALID_REQUEST).
 * A body (with the end of stdin) not received within timeout_ms (> 0) is
 * refused too, with h->timed_out set: the caller answers 408.
 */
SY_MUST_CHECK bool sy_http_read_body(sy_http *h, size_t max, int timeout_ms, sy_error *err);

/*
 * Writes a whole response. extra_headers is NULL or CRLF-terminated header
 * lines. A response is written at most once per request.
 */
void sy_http_respond(sy_http *h, int status, const char *content_type, const char *extra_headers,
                     const char *body, size_t len);
/* A canonical JSON body with status 200..599. */
void sy_http_json(sy_http *h, int status, const sy_buf *body, const char *extra_headers);
/*
 * The request-level error of code with its canonical body; 429 and 503 carry
 * Retry-After: retry_after_s. schema_mismatch takes current and received.
 */
void sy_http_error(sy_http *h, sy_errcode code, const char *message, unsigned retry_after_s,
                   const sy_schema_ref *current, const sy_schema_ref *received);

#endif
