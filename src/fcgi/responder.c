/* SPDX-License-Identifier: BSD-2-Clause */
/* One responder: its accept loop, its lazily opened PostgreSQL connection, the /v3/ gates. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_SYS_EPOLL_H
#include <sys/epoll.h>
#endif

#include "common/log.h"
#include "fcgi/metrics.h"
#include "fcgi/prefork.h"
#include "fcgi/responder.h"
#include "store/conn.h"
#include "store/prepared.h"
#include "store/session.h"
#include "synchro/fingerprint.h"

/* Reconnect backoff after failed attempts: doubles from the first step up to the cap. */
#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS   2000

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void sy_responder_init(sy_responder *r, const sy_cfg *cfg, sy_inflight *inflight,
                       sy_metrics *metrics, int slot)
{
	memset(r, 0, sizeof *r);
	r->cfg = cfg;
	r->conninfo = sy_cfg_str(cfg, "database", "conninfo");
	r->auth_param = sy_cfg_str(cfg, "fcgi", "auth_param");
	r->lock_timeout_ms = (int)sy_cfg_int(cfg, "fcgi", "lock_timeout_ms");
	r->retry_after_s = (unsigned)sy_cfg_int(cfg, "fcgi", "retry_after_s");
	r->pull_wait_ms = (int)sy_cfg_int(cfg, "fcgi", "pull_wait_ms");
	r->inflight = inflight;
	r->metrics = metrics;
	r->slot = slot;
	/* Before this responder's first connection; the value was checked on reading. */
	sy_store_pooler pooler = SY_STORE_POOLER_NONE;
	(void)sy_store_pooler_parse(sy_cfg_str(cfg, "database", "pooler"), &pooler);
	sy_store_set_pooler(pooler);
}

void sy_responder_done(sy_responder *r)
{
	sy_store_disconnect(r->pg);
	r->pg = NULL;
	sy_manifest_free(r->schema.manifest);
	memset(&r->schema, 0, sizeof r->schema);
}

PGconn *sy_responder_db(sy_responder *r, sy_error *err)
{
	/* A connection a failed pipeline left in pipeline mode is dropped like a broken one. */
	if (r->pg != NULL && PQstatus(r->pg) == CONNECTION_OK &&
	    PQpipelineStatus(r->pg) == PQ_PIPELINE_OFF)
		return r->pg;
	if (r->pg != NULL) {
		sy_store_disconnect(r->pg);
		r->pg = NULL;
	}
	double now = mono_now();
	if (now < r->next_connect_at) {
		sy_error_set(err, SY_ERR_TEMPORARY_UNAVAILABLE, "database unavailable");
		return NULL;
	}
	sy_error e = {0};
	PGconn *c = sy_store_connect(r->conninfo, "synchro-fcgi", &e);
	if (c != NULL && sy_store_session_limits(c, r->lock_timeout_ms, &e) != SY_STORE_OK) {
		sy_store_disconnect(c);
		c = NULL;
	}
	if (c == NULL) {
		r->backoff_ms = r->backoff_ms == 0 ? BACKOFF_FIRST_MS : r->backoff_ms * 2;
		if (r->backoff_ms > BACKOFF_MAX_MS)
			r->backoff_ms = BACKOFF_MAX_MS;
		r->next_connect_at = now + r->backoff_ms / 1000.0;
		sy_metrics_event(r->metrics, SY_METRIC_DB_CONNECT_FAILURES);
		sy_log(SY_LOG_WARNING, "database: %s (next attempt in %d ms)", e.message,
		       r->backoff_ms);
		sy_error_set(err, SY_ERR_TEMPORARY_UNAVAILABLE, "database unavailable");
		return NULL;
	}
	if (r->backoff_ms != 0)
		sy_log(SY_LOG_INFO, "database: connected again");
	r->backoff_ms = 0;
	r->next_connect_at = 0;
	/* Prepared statements belong to the old session. */
	sy_store_stmt_forget();
	sy_metrics_event(r->metrics, SY_METRIC_DB_CONNECTS);
	r->pg = c;
	return c;
}

bool sy_responder_db_check(sy_responder *r)
{
	if (r->pg == NULL || PQstatus(r->pg) != CONNECTION_BAD)
		return false;
	sy_log(SY_LOG_WARNING, "database: connection lost; reconnecting on the next request");
	sy_metrics_event(r->metrics, SY_METRIC_DB_LOST);
	sy_store_disconnect(r->pg);
	r->pg = NULL;
	return true;
}

void sy_responder_error(sy_responder *r, sy_http *h, sy_errcode code, const char *message)
{
	sy_http_error(h, code, message, r->retry_after_s, NULL, NULL);
}

bool sy_responder_gates(sy_responder *r, sy_http *h, const char **user)
{
	/* PROTOCOL §1: identity only from the parameter the web server sets; a value no
	 * route could use as a user id (control characters, invalid UTF-8, too long)
	 * authenticates nobody. */
	const char *u = sy_http_param(h, r->auth_param);
	sy_error err;
	if (u == NULL || !sy_fp_user_valid(u, strlen(u), &err)) {
		sy_responder_error(r, h, SY_ERR_AUTH_REQUIRED, "authentication required");
		return false;
	}
	const char *proto = sy_http_param(h, "HTTP_SYNCHRO_PROTOCOL");
	if (proto == NULL || strcmp(proto, "3") != 0) {
		sy_responder_error(r, h, SY_ERR_UPGRADE_REQUIRED,
		                   "this server speaks Synchro-Protocol: 3");
		return false;
	}
	*user = u;
	return true;
}

