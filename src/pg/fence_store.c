/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fence_store.c: the version fence's row of synchro.row_fences, written through the table
 * and index access methods. version_fence.c calls it for each row write of a synced table.
 *
 * Layer: base of src/pg (doc/hacking.md).
 * Notes: It has the upsert statement's effects, without the statement. The statement's
 * executor start-up, arbiter check and CHECK read back from its text were most of a synced
 * write's cost (doc/hacking.md#the-version-fences-cost). It is used only while the fence
 * table is as the migrations left it. Otherwise the fence runs the statement.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "storage/lmgr.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"

#include "push_module.h"

static const char *const fence_names[FC_N] = {"table_id",    "pk",        "state",   "version",
                                              "mutation_id", "client_id", "user_id", "source_xid",
                                              "source_lsn",  "updated_at"};
static const Oid fence_types[FC_N] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID,   UUIDOID,
                                      UUIDOID, TEXTOID, XID8OID, PG_LSNOID, TIMESTAMPTZOID};

/*
 * Whether synchro.row_fences is as the migrations left it, so that writing its row directly
 * does all the upsert statement did: a heap table with these ten columns (and dropped ones),
 * no other CHECK than its one of migration 21 (which a fence row always passes: a state of
 * live or deleted, 32 hexadecimal digits), no generated column, no row security, no trigger
 * on INSERT or UPDATE, and one index, its primary key (table_id, pk). Otherwise the fence
 * runs the upsert statement, which applies whatever the table has.
 */
void sp_fence_store_check(sp_fence_store *s, MemoryContext cxt)
{
	s->checked = true;
	s->direct = false;
	Oid nsp = get_namespace_oid("synchro", true);
	s->relid = OidIsValid(nsp) ? get_relname_relid("row_fences", nsp) : InvalidOid;
	if (!OidIsValid(s->relid))
		return;
	Relation f = table_open(s->relid, RowExclusiveLock);
	TupleDesc d = RelationGetDescr(f);
	TriggerDesc *tr = f->trigdesc;
	bool ok = f->rd_rel->relkind == RELKIND_RELATION && f->rd_rel->relam == HEAP_TABLE_AM_OID &&
	          !f->rd_rel->relrowsecurity &&
	          (d->constr == NULL ||
	           (!d->constr->has_generated_stored &&
	            (d->constr->num_check == 0 ||
	             (d->constr->num_check == 1 &&
	              strcmp(d->constr->check[0].ccname, "row_fences_row_rules") == 0)))) &&
	          (tr == NULL ||
	           !(tr->trig_insert_before_row || tr->trig_insert_after_row ||
	             tr->trig_insert_instead_row || tr->trig_insert_before_statement ||
	             tr->trig_insert_after_statement || tr->trig_update_before_row ||
	             tr->trig_update_after_row || tr->trig_update_instead_row ||
	             tr->trig_update_before_statement || tr->trig_update_after_statement));
	int live = 0;
	for (int i = 0; ok && i < d->natts; i++) {
		Form_pg_attribute a = TupleDescAttr(d, i);
		if (a->attisdropped)
			continue;
		live++;
		int k = 0;
		while (k < FC_N && strcmp(NameStr(a->attname), fence_names[k]) != 0)
			k++;
		ok = k < FC_N && a->atttypid == fence_types[k];
		if (ok)
			s->att[k] = a->attnum;
	}
	ok = ok && live == FC_N;
	List *indexes = ok ? RelationGetIndexList(f) : NIL;
	if (ok && list_length(indexes) == 1 && linitial_oid(indexes) == f->rd_pkindex) {
		Relation idx = index_open(f->rd_pkindex, RowExclusiveLock);
		MemoryContext old = MemoryContextSwitchTo(cxt);
		s->index = BuildIndexInfo(idx);
		MemoryContextSwitchTo(old);
		IndexInfo *ii = s->index;
		ok = idx->rd_rel->relam == BTREE_AM_OID && ii->ii_Unique &&
		     ii->ii_ReadyForInserts && ii->ii_Expressions == NIL &&
		     ii->ii_Predicate == NIL && ii->ii_ExclusionOps == NULL &&
		     idx->rd_index->indimmediate && ii->ii_NumIndexAttrs == 2 &&
		     ii->ii_NumIndexKeyAttrs == 2 &&
		     ii->ii_IndexAttrNumbers[0] == s->att[FC_TABLE_ID] &&
		     ii->ii_IndexAttrNumbers[1] == s->att[FC_PK];
		s->pkey = f->rd_pkindex;
		index_close(idx, NoLock);
	} else {
		ok = false;
	}
	list_free(indexes);
	table_close(f, NoLock);
	s->direct = ok;
}

static void refuse_serialization(const char *what)
{
	ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
	                errmsg("could not serialize access due to concurrent %s", what)));
}

/*
 * The fence's upsert (upsert_sql) without a statement, as the executor runs INSERT ... ON
 * CONFLICT (table_id, pk) DO UPDATE ... WHERE: the fence found through the primary key (an
 * inserter in progress waited for), locked, checked against the transaction's snapshot under
 * REPEATABLE READ and SERIALIZABLE and updated; or inserted speculatively, and inserted again
 * from the start when a concurrent insert of the same key wins. The same rows, locks, WAL and
 * refusals; false when the WHERE keeps the fence (a push's insert over a deleted row).
 */
