/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clients.c: synchroctl client list and retire, and the permanent retirement marker.
 *
 * Layer: middle of src/store (doc/hacking.md).
 * Rules: doc/contract.md#ledger-retention (the marker), doc/contract.md#retirement
 * (retirement is permanent).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/clients.h"
#include "store/conn.h"

sy_store_status sy_store_client_list(PGconn *c, const char *user, sy_store_client_fn fn, void *arg,
                                     size_t *count, sy_error *err)
{
	sy_store_status st;
	const char *p[] = {user};
	if (count)
		*count = 0;
	PGresult *r = sy_store_exec(
	        c,
	        "SELECT c.client_id, c.user_id, c.generation, c.accepted_write_epoch,"
	        "       COALESCE(p.materialized_write_epoch, 1), c.created_at, c.last_seen_at,"
	        "       r.retired_at"
	        "  FROM synchro.clients c"
	        "  LEFT JOIN synchro.client_progress p ON p.client_id = c.client_id"
	        "  LEFT JOIN synchro.retirements r ON r.client_id = c.client_id"
	        " WHERE $1::text IS NULL OR c.user_id = $1"
	        " ORDER BY c.user_id COLLATE \"C\", c.client_id",
	        1, p, PGRES_TUPLES_OK, "client list", NULL, &st, err);
	if (!r)
		return st;
	for (int i = 0; i < PQntuples(r); i++) {
		sy_store_client cl = {
		        .client_id = PQgetvalue(r, i, 0),
		        .user_id = PQgetvalue(r, i, 1),
		        .generation = atoll(PQgetvalue(r, i, 2)),
		        .accepted_write_epoch = atoll(PQgetvalue(r, i, 3)),
		        .materialized_write_epoch = atoll(PQgetvalue(r, i, 4)),
		};
		sy_store_format_time(PQgetvalue(r, i, 5), cl.created_at);
		sy_store_format_time(PQgetvalue(r, i, 6), cl.last_seen_at);
		sy_store_format_time(PQgetvalue(r, i, 7), cl.retired_at);
		if (count)
			(*count)++;
		if (!fn(arg, &cl))
			break;
	}
	PQclear(r);
	return SY_STORE_OK;
}

typedef struct {
	const char *user;
	const char *client_id;
	sy_store_retirement *out;
} retirement;

static sy_store_status retire(PGconn *c, void *arg, sy_error *err)
{
	const retirement *a = arg;
	const char *user = a->user, *client_id = a->client_id;
	sy_store_retirement *out = a->out;
	sy_store_status st;
	char state[6];
	const char *p[] = {client_id, user};
	/* The row lock orders us after (or before) a concurrent connect of the same client. */
	PGresult *r = sy_store_exec(c,
	                            "SELECT user_id = $2 FROM synchro.clients"
	                            " WHERE client_id = $1::uuid FOR UPDATE",
	                            2, p, PGRES_TUPLES_OK, "client lookup", NULL, &st, err);
	if (!r)
		return st;
	bool mine = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	if (!mine)
		return sy_store_fail(err, SY_STORE_NOT_FOUND, "client %s of user \"%s\" not found",
		                     client_id, user);
	r = sy_store_exec(c,
	                  "SELECT retirement_id, retired_at FROM synchro.retirements"
	                  " WHERE client_id = $1::uuid",
	                  1, p, PGRES_TUPLES_OK, "retirement lookup", NULL, &st, err);
	if (!r)
		return st;
	if (PQntuples(r) == 1) {
		snprintf(out->retirement_id, sizeof out->retirement_id, "%s", PQgetvalue(r, 0, 0));
		sy_store_format_time(PQgetvalue(r, 0, 1), out->retired_at);
		PQclear(r);
		return sy_store_fail(
		        err, SY_STORE_CONFLICT,
		        "client %s is already retired (since %s); retirement is irreversible",
		        client_id, out->retired_at);
	}
	PQclear(r);
	r = sy_store_exec(c,
	                  "INSERT INTO synchro.retirements (client_id, user_id, retirement_id)"
	                  " VALUES ($1::uuid, $2, gen_random_uuid())"
	                  " RETURNING retirement_id, retired_at",
	                  2, p, PGRES_TUPLES_OK, "writing the retirement marker", state, &st, err);
	if (!r) {
		if (strcmp(state, "23505") == 0) /* a concurrent retirement won */
			return sy_store_fail(err, SY_STORE_CONFLICT, "client %s is already retired",
			                     client_id);
		return st;
	}
	snprintf(out->retirement_id, sizeof out->retirement_id, "%s", PQgetvalue(r, 0, 0));
	sy_store_format_time(PQgetvalue(r, 0, 1), out->retired_at);
	PQclear(r);
	return SY_STORE_OK;
}

sy_store_status sy_store_client_retire(PGconn *c, const char *user, const char *client_id,
                                       sy_store_retirement *out, sy_error *err)
{
	memset(out, 0, sizeof *out);
	sy_store_status st = sy_store_check_client(user, client_id, err);
	if (st != SY_STORE_OK)
		return st;
	snprintf(out->client_id, sizeof out->client_id, "%s", client_id);
	retirement a = {user, client_id, out};
	return sy_store_transaction(c, retire, &a, err);
}
