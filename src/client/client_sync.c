/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_sync.c: the synchronization state machine. sy_client_step decides what is due,
 * starts one request on the transport, and later applies its response. The blocking
 * sy_client_sync loops over it.
 *
 * Layer: middle of src/client (doc/hacking.md).
 * Rules: doc/contract.md#successor-batches (after 409 or 422 on a batch),
 * doc/contract.md#client-retries (what is sent again, and when).
 * Interface:
 *   sy_client_step()        does what is due, without blocking; says when to call again
 *   sy_client_wait()        waits for the request in flight or a live notification
 *   sy_client_sync()        steps until the work is done, the queue freezes or time runs out
 *   sy_cl_retry_after()     the Retry-After header's value (every transport parses it here)
 *   sy_client_phase_name()  a phase's name
 * Notes: Each step does the first of these that is due, with one request in flight at most:
 *
 *   connect   when there is no generation, or after 409 client_generation_expired
 *   schema    when there is no manifest, or after 422 schema_mismatch
 *   push      the unsettled sealed batch (its exact bytes), else a newly sealed one;
 *             after 409/422 on a batch, first its successor
 *   rebuild   when there is no cursor, or after rebuild_required, cursor_expired,
 *             rebuild_invalidated; each next page asked for while the last is applied
 *   pull      until has_more is false
 *   idle      until the poll interval passes
 *
 * A 429 or 503, or a response that never arrived, is retried after the delay with the same
 * sealed bytes. idempotency_conflict and 400 freeze the queue: they mean a client bug, so
 * nothing more is sent and nothing is dropped. client_retired makes the store read-only.
 * Responses are applied in the caller's thread, inside this call. Logs never see bodies.
 */
#include "config.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_internal.h"
#include "synchro/alloc.h"
#include "synchro/buf.h"
#include "synchro/jcs.h"

#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 60000

const char *sy_client_phase_name(sy_client_phase p)
{
	static const char *const names[] = {"idle",    "connecting", "schema",  "pushing",
	                                    "pulling", "rebuilding", "backoff", "stopped"};
	return (unsigned)p < sizeof names / sizeof names[0] ? names[p] : "unknown";
}

static sy_client_rc unsettled(sy_client *c, const char *skip, char id[SY_UUID_LEN + 1], char **body,
                              size_t *len, sy_client_error *err);
static sy_client_rc start(sy_client *c, sy_cl_req kind, const char *method, const char *path,
                          char *body, size_t len, sy_client_phase phase);
static void send_inflight(sy_client *c);

static void set_phase(sy_client *c, sy_client_phase p)
{
	if (c->phase != p) {
		c->phase = p;
		sy_cl_emit(c, SY_CLIENT_EVENT_PHASE, NULL, NULL, NULL);
	}
}

static void note_error(sy_client *c, const char *code, bool retryable, const char *message)
{
	snprintf(c->last_error, sizeof c->last_error, "%s", code);
	snprintf(c->last_message, sizeof c->last_message, "%s", message ? message : "");
	c->last_retryable = retryable;
}

/* The request-level error code of a body ({"error":{"code"...}}), into code. */
static void error_code(const sy_client_response *r, char *code, size_t len, char *msg,
                       size_t msglen)
{
	/* A 401 the web server answers itself (a token refused) means what the protocol's does. */
	snprintf(code, len, r->status == 401 ? "auth_required" : "http_%d", r->status);
	msg[0] = '\0';
	if (r->body == NULL)
		return;
	sy_error e = {0};
	sy_json_doc *d = sy_json_parse(r->body, r->body_len, &e);
	const sy_json *er = d ? sy_json_get(sy_json_doc_root(d), "error") : NULL;
	const char *cs = er ? sy_cl_jstr(er, "code") : NULL;
	const char *ms = er ? sy_cl_jstr(er, "message") : NULL;
	if (cs != NULL)
		snprintf(code, len, "%s", cs);
	if (ms != NULL)
		snprintf(msg, msglen, "%s", ms);
	sy_json_doc_free(d);
}

