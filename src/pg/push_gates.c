/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_gates.c: the gates of the dispatch order that need the database, in its order.
 *
 * Layer: middle of src/pg (doc/hacking.md).
 * Rules: doc/contract.md#dispatch-order (the order of the gates),
 * doc/contract.md#replay-first (replay comes before every current-schema check).
 * Notes: The gates come in this order. The calling transaction has no pending deferrable
 * trigger event. The client is bound to the caller (401). Retirement (409 client_retired).
 * The batch and mutation replay lookup. The primary-key rule of the current schema (400).
 * The generation gate (409 client_generation_expired). The schema gate (422
 * schema_mismatch). Then admission (429). The file finds the facts each gate needs, in the
 * order sy_dispatch_decide() (src/core/dispatch.c) reads them. Replay precedes every
 * current-schema check. So an exact replay never depends on what was published since.
 */
#include "postgres.h"

#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "push_module.h"
#include "synchro/dispatch.h"

/* ---- the calling transaction ---- */

/* Relations that have a deferrable trigger (FK checks, deferrable unique keys, constraint
 * triggers), read again after any relcache invalidation. */
static Oid *deferrable;
static int ndeferrable = -1;

void sp_invalidate_deferrable(Datum arg, Oid relid)
{
	(void)arg;
	(void)relid;
	ndeferrable = -1;
}

static const char deferrable_sql[] =
        "SELECT DISTINCT t.tgrelid FROM pg_catalog.pg_trigger t WHERE t.tgdeferrable";

/*
 * doc/contract.md#push-units: before the first unit (and before any ledger claim),
 * no relation with a deferrable trigger may have a pending trigger event in the calling
 * transaction, since SET CONSTRAINTS ALL IMMEDIATE at a unit end would fire it. The call
 * then fails with SQLSTATE 25000 and the event is never fired by us.
 */
void sp_check_calling_transaction(void)
{
	if (ndeferrable < 0) {
		sp_run(sp_plan(deferrable_sql, 0, NULL), NULL, NULL, SPI_OK_SELECT);
		Oid *list =
		        MemoryContextAlloc(sp_cache_context(), sizeof *list * (SPI_processed + 1));
		for (uint64 i = 0; i < SPI_processed; i++)
			list[i] = (Oid)sp_int(i, 1);
		if (deferrable != NULL)
			pfree(deferrable);
		deferrable = list;
		ndeferrable = (int)SPI_processed;
	}
	for (int i = 0; i < ndeferrable; i++)
		if (AfterTriggerPendingOnRel(deferrable[i]))
			ereport(ERROR, (errcode(ERRCODE_INVALID_TRANSACTION_STATE),
			                errmsg("synchro_push: the calling transaction has a "
			                       "pending deferred "
			                       "trigger event"),
			                errhint("Call synchro_push in a transaction of its own, or "
			                        "run SET "
			                        "CONSTRAINTS ALL IMMEDIATE before it.")));
}

/* ---- lookup ---- */

/*
 * The transaction snapshot as sp_probe_snapshot() takes it, and its count of completed
 * transactions (snapXactCompletionCount; 0: unknown) into *completions. The count is read from
 * the snapshot GetTransactionSnapshot() answers, not from a registered copy (a copy's count is
 * zeroed); under REPEATABLE READ or SERIALIZABLE that is already the transaction's copy, so
 * the count is 0 there and the lookup under the lock is always made again.
 */
static Snapshot counted_snapshot(uint64 *completions)
{
	CommandCounterIncrement();
	Snapshot snap = GetTransactionSnapshot();
	*completions = snap->snapXactCompletionCount;
	return snap;
}

/*
 * Client, retirement, the latest published schema and the batch: primary-key probes under one
 * snapshot (push_index_probe.c), zero values where there is none. Before the client lock it
 * is the whole of an exact replay, made with the ids peeked from the body before it is parsed
 * (push_replay.c); after the lock it stands only while nothing could have changed it
 * (sp_lock_client). The batch's fingerprint is compared by sp_compare_batch_fp once the
 * request is parsed.
 */
