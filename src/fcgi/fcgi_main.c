/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fcgi_main.c: synchro-fcgi's program (synchro-fcgi(8)).
 *
 * Layer: top of src/fcgi (doc/hacking.md).
 * Notes: It reads the command line and synchro.conf, and reloads it on SIGHUP. It gets the
 * listening socket: bound from [fcgi] listen, passed by systemd, or inherited on fd 0 from
 * spawn-fcgi or mod_fcgid. It sets up the shared counters. Then it runs either the
 * preforked master (prefork.c) or one responder on the inherited socket.
 */
#include "config.h"

#ifdef HAVE_MALLOC_H
#include <malloc.h>
#endif

#include <errno.h>
#include <fcgiapp.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "fcgi/inflight.h"
#include "fcgi/metrics.h"
#include "fcgi/prefork.h"
#include "fcgi/accept_loop.h"
#include "fcgi/responder.h"
#include "store/cfg.h"

/* Responders still busy this long after SIGTERM or a reload are killed. */
#define DRAIN_TIMEOUT_S 60

typedef struct {
	const char *path; /* the configuration file; NULL: every option at its default */
	sy_cfg *cfg;      /* current; replaced on reload (responders keep their copy) */
	char *listen;     /* what the master bound; a reload cannot change it */
	sy_inflight *inflight;
	sy_metrics *metrics;
	int slot; /* in a responder: its slot */
} master_ctx;

static void usage(FILE *f)
{
	fputs("usage: synchro-fcgi [-c synchro.conf] [-f] [-t]\n"
	      "  -c FILE  configuration (without it every option has its default)\n"
	      "  -f       stay in the foreground (always the case; for service managers)\n"
	      "  -t       check the configuration and exit\n"
	      "Started with a FastCGI listening socket on fd 0 (spawn-fcgi, Apache mod_fcgid),\n"
	      "it runs as one responder on it; otherwise it binds [fcgi] listen and forks\n"
	      "[fcgi] workers responders. SIGHUP reloads, SIGTERM drains and stops.\n",
	      f);
}

static void open_log(const sy_cfg *cfg)
{
	sy_log_level level = SY_LOG_INFO;
	if (!sy_log_level_parse(sy_cfg_str(cfg, "log", "level"), &level))
		level = SY_LOG_INFO;
	sy_log_open("synchro-fcgi", sy_cfg_str(cfg, "log", "target"), level);
}

static void set_opts(const sy_cfg *cfg, sy_prefork_opts *opts)
{
	opts->workers = (int)sy_cfg_int(cfg, "fcgi", "workers");
	opts->max_requests = (long)sy_cfg_int(cfg, "fcgi", "max_requests");
	opts->drain_timeout_s = DRAIN_TIMEOUT_S;
}

static int worker(void *arg, int listen_fd, long max_requests)
{
	master_ctx *ctx = arg;
	sy_responder r;
	sy_responder_init(&r, ctx->cfg, ctx->inflight, ctx->metrics, ctx->slot);
	int status = sy_accept_loop(&r, listen_fd, max_requests);
	sy_responder_done(&r);
	return status;
}

static void child_init(void *arg, int slot)
{
	master_ctx *ctx = arg;
	ctx->slot = slot;
	sy_metrics_event(ctx->metrics, SY_METRIC_RESPONDERS_STARTED);
}

static void reaped(void *arg, int slot)
{
	master_ctx *ctx = arg;
	/* A responder killed during a push must not count as one in flight. */
	sy_inflight_leave(ctx->inflight, slot);
	sy_metrics_event(ctx->metrics, SY_METRIC_RESPONDERS_REAPED);
}

