/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The mutation ledger side of replay (ADR "Exact replay"): a mutation identity already
 * ledgered by another batch contributes its exact stored outcome when its fingerprint is
 * equal (no re-execution), and makes the request 409 idempotency_conflict when it differs
 * (push_gates.c decides). The batch side of replay is the head lookup (push_gates.c).
 */
#include "postgres.h"

#include "utils/uuid.h"

#include "push_module.h"
#include "synchro/alloc.h"

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

/* One primary-key probe of the mutation ledger per id, in request order, under one snapshot. */
void sp_probe_ledger(sp_push *x)
{
	const sy_push_request *req = x->req;
	size_t n = req->mutation_count;
	sp_lookup *lk = &x->lk;

	fingerprints(x);
	lk->probed = true;
	lk->nled = 0;
	lk->led = NULL;
	Snapshot snap = sp_probe_snapshot();
	sp_probe p;
	sp_probe_open(&p, "mutations");
	for (size_t k = 0; k < n; k++) {
		Datum key[] = {x->user_d, x->client_d, sp_uuid_datum(req->mutations[k].mutation_id)};
		if (!sp_probe_find(&p, 3, key, snap))
			continue;
		if (lk->led == NULL)
			lk->led = palloc0(sizeof *lk->led * n);
		size_t dlen;
		bool isnull;
		char *alg = sp_probe_text(&p, "fp_algorithm");
		char *domain = sp_probe_text(&p, "fp_domain");
		char *digest = sp_probe_bytes(&p, "fingerprint", &dlen);
		char *code = sp_probe_text(&p, "code");
		Datum batch = sp_probe_get(&p, "batch_id", &isnull);
		sp_ledgered *l = &lk->led[lk->nled++];
		l->index = k;
		l->same_batch = !isnull && memcmp(DatumGetUUIDP(batch), DatumGetUUIDP(x->batch_d),
		                                  UUID_LEN) == 0;
		l->fp_equal = alg != NULL && domain != NULL &&
		              sy_fp_matches(&x->mfp[k], alg, (int)sp_probe_int(&p, "fp_version"),
		                            domain, (const uint8_t *)digest, dlen);
		l->atomic_rejected = code != NULL && strcmp(code, "atomic_batch_rejected") == 0;
		l->outcome = sp_probe_bytes(&p, "outcome", &l->outcome_len);
		if (l->outcome == NULL)
			sp_fail("a mutation ledger row has no outcome");
	}
	sp_probe_close(&p);
	sp_probe_snapshot_end(snap);
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
