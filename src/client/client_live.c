/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_live.c: live updates of the native library. It holds a long-poll subscription to
 * the user's channel (GET /v3/live, nginx's nchan module).
 *
 * Layer: middle of src/client (doc/hacking.md).
 * Rules: doc/contract.md#live-notifications (what a notification says).
 * Notes: The subscription has a libcurl handle of its own, beside the transport's request.
 * sy_client_step and sy_client_wait drive it. A notification names a cursor. A cursor past
 * the store's makes a pull due now. Anything else in a notification, malformed or hostile,
 * only makes a pull due. A failed subscription is tried again later. The poll interval
 * stays the safety net. Credentials go to libcurl only. Nothing here logs.
 */
#include "config.h"

#ifndef SY_WEB
#include <curl/curl.h>
#endif
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "client_internal.h"
#include "synchro/alloc.h"
#include "synchro/buf.h"

#ifndef SY_WEB

#define LIVE_MAX_BODY     4096
#define LIVE_RETRY_MIN_MS 1000
#define LIVE_RETRY_MAX_MS 300000
#define LIVE_REFUSED_MS   60000 /* 401, 403, 404: no live updates there (yet) */

struct sy_cl_live {
	CURLM *multi;
	CURL *easy;
	char *url;
	char *userpwd;
	struct curl_slist *headers;
	bool active;
	sy_buf body;
	/* nchan's message id of the last notification, sent back to get the next one */
	char last_modified[64], etag[64];
	char got_last_modified[64], got_etag[64];
	int64_t retry_at_ms;
	unsigned backoff_ms;
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	sy_cl_live *l = ud;
	if (l->body.len + size * n > LIVE_MAX_BODY || !sy_buf_append(&l->body, p, size * n))
		return 0;
	return size * n;
}

/* A header's value (trimmed) into out when its name is name (with the colon). */
static void header_value(const char *p, size_t len, const char *name, char *out, size_t outlen)
{
	size_t nl = strlen(name);
	if (len <= nl || strncasecmp(p, name, nl) != 0)
		return;
	p += nl;
	len -= nl;
	while (len > 0 && (*p == ' ' || *p == '\t')) {
		p++;
		len--;
	}
	while (len > 0 && (p[len - 1] == '\r' || p[len - 1] == '\n' || p[len - 1] == ' '))
		len--;
	if (len < outlen) {
		memcpy(out, p, len);
		out[len] = '\0';
	}
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	sy_cl_live *l = ud;
	size_t len = size * n;
	header_value(p, len, "last-modified:", l->got_last_modified, sizeof l->got_last_modified);
	header_value(p, len, "etag:", l->got_etag, sizeof l->got_etag);
	return len;
}

