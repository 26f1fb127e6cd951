/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ledger.c: synchroctl ledger inspect and purge-retired: read-only views of the ledgers,
 * and the purge after retirement.
 *
 * Layer: middle of src/store (doc/hacking.md).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/conn.h"
#include "store/ledger.h"
#include "synchro/alloc.h"

static sy_store_status check_ids(const char *user, const char *client_id, const char *batch_id,
                                 sy_error *err)
{
	sy_store_status st = sy_store_check_client(user, client_id, err);
	if (st != SY_STORE_OK)
		return st;
	if (!sy_uuid_valid(batch_id, strlen(batch_id)))
		return sy_store_fail(err, SY_STORE_INVALID,
		                     "batch id \"%.40s\" is not a lowercase non-nil UUID",
		                     batch_id);
	return SY_STORE_OK;
}

/* bytea in hex text output to a NUL-terminated copy; NULL on failure. */
static char *unhex(const char *text, size_t *len)
{
	size_t n = 0;
	unsigned char *raw = PQunescapeBytea((const unsigned char *)text, &n);
	if (!raw)
		return NULL;
	char *out = sy_strndup((const char *)raw, n);
	PQfreemem(raw);
	if (out)
		*len = n;
	return out;
}

sy_store_status sy_store_ledger_batch(PGconn *c, const char *user, const char *client_id,
                                      const char *batch_id, bool with_body, sy_store_batch *out,
                                      sy_error *err)
{
	memset(out, 0, sizeof *out);
	sy_store_status st = check_ids(user, client_id, batch_id, err);
	if (st != SY_STORE_OK)
		return st;
	const char *p[] = {user, client_id, batch_id, with_body ? "t" : "f"};
	PGresult *r = sy_store_exec(
	        c,
	        "SELECT b.state, coalesce(b.http_status, 0), encode(b.fingerprint, 'hex'),"
	        "       b.fp_algorithm, b.fp_version, b.fp_domain, b.protocol_version,"
	        "       b.client_generation, b.schema_version, b.schema_hash, b.atomic,"
	        "       b.created_at, b.completed_at,"
	        "       (SELECT count(*) FROM synchro.mutations m WHERE m.user_id = b.user_id"
	        "           AND m.client_id = b.client_id AND m.batch_id = b.batch_id),"
	        "       CASE WHEN $4::bool THEN b.response END"
	        "  FROM synchro.batches b"
	        " WHERE b.user_id = $1 AND b.client_id = $2::uuid AND b.batch_id = $3::uuid",
	        4, p, PGRES_TUPLES_OK, "batch lookup", NULL, &st, err);
	if (!r)
		return st;
	if (PQntuples(r) != 1) {
		PQclear(r);
		return sy_store_fail(err, SY_STORE_NOT_FOUND,
		                     "no batch %s of client %s of user \"%s\" in the ledger",
		                     batch_id, client_id, user);
	}
	snprintf(out->state, sizeof out->state, "%s", PQgetvalue(r, 0, 0));
	out->http_status = atoi(PQgetvalue(r, 0, 1));
	snprintf(out->fingerprint, sizeof out->fingerprint, "%s", PQgetvalue(r, 0, 2));
	snprintf(out->fp_algorithm, sizeof out->fp_algorithm, "%s", PQgetvalue(r, 0, 3));
	out->fp_version = atoi(PQgetvalue(r, 0, 4));
	snprintf(out->fp_domain, sizeof out->fp_domain, "%s", PQgetvalue(r, 0, 5));
	out->protocol_version = atoi(PQgetvalue(r, 0, 6));
	out->client_generation = atoll(PQgetvalue(r, 0, 7));
	out->schema_version = atoll(PQgetvalue(r, 0, 8));
	snprintf(out->schema_hash, sizeof out->schema_hash, "%s", PQgetvalue(r, 0, 9));
	out->atomic = strcmp(PQgetvalue(r, 0, 10), "t") == 0;
	sy_store_format_time(PQgetvalue(r, 0, 11), out->created_at);
	sy_store_format_time(PQgetvalue(r, 0, 12), out->completed_at);
	out->mutation_count = atoll(PQgetvalue(r, 0, 13));
	if (with_body && !PQgetisnull(r, 0, 14)) {
		out->response = unhex(PQgetvalue(r, 0, 14), &out->response_len);
		if (!out->response)
			st = sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	}
	PQclear(r);
	return st;
}

