/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_entry.c: synchro.synchro_push(user_id, body, ...), everything of a push after
 * authentication and the protocol gate, in one statement.
 *
 * Layer: top of src/pg (doc/hacking.md).
 * Rules: doc/contract.md#request-path (the push is one statement),
 * doc/contract.md#dispatch-order (the order of its steps),
 * doc/protocol.md#writing-an-adapter (what the adapter sends and gets).
 * Notes: The steps follow the dispatch order. Structural validation comes first. Then come
 * the client and retirement, and the batch and mutation replay lookup. Then come the
 * current schema's pk rule, the generation and schema gates, and admission. The first
 * execution runs last, under the client's row lock.
 *
 * The answer holds the HTTP status and the exact body bytes. It says whether it is a
 * replay, and gives the Retry-After of a 429 or 503. For the adapter's metrics (migration
 * 18), it also gives the error code, the outcomes a first execution decided, and the
 * SQLSTATE behind a 503.
 *
 * The first execution runs inside one internal subtransaction of the caller's transaction.
 * An operational failure rolls all of it back and answers 503. Such a failure is a lock
 * timeout, a broken invariant or memory. So part of a request never commits. A deadlock or
 * a serialization failure rolls it back too. Then the statement fails with its SQLSTATE,
 * and the adapter runs it again in a new transaction. Only the SQLSTATE and the step reach
 * the server log, never a value.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/syscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "push_module.h"
#include "synchro/alloc.h"
#include "synchro/sqlstate.h"

PG_MODULE_MAGIC;

/* Seconds between PostgreSQL's epoch (2000-01-01) and the Unix epoch. */
#define PG_UNIX_EPOCH_DIFF_S ((int64)(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY)

void _PG_init(void);

/*
 * synchro_push's result type (its OUT parameters), blessed, kept per backend:
 * get_call_result_type and BlessTupleDesc at every call were a tenth of a 1-mutation replay's
 * instructions. Dropped by any change of pg_proc or pg_type (a function declared again, a
 * type altered); an OID reused after a DROP is met by the same invalidation.
 */
static TupleDesc result_desc;
static Oid result_fn = InvalidOid;

static void forget_result_desc(Datum arg, int cacheid, uint32 hashvalue)
{
	(void)arg;
	(void)cacheid;
	(void)hashvalue;
	result_fn = InvalidOid;
}

static TupleDesc call_result_desc(FunctionCallInfo fcinfo)
{
	TupleDesc desc;
	if (OidIsValid(result_fn) && result_fn == fcinfo->flinfo->fn_oid)
		return result_desc;
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "synchro_push: must be declared to return a record");
	/* Unchanged (any DDL of a function or type drops it): the one kept, never freed while
	 * a call could still be forming its answer with it. */
	if (result_desc == NULL || !equalTupleDescs(result_desc, desc)) {
		MemoryContext old = MemoryContextSwitchTo(sp_cache_context());
		TupleDesc copy = CreateTupleDescCopy(desc);
		MemoryContextSwitchTo(old);
		BlessTupleDesc(copy);
		if (result_desc != NULL)
			FreeTupleDesc(result_desc);
		result_desc = copy;
	}
	result_fn = fcinfo->flinfo->fn_oid;
	return result_desc;
}

void _PG_init(void)
{
	sp_memory_init();
	/* every per-backend cache of the module, dropped by the invalidations that concern it */
	CacheRegisterRelcacheCallback(sp_invalidate_deferrable, (Datum)0);
	CacheRegisterRelcacheCallback(sp_probe_forget, (Datum)0);
	CacheRegisterRelcacheCallback(sp_ledger_forget, (Datum)0);
	CacheRegisterRelcacheCallback(sp_row_reader_forget, (Datum)0);
	CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, sp_row_reader_forget_syscache, (Datum)0);
	CacheRegisterSyscacheCallback(AUTHOID, sp_row_reader_forget_syscache, (Datum)0);
	CacheRegisterSyscacheCallback(OPERNAMENSP, sp_row_reader_forget_syscache, (Datum)0);
	CacheRegisterSyscacheCallback(PROCOID, forget_result_desc, (Datum)0);
	CacheRegisterSyscacheCallback(TYPEOID, forget_result_desc, (Datum)0);
}

