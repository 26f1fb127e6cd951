/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_cas.c: the compare-and-swap of one mutation.
 *
 * Layer: middle of src/pg (doc/hacking.md).
 * Rules: doc/contract.md#compare-and-swap (the swap),
 * doc/contract.md#operation-and-row-state-matrix (the matrix decides).
 * Notes: The source row is locked first, then its version fence. That is the order of the
 * fence trigger after a direct write, so the two never wait on each other in opposite
 * orders. The policy is judged on the locked row (push_scope.c). Then the core's matrix
 * decides. Only a mutation the matrix applies writes. The write's AFTER trigger mints the
 * version and moves the fence. The file also holds the row reads that outcomes report, and
 * the classification of a write the database refused.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/value.h"
#include "parser/parse_oper.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/regproc.h"
#include "utils/rls.h"
#include "commands/trigger.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/errcodes.h"
#include "lib/stringinfo.h"

#include "push_module.h"
#include "synchro/pgtypes.h"
#include "synchro/types.h"

/* Attempts at a consistent row-and-fence lock when a concurrent insert slips between. */
#define LOCK_TRIES 3

static const char msg_version_conflict[] = "base_version is not the current version of the row";
static const char msg_exists[] = "the row already exists";
static const char msg_deleted[] = "the row is deleted";
static const char msg_not_found[] = "the row does not exist";
static const char msg_policy[] = "the write policy does not allow this mutation";
const char sp_msg_constraint[] = "the database rejected the values (constraint or data check)";

static const char fence_sql[] = "SELECT f.state, f.version FROM synchro.row_fences f"
                                " WHERE f.table_id = $1 AND f.pk = $2 FOR UPDATE OF f";

/* The fields of row r from column off on (text output under the function's settings). */
static char **copy_fields(const sp_table *ti, uint64 r, int off)
{
	size_t n = ti->t->field_count;
	char **vals = palloc0(sizeof *vals * (n + 1));
	for (size_t j = 0; j < n; j++)
		vals[j] = sp_isnull(r, off + (int)j) ? NULL : sp_text(r, off + (int)j);
	return vals;
}

static sy_row_state fence_state(const char *state)
{
	return strcmp(state, "deleted") == 0 ? SY_ROW_DELETED : SY_ROW_LIVE;
}

/*
 * The fence by its primary key and the row (sp_read_row_direct, else one saved plan) under one
 * snapshot, as the one statement that joined them read both (that join's nested-loop
 * start-up cost more than the two reads: callgrind of a 100-mutation push, 89k instructions
 * per read; the plan alone then 32k, the probe 13k).
 */
static void read_state(sp_push *x, size_t k, sp_row *row, bool fenced_only)
{
	const sp_pre *pr = &x->pre[k];
	const sp_table *ti = pr->ti;
	static const Oid types[] = {TEXTOID};
	Datum key[] = {sp_text_datum(ti->t->table_id, strlen(ti->t->table_id)),
	               sp_text_datum(pr->pk_text, strlen(pr->pk_text))};
	char *state = NULL;
	sp_probe p;

	memset(row, 0, sizeof *row);
	Snapshot snap = sp_probe_snapshot();
	sp_probe_open(&p, "row_fences");
	if (sp_probe_find(&p, 2, key, snap)) {
		state = sp_probe_text(&p, "state");
		row->version = sp_probe_text(&p, "version");
	}
	sp_probe_close(&p);
	if (state == NULL && fenced_only) {
		sp_probe_snapshot_end(snap);
		row->state = SY_ROW_ABSENT;
		return;
	}
	bool direct = sp_read_row_direct(ti, pr->pk_text, snap, row);
	if (!direct) {
		sp_run_snapshot(sp_plan(ti->read_sql, 1, types), &key[1], snap, SPI_OK_SELECT);
		if (SPI_processed > 1)
			sp_fail("row read");
		row->has_row = SPI_processed == 1;
	}
	sp_probe_snapshot_end(snap);
	if (state == NULL) {
		row->state = SY_ROW_ABSENT;
		/* A synced row without a fence: written with the trigger bypassed. */
		if (row->has_row)
			sp_fail("a synced row has no version fence");
	} else {
		row->state = fence_state(state);
		if (row->state == SY_ROW_LIVE && !row->has_row)
			sp_fail("a live fence has no row");
	}
	if (!direct) {
		if (row->has_row)
			row->vals = copy_fields(ti, 0, 2);
		SPI_freetuptable(SPI_tuptable);
	}
}

