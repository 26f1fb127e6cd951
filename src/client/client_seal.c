/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_seal.c: sealing. Pending intents become one immutable batch: its exact request
 * bytes, their SHA-256, batch_id, generation and schema. The batch is committed before it
 * is first sent.
 *
 * Layer: middle of src/client (doc/hacking.md).
 * Rules: doc/contract.md#sealing (the batch is immutable once sealed).
 * Interface:
 *   sy_cl_seal_next       the next batch: same-row chains normalized, push limits
 *                         enforced (an over-limit intent is blocked here, never a
 *                         400 loop), an atomic transaction as one atomic batch
 *   sy_cl_seal_successor  after 409 client_generation_expired or 422 schema_mismatch:
 *                         a new batch id under the current generation and schema
 *                         carrying the very same mutation objects
 *   sy_cl_push_due        whether a batch is sealed or intents wait to be sealed
 */
#include "config.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "synchro/alloc.h"
#include "synchro/fingerprint.h"
#include "synchro/sha256.h"
#include "synchro/jcs.h"

/* Room left for the envelope around the mutations when the body limit is checked. */
#define ENVELOPE_ROOM 512

typedef struct {
	int64_t seq, ord, txn;
	bool atomic;
	uint64_t schema_version;
	char *id, *tbl, *pk, *pk_field, *op, *columns, *base, *cv, *hash, *pred;
	bool done; /* handled in this sealing */
} irow;

typedef struct {
	irow *v;
	size_t n;
} irows;

static void irows_free(irows *r)
{
	for (size_t i = 0; i < r->n; i++) {
		irow *x = &r->v[i];
		sy_free(x->id);
		sy_free(x->tbl);
		sy_free(x->pk);
		sy_free(x->pk_field);
		sy_free(x->op);
		sy_free(x->columns);
		sy_free(x->base);
		sy_free(x->cv);
		sy_free(x->hash);
		sy_free(x->pred);
	}
	sy_free(r->v);
	r->v = NULL;
	r->n = 0;
}

/* Pending intents in local order; at most limit of them (-1: all). */
static sy_client_rc load_pending(sy_client *c, int64_t limit, irows *out, sy_client_error *err)
{
	sqlite3_stmt *st;
	size_t cap = 0;
	sy_client_rc rc = sy_cl_prepare(
	        c,
	        "SELECT i.seq, i.ord, i.txn, t.atomic, i.schema_version, i.mutation_id, i.tbl, "
	        "i.pk,"
	        " i.pk_field, i.op, i.columns, i.base, i.client_version, i.schema_hash, i.pred"
	        " FROM intents i JOIN txns t ON t.id = i.txn WHERE i.state = 'pending'"
	        " ORDER BY i.ord, i.seq LIMIT ?",
	        &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_int64(st, 1, limit);
	int s;
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		if (out->n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			irow *nv = sy_realloc(out->v, ncap * sizeof *nv);
			if (nv == NULL) {
				rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
				break;
			}
			out->v = nv;
			cap = ncap;
		}
		irow *x = &out->v[out->n++];
		memset(x, 0, sizeof *x);
		x->seq = sqlite3_column_int64(st, 0);
		x->ord = sqlite3_column_int64(st, 1);
		x->txn = sqlite3_column_int64(st, 2);
		x->atomic = sqlite3_column_int(st, 3) != 0;
		x->schema_version = (uint64_t)sqlite3_column_int64(st, 4);
		x->id = sy_cl_col_text(st, 5);
		x->tbl = sy_cl_col_text(st, 6);
		x->pk = sy_cl_col_text(st, 7);
		x->pk_field = sy_cl_col_text(st, 8);
		x->op = sy_cl_col_text(st, 9);
		x->columns = sy_cl_col_text(st, 10);
		x->base = sy_cl_col_text(st, 11);
		x->cv = sy_cl_col_text(st, 12);
		x->hash = sy_cl_col_text(st, 13);
		x->pred = sy_cl_col_text(st, 14);
		if (x->id == NULL || x->tbl == NULL || x->pk == NULL || x->op == NULL ||
		    x->cv == NULL || x->hash == NULL || x->pk_field == NULL) {
			rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
			break;
		}
	}
	if (rc == SY_CLIENT_OK && s != SQLITE_DONE)
		rc = sy_cl_store_fail(c, err, "pending intents");
	sqlite3_finalize(st);
	return rc;
}

