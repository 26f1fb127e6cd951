/* SPDX-License-Identifier: BSD-2-Clause */
/* The bytes of a logical replication stream, pure: CopyData frames (XLogData, keepalive),
 * the standby status update, the pgoutput messages walsync reads (protocol version 1), and
 * the JSON of the version-fence and accepted-epoch logical messages. */
#ifndef SY_WALSYNC_PGOUTPUT_H
#define SY_WALSYNC_PGOUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "synchro/common.h"

/* Microseconds between the Unix epoch and PostgreSQL's (2000-01-01 00:00:00 UTC). */
#define SY_WS_PG_EPOCH_USEC INT64_C(946684800000000)

typedef enum {
	SY_WS_FRAME_XLOGDATA, /* 'w': a pgoutput message in data/len */
	SY_WS_FRAME_KEEPALIVE /* 'k' */
} sy_ws_frame_kind;

typedef struct {
	sy_ws_frame_kind kind;
	uint64_t wal_start;   /* 'w' only */
	uint64_t wal_end;     /* 'w': the server's WAL end; 'k': its sent position */
	int64_t send_time;    /* microseconds since 2000-01-01 */
	bool reply_requested; /* 'k' only */
	const unsigned char *data;
	size_t len;
} sy_ws_frame;

/* Parses one CopyData payload of the stream; false with *err set when it is malformed or of
 * an unknown kind. out->data points into p. */
SY_MUST_CHECK bool sy_ws_frame_parse(const unsigned char *p, size_t n, sy_ws_frame *out,
                                     sy_error *err);

#define SY_WS_STATUS_LEN 34
/* The standby status update ('r'): written, flushed and applied positions (walsync reports
 * the confirmed position for all three), the clock, and whether a reply is wanted. */
void sy_ws_status_build(unsigned char out[SY_WS_STATUS_LEN], uint64_t written, uint64_t flushed,
                        uint64_t applied, int64_t now_pg_usec, bool reply);

typedef enum {
	SY_WS_BEGIN,    /* 'B' */
	SY_WS_COMMIT,   /* 'C' */
	SY_WS_MESSAGE,  /* 'M' */
	SY_WS_RELATION, /* 'R': parse raw with sy_ws_relation_parse() */
	SY_WS_ROW,      /* 'I' or 'U': parse raw with sy_ws_row_parse() */
	SY_WS_OTHER     /* type, origin, delete, truncate, ...: nothing for walsync */
} sy_ws_msg_kind;

typedef struct {
	sy_ws_msg_kind kind;
	char tag;
	/* BEGIN: final_lsn (the commit's LSN), commit_time, xid. COMMIT: commit_lsn, end_lsn,
	 * commit_time. */
	uint64_t final_lsn;
	uint64_t commit_lsn;
	uint64_t end_lsn;
	int64_t commit_time;
	uint32_t xid;
	/* MESSAGE */
	bool transactional;
	uint64_t message_lsn;
	const char *prefix; /* NUL-terminated inside the frame */
	const char *content;
	size_t content_len;
	/* RELATION, ROW: the whole message */
	const unsigned char *raw;
	size_t raw_len;
} sy_ws_msg;

/* Parses one pgoutput message (proto_version 1, no streaming). false with *err set when the
 * bytes do not hold a well-formed B, C or M message; other tags are SY_WS_OTHER. */
SY_MUST_CHECK bool sy_ws_msg_parse(const unsigned char *p, size_t n, sy_ws_msg *out, sy_error *err);

/* Columns of a relation or row walsync looks at; later ones are counted, not kept. */
#define SY_WS_MAX_COLS 32

/* A pgoutput RELATION message; the strings point into the message. */
typedef struct {
	uint32_t oid;
	const char *nspname;
	const char *relname;
	int ncols;
	const char *cols[SY_WS_MAX_COLS];
} sy_ws_relation;

SY_MUST_CHECK bool sy_ws_relation_parse(const unsigned char *p, size_t n, sy_ws_relation *out,
                                        sy_error *err);

/* One column of a row: kind 'n' (null), 'u' (unchanged TOAST value), 't' (text in data/len)
 * or 'b' (binary). */
typedef struct {
	char kind;
	const unsigned char *data;
	size_t len;
} sy_ws_col;

/* The new tuple of a pgoutput INSERT or UPDATE; data points into the message. */
typedef struct {
	char tag; /* 'I' or 'U' */
	uint32_t oid;
	int ncols;
	sy_ws_col cols[SY_WS_MAX_COLS];
} sy_ws_row;

SY_MUST_CHECK bool sy_ws_row_parse(const unsigned char *p, size_t n, sy_ws_row *out, sy_error *err);

#define SY_WS_PREFIX_CHANGE "synchro"
#define SY_WS_PREFIX_EPOCH  "synchro-epoch"

/* A version-fence message (prefix synchro), its strings NUL-terminated in buf. */
typedef struct {
	const char *table_id;
	const char *pk;
	const char *version;
	bool deleted;
	const char *mutation_id; /* NULL when the member is null */
	const char *client_id;
	const char *user_id;
	const char *owner_before;
	const char *owner_after;
} sy_ws_change;

/*
 * Decodes the JSON content of a version-fence message. Every member of the trigger's object
 * is required: table_id, pk and version strings (version 1..128 printable ASCII), state
 * "live" or "deleted", mutation_id and client_id canonical UUIDs or null, user_id,
 * owner_before and owner_after strings or null; no string may hold U+0000. Unknown members
 * are ignored (a later trigger may add some). The strings are copied into the arena
 * `buf` of `size` bytes (content_len + 16 always suffices). false with *err set.
 */
SY_MUST_CHECK bool sy_ws_change_parse(const char *json, size_t len, char *buf, size_t size,
                                      sy_ws_change *out, sy_error *err);

/* Decodes {"client_id": UUID, "epoch": positive integer} (prefix synchro-epoch); client_id
 * is copied into client_id. false with *err set. */
SY_MUST_CHECK bool sy_ws_epoch_parse(const char *json, size_t len, char client_id[37],
                                     long long *epoch, sy_error *err);

#endif
