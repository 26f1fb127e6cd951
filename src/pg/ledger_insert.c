/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ledger_insert.c: the ledger rows of a first execution, written through the table and
 * index access methods, without an INSERT or UPDATE statement.
 *
 * Layer: middle of src/pg (doc/hacking.md).
 * Rules: doc/contract.md#ledgers-and-retirement (the ledger rows).
 * Notes: An SPI INSERT of one ledger row paid executor start-up, the CHECK's expression
 * read back from its text, and the row and statement triggers. That was about a quarter of
 * a one-mutation push's backend CPU (doc/performance.md). The rules those guards hold stay
 * on the tables for every other writer. For its own rows the push applies them directly
 * (push_ledger.c): the row rules of ledger_guards.c and the retirement probe. The batch and
 * mutation references hold by construction, under the client's row lock.
 *
 * A table is written here only when it is exactly as the module knows it. It has the
 * columns the caller names, with their types; any other column, a dropped one aside, would
 * need its default. It has no INSERT trigger but those whose rules the caller applies, and
 * the one CHECK the caller evaluates. It has no foreign key but the one the caller names. It
 * has no row security, and no exclusion or deferrable unique index. Otherwise
 * sp_ledger_open answers false, and the caller writes by SQL as before. So an operator's
 * added trigger or index is never skipped.
 *
 * What the executor would do for the row is done the same way. It takes RowExclusiveLock.
 * It refuses a read-only transaction (25006) and checks NOT NULL (23502). It does the heap
 * insert, TOAST and compression included. It makes every index entry through
 * ExecInsertIndexTuples. So the unique indexes refuse or wait on a duplicate exactly as for
 * an INSERT.
 *
 * The client row's accepted-write epoch is advanced the same way (sp_ledger_update). It is
 * an update of one column that is no key, of a row the caller has locked, so no other
 * writer can have changed it. It makes the index entries a non-HOT update needs. The UPDATE
 * statement it replaces cost about a tenth of a one-mutation push (its CHECKs read back
 * from text).
 */
#include "postgres.h"

#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"

#include "push_module.h"

static Oid synchro_relid(const char *table, LOCKMODE lock)
{
	return RangeVarGetRelid(makeRangeVar("synchro", (char *)table, -1), lock, false);
}

static bool named(const char *name, const char *const *names)
{
	for (; names != NULL && *names != NULL; names++)
		if (strcmp(name, *names) == 0)
			return true;
	return false;
}

/* The referencing columns of fk equal the referenced ones, by name (user_id, client_id). */
static bool same_named_keys(Relation rel, const ForeignKeyCacheInfo *fk)
{
	for (int i = 0; i < fk->nkeys; i++) {
		char *a = get_attname(RelationGetRelid(rel), fk->conkey[i], false);
		char *b = get_attname(fk->confrelid, fk->confkey[i], false);
		if (strcmp(a, b) != 0)
			return false;
	}
	return true;
}

/* Everything of rel besides its columns that an INSERT would run, as the caller expects. */
static bool known_guards(Relation rel, const sp_ledger_shape *s)
{
	TupleDesc desc = RelationGetDescr(rel);
	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relrowsecurity)
		return false;
	if (desc->constr != NULL && desc->constr->has_generated_stored)
		return false;
	int nchecks = desc->constr != NULL ? desc->constr->num_check : 0, nknown = 0;
	while (s->checks != NULL && s->checks[nknown] != NULL)
		nknown++;
	if (nchecks != nknown)
		return false;
	for (int i = 0; i < nchecks; i++)
		if (!named(desc->constr->check[i].ccname, s->checks))
			return false;
	List *fks = RelationGetFKeyList(rel);
	if (list_length(fks) != (s->fk_table != NULL ? 1 : 0))
		return false;
	if (s->fk_table != NULL) {
		const ForeignKeyCacheInfo *fk = linitial(fks);
		if (fk->confrelid != synchro_relid(s->fk_table, NoLock) ||
		    !same_named_keys(rel, fk))
			return false;
	}
	TriggerDesc *td = rel->trigdesc;
	for (int i = 0; td != NULL && i < td->numtriggers; i++) {
		const Trigger *tg = &td->triggers[i];
		if (s->update ? !TRIGGER_FOR_UPDATE(tg->tgtype) : !TRIGGER_FOR_INSERT(tg->tgtype))
			continue;
		/* The check trigger of the one foreign key checked above. */
		if (!s->update && tg->tgisinternal && tg->tgfoid == F_RI_FKEY_CHECK_INS &&
		    s->fk_table != NULL)
			continue;
		/* A referenced table's triggers act only when a key changes: an update here
		 * changes no key (sp_ledger_update refuses to). */
		if (s->update && tg->tgisinternal &&
		    RI_FKey_trigger_type(tg->tgfoid) == RI_TRIGGER_PK)
			continue;
		if (!named(tg->tgname, s->triggers))
			return false;
	}
	return true;
}

