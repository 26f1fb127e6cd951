/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_replay.c: replay of the same octets, and the mutation ledger lookup.
 *
 * Layer: middle of src/pg (doc/hacking.md).
 * Rules: doc/contract.md#exact-replay (the same octets get the stored answer),
 * doc/contract.md#cross-batch-replay (a mutation ledgered by another batch).
 * Notes: A request's digest is a SHA-256 over a domain, the authenticated user and the
 * exact body (synchro/request_digest.h). When it equals the one stored with its batch, the
 * batch row answers the request before it is parsed.
 *
 * A mutation identity may be already ledgered by another batch. When its fingerprint is
 * equal, it contributes its exact stored outcome, with no new execution. When the
 * fingerprint differs, the request gets 409 idempotency_conflict (push_gates.c decides).
 * The batch side of a parsed request's replay is the head lookup and sp_decide
 * (push_gates.c).
 */
#include "postgres.h"

#include "utils/uuid.h"

#include "push_module.h"
#include "synchro/alloc.h"
#include "synchro/request_digest.h"

/*
 * doc/contract.md#dispatch-order: structural validation and retirement precede the replay lookup. A
 * digest equal to the one stored with the batch means these octets, from this user, are the octets
 * of that batch's first execution, which were parsed, validated and fingerprinted then with the
 * rules the digest's domain names: parsing them again would give the same request and the
 * same fingerprint, and the stored fingerprint equals it. So the parse is skipped, nothing
 * else: the gates before replay (client, retirement) are decided from the same lookup, in
 * the core's dispatch order (sp_decide), and nothing after replay is looked at, as for any
 * exact replay. The peeked ids only find the row: a wrong peek finds no row or a row with
 * another digest, and the request takes the full path.
 */
bool sp_replay_octets(sp_push *x, const char *body, size_t len)
{
	const sp_lookup *lk = &x->lk;
	sy_error e = {0};

	/* Without a digest (no memory) the batch is stored without one: the full path. */
	x->has_request_digest =
	        sy_request_digest(x->user, strlen(x->user), body, len, x->request_digest, &e);
	if (!x->has_request_digest ||
	    !sy_request_peek_ids(body, len, x->peek_client, x->peek_batch))
		return false;
	x->user_d = sp_text_datum(x->user, strlen(x->user));
	x->client_d = sp_uuid_datum(x->peek_client);
	x->batch_d = sp_uuid_datum(x->peek_batch);
	sp_lookup_head(x);
	x->looked_up = true;
	if (!lk->batch_found || lk->request_digest == NULL ||
	    lk->request_digest_len != SY_FP_DIGEST_LEN ||
	    memcmp(lk->request_digest, x->request_digest, SY_FP_DIGEST_LEN) != 0)
		return false;
	x->lk.batch_fp_equal = true;
	/* A found batch always refuses at the replay gate, if no gate before it does. */
	if (sp_decide(x) != SP_DONE)
		sp_fail("an equal request digest reached no answer");
	return true;
}

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