/* Transaction-local settings of the push, undone when the call returns (push_entry). */
static void setting(const char *name, const char *value)
{
	(void)set_config_option(name, value, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0,
	                        false);
}

/* One first execution, under the client's row lock (in the attempt's subtransaction). */
static void execute(sp_push *x)
{
	size_t n = x->req->mutation_count;
	char timeout[32];

	snprintf(timeout, sizeof timeout, "%dms", Max(x->lock_timeout_ms, 0));
	setting("lock_timeout", timeout);
	setting("synchro.client_id", x->req->client_id);
	setting("synchro.user_id", x->user);
	/* The fence trigger refuses a push insert over a deleted identity (SY006). */
	setting("synchro.no_resurrection", "on");

	/* The lookup again under the lock (it starts afresh: nothing probed yet). */
	sp_lock_client(x);
	if (!x->lk.batch_found)
		sp_probe_ledger(x);
	if (sp_decide(x) != SP_GO)
		return;

	int64 now = GetCurrentTransactionStartTimestamp();
	sy_server_time_format(now + PG_UNIX_EPOCH_DIFF_S * USECS_PER_SEC, x->server_time);
	if (!sy_server_time_valid(x->server_time, strlen(x->server_time)))
		sp_fail("server time out of range");

	sy_json_doc_free(x->doc);
	x->doc = sy_json_doc_new();
	if (x->doc == NULL)
		sp_nomem("request");
	x->res = palloc0(sizeof *x->res * n);
	x->applied = 0;
	sp_take_stored(x);
	sp_prepare(x);
	if (x->req->atomic)
		sp_run_group(x);
	else
		sp_run_units(x);
	sp_finish(x);
	/* doc/contract.md#push-units: after a first execution every deferrable constraint of the
	 * calling transaction is IMMEDIATE, whether or not a unit ran (no event is pending: every
	 * unit ended so). */
	sp_constraints(false);
}

static bool execute_body(sp_push *x, void *arg)
{
	(void)arg;
	execute(x);
	return true;
}

static void first_execution(sp_push *x)
{
	/* In a subtransaction of its own: all of it or nothing. */
	ErrorData *ed = sp_subtransaction(execute_body, x, NULL);
	if (ed == NULL)
		return;
	/* A cancel (statement_timeout, pg_cancel_backend) stays a cancel. */
	if (ed->sqlerrcode == ERRCODE_QUERY_CANCELED)
		ReThrowError(ed);
	/*
	 * A deadlock or serialization failure is tried again by the adapter in a new
	 * transaction, never in this one: a writer waiting on a row this call wrote in a
	 * released unit waits for the caller's whole transaction, so an attempt in the same
	 * transaction would meet it again. The error carries the SQLSTATE and no value.
	 */
	if (sy_sqlstate_retryable(unpack_sql_state(ed->sqlerrcode)))
		ereport(ERROR,
		        (errcode(ed->sqlerrcode),
		         errmsg("synchro_push: batch %s of client %s rolled back: SQLSTATE %s; "
		                "run the statement again in a new transaction",
		                x->req->batch_id, x->req->client_id,
		                unpack_sql_state(ed->sqlerrcode)),
		         errhidestmt(true)));
	/* Our own failures name their step; anything else may quote values: only its
	 * SQLSTATE is logged. */
	bool ours = ed->message != NULL && strncmp(ed->message, "synchro_push: ", 14) == 0;
	ereport(LOG, (errmsg("synchro_push: batch %s of client %s not committed: SQLSTATE %s%s%s",
	                     x->req->batch_id, x->req->client_id, unpack_sql_state(ed->sqlerrcode),
	                     ours ? ", " : "", ours ? ed->message + 14 : ""),
	              errhidestmt(true)));
	snprintf(x->sqlstate, sizeof x->sqlstate, "%s", unpack_sql_state(ed->sqlerrcode));
	FreeErrorData(ed);
	sp_answer_error(x, SY_ERR_TEMPORARY_UNAVAILABLE, "request could not be committed");
}

/* The gates (sp_decide), with the mutation ledger read when a later gate refuses. */
static sp_next decide(sp_push *x)
{
	sp_next next = sp_decide(x);
	if (next == SP_PROBE) {
		sp_probe_ledger(x);
		next = sp_decide(x);
	}
	return next;
}

