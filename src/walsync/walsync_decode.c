/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync_decode.c: the frames and messages of synchro-walsync's stream.
 *
 * Layer: middle of src/walsync (doc/hacking.md).
 * Rules: doc/operations.md#forged-messages (which messages and rows are Synchro's).
 * Notes: It reads transaction boundaries. It puts version-fence and accepted-epoch messages
 * into the batch. It hands membership and link changes to the scope mirror: rows of
 * synchro.scope_changes, or messages before migration 23 (refused after it). It checks
 * every version-fence message against the fence transitions of its own transaction.
 */
#include "config.h"

#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "synchro/alloc.h"
#include "walsync/pgoutput.h"
#include "walsync/walsync.h"

static void bad_message(walsync *w, const sy_error *err)
{
	/* Never the payload: it may hold row identities. Forged or damaged, it is skipped. */
	if (w->stats.bad_messages++ < 10 || w->stats.bad_messages % 1000 == 0)
		sy_log(SY_LOG_WARNING, "skipped a malformed logical message (%lld so far): %s",
		       w->stats.bad_messages, err->message);
}

static void forged(walsync *w, const char *what)
{
	if (w->stats.forged_messages++ < 10 || w->stats.forged_messages % 1000 == 0)
		sy_log(SY_LOG_WARNING,
		       "refused a %s message that no %s of its transaction (xid %u) vouches for "
		       "(%lld so far): forged or damaged",
		       what,
		       strcmp(what, "version-fence") == 0 ? "fence transition"
		                                          : "scope_changes row",
		       w->txn_xid, w->stats.forged_messages);
}

/* A membership or link change at ordinal into the mirror and the batch. */
static bool scope_change(walsync *w, sy_ws_synchro_kind kind, const sy_ws_scope_msg *s, int ordinal)
{
	if (!sy_ws_mirror_scope(w, kind, s, ordinal))
		return false;
	if (sy_store_changes_scope_count(w->batch) >= w->piece_rows)
		return w->write_piece(w);
	return true;
}

/* The arena holds at least need bytes; false (logged) when memory runs out. */
static bool arena_fit(walsync *w, size_t need)
{
	if (need <= w->arena_size)
		return true;
	char *a = sy_realloc(w->arena, need);
	if (!a) {
		sy_log(SY_LOG_ERR, "out of memory");
		return false;
	}
	w->arena = a;
	w->arena_size = need;
	return true;
}

static bool on_message(walsync *w, const sy_ws_msg *m)
{
	bool change = strcmp(m->prefix, SY_WS_PREFIX_CHANGE) == 0;
	bool epoch = strcmp(m->prefix, SY_WS_PREFIX_EPOCH) == 0;
	if (!change && !epoch)
		return true;
	if (!m->transactional || !w->in_txn) {
		sy_error err = {0};
		sy_error_set(&err, SY_ERR_INVALID_REQUEST, "non-transactional %s message",
		             m->prefix);
		bad_message(w, &err);
		return true;
	}
	int ordinal = change ? w->txn_ordinal++ : 0;
	if (w->txn_skip || (change && ordinal <= w->txn_skip_ord))
		return true;
	sy_error err = {0};
	if (epoch) {
		char client[37];
		long long e;
		if (!sy_ws_epoch_parse(m->content, m->content_len, client, &e, &err)) {
			bad_message(w, &err);
			return true;
		}
		if (!sy_store_changes_add_epoch(w->batch, client, e, w->txn_xid)) {
			sy_log(SY_LOG_ERR, "out of memory");
			return false;
		}
		return true;
	}
	if (!arena_fit(w, m->content_len + 16))
		return false;
	sy_ws_change c;
	sy_ws_scope_msg scope;
	sy_ws_synchro_kind kind;
	if (!sy_ws_synchro_parse(m->content, m->content_len, w->arena, w->arena_size, &kind, &c,
	                         &scope, &err)) {
		bad_message(w, &err);
		return true;
	}
	if (kind != SY_WS_SYNCHRO_CHANGE) {
		/* Migration 23: the scope trigger writes rows of synchro.scope_changes instead. */
		if (w->scope_verify && w->txn_lsn > w->scope_verified_from) {
			forged(w, "membership or link");
			return true;
		}
		return scope_change(w, kind, &scope, ordinal);
	}
	/* Migration 15: any role may emit a message; only the fence transition of the same
	 * transaction proves the version-fence trigger wrote it. */
	if (w->verify && w->txn_lsn > w->verified_from && !sy_ws_fences_take(w->fences, &c)) {
		forged(w, "version-fence");
		return true;
	}
	const char *rb, *ra;
	if (!sy_ws_mirror_readers(w, &c, ordinal, &rb, &ra))
		return false;
	sy_store_change row = {
	        .commit_lsn = w->txn_lsn,
	        .ordinal = ordinal,
	        .xid = w->txn_xid,
	        .commit_time = w->txn_time,
	        .table_id = c.table_id,
	        .pk = c.pk,
	        .version = c.version,
	        .deleted = c.deleted,
	        .mutation_id = c.mutation_id,
	        .client_id = c.client_id,
	        .user_id = c.user_id,
	        .owner_before = c.owner_before,
	        .owner_after = c.owner_after,
	        .readers_before = rb,
	        .readers_after = ra,
	};
	if (!sy_store_changes_add(w->batch, &row) ||
	    !sy_ws_notify_note(w->notify, c.owner_before, w->txn_lsn, (uint32_t)ordinal) ||
	    !sy_ws_notify_note(w->notify, c.owner_after, w->txn_lsn, (uint32_t)ordinal)) {
		sy_log(SY_LOG_ERR, "out of memory");
		return false;
	}
	/* Memory stays bounded whatever the transaction's size. */
	if (sy_store_changes_count(w->batch) >= w->piece_rows)
		return w->write_piece(w);
	return true;
}