static bool reload(void *arg, sy_prefork_opts *opts)
{
	master_ctx *ctx = arg;
	sy_error err = {0};
	if (ctx->path == NULL) {
		sy_log(SY_LOG_INFO, "reload: no configuration file; nothing changes");
		return false;
	}
	sy_cfg *fresh = sy_cfg_load(ctx->path, &err);
	if (fresh == NULL) {
		sy_log(SY_LOG_ERR, "reload: %s", err.message);
		return false;
	}
	if (strcmp(sy_cfg_str(fresh, "fcgi", "listen"), ctx->listen) != 0 ||
	    strcmp(sy_cfg_str(fresh, "fcgi", "listen_owner"),
	           sy_cfg_str(ctx->cfg, "fcgi", "listen_owner")) != 0 ||
	    strcmp(sy_cfg_str(fresh, "fcgi", "listen_group"),
	           sy_cfg_str(ctx->cfg, "fcgi", "listen_group")) != 0 ||
	    sy_cfg_int(fresh, "fcgi", "listen_mode") != sy_cfg_int(ctx->cfg, "fcgi", "listen_mode"))
		sy_log(SY_LOG_WARNING,
		       "reload: the listen settings changed; they apply at the next "
		       "start (the socket stays as it is)");
	sy_cfg_free(ctx->cfg);
	ctx->cfg = fresh;
	open_log(fresh);
	set_opts(fresh, opts);
	return true;
}

/* The UNIX socket path of a listen spec, or NULL for host:port. */
static const char *socket_path(const char *spec)
{
	if (strncmp(spec, "unix:", 5) == 0)
		spec += 5;
	return spec[0] == '/' ? spec : NULL;
}

/*
 * systemd socket activation (sd_listen_fds(3)): one listening socket passed as fd 3.
 * Returns it, -1 when the process was not socket-activated, -2 when the passed sockets
 * cannot be used.
 */
