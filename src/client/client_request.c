/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_request.c: a sealed batch's request. It writes the exact bytes as JCS text: the
 * envelope and each wire mutation.
 *
 * Layer: base of src/client (doc/hacking.md).
 * Rules: doc/contract.md#push-limits (checked by the core's own parser).
 * Notes: It checks the push limits of one mutation with the core's own parser. It keeps the
 * parsed requests of the two batches just sealed: the one in flight and the one sealed
 * ahead. So reconciling a response does not parse its request again. Sealing
 * (client_seal.c) decides what goes in. This file only writes and keeps it.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "client_internal.h"
#include "synchro/jcs.h"

/*
 * The request is written as its JCS text directly, member by member in JCS
 * order, instead of built as a JSON tree and serialized: the tree, a parse of
 * every stored pk and columns text, and two serializations per mutation were a
 * fifth of the sealing cost. What is spliced in is JCS already: the stored pk
 * (canonical_pk), columns (sy_cl_check_columns, sy_cl_merge_columns), and a
 * successor's mutations (each serialized again from the sealed body). The
 * result still goes through the server's own parser before it is stored.
 */
static bool put_int(sy_buf *b, uint64_t v)
{
	/* JCS writes an integer below 2^53 as its decimal digits; beyond, as a double. */
	if (v < ((uint64_t)1 << 53))
		return sy_buf_printf(b, "%" PRIu64, v);
	return sy_jcs_write_number(b, (double)v);
}

static bool put_str(sy_buf *b, const char *s)
{
	return sy_jcs_write_string(b, s, strlen(s));
}

static bool put_schema_ref(sy_buf *b, uint64_t version, const char *hash)
{
	return sy_buf_puts(b, "{\"hash\":") && put_str(b, hash) &&
	       sy_buf_puts(b, ",\"version\":") && put_int(b, version) && sy_buf_putc(b, '}');
}

/* Members in JCS order: authored_schema, base_version, client_version, columns, mutation_id,
 * operation, pk, table. */
bool sy_cl_mutation_text(sy_buf *b, const char *id, const sy_cl_wire_head *x, sy_op op,
                         const char *columns, const char *base, size_t *id_at)
{
	if (!sy_buf_puts(b, "{\"authored_schema\":") ||
	    !put_schema_ref(b, x->schema_version, x->hash))
		return false;
	if (base != NULL && (!sy_buf_puts(b, ",\"base_version\":") || !put_str(b, base)))
		return false;
	if (!sy_buf_puts(b, ",\"client_version\":") || !put_str(b, x->cv))
		return false;
	if (op != SY_OP_DELETE &&
	    (!sy_buf_puts(b, ",\"columns\":") || !sy_buf_puts(b, columns ? columns : "{}")))
		return false;
	if (!sy_buf_puts(b, ",\"mutation_id\":\""))
		return false;
	*id_at = b->len;
	return sy_buf_puts(b, id) && sy_buf_puts(b, "\",\"operation\":") &&
	       put_str(b, sy_op_name(op)) && sy_buf_puts(b, ",\"pk\":{\"field\":") &&
	       put_str(b, x->pk_field) && sy_buf_puts(b, ",\"value\":") && sy_buf_puts(b, x->pk) &&
	       sy_buf_puts(b, "},\"table\":") && put_str(b, x->tbl) && sy_buf_putc(b, '}');
}

bool sy_cl_envelope_text(sy_buf *b, const sy_client *c, const char *batch_id, bool atomic,
                         const char *mutations, size_t len)
{
	return sy_buf_puts(b, atomic ? "{\"atomic\":true,\"batch_id\":" : "{\"batch_id\":") &&
	       put_str(b, batch_id) && sy_buf_puts(b, ",\"client_generation\":") &&
	       put_int(b, c->generation) && sy_buf_puts(b, ",\"client_id\":") &&
	       put_str(b, c->client_id) && sy_buf_puts(b, ",\"mutations\":[") &&
	       sy_buf_append(b, mutations, len) && sy_buf_puts(b, "],\"schema\":") &&
	       put_schema_ref(b, c->schema.version, c->schema.hash) && sy_buf_putc(b, '}');
}

int sy_cl_mutation_fits(const sy_client *c, const sy_buf *m, const char *columns, char *why,
                        size_t whylen)
{
	/*
	 * The fast path: the normalized form is at most one octet per column and a
	 * fixed envelope longer than the wire object (the same values, arrays for
	 * objects, no member names but "mutation-v1"), so a wire object this small
	 * with few enough columns fits; the sealed body is parsed whole anyway. A
	 * columns object of n members has at least 5n + 1 octets ("":0 and commas),
	 * so a shorter one than 5 * 257 + 1 has at most 256.
	 */
	size_t clen = columns != NULL ? strlen(columns) : 0;
	if (clen < 5 * (SY_PUSH_MAX_COLUMNS + 1) + 1 &&
	    m->len + SY_PUSH_MAX_COLUMNS + 1024 <= SY_PUSH_MAX_MUTATION)
		return 1;
	/* Any valid batch id will do for this check: the envelope is never sent. */
	static const char id[] = "00000000-0000-4000-8000-000000000001";
	sy_buf body = SY_BUF_INIT;
	if (!sy_cl_envelope_text(&body, c, id, false, m->data, m->len)) {
		sy_buf_free(&body);
		return -1;
	}
	int fits = -1;
	sy_error e = {0};
	sy_push_request *req = sy_push_parse(body.data, body.len, &e);
	if (req != NULL)
		fits = 1;
	else if (e.code != SY_ERR_NOMEM) {
		snprintf(why, whylen, "%s", e.message);
		fits = 0;
	}
	sy_push_request_free(req);
	sy_buf_free(&body);
	return fits;
}

void sy_cl_req_put(sy_client *c, const char *batch_id, sy_push_request *req)
{
	/* two slots: the batch in flight and the one sealed ahead */
	sy_push_request_free(c->reqs[1].req);
	c->reqs[1] = c->reqs[0];
	snprintf(c->reqs[0].batch_id, sizeof c->reqs[0].batch_id, "%s", batch_id);
	c->reqs[0].req = req;
}

sy_push_request *sy_cl_req_take(sy_client *c, const char *batch_id)
{
	for (int i = 0; i < 2; i++)
		if (c->reqs[i].req != NULL && strcmp(c->reqs[i].batch_id, batch_id) == 0) {
			sy_push_request *req = c->reqs[i].req;
			c->reqs[i].req = NULL;
			return req;
		}
	return NULL;
}

void sy_cl_req_free(sy_client *c)
{
	for (int i = 0; i < 2; i++) {
		sy_push_request_free(c->reqs[i].req);
		c->reqs[i].req = NULL;
	}
}

