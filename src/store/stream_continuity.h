/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stream_continuity.h: slot continuity (migration 14), for synchro-walsync and synchroctl
 * only.
 *
 * Rules: doc/operations.md#slot-continuity (what a break is and how it is resolved).
 * Notes: It gives the stream position walsync materialized up to, and whether a database
 * has stream history. It resolves a break: a slot that no longer covers that position.
 */
#ifndef SY_STORE_STREAM_CONTINUITY_H
#define SY_STORE_STREAM_CONTINUITY_H

#include <stdint.h>

#include "store/lease.h"
#include "store/store.h"

/* The durable position of synchro.stream_position. */
typedef struct {
	bool known;   /* materialized_lsn is set (a walsync of migration 14 recorded one) */
	uint64_t lsn; /* every commit at or below it is materialized; 0 when unknown */
	char slot[64];
} sy_store_stream_position;

SY_MUST_CHECK sy_store_status sy_store_stream_position_get(PGconn *c, sy_store_stream_position *out,
                                                           sy_error *err);

/*
 * Raises the durable position to lsn (never lowers it), guarded by the lease in the same
 * statement: walsync calls it before it confirms to the slot a position it reached without a
 * changelog write (keepalives, transactions without changes). SY_STORE_CONFLICT when the
 * lease is no longer the caller's.
 */
SY_MUST_CHECK sy_store_status sy_store_stream_position_record(PGconn *c, const sy_store_lease *l,
                                                              const char *slot, uint64_t lsn,
                                                              sy_error *err);

/*
 * Whether a slot that is missing now can have lost anything: the changelog has entries or was
 * compacted, or some client exists while some row fence does (a client may hold a cursor from
 * a rebuild, and a fence is a write the stream should have carried).
 */
SY_MUST_CHECK sy_store_status sy_store_stream_has_history(PGconn *c, bool *out, sy_error *err);

/* What synchro.stream_break did. */
typedef struct {
	uint64_t horizon_lsn; /* every cursor below (horizon_lsn, horizon_ordinal) expired */
	int horizon_ordinal;
	long long clients; /* clients whose accepted epoch was marked materialized */
} sy_store_break_result;

/*
 * Resolves a break (synchro.stream_break, one transaction under the lease): expires every
 * cursor and rebuild session of the old stream, marks every accepted write materialized,
 * makes slot_lsn the durable position, records the break with reason (one line, no row
 * value) and seeds the scope mirror again from the live membership and hop relations (what
 * the gap changed there never reached walsync). SY_STORE_CONFLICT when the lease is not the caller's; SY_STORE_INVALID when the
 * slot starts at or before the changelog's end (SQLSTATE SY021: nothing was changed).
 */
SY_MUST_CHECK sy_store_status sy_store_stream_break(PGconn *c, const sy_store_lease *l,
                                                    const char *slot, const char *reason,
                                                    uint64_t slot_lsn, sy_store_break_result *out,
                                                    sy_error *err);

/* Migration 15: whether version-fence messages are checked against the fence transitions
 * of their transaction, and from which commit position on (*verify false: not at all). */
SY_MUST_CHECK sy_store_status sy_store_messages_verified_from(PGconn *c, bool *verify,
                                                              uint64_t *from, sy_error *err);

/* Migration 23: whether membership and link messages are refused, and for transactions
 * committed after which position (*verify false: none is). */
SY_MUST_CHECK sy_store_status sy_store_scope_messages_verified_from(PGconn *c, bool *verify,
                                                                    uint64_t *from, sy_error *err);

/* The last recorded break, for synchroctl lease status. */
typedef struct {
	bool found;
	char detected_at[SY_STORE_TIME_LEN + 1];
	char reason[256];
	char slot_lsn[SY_STORE_LSN_MAX + 1];
	char horizon[SY_STORE_LSN_MAX + 16];
	long long clients;
	long long count; /* breaks recorded in all */
} sy_store_last_break;

/* out->found false also when the database predates migration 14. */
SY_MUST_CHECK sy_store_status sy_store_last_break_get(PGconn *c, sy_store_last_break *out,
                                                      sy_error *err);

#endif