/* Schedules a retry: after Retry-After when given, else an exponential backoff. */
static void retry_later(sy_client *c, const sy_client_response *r, int64_t now)
{
	unsigned delay;
	if (r->retry_after_s >= 0) {
		delay = (unsigned)r->retry_after_s * 1000u;
	} else {
		c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : BACKOFF_MIN_MS;
		if (c->backoff_ms > BACKOFF_MAX_MS)
			c->backoff_ms = BACKOFF_MAX_MS;
		delay = c->backoff_ms;
	}
	c->next_due_ms = now + delay;
	set_phase(c, SY_PHASE_BACKOFF);
}

static sy_client_rc set_flag(sy_client *c, const char *key, const char *reason,
                             sy_client_error *err)
{
	sy_client_rc rc = sy_cl_begin(c, err);
	if (rc == SY_CLIENT_OK && (rc = sy_cl_meta_set(c, key, "1", err)) == SY_CLIENT_OK &&
	    (rc = sy_cl_meta_set(c, "stop_reason", reason, err)) == SY_CLIENT_OK)
		return sy_cl_commit(c, err);
	sy_cl_rollback(c);
	return rc;
}

/* The errors every route shares; true when handled. */
static bool common_error(sy_client *c, const char *code, sy_client_rc *rc, sy_client_error *err)
{
	if (strcmp(code, "client_retired") == 0) {
		/* doc/contract.md#client-retries: a retired client can never reconnect: the store
		 * becomes read-only. */
		c->retired = true;
		c->stopped = true;
		*rc = set_flag(c, "retired", "client_retired", err);
		if (*rc == SY_CLIENT_OK)
			*rc = sy_cl_fail(err, SY_CLIENT_EREADONLY,
			                 "the server retired this client");
		set_phase(c, SY_PHASE_STOPPED);
		return true;
	}
	if (strcmp(code, "client_generation_expired") == 0) {
		c->need_connect = true;
		return true;
	}
	if (strcmp(code, "schema_mismatch") == 0) {
		c->need_schema = true;
		return true;
	}
	if (strcmp(code, "auth_required") == 0 || strcmp(code, "upgrade_required") == 0) {
		c->stopped = true;
		set_phase(c, SY_PHASE_STOPPED);
		*rc = sy_cl_fail(err, SY_CLIENT_ESERVER, "%s", code);
		return true;
	}
	return false;
}

static sy_client_rc on_connect(sy_client *c, const sy_client_response *r, sy_client_error *err)
{
	sy_error e = {0};
	sy_json_doc *d = sy_json_parse(r->body, r->body_len, &e);
	const sy_json *root = d ? sy_json_doc_root(d) : NULL;
	uint64_t gen = 0;
	sy_schema_ref ref;
	const char *id = root ? sy_cl_jstr(root, "client_id") : NULL;
	sy_client_rc rc = SY_CLIENT_OK;
	if (id == NULL || strcmp(id, c->client_id) != 0 ||
	    !sy_generation_parse(sy_json_get(root, "client_generation"), &gen) ||
	    !sy_schema_ref_parse(sy_json_get(root, "schema"), &ref)) {
		rc = sy_cl_fail(err, SY_CLIENT_EPROTOCOL, "connect response: malformed");
		goto done;
	}
	if ((rc = sy_cl_begin(c, err)) == SY_CLIENT_OK &&
	    (rc = sy_cl_meta_set_int(c, "generation", (int64_t)gen, err)) == SY_CLIENT_OK)
		rc = sy_cl_commit(c, err);
	else
		sy_cl_rollback(c);
	if (rc == SY_CLIENT_OK) {
		c->generation = gen;
		c->need_connect = false;
		if (ref.version != c->schema.version || strcmp(ref.hash, c->schema.hash) != 0)
			c->need_schema = true;
	}
done:
	sy_json_doc_free(d);
	return rc;
}