void sp_read(sp_push *x, size_t k, sp_row *row)
{
	read_state(x, k, row, false);
}

/*
 * The state an insert is classified on: the fence, and the row only when it has one. With no
 * fence the row is absent (the trigger writes a fence with every row), so the matrix has
 * what sp_read would give it. A row written with the trigger bypassed is found by the write
 * instead: its unique key refuses the insert (at once or at the unit's end), and the read
 * after the refusal (sp_refused, sp_run_group) is sp_read, which fails the push on the
 * fenceless row as this read did before the write. The row read it saves was about 10,000
 * of a fresh insert's instructions (callgrind, 100-mutation pushes).
 */
static void read_insert_state(sp_push *x, size_t k, sp_row *row)
{
	read_state(x, k, row, true);
}

/* Locks the row then the fence; false when a concurrent insert slipped between them. */
static bool lock_once(sp_push *x, size_t k, sp_row *row)
{
	const sp_pre *pr = &x->pre[k];
	const sp_table *ti = pr->ti;
	static const Oid t1[] = {TEXTOID};
	static const Oid t2[] = {TEXTOID, TEXTOID};
	Datum pk = sp_text_datum(pr->pk_text, strlen(pr->pk_text));
	Datum v2[] = {sp_text_datum(ti->t->table_id, strlen(ti->t->table_id)), pk};

	memset(row, 0, sizeof *row);
	sp_run(sp_plan(ti->lock_sql, 1, t1), &pk, NULL, SPI_OK_SELECT);
	row->has_row = SPI_processed == 1;
	if (row->has_row)
		row->vals = copy_fields(ti, 0, 2);
	SPI_freetuptable(SPI_tuptable);
	sp_run(sp_plan(fence_sql, 2, t2), v2, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0) {
		row->state = SY_ROW_ABSENT;
		if (row->has_row)
			sp_fail("a synced row has no version fence");
	} else {
		row->state = fence_state(sp_text(0, 1));
		row->version = sp_text(0, 2);
	}
	SPI_freetuptable(SPI_tuptable);
	/* A live fence and no row: an insert committed between the two locks. */
	return !(row->state == SY_ROW_LIVE && !row->has_row);
}

/* server_version and server_row (every non-pk field as its canonical wire value). */
void sp_fill_row(sp_push *x, size_t k, const sp_row *row)
{
	sy_outcome *o = &x->res[k].o;
	const sy_table *t = x->pre[k].ti->t;
	o->server_version =
	        row->version != NULL ? sp_arena_dup(x, row->version, strlen(row->version)) : NULL;
	o->server_row = NULL;
	o->row_checksum = NULL;
	if (!row->has_row)
		return;
	sy_json *obj = sy_json_new_object(x->doc);
	if (obj == NULL)
		sp_nomem("outcome");
	for (size_t i = 0; i < t->field_count; i++) {
		const sy_field *f = &t->fields[i];
		sy_json *v = NULL;
		if (row->vals[i] == NULL) {
			v = sy_json_new_null(x->doc);
		} else {
			sy_wire_status ws = sy_wire_decode_pg_text(x->doc, f->type, row->vals[i],
			                                           strlen(row->vals[i]), &v);
			if (ws == SY_WIRE_INVALID)
				sp_fail("a stored value has no canonical wire form");
		}
		if (v == NULL || !sy_json_object_put(x->doc, obj, f->field_id, v))
			sp_nomem("outcome");
	}
	o->server_row = obj;
}

static const char *conflict_message(sy_code code)
{
	switch (code) {
	case SY_CODE_VERSION_CONFLICT: return msg_version_conflict;
	case SY_CODE_ROW_ALREADY_EXISTS: return msg_exists;
	case SY_CODE_ROW_DELETED: return msg_deleted;
	default: return msg_not_found;
	}
}

