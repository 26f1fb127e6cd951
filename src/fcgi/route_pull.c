/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * route_pull.c: POST /v3/pull and POST /v3/rebuild.
 *
 * Layer: middle of src/fcgi (doc/hacking.md).
 * Rules: doc/contract.md#pull-and-rebuild (the two routes).
 * Notes: The router's gates run first (router.c). This file checks the structure of the
 * request body. It picks where the request reads: the primary, or the replica of
 * [database] pull_conninfo (store/read_target.h). The gates that need the database, and
 * the SQL, are in src/store/pull*.c and rebuild.c.
 */
#include "config.h"

#include <string.h>

#include "common/log.h"
#include "fcgi/metrics.h"
#include "fcgi/router.h"
#include "store/conn.h"
#include "store/pull.h"
#include "store/read_target.h"
#include "synchro/alloc.h"
#include "synchro/json.h"

/* doc/contract.md#pull-request: limit is 1..1000. */
#define LIMIT_MAX 1000

/* The read state of this process (statements prepared on its connection, the current
 * manifest): a responder serves one request at a time and keeps one connection. */
static sy_store_pull *read_state;
/* This process's replica ([database] pull_conninfo); NULL when none is configured. */
static sy_read_target *replica;
static bool replica_set_up;

/* The members of a request body, parsed; strings point into the parsed document. */
typedef struct {
	const char *client_id;
	uint64_t generation;
	sy_schema_ref schema;
	bool has_cursor;
	sy_store_position cursor;
	const char *rebuild_id;
	char *token_table; /* sy_free */
	char *token_pk;    /* sy_free */
	uint64_t limit;
} body;

/*
 * Checks that root is an object with exactly the members named in names (each once) and
 * parses them. False with *err set (SY_ERR_INVALID_REQUEST naming the member, or
 * SY_ERR_NOMEM).
 */
static bool parse_body(const sy_json *root, bool rebuild, body *b, sy_error *err)
{
	static const char *const pull_names[] = {"client_id", "client_generation", "schema",
	                                         "cursor", "limit"};
	static const char *const rebuild_names[] = {"client_id",  "client_generation", "schema",
	                                            "rebuild_id", "page_token",        "limit"};
	const char *const *names = rebuild ? rebuild_names : pull_names;
	size_t n = rebuild ? 6 : 5;
	const sy_json *v[6] = {NULL};
	memset(b, 0, sizeof *b);
	if (root->type != SY_JSON_OBJECT)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST, "the body must be a JSON object");
	for (size_t i = 0; i < root->u.object.count; i++) {
		const sy_json_member *mb = &root->u.object.members[i];
		size_t k = 0;
		while (k < n && (strlen(names[k]) != mb->key_len ||
		                 memcmp(names[k], mb->key, mb->key_len) != 0))
			k++;
		if (k == n)
			return sy_error_set(err, SY_ERR_INVALID_REQUEST,
			                    "unknown member in the body");
		v[k] = mb->value; /* the reader refuses repeated names */
	}
	for (size_t k = 0; k < n; k++)
		if (v[k] == NULL)
			return sy_error_set(err, SY_ERR_INVALID_REQUEST, "%s: missing", names[k]);
	if (v[0]->type != SY_JSON_STRING || !sy_uuid_valid(v[0]->u.string.data, v[0]->u.string.len))
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "client_id: expected a lowercase non-nil UUID");
	b->client_id = v[0]->u.string.data;
	if (!sy_generation_parse(v[1], &b->generation))
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "client_generation: expected a positive integer");
	if (!sy_schema_ref_parse(v[2], &b->schema))
		return sy_error_set(
		        err, SY_ERR_INVALID_REQUEST,
		        "schema: expected {\"version\": n, \"hash\": 64 lowercase hex}");
	const sy_json *lim = rebuild ? v[5] : v[4];
	if (!sy_positive_integer(lim, LIMIT_MAX, &b->limit))
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "limit: expected an integer from 1 to 1000");
	if (!rebuild) {
		const sy_json *c = v[3];
		if (c->type == SY_JSON_NULL)
			return true;
		if (c->type != SY_JSON_STRING ||
		    !sy_store_cursor_parse(c->u.string.data, c->u.string.len, &b->cursor))
			return sy_error_set(
			        err, SY_ERR_INVALID_REQUEST,
			        "cursor: expected null or a cursor this server returned");
		b->has_cursor = true;
		return true;
	}
	if (v[3]->type != SY_JSON_STRING || !sy_uuid_valid(v[3]->u.string.data, v[3]->u.string.len))
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "rebuild_id: expected a lowercase non-nil UUID");
	b->rebuild_id = v[3]->u.string.data;
	const sy_json *t = v[4];
	if (t->type == SY_JSON_NULL)
		return true;
	bool nomem = false;
	if (t->type != SY_JSON_STRING ||
	    !sy_store_page_token_parse(t->u.string.data, t->u.string.len, &b->token_table,
	                               &b->token_pk, &nomem)) {
		if (nomem)
			return sy_error_set(err, SY_ERR_NOMEM, "out of memory");
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "page_token: expected null or a token this server returned");
	}
	return true;
}

