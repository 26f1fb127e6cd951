/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pgoutput.c: the bytes of the replication stream: frames, the status update and pgoutput
 * v1 messages. It also reads the JSON of the version-fence, scope (membership, link) and
 * accepted-epoch messages.
 *
 * Layer: base of src/walsync (doc/hacking.md).
 * Notes: It does no I/O. tests/unit/test_pgoutput feeds it.
 */
#include "config.h"

#include <string.h>

#include "synchro/json.h"
#include "synchro/octets.h"
#include "synchro/scalar.h"
#include "walsync/pgoutput.h"

bool sy_ws_frame_parse(const unsigned char *p, size_t n, sy_ws_frame *out, sy_error *err)
{
	memset(out, 0, sizeof *out);
	if (n < 1)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "empty replication message");
	switch (p[0]) {
	case 'w':
		if (n < 25)
			return sy_error_set(err, SY_ERR_INVALID_REQUEST,
			                    "XLogData message of %zu bytes", n);
		out->kind = SY_WS_FRAME_XLOGDATA;
		out->wal_start = sy_be_get(p + 1, 8);
		out->wal_end = sy_be_get(p + 9, 8);
		out->send_time = (int64_t)sy_be_get(p + 17, 8);
		out->data = p + 25;
		out->len = n - 25;
		return true;
	case 'k':
		if (n < 18)
			return sy_error_set(err, SY_ERR_INVALID_REQUEST,
			                    "keepalive message of %zu bytes", n);
		out->kind = SY_WS_FRAME_KEEPALIVE;
		out->wal_end = sy_be_get(p + 1, 8);
		out->send_time = (int64_t)sy_be_get(p + 9, 8);
		out->reply_requested = p[17] != 0;
		return true;
	default:
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "unknown replication message kind 0x%02x", p[0]);
	}
}

void sy_ws_status_build(unsigned char out[SY_WS_STATUS_LEN], uint64_t written, uint64_t flushed,
                        uint64_t applied, int64_t now_pg_usec, bool reply)
{
	out[0] = 'r';
	sy_be_put(out + 1, written, 8);
	sy_be_put(out + 9, flushed, 8);
	sy_be_put(out + 17, applied, 8);
	sy_be_put(out + 25, (uint64_t)now_pg_usec, 8);
	out[33] = reply ? 1 : 0;
}

bool sy_ws_msg_parse(const unsigned char *p, size_t n, sy_ws_msg *out, sy_error *err)
{
	memset(out, 0, sizeof *out);
	if (n < 1)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "empty pgoutput message");
	out->tag = (char)p[0];
	switch (p[0]) {
	case 'B':
		if (n != 21)
			return sy_error_set(err, SY_ERR_INVALID_REQUEST,
			                    "pgoutput BEGIN of %zu bytes", n);
		out->kind = SY_WS_BEGIN;
		out->final_lsn = sy_be_get(p + 1, 8);
		out->commit_time = (int64_t)sy_be_get(p + 9, 8);
		out->xid = (uint32_t)sy_be_get(p + 17, 4);
		return true;
	case 'C':
		if (n != 26)
			return sy_error_set(err, SY_ERR_INVALID_REQUEST,
			                    "pgoutput COMMIT of %zu bytes", n);
		out->kind = SY_WS_COMMIT;
		out->commit_lsn = sy_be_get(p + 2, 8);
		out->end_lsn = sy_be_get(p + 10, 8);
		out->commit_time = (int64_t)sy_be_get(p + 18, 8);
		return true;
	case 'M': {
		/* flags, LSN, prefix\0, length, content (no xid: streaming is off) */
		if (n < 1 + 1 + 8 + 1 + 4)
			return sy_error_set(err, SY_ERR_INVALID_REQUEST,
			                    "pgoutput MESSAGE of %zu bytes", n);
		out->kind = SY_WS_MESSAGE;
		out->transactional = (p[1] & 1) != 0;
		out->message_lsn = sy_be_get(p + 2, 8);
		const unsigned char *prefix = p + 10;
		const unsigned char *nul = memchr(prefix, '\0', n - 10);
		if (!nul || (size_t)(p + n - (nul + 1)) < 4)
			return sy_error_set(err, SY_ERR_INVALID_REQUEST,
			                    "pgoutput MESSAGE without its prefix or length");
		uint32_t len = (uint32_t)sy_be_get(nul + 1, 4);
		const unsigned char *content = nul + 5;
		if ((size_t)(p + n - content) != len)
			return sy_error_set(err, SY_ERR_INVALID_REQUEST,
			                    "pgoutput MESSAGE content of %u bytes in %zu", len,
			                    (size_t)(p + n - content));
		out->prefix = (const char *)prefix;
		out->content = (const char *)content;
		out->content_len = len;
		return true;
	}
	case 'R':
	case 'I':
	case 'U':
		out->kind = p[0] == 'R' ? SY_WS_RELATION : SY_WS_ROW;
		out->raw = p;
		out->raw_len = n;
		return true;
	default: out->kind = SY_WS_OTHER; return true;
	}
}