void sy_store_batch_clear(sy_store_batch *b)
{
	if (!b)
		return;
	sy_free(b->response);
	b->response = NULL;
	b->response_len = 0;
}

sy_store_status sy_store_ledger_mutations(PGconn *c, const char *user, const char *client_id,
                                          const char *batch_id, bool with_body,
                                          sy_store_mutation_fn fn, void *arg, sy_error *err)
{
	sy_store_status st = check_ids(user, client_id, batch_id, err);
	if (st != SY_STORE_OK)
		return st;
	const char *p[] = {user, client_id, batch_id, with_body ? "t" : "f"};
	PGresult *r = sy_store_exec(
	        c,
	        "SELECT mutation_id, ordinal, table_id, pk, operation, status, coalesce(code, ''),"
	        "       encode(fingerprint, 'hex'), completed_at,"
	        "       CASE WHEN $4::bool THEN outcome END"
	        "  FROM synchro.mutations"
	        " WHERE user_id = $1 AND client_id = $2::uuid AND batch_id = $3::uuid"
	        " ORDER BY ordinal",
	        4, p, PGRES_TUPLES_OK, "mutation lookup", NULL, &st, err);
	if (!r)
		return st;
	for (int i = 0; i < PQntuples(r) && st == SY_STORE_OK; i++) {
		sy_store_mutation m = {
		        .mutation_id = PQgetvalue(r, i, 0),
		        .ordinal = atoi(PQgetvalue(r, i, 1)),
		        .table_id = PQgetvalue(r, i, 2),
		        .pk = PQgetvalue(r, i, 3),
		        .operation = PQgetvalue(r, i, 4),
		        .status = PQgetvalue(r, i, 5),
		        .code = PQgetvalue(r, i, 6),
		        .fingerprint = PQgetvalue(r, i, 7),
		};
		sy_store_format_time(PQgetvalue(r, i, 8), m.completed_at);
		char *outcome = NULL;
		if (with_body && !PQgetisnull(r, i, 9)) {
			outcome = unhex(PQgetvalue(r, i, 9), &m.outcome_len);
			if (!outcome) {
				st = sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
				break;
			}
			m.outcome = outcome;
		}
		bool more = fn(arg, &m);
		sy_free(outcome);
		if (!more)
			break;
	}
	PQclear(r);
	return st;
}

static sy_store_status purge(PGconn *c, void *arg, sy_error *err)
{
	sy_store_purged *out = arg;
	sy_store_status st;
	/* Mutations first: they name their batch. Fences, clients and markers are not touched. */
	PGresult *r = sy_store_exec(
	        c,
	        "WITH m AS (DELETE FROM synchro.mutations x USING synchro.retirements r"
	        "            WHERE x.client_id = r.client_id AND x.user_id = r.user_id"
	        "            RETURNING x.client_id)"
	        "SELECT count(*), coalesce(array_agg(DISTINCT client_id), '{}') FROM m",
	        0, NULL, PGRES_TUPLES_OK, "purging mutations", NULL, &st, err);
	if (!r)
		return st;
	out->mutations = atoll(PQgetvalue(r, 0, 0));
	const char *p[] = {PQgetvalue(r, 0, 1)};
	PGresult *b = sy_store_exec(
	        c,
	        "WITH b AS (DELETE FROM synchro.batches x USING synchro.retirements r"
	        "            WHERE x.client_id = r.client_id AND x.user_id = r.user_id"
	        "            RETURNING x.client_id)"
	        "SELECT (SELECT count(*) FROM b),"
	        "       (SELECT count(*) FROM (SELECT client_id FROM b UNION"
	        "                              SELECT unnest($1::uuid[])) u)",
	        1, p, PGRES_TUPLES_OK, "purging batches", NULL, &st, err);
	PQclear(r);
	if (!b)
		return st;
	out->batches = atoll(PQgetvalue(b, 0, 0));
	out->clients = atoll(PQgetvalue(b, 0, 1));
	PQclear(b);
	return SY_STORE_OK;
}

sy_store_status sy_store_ledger_purge_retired(PGconn *c, sy_store_purged *out, sy_error *err)
{
	memset(out, 0, sizeof *out);
	sy_store_status st = sy_store_transaction(c, purge, out, err);
	if (st != SY_STORE_OK)
		memset(out, 0, sizeof *out);
	return st;
}
