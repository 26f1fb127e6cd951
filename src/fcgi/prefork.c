/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * prefork.c: the synchro-fcgi master (prefork.h), and the signal handling of master and
 * responder.
 *
 * Layer: base of src/fcgi (doc/hacking.md).
 * Notes: The master binds the listening socket and forks responders. It replaces those
 * that die. On SIGHUP it starts a new generation. On SIGTERM it drains. Signals are set
 * with sigaction, without SA_RESTART.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcgiapp.h>
#include <grp.h>
#include <netdb.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "fcgi/prefork.h"

static volatile sig_atomic_t got_term;
static volatile sig_atomic_t got_hup;
static volatile sig_atomic_t got_chld;

static void on_master_signal(int sig)
{
	if (sig == SIGHUP)
		got_hup = 1;
	else if (sig == SIGCHLD)
		got_chld = 1;
	else
		got_term = 1;
}

static void on_worker_term(int sig)
{
	(void)sig;
	got_term = 1;
	/* Makes libfcgi's accept() give up on EINTR instead of retrying. */
	FCGX_ShutdownPending();
}

bool sy_prefork_stopping(void)
{
	return got_term != 0;
}

static void set_handler(int sig, void (*fn)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: a blocked wait (sigtimedwait, ppoll) must return */
	sigaction(sig, &sa, NULL);
}

void sy_prefork_worker_signals(void)
{
	set_handler(SIGTERM, on_worker_term);
	set_handler(SIGINT, on_worker_term);
	set_handler(SIGHUP, SIG_IGN);
	set_handler(SIGPIPE, SIG_IGN);
	set_handler(SIGCHLD, SIG_DFL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

bool sy_prefork_fd0_is_listener(void)
{
	int listening = 0;
	socklen_t len = sizeof listening;
	if (getsockopt(0, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0)
		return false;
	return listening != 0;
}

static int listen_unix(const char *path, const char *owner, const char *group, unsigned mode,
                       int backlog, sy_error *err)
{
	struct sockaddr_un sa;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sa.sun_path) {
		sy_error_set(err, SY_ERR_INVALID_REQUEST, "listen: socket path too long");
		return -1;
	}
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail_errno;
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			sy_error_set(err, SY_ERR_INVALID_REQUEST,
			             "listen: %s exists and is not a socket", path);
			close(fd);
			return -1;
		}
		unlink(path);
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
		goto fail_errno;
	if (owner != NULL || group != NULL) {
		uid_t uid = (uid_t)-1;
		gid_t gid = (gid_t)-1;
		if (owner != NULL && *owner != '\0') {
			struct passwd *pw = getpwnam(owner);
			if (pw == NULL) {
				sy_error_set(err, SY_ERR_INVALID_REQUEST,
				             "listen_owner: no user %s", owner);
				goto fail;
			}
			uid = pw->pw_uid;
		}
		if (group != NULL && *group != '\0') {
			struct group *gr = getgrnam(group);
			if (gr == NULL) {
				sy_error_set(err, SY_ERR_INVALID_REQUEST,
				             "listen_group: no group %s", group);
				goto fail;
			}
			gid = gr->gr_gid;
		}
		if ((uid != (uid_t)-1 || gid != (gid_t)-1) && chown(path, uid, gid) != 0)
			goto fail_errno;
	}
	if (mode != 0 && chmod(path, (mode_t)mode) != 0)
		goto fail_errno;
	if (listen(fd, backlog) != 0)
		goto fail_errno;
	return fd;
fail_errno:
	sy_error_set(err, SY_ERR_INVALID_REQUEST, "listen %s: %s", path, strerror(errno));
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

/* 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104. */
static bool loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/*
 * The addresses of host:port (a new list: freeaddrinfo()), or NULL with *err set.
 * FastCGI has no authentication: whoever reaches the port names any user. An address
 * other than loopback is refused unless allow_public says so.
 */
static struct addrinfo *resolve_tcp(const char *spec, bool allow_public, sy_error *err)
{
	char host[256];
	const char *colon = strrchr(spec, ':');
	if (colon == NULL || colon == spec || (size_t)(colon - spec) >= sizeof host ||
	    colon[1] == '\0') {
		sy_error_set(err, SY_ERR_INVALID_REQUEST,
		             "listen: expected an absolute socket path or host:port, got %s", spec);
		return NULL;
	}
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	char *h = host;
	if (h[0] == '[' && h[strlen(h) - 1] == ']') {
		h[strlen(h) - 1] = '\0';
		h++;
	}
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	int rc = getaddrinfo(strcmp(h, "*") == 0 ? NULL : h, colon + 1, &hints, &res);
	if (rc != 0) {
		sy_error_set(err, SY_ERR_INVALID_REQUEST, "listen %s: %s", spec, gai_strerror(rc));
		return NULL;
	}
	for (struct addrinfo *ai = res; ai != NULL && !allow_public; ai = ai->ai_next) {
		if (!loopback(ai->ai_addr)) {
			freeaddrinfo(res);
			sy_error_set(err, SY_ERR_INVALID_REQUEST,
			             "listen %s: not a loopback address. Anyone who reaches a FastCGI "
			             "port can act as any user: listen on a UNIX socket or 127.0.0.1, "
			             "or set [fcgi] listen_public = yes (behind a firewall that lets "
			             "only the web server in)",
			             spec);
			return NULL;
		}
	}
	return res;
}

/* host:port bound; a public address (allowed) with a warning in the log. */
static int listen_tcp(const char *spec, int backlog, bool allow_public, sy_error *err)
{
	struct addrinfo *res = resolve_tcp(spec, allow_public, err);
	if (res == NULL)
		return -1;
	bool public = false;
	int fd = -1;
	for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
		public = !loopback(ai->ai_addr);
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0)
			break;
		close(fd);
		fd = -1;
	}
	int saved = errno;
	freeaddrinfo(res);
	if (fd < 0)
		sy_error_set(err, SY_ERR_INVALID_REQUEST, "listen %s: %s", spec, strerror(saved));
	else if (public)
		sy_log(SY_LOG_WARNING,
		       "listening on %s (listen_public = yes): anyone who reaches this port can act "
		       "as any user; let only the web server reach it",
		       spec);
	return fd;
}