static sy_client_rc on_schema(sy_client *c, const sy_client_response *r, sy_client_error *err)
{
	sy_error e = {0};
	sy_json_doc *d = sy_json_parse(r->body, r->body_len, &e);
	const sy_json *root = d ? sy_json_doc_root(d) : NULL;
	sy_schema_ref ref;
	sy_manifest *m = NULL;
	sy_client_rc rc = SY_CLIENT_OK;
	if (root == NULL || !sy_schema_ref_parse(sy_json_get(root, "schema"), &ref) ||
	    sy_json_get(root, "manifest") == NULL ||
	    (m = sy_manifest_parse_json(sy_json_get(root, "manifest"), &e)) == NULL ||
	    strcmp(m->hash, ref.hash) != 0) {
		/* The manifest must be exactly the one its reference names. */
		rc = sy_cl_fail(err, SY_CLIENT_EPROTOCOL, "schema response: malformed");
		goto done;
	}
	if ((rc = sy_cl_begin(c, err)) != SY_CLIENT_OK)
		goto done;
	rc = sy_cl_schema_store(c, &ref, m->canonical, m->canonical_len, true, err);
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_commit(c, err);
	else
		sy_cl_rollback(c);
	if (rc == SY_CLIENT_OK && (rc = sy_cl_load_state(c, err)) == SY_CLIENT_OK)
		c->need_schema = false;
done:
	sy_manifest_free(m);
	sy_json_doc_free(d);
	return rc;
}

/*
 * A 200 arrived for batch: the batch sealed ahead goes out now, and this one is
 * reconciled while it is in flight. Safe: a younger batch is sent only after
 * every older one was answered with a 200 (executed: only a replay can answer it
 * again), and its rows are disjoint from theirs (later intents of those rows wait).
 */
static sy_client_rc pipeline_next(sy_client *c, const char *batch, sy_client_error *err)
{
	char id[SY_UUID_LEN + 1];
	char *body = NULL;
	size_t len = 0;
	if (c->frozen || c->retired || c->need_connect || c->need_schema)
		return SY_CLIENT_OK;
	sy_client_rc rc = unsettled(c, batch, id, &body, &len, err);
	if (rc != SY_CLIENT_OK || body == NULL)
		return rc;
	memcpy(c->inflight_batch, id, sizeof id);
	return start(c, SY_CL_REQ_PUSH, "POST", "/v3/push", body, len, SY_PHASE_PUSHING);
}

static sy_client_rc on_push(sy_client *c, const sy_client_response *r, int64_t now,
                            sy_client_error *err)
{
	/* the batch the answered push carried is named */
	assert(c->inflight_batch[0] != '\0');
	char code[48], msg[256];
	char batch[SY_UUID_LEN + 1];
	memcpy(batch, c->inflight_batch, sizeof batch);
	sy_client_rc rc = SY_CLIENT_OK;
	if (r->status == 200) {
		if ((rc = pipeline_next(c, batch, err)) != SY_CLIENT_OK)
			return rc;
		rc = sy_cl_reconcile(c, batch, r->body, r->body_len, r->status,
		                     c->inflight == SY_CL_REQ_PUSH, err);
		if (rc == SY_CLIENT_EPROTOCOL) {
			/* Not applied; the same bytes go again and the replay is checked again. */
			note_error(c, "invalid_response", true, err ? err->message : "");
			sy_client_rc r2 = sy_cl_attempt_log(c, batch, r, err);
			retry_later(c, &(sy_client_response){.retry_after_s = -1}, now);
			return r2;
		}
		if (rc == SY_CLIENT_OK) {
			c->backoff_ms = 0;
			c->last_error[0] = '\0';
		}
		return rc;
	}
	if ((rc = sy_cl_attempt_log(c, batch, r, err)) != SY_CLIENT_OK)
		return rc;
	if (r->status == 0) {
		note_error(c, "network", true, "no response");
		retry_later(c, r, now);
		return SY_CLIENT_OK;
	}
	error_code(r, code, sizeof code, msg, sizeof msg);
	if (r->status == 408 || r->status == 429 || r->status >= 500) {
		/* 429/503: the retry of doc/contract.md#client-retries. A 408 says the body did not
		 * arrive in time, so nothing ran. Any other 5xx is no answer of the protocol (a
		 * gateway's 502/504 page, a server fault). Each is retried as when no answer came:
		 * the same bytes again after a backoff; the queue is never frozen by it. */
		note_error(c, code, true, msg);
		retry_later(c, r, now);
		return SY_CLIENT_OK;
	}
	note_error(c, code, false, msg);
	if (strcmp(code, "client_generation_expired") == 0 ||
	    strcmp(code, "schema_mismatch") == 0) {
		/* doc/contract.md#successor-batches: the rejected batch is kept and never sent
		 * again; a successor follows. */
		sy_client_rc r2 = sy_cl_begin(c, err);
		if (r2 == SY_CLIENT_OK &&
		    (r2 = sy_cl_meta_set(c, "successor_for", batch, err)) == SY_CLIENT_OK)
			r2 = sy_cl_commit(c, err);
		else
			sy_cl_rollback(c);
		if (r2 != SY_CLIENT_OK)
			return r2;
	}
	if (common_error(c, code, &rc, err))
		return rc;
	/* idempotency_conflict, invalid_request and anything unknown: a client bug. */
	c->frozen = true;
	if ((rc = set_flag(c, "frozen", code, err)) != SY_CLIENT_OK)
		return rc;
	return sy_cl_fail(err, SY_CLIENT_EFROZEN, "push refused (%s): the queue is frozen", code);
}