sy_client_rc sy_cl_live_open(sy_client *c, const char *url, const char *user, const char *password,
                             sy_client_error *err)
{
	sy_cl_live *l = sy_calloc(1, sizeof *l);
	if (l == NULL)
		return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	c->live = l;
	sy_buf_init(&l->body);
	size_t ulen = strlen(url);
	while (ulen > 0 && url[ulen - 1] == '/')
		ulen--;
	size_t n = ulen + sizeof "/v3/live";
	l->url = sy_malloc(n);
	l->multi = curl_multi_init();
	l->easy = curl_easy_init();
	if (l->url == NULL || l->multi == NULL || l->easy == NULL)
		return sy_cl_fail(err, SY_CLIENT_ENOMEM, "libcurl initialisation failed");
	snprintf(l->url, n, "%.*s/v3/live", (int)ulen, url);
	/* nginx answers an idle subscription with 408 well before the timeout */
	if (!sy_cl_curl_setup(l->easy, user, password, &l->userpwd, on_body, on_header, l, 120L))
		return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	curl_easy_setopt(l->easy, CURLOPT_URL, l->url);
	curl_easy_setopt(l->easy, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(l->easy, CURLOPT_CONNECTTIMEOUT, 10L);
	return SY_CLIENT_OK;
}

static void stop(sy_cl_live *l)
{
	if (l->active)
		curl_multi_remove_handle(l->multi, l->easy);
	l->active = false;
}

void sy_cl_live_close(sy_client *c)
{
	sy_cl_live *l = c->live;
	if (l == NULL)
		return;
	stop(l);
	if (l->easy)
		curl_easy_cleanup(l->easy);
	if (l->multi)
		curl_multi_cleanup(l->multi);
	curl_slist_free_all(l->headers);
	sy_buf_free(&l->body);
	if (l->userpwd != NULL)
		memset(l->userpwd, 0, strlen(l->userpwd));
	sy_free(l->userpwd);
	sy_free(l->url);
	sy_free(l);
	c->live = NULL;
}

static void subscribe(sy_client *c, sy_cl_live *l)
{
	sy_buf_reset(&l->body);
	l->got_last_modified[0] = l->got_etag[0] = '\0';
	curl_slist_free_all(l->headers);
	l->headers = NULL;
	char h[96];
	struct curl_slist *s = curl_slist_append(NULL, "Accept: text/plain");
	if (s != NULL && l->last_modified[0]) {
		snprintf(h, sizeof h, "If-Modified-Since: %s", l->last_modified);
		s = curl_slist_append(s, h);
	}
	if (s != NULL && l->etag[0]) {
		snprintf(h, sizeof h, "If-None-Match: %s", l->etag);
		s = curl_slist_append(s, h);
	}
	l->headers = s;
	curl_easy_setopt(l->easy, CURLOPT_HTTPHEADER, l->headers);
	if (c->token != NULL) {
		/* the client's current bearer token (renewed by its requests after a 401) */
		curl_easy_setopt(l->easy, CURLOPT_XOAUTH2_BEARER, c->token);
		curl_easy_setopt(l->easy, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
	}
	if (s != NULL && curl_multi_add_handle(l->multi, l->easy) == CURLM_OK)
		l->active = true;
}

static void later(sy_cl_live *l, int64_t now, unsigned min_ms)
{
	l->backoff_ms = l->backoff_ms ? l->backoff_ms * 2 : min_ms;
	if (l->backoff_ms < min_ms)
		l->backoff_ms = min_ms;
	if (l->backoff_ms > LIVE_RETRY_MAX_MS)
		l->backoff_ms = LIVE_RETRY_MAX_MS;
	l->retry_at_ms = now + l->backoff_ms;
}

/* Whether the notification's body names a cursor the store has already passed (or
 * reached): only then is nothing due. Anything malformed makes a pull due. */
static bool already_have(sy_client *c, const char *body, size_t len)
{
	static const char key[] = "{\"cursor\":\"";
	const size_t clen = 28; /* "c1." 16 hex "." 8 hex */
	if (len != sizeof key - 1 + clen + 2 || memcmp(body, key, sizeof key - 1) != 0 ||
	    memcmp(body + len - 2, "\"}", 2) != 0)
		return false;
	const char *n = body + sizeof key - 1;
	if (memcmp(n, "c1.", 3) != 0 || n[19] != '.')
		return false;
	for (size_t i = 3; i < clen; i++)
		if (i != 19 && !((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f')))
			return false;
	char *cursor = NULL;
	sy_client_error e;
	bool have = sy_cl_meta_get(c, "cursor", &cursor, &e) == SY_CLIENT_OK && cursor != NULL &&
	            strlen(cursor) == clen && memcmp(cursor, n, clen) >= 0;
	sy_free(cursor);
	return have;
}

/* Subscribed while idle after a pull that caught up only: a sync that ends there (the state
 * of a client just opened is idle too) never opens one. */
static bool may_subscribe(const sy_client *c, const sy_cl_live *l, int64_t now)
{
	return !l->active && now >= l->retry_at_ms && c->phase == SY_PHASE_IDLE &&
	       c->pull_caught_up && c->inflight == SY_CL_REQ_NONE && !c->stopped && !c->retired;
}

void sy_cl_live_step(sy_client *c, int64_t now)
{
	sy_cl_live *l = c->live;
	if (l == NULL)
		return;
	if (c->stopped || c->retired) {
		stop(l);
		return;
	}
	if (l->active) {
		int running = 0, left;
		curl_multi_perform(l->multi, &running);
		CURLMsg *m;
		while ((m = curl_multi_info_read(l->multi, &left)) != NULL) {
			if (m->msg != CURLMSG_DONE)
				continue;
			long code = 0;
			if (m->data.result == CURLE_OK)
				curl_easy_getinfo(l->easy, CURLINFO_RESPONSE_CODE, &code);
			stop(l);
			if (code == 200) {
				l->backoff_ms = 0;
				memcpy(l->last_modified, l->got_last_modified,
				       sizeof l->last_modified);
				memcpy(l->etag, l->got_etag, sizeof l->etag);
				if (!already_have(c, l->body.data ? l->body.data : "", l->body.len))
					sy_client_kick(c);
			} else if (code == 304 || code == 408) {
				l->backoff_ms = 0; /* no message in time: subscribe again */
			} else if (code == 0 || code == 410 || code == 429 || code >= 500) {
				/* no answer, nginx reloading (410), overloaded: again soon */
				later(l, now, LIVE_RETRY_MIN_MS);
			} else {
				/* 401, 403, 404 (no live updates on this server), 400...: the poll
				 * only, for a while */
				later(l, now, LIVE_REFUSED_MS);
			}
		}
	}
	if (may_subscribe(c, l, now))
		subscribe(c, l);
}

bool sy_cl_live_wait(sy_client *c, int timeout_ms)
{
	sy_cl_live *l = c->live;
	if (l == NULL)
		return false;
	/* The step that went idle ran before: subscribe now rather than at the next step. */
	if (may_subscribe(c, l, sy_cl_now(c)))
		subscribe(c, l);
	if (!l->active)
		return false;
	int running = 0;
	curl_multi_perform(l->multi, &running);
	if (running && timeout_ms > 0)
		curl_multi_poll(l->multi, NULL, 0, timeout_ms, NULL);
	return true;
}

#else /* SY_WEB: the worker subscribes with fetch (worker.ts) */

sy_client_rc sy_cl_live_open(sy_client *c, const char *url, const char *user, const char *password,
                             sy_client_error *err)
{
	(void)c, (void)url, (void)user, (void)password, (void)err;
	return SY_CLIENT_OK;
}

void sy_cl_live_close(sy_client *c)
{
	(void)c;
}

void sy_cl_live_step(sy_client *c, int64_t now)
{
	(void)c, (void)now;
}

bool sy_cl_live_wait(sy_client *c, int timeout_ms)
{
	(void)c, (void)timeout_ms;
	return false;
}

#endif