/*
 * The whole classification of mutation k on its current row (sy_matrix_evaluate): the
 * rules known without the row, the policy judged on the row (push_scope.c: a row outside
 * the caller's read scope is classified as a missing one), then the matrix. True when k
 * may write; otherwise its outcome is set.
 */
bool sp_classify(sp_push *x, size_t k, const sp_row *row)
{
	const sy_mutation *m = &x->req->mutations[k];
	const sp_pre *pr = &x->pre[k];
	unsigned rules = pr->rules;
	if (pr->row_scoped)
		sp_scope_judge(x, k, &row, &rules);
	bool eq = m->base_version != NULL && row->version != NULL &&
	          strlen(row->version) == m->base_len &&
	          memcmp(row->version, m->base_version, m->base_len) == 0;
	sy_matrix_result mr = sy_matrix_evaluate(rules, m->op, row->state, eq);
	if (mr.status == SY_STATUS_APPLIED)
		return true;
	if (mr.status == SY_STATUS_REJECTED_TERMINAL) {
		sp_set_terminal(x, k, mr.code,
		                mr.code == SY_CODE_POLICY_REJECTED ? msg_policy
		                                                   : pr->validation_message);
		return false;
	}
	sp_res *rr = &x->res[k];
	sy_outcome_init(&rr->o, m, &x->req->schema);
	rr->o.status = mr.status;
	rr->o.code = mr.code;
	rr->o.message = conflict_message(mr.code);
	rr->decided = true;
	sp_fill_row(x, k, row);
	return false;
}

bool sp_lock_and_classify(sp_push *x, size_t k)
{
	sp_row row;
	/*
	 * An insert compares no version: it needs the identity's state (its fence, and the row
	 * under the same snapshot when there is a fence: read_insert_state), and its write
	 * reserves an absent identity itself (the unique key; a deleted fence refuses it with
	 * SY006). A conflict or a refusal writes nothing, so nothing needs a lock. Update and
	 * delete lock row and fence before the comparison.
	 */
	if (x->req->mutations[k].op == SY_OP_INSERT) {
		read_insert_state(x, k, &row);
		return sp_classify(x, k, &row);
	}
	for (int tries = 0; !lock_once(x, k, &row); tries++)
		if (tries + 1 >= LOCK_TRIES)
			sp_fail("row and fence disagree (a write bypassed the fence trigger)");
	return sp_classify(x, k, &row);
}

/* The applied outcome, from the row read after its unit's end. */
void sp_applied(sp_push *x, size_t k, const sp_row *row)
{
	sp_res *rr = &x->res[k];
	if (row->version == NULL)
		sp_fail("an applied row has no fence");
	sy_outcome_init(&rr->o, &x->req->mutations[k], &x->req->schema);
	rr->decided = true;
	x->applied++;
	sp_fill_row(x, k, row);
}