/* Everything of the call whose answer is not an error of the statement itself. */
static void answer(sp_push *x, const char *body, size_t len)
{
	sy_error e = {0};
	if (x->user == NULL || !sy_fp_user_valid(x->user, strlen(x->user), &e)) {
		sp_answer_error(x, SY_ERR_AUTH_REQUIRED, "authentication required");
		return;
	}
	/* The same octets as a batch's first execution: its stored answer (push_replay.c). */
	if (sp_replay_octets(x, body, len))
		return;
	/* doc/contract.md#dispatch-order: structural validation precedes every gate. */
	x->req = sy_push_parse(body, len, &e);
	if (x->req == NULL) {
		if (e.code == SY_ERR_NOMEM)
			sp_answer_error(x, SY_ERR_TEMPORARY_UNAVAILABLE,
			                "request could not be committed");
		else
			sp_answer_error(x, SY_ERR_INVALID_REQUEST, "%s", e.message);
		return;
	}
	if (!sy_fp_batch(x->req, x->user, strlen(x->user), &x->bfp, &e)) {
		if (e.code == SY_ERR_NOMEM)
			sp_answer_error(x, SY_ERR_TEMPORARY_UNAVAILABLE,
			                "request could not be committed");
		else
			sp_answer_error(x, SY_ERR_AUTH_REQUIRED, "authentication required");
		return;
	}
	/* The lookup before the client lock: an exact replay is this statement and nothing
	 * else, and a refused request never waits for another client's execution. The one
	 * made with the peeked ids serves when they are the parsed ones. */
	if (!x->looked_up || strcmp(x->peek_client, x->req->client_id) != 0 ||
	    strcmp(x->peek_batch, x->req->batch_id) != 0) {
		x->user_d = sp_text_datum(x->user, strlen(x->user));
		x->client_d = sp_uuid_datum(x->req->client_id);
		x->batch_d = sp_uuid_datum(x->req->batch_id);
		sp_lookup_head(x);
	}
	sp_compare_batch_fp(x);
	if (decide(x) != SP_GO)
		return;
	/* doc/contract.md#admission: after the schema gate; sp_decide answers its refusal, or a
	 * refusal of the mutation ledger, which precedes it. */
	if ((x->max_inflight > 0 || x->max_per_client > 0) && !sp_admit(x)) {
		x->admission_refused = true;
		if (decide(x) == SP_GO)
			sp_fail("admission refused, and no gate refuses");
		return;
	}
	first_execution(x);
}

/* The canonical body of a request-level error. */
static void error_body(sp_push *x)
{
	sy_buf b = SY_BUF_INIT;
	sy_error e = {0};
	bool mismatch = x->error == SY_ERR_SCHEMA_MISMATCH;
	if (!sy_outcome_error_body(&b, x->error, x->message, mismatch ? &x->current : NULL,
	                           mismatch ? &x->received : NULL, &e))
		sp_nomem("error body");
	x->body = b.data;
	x->body_len = b.len;
}

/* status, response, replay, retry_after; and since migration 18 error, counts, sqlstate.
 * The module answers as the function is declared: a new module under migration 13's
 * declaration fills the first four (the upgrade installs the module first). */
#define ANSWER_COLUMNS 7

static void answer_columns(const sp_push *x, TupleDesc desc, Datum *values, bool *nulls)
{
	if (desc->natts != 4 && desc->natts != ANSWER_COLUMNS)
		elog(ERROR, "synchro_push: declared with %d columns; expected 4 or %d", desc->natts,
		     ANSWER_COLUMNS);
	for (int i = 0; i < ANSWER_COLUMNS; i++)
		nulls[i] = true;
	values[0] = Int32GetDatum(x->status);
	values[1] = sp_bytea_datum(x->body, x->body_len);
	values[2] = BoolGetDatum(x->replay);
	nulls[0] = nulls[1] = nulls[2] = false;
	if (sy_errcode_retryable(x->error)) {
		values[3] = Int32GetDatum(x->retry_after_s);
		nulls[3] = false;
	}
	if (desc->natts < ANSWER_COLUMNS)
		return;
	if (x->error != SY_ERR_NONE) {
		const char *name = sy_errcode_name(x->error);
		values[4] = sp_text_datum(name, strlen(name));
		nulls[4] = false;
	}
	if (x->has_counts && x->status == 200 && !x->replay) {
		Datum d[SY_CODE__COUNT + 1];
		for (int i = 0; i <= SY_CODE__COUNT; i++)
			d[i] = Int32GetDatum(x->counts[i]);
		values[5] = PointerGetDatum(
		        construct_array(d, SY_CODE__COUNT + 1, INT4OID, 4, true, TYPALIGN_INT));
		nulls[5] = false;
	}
	if (x->sqlstate[0] != '\0') {
		values[6] = sp_text_datum(x->sqlstate, strlen(x->sqlstate));
		nulls[6] = false;
	}
}