/* Whether rel is exactly of the shape s: its columns (col: per attribute, the shape's column
 * or -1) and known_guards. */
static bool of_shape(Relation rel, const sp_ledger_shape *s, int *col)
{
	TupleDesc desc = RelationGetDescr(rel);
	int found = 0, next = 0;
	bool known = known_guards(rel, s);
	for (int a = 0; known && a < desc->natts; a++) {
		Form_pg_attribute att = TupleDescAttr(desc, a);
		col[a] = -1;
		if (att->attisdropped)
			continue;
		/* The shape lists the columns in the table's order: the next one first. */
		for (int i = 0; i < s->ncols && col[a] < 0; i++) {
			int c = (next + i) % s->ncols;
			if (strcmp(NameStr(att->attname), s->columns[c]) == 0)
				col[a] = c;
		}
		if (col[a] < 0) {
			known = s->update;
			continue;
		}
		known = att->atttypid == s->types[col[a]];
		next = col[a] + 1;
		found++;
	}
	return known && found == s->ncols;
}

/*
 * Per backend and shape, what of_shape decided of the table and its relid (resolving the name
 * and checking the guards was about a third of the three openings of a 1-mutation push).
 * An entry is dropped by any invalidation of the table or of the table its foreign key
 * references (a trigger, CHECK, column, policy or key changed, the table dropped); the lock
 * taken before use processes the invalidations that arrived, so a changed table is always
 * looked at again. One arriving while an entry is made leaves it unmade.
 */
#define LEDGER_SHAPES 8

typedef struct {
	const sp_ledger_shape *shape;
	Oid relid, fk_relid;
	int natts;
	int *col; /* in the cache context */
	bool known;
	bool valid;
} shape_entry;

static shape_entry shapes[LEDGER_SHAPES];
static uint64 invalidations;

/* Registered by _PG_init (push_entry.c). */
void sp_ledger_forget(Datum arg, Oid relid)
{
	(void)arg;
	invalidations++;
	for (int i = 0; i < LEDGER_SHAPES; i++)
		if (relid == InvalidOid || shapes[i].relid == relid || shapes[i].fk_relid == relid)
			shapes[i].valid = false;
}

static shape_entry *shape_entry_of(const sp_ledger_shape *s)
{
	for (int i = 0; i < LEDGER_SHAPES; i++)
		if (shapes[i].shape == s || shapes[i].shape == NULL) {
			shapes[i].shape = s;
			return &shapes[i];
		}
	return NULL;
}

/* The table of shape s, RowExclusiveLock taken; *known and col as of_shape decides. */
static Relation open_shape(const sp_ledger_shape *s, int *col_out[], bool *known)
{
	shape_entry *e = shape_entry_of(s);
	if (e != NULL && e->valid)
		LockRelationOid(e->relid, RowExclusiveLock);
	if (e != NULL && e->valid) {
		Relation rel = table_open(e->relid, NoLock);
		*col_out = palloc(sizeof(int) * Max(e->natts, 1));
		memcpy(*col_out, e->col, sizeof(int) * Max(e->natts, 1));
		*known = e->known;
		return rel;
	}
	uint64 seen = invalidations;
	Relation rel = table_open(synchro_relid(s->table, RowExclusiveLock), NoLock);
	int natts = RelationGetDescr(rel)->natts;
	int *col = palloc(sizeof(int) * Max(natts, 1));
	*known = of_shape(rel, s, col);
	*col_out = col;
	if (e == NULL)
		return rel;
	int *kept = MemoryContextAlloc(sp_cache_context(), sizeof(int) * Max(natts, 1));
	memcpy(kept, col, sizeof(int) * Max(natts, 1));
	if (e->col != NULL)
		pfree(e->col);
	e->col = kept;
	e->natts = natts;
	e->relid = RelationGetRelid(rel);
	e->fk_relid = s->fk_table != NULL ? synchro_relid(s->fk_table, NoLock) : InvalidOid;
	e->known = *known;
	e->valid = invalidations == seen;
	return rel;
}

