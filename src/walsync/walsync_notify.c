/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync_notify.c: live notifications to the web server's pub/sub module
 * (walsync_notify.h).
 *
 * Layer: base of src/walsync (doc/hacking.md).
 * Rules: doc/contract.md#live-notifications (what a notification says).
 * Notes: While the batch is decoded, a small hash table keeps the users it touched, each
 * with the position of their newest change. After the changelog write, each user gets one
 * HTTP/1.1 POST ("Connection: close"). It goes to the publisher URL with the user's channel
 * id appended. Its body is {"cursor":"c1...."} and nothing else. Each POST is non-blocking,
 * against one deadline for the whole batch. What does not fit is counted as failed and
 * never sent again. The devices' poll is the safety net.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "store/pull.h"
#include "synchro/alloc.h"
#include "synchro/buf.h"
#include "walsync/walsync_notify.h"

typedef struct {
	char *user; /* NULL: free slot */
	sy_store_position pos;
} entry;

struct sy_ws_notify {
	bool on;
	char host[256];
	char path[512]; /* ends with '/' */
	struct sockaddr_storage addr;
	socklen_t addrlen;
	int timeout_ms;
	entry *slots;
	size_t cap, used;
	long long published, failed;
	int64_t last_warning_ms;
};

sy_ws_notify *sy_ws_notify_new(void)
{
	sy_ws_notify *n = sy_calloc(1, sizeof *n);
	return n;
}

void sy_ws_notify_forget(sy_ws_notify *n)
{
	for (size_t i = 0; i < n->cap; i++) {
		sy_free(n->slots[i].user);
		n->slots[i].user = NULL;
	}
	n->used = 0;
}

void sy_ws_notify_free(sy_ws_notify *n)
{
	if (n == NULL)
		return;
	sy_ws_notify_forget(n);
	sy_free(n->slots);
	sy_free(n);
}

bool sy_ws_notify_enabled(const sy_ws_notify *n)
{
	return n->on;
}

long long sy_ws_notify_published(const sy_ws_notify *n)
{
	return n->published;
}

long long sy_ws_notify_failed(const sy_ws_notify *n)
{
	return n->failed;
}

bool sy_ws_notify_configure(sy_ws_notify *n, const char *url, int timeout_ms)
{
	/* A URL refused leaves the running settings (a reload keeps them). */
	if (url[0] == '\0') {
		n->on = false;
		n->timeout_ms = timeout_ms;
		return true;
	}
	const char *p = strncmp(url, "http://", 7) == 0 ? url + 7 : NULL;
	const char *slash = p ? strchr(p, '/') : NULL;
	const char *colon = NULL;
	if (p && *p == '[') {
		const char *end = strchr(p, ']');
		colon = end && end[1] == ':' ? end + 1 : NULL;
	} else if (p) {
		colon = strchr(p, ':');
	}
	if (slash == NULL || colon == NULL || colon > slash || colon == p ||
	    (size_t)(colon - p) >= 256 || strlen(slash) >= 510) {
		sy_log(SY_LOG_ERR, "[walsync] notify_url: http://HOST:PORT/PATH/ expected");
		return false;
	}
	char port[16];
	if ((size_t)(slash - colon - 1) >= sizeof port || slash == colon + 1) {
		sy_log(SY_LOG_ERR, "[walsync] notify_url: http://HOST:PORT/PATH/ expected");
		return false;
	}
	snprintf(port, sizeof port, "%.*s", (int)(slash - colon - 1), colon + 1);
	char host[256];
	if (*p == '[')
		snprintf(host, sizeof host, "%.*s", (int)(colon - p - 2), p + 1);
	else
		snprintf(host, sizeof host, "%.*s", (int)(colon - p), p);
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0 || res == NULL || res->ai_addrlen > sizeof n->addr) {
		sy_log(SY_LOG_ERR, "[walsync] notify_url: %s: %s", host,
		       rc ? gai_strerror(rc) : "no address");
		if (res)
			freeaddrinfo(res);
		return false;
	}
	memcpy(&n->addr, res->ai_addr, res->ai_addrlen);
	n->addrlen = res->ai_addrlen;
	freeaddrinfo(res);
	snprintf(n->host, sizeof n->host, "%.*s", (int)(colon - p), p);
	snprintf(n->path, sizeof n->path, "%s%s", slash,
	         slash[strlen(slash) - 1] == '/' ? "" : "/");
	n->timeout_ms = timeout_ms;
	n->on = true;
	return true;
}

static size_t hash(const char *s)
{
	size_t h = 1469598103934665603u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return h;
}

static bool grow(sy_ws_notify *n)
{
	size_t cap = n->cap ? n->cap * 2 : 64;
	entry *slots = sy_calloc(cap, sizeof *slots);
	if (slots == NULL)
		return false;
	for (size_t i = 0; i < n->cap; i++) {
		if (n->slots[i].user == NULL)
			continue;
		size_t k = hash(n->slots[i].user) & (cap - 1);
		while (slots[k].user != NULL)
			k = (k + 1) & (cap - 1);
		slots[k] = n->slots[i];
	}
	sy_free(n->slots);
	n->slots = slots;
	n->cap = cap;
	return true;
}