bool sp_fence_write_direct(sp_fence_store *s, const Datum *v, const char *nulls, bool push_insert)
{
	Relation f = table_open(s->relid, RowExclusiveLock);
	Relation idx = index_open(s->pkey, RowExclusiveLock);
	TupleDesc d = RelationGetDescr(f);
	Datum *vals = palloc0(sizeof *vals * d->natts);
	bool *isnull = palloc(sizeof *isnull * d->natts);
	for (int i = 0; i < d->natts; i++)
		isnull[i] = true;
	for (int k = 0; k < FC_N; k++) {
		int a = s->att[k] - 1;
		switch (k) {
		case FC_XID:
			vals[a] = FullTransactionIdGetDatum(GetTopFullTransactionId());
			isnull[a] = false;
			break;
		case FC_LSN: break;
		case FC_UPDATED:
			vals[a] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
			isnull[a] = false;
			break;
		default:
			/* the upsert's parameters $1 .. $7 */
			vals[a] = v[k];
			isnull[a] = nulls[k] == 'n';
		}
	}
	Datum key[2] = {vals[s->att[FC_TABLE_ID] - 1], vals[s->att[FC_PK] - 1]};
	bool key_null[2] = {false, false};
	ScanKeyData sk[2];
	for (int i = 0; i < 2; i++)
		ScanKeyEntryInitialize(&sk[i], 0, (AttrNumber)(i + 1), BTEqualStrategyNumber,
		                       InvalidOid, idx->rd_indcollation[i], F_TEXTEQ, key[i]);
	/* as SPI around each statement of a trigger */
	CommandCounterIncrement();
	CommandId cid = GetCurrentCommandId(true);
	TupleTableSlot *slot = table_slot_create(f, NULL);
	bool written = true;
	for (;;) {
		SnapshotData dirty;
		InitDirtySnapshot(dirty);
		IndexScanDesc scan = index_beginscan(f, idx, &dirty, 2, 0);
		index_rescan(scan, sk, 2, NULL, 0);
		bool found = index_getnext_slot(scan, ForwardScanDirection, slot);
		index_endscan(scan);
		if (found) {
			if (TransactionIdIsValid(dirty.xmin)) {
				/* an insert in progress: wait for it, then look again */
				if (dirty.speculativeToken != 0)
					SpeculativeInsertionWait(dirty.xmin,
					                         dirty.speculativeToken);
				else
					XactLockTableWait(dirty.xmin, f, &slot->tts_tid,
					                  XLTW_InsertIndex);
				continue;
			}
			TM_FailureData tmfd;
			ItemPointerData tid = slot->tts_tid;
			bool xmin_null;
			TM_Result r = table_tuple_lock(f, &tid, GetActiveSnapshot(), slot, cid,
			                               LockTupleExclusive, LockWaitBlock, 0, &tmfd);
			switch (r) {
			case TM_Ok: break;
			case TM_Invisible: {
				TransactionId xmin = DatumGetTransactionId(slot_getsysattr(
				        slot, MinTransactionIdAttributeNumber, &xmin_null));
				if (TransactionIdIsCurrentTransactionId(xmin))
					ereport(ERROR, (errcode(ERRCODE_CARDINALITY_VIOLATION),
					                errmsg("ON CONFLICT DO UPDATE command "
					                       "cannot affect row a "
					                       "second time"),
					                errhint("Ensure that no rows proposed for "
					                        "insertion within the "
					                        "same command have duplicate "
					                        "constrained values.")));
				elog(ERROR, "attempted to lock invisible tuple");
				break;
			}
			case TM_SelfModified: elog(ERROR, "unexpected self-updated tuple"); break;
			case TM_Updated:
				if (IsolationUsesXactSnapshot())
					refuse_serialization("update");
				continue;
			case TM_Deleted:
				if (IsolationUsesXactSnapshot())
					refuse_serialization("delete");
				continue;
			default: elog(ERROR, "unrecognized table_tuple_lock status: %u", r);
			}
			if (IsolationUsesXactSnapshot() &&
			    !table_tuple_satisfies_snapshot(f, slot, GetActiveSnapshot())) {
				TransactionId xmin = DatumGetTransactionId(slot_getsysattr(
				        slot, MinTransactionIdAttributeNumber, &xmin_null));
				if (!TransactionIdIsCurrentTransactionId(xmin))
					refuse_serialization("update");
			}
			if (push_insert) {
				bool state_null;
				Datum st = slot_getattr(slot, s->att[FC_STATE], &state_null);
				if (!state_null) {
					text *t = DatumGetTextPP(st);
					if (VARSIZE_ANY_EXHDR(t) == 7 &&
					    memcmp(VARDATA_ANY(t), "deleted", 7) == 0) {
						written = false;
						break;
					}
				}
			}
			HeapTuple tup = heap_form_tuple(d, vals, isnull);
			simple_heap_update(f, &tid, tup);
			if (!HeapTupleIsHeapOnly(tup))
				(void)index_insert(idx, key, key_null, &tup->t_self, f,
				                   UNIQUE_CHECK_YES, true, s->index);
			break;
		}
		HeapTuple tup = heap_form_tuple(d, vals, isnull);
		TransactionId xid = GetCurrentTransactionId();
		uint32 token = SpeculativeInsertionLockAcquire(xid);
		HeapTupleHeaderSetSpeculativeToken(tup->t_data, token);
		heap_insert(f, tup, cid, HEAP_INSERT_SPECULATIVE, NULL);
		bool alone = index_insert(idx, key, key_null, &tup->t_self, f, UNIQUE_CHECK_PARTIAL,
		                          false, s->index);
		if (alone)
			heap_finish_speculative(f, &tup->t_self);
		else
			heap_abort_speculative(f, &tup->t_self);
		SpeculativeInsertionLockRelease(xid);
		if (alone)
			break;
	}
	ExecDropSingleTupleTableSlot(slot);
	index_close(idx, NoLock);
	table_close(f, NoLock);
	CommandCounterIncrement();
	return written;
}
