/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client.c: libsynchro-client's client: opening and closing it, names and status.
 *
 * Layer: middle of src/client (doc/hacking.md).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "synchro/alloc.h"

void *sy_client_alloc(size_t n)
{
	return sy_malloc(n);
}

void sy_client_free(void *p)
{
	sy_free(p);
}

const char *sy_client_rc_name(sy_client_rc rc)
{
	static const char *const names[] = {"ok",        "einval",    "enotfound", "estate",
	                                    "ereadonly", "efrozen",   "estore",    "enetwork",
	                                    "eserver",   "eprotocol", "etimeout",  "enomem"};
	return (unsigned)rc < sizeof names / sizeof names[0] ? names[rc] : "unknown";
}

sy_client_rc sy_client_open(const char *path, const sy_client_options *opts, sy_client **out,
                            sy_client_error *err)
{
	static const sy_client_options none;
	if (opts == NULL)
		opts = &none;
	*out = NULL;
	sy_client *c = sy_calloc(1, sizeof *c);
	if (c == NULL) {
		if (opts->transport != NULL && opts->transport->destroy != NULL)
			opts->transport->destroy(opts->transport->ctx);
		return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	}
	c->clock_ms = opts->clock_ms;
	c->sleep_ms = opts->sleep_ms;
	c->clock_ctx = opts->clock_ctx;
	c->listener = opts->listener;
	c->listener_ctx = opts->listener_ctx;
	c->pull_limit = opts->pull_limit ? opts->pull_limit : 500;
	if (c->pull_limit > 1000)
		c->pull_limit = 1000;
	/* A rebuild's pages are the server's largest unless the app chose a page size: fewer
	 * round trips and commits for a first sync. */
	c->rebuild_limit = opts->pull_limit ? c->pull_limit : 1000;
	c->batch_max = opts->batch_max ? opts->batch_max : SY_PUSH_MAX_MUTATIONS;
	if (c->batch_max > SY_PUSH_MAX_MUTATIONS)
		c->batch_max = SY_PUSH_MAX_MUTATIONS;
	c->poll_interval_ms = opts->poll_interval_ms ? opts->poll_interval_ms : 30000;
	c->token_fn = opts->token_fn;
	c->token_ctx = opts->token_ctx;
	sy_client_rc rc = SY_CLIENT_OK;
	if ((opts->token != NULL || opts->token_fn != NULL) && opts->user != NULL)
		rc = sy_cl_fail(err, SY_CLIENT_EINVAL, "both a bearer token and a user: give one");
	else if (opts->token != NULL && !sy_cl_token_ok(opts->token))
		rc = sy_cl_fail(err, SY_CLIENT_EINVAL,
		                "the bearer token is empty or has a space or control character");
	else if (opts->token != NULL &&
	         (c->token = sy_strndup(opts->token, strlen(opts->token))) == NULL)
		rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	if (rc != SY_CLIENT_OK) {
		if (opts->transport != NULL && opts->transport->destroy != NULL)
			opts->transport->destroy(opts->transport->ctx);
	} else if (opts->transport != NULL) {
		c->tr = *opts->transport;
	} else if (opts->url != NULL) {
#ifdef SY_WEB
		rc = sy_cl_fail(err, SY_CLIENT_EINVAL,
		                "no transport: this build has no libcurl (src/web passes fetch's)");
#else
		rc = sy_cl_curl_transport(opts->url, opts->user, opts->password,
		                          opts->request_timeout_s, &c->tr, err);
#endif
	}
	if (rc == SY_CLIENT_OK && opts->transport == NULL && opts->url != NULL && !opts->live_off)
		rc = sy_cl_live_open(c, opts->url, opts->user, opts->password, err);
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_store_open(c, path, err);
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_load_state(c, err);
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_visible_open(c, err);
	if (rc != SY_CLIENT_OK) {
		sy_client_close(c);
		return rc;
	}
	c->phase = c->retired ? SY_PHASE_STOPPED : SY_PHASE_IDLE;
	*out = c;
	return SY_CLIENT_OK;
}

