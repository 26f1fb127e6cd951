/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync_notify.h: live notifications.
 *
 * Rules: doc/contract.md#live-notifications (what a notification says).
 * Notes: The leader writes a batch to the changelog. Then each user whose rows it touched
 * is told the position of their newest change ("changes up to cursor C", nothing else). It
 * is an HTTP POST to the web server's pub/sub module (nginx's nchan), on the channel named
 * after the user. Publishing never blocks materialization for long: each batch has a time
 * budget. It is never retried. A lost notification only delays a device until its poll.
 */
#ifndef SY_WALSYNC_NOTIFY_H
#define SY_WALSYNC_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "synchro/common.h"

typedef struct sy_ws_notify sy_ws_notify;

/* NULL when out of memory. */
sy_ws_notify *sy_ws_notify_new(void);
/* Accepts NULL. */
void sy_ws_notify_free(sy_ws_notify *n);
/* The publisher's base URL ("" turns publishing off): http://HOST:PORT/PATH/, the user's
 * channel id appended percent-encoded; timeout_ms: the budget of one batch's publishes.
 * false (logged) when the URL is not of that form or its host does not resolve. */
SY_MUST_CHECK bool sy_ws_notify_configure(sy_ws_notify *n, const char *url, int timeout_ms);
/* Whether publishing is on. */
bool sy_ws_notify_enabled(const sy_ws_notify *n);
/* A change of user's at (lsn, ordinal) was decoded; false when out of memory. */
SY_MUST_CHECK bool sy_ws_notify_note(sy_ws_notify *n, const char *user, uint64_t lsn,
                                     uint32_t ordinal);
/* What was noted was not written (the stream restarts): forgotten. */
void sy_ws_notify_forget(sy_ws_notify *n);
/* What was noted is in the changelog: one POST per user, within the budget; then forgotten. */
void sy_ws_notify_publish(sy_ws_notify *n);
/* Notifications published (2xx) and failed (refused, no answer, out of time) so far. */
long long sy_ws_notify_published(const sy_ws_notify *n);
long long sy_ws_notify_failed(const sy_ws_notify *n);

#endif