static void body_clear(body *b)
{
	sy_free(b->token_table);
	sy_free(b->token_pk);
	b->token_table = b->token_pk = NULL;
}

/* The body (read by the router) parsed. False when the answer has been written. */
static bool read_request(sy_responder *r, sy_http *h, bool rebuild, sy_json_doc **doc, body *b)
{
	sy_error err = {0};
	*doc = NULL;
	memset(b, 0, sizeof *b);
	if ((*doc = sy_json_parse(h->body, h->body_len, &err)) == NULL ||
	    !parse_body(sy_json_doc_root(*doc), rebuild, b, &err)) {
		if (err.code == SY_ERR_NOMEM)
			sy_responder_error(r, h, SY_ERR_TEMPORARY_UNAVAILABLE,
			                   "out of memory; retry");
		else
			sy_responder_error(r, h, SY_ERR_INVALID_REQUEST, err.message);
		return false;
	}
	return true;
}

/* The connection, with this process's read state ready; NULL when the 503 has been
 * written. */
static PGconn *ready(sy_responder *r, sy_http *h)
{
	sy_error err = {0};
	PGconn *c = sy_responder_db(r, &err);
	if (c == NULL) {
		sy_responder_error(r, h, SY_ERR_TEMPORARY_UNAVAILABLE, "database unavailable");
		return NULL;
	}
	if (read_state == NULL && (read_state = sy_store_pull_new()) == NULL) {
		sy_responder_error(r, h, SY_ERR_TEMPORARY_UNAVAILABLE, "out of memory; retry");
		return NULL;
	}
	if (!replica_set_up) {
		const char *ci = sy_cfg_str(r->cfg, "database", "pull_conninfo");
		if (ci != NULL && ci[0] != '\0' &&
		    (replica = sy_read_target_new(
		             ci, (int)sy_cfg_int(r->cfg, "fcgi", "pull_replica_wait_ms"),
		             r->lock_timeout_ms)) == NULL) {
			sy_responder_error(r, h, SY_ERR_TEMPORARY_UNAVAILABLE,
			                   "out of memory; retry");
			return NULL;
		}
		replica_set_up = true;
	}
	return c;
}

/* The replica's connection when the request may read it, else NULL (read primary). */
static PGconn *read_from(const char *route, PGconn *primary)
{
	if (replica == NULL)
		return NULL;
	sy_read_verdict v;
	bool changed;
	sy_error err = {0};
	PGconn *rc = sy_read_target_choose(replica, primary, &v, &changed, &err);
	if (changed && v == SY_READ_DOWN)
		sy_log(SY_LOG_WARNING, "%s: replica down (%s); reading the primary", route,
		       err.message);
	else if (changed && v == SY_READ_REPLICA)
		sy_log(SY_LOG_INFO, "%s: reading the replica", route);
	else if (changed)
		sy_log(SY_LOG_INFO, "%s: %s; reading the primary", route, sy_read_verdict_name(v));
	return rc;
}

/*
 * After a request on the replica: an operational failure there (lost, a query canceled by a
 * recovery conflict, ...) is logged and the request is read again from the primary (true:
 * *ans and *err were cleared for it).
 */
static bool again_on_primary(const char *route, sy_store_status st, sy_error *err,
                             sy_store_read_answer *ans)
{
	if (st == SY_STORE_OK)
		return false;
	sy_log(SY_LOG_WARNING, "%s: on the replica: %s; reading the primary", route,
	       err->message);
	sy_read_target_failed(replica);
	sy_store_read_answer_clear(ans);
	memset(ans, 0, sizeof *ans);
	memset(err, 0, sizeof *err);
	return true;
}

/* Where a request that may read the replica was read, for /metrics (nothing without one). */
static void count_target(sy_responder *r, bool on_replica)
{
	if (replica != NULL)
		sy_metrics_event(r->metrics, on_replica ? SY_METRIC_REPLICA_READS
		                                        : SY_METRIC_REPLICA_FALLBACKS);
}

/* Writes the store's answer; logs and handles an operational failure first. */
static void respond(sy_responder *r, sy_http *h, const char *route, sy_store_status st,
                    const sy_error *err, sy_store_read_answer *ans)
{
	if (st != SY_STORE_OK) {
		/* err names steps and SQLSTATEs, never a value of a row. */
		sy_log(SY_LOG_WARNING, "%s: %s", route, err->message);
		if (st == SY_STORE_CONNECTION && !sy_responder_db_check(r)) {
			sy_store_disconnect(r->pg);
			r->pg = NULL;
		}
	}
	if (ans->error == SY_ERR_NONE)
		sy_http_json(h, 200, &ans->body, NULL);
	else if (ans->error == SY_ERR_SCHEMA_MISMATCH)
		sy_http_error(h, ans->error, ans->message, r->retry_after_s, &ans->current,
		              &ans->received);
	else
		sy_responder_error(r, h, ans->error, ans->message);
}

