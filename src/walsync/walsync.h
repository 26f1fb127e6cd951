/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync.h: the state of one synchro-walsync process, and the functions its files share.
 *
 * Notes: The files, top to bottom:
 *
 *   walsync_main.c         options, signals, the loop
 *   walsync_lease.c        the single-writer lease
 *   walsync_materialize.c  the stream into changelog transactions
 *   walsync_decode.c       the frames and messages of the stream
 *   walsync_stats.c        the lag log
 *   walsync_session.c      the stop flag, and what a failure does to the connections
 *                          (every file above calls it)
 *   walsync_mirror.c       membership scopes: the mirror, readers, scope changes
 *   walsync_metrics.c      the metrics file
 *   walsync_notify.c       live notifications
 */
#ifndef SY_WALSYNC_WALSYNC_H
#define SY_WALSYNC_WALSYNC_H

#include <libpq-fe.h>
#include <stdint.h>

#include "store/cfg.h"
#include "store/changelog.h"
#include "store/lease.h"
#include "walsync/walsync_fences.h"
#include "walsync/walsync_metrics.h"
#include "walsync/pgoutput.h"
#include "walsync/walsync_notify.h"
#include "walsync/walsync_scopes.h"
#include "walsync/walsync_stats.h"

/* A members-scoped table of the published manifest: its scope and link (NULL with one hop),
 * as the scope trigger's messages name them, and its quoted names for the statements that
 * read the rows of a scope key. */
typedef struct {
	char *table_id;
	char *scope;
	char *link;
	char *relation;       /* quoted */
	char *pk;             /* quoted */
	char *hop;            /* hop 1's column, quoted */
	const char *hop_type; /* its PostgreSQL type */
	char *owner;          /* the owner column, quoted; NULL when none */
} sy_ws_mtable;

typedef struct walsync {
	/* settings */
	const char *conf_path;
	sy_cfg *cfg;
	const char *conninfo; /* the first configuration's, or conninfo_owned after a reload */
	char *conninfo_owned; /* [database] conninfo as a SIGHUP reloaded it */
	const char *slot;
	char writer_id[SY_STORE_WRITER_ID_MAX + 1];
	int lease_s, renew_s, stale_s, lag_log_s;
	size_t batch_rows;
	/* test switches (environment, see synchro-walsync(8)) */
	long exit_after_commits;
	long stop_before_write;

	PGconn *db;   /* SQL: lease, changelog */
	PGconn *repl; /* the replication stream; only while leader */

	/* the lease (walsync_lease.c); times are sy_clock_ms() */
	bool leader;
	sy_store_lease lease;
	int64_t next_renew_ms;
	int64_t backoff_ms;
	int64_t retry_at_ms;
	int64_t stream_up_ms; /* when the stream last started, if no failure came since (else 0) */
	PGconn *hb;           /* the heartbeat's own connection: renews while db writes */
	bool hb_lost;         /* a heartbeat during a write found the lease lost */

	/* stream state */
	uint64_t skip_upto; /* transactions committed below it are in the changelog ... */
	int skip_ord;       /* ... and the one at it up to this ordinal (-1: none of it) */
	int txn_skip_ord;   /* the current transaction's changes up to here are written */
	size_t piece_rows;  /* a transaction's changes are written in pieces of this many */
	bool in_txn;
	uint64_t txn_lsn;
	uint32_t txn_xid;
	int64_t txn_time;
	int txn_ordinal;
	bool txn_skip;
	sy_store_changes *batch;
	size_t batch_txns;
	uint64_t batch_end;
	int64_t batch_newest_time;
	uint64_t idle_lsn; /* a keepalive's position outside any transaction */
	/* The primary's clock as the stream last told it (a frame's send time, microseconds
	 * since 2000-01-01) and sy_clock_ms() when that frame arrived; 0: none yet. Commit
	 * times are the primary's clock too: the lag is measured on one clock, whatever this
	 * host's clock says (walsync_stats.c). */
	int64_t server_time;
	int64_t server_time_at_ms;
	uint64_t confirmed; /* the position the slot was told is flushed */
	uint64_t durable;   /* synchro.stream_position: never below confirmed */
	bool continuity;    /* the database has migration 14 (stream_position) */
	int64_t next_status_ms;
	char *arena; /* strings of one decoded message */
	size_t arena_size;
	/* Set by walsync_materialize.c when it starts the stream: walsync_decode.c calls it when
	 * the transaction's changes fill a piece (piece_rows); false when the stream must
	 * restart. */
	bool (*write_piece)(struct walsync *w);

	sy_ws_stats stats;
	/* the metrics file (walsync_metrics.c); "" none */
	char metrics_file[1024];
	int metrics_interval_s;
	sy_ws_metrics metrics;
	/* live notifications (walsync_notify.c): the users the batch touched */
	sy_ws_notify *notify;

	/* forged messages (migration 15) */
	bool verify;            /* the publication streams synchro.row_fences */
	uint64_t verified_from; /* transactions committed after it are checked */
	sy_ws_fences *fences;   /* the transitions of the transaction being decoded */
	bool fences_known;      /* the RELATION of synchro.row_fences was seen */
	uint32_t fences_oid;
	sy_ws_fence_cols fence_cols;
	/* membership and link changes as rows of synchro.scope_changes (migration 23) */
	bool scope_verify;            /* membership and link messages are checked */
	uint64_t scope_verified_from; /* those of transactions committed after it are refused */
	bool scope_rows_known;        /* the RELATION of synchro.scope_changes was seen */
	uint32_t scope_rows_oid;
	sy_ws_scope_cols scope_cols;

	/* membership scopes (walsync_mirror.c; migration 22) */
	bool scopes_db;       /* the database has migration 22 */
	sy_ws_scopes *scopes; /* the mirror and the members-scoped tables */
	sy_ws_mtable *mtables;
	size_t nmtables;
	long long manifest_version;  /* the manifest they come from (0: none) */
	int64_t manifest_checked_ms; /* when it was last read */
	sy_buf readers_before;       /* the readers of the change being decoded */
	sy_buf readers_after;
	bool mirror_failed;
	/* Users who lost a scope key (or a hop value) at a scope change, whose entries read the
	 * live table when written (walsync_mirror.c "goings") */
	struct sy_ws_going *goings;
	size_t ngoings, goings_cap;
} walsync;

