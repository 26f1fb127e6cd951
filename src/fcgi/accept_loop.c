/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * accept_loop.c: the accept loop of one responder.
 *
 * Layer: middle of src/fcgi (doc/hacking.md).
 * Notes: It waits for a FastCGI connection on the shared listening socket. Where the system
 * can, it wakes one waiter only. It answers the request through the router. It closes the
 * connection without libfcgi's graceful wait when nothing is left to drain. On SIGTERM it
 * stops after the request in flight. It also stops after max_requests.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#ifdef HAVE_SYS_EPOLL_H
#include <sys/epoll.h>
#endif

#include "common/log.h"
#include "fcgi/accept_loop.h"
#include "fcgi/prefork.h"
#include "fcgi/router.h"

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

int sy_accept_loop(sy_responder *r, int listen_fd, long max_requests)
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
		/* A body that did not come in time is not waited for: the answer is flushed
		 * and the connection closed, without libfcgi's wait for the web server. */
		if (h.timed_out)
			FCGX_Detach(&req);
		else
			close_at_once(&req);
		sy_http_done(&h);
		FCGX_Finish_r(&req);
	}
	if (ep >= 0)
		close(ep);
	FCGX_Free(&req, 1);
	return status;
}
