/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ledger_guards.c: the ledger's own guards, in C (migration 17): the row rules of
 * synchro.batches and synchro.mutations, and the triggers every push fires on them and on
 * synchro.clients.
 *
 * Layer: middle of src/pg (doc/hacking.md).
 * Rules: doc/contract.md#ledgers-and-retirement (the ledgers),
 * doc/contract.md#retirement (a retired client writes nothing).
 * Notes: Row rules. Each ledger table has one CHECK, which calls synchro.batch_row_rules or
 * synchro.mutation_row_rules. It holds exactly the rules of the 25 CHECK constraints of
 * migrations 1 and 8. Its refusal still names each of them (SQLSTATE 23514). PostgreSQL
 * reads every CHECK's expression tree back from text for each statement that writes the
 * table. For a one-mutation push, that was about a tenth of the backend's CPU.
 *
 * Triggers. A retired client writes no batch (SY004). A mutation ledger row names a batch
 * of its client (23503, once per statement). A client's identity never changes. Its
 * generation and write epochs never decrease (SY002), and do not advance once it is retired
 * (SY004). Every accepted-write epoch is announced to walsync in the WAL, as the logical
 * message "synchro-epoch". These triggers replace plpgsql functions with the same names and
 * messages (migrations 1, 5 and 12).
 *
 * The functions are SECURITY DEFINER: synchro_owner reads the ledger, whoever writes it.
 * But they pin no search_path, which would cost a GUC save and restore per row. Every
 * statement here names its schema and its operators. So no search_path can change what it
 * reads.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "replication/message.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"
#include "utils/uuid.h"

#include "push_module.h"

/* --- row rules ------------------------------------------------------------------------ */

/* SQL's three truth values: a CHECK refuses a row only when its expression is false. */
typedef enum { T_FALSE, T_TRUE, T_NULL } truth;

static truth t_and(truth a, truth b)
{
	if (a == T_FALSE || b == T_FALSE)
		return T_FALSE;
	return a == T_NULL || b == T_NULL ? T_NULL : T_TRUE;
}

static truth t_or(truth a, truth b)
{
	if (a == T_TRUE || b == T_TRUE)
		return T_TRUE;
	return a == T_NULL || b == T_NULL ? T_NULL : T_FALSE;
}

static truth t_of(bool b)
{
	return b ? T_TRUE : T_FALSE;
}

typedef struct {
	FunctionCallInfo fcinfo;
	const char *table;
} rules;

static bool arg_null(const rules *r, int i)
{
	return r->fcinfo->args[i].isnull;
}

/* The bytes of a text or bytea argument (the caller checked it is not NULL). */
static const char *arg_bytes(const rules *r, int i, size_t *len)
{
	struct varlena *v =
	        pg_detoast_datum_packed((struct varlena *)DatumGetPointer(r->fcinfo->args[i].value));
	*len = VARSIZE_ANY_EXHDR(v);
	return VARDATA_ANY(v);
}

static int64 arg_int(const rules *r, int i, bool is_int8)
{
	Datum d = r->fcinfo->args[i].value;
	return is_int8 ? DatumGetInt64(d) : (int64)DatumGetInt32(d);
}

static void refuse(const rules *r, const char *constraint)
{
	ereport(ERROR, (errcode(ERRCODE_CHECK_VIOLATION),
	                errmsg("new row for relation \"%s\" violates check constraint \"%s\"",
	                       r->table, constraint)));
}

/* name > 0 (or >= 0 when zero_ok); NULL passes. */
static void positive(const rules *r, int i, bool is_int8, bool zero_ok, const char *name)
{
	if (arg_null(r, i))
		return;
	int64 v = arg_int(r, i, is_int8);
	if (zero_ok ? v < 0 : v <= 0)
		refuse(r, name);
}

/* The value equals one of the words: true, false, or NULL for a NULL argument. */
static truth one_of(const rules *r, int i, const char *const *words)
{
	if (arg_null(r, i))
		return T_NULL;
	size_t len;
	const char *s = arg_bytes(r, i, &len);
	for (; *words != NULL; words++)
		if (strlen(*words) == len && memcmp(s, *words, len) == 0)
			return T_TRUE;
	return T_FALSE;
}

