/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * route_clients.c: the routes of a client's registration and of the schema. They are
 * POST /v3/connect, POST /v3/retire and GET /v3/schema.
 *
 * Layer: middle of src/fcgi (doc/hacking.md).
 * Rules: doc/contract.md#connect ({"client_id"} bound to the authenticated user, a
 * generation per connect, retirement permanent), doc/contract.md#schema-route (the current
 * manifest as its stored JCS bytes).
 * Notes: The router ran their gates (router.c). The SQL is in src/store/clients.c and
 * src/store/session.c.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "fcgi/router.h"
#include "store/clients.h"
#include "store/session.h"
#include "synchro/alloc.h"
#include "synchro/jcs.h"
#include "synchro/json.h"

/* A failed store call: the connection may be gone; the client may retry. */
static void store_failed(sy_responder *r, sy_http *h, const char *route, const sy_error *err)
{
	sy_responder_db_check(r);
	sy_log(SY_LOG_WARNING, "%s: %s", route, err->message);
	sy_responder_error(r, h, SY_ERR_TEMPORARY_UNAVAILABLE, "temporarily unavailable; retry");
}

static void db_unavailable(sy_responder *r, sy_http *h)
{
	sy_responder_error(r, h, SY_ERR_TEMPORARY_UNAVAILABLE, "database unavailable; retry");
}

/* Answers an error of the request's own making (400), or 503 when memory ran out. */
static void bad_request(sy_responder *r, sy_http *h, const sy_error *err)
{
	if (err->code == SY_ERR_NOMEM)
		sy_responder_error(r, h, SY_ERR_NOMEM, "out of memory");
	else
		sy_responder_error(r, h, SY_ERR_INVALID_REQUEST, err->message);
}

/* The body {"client_id": <canonical UUID>}, exactly that member (doc/contract.md#connect). */
static bool read_client_id(sy_responder *r, sy_http *h, char out[SY_UUID_LEN + 1])
{
	sy_error err = {0};
	sy_json_doc *doc = sy_json_parse(h->body, h->body_len, &err);
	if (doc == NULL) {
		bad_request(r, h, &err);
		return false;
	}
	const sy_json *root = sy_json_doc_root(doc);
	bool ok = false;
	if (root->type != SY_JSON_OBJECT || root->u.object.count != 1 ||
	    root->u.object.members[0].key_len != 9 ||
	    memcmp(root->u.object.members[0].key, "client_id", 9) != 0) {
		sy_responder_error(r, h, SY_ERR_INVALID_REQUEST,
		                   "the body must be an object with exactly the member client_id");
	} else {
		const sy_json *v = root->u.object.members[0].value;
		if (v->type != SY_JSON_STRING ||
		    !sy_uuid_valid(v->u.string.data, v->u.string.len)) {
			sy_responder_error(r, h, SY_ERR_INVALID_REQUEST,
			                   "client_id: expected a lowercase non-nil UUID");
		} else {
			memcpy(out, v->u.string.data, SY_UUID_LEN + 1);
			ok = true;
		}
	}
	sy_json_doc_free(doc);
	return ok;
}

/* "key":"value" with value JCS-escaped. */
static void put_string_member(sy_buf *b, const char *key, const char *value)
{
	sy_buf_printf(b, "\"%s\":", key);
	if (!sy_jcs_write_string(b, value, strlen(value)))
		b->failed = true;
}

/* {"hash":"...","version":n} (JCS member order). */
static void put_schema_ref(sy_buf *b, const sy_schema_ref *ref)
{
	sy_buf_printf(b, "{\"hash\":\"%s\",\"version\":%llu}", ref->hash,
	              (unsigned long long)ref->version);
}

static void answer(sy_responder *r, sy_http *h, sy_buf *body)
{
	if (body->failed)
		sy_responder_error(r, h, SY_ERR_NOMEM, "out of memory");
	else
		sy_http_json(h, 200, body, NULL);
	sy_buf_free(body);
}

