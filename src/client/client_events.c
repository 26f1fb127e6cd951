/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_events.c: what a change of the store tells the rest. It tells the application's
 * listener (intent, row and phase events, synchro/client.h) and the sync's schedule.
 *
 * Layer: base of src/client (doc/hacking.md).
 * Notes: sy_client_kick makes the next step due now after a local write or a sync call.
 * A server's Retry-After still stands.
 */
#include "config.h"

#include "client_internal.h"
#include "synchro/alloc.h"

void sy_cl_emit(sy_client *c, sy_client_event_kind kind, const char *table, const char *pk,
                const char *mutation_id)
{
	/* a committed change of visible rows: the live queries first, then the listener */
	if (c->live_hook != NULL && (c->nchanged > 0 || c->changed_all))
		c->live_hook(c);
	if (c->listener != NULL)
		c->listener(c->listener_ctx, kind, table, pk, mutation_id);
}

void sy_cl_emit_rows(sy_client *c, const sy_json *items)
{
	if (c->live_hook != NULL && (c->nchanged > 0 || c->changed_all))
		c->live_hook(c);
	if (c->listener == NULL || items == NULL || items->type != SY_JSON_ARRAY)
		return;
	for (size_t i = 0; i < items->u.array.count; i++) {
		const sy_json *it = items->u.array.items[i];
		const char *table = sy_cl_jstr(it, "table");
		const sy_json *pk = sy_json_get(it, "pk");
		char *pktext = pk ? sy_cl_jcs(sy_json_get(pk, "value"), NULL) : NULL;
		if (table != NULL && pktext != NULL)
			c->listener(c->listener_ctx, SY_CLIENT_EVENT_ROW, table, pktext,
			            sy_cl_jstr(it, "mutation_id"));
		sy_free(pktext);
	}
}

void sy_client_kick(sy_client *c)
{
	/* A retryable failure's delay stands: the Retry-After of a 429/503
	 * (doc/contract.md#retry-after), and the backoff after no answer or a broken one (so that
	 * local writes, each a kick, do not hammer a failing server). Otherwise the next step is
	 * due now. */
	if (c->phase == SY_PHASE_IDLE || c->last_error[0] == '\0' || !c->last_retryable)
		c->next_due_ms = 0;
	c->pull_caught_up = false;
}
