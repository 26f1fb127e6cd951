/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync_continuity.h: slot continuity for synchro-walsync.
 *
 * Rules: doc/operations.md#slot-continuity (what a break is).
 * Notes: Before streaming, it checks whether the slot still covers the position the
 * changelog was materialized up to. When it does not, it resolves the break.
 */
#ifndef SY_WALSYNC_CONTINUITY_H
#define SY_WALSYNC_CONTINUITY_H

#include <libpq-fe.h>
#include <stdint.h>

#include "store/lease.h"
#include "store/store.h"

typedef enum {
	SY_WS_CONTINUOUS, /* the slot covers the durable position: stream */
	SY_WS_RESOLVED,   /* a break was found and resolved (logged as an error): stream */
	SY_WS_REFUSED,    /* a break that cannot be resolved here (logged): do not stream */
	SY_WS_FENCED,     /* the lease is no longer the caller's */
	SY_WS_FAILED      /* a store failure, in *st and *err */
} sy_ws_continuity;

/*
 * Compares the slot (its confirmed position, and whether walsync just created it) with
 * synchro.stream_position. A slot created because it was missing, while the database has
 * stream history, or a slot whose confirmed position is past the durable one, is a break:
 * resolved through synchro.stream_break (every cursor older than the new slot expires,
 * every accepted write counts as materialized). A database without a recorded position (one
 * migrated from before migration 14) adopts the slot's position. *durable receives the
 * durable position to stream from.
 */
SY_MUST_CHECK sy_ws_continuity sy_ws_continuity_check(PGconn *db, const sy_store_lease *lease,
                                                      const char *slot, bool created,
                                                      uint64_t slot_lsn, uint64_t *durable,
                                                      sy_store_status *st, sy_error *err);

#endif