void sy_client_close(sy_client *c)
{
	if (c == NULL)
		return;
	if (c->inflight != SY_CL_REQ_NONE && c->tr.cancel != NULL)
		c->tr.cancel(c->tr.ctx);
	if (c->tr.destroy != NULL)
		c->tr.destroy(c->tr.ctx);
	sy_cl_live_close(c);
	sy_free(c->done.body);
	sy_free(c->inflight_body);
	sy_free(c->rebuild_asked);
	sy_manifest_free(c->manifest);
	sy_cl_query_free(c);
	sy_cl_visible_free(c);
	sy_cl_cache_free(c);
	sy_cl_req_free(c);
	sy_cl_wipe_free(c->token);
	if (c->db != NULL)
		sqlite3_close(c->db);
	sy_free(c);
}

const char *sy_client_id(const sy_client *c)
{
	return c->client_id;
}

const sy_manifest *sy_client_manifest(const sy_client *c)
{
	return c->manifest;
}

sy_client_rc sy_client_status_get(sy_client *c, sy_client_status *out, sy_client_error *err)
{
	memset(out, 0, sizeof *out);
	out->phase = c->stopped || c->retired ? SY_PHASE_STOPPED : c->phase;
	memcpy(out->client_id, c->client_id, sizeof out->client_id);
	out->generation = c->generation;
	out->schema_version = c->schema.version;
	memcpy(out->schema_hash, c->schema.hash, sizeof out->schema_hash);
	out->frozen = c->frozen;
	out->retired = c->retired;
	snprintf(out->last_error, sizeof out->last_error, "%s", c->last_error);
	snprintf(out->last_message, sizeof out->last_message, "%s", c->last_message);
	out->last_error_retryable = c->last_retryable;
	out->next_attempt_ms = c->next_due_ms;
	char *cursor = NULL, *rid = NULL, *reason = NULL, *got = NULL, *total = NULL;
	sy_client_rc rc = sy_cl_meta_get(c, "cursor", &cursor, err);
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_meta_get(c, "rebuild_received", &got, err);
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_meta_get(c, "rebuild_total", &total, err);
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_meta_get(c, "rebuild_id", &rid, err);
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_meta_get(c, "stop_reason", &reason, err);
	if (rc == SY_CLIENT_OK) {
		out->has_cursor = cursor != NULL;
		snprintf(out->cursor, sizeof out->cursor, "%s", cursor ? cursor : "");
		out->rebuilding = rid != NULL || cursor == NULL;
		out->rebuild_rows = got != NULL ? strtoull(got, NULL, 10) : 0;
		out->rebuild_total = total != NULL ? strtoll(total, NULL, 10) : -1;
		if (out->last_error[0] == '\0' && reason != NULL && (c->frozen || c->retired))
			snprintf(out->last_error, sizeof out->last_error, "%s", reason);
	}
	sy_free(cursor);
	sy_free(rid);
	sy_free(reason);
	sy_free(got);
	sy_free(total);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_stmt *st;
	if ((rc = sy_cl_prepare(c, "SELECT state, count(*) FROM intents GROUP BY state", &st,
	                        err)) != SY_CLIENT_OK)
		return rc;
	while (sqlite3_step(st) == SQLITE_ROW) {
		sy_intent_state s;
		if (sy_cl_state_from_name((const char *)sqlite3_column_text(st, 0), &s) ==
		    SY_CLIENT_OK)
			out->counts[s] = (size_t)sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	if ((rc = sy_cl_prepare(c, "SELECT count(*) FROM batches WHERE state = 'sealed'", &st,
	                        err)) != SY_CLIENT_OK)
		return rc;
	if (sqlite3_step(st) == SQLITE_ROW)
		out->unsettled_batches = (size_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return SY_CLIENT_OK;
}