static sy_op op_of(const char *op)
{
	return strcmp(op, "insert") == 0   ? SY_OP_INSERT
	       : strcmp(op, "update") == 0 ? SY_OP_UPDATE
	                                   : SY_OP_DELETE;
}

static sy_client_rc set_state(sy_client *c, const char *id, const char *state, const char *link,
                              const char *pred, const char *code, const char *outcome,
                              sy_client_error *err)
{
	sqlite3_stmt *st;
	sy_client_rc rc =
	        sy_cl_prepare_cached(c,
	                             "UPDATE intents SET state = ?, link = COALESCE(?, link),"
	                             " pred = COALESCE(?, pred), code = COALESCE(?, code),"
	                             " outcome = COALESCE(?, outcome), updated_ms = ?"
	                             " WHERE mutation_id = ?",
	                             &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, state, -1, SQLITE_STATIC);
	if (link)
		sqlite3_bind_text(st, 2, link, -1, SQLITE_STATIC);
	if (pred)
		sqlite3_bind_text(st, 3, pred, -1, SQLITE_STATIC);
	if (code)
		sqlite3_bind_text(st, 4, code, -1, SQLITE_STATIC);
	if (outcome)
		sqlite3_bind_text(st, 5, outcome, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, sy_cl_now(c));
	sqlite3_bind_text(st, 7, id, -1, SQLITE_STATIC);
	return sy_cl_run_cached(c, st, err);
}

/* {"code","message"} of a local refusal, as a new JCS string (NULL without memory). */
static char *local_outcome(const char *code, const char *message)
{
	sy_buf b = SY_BUF_INIT;
	if (!sy_buf_puts(&b, "{\"code\":") || !sy_jcs_write_string(&b, code, strlen(code)) ||
	    !sy_buf_puts(&b, ",\"message\":") ||
	    !sy_jcs_write_string(&b, message, strlen(message)) || !sy_buf_putc(&b, '}')) {
		sy_buf_free(&b);
		return NULL;
	}
	return sy_buf_steal(&b, NULL);
}

static void sha256_hex(const char *p, size_t n, char hex[65])
{
	uint8_t md[SY_SHA256_LEN];
	if (!sy_sha256(p, n, md))
		memset(md, 0, sizeof md);
	sy_fp_hex(md, hex);
}

static sy_client_rc store_batch(sy_client *c, const char *batch_id, bool atomic, const char *body,
                                size_t len, char *const *ids, size_t n, sy_client_error *err)
{
	sqlite3_stmt *st;
	char hex[65];
	sha256_hex(body, len, hex);
	sy_client_rc rc = sy_cl_prepare_cached(
	        c,
	        "INSERT INTO batches(batch_id, state, generation, schema_version, schema_hash,"
	        " atomic, body, sha256, sealed_ms) VALUES (?, 'sealed', ?, ?, ?, ?, ?, ?, ?)",
	        &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, batch_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)c->generation);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)c->schema.version);
	sqlite3_bind_text(st, 4, c->schema.hash, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 5, atomic);
	sqlite3_bind_blob(st, 6, body, (int)len, SQLITE_STATIC);
	sqlite3_bind_text(st, 7, hex, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 8, sy_cl_now(c));
	if ((rc = sy_cl_run_cached(c, st, err)) != SY_CLIENT_OK)
		return rc;
	for (size_t i = 0; i < n && rc == SY_CLIENT_OK; i++) {
		if ((rc = sy_cl_prepare_cached(
		             c,
		             "INSERT INTO batch_members(batch_id, ordinal, mutation_id)"
		             " VALUES (?, ?, ?)",
		             &st, err)) != SY_CLIENT_OK)
			break;
		sqlite3_bind_text(st, 1, batch_id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
		sqlite3_bind_text(st, 3, ids[i], -1, SQLITE_STATIC);
		rc = sy_cl_run_cached(c, st, err);
	}
	/* The members' intents in one statement, not one per member. */
	if (rc == SY_CLIENT_OK &&
	    (rc = sy_cl_prepare_cached(
	             c,
	             "UPDATE intents SET state = 'sealed', batch_id = ?1,"
	             " updated_ms = ?2 WHERE mutation_id IN"
	             " (SELECT mutation_id FROM batch_members WHERE batch_id = ?1)",
	             &st, err)) == SY_CLIENT_OK) {
		sqlite3_bind_text(st, 1, batch_id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, sy_cl_now(c));
		rc = sy_cl_run_cached(c, st, err);
	}
	return rc;
}