void sy_route_connect(sy_responder *r, sy_http *h, const sy_request *req)
{
	const char *user = req->user;
	char client_id[SY_UUID_LEN + 1];
	if (!read_client_id(r, h, client_id))
		return;
	sy_error err = {0};
	PGconn *c = sy_responder_db(r, &err);
	if (c == NULL) {
		db_unavailable(r, h);
		return;
	}
	sy_store_connected out;
	if (sy_store_client_connect(c, user, client_id, &out, &err) != SY_STORE_OK) {
		store_failed(r, h, "connect", &err);
		return;
	}
	switch (out.result) {
	case SY_CONNECT_FOREIGN:
		sy_responder_error(r, h, SY_ERR_AUTH_REQUIRED,
		                   "client_id is registered to another user");
		return;
	case SY_CONNECT_RETIRED:
		sy_responder_error(r, h, SY_ERR_CLIENT_RETIRED, "this client is retired");
		return;
	case SY_CONNECT_NO_SCHEMA:
		sy_responder_error(r, h, SY_ERR_TEMPORARY_UNAVAILABLE,
		                   "no schema is published yet; retry later");
		return;
	case SY_CONNECT_OPENED: break;
	}
	sy_log(SY_LOG_DEBUG, "connect: client %s generation %lld", client_id, out.generation);
	sy_buf b = SY_BUF_INIT;
	sy_buf_printf(&b, "{\"client_generation\":%lld,", out.generation);
	put_string_member(&b, "client_id", client_id);
	sy_buf_puts(&b, ",\"schema\":");
	put_schema_ref(&b, &out.schema);
	sy_buf_putc(&b, ',');
	put_string_member(&b, "server_time", out.server_time);
	sy_buf_putc(&b, '}');
	answer(r, h, &b);
}

void sy_route_retire(sy_responder *r, sy_http *h, const sy_request *req)
{
	const char *user = req->user;
	char client_id[SY_UUID_LEN + 1];
	if (!read_client_id(r, h, client_id))
		return;
	sy_error err = {0};
	PGconn *c = sy_responder_db(r, &err);
	if (c == NULL) {
		db_unavailable(r, h);
		return;
	}
	sy_store_retirement ret;
	switch (sy_store_client_retire(c, user, client_id, &ret, &err)) {
	case SY_STORE_OK: break;
	case SY_STORE_NOT_FOUND:
		/* Unknown, or another user's: the answer does not say which. */
		sy_responder_error(r, h, SY_ERR_AUTH_REQUIRED,
		                   "client_id is not a client of the authenticated user");
		return;
	case SY_STORE_CONFLICT:
		sy_responder_error(r, h, SY_ERR_CLIENT_RETIRED, "this client is already retired");
		return;
	case SY_STORE_INVALID:
		sy_responder_error(r, h, SY_ERR_INVALID_REQUEST, err.message);
		return;
	default: store_failed(r, h, "retire", &err); return;
	}
	sy_log(SY_LOG_INFO, "retire: client %s retired", client_id);
	sy_buf b = SY_BUF_INIT;
	sy_buf_putc(&b, '{');
	put_string_member(&b, "client_id", client_id);
	sy_buf_putc(&b, ',');
	put_string_member(&b, "retired_at", ret.retired_at);
	sy_buf_putc(&b, '}');
	answer(r, h, &b);
}

void sy_route_schema(sy_responder *r, sy_http *h, const sy_request *req)
{
	(void)req;
	sy_error err = {0};
	PGconn *c = sy_responder_db(r, &err);
	if (c == NULL) {
		db_unavailable(r, h);
		return;
	}
	sy_schema_ref ref;
	char *manifest = NULL;
	size_t len = 0;
	sy_store_status st = sy_store_schema_current(c, &ref, &manifest, &len, &err);
	if (st == SY_STORE_NOT_FOUND) {
		sy_responder_error(r, h, SY_ERR_TEMPORARY_UNAVAILABLE,
		                   "no schema is published yet; retry later");
		return;
	}
	if (st != SY_STORE_OK) {
		store_failed(r, h, "schema", &err);
		return;
	}
	/* The stored manifest is already its JCS bytes (the hash covers exactly them). */
	sy_buf b = SY_BUF_INIT;
	sy_buf_puts(&b, "{\"manifest\":");
	sy_buf_append(&b, manifest, len);
	sy_buf_puts(&b, ",\"schema\":");
	put_schema_ref(&b, &ref);
	sy_buf_putc(&b, '}');
	sy_free(manifest);
	answer(r, h, &b);
}