/* A rebuild page passed its checks: the next is asked for now, read by the server while this
 * one is applied. Each applies only over the token it was asked with, and a failed page cancels
 * it (cancel_ahead). Nothing goes ahead of a push decide() would send first. */
static sy_client_rc rebuild_ahead(sy_client *c, const char *token, sy_client_error *err)
{
	bool due = false;
	if (c->inflight != SY_CL_REQ_NONE || c->need_connect || c->need_schema || c->stopped)
		return SY_CLIENT_OK;
	sy_client_rc rc = sy_cl_push_due(c, &due, err);
	if (rc != SY_CLIENT_OK || due)
		return rc;
	sy_buf b = SY_BUF_INIT;
	if ((rc = sy_cl_rebuild_body_after(c, token, &b, err)) != SY_CLIENT_OK) {
		sy_buf_free(&b);
		return rc;
	}
	size_t len = b.len;
	return start(c, SY_CL_REQ_REBUILD, "POST", "/v3/rebuild", sy_buf_steal(&b, NULL), len,
	             SY_PHASE_REBUILDING);
}

/* The page asked for ahead of one that failed is not wanted: the next step asks again. */
static void cancel_ahead(sy_client *c)
{
	if (c->inflight == SY_CL_REQ_NONE)
		return;
	if (c->tr.cancel != NULL)
		c->tr.cancel(c->tr.ctx);
	c->inflight = SY_CL_REQ_NONE;
	sy_free(c->done.body);
	memset(&c->done, 0, sizeof c->done);
	c->done_ready = false;
	sy_free(c->inflight_body);
	c->inflight_body = NULL;
}

static sy_client_rc on_pull(sy_client *c, bool rebuild, const sy_client_response *r, int64_t now,
                            sy_client_error *err)
{
	char code[48], msg[256];
	sy_client_rc rc = SY_CLIENT_OK;
	if (r->status == 200) {
		bool more = false;
		rc = sy_cl_pull_apply(c, rebuild, r->body, r->body_len,
		                      rebuild ? rebuild_ahead : NULL, &more, err);
		if (rc != SY_CLIENT_OK)
			cancel_ahead(c);
		if (rc == SY_CLIENT_EPROTOCOL) {
			note_error(c, "invalid_response", true, err ? err->message : "");
			retry_later(c, &(sy_client_response){.retry_after_s = -1}, now);
			return SY_CLIENT_OK;
		}
		if (rc == SY_CLIENT_OK) {
			/* As after a push: status no longer reports an error the retry got past. */
			c->backoff_ms = 0;
			c->last_error[0] = '\0';
			if (!rebuild && !more)
				c->pull_caught_up = true;
		}
		return rc;
	}
	if (r->status == 0) {
		note_error(c, "network", true, "no response");
		retry_later(c, r, now);
		return SY_CLIENT_OK;
	}
	error_code(r, code, sizeof code, msg, sizeof msg);
	note_error(c, code, r->status == 429 || r->status == 503, msg);
	if (r->status == 429 || r->status == 503) {
		retry_later(c, r, now);
		return SY_CLIENT_OK;
	}
	if (strcmp(code, "rebuild_required") == 0 || strcmp(code, "cursor_expired") == 0 ||
	    strcmp(code, "rebuild_invalidated") == 0)
		return sy_cl_rebuild_start(c, err);
	if (common_error(c, code, &rc, err))
		return rc;
	retry_later(c, &(sy_client_response){.retry_after_s = -1}, now);
	return SY_CLIENT_OK;
}

