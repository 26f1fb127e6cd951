/* SPDX-License-Identifier: BSD-2-Clause */
/* POST /v3/push: the ADR's dispatch. The HTTP side is here; the gates that need the
 * database, replay and the first-execution transaction are src/store/push.c. */
#include "config.h"

#include <string.h>

#include "common/log.h"
#include "fcgi/admission.h"
#include "fcgi/responder.h"
#include "store/conn.h"
#include "store/push.h"
#include "synchro/fingerprint.h"
#include "synchro/push.h"

/*
 * The push state of this process (statements prepared on its connection, manifests
 * read): a responder serves one request at a time and keeps one connection.
 */
static sy_store_push *push_state;

/* What the admission callbacks need: the responder's slot and the request's batch. */
typedef struct {
	sy_responder *r;
	const char *batch_id;
} admit_ctx;

static bool admit(void *arg, const char *client_id)
{
	admit_ctx *a = arg;
	if (a->r->admission == NULL)
		return true;
	return sy_admission_enter(a->r->admission, a->r->slot, client_id, a->batch_id);
}

static void leave(void *arg)
{
	admit_ctx *a = arg;
	if (a->r->admission != NULL)
		sy_admission_leave(a->r->admission, a->r->slot);
}

void sy_route_push(sy_responder *r, sy_http *h)
{
	const char *user;
	sy_error err = {0};
	sy_push_request *req = NULL;
	sy_store_push_answer ans;

	memset(&ans, 0, sizeof ans);
	/* ADR dispatch: authentication, protocol gate, then structural validation. */
	if (!sy_responder_gates(r, h, &user))
		return;
	if (!sy_fp_user_valid(user, strlen(user), &err)) {
		sy_responder_error(r, h, SY_ERR_AUTH_REQUIRED, "authentication required");
		return;
	}
	/* The 1 MiB cap applies to CONTENT_LENGTH before a byte is read. */
	if (!sy_http_read_body(h, SY_PUSH_MAX_BODY, &err)) {
		sy_responder_error(r, h,
		                   err.code == SY_ERR_NOMEM ? SY_ERR_TEMPORARY_UNAVAILABLE
		                                            : SY_ERR_INVALID_REQUEST,
		                   err.message);
		return;
	}
	req = sy_push_parse(h->body, h->body_len, &err);
	if (req == NULL) {
		if (err.code == SY_ERR_NOMEM)
			sy_responder_error(r, h, SY_ERR_TEMPORARY_UNAVAILABLE,
			                   "request could not be committed");
		else
			sy_responder_error(r, h, SY_ERR_INVALID_REQUEST, err.message);
		return;
	}
	PGconn *c = sy_responder_db(r, &err);
	if (c == NULL) {
		sy_responder_error(r, h, SY_ERR_TEMPORARY_UNAVAILABLE, "database unavailable");
		goto done;
	}
	if (push_state == NULL && (push_state = sy_store_push_new()) == NULL) {
		sy_responder_error(r, h, SY_ERR_TEMPORARY_UNAVAILABLE,
		                   "request could not be committed");
		goto done;
	}
	admit_ctx actx = {r, req->batch_id};
	sy_store_push_params prm = {
	        .user = user,
	        .req = req,
	        .lock_timeout_ms = r->lock_timeout_ms,
	        .admit = admit,
	        .leave = leave,
	        .admit_arg = &actx,
	};
	sy_store_status st = sy_store_push_handle(push_state, c, &prm, &ans, &err);
	if (st != SY_STORE_OK) {
		/* err holds step names and SQLSTATEs only, never values. */
		sy_log(SY_LOG_WARNING, "push batch %s: %s", req->batch_id, err.message);
		if (st == SY_STORE_CONNECTION && !sy_responder_db_check(r)) {
			/* Alive but out of step (left in a pipeline): a new session is needed. */
			sy_store_disconnect(r->pg);
			r->pg = NULL;
		}
	}
	sy_log(SY_LOG_DEBUG,
	       "push batch %s: status %d%s, %zu mutations, %zu applied, %u attempts, %u round "
	       "trips",
	       req->batch_id, ans.http_status, ans.replay ? " (replay)" : "", req->mutation_count,
	       ans.applied, ans.attempts, ans.round_trips);
	if (ans.error == SY_ERR_NONE)
		sy_http_json(h, ans.http_status, &ans.body,
		             ans.replay ? "Synchro-Replay: batch\r\n" : NULL);
	else if (ans.error == SY_ERR_SCHEMA_MISMATCH)
		sy_http_error(h, ans.error, ans.message, r->retry_after_s, &ans.current,
		              &ans.received);
	else
		sy_responder_error(r, h, ans.error, ans.message);
done:
	sy_store_push_answer_clear(&ans);
	sy_push_request_free(req);
}
