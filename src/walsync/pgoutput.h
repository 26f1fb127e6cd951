/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pgoutput.h: the bytes of a logical replication stream, pure.
 *
 * Notes: It reads CopyData frames (XLogData, keepalive) and writes the standby status
 * update. It reads the pgoutput messages walsync uses (protocol version 1). It reads the
 * JSON of the version-fence and accepted-epoch logical messages.
 */
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
	/* A members-scoped table's message: hop 1's column in the old and new row, as text;
	 * NULL when the member is absent or null (no old or new row, a null column). */
	const char *scope_before;
	const char *scope_after;
} sy_ws_change;

/*
 * Decodes the JSON content of a version-fence message. Every member of the trigger's object
 * is required: table_id, pk and version strings (version 1..128 printable ASCII), state
 * "live" or "deleted", mutation_id and client_id canonical UUIDs or null, user_id,
 * owner_before and owner_after strings or null; scope_before and scope_after strings, null
 * or absent; no string may hold U+0000. Unknown members
 * are ignored (a later trigger may add some). The strings are copied into the arena
 * `buf` of `size` bytes (content_len + 16 always suffices). false with *err set.
 */
SY_MUST_CHECK bool sy_ws_change_parse(const char *json, size_t len, char *buf, size_t size,
                                      sy_ws_change *out, sy_error *err);

/* What a message of prefix synchro is: a row's version-fence message, or a scope trigger's
 * membership or link message (member "kind"). */
typedef enum { SY_WS_SYNCHRO_CHANGE, SY_WS_SYNCHRO_MEMBER, SY_WS_SYNCHRO_LINK } sy_ws_synchro_kind;

/* A scope trigger's message, its strings NUL-terminated in the arena. member: scope names the
 * membership relation as "relation(match,user)", key is the scope key and value the user.
 * link: scope names the hop as "relation.key->column", key is the hop relation's key and
 * value the column (the next hop's key). A side (before, after) is absent when its key is
 * NULL; a member side whose user is null grants nothing and is absent too. */
typedef struct {
	const char *scope;
	const char *key_before;
	const char *value_before; /* link: may be NULL while key_before is set */
	const char *key_after;
	const char *value_after;
} sy_ws_scope_msg;

/* Drops the sides of m that name nobody: a member side whose key or user is null, and the
 * value of any side whose key is null. */
void sy_ws_scope_msg_trim(sy_ws_scope_msg *m, bool member);

/*
 * Decodes the JSON content of a message of prefix synchro: *kind from its member "kind"
 * (absent: a version-fence message into *change, as sy_ws_change_parse(); "member" or
 * "link": a scope trigger's message into *scope). A scope message has "scope", a non-empty
 * string, and "key_before", "key_after" and "user_before"/"user_after" (member) or
 * "to_before"/"to_after" (link), each a string, null or absent; at least one side present.
 * Strings are copied into the arena buf of size bytes (len + 16 suffices). false with *err
 * set (an unknown kind too).
 */
SY_MUST_CHECK bool sy_ws_synchro_parse(const char *json, size_t len, char *buf, size_t size,
                                       sy_ws_synchro_kind *kind, sy_ws_change *change,
                                       sy_ws_scope_msg *scope, sy_error *err);

/* Decodes {"client_id": UUID, "epoch": positive integer} (prefix synchro-epoch); client_id
 * is copied into client_id. false with *err set. */
SY_MUST_CHECK bool sy_ws_epoch_parse(const char *json, size_t len, char client_id[37],
                                     long long *epoch, sy_error *err);

#endif
