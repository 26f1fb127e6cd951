/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_transport.c: the default transport, over libcurl's multi interface.
 *
 * Layer: middle of src/client (doc/hacking.md).
 * Notes: One easy handle serves every request, so the connection is kept alive. Only
 * sy_client_step and sy_client_wait drive it (curl_multi_perform, curl_multi_poll). There
 * is no thread and no signal handler. Credentials (basic, or the request's bearer token) go
 * to libcurl only. Nothing here logs.
 */
#include "config.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "client_internal.h"
#include "synchro/alloc.h"
#include "synchro/buf.h"

typedef struct {
	CURLM *multi;
	CURL *easy;
	struct curl_slist *headers;
	char *url;
	char *userpwd;
	unsigned timeout_s;
	bool active;
	sy_buf body;
	int retry_after;
	char *full_url;
} curl_ctx;

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	curl_ctx *t = ud;
	if (!sy_buf_append(&t->body, p, size * n))
		return 0; /* libcurl then fails the transfer: no response */
	return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	curl_ctx *t = ud;
	size_t len = size * n;
	static const char name[] = "retry-after:";
	if (len > sizeof name - 1 && strncasecmp(p, name, sizeof name - 1) == 0) {
		int v = sy_cl_retry_after(p + sizeof name - 1, len - (sizeof name - 1));
		if (v >= 0)
			t->retry_after = v;
	}
	return len;
}

static void finish(curl_ctx *t)
{
	if (t->active)
		curl_multi_remove_handle(t->multi, t->easy);
	t->active = false;
	sy_free(t->full_url);
	t->full_url = NULL;
}

/*
 * Sends what the socket takes now, without waiting: curl_multi_add_handle sends
 * nothing, and one curl_multi_perform sends a few upload buffers only, while the
 * caller goes on to work that can last a while (a pipelined push reconciles the
 * previous batch next): the server must have the whole request meanwhile.
 * Stops when the body is out, the transfer is over, or a pass sent nothing.
 */
static void pump(curl_ctx *t, size_t body_len)
{
	curl_off_t before = -1;
	for (int i = 0; i < 64; i++) {
		int running = 0;
		curl_off_t sent = 0;
		curl_multi_perform(t->multi, &running);
		if (!running || curl_easy_getinfo(t->easy, CURLINFO_SIZE_UPLOAD_T, &sent) != CURLE_OK ||
		    sent >= (curl_off_t)body_len || sent == before)
			return;
		before = sent;
	}
}

static bool t_start(void *ctx, const sy_client_request *req)
{
	curl_ctx *t = ctx;
	finish(t);
	sy_buf_reset(&t->body);
	t->retry_after = -1;
	size_t n = strlen(t->url) + strlen(req->path) + 1;
	if ((t->full_url = sy_malloc(n)) == NULL)
		return false;
	snprintf(t->full_url, n, "%s%s", t->url, req->path);
	CURL *e = t->easy;
	curl_easy_setopt(e, CURLOPT_URL, t->full_url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
	if (req->token != NULL) {
		/* "Authorization: Bearer <token>", sent at once (the only method allowed) */
		curl_easy_setopt(e, CURLOPT_XOAUTH2_BEARER, req->token);
		curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
	}
	if (strcmp(req->method, "POST") == 0) {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	} else {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	}
	if (curl_multi_add_handle(t->multi, e) != CURLM_OK)
		return false;
	t->active = true;
	pump(t, req->body_len);
	return true;
}

static int t_poll(void *ctx, int timeout_ms, sy_client_response *out)
{
	curl_ctx *t = ctx;
	if (!t->active) {
		out->status = 0;
		out->body = NULL;
		out->body_len = 0;
		out->retry_after_s = -1;
		return 1;
	}
	int running = 0;
	curl_multi_perform(t->multi, &running);
	if (running && timeout_ms > 0) {
		curl_multi_poll(t->multi, NULL, 0, timeout_ms, NULL);
		curl_multi_perform(t->multi, &running);
	}
	int left;
	CURLMsg *m;
	while ((m = curl_multi_info_read(t->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		long code = 0;
		if (m->data.result == CURLE_OK)
			curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
		finish(t);
		out->status = (int)code;
		out->retry_after_s = t->retry_after;
		out->body_len = 0;
		out->body = code != 0 ? sy_buf_steal(&t->body, &out->body_len) : NULL;
		if (code != 0 && out->body == NULL) {
			out->body = sy_strndup("", 0);
			out->body_len = 0;
		}
		return 1;
	}
	return 0;
}

static void t_cancel(void *ctx)
{
	finish(ctx);
}

static void t_destroy(void *ctx)
{
	curl_ctx *t = ctx;
	if (t == NULL)
		return;
	finish(t);
	if (t->easy)
		curl_easy_cleanup(t->easy);
	if (t->multi)
		curl_multi_cleanup(t->multi);
	curl_slist_free_all(t->headers);
	sy_buf_free(&t->body);
	if (t->userpwd != NULL)
		memset(t->userpwd, 0, strlen(t->userpwd));
	sy_free(t->userpwd);
	sy_free(t->url);
	sy_free(t);
}

sy_client_rc sy_cl_curl_transport(const char *url, const char *user, const char *password,
                                  unsigned timeout_s, sy_client_transport *out,
                                  sy_client_error *err)
{
	if (url == NULL)
		return sy_cl_fail(err, SY_CLIENT_EINVAL, "no server URL");
	curl_ctx *t = sy_calloc(1, sizeof *t);
	if (t == NULL)
		return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	sy_buf_init(&t->body);
	size_t ulen = strlen(url);
	while (ulen > 0 && url[ulen - 1] == '/')
		ulen--;
	t->url = sy_strndup(url, ulen);
	t->multi = curl_multi_init();
	t->easy = curl_easy_init();
	struct curl_slist *h = curl_slist_append(NULL, "Synchro-Protocol: 3");
	if (h != NULL)
		t->headers = h;
	h = h ? curl_slist_append(h, "Content-Type: application/json") : NULL;
	h = h ? curl_slist_append(h, "Expect:") : NULL;
	if (t->url == NULL || t->multi == NULL || t->easy == NULL || h == NULL) {
		t_destroy(t);
		return sy_cl_fail(err, SY_CLIENT_ENOMEM, "libcurl initialisation failed");
	}
	if (!sy_cl_curl_setup(t->easy, user, password, &t->userpwd, on_body, on_header, t,
	                      (long)(timeout_s ? timeout_s : 60))) {
		t_destroy(t);
		return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	}
	out->ctx = t;
	out->start = t_start;
	out->poll = t_poll;
	out->cancel = t_cancel;
	out->destroy = t_destroy;
	return SY_CLIENT_OK;
}