static void one_of_or_refuse(const rules *r, int i, const char *const *words, const char *name)
{
	if (one_of(r, i, words) == T_FALSE)
		refuse(r, name);
}

/* octet_length(v) = 64 AND v ~ '^[0-9a-f]+$' */
static void hash_hex(const rules *r, int i, const char *name)
{
	if (arg_null(r, i))
		return;
	size_t len;
	const char *s = arg_bytes(r, i, &len);
	bool ok = len == 64;
	for (size_t k = 0; ok && k < len; k++)
		ok = (s[k] >= '0' && s[k] <= '9') || (s[k] >= 'a' && s[k] <= 'f');
	if (!ok)
		refuse(r, name);
}

/* length(v) = n (bytea), or v <> '' (text) when n is 0. */
static void octets(const rules *r, int i, size_t n, const char *name)
{
	if (arg_null(r, i))
		return;
	size_t len;
	(void)arg_bytes(r, i, &len);
	if (n == 0 ? len == 0 : len != n)
		refuse(r, name);
}

static const char *const sha256[] = {"sha256", NULL};

/* The fingerprint columns both ledgers share (arguments first .. first+3). */
static void fingerprint_rules(const rules *r, int first, const char *prefix)
{
	char name[64];
	snprintf(name, sizeof name, "%s_fp_algorithm_check", prefix);
	one_of_or_refuse(r, first, sha256, name);
	snprintf(name, sizeof name, "%s_fp_version_check", prefix);
	positive(r, first + 1, false, false, name);
	snprintf(name, sizeof name, "%s_fp_domain_check", prefix);
	octets(r, first + 2, 0, name);
	snprintf(name, sizeof name, "%s_fingerprint_check", prefix);
	octets(r, first + 3, 32, name);
}

PG_FUNCTION_INFO_V1(synchro_batch_row_rules);

/*
 * synchro.batch_row_rules(protocol_version, client_generation, schema_version, schema_hash,
 * fp_algorithm, fp_version, fp_domain, fingerprint, state, http_status, response,
 * completed_at): true, or the refusal of the first rule the row breaks.
 */
Datum synchro_batch_row_rules(PG_FUNCTION_ARGS)
{
	static const char *const states[] = {"claimed", "complete", NULL};
	static const char *const complete[] = {"complete", NULL};
	rules r = {fcinfo, "batches"};

	positive(&r, 0, false, false, "batches_protocol_version_check");
	positive(&r, 1, true, false, "batches_client_generation_check");
	positive(&r, 2, true, false, "batches_schema_version_check");
	hash_hex(&r, 3, "batches_schema_hash_check");
	fingerprint_rules(&r, 4, "batches");
	one_of_or_refuse(&r, 8, states, "batches_state_check");
	if (!arg_null(&r, 9)) {
		int64 s = arg_int(&r, 9, false);
		if (s < 100 || s > 599)
			refuse(&r, "batches_http_status_check");
	}
	/* state <> 'complete' OR (http_status, response, completed_at all NOT NULL) */
	truth not_complete = one_of(&r, 8, complete);
	if (not_complete != T_NULL)
		not_complete = not_complete == T_TRUE ? T_FALSE : T_TRUE;
	truth has = t_of(!arg_null(&r, 9) && !arg_null(&r, 10) && !arg_null(&r, 11));
	if (t_or(not_complete, has) == T_FALSE)
		refuse(&r, "batch_complete_has_response");
	PG_RETURN_BOOL(true);
}

PG_FUNCTION_INFO_V1(synchro_mutation_row_rules);

/*
 * synchro.mutation_row_rules(fp_algorithm, fp_version, fp_domain, fingerprint, ordinal,
 * authored_schema_version, authored_schema_hash, submitted_schema_version,
 * submitted_schema_hash, operation, status, code, outcome_schema_version,
 * outcome_schema_hash): true, or the refusal of the first rule the row breaks.
 */