bool sp_ledger_open(sp_ledger_table *t, const sp_ledger_shape *s)
{
	int *col;
	bool known;
	memset(t, 0, sizeof *t);
	Relation rel = open_shape(s, &col, &known);
	if (!known) {
		pfree(col);
		table_close(rel, NoLock);
		return false;
	}
	EState *estate = CreateExecutorState();
	ResultRelInfo *rri = makeNode(ResultRelInfo);
	/* No range table: ExecInsertIndexTuples then reads no updated columns (a hint only). */
	InitResultRelInfo(rri, rel, 0, NULL, 0);
	ExecOpenIndices(rri, false);
	for (int i = 0; i < rri->ri_NumIndices; i++) {
		const IndexInfo *ii = rri->ri_IndexRelationInfo[i];
		if (ii->ii_ExclusionOps != NULL ||
		    (ii->ii_Unique && !rri->ri_IndexRelationDescs[i]->rd_index->indimmediate))
			known = false;
	}
	if (!known) {
		ExecCloseIndices(rri);
		FreeExecutorState(estate);
		pfree(col);
		table_close(rel, NoLock);
		return false;
	}
	t->rel = rel;
	t->estate = estate;
	t->rri = rri;
	t->col = col;
	t->slot = table_slot_create(rel, NULL);
	t->cid = GetCurrentCommandId(true);
	return true;
}

void sp_ledger_insert(sp_ledger_table *t, const Datum *values, const bool *nulls)
{
	TupleDesc desc = RelationGetDescr(t->rel);
	TupleTableSlot *slot = t->slot;

	PreventCommandIfReadOnly("INSERT");
	ExecClearTuple(slot);
	for (int a = 0; a < desc->natts; a++) {
		Form_pg_attribute att = TupleDescAttr(desc, a);
		int c = t->col[a];
		slot->tts_values[a] = c >= 0 ? values[c] : (Datum)0;
		slot->tts_isnull[a] = c < 0 || nulls[c];
		if (slot->tts_isnull[a] && att->attnotnull)
			ereport(ERROR,
			        (errcode(ERRCODE_NOT_NULL_VIOLATION),
			         errmsg("null value in column \"%s\" of relation \"%s\" violates "
			                "not-null constraint",
			                NameStr(att->attname), RelationGetRelationName(t->rel))));
	}
	ExecStoreVirtualTuple(slot);
	table_tuple_insert(t->rel, slot, t->cid, 0, NULL);
	if (t->rri->ri_NumIndices > 0) {
		List *recheck =
		        ExecInsertIndexTuples(t->rri, slot, t->estate, false, false, NULL, NIL);
		/* Deferrable unique indexes were refused by sp_ledger_open. */
		if (recheck != NIL)
			elog(ERROR, "synchro_push: a ledger index asks for a deferred check");
	}
	ResetPerTupleExprContext(t->estate);
}

void sp_ledger_update(sp_ledger_table *t, TupleTableSlot *old, int col, Datum value)
{
	TupleDesc desc = RelationGetDescr(t->rel);
	TupleTableSlot *slot = t->slot;
	AttrNumber att = InvalidAttrNumber;
	TM_FailureData tmfd;
	LockTupleMode lockmode;
	bool update_indexes;

	PreventCommandIfReadOnly("UPDATE");
	for (int a = 0; a < desc->natts; a++)
		if (t->col[a] == col)
			att = (AttrNumber)(a + 1);
	/* No key column changes: the referenced side's triggers are skipped (known_guards). */
	Bitmapset *keys = RelationGetIndexAttrBitmap(t->rel, INDEX_ATTR_BITMAP_KEY);
	if (att == InvalidAttrNumber ||
	    bms_is_member(att - FirstLowInvalidHeapAttributeNumber, keys))
		elog(ERROR, "synchro_push: a ledger update of a key or unknown column");
	slot_getallattrs(old);
	ExecClearTuple(slot);
	memcpy(slot->tts_values, old->tts_values, sizeof(Datum) * desc->natts);
	memcpy(slot->tts_isnull, old->tts_isnull, sizeof(bool) * desc->natts);
	slot->tts_values[att - 1] = value;
	slot->tts_isnull[att - 1] = false;
	ExecStoreVirtualTuple(slot);
	TM_Result r = table_tuple_update(t->rel, &old->tts_tid, slot, t->cid, InvalidSnapshot,
	                                 InvalidSnapshot, true, &tmfd, &lockmode, &update_indexes);
	/* The caller holds the row's lock: nobody else can have changed it. */
	if (r != TM_Ok)
		elog(ERROR, "synchro_push: a locked ledger row could not be updated (%d)", (int)r);
	if (update_indexes && t->rri->ri_NumIndices > 0) {
		List *recheck =
		        ExecInsertIndexTuples(t->rri, slot, t->estate, true, false, NULL, NIL);
		if (recheck != NIL)
			elog(ERROR, "synchro_push: a ledger index asks for a deferred check");
	}
	ResetPerTupleExprContext(t->estate);
}

void sp_ledger_close(sp_ledger_table *t)
{
	ExecDropSingleTupleTableSlot(t->slot);
	ExecCloseIndices(t->rri);
	FreeExecutorState(t->estate);
	pfree(t->col);
	table_close(t->rel, NoLock);
	memset(t, 0, sizeof *t);
	/* What follows (SPI statements, probes) sees the rows, as after an INSERT statement. */
	CommandCounterIncrement();
}