bool sy_ws_notify_note(sy_ws_notify *n, const char *user, uint64_t lsn, uint32_t ordinal)
{
	if (!n->on || user == NULL || user[0] == '\0')
		return true;
	if ((n->used + 1) * 2 > n->cap && !grow(n))
		return false;
	sy_store_position pos = {.lsn = lsn, .ordinal = ordinal};
	size_t k = hash(user) & (n->cap - 1);
	while (n->slots[k].user != NULL && strcmp(n->slots[k].user, user) != 0)
		k = (k + 1) & (n->cap - 1);
	entry *e = &n->slots[k];
	if (e->user == NULL) {
		if ((e->user = sy_strndup(user, strlen(user))) == NULL)
			return false;
		e->pos = pos;
		n->used++;
	} else if (sy_store_position_cmp(&pos, &e->pos) > 0) {
		e->pos = pos;
	}
	return true;
}

/* The user's name as a path segment: unreserved characters kept, every other byte %XX. */
static void segment(sy_buf *b, const char *user)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *s = (const unsigned char *)user; *s; s++) {
		if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || *s == '-' || *s == '.' || *s == '_' || *s == '~') {
			sy_buf_putc(b, (char)*s);
		} else {
			sy_buf_putc(b, '%');
			sy_buf_putc(b, hex[*s >> 4]);
			sy_buf_putc(b, hex[*s & 15]);
		}
	}
}

/* Waits until fd is ready for events or the deadline; true when ready. */
static bool wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - sy_clock_ms();
		if (left <= 0)
			return false;
		struct pollfd p = {.fd = fd, .events = events};
		int r = poll(&p, 1, (int)left);
		if (r > 0)
			return true;
		if (r < 0 && errno != EINTR)
			return false;
	}
}

/* One POST; true on a 2xx answer. */
static bool post(sy_ws_notify *n, const char *request, size_t len, int64_t deadline)
{
	int fd = socket(n->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	bool ok = false;
	if (connect(fd, (struct sockaddr *)&n->addr, n->addrlen) != 0) {
		int e = 0;
		socklen_t el = sizeof e;
		if (errno != EINPROGRESS || !wait_fd(fd, POLLOUT, deadline) ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) != 0 || e != 0)
			goto done;
	}
	for (size_t off = 0; off < len;) {
		ssize_t w = send(fd, request + off, len - off, MSG_NOSIGNAL);
		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		if (w < 0 && (errno == EAGAIN || errno == EINTR) && wait_fd(fd, POLLOUT, deadline))
			continue;
		goto done;
	}
	/* The status line is all that is read; the rest is dropped with the connection. */
	char head[16];
	size_t got = 0;
	while (got < 12) {
		ssize_t r = recv(fd, head + got, sizeof head - got, 0);
		if (r > 0) {
			got += (size_t)r;
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EINTR) && wait_fd(fd, POLLIN, deadline))
			continue;
		goto done;
	}
	ok = memcmp(head, "HTTP/1.", 7) == 0 && head[8] == ' ' && head[9] == '2';
done:
	close(fd);
	return ok;
}

void sy_ws_notify_publish(sy_ws_notify *n)
{
	if (!n->on || n->used == 0) {
		sy_ws_notify_forget(n);
		return;
	}
	int64_t start = sy_clock_ms(), deadline = start + n->timeout_ms;
	long long failed = 0;
	sy_buf b = SY_BUF_INIT;
	for (size_t i = 0; i < n->cap; i++) {
		entry *e = &n->slots[i];
		if (e->user == NULL)
			continue;
		char cursor[SY_STORE_CURSOR_LEN + 1], body[64];
		sy_store_cursor_format(&e->pos, cursor);
		int blen = snprintf(body, sizeof body, "{\"cursor\":\"%s\"}", cursor);
		sy_buf_reset(&b);
		sy_buf_puts(&b, "POST ");
		sy_buf_puts(&b, n->path);
		segment(&b, e->user);
		sy_buf_printf(&b,
		              " HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
		              "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
		              n->host, blen, body);
		if (!b.failed && sy_clock_ms() < deadline && post(n, b.data, b.len, deadline))
			n->published++;
		else
			failed++;
	}
	sy_buf_free(&b);
	sy_ws_notify_forget(n);
	if (failed > 0) {
		n->failed += failed;
		int64_t now = sy_clock_ms();
		if (n->last_warning_ms == 0 || now - n->last_warning_ms >= 60000) {
			n->last_warning_ms = now;
			sy_log(SY_LOG_WARNING,
			       "live notifications: %lld not published (%lld so far; refused, no "
			       "answer or over %d ms); devices get those changes at their poll",
			       failed, n->failed, n->timeout_ms);
		}
	}
}