/* State of one sealing pass. */
typedef struct {
	sy_buf mutations; /* their JCS texts joined by commas */
	char **ids;       /* wire mutation ids in request order */
	size_t n;
	size_t bytes;
	bool full;
	/* What wait_unloaded must look at: the load stopped at its limit (pending intents
	 * from local order last_ord on may be unloaded); loaded intents outside the group. */
	bool cut, outside;
	int64_t last_ord;
} pass;

static sy_client_rc add_wire(pass *p, const char *id, const sy_buf *m, sy_client_error *err)
{
	char **nv = sy_realloc(p->ids, (p->n + 1) * sizeof *nv);
	if (nv == NULL)
		return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	p->ids = nv;
	if ((p->ids[p->n] = sy_strndup(id, strlen(id))) == NULL)
		return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	p->n++; /* counted at once: the pass frees it when an append below fails */
	if ((p->n > 1 && !sy_buf_putc(&p->mutations, ',')) ||
	    !sy_buf_append(&p->mutations, m->data, m->len))
		return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	p->bytes += m->len + 1;
	return SY_CLIENT_OK;
}

/*
 * The pending intents of head's row other than wire mutation id (beyond the load
 * limit, past the 256 of a chain, or loaded outside the group) wait behind it, as
 * the loaded rest of its chain does. The statement runs only where such an intent
 * can exist: every loaded intent of the chain is handled by now, and an unloaded
 * one has a local order from the last loaded one's on, which the row's index
 * alone answers. "+state": the row's index, not the state index (which would scan
 * the whole queue).
 */
static sy_client_rc wait_unloaded(sy_client *c, const pass *p, const irow *head, const char *id,
                                  bool longer, sy_client_error *err)
{
	sqlite3_stmt *st;
	sy_client_rc rc;
	if (!p->outside && !longer) {
		if (!p->cut)
			return SY_CLIENT_OK;
		if ((rc = sy_cl_prepare_cached(c,
		                               "SELECT 1 FROM intents WHERE tbl = ? AND pk = ?"
		                               " AND ord >= ? LIMIT 1",
		                               &st, err)) != SY_CLIENT_OK)
			return rc;
		sqlite3_bind_text(st, 1, head->tbl, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, head->pk, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, p->last_ord);
		int s = sqlite3_step(st);
		sy_cl_release(st);
		if (s == SQLITE_DONE)
			return SY_CLIENT_OK;
		if (s != SQLITE_ROW)
			return sy_cl_store_fail(c, err, "row index");
	}
	rc = sy_cl_prepare_cached(
	        c,
	        "UPDATE intents SET state = 'waiting', pred = ?3, updated_ms = ?4"
	        " WHERE tbl = ?1 AND pk = ?2 AND +state = 'pending' AND mutation_id <> ?3",
	        &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, head->tbl, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, head->pk, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, sy_cl_now(c));
	return sy_cl_run_cached(c, st, err);
}

/* Blocks every remaining item of a chain behind the wire mutation pred
 * (doc/contract.md#blocked-predecessors). */
