/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * session.c: the responders' statements outside push: connect (client generations), the
 * current schema, and ping.
 *
 * Layer: middle of src/store (doc/hacking.md).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/conn.h"
#include "store/prepared.h"
#include "store/session.h"
#include "synchro/alloc.h"

sy_store_status sy_store_session_limits(PGconn *c, int lock_timeout_ms, sy_error *err)
{
	static sy_store_stmt stmt = SY_STORE_STMT(
	        "sy_session_limits", "SELECT pg_catalog.set_config('lock_timeout', $1, false)", 1);
	char ms[32];
	snprintf(ms, sizeof ms, "%d", lock_timeout_ms > 0 ? lock_timeout_ms : 0);
	if (sy_store_get_pooler() == SY_STORE_POOLER_TRANSACTION) {
		/* No session to keep it: every statement sets it for its transaction. */
		sy_store_txn_lock_timeout(ms);
		return SY_STORE_OK;
	}
	const char *p[] = {ms};
	sy_store_status st;
	PGresult *r =
	        sy_store_exec_stmt(c, &stmt, p, PGRES_TUPLES_OK, "session limits", NULL, &st, err);
	PQclear(r);
	return st;
}

sy_store_status sy_store_ping(PGconn *c, sy_error *err)
{
	static sy_store_stmt stmt = SY_STORE_STMT("sy_session_ping", "SELECT 1", 0);
	sy_store_status st;
	PGresult *r = sy_store_exec_stmt(c, &stmt, NULL, PGRES_TUPLES_OK, "ping", NULL, &st, err);
	if (r != NULL && PQntuples(r) != 1)
		st = sy_store_fail(err, SY_STORE_FAILED, "ping: unexpected result");
	PQclear(r);
	return st;
}

/* version (bigint text) and hash of a schema reference read from a row. */
static bool read_ref(PGresult *r, int row, int col, sy_schema_ref *ref)
{
	const char *v = PQgetvalue(r, row, col);
	const char *h = PQgetvalue(r, row, col + 1);
	char *end;
	unsigned long long n = strtoull(v, &end, 10);
	if (*v == '\0' || *end != '\0' || n == 0 || strlen(h) != SY_HASH_HEX_LEN)
		return false;
	ref->version = n;
	memcpy(ref->hash, h, SY_HASH_HEX_LEN + 1);
	return true;
}

/*
 * Both statements below write only when a schema is published (the join with
 * the latest version), so a refused connect leaves no generation behind.
 * Retirement needs no test of its own here: the clients trigger refuses to
 * change a retired client's generation or to register a retired id (SY004),
 * and the retirement marker's trigger locks the client row, so the two are
 * ordered by that lock.
 */
static sy_store_stmt reconnect_stmt = SY_STORE_STMT(
        "sy_session_reconnect",
        "WITH s AS (SELECT version, hash FROM synchro.schema_versions ORDER BY version DESC LIMIT "
        "1)"
        " UPDATE synchro.clients c SET generation = c.generation + 1, last_seen_at = now()"
        "   FROM s"
        "  WHERE c.client_id = $1::uuid AND c.user_id = $2"
        " RETURNING c.generation, s.version, s.hash, now()",
        2);

static sy_store_stmt register_stmt =
        SY_STORE_STMT("sy_session_register",
                      "WITH s AS (SELECT version, hash FROM synchro.schema_versions ORDER BY "
                      "version DESC LIMIT 1)"
                      " INSERT INTO synchro.clients (client_id, user_id, generation, last_seen_at)"
                      " SELECT $1::uuid, $2, 1, now() FROM s"
                      " ON CONFLICT (client_id) DO NOTHING"
                      " RETURNING generation, (SELECT version FROM s), (SELECT hash FROM s), now()",
                      2);

/* Why neither wrote: whose client it is, whether retired, whether a schema exists. */
static sy_store_stmt diagnose_stmt =
        SY_STORE_STMT("sy_session_connect_state",
                      "SELECT c.user_id = $2, r.client_id IS NOT NULL,"
                      "       EXISTS (SELECT 1 FROM synchro.schema_versions)"
                      "  FROM (SELECT 1) AS one"
                      "  LEFT JOIN synchro.clients c ON c.client_id = $1::uuid"
                      "  LEFT JOIN synchro.retirements r ON r.client_id = c.client_id",
                      2);