/* walsync_session.c: the handler of SIGTERM and SIGINT; whether one asked to stop; a
 * sleep of up to ms that a signal ends early. */
void sy_ws_on_stop(int sig);
bool sy_ws_stopping(void);
void sy_ws_nap(int64_t ms);
/* Forgets what was decoded of the stream but not written (a new stream starts over). */
void sy_ws_stream_reset(walsync *w);
/* Ends the replication connection and forgets what was decoded but not written. */
void sy_ws_stream_close(walsync *w);
/* Closes the SQL and heartbeat connections. */
void sy_ws_db_close(walsync *w);
/* After a failure: the next attempt waits, longer each time. */
void sy_ws_backoff(walsync *w);
/* A failed store call: logged; a lost connection is closed (and the stream with it). */
void sy_ws_store_failed(walsync *w, sy_store_status st, const sy_error *err);
/* The lease is no longer this instance's: back to standby, the stream closed. */
void sy_ws_demote(walsync *w, const char *why);

/* walsync_lease.c */
/* Opens the SQL connection and reads what the database supports; false (logged, backoff
 * set) when it cannot. */
SY_MUST_CHECK bool sy_ws_db_open(walsync *w);
/* A standby's attempt to take the lease. */
void sy_ws_lease_claim(walsync *w);
/* The leader's heartbeat (demotes when it finds the lease taken over or expired). */
void sy_ws_lease_renew(walsync *w);
/* The heartbeat between two statements of a changelog write (arg: the walsync). */
void sy_ws_lease_tick(void *arg);
/* On stop: ends a held lease at once so a standby takes over without waiting. */
void sy_ws_lease_release(walsync *w);

/* walsync_materialize.c */
/* Leader without a stream: checks (or creates) the slot and starts streaming from it. */
void sy_ws_stream_start(walsync *w);
/* Reads what the stream has, writes complete transactions, confirms. */
void sy_ws_stream_step(walsync *w);
/* Writes the complete transactions of the batch and confirms them (also on stop). */
void sy_ws_flush_batch(walsync *w);

/* walsync_decode.c: one frame of the stream (XLogData or keepalive): decodes it into w's
 * transaction and batch, writing a transaction too large to hold in pieces through
 * w->write_piece; *reply when the server asked for a status update. false when the stream
 * must restart (malformed framing, out of memory, a piece not written). */
SY_MUST_CHECK bool sy_ws_on_frame(walsync *w, const unsigned char *p, size_t n, bool *reply);

/* walsync_mirror.c */
/* At stream start, under the lease: the members-scoped tables of the latest manifest and the
 * whole mirror, read again (what was decoded and not written is gone with the old stream).
 * false when it cannot (the failure handled). */
SY_MUST_CHECK bool sy_ws_mirror_start(walsync *w);
/* The readers of a change before and after (text[] literals valid until the next call; NULL
 * when its table is not members-scoped), their users noted for notifications. false when the
 * stream must restart. */
SY_MUST_CHECK bool sy_ws_mirror_readers(walsync *w, const sy_ws_change *c, int ordinal,
                                        const char **before, const char **after);
/* A membership or link message at ordinal: the mirror changed, the scope change's entries
 * added to the batch, the users noted. false when the stream must restart. */
SY_MUST_CHECK bool sy_ws_mirror_scope(walsync *w, sy_ws_synchro_kind kind, const sy_ws_scope_msg *m,
                                      int ordinal);
/* The mirror's rows changed since the last write into the batch, before it is written. false
 * when out of memory (logged). */
SY_MUST_CHECK bool sy_ws_mirror_to_batch(walsync *w);
/* After a changelog write: the scope changes it wrote read the live tables no later than
 * WAL position horizon. */
void sy_ws_mirror_written(walsync *w, uint64_t horizon);
/* Whether scope changes wait for sy_ws_mirror_written(). */
bool sy_ws_mirror_pending(const walsync *w);
void sy_ws_mirror_free(walsync *w);

/* walsync_stats.c: the periodic lag log (a failed query is handled as a store failure). */
void sy_ws_log_lag(walsync *w);
/* walsync_stats.c: the primary's clock now (microseconds since 2000-01-01): the last frame's
 * send time plus this host's monotonic time since it arrived, so that a step or skew of this
 * host's clock does not enter the commit-to-changelog lag; this host's clock before any
 * frame. */
int64_t sy_ws_server_now(const walsync *w);

#endif
