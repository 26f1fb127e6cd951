/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The example program of doc/client.md: an offline-first to-do list over
 * libsynchro-client. Usage: SYNCHRO_PASSWORD=... example_todo DB URL USER TITLE
 * (the password from the environment: a command line is visible to every user). It syncs (connect,
 * schema, rebuild or pull), adds one to-do, syncs again, explains anything that did not apply, and
 * prints the visible rows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>

#include "synchro/client.h"

static void on_event(void *ctx, sy_client_event_kind kind, const char *table, const char *pk,
                     const char *mutation_id)
{
	/* Runs on this thread, inside sy_client_step: update the UI here. */
	(void)ctx;
	(void)mutation_id;
	if (kind == SY_CLIENT_EVENT_ROW && table != NULL)
		fprintf(stderr, "changed: %s %s\n", table, pk);
}

static void print_row(void *ctx, const char *pk, const char *row, sy_client_row_state state)
{
	(void)ctx;
	printf("%s [%s] %s\n", pk, sy_client_row_state_name(state), row ? row : "(deleted)");
}

static void explain_unsettled(void *ctx, const sy_client_intent *i)
{
	sy_client *c = ctx;
	char *text = NULL;
	if (i->state == SY_INTENT_PENDING || i->state == SY_INTENT_SEALED)
		return; /* still on its way */
	if (sy_client_explain(c, i->mutation_id, &text, NULL) == SY_CLIENT_OK)
		printf("%s\n", text);
	sy_client_free(text);
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: SYNCHRO_PASSWORD=... example_todo DB URL USER TITLE\n");
		return 2;
	}
	sy_client_options opts = {
	        .url = argv[2],
	        .user = argv[3],
	        .password = getenv("SYNCHRO_PASSWORD"),
	        .listener = on_event,
	};
	sy_client_error err;
	sy_client *c = NULL;
	if (sy_client_open(argv[1], &opts, &c, &err) != SY_CLIENT_OK) {
		fprintf(stderr, "open: %s\n", err.message);
		return 1;
	}
	int status = 1;
	/* The first sync registers the client and fetches the schema. */
	if (sy_client_sync(c, 30000, &err) != SY_CLIENT_OK) {
		fprintf(stderr, "sync: %s\n", err.message);
		goto done;
	}
	/* A write: the intent and its mutation id are durable at commit, online or not. */
	uuid_t u;
	char id[37], pk[40], columns[512], mutation_id[37];
	uuid_generate_random(u);
	uuid_unparse_lower(u, id);
	snprintf(pk, sizeof pk, "\"%s\"", id);
	snprintf(columns, sizeof columns, "{\"title\":\"%s\"}",
	         argv[4]); /* JSON-escape real input */
	sy_client_txn *t;
	if (sy_client_begin(c, false, &t, &err) != SY_CLIENT_OK ||
	    sy_client_insert(t, "todo", pk, columns, mutation_id, &err) != SY_CLIENT_OK) {
		fprintf(stderr, "write: %s\n", err.message);
		sy_client_rollback(t);
		goto done;
	}
	if (sy_client_commit(t, &err) != SY_CLIENT_OK) {
		fprintf(stderr, "commit: %s\n", err.message);
		goto done;
	}
	/*
	 * An app with its own event loop calls sy_client_step() and sleeps until the
	 * time it returns; sy_client_sync() is that loop, until push and pull are done.
	 */
	if (sy_client_sync(c, 30000, &err) != SY_CLIENT_OK) {
		/* Nothing is lost: the intent stays queued for the next sync. */
		fprintf(stderr, "sync: %s (will retry)\n", err.message);
	}
	if (sy_client_intents(c, false, explain_unsettled, c, &err) != SY_CLIENT_OK ||
	    sy_client_rows(c, "todo", print_row, NULL, &err) != SY_CLIENT_OK) {
		fprintf(stderr, "read: %s\n", err.message);
		goto done;
	}
	sy_client_status s;
	if (sy_client_status_get(c, &s, &err) == SY_CLIENT_OK)
		printf("client %s: %s, %zu applied, %zu pending\n", s.client_id,
		       sy_client_phase_name(s.phase), s.counts[SY_INTENT_APPLIED],
		       s.counts[SY_INTENT_PENDING] + s.counts[SY_INTENT_SEALED]);
	status = 0;
done:
	sy_client_close(c);
	return status;
}