static sy_client_rc block_rest(sy_client *c, irow **chain, size_t from, size_t n, const char *pred,
                               sy_client_error *err)
{
	sy_client_rc rc = SY_CLIENT_OK;
	for (size_t k = from; k < n && rc == SY_CLIENT_OK; k++) {
		rc = set_state(c, chain[k]->id, "blocked_by_predecessor", pred, pred, NULL, NULL,
		               err);
		chain[k]->done = true;
	}
	return rc;
}

/*
 * One row's chain: cancels what has no server effect, folds the rest into one
 * wire mutation (or takes the head as it is), leaves what follows a
 * non-normalizable point waiting behind it. *stop: the body is full.
 */
static sy_client_rc seal_chain(sy_client *c, pass *p, irow **chain, size_t n, bool longer,
                               bool atomic, bool *stop, sy_client_error *err)
{
	sy_client_rc rc = SY_CLIENT_OK;
	size_t at = 0;
	sy_cl_chain_item items[256];
	while (at < n) {
		/* A chain does not cross a schema change: its members keep their authored schema.
		 */
		size_t m = 0;
		while (at + m < n && m < sizeof items / sizeof items[0] &&
		       chain[at + m]->schema_version == chain[at]->schema_version) {
			items[m].op = op_of(chain[at + m]->op);
			items[m].has_base = chain[at + m]->base != NULL;
			m++;
		}
		sy_cl_norm norm;
		sy_cl_normalize(items, m, &norm);
		irow *head = chain[at], *last = chain[at + norm.consumed - 1];
		if (norm.kind == SY_CL_NORM_CANCELLED) {
			for (size_t k = at; k < at + norm.consumed && rc == SY_CLIENT_OK; k++) {
				rc = set_state(c, chain[k]->id, "cancelled_before_send", last->id,
				               NULL, NULL, NULL, err);
				chain[k]->done = true;
			}
			at += norm.consumed;
			continue;
		}
		/* doc/contract.md#blocked-predecessors: never sent with a made-up version; an
		 * update or delete needs its base. */
		if (norm.op != SY_OP_INSERT && head->base == NULL) {
			if (atomic)
				*stop = true; /* the atomic group cannot go whole */
			char *pred = head->pred ? NULL
			                        : sy_cl_row_pred(c, head->tbl, head->pk, head->ord);
			rc = block_rest(c, chain, at, n, head->pred ? head->pred : pred, err);
			sy_free(pred);
			return rc;
		}
		char nid[SY_UUID_LEN + 1];
		char *cols = NULL;
		const char *id = head->id;
		if (norm.kind == SY_CL_NORM_MERGED) {
			sy_cl_new_uuid(nid);
			id = nid;
			if (norm.op != SY_OP_DELETE) {
				const char *list[256];
				for (size_t k = 0; k < norm.consumed; k++)
					list[k] = chain[at + k]->columns;
				if ((cols = sy_cl_merge_columns(list, norm.consumed, err)) == NULL)
					return err ? err->rc : SY_CLIENT_ENOMEM;
			}
		}
		const char *wcols = norm.kind == SY_CL_NORM_MERGED ? cols : head->columns;
		if (norm.op == SY_OP_DELETE)
			wcols = NULL;
		sy_buf wire = SY_BUF_INIT;
		size_t id_at = 0;
		char why[SY_ERROR_MESSAGE_MAX];
		const sy_cl_wire_head wh = {head->schema_version, head->hash, head->cv,
		                            head->pk_field,       head->pk,   head->tbl};
		int verdict =
		        sy_cl_mutation_text(&wire, id, &wh, norm.op, wcols, head->base, &id_at)
		                ? sy_cl_mutation_fits(c, &wire, wcols, why, sizeof why)
		                : -1;
		if (verdict < 0) {
			sy_buf_free(&wire);
			sy_free(cols);
			return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
		}
		size_t len = wire.len;
		bool fits = verdict == 1;
		if (fits && p->bytes + len + ENVELOPE_ROOM > SY_PUSH_MAX_BODY) {
			/* The batch is full: this row waits for the next one (atomic: blocked). */
			if (!atomic) {
				sy_buf_free(&wire);
				sy_free(cols);
				*stop = true;
				return SY_CLIENT_OK;
			}
			fits = false;
			snprintf(why, sizeof why, "the atomic transaction exceeds %d octets",
			         SY_PUSH_MAX_BODY);
		}
		if (norm.kind == SY_CL_NORM_MERGED) {
			int64_t ord = last->ord;
			char made[SY_UUID_LEN + 1];
			sy_schema_ref ref = {.version = head->schema_version};
			memcpy(ref.hash, head->hash, SY_HASH_HEX_LEN + 1);
			rc = sy_cl_intent_insert(c, head->txn, true, ord, head->tbl, head->pk,
			                         head->pk_field, sy_op_name(norm.op), cols,
			                         head->base, last->cv, &ref, "pending", NULL, made,
			                         err);
			if (rc == SY_CLIENT_OK) {
				/* the id minted for the wire object is the one stored (same length)
				 */
				memcpy(wire.data + id_at, made, SY_UUID_LEN);
				memcpy(nid, made, sizeof nid);
			}
			for (size_t k = at; k < at + norm.consumed && rc == SY_CLIENT_OK; k++) {
				rc = set_state(c, chain[k]->id, "superseded_before_send", nid, NULL,
				               NULL, NULL, err);
				chain[k]->done = true;
			}
		}
		sy_free(cols);
		head->done = true;
		if (rc == SY_CLIENT_OK && fits)
			rc = add_wire(p, id, &wire, err);
		sy_buf_free(&wire);
		if (rc != SY_CLIENT_OK)
			return rc;
		if (!fits) {
			/* doc/contract.md#sealing: a push limit is enforced at sealing; the intent
			 * is blocked locally.
			 */
			char *note = local_outcome("push_limit", why);
			rc = set_state(c, id, "blocked_limit", NULL, NULL, "push_limit", note, err);
			sy_free(note);
			if (rc == SY_CLIENT_OK)
				rc = block_rest(c, chain, at + norm.consumed, n, id, err);
			if (atomic)
				*stop = true; /* the atomic group cannot go whole */
			return rc;
		}
		/* What follows on this row waits for this mutation's outcome. */
		for (size_t k = at + norm.consumed; k < n && rc == SY_CLIENT_OK; k++) {
			rc = set_state(c, chain[k]->id, "waiting", NULL, id, NULL, NULL, err);
			chain[k]->done = true;
		}
		return rc == SY_CLIENT_OK ? wait_unloaded(c, p, head, id, longer, err) : rc;
	}
	return rc;
}