/* A NUL-terminated string at *pos before end; NULL when there is none. */
static const char *take_string(const unsigned char **pos, const unsigned char *end)
{
	const unsigned char *nul = memchr(*pos, '\0', (size_t)(end - *pos));
	if (!nul)
		return NULL;
	const char *s = (const char *)*pos;
	*pos = nul + 1;
	return s;
}

bool sy_ws_relation_parse(const unsigned char *p, size_t n, sy_ws_relation *out, sy_error *err)
{
	memset(out, 0, sizeof *out);
	const unsigned char *end = p + n, *pos = p + 5;
	if (n < 5 || p[0] != 'R')
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "pgoutput RELATION of %zu bytes",
		                    n);
	out->oid = (uint32_t)sy_be_get(p + 1, 4);
	out->nspname = take_string(&pos, end);
	out->relname = out->nspname ? take_string(&pos, end) : NULL;
	if (!out->relname || end - pos < 3)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "pgoutput RELATION without names");
	pos++; /* replica identity */
	out->ncols = (int)sy_be_get(pos, 2);
	pos += 2;
	for (int i = 0; i < out->ncols; i++) {
		const char *name = end - pos >= 1 ? (pos++, take_string(&pos, end)) : NULL;
		if (!name || end - pos < 8)
			return sy_error_set(err, SY_ERR_INVALID_REQUEST,
			                    "pgoutput RELATION column %d malformed", i);
		pos += 8; /* type oid, typmod */
		if (i < SY_WS_MAX_COLS)
			out->cols[i] = name;
	}
	return true;
}

/* TupleData at *pos: its columns into out (the first SY_WS_MAX_COLS). */
static bool take_tuple(const unsigned char **pos, const unsigned char *end, sy_ws_row *out)
{
	if (end - *pos < 2)
		return false;
	int ncols = (int)sy_be_get(*pos, 2);
	*pos += 2;
	if (out)
		out->ncols = ncols;
	for (int i = 0; i < ncols; i++) {
		if (end - *pos < 1)
			return false;
		char kind = (char)*(*pos)++;
		const unsigned char *data = NULL;
		size_t len = 0;
		if (kind == 't' || kind == 'b') {
			if (end - *pos < 4)
				return false;
			len = (size_t)sy_be_get(*pos, 4);
			*pos += 4;
			if ((size_t)(end - *pos) < len)
				return false;
			data = *pos;
			*pos += len;
		} else if (kind != 'n' && kind != 'u') {
			return false;
		}
		if (out && i < SY_WS_MAX_COLS)
			out->cols[i] = (sy_ws_col){kind, data, len};
	}
	return true;
}

bool sy_ws_row_parse(const unsigned char *p, size_t n, sy_ws_row *out, sy_error *err)
{
	memset(out, 0, sizeof *out);
	const unsigned char *end = p + n, *pos = p + 5;
	if (n < 6 || (p[0] != 'I' && p[0] != 'U'))
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "pgoutput row change of %zu bytes",
		                    n);
	out->tag = (char)p[0];
	out->oid = (uint32_t)sy_be_get(p + 1, 4);
	/* UPDATE: the old key or row first, when the server sends it. */
	if (p[0] == 'U' && (*pos == 'K' || *pos == 'O')) {
		pos++;
		if (!take_tuple(&pos, end, NULL) || pos >= end)
			return sy_error_set(err, SY_ERR_INVALID_REQUEST,
			                    "pgoutput UPDATE old tuple malformed");
	}
	if (*pos != 'N')
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "pgoutput row change without 'N'");
	pos++;
	if (!take_tuple(&pos, end, out) || pos != end)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "pgoutput tuple malformed");
	return true;
}