void sp_lookup_head(sp_push *x)
{
	sp_lookup *lk = &x->lk;
	sp_probe p;
	Datum client[] = {x->client_d};
	Datum batch[] = {x->user_d, x->client_d, x->batch_d};

	memset(lk, 0, sizeof *lk);
	Snapshot snap = RegisterSnapshot(counted_snapshot(&lk->completions));
	sp_probe_open(&p, "clients");
	if (sp_probe_find(&p, 1, client, snap)) {
		char *owner = sp_probe_text(&p, "user_id");
		lk->client_found = true;
		lk->client_tid = p.slot->tts_tid;
		lk->bound = owner != NULL && strcmp(owner, x->user) == 0;
		lk->generation = sp_probe_int(&p, "generation");
	}
	sp_probe_close(&p);
	sp_probe_open(&p, "retirements");
	lk->retired = sp_probe_find(&p, 1, client, snap);
	sp_probe_close(&p);
	sp_probe_open(&p, "schema_versions");
	if (sp_probe_find_last(&p, snap))
		lk->latest = sp_probe_int(&p, "version");
	sp_probe_close(&p);
	sp_probe_open(&p, "batches");
	/* A database at migration 18 under this module (installed first) has no digests. */
	lk->digest_column = sp_probe_has(&p, "request_digest");
	if (sp_probe_find(&p, 3, batch, snap)) {
		char *state = sp_probe_text(&p, "state");
		lk->batch_found = true;
		lk->batch_complete = state != NULL && strcmp(state, "complete") == 0;
		lk->fp_algorithm = sp_probe_text(&p, "fp_algorithm");
		lk->fp_version = (int)sp_probe_int(&p, "fp_version");
		lk->fp_domain = sp_probe_text(&p, "fp_domain");
		lk->fp_digest = sp_probe_bytes(&p, "fingerprint", &lk->fp_digest_len);
		if (lk->digest_column)
			lk->request_digest =
			        sp_probe_bytes(&p, "request_digest", &lk->request_digest_len);
		lk->batch_status = (int)sp_probe_int(&p, "http_status");
		lk->response = sp_probe_bytes(&p, "response", &lk->response_len);
	}
	sp_probe_close(&p);
	sp_probe_snapshot_end(snap);
}

/* Whether the batch row found holds the parsed request's fingerprint (x->bfp). */
void sp_compare_batch_fp(sp_push *x)
{
	sp_lookup *lk = &x->lk;
	lk->batch_fp_equal = lk->batch_found && lk->fp_algorithm != NULL && lk->fp_domain != NULL &&
	                     sy_fp_matches(&x->bfp, lk->fp_algorithm, lk->fp_version, lk->fp_domain,
	                                   (const uint8_t *)lk->fp_digest, lk->fp_digest_len);
}

/*
 * doc/contract.md#concurrent-replay: requests of one client serialize on its row; the lock also
 * orders a push against connect (a new generation) and retirement, which update or lock this row.
 * What SELECT 1 FROM synchro.clients WHERE client_id = $1 FOR NO KEY UPDATE did (RowShareLock on
 * the table, refused in a read-only transaction, waiting under the push's lock_timeout), on
 * the row version the lookup found instead of a statement finding it again: under READ
 * COMMITTED the newest version of the row is locked (an update committed meanwhile is
 * followed; a deleted row locks nothing, and the lookup made again then finds no client),
 * under REPEATABLE READ or SERIALIZABLE a row changed since the snapshot fails with 40001,
 * as the statement did. True when the version the lookup found is the one locked.
 */
static bool lock_client_row(sp_push *x)
{
	sp_probe p;
	TM_FailureData tmfd;
	ItemPointerData tid = x->lk.client_tid;
	bool xact_snapshot = IsolationUsesXactSnapshot();

	PreventCommandIfReadOnly("SELECT FOR NO KEY UPDATE");
	PreventCommandIfParallelMode("SELECT FOR NO KEY UPDATE");
	sp_probe_open(&p, "clients");
	LockRelationOid(RelationGetRelid(p.rel), RowShareLock);
	/* heap's tuple_lock reads no snapshot; the statement's is passed as the executor does */
	TM_Result r = table_tuple_lock(
	        p.rel, &tid, ActiveSnapshotSet() ? GetActiveSnapshot() : NULL, p.slot,
	        GetCurrentCommandId(true), LockTupleNoKeyExclusive, LockWaitBlock,
	        xact_snapshot ? 0 : TUPLE_LOCK_FLAG_FIND_LAST_VERSION, &tmfd);
	if (r == TM_Ok)
		x->client_locked = tid;
	sp_probe_close(&p);
	switch (r) {
	case TM_Ok: return !tmfd.traversed;
	case TM_SelfModified: return false; /* as the statement: not locked, not returned */
	case TM_Updated:
	case TM_Deleted:
		if (xact_snapshot)
			ereport(ERROR,
			        (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			         errmsg("could not serialize access due to concurrent update")));
		if (r == TM_Deleted)
			return false;
		sp_fail("the client row could not be locked");
	default: sp_fail("the client row could not be locked");
	}
}