bool sy_prefork_listen_check(const char *spec, bool allow_public, sy_error *err)
{
	if (strncmp(spec, "unix:", 5) == 0)
		spec += 5;
	if (spec[0] == '\0' || spec[0] == '/')
		return true;
	struct addrinfo *res = resolve_tcp(spec, allow_public, err);
	if (res == NULL)
		return false;
	freeaddrinfo(res);
	return true;
}

int sy_prefork_listen(const char *spec, const char *owner, const char *group, unsigned mode,
                      int backlog, bool allow_public, sy_error *err)
{
	if (spec == NULL || *spec == '\0') {
		sy_error_set(err, SY_ERR_INVALID_REQUEST, "listen: not set");
		return -1;
	}
	if (strncmp(spec, "unix:", 5) == 0)
		spec += 5;
	if (spec[0] == '/')
		return listen_unix(spec, owner, group, mode, backlog, err);
	return listen_tcp(spec, backlog, allow_public, err);
}

/* --- the master ---------------------------------------------------------- */

typedef struct {
	pid_t pid;
	unsigned generation;
	double started; /* sy_clock_s() */
	bool draining;  /* sent SIGTERM (reload or stop) */
	double term_sent;
} slot;

static slot slots[SY_PREFORK_MAX_WORKERS];

static int spawn(int listen_fd, int i, unsigned generation, const sy_prefork_opts *opts,
                 const sy_prefork_hooks *hooks)
{
	pid_t pid = fork();
	if (pid < 0) {
		sy_log(SY_LOG_ERR, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		sy_prefork_worker_signals();
		if (hooks->child_init != NULL)
			hooks->child_init(hooks->ctx, i);
		_exit(hooks->worker(hooks->ctx, listen_fd, opts->max_requests));
	}
	slots[i].pid = pid;
	slots[i].generation = generation;
	slots[i].started = sy_clock_s();
	slots[i].draining = false;
	return 0;
}

static int live_count(void)
{
	int n = 0;
	for (int i = 0; i < SY_PREFORK_MAX_WORKERS; i++)
		n += slots[i].pid > 0;
	return n;
}

static void term_generation_except(unsigned keep)
{
	for (int i = 0; i < SY_PREFORK_MAX_WORKERS; i++) {
		if (slots[i].pid > 0 && slots[i].generation != keep && !slots[i].draining) {
			kill(slots[i].pid, SIGTERM);
			slots[i].draining = true;
			slots[i].term_sent = sy_clock_s();
		}
	}
}

int sy_prefork_run(int listen_fd, const sy_prefork_opts *initial, const sy_prefork_hooks *hooks)
{
	sy_prefork_opts opts = *initial;
	if (opts.workers < 1)
		opts.workers = 1;
	if (opts.workers > SY_PREFORK_MAX_WORKERS)
		opts.workers = SY_PREFORK_MAX_WORKERS;
	unsigned generation = 1;
	double backoff = 0, next_spawn_at = 0;

	set_handler(SIGTERM, on_master_signal);
	set_handler(SIGINT, on_master_signal);
	set_handler(SIGHUP, on_master_signal);
	set_handler(SIGCHLD, on_master_signal);
	set_handler(SIGPIPE, SIG_IGN);
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &old);

	sy_log(SY_LOG_INFO, "master %d: %d responders, max_requests %ld", (int)getpid(),
	       opts.workers, opts.max_requests);
	for (;;) {
		/* Reap. */
		int status;
		pid_t pid;
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			for (int i = 0; i < SY_PREFORK_MAX_WORKERS; i++) {
				if (slots[i].pid != pid)
					continue;
				bool expected = slots[i].draining ||
				                (WIFEXITED(status) && WEXITSTATUS(status) == 0);
				if (!expected) {
					if (WIFSIGNALED(status))
						sy_log(SY_LOG_ERR,
						       "responder %d killed by signal %d", (int)pid,
						       WTERMSIG(status));
					else
						sy_log(SY_LOG_ERR,
						       "responder %d exited with status %d",
						       (int)pid, WEXITSTATUS(status));
					/* Died right after start: back off before the next fork. */
					if (sy_clock_s() - slots[i].started < 2) {
						backoff = backoff == 0 ? 0.1 : backoff * 2;
						if (backoff > 10)
							backoff = 10;
						next_spawn_at = sy_clock_s() + backoff;
					} else {
						backoff = 0;
					}
				}
				if (hooks->reaped != NULL)
					hooks->reaped(hooks->ctx, i);
				slots[i].pid = 0;
				break;
			}
		}
		got_chld = 0;

		if (got_term) {
			sy_log(SY_LOG_INFO, "master: stopping; draining %d responders",
			       live_count());
			term_generation_except(0);
			close(listen_fd);
			double deadline =
			        sy_clock_s() + (opts.drain_timeout_s > 0 ? opts.drain_timeout_s : 30);
			while (live_count() > 0) {
				pid = waitpid(-1, &status, WNOHANG);
				if (pid > 0) {
					for (int i = 0; i < SY_PREFORK_MAX_WORKERS; i++) {
						if (slots[i].pid == pid) {
							if (hooks->reaped != NULL)
								hooks->reaped(hooks->ctx, i);
							slots[i].pid = 0;
						}
					}
					continue;
				}
				if (sy_clock_s() > deadline) {
					for (int i = 0; i < SY_PREFORK_MAX_WORKERS; i++)
						if (slots[i].pid > 0)
							kill(slots[i].pid, SIGKILL);
				}
				struct timespec ts = {0, 20 * 1000 * 1000};
				nanosleep(&ts, NULL);
			}
			sigprocmask(SIG_SETMASK, &old, NULL);
			sy_log(SY_LOG_INFO, "master: stopped");
			return 0;
		}

		if (got_hup) {
			got_hup = 0;
			sy_prefork_opts fresh = opts;
			if (hooks->reload != NULL && hooks->reload(hooks->ctx, &fresh)) {
				if (fresh.workers < 1)
					fresh.workers = 1;
				if (fresh.workers > SY_PREFORK_MAX_WORKERS)
					fresh.workers = SY_PREFORK_MAX_WORKERS;
				opts = fresh;
				generation++;
				sy_log(SY_LOG_INFO,
				       "master: reloaded; %d responders (generation %u)",
				       opts.workers, generation);
			} else {
				sy_log(SY_LOG_ERR,
				       "master: reload failed; keeping the running settings");
			}
		}

		/* Keep opts.workers responders of the current generation. */
		int current = 0;
		for (int i = 0; i < SY_PREFORK_MAX_WORKERS; i++)
			current += slots[i].pid > 0 && slots[i].generation == generation;
		if (current < opts.workers && sy_clock_s() >= next_spawn_at) {
			for (int i = 0; i < SY_PREFORK_MAX_WORKERS && current < opts.workers; i++) {
				if (slots[i].pid != 0)
					continue;
				if (spawn(listen_fd, i, generation, &opts, hooks) != 0)
					break;
				current++;
			}
		}
		/* New responders are up: the old generation drains. */
		term_generation_except(generation);
		/* Escalate on responders that do not finish draining. */
		for (int i = 0; i < SY_PREFORK_MAX_WORKERS; i++) {
			int limit = opts.drain_timeout_s > 0 ? opts.drain_timeout_s : 30;
			if (slots[i].pid > 0 && slots[i].draining &&
			    sy_clock_s() - slots[i].term_sent > limit)
				kill(slots[i].pid, SIGKILL);
		}

		/* Sleep until a signal arrives or the backoff elapses (signals stay blocked
		 * in the master and are taken here, so none is lost between checks). */
		if (!got_term && !got_hup && !got_chld) {
			struct timespec ts = {1, 0};
			double wait = next_spawn_at - sy_clock_s();
			if (current < opts.workers && wait > 0 && wait < 1) {
				ts.tv_sec = 0;
				ts.tv_nsec = (long)(wait * 1e9);
			}
			int sig = sigtimedwait(&block, NULL, &ts);
			if (sig > 0)
				on_master_signal(sig);
		}
	}
}
