/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * web_transport.c: the browser's transport, an sy_client_transport over fetch().
 *
 * Layer: middle of src/web (doc/hacking.md).
 * Notes: Only the HTTP round trip is JavaScript (worker.ts, Module.syFetch). The URL, the
 * basic credentials and the timeout live there. The library's C (client_sync.c) decides
 * what to send and when, and what a status or a Retry-After means, as with libcurl. start()
 * begins one fetch. poll() never waits: the worker steps again when the fetch settles. The
 * status is 0 when no response arrived (network error, timeout, abort), exactly as with the
 * libcurl transport.
 */
#include "config.h"

#include <emscripten.h>
#include <string.h>

#include "client_internal.h"
#include "synchro/client.h"
#include "web.h"

EM_JS(int, js_fetch_start, (const char *method, const char *path, const char *body, int len), {
	return Module["syFetch"].start(UTF8ToString(method), UTF8ToString(path),
	                               body ? HEAPU8.slice(body, body + len) : null)
	               ? 1
	               : 0;
});

/* 1 while the fetch is in flight, 0 when it settled, -1 when there is none. */
EM_JS(int, js_fetch_pending, (void), {
	var r = Module["syFetch"].current;
	return r ? (r.done ? 0 : 1) : -1;
});

EM_JS(int, js_fetch_status, (void), { return Module["syFetch"].current.status; });

EM_JS(int, js_fetch_body_len, (void), {
	var b = Module["syFetch"].current.body;
	return b ? b.length : 0;
});

EM_JS(void, js_fetch_body_copy, (void *out), {
	var b = Module["syFetch"].current.body;
	if (b)
		HEAPU8.set(b, out);
});

/* Copies the Retry-After header's text (at most n - 1 octets); its length, -1 when absent. */
EM_JS(int, js_fetch_retry_after, (char *out, int n), {
	var v = Module["syFetch"].current.retryAfter;
	if (v === null || v === undefined)
		return -1;
	return stringToUTF8(v, out, n);
});

EM_JS(void, js_fetch_clear, (void), { Module["syFetch"].clear(); });

static bool t_start(void *ctx, const sy_client_request *req)
{
	(void)ctx;
	return js_fetch_start(req->method, req->path, req->body, (int)req->body_len) == 1;
}

static int t_poll(void *ctx, int timeout_ms, sy_client_response *out)
{
	(void)ctx;
	(void)timeout_ms; /* never blocks: the worker steps when the fetch settles */
	int pending = js_fetch_pending();
	if (pending == 1)
		return 0;
	memset(out, 0, sizeof *out);
	out->retry_after_s = -1;
	if (pending < 0)
		return 1; /* none in flight: no response */
	out->status = js_fetch_status();
	if (out->status != 0) {
		int n = js_fetch_body_len();
		out->body = sy_client_alloc((size_t)n + 1);
		if (out->body == NULL) {
			out->status = 0; /* as libcurl when the body cannot be kept */
		} else {
			js_fetch_body_copy(out->body);
			out->body[n] = '\0';
			out->body_len = (size_t)n;
			char ra[32];
			int k = js_fetch_retry_after(ra, (int)sizeof ra);
			if (k >= 0)
				out->retry_after_s = sy_cl_retry_after(ra, (size_t)k);
		}
	}
	js_fetch_clear();
	return 1;
}

static void t_cancel(void *ctx)
{
	(void)ctx;
	js_fetch_clear(); /* aborts the fetch */
}

static void t_destroy(void *ctx)
{
	(void)ctx;
	js_fetch_clear();
}

sy_client_transport sy_web_transport(void)
{
	sy_client_transport t = {
	        .ctx = NULL, .start = t_start, .poll = t_poll, .cancel = t_cancel, .destroy = t_destroy};
	return t;
}