/*
 * The client lock, and the head lookup under it. The lookup is made again unless the row
 * locked is the version it found and a snapshot taken now has the lookup snapshot's count of
 * completed transactions (snapXactCompletionCount, which every commit and abort of a
 * transaction with an xid advances under ProcArrayLock): then no transaction ended between
 * the two snapshots, they have the same running transactions and horizon, so the same rows
 * are visible to both, and the four probes would read what they read (this call writes
 * none of their tables in between). A push that held the lock while this one waited has
 * ended its transaction when the lock is granted, so the lookup is always made again after
 * a wait: it sees that push's batch, a retirement, a connect or a publish committed
 * meanwhile (READ COMMITTED), as a statement after the lock would. Under REPEATABLE READ or
 * SERIALIZABLE the count is unknown (counted_snapshot) and the lookup made again, as before.
 */
void sp_lock_client(sp_push *x)
{
	sp_lookup *lk = &x->lk;
	if (!lk->client_found)
		sp_fail("no client row to lock");
	bool same = lock_client_row(x);
	uint64 now;
	(void)counted_snapshot(&now);
	same = same && lk->completions != 0 && now == lk->completions;
	if (same) {
		lk->probed = false;
		lk->led = NULL;
		lk->nled = 0;
	} else
		sp_lookup_head(x);
	sp_compare_batch_fp(x);
}

void sp_current_schema(sp_push *x)
{
	if (x->cur != NULL && x->cur->version == x->lk.latest)
		return;
	x->cur = x->lk.latest > 0 ? sp_schema_get(x->lk.latest) : NULL;
}

/* ---- decisions ---- */

/*
 * doc/contract.md#push-request: the pk of a mutation whose table is in the current schema must be
 * that table's pk (field and canonical value), else the request is 400 (the message into *why);
 * a mutation authored under a schema whose pk the current one no longer has is retained
 * intent, classified schema_incompatible per mutation (push_terminal.c) instead.
 */
static bool pk_refused(sp_push *x, sy_error *why)
{
	const sy_push_request *req = x->req;
	for (size_t i = 0; i < req->mutation_count; i++) {
		const sy_mutation *m = &req->mutations[i];
		const sy_table *t = sy_manifest_table(x->cur->m, m->table_id, m->table_len);
		sy_error e = {0};
		if (t == NULL || sy_push_check_pk(req, i, t, &e))
			continue;
		if (e.code == SY_ERR_NOMEM)
			sp_nomem("schema check");
		sp_schema *a = NULL;
		if (m->authored_schema.version != (uint64_t)x->cur->version &&
		    m->authored_schema.version <= (uint64_t)PG_INT64_MAX)
			a = sp_schema_get((int64)m->authored_schema.version);
		const sy_table *at = a != NULL && strcmp(a->hash, m->authored_schema.hash) == 0
		                             ? sy_manifest_table(a->m, m->table_id, m->table_len)
		                             : NULL;
		sy_error ae = {0};
		if (at != NULL && sy_push_check_pk(req, i, at, &ae))
			continue;
		if (ae.code == SY_ERR_NOMEM)
			sp_nomem("schema check");
		*why = e;
		return true;
	}
	return false;
}

/* The mutation ledger's refusal of the request (read by sp_probe_ledger), into *why. */
static bool ledger_refused(const sp_push *x, sy_error *why)
{
	const sp_lookup *lk = &x->lk;
	const sy_push_request *req = x->req;
	for (size_t i = 0; i < lk->nled; i++)
		if (!lk->led[i].fp_equal)
			return !sy_error_set(
			        why, SY_ERR_IDEMPOTENCY_CONFLICT,
			        "mutations[%zu].mutation_id was used for a different mutation",
			        lk->led[i].index);
	if (req->atomic && lk->nled > 0)
		return !sy_error_set(why, SY_ERR_INVALID_REQUEST,
		                     "mutations[%zu].mutation_id: an atomic request cannot carry a "
		                     "mutation recorded by another batch",
		                     lk->led[0].index);
	/* The symmetric rule: a non-atomic response never carries atomic_batch_rejected
	 * (doc/contract.md#atomic-batches), so a mutation rejected with its atomic group needs a
	 * new mutation_id. */
	for (size_t i = 0; !req->atomic && i < lk->nled; i++)
		if (lk->led[i].atomic_rejected)
			return !sy_error_set(why, SY_ERR_INVALID_REQUEST,
			                     "mutations[%zu].mutation_id: rejected with its atomic "
			                     "batch; a new attempt needs a new mutation_id",
			                     lk->led[i].index);
	return false;
}

static bool schema_is_current(const sp_push *x)
{
	return x->req->schema.version == (uint64_t)x->cur->version &&
	       strcmp(x->req->schema.hash, x->cur->hash) == 0;
}