/* SY_STORE_OK with *done when the result says what happened; !*done: try again. */
static sy_store_status diagnose(PGconn *c, const char *const *p, sy_store_connected *out,
                                bool *done, sy_error *err)
{
	sy_store_status st;
	PGresult *r = sy_store_exec_stmt(c, &diagnose_stmt, p, PGRES_TUPLES_OK, "connect", NULL,
	                                 &st, err);
	if (r == NULL)
		return st;
	if (PQntuples(r) != 1) {
		PQclear(r);
		return sy_store_fail(err, SY_STORE_FAILED, "connect: unexpected result");
	}
	bool known = !PQgetisnull(r, 0, 0);
	bool mine = known && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	bool retired = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
	bool schema = strcmp(PQgetvalue(r, 0, 2), "t") == 0;
	PQclear(r);
	*done = true;
	if (known && !mine)
		out->result = SY_CONNECT_FOREIGN;
	else if (mine && retired)
		out->result = SY_CONNECT_RETIRED;
	else if (!schema)
		out->result = SY_CONNECT_NO_SCHEMA;
	else
		*done = false; /* a concurrent connect registered it, or one was published meanwhile
		                */
	return SY_STORE_OK;
}

/* Fills *out from a row of generation, schema version, hash, now(). */
static sy_store_status opened(PGresult *r, sy_store_connected *out, sy_error *err)
{
	const char *g = PQgetvalue(r, 0, 0);
	char *end;
	out->generation = strtoll(g, &end, 10);
	bool ok = *g != '\0' && *end == '\0' && out->generation > 0 &&
	          read_ref(r, 0, 1, &out->schema);
	ok = ok && sy_store_format_time(PQgetvalue(r, 0, 3), out->server_time);
	PQclear(r);
	if (!ok)
		return sy_store_fail(err, SY_STORE_FAILED, "connect: unexpected result");
	out->result = SY_CONNECT_OPENED;
	return SY_STORE_OK;
}

sy_store_status sy_store_client_connect(PGconn *c, const char *user, const char *client_id,
                                        sy_store_connected *out, sy_error *err)
{
	memset(out, 0, sizeof *out);
	const char *p[] = {client_id, user};
	char state[6];
	sy_store_status st;
	/* Each round is short; only a registration racing another one needs a second. */
	for (int attempt = 0; attempt < 4; attempt++) {
		PGresult *r = sy_store_exec_stmt(c, &reconnect_stmt, p, PGRES_TUPLES_OK, "connect",
		                                 state, &st, err);
		if (r == NULL) {
			if (st == SY_STORE_FAILED && strcmp(state, "SY004") == 0) {
				out->result = SY_CONNECT_RETIRED; /* the statement matched the
				                                     caller's only */
				return SY_STORE_OK;
			}
			return st;
		}
		if (PQntuples(r) == 1)
			return opened(r, out, err);
		PQclear(r);

		r = sy_store_exec_stmt(c, &register_stmt, p, PGRES_TUPLES_OK, "connect", state, &st,
		                       err);
		if (r == NULL && !(st == SY_STORE_FAILED &&
		                   (strcmp(state, "SY004") == 0 || strcmp(state, "23505") == 0)))
			return st;
		if (r != NULL && PQntuples(r) == 1)
			return opened(r, out, err);
		PQclear(r);

		bool done = false;
		st = diagnose(c, p, out, &done, err);
		if (st != SY_STORE_OK || done)
			return st;
	}
	return sy_store_fail(err, SY_STORE_FAILED, "connect: client %s kept changing concurrently",
	                     client_id);
}

sy_store_status sy_store_schema_current(PGconn *c, sy_schema_ref *ref, char **manifest,
                                        size_t *manifest_len, sy_error *err)
{
	static sy_store_stmt with_manifest =
	        SY_STORE_STMT("sy_session_schema",
	                      "SELECT version, hash, manifest FROM synchro.schema_versions"
	                      " ORDER BY version DESC LIMIT 1",
	                      0);
	static sy_store_stmt ref_only = SY_STORE_STMT(
	        "sy_session_schema_ref",
	        "SELECT version, hash FROM synchro.schema_versions ORDER BY version DESC LIMIT 1",
	        0);
	if (manifest != NULL)
		*manifest = NULL;
	sy_store_status st;
	PGresult *r = sy_store_exec_stmt(c, manifest != NULL ? &with_manifest : &ref_only, NULL,
	                                 PGRES_TUPLES_OK, "current schema", NULL, &st, err);
	if (r == NULL)
		return st;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return sy_store_fail(err, SY_STORE_NOT_FOUND, "no schema is published");
	}
	if (!read_ref(r, 0, 0, ref)) {
		PQclear(r);
		return sy_store_fail(err, SY_STORE_FAILED, "current schema: unexpected result");
	}
	if (manifest != NULL) {
		size_t n = (size_t)PQgetlength(r, 0, 2);
		*manifest = sy_strndup(PQgetvalue(r, 0, 2), n);
		if (*manifest == NULL) {
			PQclear(r);
			return sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
		}
		if (manifest_len != NULL)
			*manifest_len = n;
	}
	PQclear(r);
	return SY_STORE_OK;
}