Datum synchro_mutation_row_rules(PG_FUNCTION_ARGS)
{
	static const char *const operations[] = {"insert", "update", "delete", NULL};
	static const char *const statuses[] = {"applied", "conflict", "rejected_terminal", NULL};
	static const char *const applied[] = {"applied", NULL};
	static const char *const conflict[] = {"conflict", NULL};
	static const char *const terminal[] = {"rejected_terminal", NULL};
	static const char *const conflict_codes[] = {"version_conflict", "row_already_exists",
	                                             "row_deleted", "row_not_found", NULL};
	static const char *const terminal_codes[] = {"policy_rejected", "validation_failed",
	                                             "table_not_synced", "schema_incompatible",
	                                             "atomic_batch_rejected", NULL};
	rules r = {fcinfo, "mutations"};

	fingerprint_rules(&r, 0, "mutations");
	positive(&r, 4, false, true, "mutations_ordinal_check");
	positive(&r, 5, true, false, "mutations_authored_schema_version_check");
	hash_hex(&r, 6, "mutations_authored_schema_hash_check");
	positive(&r, 7, true, false, "mutations_submitted_schema_version_check");
	hash_hex(&r, 8, "mutations_submitted_schema_hash_check");
	one_of_or_refuse(&r, 9, operations, "mutations_operation_check");
	one_of_or_refuse(&r, 10, statuses, "mutations_status_check");
	/* (status = 'applied' AND code IS NULL) OR (status = 'conflict' AND code IN (...))
	 * OR (status = 'rejected_terminal' AND code IN (...)), in SQL's logic. */
	truth rule = t_and(one_of(&r, 10, applied), t_of(arg_null(&r, 11)));
	rule = t_or(rule, t_and(one_of(&r, 10, conflict), one_of(&r, 11, conflict_codes)));
	rule = t_or(rule, t_and(one_of(&r, 10, terminal), one_of(&r, 11, terminal_codes)));
	if (rule == T_FALSE)
		refuse(&r, "mutation_status_code");
	positive(&r, 12, true, false, "mutations_outcome_schema_version_check");
	hash_hex(&r, 13, "mutations_outcome_schema_hash_check");
	PG_RETURN_BOOL(true);
}

/* The rules called directly, for the rows a push writes without an INSERT (ledger_insert.c):
 * the same function, the same refusal. */
static void call_rules(PGFunction fn, int nargs, const Datum *args, const bool *nulls)
{
	LOCAL_FCINFO(fcinfo, 14);
	Assert(nargs <= 14);
	InitFunctionCallInfoData(*fcinfo, NULL, nargs, InvalidOid, NULL, NULL);
	for (int i = 0; i < nargs; i++) {
		fcinfo->args[i].value = args[i];
		fcinfo->args[i].isnull = nulls[i];
	}
	(void)fn(fcinfo);
}

void sp_batch_row_rules(const Datum *args, const bool *nulls)
{
	call_rules(synchro_batch_row_rules, 12, args, nulls);
}

void sp_mutation_row_rules(const Datum *args, const bool *nulls)
{
	call_rules(synchro_mutation_row_rules, 14, args, nulls);
}

/* --- triggers ------------------------------------------------------------------------- */

static TriggerData *trigger_data(FunctionCallInfo fcinfo, const char *name)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
		                errmsg("synchro: %s must be called as a trigger", name)));
	return (TriggerData *)fcinfo->context;
}

static Datum column(HeapTuple tuple, TupleDesc desc, const char *name, bool *isnull)
{
	int att = SPI_fnumber(desc, name);
	if (att <= 0)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
		                errmsg("synchro: the ledger has no column %s", name)));
	return heap_getattr(tuple, att, desc, isnull);
}

static Datum column_nn(HeapTuple tuple, TupleDesc desc, const char *name)
{
	bool isnull;
	Datum d = column(tuple, desc, name, &isnull);
	if (isnull)
		ereport(ERROR, (errcode(ERRCODE_NOT_NULL_VIOLATION),
		                errmsg("synchro: the ledger's %s is NULL", name)));
	return d;
}