/* synchro.row_fences is the one table of the publication (migration 15): its oid and the
 * columns a transition needs. */
static void on_relation(walsync *w, const sy_ws_msg *m)
{
	sy_error err = {0};
	sy_ws_relation rel;
	if (!sy_ws_relation_parse(m->raw, m->raw_len, &rel, &err)) {
		bad_message(w, &err);
		return;
	}
	sy_ws_fence_cols cols;
	if (sy_ws_fence_relation(&rel, &cols)) {
		w->fences_oid = rel.oid;
		w->fence_cols = cols;
		w->fences_known = true;
	}
	sy_ws_scope_cols scols;
	if (sy_ws_scope_relation(&rel, &scols)) {
		w->scope_rows_oid = rel.oid;
		w->scope_cols = scols;
		w->scope_rows_known = true;
	}
}

/* A row of synchro.scope_changes (migration 23): a membership or link change, numbered as
 * the message it replaces was. */
static bool on_scope_row(walsync *w, const sy_ws_msg *m, const sy_ws_row *row)
{
	int ordinal = w->txn_ordinal++;
	if (ordinal <= w->txn_skip_ord)
		return true;
	if (!arena_fit(w, m->raw_len + 8))
		return false;
	sy_ws_synchro_kind kind;
	sy_ws_scope_msg s;
	if (!sy_ws_scope_from_row(row, &w->scope_cols, w->arena, w->arena_size, &kind, &s)) {
		sy_error err = {0};
		sy_error_set(&err, SY_ERR_INVALID_REQUEST,
		             "a scope_changes row without its columns");
		bad_message(w, &err);
		return true;
	}
	return scope_change(w, kind, &s, ordinal);
}

/* A fence transition of the transaction: remembered until its message comes. */
static bool on_row(walsync *w, const sy_ws_msg *m)
{
	if (!w->in_txn || w->txn_skip || (!w->verify && !w->scope_rows_known))
		return true;
	sy_error err = {0};
	sy_ws_row row;
	if (!sy_ws_row_parse(m->raw, m->raw_len, &row, &err)) {
		bad_message(w, &err);
		return true;
	}
	if (w->scope_rows_known && row.oid == w->scope_rows_oid)
		return on_scope_row(w, m, &row);
	if (!w->verify || !w->fences_known || row.oid != w->fences_oid)
		return true;
	size_t need = m->raw_len + 8;
	if (need > w->arena_size) {
		char *a = sy_realloc(w->arena, need);
		if (!a) {
			sy_log(SY_LOG_ERR, "out of memory");
			return false;
		}
		w->arena = a;
		w->arena_size = need;
	}
	sy_ws_fence t;
	if (!sy_ws_fence_from_row(&row, &w->fence_cols, w->arena, w->arena_size, &t)) {
		sy_error_set(&err, SY_ERR_INVALID_REQUEST, "a row_fences row without its columns");
		bad_message(w, &err);
		return true;
	}
	if (!sy_ws_fences_add(w->fences, &t)) {
		sy_log(SY_LOG_ERR, "out of memory");
		return false;
	}
	return true;
}

/* One frame of the stream; false when the stream must restart. */
bool sy_ws_on_frame(walsync *w, const unsigned char *p, size_t n, bool *reply)
{
	sy_error err = {0};
	sy_ws_frame f;
	if (!sy_ws_frame_parse(p, n, &f, &err)) {
		sy_log(SY_LOG_ERR, "%s", err.message);
		return false;
	}
	if (f.send_time > 0) {
		w->server_time = f.send_time;
		w->server_time_at_ms = sy_clock_ms();
	}
	if (f.kind == SY_WS_FRAME_KEEPALIVE) {
		if (!w->in_txn && f.wal_end > w->idle_lsn)
			w->idle_lsn = f.wal_end;
		if (f.reply_requested)
			*reply = true;
		return true;
	}
	sy_ws_msg m;
	if (!sy_ws_msg_parse(f.data, f.len, &m, &err)) {
		sy_log(SY_LOG_ERR, "%s", err.message);
		return false;
	}
	switch (m.kind) {
	case SY_WS_BEGIN:
		if (w->in_txn) {
			sy_log(SY_LOG_ERR, "pgoutput: BEGIN inside a transaction");
			return false;
		}
		w->in_txn = true;
		w->txn_lsn = m.final_lsn;
		w->txn_xid = m.xid;
		w->txn_time = m.commit_time;
		w->txn_ordinal = 0;
		sy_ws_fences_clear(w->fences);
		/* Delivered again after a restart: its rows were committed with its batch. */
		/* The last one written may have been written in pieces: its changes after the
		 * last piece are still to write (the others add nothing, ON CONFLICT). */
		w->txn_skip = m.final_lsn < w->skip_upto;
		w->txn_skip_ord = m.final_lsn == w->skip_upto ? w->skip_ord : -1;
		return true;
	case SY_WS_MESSAGE: return on_message(w, &m);
	case SY_WS_RELATION: on_relation(w, &m); return true;
	case SY_WS_ROW: return on_row(w, &m);
	case SY_WS_COMMIT:
		if (!w->in_txn || m.commit_lsn != w->txn_lsn) {
			sy_log(SY_LOG_ERR, "pgoutput: COMMIT without its BEGIN");
			return false;
		}
		w->in_txn = false;
		w->batch_txns++;
		w->batch_end = m.end_lsn;
		if (!w->txn_skip && m.commit_time > w->batch_newest_time)
			w->batch_newest_time = m.commit_time;
		return true;
	case SY_WS_OTHER: break;
	}
	return true;
}