/* The newest migration whose declarations this module serves. A migration that declares a
 * function of the module differently first creates synchro.module_abi() on this symbol, so a
 * database is never migrated past the module it runs: an older module lacks the symbol and
 * the migration fails before it changes anything (migration 18: an older synchro_push under
 * the seven-column declaration would form its answer from four values; migration 19: an
 * older module would store batches without the request digest its replays are answered by,
 * correct but slow forever; migration 20: synchro.version_fence names this module's
 * synchro_version_fence; migration 21: synchro.row_fences's CHECK names this module's
 * synchro_row_fence_rules; migration 22: synchro.scope_trigger names this module's
 * synchro_scope_trigger; migration 23: the scope trigger writes synchro.scope_changes instead
 * of its messages). This module also serves a database not yet migrated to 19, 20, 21, 22 or
 * 23 (the plpgsql fence of migration 16 or the CHECKs of migration 8 still in place; at 22 the
 * scope trigger emits its messages). */
#define MODULE_ABI 23

PG_FUNCTION_INFO_V1(synchro_module_abi);

Datum synchro_module_abi(PG_FUNCTION_ARGS)
{
	(void)fcinfo;
	PG_RETURN_INT32(MODULE_ABI);
}

PG_FUNCTION_INFO_V1(synchro_push);

Datum synchro_push(PG_FUNCTION_ARGS)
{
	TupleDesc desc = call_result_desc(fcinfo);
	MemoryContext callcxt = CurrentMemoryContext;
	MemoryContext pcxt = AllocSetContextCreate(callcxt, "synchro_push", ALLOCSET_DEFAULT_SIZES);
	int guc_level = NewGUCNestLevel();
	sp_push x;

	memset(&x, 0, sizeof x);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "synchro_push: SPI_connect failed");
	MemoryContextSwitchTo(pcxt);
	sp_core_memory(pcxt);
	sp_check_calling_transaction();

	x.user = PG_ARGISNULL(0) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(0));
	bytea *body = PG_ARGISNULL(1) ? NULL : PG_GETARG_BYTEA_PP(1);
	x.lock_timeout_ms = PG_ARGISNULL(2) ? 0 : PG_GETARG_INT32(2);
	x.max_inflight = PG_ARGISNULL(3) ? 0 : PG_GETARG_INT32(3);
	x.max_per_client = PG_ARGISNULL(4) ? 0 : PG_GETARG_INT32(4);
	x.retry_after_s = PG_ARGISNULL(5) ? 1 : Max(PG_GETARG_INT32(5), 1);
	if (body == NULL)
		sp_answer_error(&x, SY_ERR_INVALID_REQUEST, "(root): a request body is required");
	else
		answer(&x, VARDATA_ANY(body), VARSIZE_ANY_EXHDR(body));
	if (x.error != SY_ERR_NONE)
		error_body(&x);

	Datum values[ANSWER_COLUMNS];
	bool nulls[ANSWER_COLUMNS];
	MemoryContextSwitchTo(callcxt);
	answer_columns(&x, desc, values, nulls);
	HeapTuple tuple = heap_form_tuple(desc, values, nulls);

	sy_push_request_free(x.req);
	sy_json_doc_free(x.doc);
	sp_core_memory(NULL);
	SPI_finish();
	MemoryContextSwitchTo(callcxt);
	/* Every setting of the call (lock_timeout, the synchro.* names of the fence trigger)
	 * is undone: nothing of the push leaks into the caller's transaction. */
	AtEOXact_GUC(false, guc_level);
	MemoryContextDelete(pcxt);
	PG_RETURN_DATUM(HeapTupleGetDatum(tuple));
}