/* Copies a JSON string value into the arena; NULL (and false from the caller) when it would
 * not fit or holds U+0000. */
static const char *arena_copy(const sy_json *v, char **pos, char *end)
{
	if (v->u.string.len >= (size_t)(end - *pos) ||
	    memchr(v->u.string.data, '\0', v->u.string.len))
		return NULL;
	char *s = *pos;
	memcpy(s, v->u.string.data, v->u.string.len);
	s[v->u.string.len] = '\0';
	*pos += v->u.string.len + 1;
	return s;
}

/* Member `key` of obj as a string (or null when nullable): true with *out set (NULL for a
 * null); false when it is missing, of another type, or cannot be copied. */
static bool member_string(const sy_json *obj, const char *key, bool nullable, char **pos, char *end,
                          const char **out)
{
	const sy_json *v = sy_json_get(obj, key);
	*out = NULL;
	if (!v)
		return false;
	if (v->type == SY_JSON_NULL)
		return nullable;
	if (v->type != SY_JSON_STRING)
		return false;
	*out = arena_copy(v, pos, end);
	return *out != NULL;
}

/* Member `key` of obj as a string, null or absent (*out NULL); false when it is of another
 * type or cannot be copied. */
static bool optional_string(const sy_json *obj, const char *key, char **pos, char *end,
                            const char **out)
{
	*out = NULL;
	if (!sy_json_get(obj, key))
		return true;
	return member_string(obj, key, true, pos, end, out);
}

/* A version-fence message's members (root an object); false with *err set. */
static bool change_members(const sy_json *root, char *pos, char *end, sy_ws_change *out,
                           sy_error *err)
{
	const char *state = NULL;
	const char *bad = NULL;
	if (!member_string(root, "table_id", false, &pos, end, &out->table_id) || !out->table_id[0])
		bad = "table_id";
	else if (!member_string(root, "pk", false, &pos, end, &out->pk))
		bad = "pk";
	else if (!member_string(root, "version", false, &pos, end, &out->version) ||
	         !sy_opaque_version_valid(out->version, strlen(out->version)))
		bad = "version";
	else if (!member_string(root, "state", false, &pos, end, &state) ||
	         (strcmp(state, "live") != 0 && strcmp(state, "deleted") != 0))
		bad = "state";
	else if (!member_string(root, "mutation_id", true, &pos, end, &out->mutation_id) ||
	         (out->mutation_id &&
	          !sy_uuid_text_valid(out->mutation_id, strlen(out->mutation_id))))
		bad = "mutation_id";
	else if (!member_string(root, "client_id", true, &pos, end, &out->client_id) ||
	         (out->client_id && !sy_uuid_text_valid(out->client_id, strlen(out->client_id))))
		bad = "client_id";
	else if (!member_string(root, "user_id", true, &pos, end, &out->user_id))
		bad = "user_id";
	else if (!member_string(root, "owner_before", true, &pos, end, &out->owner_before))
		bad = "owner_before";
	else if (!member_string(root, "owner_after", true, &pos, end, &out->owner_after))
		bad = "owner_after";
	else if (!optional_string(root, "scope_before", &pos, end, &out->scope_before))
		bad = "scope_before";
	else if (!optional_string(root, "scope_after", &pos, end, &out->scope_after))
		bad = "scope_after";
	if (bad)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "version-fence message: bad %s",
		                    bad);
	out->deleted = strcmp(state, "deleted") == 0;
	return true;
}

/* A scope trigger's message's members (root an object); false with *err set. */
static bool scope_members(const sy_json *root, sy_ws_synchro_kind kind, char *pos, char *end,
                          sy_ws_scope_msg *out, sy_error *err)
{
	bool member = kind == SY_WS_SYNCHRO_MEMBER;
	const char *what = member ? "membership" : "link";
	const char *bad = NULL;
	if (!member_string(root, "scope", false, &pos, end, &out->scope) || !out->scope[0])
		bad = "scope";
	else if (!optional_string(root, "key_before", &pos, end, &out->key_before))
		bad = "key_before";
	else if (!optional_string(root, member ? "user_before" : "to_before", &pos, end,
	                          &out->value_before))
		bad = member ? "user_before" : "to_before";
	else if (!optional_string(root, "key_after", &pos, end, &out->key_after))
		bad = "key_after";
	else if (!optional_string(root, member ? "user_after" : "to_after", &pos, end,
	                          &out->value_after))
		bad = member ? "user_after" : "to_after";
	if (bad)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "%s message: bad %s", what, bad);
	sy_ws_scope_msg_trim(out, member);
	if (!out->key_before && !out->key_after && !member)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "%s message: no key", what);
	return true;
}