/* The answer of the batch ledger: an exact replay or a batch identity conflict. */
static void answer_replay(sp_push *x)
{
	const sp_lookup *lk = &x->lk;
	if (!lk->batch_fp_equal) {
		sp_answer_error(x, SY_ERR_IDEMPOTENCY_CONFLICT,
		                "batch_id was used for a different request");
		return;
	}
	if (!lk->batch_complete || lk->response == NULL)
		sp_fail("a visible batch row is not complete");
	x->error = SY_ERR_NONE;
	x->status = lk->batch_status;
	x->replay = true;
	x->body = lk->response;
	x->body_len = lk->response_len;
}

sp_next sp_decide(sp_push *x)
{
	const sp_lookup *lk = &x->lk;
	const sy_push_request *req = x->req;
	sy_error ledger = {0}, pk = {0};
	sy_gate_facts f;

	/* Authentication, the protocol gate and structural validation ran before. */
	sy_gate_facts_init(&f, SY_GATES_PUSH & ~SY_GATES_FRONT & ~SY_GATE_BIT(SY_GATE_STRUCTURE));
	f.check[SY_GATE_CLIENT] = lk->client_found && lk->bound ? SY_CHECK_PASS : SY_CHECK_FAIL;
	f.check[SY_GATE_RETIRED] = lk->retired ? SY_CHECK_FAIL : SY_CHECK_PASS;
	/* doc/contract.md#replay-first: before every mutable check. The mutation ledger is read
	 * only when a later gate refuses (SY_DISPATCH_CHECK) and under the client lock. */
	if (lk->batch_found || (lk->probed && ledger_refused(x, &ledger)))
		f.check[SY_GATE_REPLAY] = SY_CHECK_FAIL;
	else if (lk->probed)
		f.check[SY_GATE_REPLAY] = SY_CHECK_PASS;
	if (!lk->batch_found) {
		sp_current_schema(x);
		f.check[SY_GATE_PUBLISHED] = x->cur != NULL ? SY_CHECK_PASS : SY_CHECK_FAIL;
	}
	if (!lk->batch_found && x->cur != NULL) {
		f.check[SY_GATE_PK] = pk_refused(x, &pk) ? SY_CHECK_FAIL : SY_CHECK_PASS;
		f.check[SY_GATE_GENERATION] = (int64)req->client_generation == lk->generation
		                                      ? SY_CHECK_PASS
		                                      : SY_CHECK_FAIL;
		f.check[SY_GATE_SCHEMA] = schema_is_current(x) ? SY_CHECK_PASS : SY_CHECK_FAIL;
	}
	if (x->admission_refused)
		f.check[SY_GATE_ADMISSION] = SY_CHECK_FAIL;

	sy_dispatch d = sy_dispatch_decide(&f);
	if (d.verdict == SY_DISPATCH_GO)
		return SP_GO;
	if (d.verdict == SY_DISPATCH_CHECK) {
		/* Only the mutation ledger is ever unknown before a known refusal. */
		if (d.gate != SY_GATE_REPLAY)
			sp_fail("gate order");
		return SP_PROBE;
	}
	switch (d.gate) {
	case SY_GATE_CLIENT:
		sp_answer_error(x, SY_ERR_AUTH_REQUIRED,
		                "the client is not registered to this user");
		break;
	case SY_GATE_RETIRED:
		sp_answer_error(x, SY_ERR_CLIENT_RETIRED, "the client is retired");
		break;
	case SY_GATE_REPLAY:
		if (lk->batch_found)
			answer_replay(x);
		else
			sp_answer_error(x, ledger.code, "%s", ledger.message);
		break;
	case SY_GATE_PUBLISHED:
		sp_answer_error(x, SY_ERR_TEMPORARY_UNAVAILABLE, "no schema is published yet");
		break;
	case SY_GATE_PK: sp_answer_error(x, SY_ERR_INVALID_REQUEST, "%s", pk.message); break;
	case SY_GATE_GENERATION:
		sp_answer_error(x, SY_ERR_CLIENT_GENERATION_EXPIRED,
		                "client_generation is not the current generation; connect again");
		break;
	case SY_GATE_SCHEMA:
		x->current.version = (uint64_t)x->cur->version;
		strlcpy(x->current.hash, x->cur->hash, sizeof x->current.hash);
		x->received = req->schema;
		sp_answer_error(x, SY_ERR_SCHEMA_MISMATCH,
		                "the request schema is not the current schema");
		break;
	case SY_GATE_ADMISSION:
		sp_answer_error(x, SY_ERR_RETRY_LATER, "too many pushes in flight; retry later");
		break;
	default: sp_fail("gate order");
	}
	return SP_DONE;
}
