/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The mutation ledger side of replay (ADR "Exact replay"): a mutation identity already
 * ledgered by another batch contributes its exact stored outcome when its fingerprint is
 * equal (no re-execution), and makes the request 409 idempotency_conflict when it differs
 * (push_gates.c decides). The batch side of replay is the head lookup (push_gates.c).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/lsyscache.h"

#include "push_module.h"
#include "synchro/alloc.h"

/*
 * One primary-key probe per id, in request order (the LATERAL ... LIMIT 1 keeps it a
 * parameterized probe whatever the statistics say, never a scan of the client's ledger).
 */
static const char ledger_sql[] =
        "SELECT q.i - 1, m.batch_id = $4, m.fp_algorithm, m.fp_version, m.fp_domain,"
        "       m.fingerprint, m.outcome, m.code IS NOT DISTINCT FROM 'atomic_batch_rejected'"
        "  FROM unnest($3::uuid[]) WITH ORDINALITY AS q(id, i)"
        "  CROSS JOIN LATERAL (SELECT * FROM synchro.mutations l"
        "        WHERE l.user_id = $1 AND l.client_id = $2 AND l.mutation_id = q.id"
        "        LIMIT 1) m";

/* The mutation fingerprints, made once (only a request that reaches the ledger needs them). */
static void fingerprints(sp_push *x)
{
	sy_error e = {0};
	if (x->mfp != NULL)
		return;
	x->mfp = sy_calloc(x->req->mutation_count, sizeof *x->mfp);
	if (x->mfp == NULL)
		sp_nomem("fingerprints");
	/* The user was checked by the batch fingerprint: only memory can fail here. */
	if (!sy_fp_mutations(x->req, x->user, strlen(x->user), x->mfp, &e))
		sp_nomem("fingerprints");
}

void sp_probe_ledger(sp_push *x)
{
	static Oid types[] = {TEXTOID, UUIDOID, InvalidOid, UUIDOID};
	const sy_push_request *req = x->req;
	size_t n = req->mutation_count;
	sp_lookup *lk = &x->lk;

	fingerprints(x);
	if (types[2] == InvalidOid)
		types[2] = get_array_type(UUIDOID);
	Datum *ids = palloc(sizeof *ids * n);
	for (size_t i = 0; i < n; i++)
		ids[i] = sp_uuid_datum(req->mutations[i].mutation_id);
	ArrayType *arr = construct_array(ids, (int)n, UUIDOID, 16, false, TYPALIGN_CHAR);
	Datum v[] = {x->user_d, x->client_d, PointerGetDatum(arr), x->batch_d};
	sp_run(sp_plan(ledger_sql, 4, types), v, NULL, SPI_OK_SELECT);

	lk->probed = true;
	lk->nled = 0;
	lk->led = SPI_processed > 0 ? palloc0(sizeof *lk->led * SPI_processed) : NULL;
	for (uint64 r = 0; r < SPI_processed; r++) {
		int64 k = sp_int(r, 1);
		if (k < 0 || (size_t)k >= n)
			sp_fail("mutation ledger lookup");
		size_t dlen;
		char *alg = sp_text(r, 3);
		char *domain = sp_text(r, 5);
		char *digest = sp_bytes(r, 6, &dlen);
		sp_ledgered *l = &lk->led[lk->nled++];
		l->index = (size_t)k;
		l->same_batch = sp_bool(r, 2);
		l->fp_equal = sy_fp_matches(&x->mfp[k], alg, (int)sp_int(r, 4), domain,
		                            (const uint8_t *)digest, dlen);
		l->atomic_rejected = sp_bool(r, 8);
		l->outcome = sp_bytes(r, 7, &l->outcome_len);
		if (l->outcome == NULL)
			sp_fail("a mutation ledger row has no outcome");
	}
	SPI_freetuptable(SPI_tuptable);
}

/* Stored outcomes of mutations ledgered by other batches, into the outcome arena. */
void sp_take_stored(sp_push *x)
{
	for (size_t i = 0; i < x->lk.nled; i++) {
		const sp_ledgered *l = &x->lk.led[i];
		sy_error e = {0};
		sy_json_doc *d = sy_json_parse(l->outcome, l->outcome_len, &e);
		if (d == NULL) {
			if (e.code == SY_ERR_NOMEM)
				sp_nomem("stored outcome");
			sp_fail("a stored outcome does not parse");
		}
		const sy_json *copy = sy_json_copy(x->doc, sy_json_doc_root(d));
		sy_json_doc_free(d);
		if (copy == NULL)
			sp_nomem("stored outcome");
		x->res[l->index].stored = copy;
	}
}