void sy_ws_scope_msg_trim(sy_ws_scope_msg *m, bool member)
{
	/* A membership side with a null key or user names nobody. */
	if (member && (!m->key_before || !m->value_before))
		m->key_before = m->value_before = NULL;
	if (member && (!m->key_after || !m->value_after))
		m->key_after = m->value_after = NULL;
	if (!m->key_before)
		m->value_before = NULL;
	if (!m->key_after)
		m->value_after = NULL;
}

bool sy_ws_synchro_parse(const char *json, size_t len, char *buf, size_t size,
                         sy_ws_synchro_kind *kind, sy_ws_change *change, sy_ws_scope_msg *scope,
                         sy_error *err)
{
	memset(change, 0, sizeof *change);
	memset(scope, 0, sizeof *scope);
	*kind = SY_WS_SYNCHRO_CHANGE;
	sy_json_doc *doc = sy_json_parse(json, len, err);
	if (!doc)
		return false;
	bool ok = false;
	const sy_json *root = sy_json_doc_root(doc);
	if (root->type != SY_JSON_OBJECT) {
		sy_error_set(err, SY_ERR_INVALID_REQUEST,
		             "version-fence message: bad not an object");
		goto done;
	}
	const sy_json *k = sy_json_get(root, "kind");
	if (k && k->type == SY_JSON_STRING && k->u.string.len == 6 &&
	    memcmp(k->u.string.data, "member", 6) == 0)
		*kind = SY_WS_SYNCHRO_MEMBER;
	else if (k && k->type == SY_JSON_STRING && k->u.string.len == 4 &&
	         memcmp(k->u.string.data, "link", 4) == 0)
		*kind = SY_WS_SYNCHRO_LINK;
	else if (k) {
		sy_error_set(err, SY_ERR_INVALID_REQUEST, "synchro message: unknown kind");
		goto done;
	}
	if (*kind == SY_WS_SYNCHRO_CHANGE)
		ok = change_members(root, buf, buf + size, change, err);
	else
		ok = scope_members(root, *kind, buf, buf + size, scope, err);
done:
	sy_json_doc_free(doc);
	if (!ok) {
		memset(change, 0, sizeof *change);
		memset(scope, 0, sizeof *scope);
	}
	return ok;
}

bool sy_ws_change_parse(const char *json, size_t len, char *buf, size_t size, sy_ws_change *out,
                        sy_error *err)
{
	sy_ws_synchro_kind kind;
	sy_ws_scope_msg scope;
	if (!sy_ws_synchro_parse(json, len, buf, size, &kind, out, &scope, err))
		return false;
	if (kind != SY_WS_SYNCHRO_CHANGE)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "version-fence message: bad kind");
	return true;
}

bool sy_ws_epoch_parse(const char *json, size_t len, char client_id[37], long long *epoch,
                       sy_error *err)
{
	sy_json_doc *doc = sy_json_parse(json, len, err);
	if (!doc)
		return false;
	bool ok = false;
	const sy_json *root = sy_json_doc_root(doc);
	const sy_json *c = root->type == SY_JSON_OBJECT ? sy_json_get(root, "client_id") : NULL;
	const sy_json *e = root->type == SY_JSON_OBJECT ? sy_json_get(root, "epoch") : NULL;
	uint64_t v = 0;
	if (!c || c->type != SY_JSON_STRING || c->u.string.len != 36 ||
	    !sy_uuid_text_valid(c->u.string.data, c->u.string.len)) {
		sy_error_set(err, SY_ERR_INVALID_REQUEST, "accepted-epoch message: bad client_id");
		goto fail;
	}
	if (!e || !sy_positive_integer(e, INT64_MAX, &v)) {
		sy_error_set(err, SY_ERR_INVALID_REQUEST, "accepted-epoch message: bad epoch");
		goto fail;
	}
	memcpy(client_id, c->u.string.data, 36);
	client_id[36] = '\0';
	*epoch = (long long)v;
	ok = true;
fail:
	sy_json_doc_free(doc);
	return ok;
}
