/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * prefork.h: the synchro-fcgi master: listening sockets, preforked responders, and the
 * signals of master and responder.
 *
 * Notes: A responder that dies is replaced. SIGHUP starts a new generation. SIGTERM drains.
 */
#ifndef SY_FCGI_PREFORK_H
#define SY_FCGI_PREFORK_H

#include <stdbool.h>
#include <sys/types.h>

#include "synchro/common.h"

typedef struct {
	int workers;         /* responders to keep running */
	long max_requests;   /* recycle a responder after this many requests; 0 = never */
	int drain_timeout_s; /* SIGKILL responders still busy this long after SIGTERM */
} sy_prefork_opts;

/*
 * Opens the listening socket for spec: an absolute UNIX socket path (an
 * existing socket file is replaced) or host:port / [v6]:port. For a UNIX
 * socket, owner/group may be NULL and mode 0 (keep the umask default).
 * A host:port whose address is not loopback is refused unless allow_public
 * (then bound with a warning in the log). Returns the fd, or -1 with *err set.
 */
SY_MUST_CHECK int sy_prefork_listen(const char *spec, const char *owner, const char *group,
                                    unsigned mode, int backlog, bool allow_public,
                                    sy_error *err);

/*
 * Checks spec as sy_prefork_listen() would, without binding: a host:port that does not
 * resolve, or whose address is not loopback without allow_public, is false with *err set.
 * An empty spec or a UNIX socket path is true.
 */
SY_MUST_CHECK bool sy_prefork_listen_check(const char *spec, bool allow_public, sy_error *err);

/* Whether fd 0 is a listening socket handed over by spawn-fcgi or mod_fcgid. */
bool sy_prefork_fd0_is_listener(void);

/*
 * Runs one responder's accept loop on listen_fd until SIGTERM (after the
 * request in flight), max_requests, or a fatal error. Returns an exit status.
 */
typedef int (*sy_prefork_worker_fn)(void *ctx, int listen_fd, long max_requests);
/* Called in the master on SIGHUP; fills *opts anew. Returns false to keep the old settings. */
typedef bool (*sy_prefork_reload_fn)(void *ctx, sy_prefork_opts *opts);
/* Called in each new responder right after fork (e.g. to reset per-process state). */
typedef void (*sy_prefork_child_fn)(void *ctx, int slot);
/* Called in the master when a responder in `slot` ended (to clear its shared state). */
typedef void (*sy_prefork_reaped_fn)(void *ctx, int slot);

typedef struct {
	sy_prefork_worker_fn worker;
	sy_prefork_reload_fn reload;
	sy_prefork_child_fn child_init;
	sy_prefork_reaped_fn reaped;
	void *ctx;
} sy_prefork_hooks;

/* Upper bound of responder slots (shared-memory tables are sized by it). */
#define SY_PREFORK_MAX_WORKERS 256

/*
 * The master loop: forks opts->workers responders, replaces any that die
 * (backing off when they die right after start), recycles after
 * max_requests, reloads on SIGHUP (new responders first, then the old ones
 * drain), and on SIGTERM/SIGINT stops accepting, lets in-flight requests
 * finish and returns 0.
 */
int sy_prefork_run(int listen_fd, const sy_prefork_opts *opts, const sy_prefork_hooks *hooks);

/* Whether SIGTERM or SIGINT reached this responder (its handler sets a flag); the accept
 * loop stops after the request in flight. */
bool sy_prefork_stopping(void);
/* Installs the responder's signal handlers (SIGTERM drains, SIGHUP ignored, SIGPIPE ignored). */
void sy_prefork_worker_signals(void);

#endif