void sy_route_pull(sy_responder *r, sy_http *h, const sy_request *rq)
{
	sy_json_doc *doc;
	body b;
	if (!read_request(r, h, false, &doc, &b))
		goto done;
	PGconn *c = ready(r, h);
	if (c == NULL)
		goto done;
	sy_store_pull_request req = {
	        .user = rq->user,
	        .client_id = b.client_id,
	        .client_generation = b.generation,
	        .schema = b.schema,
	        .has_cursor = b.has_cursor,
	        .cursor = b.cursor,
	        .limit = (unsigned)b.limit,
	        .wait_ms = r->pull_wait_ms,
	};
	sy_store_read_answer ans;
	memset(&ans, 0, sizeof ans);
	sy_error err = {0};
	PGconn *rc = read_from("pull", c);
	sy_store_status st = sy_store_pull_handle(read_state, rc ? rc : c, &req, &ans, &err);
	if (rc != NULL && again_on_primary("pull", st, &err, &ans)) {
		rc = NULL;
		st = sy_store_pull_handle(read_state, c, &req, &ans, &err);
	}
	count_target(r, rc != NULL);
	sy_log(SY_LOG_DEBUG,
	       "pull client %s: %s, %zu changes of %zu entries%s, waited %u ms, %u statements, %s",
	       b.client_id, ans.error == SY_ERR_NONE ? "ok" : sy_errcode_name(ans.error), ans.items,
	       ans.scanned, ans.more ? " (more)" : "", ans.waited_ms, ans.statements,
	       rc ? "replica" : "primary");
	if (ans.skipped > 0)
		sy_log(SY_LOG_WARNING,
		       "pull client %s: skipped %zu changelog entries whose key is not a value of "
		       "its table's key type (table %s): damaged or forged entries",
		       b.client_id, ans.skipped, ans.skipped_table);
	respond(r, h, "pull", st, &err, &ans);
	sy_store_read_answer_clear(&ans);
done:
	body_clear(&b);
	sy_json_doc_free(doc);
}

void sy_route_rebuild(sy_responder *r, sy_http *h, const sy_request *rq)
{
	sy_json_doc *doc;
	body b;
	if (!read_request(r, h, true, &doc, &b))
		goto done;
	PGconn *c = ready(r, h);
	if (c == NULL)
		goto done;
	sy_store_rebuild_request req = {
	        .user = rq->user,
	        .client_id = b.client_id,
	        .client_generation = b.generation,
	        .schema = b.schema,
	        .rebuild_id = b.rebuild_id,
	        .token_table = b.token_table,
	        .token_pk = b.token_pk,
	        .limit = (unsigned)b.limit,
	};
	sy_store_read_answer ans;
	memset(&ans, 0, sizeof ans);
	sy_error err = {0};
	/* The first page writes the session: the primary's. Later pages read the session and
	 * rows the replica holds once it replayed past the request's arrival. */
	PGconn *rc = b.token_table != NULL ? read_from("rebuild", c) : NULL;
	sy_store_status st = sy_store_rebuild_handle(read_state, rc ? rc : c, &req, &ans, &err);
	if (rc != NULL && again_on_primary("rebuild", st, &err, &ans)) {
		rc = NULL;
		st = sy_store_rebuild_handle(read_state, c, &req, &ans, &err);
	}
	if (b.token_table != NULL)
		count_target(r, rc != NULL);
	sy_log(SY_LOG_DEBUG, "rebuild %s of client %s: %s, %zu rows%s, %u statements, %s",
	       b.rebuild_id, b.client_id,
	       ans.error == SY_ERR_NONE ? "ok" : sy_errcode_name(ans.error), ans.items,
	       ans.more ? " (more)" : "", ans.statements, rc ? "replica" : "primary");
	respond(r, h, "rebuild", st, &err, &ans);
	if (ans.error == SY_ERR_NONE && b.token_table == NULL)
		sy_metrics_rebuild(r->metrics, SY_REBUILD_STARTED);
	if (ans.error == SY_ERR_NONE && !ans.more)
		sy_metrics_rebuild(r->metrics, SY_REBUILD_COMPLETED);
	if (ans.error == SY_ERR_REBUILD_INVALIDATED)
		sy_metrics_rebuild(r->metrics, SY_REBUILD_INVALIDATED);
	sy_store_read_answer_clear(&ans);
done:
	body_clear(&b);
	sy_json_doc_free(doc);
}