static int activated_socket(void)
{
	const char *pid = getenv("LISTEN_PID");
	const char *fds = getenv("LISTEN_FDS");
	if (pid == NULL || fds == NULL || strtol(pid, NULL, 10) != (long)getpid())
		return -1;
	bool one = strcmp(fds, "1") == 0;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	int listening = 0;
	socklen_t len = sizeof listening;
	if (!one || getsockopt(3, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) {
		sy_log(SY_LOG_ERR,
		       "socket activation: expected exactly one listening socket, got %s", fds);
		return -2;
	}
	fcntl(3, F_SETFD, FD_CLOEXEC);
	return 3;
}

static const char *nonempty(const char *s)
{
	return s != NULL && *s != '\0' ? s : NULL;
}

/*
 * A responder builds and frees the same few large buffers on every request (the body,
 * libpq's results, the answer). glibc's defaults hand big blocks back to the kernel at
 * each free and fault them in again: in contrib/bench/push, while the push still ran in
 * the responders, that was ~9% of a responder's CPU in page faults. Keep them, up to a
 * bound.
 */
static void keep_heap(void)
{
#if defined(HAVE_MALLOPT) && defined(HAVE_MALLOC_H) && defined(M_MMAP_THRESHOLD)
	mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 16 * 1024 * 1024);
#endif
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	bool check_only = false;
	int opt;
	while ((opt = getopt(argc, argv, "c:fth")) != -1) {
		switch (opt) {
		case 'c': path = optarg; break;
		case 'f': break;
		case 't': check_only = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}

	keep_heap();
	sy_error err = {0};
	master_ctx ctx = {.path = path};
	if (path != NULL) {
		ctx.cfg = sy_cfg_load(path, &err);
		if (ctx.cfg == NULL) {
			fprintf(stderr, "synchro-fcgi: %s\n", err.message);
			return 2;
		}
	}
	bool allow_public = strcmp(sy_cfg_str(ctx.cfg, "fcgi", "listen_public"), "yes") == 0;
	if (check_only) {
		if (!sy_prefork_listen_check(sy_cfg_str(ctx.cfg, "fcgi", "listen"), allow_public,
		                             &err)) {
			fprintf(stderr, "synchro-fcgi: %s\n", err.message);
			sy_cfg_free(ctx.cfg);
			return 2;
		}
		printf("synchro-fcgi: %s: configuration ok\n", path != NULL ? path : "(defaults)");
		sy_cfg_free(ctx.cfg);
		return 0;
	}
	open_log(ctx.cfg);
	if (FCGX_Init() != 0) {
		sy_log(SY_LOG_ERR, "cannot initialise libfcgi");
		sy_cfg_free(ctx.cfg);
		return 1;
	}
	int status = 1;
	int listen_fd = -1;
	const char *sock = NULL; /* a UNIX socket this process bound (removed at the stop) */
	bool have_sock = false;
	struct stat bound;
	bool fd0 = sy_prefork_fd0_is_listener();
	ctx.metrics = sy_metrics_create();
	/* Only the gauge of pushes in flight: the caps (max_inflight, max_inflight_per_client)
	 * are held by synchro_push in the database, across every responder of every host. */
	ctx.inflight = sy_inflight_create(fd0 ? 1 : SY_PREFORK_MAX_WORKERS);
	if (ctx.metrics == NULL || ctx.inflight == NULL) {
		sy_log(SY_LOG_ERR, "cannot map shared memory: %s", strerror(errno));
		goto fail;
	}

	if (fd0) {
		/* spawn-fcgi or mod_fcgid own the socket and the process count: serve it alone,
		 * until SIGTERM (recycling is theirs too). */
		sy_log(SY_LOG_INFO, "responder %d on the inherited socket (fd 0)", (int)getpid());
		sy_prefork_worker_signals();
		sy_responder r;
		sy_responder_init(&r, ctx.cfg, ctx.inflight, ctx.metrics, 0);
		status = sy_accept_loop(&r, 0, 0);
		sy_responder_done(&r);
		goto fail;
	}

	const char *spec = sy_cfg_str(ctx.cfg, "fcgi", "listen");
	ctx.listen = strdup(spec);
	if (ctx.listen == NULL)
		goto fail;
	listen_fd = activated_socket();
	if (listen_fd == -2)
		goto fail;
	if (listen_fd >= 0) {
		/* systemd owns the socket (synchro-fcgi.socket); listen and its owner, group and
		 * mode are the socket unit's business. */
		sy_log(SY_LOG_INFO, "listening on the socket systemd passed (socket activation)");
		goto serve;
	}
	if (*spec == '\0') {
		sy_log(SY_LOG_ERR, "%s: [fcgi] listen is empty and fd 0 is not a listening socket",
		       path != NULL ? path : "(no configuration file)");
		status = 2;
		goto fail;
	}
	listen_fd =
	        sy_prefork_listen(spec, nonempty(sy_cfg_str(ctx.cfg, "fcgi", "listen_owner")),
	                          nonempty(sy_cfg_str(ctx.cfg, "fcgi", "listen_group")),
	                          (unsigned)sy_cfg_int(ctx.cfg, "fcgi", "listen_mode"), 1024,
	                          allow_public, &err);
	if (listen_fd < 0) {
		sy_log(SY_LOG_ERR, "%s", err.message);
		goto fail;
	}
	sock = socket_path(ctx.listen);
	have_sock = sock != NULL && lstat(sock, &bound) == 0;
serve:;
	sy_prefork_opts opts;
	set_opts(ctx.cfg, &opts);
	sy_prefork_hooks hooks = {.worker = worker,
	                          .reload = reload,
	                          .child_init = child_init,
	                          .reaped = reaped,
	                          .ctx = &ctx};
	status = sy_prefork_run(listen_fd, &opts, &hooks);
	/* Leave no stale socket behind, unless another instance has replaced it meanwhile. */
	struct stat now;
	if (have_sock && lstat(sock, &now) == 0 && now.st_ino == bound.st_ino &&
	    now.st_dev == bound.st_dev)
		unlink(sock);
fail:
	free(ctx.listen);
	sy_inflight_destroy(ctx.inflight);
	sy_metrics_destroy(ctx.metrics);
	sy_cfg_free(ctx.cfg);
	return status;
}