/* A statement of the trigger, in its own SPI connection: does it find a row? */
static bool exists(const char *sql, int nargs, const Oid *types, Datum *values)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "synchro: SPI_connect failed");
	sp_run(sp_plan(sql, nargs, types), values, NULL, SPI_OK_SELECT);
	bool found = SPI_processed > 0;
	SPI_finish();
	return found;
}

static bool retired(Datum client_id)
{
	static const Oid types[] = {UUIDOID};
	Datum v[] = {client_id};
	return exists("SELECT 1 FROM synchro.retirements r"
	              " WHERE r.client_id OPERATOR(pg_catalog.=) $1 LIMIT 1",
	              1, types, v);
}

static void refuse_retired(Datum client_id)
{
	ereport(ERROR, (errcode(MAKE_SQLSTATE('S', 'Y', '0', '0', '4')),
	                errmsg("synchro: client %s is retired",
	                       DatumGetCString(DirectFunctionCall1(uuid_out, client_id)))));
}

PG_FUNCTION_INFO_V1(synchro_batches_before_insert);

/* BEFORE INSERT ON synchro.batches, each row: a retired client writes no batch. */
Datum synchro_batches_before_insert(PG_FUNCTION_ARGS)
{
	TriggerData *td = trigger_data(fcinfo, "batches_before_insert");
	HeapTuple row = td->tg_trigtuple;
	Datum client = column_nn(row, RelationGetDescr(td->tg_relation), "client_id");
	if (retired(client))
		refuse_retired(client);
	return PointerGetDatum(row);
}

PG_FUNCTION_INFO_V1(synchro_clients_before_change);

/* BEFORE INSERT OR UPDATE ON synchro.clients, each row (the rules of migration 1). */
Datum synchro_clients_before_change(PG_FUNCTION_ARGS)
{
	static const char *const identity[] = {"client_id", "user_id", "created_at"};
	static const char *const monotonic[] = {"generation", "accepted_write_epoch",
	                                        "materialized_write_epoch"};
	TriggerData *td = trigger_data(fcinfo, "clients_before_change");
	TupleDesc desc = RelationGetDescr(td->tg_relation);

	if (TRIGGER_FIRED_BY_INSERT(td->tg_event)) {
		Datum client = column_nn(td->tg_trigtuple, desc, "client_id");
		if (retired(client))
			refuse_retired(client);
		return PointerGetDatum(td->tg_trigtuple);
	}
	HeapTuple old = td->tg_trigtuple, new = td->tg_newtuple;
	for (size_t i = 0; i < lengthof(identity); i++) {
		int att = SPI_fnumber(desc, identity[i]);
		bool on, nn;
		Datum o = column(old, desc, identity[i], &on);
		Datum n = column(new, desc, identity[i], &nn);
		Form_pg_attribute a = TupleDescAttr(desc, att - 1);
		if (on != nn || (!on && !datum_image_eq(o, n, a->attbyval, a->attlen)))
			ereport(ERROR, (errcode(MAKE_SQLSTATE('S', 'Y', '0', '0', '2')),
			                errmsg("synchro: the identity of a client never changes")));
	}
	bool advanced = false;
	for (size_t i = 0; i < lengthof(monotonic); i++) {
		int64 o = DatumGetInt64(column_nn(old, desc, monotonic[i]));
		int64 n = DatumGetInt64(column_nn(new, desc, monotonic[i]));
		if (n < o)
			ereport(ERROR,
			        (errcode(MAKE_SQLSTATE('S', 'Y', '0', '0', '2')),
			         errmsg("synchro: client generation and write epochs never decrease")));
		/* generation and accepted_write_epoch: a retired client gets neither. */
		if (i < 2 && n != o)
			advanced = true;
	}
	if (advanced) {
		Datum client = column_nn(old, desc, "client_id");
		if (retired(client))
			refuse_retired(client);
	}
	return PointerGetDatum(new);
}

PG_FUNCTION_INFO_V1(synchro_emit_accepted_epoch);

/*
 * AFTER UPDATE OF accepted_write_epoch ON synchro.clients, each row whose epoch advanced:
 * the transactional logical message walsync reads, byte for byte what migration 5's
 * json_build_object wrote.
 */