static sy_client_rc on_response(sy_client *c, sy_cl_req kind, const sy_client_response *r,
                                int64_t now, sy_client_error *err)
{
	/* the answered request is no longer in flight */
	assert(kind != SY_CL_REQ_NONE && c->inflight == SY_CL_REQ_NONE);
	char code[48], msg[256];
	switch (kind) {
	case SY_CL_REQ_PUSH: return on_push(c, r, now, err);
	case SY_CL_REQ_PULL: return on_pull(c, false, r, now, err);
	case SY_CL_REQ_REBUILD: return on_pull(c, true, r, now, err);
	case SY_CL_REQ_CONNECT:
	case SY_CL_REQ_SCHEMA:
		if (r->status == 200) {
			sy_client_rc rc = kind == SY_CL_REQ_CONNECT ? on_connect(c, r, err)
			                                            : on_schema(c, r, err);
			if (rc == SY_CLIENT_EPROTOCOL) {
				note_error(c, "invalid_response", true, err ? err->message : "");
				retry_later(c, &(sy_client_response){.retry_after_s = -1}, now);
				return SY_CLIENT_OK;
			}
			return rc;
		}
		if (r->status == 0) {
			note_error(c, "network", true, "no response");
			retry_later(c, r, now);
			return SY_CLIENT_OK;
		}
		error_code(r, code, sizeof code, msg, sizeof msg);
		note_error(c, code, r->status == 429 || r->status == 503, msg);
		sy_client_rc rc = SY_CLIENT_OK;
		if (r->status != 429 && r->status != 503 && common_error(c, code, &rc, err))
			return rc;
		retry_later(c, r, now);
		return SY_CLIENT_OK;
	case SY_CL_REQ_NONE: break;
	}
	return SY_CLIENT_OK;
}

static sy_client_rc start(sy_client *c, sy_cl_req kind, const char *method, const char *path,
                          char *body, size_t len, sy_client_phase phase)
{
	/* one request at a time: a new one only when none is in flight */
	assert(c->inflight == SY_CL_REQ_NONE && kind != SY_CL_REQ_NONE);
	sy_free(c->inflight_body);
	c->inflight_body = body;
	c->inflight_len = len;
	c->inflight = kind;
	c->inflight_method = method;
	c->inflight_path = path;
	c->auth_retried = false;
	c->sealed_ahead = false;
	set_phase(c, phase);
	if (c->token == NULL && c->token_fn != NULL)
		(void)sy_cl_token_take(c, c->token_fn(c->token_ctx));
	send_inflight(c);
	return SY_CLIENT_OK;
}

/*
 * A 401 under a bearer token: asks token_fn for a fresh one and sends the same request
 * again, once, with the same bytes (a sealed batch's included). True when it went again.
 */
static bool retry_with_fresh_token(sy_client *c, sy_client_response *r)
{
	if (r->status != 401 || c->token_fn == NULL || c->auth_retried)
		return false;
	if (!sy_cl_token_take(c, c->token_fn(c->token_ctx)))
		return false;
	c->auth_retried = true;
	sy_free(r->body);
	memset(r, 0, sizeof *r);
	send_inflight(c);
	return true;
}

static void send_inflight(sy_client *c)
{
	sy_client_request req = {.method = c->inflight_method,
	                         .path = c->inflight_path,
	                         .body = c->inflight_body,
	                         .body_len = c->inflight_len,
	                         .token = c->token};
	if (!c->tr.start(c->tr.ctx, &req)) {
		/* Could not start: answered as "no response" (status 0). */
		memset(&c->done, 0, sizeof c->done);
		c->done.retry_after_s = -1;
		c->done_ready = true;
	}
}

