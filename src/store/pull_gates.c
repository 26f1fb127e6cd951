/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pull_gates.c: the gates of pull and rebuild.
 *
 * Layer: middle of src/store (doc/hacking.md).
 * Rules: doc/contract.md#dispatch-order (the order of the gates).
 * Notes: Every read statement starts with the gate columns. They are read into
 * sy_store_gates. The decision follows the dispatch order.
 */
#include "config.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "store/lease.h"
#include "store/pull_internal.h"
#include "synchro/dispatch.h"
#include "synchro/fingerprint.h"

bool sy_store_get_ll(const PGresult *r, int row, int col, long long *out)
{
	const char *s = PQgetvalue(r, row, col);
	char *end;
	if (PQgetisnull(r, row, col) || *s == '\0')
		return false;
	*out = strtoll(s, &end, 10);
	return *end == '\0';
}

bool sy_store_get_pos(const PGresult *r, int row, int col, sy_store_position *out)
{
	long long ord;
	unsigned long long lsn;
	out->lsn = 0;
	out->ordinal = 0;
	if (PQgetisnull(r, row, col))
		return true;
	if (!sy_store_lsn_parse(PQgetvalue(r, row, col), &lsn) ||
	    !sy_store_get_ll(r, row, col + 1, &ord) || ord < 0 || ord > INT32_MAX)
		return false;
	out->lsn = lsn;
	out->ordinal = (uint32_t)ord;
	return true;
}

bool sy_store_gates_read(const PGresult *r, sy_store_gates *g)
{
	memset(g, 0, sizeof *g);
	g->found = !PQgetisnull(r, 0, 0);
	if (g->found) {
		g->bound = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
		g->retired = strcmp(PQgetvalue(r, 0, 4), "t") == 0;
		if (!sy_store_get_ll(r, 0, 1, &g->generation) ||
		    !sy_store_get_ll(r, 0, 2, &g->accepted) ||
		    !sy_store_get_ll(r, 0, 3, &g->materialized))
			return false;
	}
	g->schema_found = !PQgetisnull(r, 0, 5);
	if (g->schema_found) {
		long long v;
		if (!sy_store_get_ll(r, 0, 5, &v) || v <= 0 ||
		    PQgetlength(r, 0, 6) != SY_HASH_HEX_LEN)
			return false;
		g->current.version = (uint64_t)v;
		memcpy(g->current.hash, PQgetvalue(r, 0, 6), SY_HASH_HEX_LEN + 1);
	}
	if (!sy_store_get_pos(r, 0, 7, &g->horizon) || !sy_store_get_pos(r, 0, 9, &g->tail))
		return false;
	if (sy_store_position_cmp(&g->tail, &g->horizon) < 0)
		g->tail = g->horizon; /* compaction removed every entry */
	return sy_store_format_time(PQgetvalue(r, 0, 11), g->now);
}

/*
 * The gates after the structural ones, in the order of sy_dispatch_decide(). *pass true:
 * continue; false: the answer is set, unless *reload: the current schema is not the cached
 * one (read it, then decide again).
 */
void sy_store_gates_decide(sy_store_read *x, const sy_store_gates *g, uint64_t generation,
                           const sy_schema_ref *schema, bool *pass, bool *reload)
{
	sy_gate_facts f;
	*pass = false;
	*reload = false;
	/* Authentication, the protocol gate and structural validation ran before. */
	sy_gate_facts_init(&f, SY_GATES_READ & ~SY_GATES_FRONT & ~SY_GATE_BIT(SY_GATE_STRUCTURE));
	f.check[SY_GATE_CLIENT] = g->found && g->bound ? SY_CHECK_PASS : SY_CHECK_FAIL;
	f.check[SY_GATE_RETIRED] = g->retired ? SY_CHECK_FAIL : SY_CHECK_PASS;
	f.check[SY_GATE_PUBLISHED] = g->schema_found ? SY_CHECK_PASS : SY_CHECK_FAIL;
	f.check[SY_GATE_GENERATION] =
	        (long long)generation == g->generation ? SY_CHECK_PASS : SY_CHECK_FAIL;
	f.check[SY_GATE_SCHEMA] = g->schema_found && schema->version == g->current.version &&
	                                          strcmp(schema->hash, g->current.hash) == 0
	                                  ? SY_CHECK_PASS
	                                  : SY_CHECK_FAIL;
	sy_dispatch d = sy_dispatch_decide(&f);
	if (d.verdict == SY_DISPATCH_REFUSE) {
		switch (d.gate) {
		case SY_GATE_CLIENT:
			sy_store_read_error(x, SY_ERR_AUTH_REQUIRED,
			                    "the client is not registered to this user");
			return;
		case SY_GATE_RETIRED:
			sy_store_read_error(x, SY_ERR_CLIENT_RETIRED, "the client is retired");
			return;
		case SY_GATE_PUBLISHED:
			sy_store_read_error(x, SY_ERR_TEMPORARY_UNAVAILABLE,
			                    "no schema is published yet; retry later");
			return;
		case SY_GATE_GENERATION:
			sy_store_read_error(
			        x, SY_ERR_CLIENT_GENERATION_EXPIRED,
			        "client_generation is not the current generation; connect again");
			return;
		case SY_GATE_SCHEMA:
			x->out->current = g->current;
			x->out->received = *schema;
			sy_store_read_error(x, SY_ERR_SCHEMA_MISMATCH,
			                    "the request schema is not the current schema");
			return;
		default: break;
		}
	}
	/* Every gate of a read is known, each refusal answered above: only a pass is left. */
	assert(d.verdict == SY_DISPATCH_GO);
	if (d.verdict != SY_DISPATCH_GO) {
		sy_store_read_error(x, SY_ERR_TEMPORARY_UNAVAILABLE,
		                    "temporarily unavailable; retry");
		return;
	}
	if ((long long)g->current.version != x->p->version ||
	    strcmp(g->current.hash, x->p->hash) != 0) {
		*reload = true;
		return;
	}
	*pass = true;
}

sy_store_stmt sy_store_gates_stmt =
        SY_STORE_STMT("sy_read_gates",
                      "SELECT " SY_STORE_GATE_COLS
                      ", s.accepted_write_epoch, s.stream_lsn, s.stream_ordinal" SY_STORE_GATE_FROM
                      " LEFT JOIN synchro.rebuild_sessions s"
                      "   ON s.user_id = $2 AND s.client_id = $1::uuid AND s.rebuild_id = $3::uuid",
                      3);
