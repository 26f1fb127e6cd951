/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync_continuity.c: slot continuity. Is the slot walsync is about to stream still the
 * stream the changelog was materialized from?
 *
 * Layer: middle of src/walsync (doc/hacking.md).
 * Rules: doc/operations.md#slot-continuity (what a break is).
 * Notes: synchro.stream_position decides. synchro.stream_break resolves a break.
 */
#include "config.h"

#include <stdio.h>

#include "common/log.h"
#include "store/stream_continuity.h"
#include "walsync/walsync_continuity.h"

static sy_ws_continuity failed(sy_store_status st)
{
	return st == SY_STORE_CONFLICT ? SY_WS_FENCED : SY_WS_FAILED;
}

sy_ws_continuity sy_ws_continuity_check(PGconn *db, const sy_store_lease *lease, const char *slot,
                                        bool created, uint64_t slot_lsn, uint64_t *durable,
                                        sy_store_status *st, sy_error *err)
{
	sy_store_stream_position pos;
	char a[SY_STORE_LSN_MAX + 1], b[SY_STORE_LSN_MAX + 1];
	char reason[256];
	*durable = 0;
	if ((*st = sy_store_stream_position_get(db, &pos, err)) != SY_STORE_OK)
		return failed(*st);
	sy_store_lsn_format(slot_lsn, a);
	sy_store_lsn_format(pos.lsn, b);
	if (!created && pos.known && slot_lsn <= pos.lsn) {
		*durable = pos.lsn;
		return SY_WS_CONTINUOUS;
	}
	bool history = true;
	if (created || !pos.known) {
		if ((*st = sy_store_stream_has_history(db, &history, err)) != SY_STORE_OK)
			return failed(*st);
	}
	/* A new database, or one migrated from before the position was kept: nothing to
	 * compare, so the slot as found (or just created) is where the record starts. */
	if (!history || (!created && !pos.known)) {
		if ((*st = sy_store_stream_position_record(db, lease, slot, slot_lsn, err)) !=
		    SY_STORE_OK)
			return failed(*st);
		if (!pos.known)
			sy_log(SY_LOG_INFO, "recording the stream position of slot %s from %s",
			       slot, a);
		*durable = slot_lsn;
		return SY_WS_CONTINUOUS;
	}
	if (created)
		snprintf(reason, sizeof reason,
		         "replication slot %s was missing and is new at %s; the changelog was "
		         "materialized up to %s",
		         slot, a, pos.known ? b : "an unrecorded position");
	else
		snprintf(reason, sizeof reason,
		         "replication slot %s starts at %s, past %s where the changelog was "
		         "materialized up to: it was created again, advanced or restored",
		         slot, a, b);
	sy_store_break_result br;
	*st = sy_store_stream_break(db, lease, slot, reason, slot_lsn, &br, err);
	if (*st == SY_STORE_INVALID) {
		sy_log(SY_LOG_ERR,
		       "STREAM BREAK NOT RESOLVED: %s; %s. Not streaming: the slot's positions do "
		       "not follow the changelog's (doc/operations.md, Slot continuity)",
		       reason, err->message);
		return SY_WS_REFUSED;
	}
	if (*st != SY_STORE_OK)
		return failed(*st);
	sy_store_lsn_format(br.horizon_lsn, b);
	sy_log(SY_LOG_ERR,
	       "STREAM BREAK: %s. Transactions committed in between never reached the changelog: "
	       "every cursor before %s.%d expired (its client rebuilds) and the accepted writes "
	       "of %lld clients count as materialized; synchroctl lease status shows the break",
	       reason, b, br.horizon_ordinal, br.clients);
	*durable = slot_lsn;
	return SY_WS_RESOLVED;
}
