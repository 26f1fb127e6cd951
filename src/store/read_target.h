/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * read_target.h: where a pull or a rebuild page reads ([database] pull_conninfo).
 *
 * Rules: doc/scaling.md#3-read-traffic-on-replicas (reads on a replica).
 * Notes: The request arrives and the primary's flush position is taken. A streaming
 * replica that has replayed the primary's WAL up to that position answers. Otherwise the
 * primary answers. Everything a client can have seen before it sent the request was
 * committed, and so flushed, before that position. That is a push answered, a cursor, a
 * rebuild session, a retirement, a schema published, a compaction or a stream break. So a
 * replica at or past the position answers exactly as the primary would have at arrival,
 * never older.
 */
#ifndef SY_STORE_READ_TARGET_H
#define SY_STORE_READ_TARGET_H

#include <libpq-fe.h>

#include "store/store.h"

/* Why a request reads where it reads. */
typedef enum {
	SY_READ_REPLICA = 0,  /* the replica had replayed far enough */
	SY_READ_NO_REPLICA,   /* none configured */
	SY_READ_DOWN,         /* the replica cannot be reached (reconnect after a backoff) */
	SY_READ_PAUSED,       /* the replica's WAL replay is paused */
	SY_READ_BEHIND,       /* the replica had not replayed far enough within the wait */
	SY_READ_NOT_STANDBY,  /* the server is not in recovery (promoted? a primary?) */
	SY_READ_PRIMARY_FAILED /* the primary's position could not be read */
} sy_read_verdict;

/* "replica", "no replica", "down", ... for log lines. */
const char *sy_read_verdict_name(sy_read_verdict v);

/* One process's replica: its connection, the backoff, the last verdict. */
typedef struct sy_read_target sy_read_target;

/*
 * A replica reached with conninfo (which must outlive it), waited for at most wait_ms per
 * request (while it was caught up at the last request; a replica found behind is checked
 * once per request until it catches up), its sessions with lock_timeout_ms. NULL when out
 * of memory. No connection is opened until a request needs one.
 */
SY_MUST_CHECK sy_read_target *sy_read_target_new(const char *conninfo, int wait_ms,
                                                 int lock_timeout_ms);
/* Closes the connection; accepts NULL. */
void sy_read_target_free(sy_read_target *t);

/*
 * Where to read a request that arrived now: the replica's connection (*verdict
 * SY_READ_REPLICA) or NULL: read the primary, *verdict says why. One statement on the
 * primary (its WAL flush position), one or a few on the replica (its replay position while
 * waiting). *changed when the verdict differs from the previous request's (for a log line),
 * *err then says why the replica is down, when it is.
 */
PGconn *sy_read_target_choose(sy_read_target *t, PGconn *primary, sy_read_verdict *verdict,
                              bool *changed, sy_error *err);

/*
 * After an operational failure of a request on the replica (the caller reads the primary
 * instead): a lost connection is closed and reconnected after the backoff.
 */
void sy_read_target_failed(sy_read_target *t);

#endif
