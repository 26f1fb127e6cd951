/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * route_push.c: POST /v3/push, the thin adapter of the dispatch order.
 *
 * Layer: middle of src/fcgi (doc/hacking.md).
 * Rules: doc/contract.md#push-request (the route), doc/contract.md#dispatch-order (the
 * order of its steps).
 * Notes: Authentication, the protocol gate and the body limit ran in the router
 * (router.c). Everything after them is one statement, synchro.synchro_push (src/pg):
 * structural validation, the gates that need the database, replay, admission and the first
 * execution. Its answer is sent as it came.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "fcgi/http.h"
#include "fcgi/inflight.h"
#include "fcgi/metrics.h"
#include "fcgi/router.h"
#include "store/cfg.h"
#include "store/conn.h"
#include "store/push_call.h"

/* The protocol's error code synchro_push named (for the metrics); SY_ERR_NONE for none. */
static sy_errcode errcode_named(const char *name)
{
	if (name[0] == '\0')
		return SY_ERR_NONE;
	for (int e = SY_ERR_NONE + 1; e < SY_ERR__COUNT; e++)
		if (strcmp(sy_errcode_name((sy_errcode)e), name) == 0)
			return (sy_errcode)e;
	return SY_ERR_NONE;
}

void sy_route_push(sy_responder *r, sy_http *h, const sy_request *req)
{
	sy_error err = {0};
	sy_store_push_answer ans;
	char sqlstate[6];

	memset(&ans, 0, sizeof ans);
	PGconn *c = sy_responder_db(r, &err);
	if (c == NULL) {
		sy_responder_error(r, h, SY_ERR_TEMPORARY_UNAVAILABLE, "database unavailable");
		return;
	}
	sy_store_push_params prm = {
	        .user = req->user,
	        .body = h->body,
	        .body_len = h->body_len,
	        .lock_timeout_ms = r->lock_timeout_ms,
	        .max_inflight = (int)sy_cfg_int(r->cfg, "fcgi", "max_inflight"),
	        .max_inflight_per_client =
	                (int)sy_cfg_int(r->cfg, "fcgi", "max_inflight_per_client"),
	        .retry_after_s = (int)r->retry_after_s,
	};
	/* The gauge of pushes in flight on this host (the caps are the database's). */
	sy_inflight_enter(r->inflight, r->slot);
	sy_store_status st = sy_store_push_call(c, &prm, &ans, sqlstate, &err);
	sy_inflight_leave(r->inflight, r->slot);
	if (st != SY_STORE_OK) {
		/* err holds the step and the SQLSTATE only, never values. */
		sy_log(SY_LOG_WARNING, "push: %s", err.message);
		if (st == SY_STORE_CONNECTION && !sy_responder_db_check(r)) {
			sy_store_disconnect(r->pg);
			r->pg = NULL;
		}
		sy_responder_error(r, h, SY_ERR_TEMPORARY_UNAVAILABLE,
		                   "request could not be committed");
		goto done;
	}
	sy_log(SY_LOG_DEBUG, "push: status %d%s", ans.http_status, ans.replay ? " (replay)" : "");
	/* Counted from synchro_push's own columns (migration 18): the body is not parsed. */
	sy_metrics_push(r->metrics, &ans);
	char headers[64] = "";
	if (ans.replay)
		snprintf(headers, sizeof headers, "Synchro-Replay: batch\r\n");
	else if (ans.retry_after > 0)
		snprintf(headers, sizeof headers, "Retry-After: %d\r\n", ans.retry_after);
	sy_http_json(h, ans.http_status, &ans.body, headers[0] != '\0' ? headers : NULL);
	h->error = errcode_named(ans.error);
done:
	sy_store_push_answer_clear(&ans);
}
