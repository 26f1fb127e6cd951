/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stream.h: the replication connection of synchro-walsync.
 *
 * Notes: It connects with replication=database and creates the logical slot. It streams
 * the slot with pgoutput, with messages on and publication synchro. It reads frames
 * without blocking. It confirms positions with standby status updates.
 */
#ifndef SY_WALSYNC_STREAM_H
#define SY_WALSYNC_STREAM_H

#include <libpq-fe.h>
#include <stdint.h>

#include "synchro/common.h"

/* Slot names walsync accepts: 1..63 of [a-z0-9_] (PostgreSQL's own rule). */
bool sy_ws_slot_name_valid(const char *slot);

/* Opens a logical replication connection (conninfo as synchro.conf's, plus
 * replication=database). NULL with *err set to one line without the conninfo. */
SY_MUST_CHECK PGconn *sy_ws_connect(const char *conninfo, sy_error *err);

/* CREATE_REPLICATION_SLOT slot LOGICAL pgoutput; *created false when it existed already. */
SY_MUST_CHECK bool sy_ws_slot_create(PGconn *r, const char *slot, bool *created, sy_error *err);

typedef enum {
	SY_WS_START_OK,
	SY_WS_START_BUSY,  /* another walsender holds the slot (SQLSTATE 55006) */
	SY_WS_START_FAILED /* *err says why; the connection may be gone */
} sy_ws_start_status;

/* START_REPLICATION SLOT slot LOGICAL 0/0 (proto_version '1', publication_names 'synchro',
 * messages 'true'): from the slot's confirmed position. */
SY_MUST_CHECK sy_ws_start_status sy_ws_start(PGconn *r, const char *slot, sy_error *err);

/*
 * Reads one CopyData message without blocking: > 0 its length in *buf (PQfreemem it), 0 when
 * no complete message is buffered (poll PQsocket(r), then sy_ws_consume()), -1 when the
 * stream ended or failed (*err says why).
 */
int sy_ws_read(PGconn *r, char **buf, sy_error *err);
/* Reads what the socket has into libpq's buffer; false (with *err) when the connection failed. */
SY_MUST_CHECK bool sy_ws_consume(PGconn *r, sy_error *err);

/* Sends a standby status update confirming `confirmed` as written, flushed and applied. */
SY_MUST_CHECK bool sy_ws_send_status(PGconn *r, uint64_t confirmed, sy_error *err);

/* Now in microseconds since 2000-01-01 UTC (the stream's clock unit). */
int64_t sy_ws_now_pg(void);

#endif
