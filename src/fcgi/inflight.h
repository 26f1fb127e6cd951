/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * inflight.h: pushes in flight on this host, for /metrics (synchro_push_inflight).
 *
 * Notes: The master creates the shared memory before it forks. It holds one flag per
 * responder, since each serves one request at a time. The master clears a responder's flag
 * when it reaps it. This is only a gauge. The admission caps (max_inflight,
 * max_inflight_per_client) are slots that synchro.synchro_push holds in the database,
 * across every responder of every host.
 */
#ifndef SY_FCGI_INFLIGHT_H
#define SY_FCGI_INFLIGHT_H

typedef struct sy_inflight sy_inflight;

/* Maps the table for `slots` responders; NULL when the mapping fails. Inherited by fork(). */
sy_inflight *sy_inflight_create(int slots);
/* Accepts NULL. */
void sy_inflight_destroy(sy_inflight *f);
/* Responder `slot` has a push in flight / no longer (accept NULL and slots out of range). */
void sy_inflight_enter(sy_inflight *f, int slot);
void sy_inflight_leave(sy_inflight *f, int slot);
/* Pushes in flight now, over every slot; 0 for NULL. */
int sy_inflight_count(sy_inflight *f);

#endif