Datum synchro_emit_accepted_epoch(PG_FUNCTION_ARGS)
{
	TriggerData *td = trigger_data(fcinfo, "emit_accepted_epoch");
	TupleDesc desc = RelationGetDescr(td->tg_relation);
	HeapTuple new = td->tg_newtuple != NULL ? td->tg_newtuple : td->tg_trigtuple;
	Datum client = column_nn(new, desc, "client_id");
	int64 epoch = DatumGetInt64(column_nn(new, desc, "accepted_write_epoch"));
	sp_emit_accepted_epoch(client, epoch);
	return PointerGetDatum(NULL);
}

void sp_emit_accepted_epoch(Datum client, int64 epoch)
{
	char msg[128];
	int len = snprintf(msg, sizeof msg, "{\"client_id\" : \"%s\", \"epoch\" : " INT64_FORMAT "}",
	                   DatumGetCString(DirectFunctionCall1(uuid_out, client)), epoch);
	(void)LogLogicalMessage("synchro-epoch", msg, (size_t)len, true);
}

PG_FUNCTION_INFO_V1(synchro_mutations_after_insert);

/*
 * AFTER INSERT ON synchro.mutations, each statement, over its new rows: every mutation
 * ledger row names a batch of its client. A push writes one batch's rows together, so
 * each run of rows of one batch is checked once.
 */
Datum synchro_mutations_after_insert(PG_FUNCTION_ARGS)
{
	static const Oid types[] = {TEXTOID, UUIDOID, UUIDOID};
	TriggerData *td = trigger_data(fcinfo, "mutations_after_insert");
	Tuplestorestate *rows = td->tg_newtable;
	if (rows == NULL)
		elog(ERROR, "synchro: mutations_after_insert needs its transition table");
	TupleDesc desc = RelationGetDescr(td->tg_relation);
	int a_user = SPI_fnumber(desc, "user_id"), a_client = SPI_fnumber(desc, "client_id");
	int a_batch = SPI_fnumber(desc, "batch_id");
	if (a_user <= 0 || a_client <= 0 || a_batch <= 0)
		elog(ERROR, "synchro: the mutation ledger lacks its batch columns");
	TupleTableSlot *slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	/* A read pointer of our own, from the first row: other triggers of the statement read
	 * the rows too (a scan of a transition table selects its own pointer each time). */
	int ptr = tuplestore_alloc_read_pointer(rows, EXEC_FLAG_REWIND);
	tuplestore_select_read_pointer(rows, ptr);
	tuplestore_rescan(rows);
	Datum last[3] = {0, 0, 0};
	bool have_last = false;
	while (tuplestore_gettupleslot(rows, true, false, slot)) {
		bool n1, n2, n3;
		Datum v[3] = {slot_getattr(slot, a_user, &n1), slot_getattr(slot, a_client, &n2),
		              slot_getattr(slot, a_batch, &n3)};
		if (n1 || n2 || n3)
			elog(ERROR, "synchro: a mutation ledger row without its batch columns");
		if (have_last && datum_image_eq(v[0], last[0], false, -1) &&
		    datum_image_eq(v[1], last[1], false, UUID_LEN) &&
		    datum_image_eq(v[2], last[2], false, UUID_LEN))
			continue;
		if (!exists("SELECT 1 FROM synchro.batches b"
		            " WHERE b.user_id OPERATOR(pg_catalog.=) $1"
		            "   AND b.client_id OPERATOR(pg_catalog.=) $2"
		            "   AND b.batch_id OPERATOR(pg_catalog.=) $3 LIMIT 1",
		            3, types, v))
			ereport(ERROR, (errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
			                errmsg("synchro: a mutation ledger row names no batch of its client")));
		for (int i = 0; i < 3; i++)
			last[i] = datumCopy(v[i], false, i == 0 ? -1 : UUID_LEN);
		have_last = true;
	}
	tuplestore_select_read_pointer(rows, 0);
	ExecDropSingleTupleTableSlot(slot);
	return PointerGetDatum(NULL);
}