typedef struct {
	size_t start, len; /* a chain in the sorted array */
	const irow *head;  /* its first intent in local order */
} chain_group;

static bool same_row(const irow *a, const irow *b)
{
	return strcmp(a->tbl, b->tbl) == 0 && strcmp(a->pk, b->pk) == 0;
}

static int compare_local_order(const irow *a, const irow *b)
{
	if (a->ord != b->ord)
		return a->ord < b->ord ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int compare_row_order(const void *pa, const void *pb)
{
	const irow *a = *(const irow *const *)pa, *b = *(const irow *const *)pb;
	int d = strcmp(a->tbl, b->tbl);
	if (d == 0)
		d = strcmp(a->pk, b->pk);
	return d != 0 ? d : compare_local_order(a, b);
}

static int compare_groups(const void *pa, const void *pb)
{
	return compare_local_order(((const chain_group *)pa)->head,
	                           ((const chain_group *)pb)->head);
}

/*
 * One sealing inside the caller's transaction (which rolls back on failure):
 * *out the sealed request parsed (new), NULL when nothing was sealed; sealed_id
 * its batch id.
 */
static sy_client_rc seal(sy_client *c, char sealed_id[SY_UUID_LEN + 1], sy_push_request **out,
                         sy_client_error *err)
{
	assert(!sqlite3_get_autocommit(c->db)); /* inside the caller's transaction */
	irows r = {0};
	pass p = {0};
	sy_push_request *req = NULL;
	sy_client_rc rc = SY_CLIENT_OK;
	*out = NULL;
	/*
	 * Enough intents for one batch, not the whole queue: a chain cut by the limit
	 * loses only normalization (its unloaded rest waits behind what is sent, see
	 * wait_unloaded). An atomic transaction is always loaded whole.
	 */
	int64_t limit = 2 * (int64_t)c->batch_max + 1;
	if ((rc = load_pending(c, limit, &r, err)) != SY_CLIENT_OK || r.n == 0)
		goto done;
	p.cut = (int64_t)r.n == limit;
	if (r.v[0].atomic && p.cut) {
		irows_free(&r);
		if ((rc = load_pending(c, -1, &r, err)) != SY_CLIENT_OK)
			goto done;
		p.cut = false;
	}
	p.last_ord = r.v[r.n - 1].ord;
	if (r.v[0].atomic) { /* one batch, whole: not while a member waits, never once one failed */
		int verdict = 0;
		if ((rc = sy_cl_atomic_group_check(c, r.v[0].txn, &verdict, err)) != SY_CLIENT_OK)
			goto done;
		if (verdict != 0)
			goto done;
	}
	irow **chain = sy_calloc(r.n, sizeof *chain);
	if (chain == NULL) {
		sy_free(chain);
		rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
		goto done;
	}
	/* The group: one atomic transaction, or the run of non-atomic intents before one. */
	bool atomic = r.v[0].atomic;
	int64_t txn = r.v[0].txn;
	size_t end = 0;
	while (end < r.n && (atomic ? r.v[end].txn == txn : !r.v[end].atomic))
		end++;
	p.outside = end < r.n;
	/*
	 * Same-row chains, taken in the local order of their first intent: the group's
	 * intents sorted by (table, pk, local order) make each chain contiguous.
	 */
	irow **idx = sy_calloc(end ? end : 1, sizeof *idx);
	chain_group *groups = sy_calloc(end ? end : 1, sizeof *groups);
	size_t ngroups = 0;
	if (idx == NULL || groups == NULL) {
		sy_free(idx);
		sy_free(groups);
		sy_free(chain);
		rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < end; i++)
		idx[i] = &r.v[i];
	qsort(idx, end, sizeof *idx, compare_row_order);
	for (size_t i = 0; i < end; i++) {
		if (i == 0 || !same_row(idx[i], idx[i - 1])) {
			groups[ngroups].start = i;
			groups[ngroups].head = idx[i];
			groups[ngroups].len = 0;
			ngroups++;
		}
		groups[ngroups - 1].len++;
	}
	qsort(groups, ngroups, sizeof *groups, compare_groups);
	bool stop = false;
	for (size_t g = 0; g < ngroups && !stop && rc == SY_CLIENT_OK && p.n < c->batch_max; g++) {
		/* the rest of a very long chain waits for the next pass */
		size_t n = groups[g].len > 256 ? 256 : groups[g].len;
		for (size_t k = 0; k < n; k++)
			chain[k] = idx[groups[g].start + k];
		rc = seal_chain(c, &p, chain, n, groups[g].len > n, atomic, &stop, err);
	}
	sy_free(idx);
	sy_free(groups);
	sy_free(chain);
	if (rc != SY_CLIENT_OK)
		goto done;
	if (p.n > 0 && !(atomic && stop)) {
		char batch_id[SY_UUID_LEN + 1];
		sy_cl_new_uuid(batch_id);
		sy_buf b = SY_BUF_INIT;
		size_t len = 0;
		char *body = sy_cl_envelope_text(&b, c, batch_id, atomic, p.mutations.data,
		                                 p.mutations.len)
		                     ? sy_buf_steal(&b, &len)
		                     : NULL;
		if (body == NULL) {
			sy_buf_free(&b);
			rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
			goto done;
		}
		/* The sealed bytes pass the server's own structural validation. */
		sy_error e = {0};
		req = sy_push_parse(body, len, &e);
		if (req == NULL)
			rc = sy_cl_fail(err, SY_CLIENT_EPROTOCOL, "sealing: %s", e.message);
		if (rc == SY_CLIENT_OK)
			rc = store_batch(c, batch_id, atomic, body, len, p.ids, p.n, err);
		sy_free(body);
		if (rc != SY_CLIENT_OK)
			goto done;
		memcpy(sealed_id, batch_id, SY_UUID_LEN + 1);
		*out = req;
		req = NULL;
	} else if (atomic && stop) {
		/* An atomic transaction that cannot go whole: every member stays out. */
		for (size_t i = 0; i < end && rc == SY_CLIENT_OK; i++)
			if (!r.v[i].done)
				rc = set_state(c, r.v[i].id, "blocked_limit", NULL, NULL,
				               "atomic_group_blocked", NULL, err);
		for (size_t i = 0; i < p.n && rc == SY_CLIENT_OK; i++)
			rc = set_state(c, p.ids[i], "blocked_limit", NULL, NULL,
			               "atomic_group_blocked", NULL, err);
		if (rc == SY_CLIENT_OK)
			rc = sy_cl_block_waiters(c, err);
	}
done:
	sy_push_request_free(req);
	for (size_t i = 0; i < p.n; i++)
		sy_free(p.ids[i]);
	sy_free(p.ids);
	sy_buf_free(&p.mutations);
	irows_free(&r);
	return rc;
}

sy_client_rc sy_cl_push_due(sy_client *c, bool *due, sy_client_error *err)
{
	sqlite3_stmt *st;
	*due = false;
	if (c->frozen || c->retired)
		return SY_CLIENT_OK;
	/* Prepared each time (once a rebuild page): the statement cache is for the hot paths. */
	sy_client_rc rc =
	        sy_cl_prepare(c,
	                      "SELECT EXISTS (SELECT 1 FROM batches WHERE state = 'sealed')"
	                      " OR EXISTS (SELECT 1 FROM intents WHERE state = 'pending')",
	                      &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	int s = sqlite3_step(st);
	*due = s == SQLITE_ROW && sqlite3_column_int(st, 0) != 0;
	rc = s == SQLITE_ROW ? SY_CLIENT_OK : sy_cl_store_fail(c, err, "pending intents");
	sqlite3_finalize(st);
	return rc;
}

sy_client_rc sy_cl_seal_next(sy_client *c, bool *sealed, sy_client_error *err)
{
	char id[SY_UUID_LEN + 1];
	sy_push_request *req = NULL;
	*sealed = false;
	sy_client_rc rc = sy_cl_begin(c, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	if ((rc = seal(c, id, &req, err)) != SY_CLIENT_OK) {
		sy_cl_rollback(c);
		return rc;
	}
	if ((rc = sy_cl_commit(c, err)) != SY_CLIENT_OK) {
		sy_push_request_free(req);
		return rc;
	}
	if (req != NULL) {
		sy_cl_req_put(c, id, req);
		*sealed = true;
	}
	return SY_CLIENT_OK;
}

sy_client_rc sy_cl_seal_ahead(sy_client *c, bool *ran, char id[SY_UUID_LEN + 1],
                              sy_push_request **req, sy_client_error *err)
{
	assert(!sqlite3_get_autocommit(c->db)); /* inside the caller's transaction */
	sqlite3_stmt *st;
	*ran = false;
	*req = NULL;
	/* Only behind the one batch in flight: never a queue of batches sealed ahead. */
	sy_client_rc rc = sy_cl_prepare_cached(
	        c, "SELECT count(*) = 1 FROM batches WHERE state = 'sealed'", &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	int s = sqlite3_step(st);
	bool one = s == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
	sy_cl_release(st);
	if (s != SQLITE_ROW)
		return sy_cl_store_fail(c, err, "sealed batches");
	if (!one) {
		*ran = true;
		return SY_CLIENT_OK;
	}
	if ((rc = sy_cl_exec(c, "SAVEPOINT seal_ahead", err)) != SY_CLIENT_OK)
		return rc;
	/* A failed sealing is undone alone, the transaction's earlier work kept: the next
	 * sealing outside (sy_cl_seal_next) meets the failure again and reports it. */
	if (seal(c, id, req, NULL) == SY_CLIENT_OK)
		*ran = true;
	else if ((rc = sy_cl_exec(c, "ROLLBACK TO seal_ahead", err)) != SY_CLIENT_OK)
		return rc;
	if ((rc = sy_cl_exec(c, "RELEASE seal_ahead", err)) != SY_CLIENT_OK) {
		sy_push_request_free(*req);
		*req = NULL;
		*ran = false;
	}
	return rc;
}

sy_client_rc sy_cl_seal_successor(sy_client *c, const char *batch_id, sy_client_error *err)
{
	sqlite3_stmt *st = NULL;
	sy_json_doc *old = NULL;
	sy_buf arr = SY_BUF_INIT, b = SY_BUF_INIT;
	char **ids = NULL;
	size_t n = 0;
	char *body = NULL;
	bool atomic = false;
	sy_client_rc rc = sy_cl_begin(c, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	if ((rc = sy_cl_prepare(c, "SELECT body, atomic FROM batches WHERE batch_id = ?", &st,
	                        err)) != SY_CLIENT_OK)
		goto fail;
	sqlite3_bind_text(st, 1, batch_id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW) {
		rc = sy_cl_fail(err, SY_CLIENT_ENOTFOUND, "no batch %s", batch_id);
		goto fail;
	}
	sy_error e = {0};
	old = sy_json_parse(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0), &e);
	atomic = sqlite3_column_int(st, 1) != 0;
	sqlite3_finalize(st);
	st = NULL;
	const sy_json *ms = old ? sy_json_get(sy_json_doc_root(old), "mutations") : NULL;
	if (ms == NULL || ms->type != SY_JSON_ARRAY) {
		rc = sy_cl_fail(err, SY_CLIENT_ESTORE, "sealed batch %s cannot be read", batch_id);
		goto fail;
	}
	ids = sy_calloc(ms->u.array.count + 1, sizeof *ids);
	if (ids == NULL) {
		rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < ms->u.array.count; i++) {
		/* doc/contract.md#successor-batches: each unchanged authored mutation keeps its id
		 * and its exact content. */
		const sy_json *m = ms->u.array.items[i];
		const char *id = sy_cl_jstr(m, "mutation_id");
		sy_error je = {0};
		if (id == NULL || (i > 0 && !sy_buf_putc(&arr, ',')) ||
		    !sy_jcs_write(&arr, m, &je) || (ids[n] = sy_strndup(id, strlen(id))) == NULL) {
			rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
			goto fail;
		}
		n++;
	}
	char nb[SY_UUID_LEN + 1];
	sy_cl_new_uuid(nb);
	size_t len = 0;
	if (!sy_cl_envelope_text(&b, c, nb, atomic, arr.data, arr.len) ||
	    (body = sy_buf_steal(&b, &len)) == NULL) {
		rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = sy_cl_prepare(c,
	                        "UPDATE batches SET state = 'superseded', successor = ?,"
	                        " completed_ms = ? WHERE batch_id = ?",
	                        &st, err)) != SY_CLIENT_OK)
		goto fail;
	sqlite3_bind_text(st, 1, nb, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, sy_cl_now(c));
	sqlite3_bind_text(st, 3, batch_id, -1, SQLITE_STATIC);
	rc = sy_cl_run(c, st, err);
	st = NULL;
	if (rc == SY_CLIENT_OK)
		rc = store_batch(c, nb, atomic, body, len, ids, n, err);
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_commit(c, err);
	if (rc == SY_CLIENT_OK)
		goto done;
fail:
	sqlite3_finalize(st);
	sy_cl_rollback(c);
done:
	for (size_t i = 0; i < n; i++)
		sy_free(ids[i]);
	sy_free(ids);
	sy_free(body);
	sy_buf_free(&arr);
	sy_buf_free(&b);
	sy_json_doc_free(old);
	return rc;
}