/* The fence trigger reads the mutation that wrote a row from synchro.mutation_id. */
void sp_name_mutation(const sp_push *x, size_t k)
{
	(void)set_config_option("synchro.mutation_id", x->req->mutations[k].mutation_id,
	                        PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
}

void sp_constraints(bool deferred)
{
	ConstraintsSetStmt *s = makeNode(ConstraintsSetStmt);
	s->constraints = NIL;
	s->deferred = deferred;
	AfterTriggerSetState(s);
	pfree(s);
}

/* The source write of mutation k (values as text parameters cast to the field's type). */
void sp_write(sp_push *x, size_t k)
{
	const sy_mutation *m = &x->req->mutations[k];
	const sp_pre *pr = &x->pre[k];
	const sp_table *ti = pr->ti;
	const sy_table *t = ti->t;
	Oid types[SY_PUSH_MAX_COLUMNS + 2];
	Datum v[SY_PUSH_MAX_COLUMNS + 2];
	char nulls[SY_PUSH_MAX_COLUMNS + 3];
	int np = 0;
	StringInfoData sql;

	initStringInfo(&sql);
	types[np] = TEXTOID;
	nulls[np] = ' ';
	v[np++] = sp_text_datum(pr->pk_text, strlen(pr->pk_text));
	switch (m->op) {
	case SY_OP_INSERT:
		appendStringInfo(&sql, "INSERT INTO %s (%s", ti->rel, ti->pk);
		for (size_t i = 0; i < m->column_count; i++)
			appendStringInfo(&sql, ", %s", ti->cols[pr->fields[i] - t->fields]);
		/* doc/contract.md#policies: the server sets the owner field to the caller on
		 * insert. */
		if (ti->owner >= 0)
			appendStringInfo(&sql, ", %s", ti->cols[ti->owner]);
		appendStringInfo(&sql, ") VALUES ($1::%s", ti->pk_type);
		for (size_t i = 0; i < m->column_count; i++) {
			types[np] = TEXTOID;
			nulls[np] = pr->vals[i] == NULL ? 'n' : ' ';
			v[np++] = pr->vals[i] == NULL
			                  ? (Datum)0
			                  : sp_text_datum(pr->vals[i], strlen(pr->vals[i]));
			appendStringInfo(&sql, ", $%d::%s", np,
			                 sy_type_pg_name(pr->fields[i]->type));
		}
		if (ti->owner >= 0) {
			types[np] = TEXTOID;
			nulls[np] = ' ';
			v[np++] = x->user_d;
			appendStringInfo(&sql, ", $%d::%s", np,
			                 sy_type_pg_name(t->fields[ti->owner].type));
		}
		appendStringInfoChar(&sql, ')');
		break;
	case SY_OP_UPDATE:
		appendStringInfo(&sql, "UPDATE %s SET ", ti->rel);
		for (size_t i = 0; i < m->column_count; i++) {
			types[np] = TEXTOID;
			nulls[np] = pr->vals[i] == NULL ? 'n' : ' ';
			v[np++] = pr->vals[i] == NULL
			                  ? (Datum)0
			                  : sp_text_datum(pr->vals[i], strlen(pr->vals[i]));
			appendStringInfo(&sql, "%s%s = $%d::%s", i ? ", " : "",
			                 ti->cols[pr->fields[i] - t->fields], np,
			                 sy_type_pg_name(pr->fields[i]->type));
		}
		appendStringInfo(&sql, " WHERE %s = $1::%s", ti->pk, ti->pk_type);
		break;
	case SY_OP_DELETE: appendStringInfoString(&sql, ti->delete_sql); break;
	}
	nulls[np] = '\0';
	int expect = m->op == SY_OP_INSERT ? SPI_OK_INSERT
	             : m->op == SY_OP_UPDATE || ti->t->delete_mode == SY_DELETE_SOFT
	                     ? SPI_OK_UPDATE
	                     : SPI_OK_DELETE;
	sp_run(sp_plan(sql.data, np, types), v, nulls, expect);
	/* Update and delete run under the row lock, and an insert reserved an absent identity:
	 * anything but one row is a broken invariant (a rule or a trigger that skipped it). */
	if (SPI_processed != 1)
		sp_fail("a source write did not take exactly one row");
	pfree(sql.data);
}

/* doc/contract.md#push-units: classes 22 (data exception) and 23 (integrity constraint violation)
 * at a unit's write or end are the mutation's own; SY006 is the fence's no-resurrection refusal. */
bool sp_unit_error(int sqlerrcode)
{
	int cls = ERRCODE_TO_CATEGORY(sqlerrcode);
	return cls == ERRCODE_DATA_EXCEPTION || cls == ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION ||
	       sqlerrcode == MAKE_SQLSTATE('S', 'Y', '0', '0', '6');
}

/*
 * A unit the database refused, after its rollback: an insert that met a live or deleted
 * identity (a concurrent write, a unique key the unit deferred, the no-resurrection rule)
 * is a conflict classified from the committed state, whatever the key's deferrability;
 * everything else is validation_failed.
 */
void sp_refused(sp_push *x, size_t k, int sqlerrcode)
{
	const sy_mutation *m = &x->req->mutations[k];
	if (m->op == SY_OP_INSERT && (sqlerrcode == ERRCODE_UNIQUE_VIOLATION ||
	                              sqlerrcode == MAKE_SQLSTATE('S', 'Y', '0', '0', '6'))) {
		sp_row row;
		sp_read(x, k, &row);
		if (row.state != SY_ROW_ABSENT && !sp_classify(x, k, &row))
			return;
	}
	sp_set_terminal(x, k, SY_CODE_VALIDATION_FAILED, sp_msg_constraint);
}
