/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * accept_loop.h: the accept loop of one responder (accept_loop.c).
 */
#ifndef SY_FCGI_ACCEPT_LOOP_H
#define SY_FCGI_ACCEPT_LOOP_H

#include "fcgi/responder.h"

/*
 * Serves requests from listen_fd until SIGTERM (after the request in flight),
 * max_requests (0: no limit), or a fatal accept error. Returns an exit status.
 */
int sy_accept_loop(sy_responder *r, int listen_fd, long max_requests);

#endif