/* The oldest unsettled sealed batch: its id and exact bytes (new), or none. */
static sy_client_rc unsettled(sy_client *c, const char *skip, char id[SY_UUID_LEN + 1], char **body,
                              size_t *len, sy_client_error *err)
{
	sqlite3_stmt *st;
	*body = NULL;
	sy_client_rc rc = sy_cl_prepare(c,
	                                "SELECT batch_id, body FROM batches WHERE state = 'sealed'"
	                                " AND (?1 IS NULL OR batch_id <> ?1) ORDER BY seq LIMIT 1",
	                                &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	if (skip != NULL)
		sqlite3_bind_text(st, 1, skip, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		snprintf(id, SY_UUID_LEN + 1, "%s", (const char *)sqlite3_column_text(st, 0));
		*len = (size_t)sqlite3_column_bytes(st, 1);
		*body = sy_malloc(*len + 1);
		if (*body == NULL)
			rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
		else {
			memcpy(*body, sqlite3_column_blob(st, 1), *len);
			(*body)[*len] = '\0';
		}
	}
	sqlite3_finalize(st);
	return rc;
}

static sy_client_rc successors(sy_client *c, sy_client_error *err)
{
	sqlite3_stmt *st;
	char(*ids)[SY_UUID_LEN + 1] = NULL;
	size_t n = 0;
	sy_client_rc rc = sy_cl_prepare(
	        c, "SELECT batch_id FROM batches WHERE state = 'sealed' ORDER BY seq", &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	while (sqlite3_step(st) == SQLITE_ROW) {
		char(*nv)[SY_UUID_LEN + 1] = sy_realloc(ids, (n + 1) * sizeof *ids);
		if (nv == NULL) {
			rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
			break;
		}
		ids = nv;
		snprintf(ids[n++], SY_UUID_LEN + 1, "%s", (const char *)sqlite3_column_text(st, 0));
	}
	sqlite3_finalize(st);
	for (size_t i = 0; i < n && rc == SY_CLIENT_OK; i++)
		rc = sy_cl_seal_successor(c, ids[i], err);
	sy_free(ids);
	return rc;
}

static sy_client_rc next_push(sy_client *c, bool *started, sy_client_error *err)
{
	char id[SY_UUID_LEN + 1];
	char *body = NULL, *succ = NULL;
	size_t len = 0;
	*started = false;
	sy_client_rc rc = unsettled(c, NULL, id, &body, &len, err);
	if (rc == SY_CLIENT_OK && body != NULL) {
		rc = sy_cl_meta_get(c, "successor_for", &succ, err);
		if (rc == SY_CLIENT_OK && succ != NULL && strcmp(succ, id) == 0) {
			sy_free(body);
			body = NULL;
			/*
			 * Every unsettled batch gets its successor, in order: only the oldest is
			 * ever sent, so the younger ones (sealed ahead) never left the device.
			 * The successors and the cleared marker: separate commits; after a crash
			 * in between, the next 409/422 repeats the step for what is left.
			 */
			rc = successors(c, err);
			if (rc == SY_CLIENT_OK)
				rc = sy_cl_exec(c, "DELETE FROM meta WHERE key = 'successor_for'",
				                err);
			if (rc == SY_CLIENT_OK)
				rc = unsettled(c, NULL, id, &body, &len, err);
		}
	}
	sy_free(succ);
	if (rc == SY_CLIENT_OK && body == NULL) {
		bool sealed = false;
		rc = sy_cl_seal_next(c, &sealed, err);
		if (rc == SY_CLIENT_OK && sealed)
			rc = unsettled(c, NULL, id, &body, &len, err);
	}
	if (rc != SY_CLIENT_OK || body == NULL) {
		sy_free(body);
		return rc;
	}
	memcpy(c->inflight_batch, id, sizeof id);
	*started = true;
	return start(c, SY_CL_REQ_PUSH, "POST", "/v3/push", body, len, SY_PHASE_PUSHING);
}

static sy_client_rc decide(sy_client *c, int64_t now, sy_client_error *err)
{
	sy_buf b = SY_BUF_INIT;
	sy_client_rc rc;
	if (c->need_connect || c->generation == 0) {
		if (!sy_buf_printf(&b, "{\"client_id\":\"%s\"}", c->client_id))
			return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
		/* The length before the steal: argument order is unspecified (clang: 0 bytes). */
		size_t len = b.len;
		return start(c, SY_CL_REQ_CONNECT, "POST", "/v3/connect", sy_buf_steal(&b, NULL),
		             len, SY_PHASE_CONNECTING);
	}
	if (c->need_schema || c->manifest == NULL)
		return start(c, SY_CL_REQ_SCHEMA, "GET", "/v3/schema", NULL, 0, SY_PHASE_SCHEMA);
	if (!c->frozen && !c->retired) {
		bool started = false;
		if ((rc = next_push(c, &started, err)) != SY_CLIENT_OK || started)
			return rc;
	}
	char *rid = NULL, *cursor = NULL;
	if ((rc = sy_cl_meta_get(c, "rebuild_id", &rid, err)) == SY_CLIENT_OK)
		rc = sy_cl_meta_get(c, "cursor", &cursor, err);
	bool rebuild = rid != NULL || cursor == NULL;
	sy_free(rid);
	sy_free(cursor);
	if (rc != SY_CLIENT_OK)
		return rc;
	if (rebuild || !c->pull_caught_up) {
		if (rebuild && (rc = sy_cl_meta_get(c, "rebuild_id", &rid, err)) == SY_CLIENT_OK &&
		    rid == NULL)
			rc = sy_cl_rebuild_start(c, err);
		sy_free(rid);
		if (rc == SY_CLIENT_OK)
			rc = sy_cl_pull_body(c, rebuild, &b, err);
		if (rc != SY_CLIENT_OK) {
			sy_buf_free(&b);
			return rc;
		}
		size_t len = b.len;
		return start(c, rebuild ? SY_CL_REQ_REBUILD : SY_CL_REQ_PULL, "POST",
		             rebuild ? "/v3/rebuild" : "/v3/pull", sy_buf_steal(&b, NULL), len,
		             rebuild ? SY_PHASE_REBUILDING : SY_PHASE_PULLING);
	}
	set_phase(c, SY_PHASE_IDLE);
	c->next_due_ms = now + c->poll_interval_ms;
	return SY_CLIENT_OK;
}

/*
 * While a batch is in flight, the next one is sealed (once): the sealing work
 * overlaps the server's. Sealing ahead is safe because only the oldest unsettled
 * batch is ever sent, and rows of the batch in flight are left waiting.
 */
static sy_client_rc seal_ahead(sy_client *c, sy_client_error *err)
{
	if (c->inflight != SY_CL_REQ_PUSH || c->sealed_ahead || c->frozen || c->retired)
		return SY_CLIENT_OK;
	c->sealed_ahead = true;
	char id[SY_UUID_LEN + 1];
	sy_push_request *req = NULL;
	bool ran = false;
	sy_client_rc rc = sy_cl_begin(c, err);
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_seal_ahead(c, &ran, id, &req, err);
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_commit(c, err);
	else
		sy_cl_rollback(c);
	if (rc == SY_CLIENT_OK && req != NULL) {
		sy_cl_req_put(c, id, req);
		req = NULL;
	}
	sy_push_request_free(req);
	if (rc == SY_CLIENT_OK && !ran) {
		/* The sealing failed and was undone: once more on its own, to report why. */
		bool sealed = false;
		rc = sy_cl_seal_next(c, &sealed, err);
	}
	return rc;
}

int sy_cl_retry_after(const char *value, size_t len)
{
	char tmp[32];
	if (len >= sizeof tmp)
		len = sizeof tmp - 1;
	memcpy(tmp, value, len);
	tmp[len] = '\0';
	char *end;
	long v = strtol(tmp, &end, 10);
	return end != tmp && v >= 0 && v < 86400 ? (int)v : -1;
}

/* The wall clock went back (the device's clock was stepped) by how much since *seen; *seen
 * becomes now. */
static int64_t stepped_back(int64_t *seen, int64_t now)
{
	int64_t back = *seen > now ? *seen - now : 0;
	*seen = now;
	return back;
}

static sy_client_rc step(sy_client *c, int64_t *next_due_ms, sy_client_error *err)
{
	int64_t now = sy_cl_now(c);
	/* A due time is a delay from when it was set: a step back of the device's clock moves
	 * it back too, or a Retry-After of seconds would wait for the step's hours. */
	int64_t back = stepped_back(&c->clock_seen_ms, now);
	if (back > 0 && c->next_due_ms > 0)
		c->next_due_ms -= back;
	sy_client_rc rc = SY_CLIENT_OK;
	*next_due_ms = now;
	sy_cl_live_step(c, now);
	if (c->inflight != SY_CL_REQ_NONE) {
		if (!c->done_ready && c->tr.poll(c->tr.ctx, 0, &c->done) == 1)
			c->done_ready = true;
		if (!c->done_ready) {
			*next_due_ms = now + 10;
			return seal_ahead(c, err);
		}
		c->done_ready = false;
		if (retry_with_fresh_token(c, &c->done)) {
			*next_due_ms = now;
			return SY_CLIENT_OK;
		}
		sy_cl_req kind = c->inflight;
		sy_client_response r = c->done;
		c->inflight = SY_CL_REQ_NONE;
		memset(&c->done, 0, sizeof c->done);
		/* on_response may start the next request (pipelining): this one is done */
		sy_free(c->inflight_body);
		c->inflight_body = NULL;
		rc = on_response(c, kind, &r, now, err);
		sy_free(r.body);
		*next_due_ms = c->next_due_ms > now ? c->next_due_ms : now;
		return rc;
	}
	if (c->retired)
		return sy_cl_fail(err, SY_CLIENT_EREADONLY, "the server retired this client");
	if (c->stopped) {
		*next_due_ms = INT64_MAX;
		return sy_cl_fail(err, SY_CLIENT_ESERVER, "stopped: %s", c->last_error);
	}
	if (now < c->next_due_ms) {
		*next_due_ms = c->next_due_ms;
		return SY_CLIENT_OK;
	}
	/* Idle until now: the poll interval passed, so a pull is due again. */
	if (c->phase == SY_PHASE_IDLE)
		c->pull_caught_up = false;
	rc = decide(c, now, err);
	*next_due_ms = c->inflight != SY_CL_REQ_NONE ? now : c->next_due_ms;
	return rc;
}

static void pause_ms(sy_client *c, int64_t ms);

void sy_client_wait(sy_client *c, int timeout_ms)
{
	if (c->done_ready)
		return;
	if (c->inflight != SY_CL_REQ_NONE) {
		if (c->tr.poll(c->tr.ctx, timeout_ms, &c->done) == 1)
			c->done_ready = true;
		return;
	}
	if (!sy_cl_live_wait(c, timeout_ms))
		pause_ms(c, timeout_ms);
}

static void pause_ms(sy_client *c, int64_t ms)
{
	if (ms <= 0)
		return;
	if (c->sleep_ms != NULL) {
		c->sleep_ms(c->clock_ctx, ms);
		return;
	}
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

sy_client_rc sy_client_step(sy_client *c, int64_t *next_due_ms, sy_client_error *err)
{
	sy_client_rc rc = step(c, next_due_ms, err);
	/* a change committed without an event (sealing, a group blocked) still reaches them */
	sy_cl_live_run(c);
	return rc;
}

sy_client_rc sy_client_sync(sy_client *c, int timeout_ms, sy_client_error *err)
{
	int64_t start_ms = sy_cl_now(c), seen = start_ms;
	int64_t deadline = timeout_ms > 0 ? start_ms + timeout_ms : INT64_MAX;
	sy_client_kick(c);
	for (;;) {
		int64_t next;
		sy_client_rc rc = sy_client_step(c, &next, err);
		if (rc != SY_CLIENT_OK)
			return rc;
		int64_t now = sy_cl_now(c);
		/* the timeout is a duration: a step back of the clock does not lengthen it */
		int64_t back = stepped_back(&seen, now);
		if (back > 0 && deadline != INT64_MAX)
			deadline -= back;
		if (c->inflight != SY_CL_REQ_NONE) {
			int64_t left = deadline - now;
			if (left <= 0)
				return sy_cl_fail(err, SY_CLIENT_ETIMEOUT, "sync: out of time");
			/* A push just went: one more step before waiting, which seals the next
			 * batch while this one is on the server (seal_ahead), instead of after
			 * its answer (the first batch of a sync went unpipelined). */
			if (c->inflight == SY_CL_REQ_PUSH && !c->sealed_ahead && !c->frozen &&
			    !c->retired)
				continue;
			sy_client_wait(c, left > 1000 ? 1000 : (int)left);
			continue;
		}
		if (c->phase == SY_PHASE_IDLE) {
			if (c->frozen)
				return sy_cl_fail(err, SY_CLIENT_EFROZEN,
				                  "the queue is frozen: nothing more is sent");
			return SY_CLIENT_OK;
		}
		if (now >= deadline)
			return sy_cl_fail(err, SY_CLIENT_ETIMEOUT, "sync: out of time (%s)",
			                  c->last_error[0] ? c->last_error : "busy");
		if (next > now) {
			int64_t ms = (next < deadline ? next : deadline) - now;
			pause_ms(c, ms);
			seen += ms; /* it slept that long, whatever the clock says */
		}
	}
}
