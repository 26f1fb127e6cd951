/* SPDX-License-Identifier: BSD-2-Clause */
/* One responder: its accept loop, its lazily opened PostgreSQL connection, the /v3/ gates. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <time.h>

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

void sy_responder_init(sy_responder *r, const sy_cfg *cfg, sy_admission *admission,
                       sy_metrics *metrics, int slot)
{
	memset(r, 0, sizeof *r);
	r->cfg = cfg;
	r->conninfo = sy_cfg_str(cfg, "database", "conninfo");
	r->auth_param = sy_cfg_str(cfg, "fcgi", "auth_param");
	r->lock_timeout_ms = (int)sy_cfg_int(cfg, "fcgi", "lock_timeout_ms");
	r->retry_after_s = (unsigned)sy_cfg_int(cfg, "fcgi", "retry_after_s");
	r->pull_wait_ms = (int)sy_cfg_int(cfg, "fcgi", "pull_wait_ms");
	r->admission = admission;
	r->metrics = metrics;
	r->slot = slot;
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
	if (r->pg != NULL && PQstatus(r->pg) == CONNECTION_OK)
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

int sy_responder_serve(sy_responder *r, int listen_fd, long max_requests)
{
	FCGX_Request req;
	if (FCGX_InitRequest(&req, listen_fd, FCGI_FAIL_ACCEPT_ON_INTR) != 0) {
		sy_log(SY_LOG_ERR, "responder: cannot set up the FastCGI request");
		return 1;
	}
	/*
	 * SIGTERM and SIGINT stay blocked except inside ppoll(): a request in
	 * flight is never interrupted (libpq, reads and writes of the answer), and
	 * a stop that arrives between two requests wakes the wait at once.
	 * Responders share the listening socket, so it is non-blocking: the ones
	 * that lose the race for a connection go back to waiting.
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
		return 1;
	}

	int status = 0;
	while (!sy_prefork_stopping() &&
	       (max_requests <= 0 || r->requests < (unsigned long)max_requests)) {
		/* A web server that keeps the connection (FCGI_KEEP_CONN) sends the next
		 * request on it rather than through the listening socket. */
		struct pollfd pfd = {.fd = req.ipcFd >= 0 ? req.ipcFd : listen_fd,
		                     .events = POLLIN};
		int n = ppoll(&pfd, 1, NULL, &waitmask);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			sy_log(SY_LOG_ERR, "responder: poll: %s", strerror(errno));
			status = 1;
			break;
		}
		if ((pfd.revents & (POLLERR | POLLNVAL)) != 0 && pfd.fd == listen_fd) {
			sy_log(SY_LOG_ERR, "responder: the listening socket failed");
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
		FCGX_Finish_r(&req);
	}
	FCGX_Free(&req, 1);
	return status;
}