static bool transient_accept_error(int e)
{
	return e == EAGAIN || e == EWOULDBLOCK || e == EINTR || e == ECONNABORTED || e == EPROTO ||
	       e == ECONNRESET || e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

/*
 * Fewer waiters per connection: responders share the listening socket, and a poll on it
 * wakes every idle responder for each connection while only one can take it (the
 * others find EAGAIN and sleep again). An epoll set with EPOLLEXCLUSIVE asks the kernel
 * to wake one, but it may wake more: with four idle responders and one connection at a
 * time, strace still showed up to three woken, two of them to find EAGAIN. Under load
 * no responder waits idle, so neither way changes throughput (a blocking accept, which
 * wakes exactly one, measured no faster). -1 where the system has none: responders then
 * poll, as before.
 */
static int exclusive_waiter(int listen_fd)
{
#if defined(HAVE_SYS_EPOLL_H) && defined(EPOLLEXCLUSIVE)
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return -1;
	struct epoll_event ev = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.fd = listen_fd};
	if (epoll_ctl(ep, EPOLL_CTL_ADD, listen_fd, &ev) != 0) {
		close(ep);
		return -1;
	}
	return ep;
#else
	(void)listen_fd;
	return -1;
#endif
}

/*
 * Waits until fd is readable, or the listening socket through ep when fd is it and ep
 * is set; SIGTERM and SIGINT are deliverable only during the wait. 1 when ready, 0
 * when a signal or a spurious wake-up ended the wait, -1 on failure (errno).
 */
static int wait_readable(int fd, int listen_fd, int ep, const sigset_t *waitmask)
{
	int n;
#if defined(HAVE_SYS_EPOLL_H) && defined(EPOLLEXCLUSIVE)
	if (ep >= 0 && fd == listen_fd) {
		struct epoll_event ev;
		n = epoll_pwait(ep, &ev, 1, -1, waitmask);
		if (n < 0)
			return errno == EINTR ? 0 : -1;
		if (n == 1 && (ev.events & EPOLLERR) != 0) {
			errno = EIO;
			return -1;
		}
		return n;
	}
#else
	(void)ep;
#endif
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	n = ppoll(&pfd, 1, NULL, waitmask);
	if (n < 0)
		return errno == EINTR ? 0 : -1;
	if ((pfd.revents & (POLLERR | POLLNVAL)) != 0 && fd == listen_fd) {
		errno = EIO;
		return -1;
	}
	return n;
}

/*
 * libfcgi closes a connection gracefully: shutdown, then a wait (up to 2 s) until the
 * web server has closed its end, so that input the web server is still sending (a body
 * answered before it was read) neither fails its send nor makes TCP reset the
 * connection and lose the answer. That wait puts the responder to sleep once more per
 * request, and keeps it from the next one, until the web server has taken the answer.
 * Once stdin has ended the web server sends nothing more on a connection it does not
 * keep (FCGI_KEEP_CONN unset): when nothing is left unread either, there is nothing to
 * wait for, and the request is detached from that wait and its socket just closed.
 */
static void close_at_once(FCGX_Request *req)
{
	int pending = -1;
	if (req->ipcFd < 0 || req->keepConnection)
		return;
	/* Unless the body was read to its end (sy_http_read_body), the web server may still
	 * be sending: the graceful close drains it. */
	if (!FCGX_HasSeenEOF(req->in))
		return;
	if (ioctl(req->ipcFd, FIONREAD, &pending) == 0 && pending == 0)
		FCGX_Detach(req);
}

int sy_responder_serve(sy_responder *r, int listen_fd, long max_requests)
{
	FCGX_Request req;
	if (FCGX_InitRequest(&req, listen_fd, FCGI_FAIL_ACCEPT_ON_INTR) != 0) {
		sy_log(SY_LOG_ERR, "responder: cannot set up the FastCGI request");
		return 1;
	}
	/*
	 * SIGTERM and SIGINT stay blocked except inside the wait: a request in
	 * flight is never interrupted (libpq, reads and writes of the answer), and
	 * a stop that arrives between two requests wakes the wait at once.
	 * Responders share the listening socket, so it is non-blocking: one that
	 * loses the race for a connection goes back to waiting.
	 */
	sigset_t block, waitmask;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &waitmask);
	sigdelset(&waitmask, SIGTERM);
	sigdelset(&waitmask, SIGINT);
	int flags = fcntl(listen_fd, F_GETFL);
	if (flags < 0 || fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK) != 0) {
		sy_log(SY_LOG_ERR, "responder: listening socket: %s", strerror(errno));
		FCGX_Free(&req, 1);
		return 1;
	}
	int ep = exclusive_waiter(listen_fd);

	int status = 0;
	while (!sy_prefork_stopping() &&
	       (max_requests <= 0 || r->requests < (unsigned long)max_requests)) {
		/* A web server that keeps the connection (FCGI_KEEP_CONN) sends the next
		 * request on it rather than through the listening socket. */
		int fd = req.ipcFd >= 0 ? req.ipcFd : listen_fd;
		int n = wait_readable(fd, listen_fd, ep, &waitmask);
		if (n == 0)
			continue;
		if (n < 0) {
			if (errno == EIO)
				sy_log(SY_LOG_ERR, "responder: the listening socket failed");
			else
				sy_log(SY_LOG_ERR, "responder: wait: %s", strerror(errno));
			status = 1;
			break;
		}
		int rc = FCGX_Accept_r(&req);
		if (rc < 0) {
			if (transient_accept_error(-rc))
				continue;
			sy_log(SY_LOG_ERR, "responder: accept: %s", strerror(-rc));
			status = 1;
			break;
		}
		sy_http h;
		sy_http_init(&h, &req);
		r->requests++;
		sy_route(r, &h);
		sy_http_done(&h);
		close_at_once(&req);
		FCGX_Finish_r(&req);
	}
	if (ep >= 0)
		close(ep);
	FCGX_Free(&req, 1);
	return status;
}
