/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_index_probe.c: primary-key probes of synchro's own tables through the index access
 * method, without the executor.
 *
 * Layer: middle of src/pg (doc/hacking.md).
 * Rules: doc/contract.md#exact-replay (the lookups of every push).
 * Notes: Every push looks up the client, retirement, the latest schema, the batch and each
 * mutation id. Each is an equality probe of a unique index. SPI spent more on starting and
 * ending a plan for them (ExecInitNode, plan revalidation) than on the probe itself. In a
 * profile of a one-mutation push, sp_lookup_head took 12% of the backend, two thirds of it
 * executor setup.
 *
 * The probes see what a statement run through SPI would. The command counter is advanced
 * and a fresh snapshot is taken. Under READ COMMITTED, a probe sees every commit before it.
 * A REPEATABLE READ or SERIALIZABLE caller gets its transaction snapshot, with the access
 * method's predicate locks. Each table is locked AccessShareLock until the transaction
 * ends, as the executor locks what it reads. synchro_push runs as the tables' owner, so
 * there is no privilege to check. User tables are never probed here.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "executor/tuptable.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "push_module.h"

Snapshot sp_probe_snapshot(void)
{
	CommandCounterIncrement();
	return RegisterSnapshot(GetTransactionSnapshot());
}

void sp_probe_snapshot_end(Snapshot snap)
{
	UnregisterSnapshot(snap);
}

/*
 * Per backend, what a probe of each table needs besides its locks: the table, its primary key
 * and the key columns' equality procedures. Resolving them took half of a probe's opening
 * (RangeVarGetRelid, the operator lookups; 14 openings per one-mutation push). An entry is
 * dropped by any invalidation of its table or index (ALTER, DROP, REINDEX); the lock taken
 * before use processes the invalidations that arrived, so a changed table is never used.
 */
#define PROBE_TABLES 16
/* The columns read by name (attnum_of), resolved once per entry: get_attnum per column read
 * was about 6% of a 1-mutation replay's instructions. */
#define PROBE_COLUMNS 16

typedef struct {
	char name[NAMEDATALEN];
	AttrNumber att; /* InvalidAttrNumber: the table has no such column */
} probe_column;

typedef struct {
	char table[NAMEDATALEN];
	Oid relid, idx;
	int nkeys;
	RegProcedure eq[INDEX_MAX_KEYS];
	probe_column cols[PROBE_COLUMNS];
	int ncols;
	bool valid;
} probe_table;

static probe_table tables[PROBE_TABLES];

/* Registered by _PG_init (push_entry.c). */
void sp_probe_forget(Datum arg, Oid relid)
{
	(void)arg;
	for (int i = 0; i < PROBE_TABLES; i++)
		if (relid == InvalidOid || tables[i].relid == relid || tables[i].idx == relid)
			tables[i].valid = false;
}

static probe_table *table_entry(const char *table)
{
	probe_table *free_entry = NULL;
	for (int i = 0; i < PROBE_TABLES; i++) {
		if (tables[i].table[0] == '\0') {
			if (free_entry == NULL)
				free_entry = &tables[i];
		} else if (strcmp(tables[i].table, table) == 0)
			return &tables[i];
	}
	if (free_entry == NULL || strlen(table) >= NAMEDATALEN)
		return NULL; /* resolved for this probe only */
	strcpy(free_entry->table, table);
	free_entry->valid = false;
	return free_entry;
}

static void resolve(probe_table *e, const char *table)
{
	e->ncols = 0;
	e->relid = RangeVarGetRelid(makeRangeVar("synchro", (char *)table, -1), AccessShareLock,
	                            false);
	Relation rel = table_open(e->relid, NoLock);
	e->idx = RelationGetPrimaryKeyIndex(rel);
	table_close(rel, NoLock);
	if (!OidIsValid(e->idx))
		elog(ERROR, "synchro_push: synchro.%s has no primary key", table);
	Relation idx = index_open(e->idx, AccessShareLock);
	/* The equality procedure of each key column (a ledger probe runs per mutation id). */
	e->nkeys = IndexRelationGetNumberOfKeyAttributes(idx);
	for (int i = 0; i < e->nkeys; i++) {
		Oid type = idx->rd_opcintype[i];
		Oid op =
		        get_opfamily_member(idx->rd_opfamily[i], type, type, BTEqualStrategyNumber);
		if (!OidIsValid(op))
			elog(ERROR, "synchro_push: no equality operator for a probe");
		e->eq[i] = get_opcode(op);
	}
	index_close(idx, NoLock);
}

void sp_probe_open(sp_probe *p, const char *table)
{
	probe_table local, *e = table_entry(table);
	if (e == NULL) {
		e = &local;
		e->valid = false;
	}
	if (e->valid) {
		LockRelationOid(e->relid, AccessShareLock);
		LockRelationOid(e->idx, AccessShareLock);
	}
	/* Resolved afresh when the lock brought an invalidation of the table (one arriving while
	 * it is resolved marks it for the next opening). */
	if (!e->valid) {
		e->valid = e != &local;
		resolve(e, table);
	}
	p->rel = table_open(e->relid, NoLock);
	p->idx = index_open(e->idx, NoLock);
	p->slot = table_slot_create(p->rel, NULL);
	p->found = false;
	p->entry = e != &local ? e : NULL;
	p->nkeys = e->nkeys;
	memcpy(p->eq, e->eq, sizeof(RegProcedure) * (size_t)e->nkeys);
}

bool sp_probe_find(sp_probe *p, int nkeys, const Datum *values, Snapshot snap)
{
	ScanKeyData keys[INDEX_MAX_KEYS];
	if (nkeys > p->nkeys)
		elog(ERROR, "synchro_push: a probe with more keys than its index");
	/* Equality keys on the first nkeys columns, with the index's operators and collations. */
	for (int i = 0; i < nkeys; i++)
		ScanKeyEntryInitialize(&keys[i], 0, (AttrNumber)(i + 1), BTEqualStrategyNumber,
		                       InvalidOid, p->idx->rd_indcollation[i], p->eq[i], values[i]);
	IndexScanDesc scan = index_beginscan(p->rel, p->idx, snap, nkeys, 0);
	index_rescan(scan, keys, nkeys, NULL, 0);
	p->found = index_getnext_slot(scan, ForwardScanDirection, p->slot);
	index_endscan(scan);
	return p->found;
}

bool sp_probe_find_last(sp_probe *p, Snapshot snap)
{
	IndexScanDesc scan = index_beginscan(p->rel, p->idx, snap, 0, 0);
	index_rescan(scan, NULL, 0, NULL, 0);
	p->found = index_getnext_slot(scan, BackwardScanDirection, p->slot);
	index_endscan(scan);
	return p->found;
}

bool sp_probe_fetch(sp_probe *p, ItemPointer tid, Snapshot snap)
{
	p->found = ItemPointerIsValid(tid) &&
	           table_tuple_fetch_row_version(p->rel, tid, snap, p->slot);
	return p->found;
}

/*
 * The attribute number of column, InvalidAttrNumber when there is none. Kept with the table's
 * entry: a column's number changes only under an AccessExclusiveLock (rename, drop, add),
 * which waits for the probe's AccessShareLock, and its invalidation drops the entry's columns
 * with the entry before the next opening uses them.
 */
static AttrNumber column_number(const sp_probe *p, const char *column)
{
	probe_table *e = p->entry;
	for (int i = 0; e != NULL && i < e->ncols; i++)
		if (strcmp(e->cols[i].name, column) == 0)
			return e->cols[i].att;
	AttrNumber att = get_attnum(RelationGetRelid(p->rel), column);
	if (e != NULL && e->valid && e->ncols < PROBE_COLUMNS && strlen(column) < NAMEDATALEN) {
		strcpy(e->cols[e->ncols].name, column);
		e->cols[e->ncols++].att = att;
	}
	return att;
}

bool sp_probe_has(const sp_probe *p, const char *column)
{
	return column_number(p, column) != InvalidAttrNumber;
}

static AttrNumber attnum_of(const sp_probe *p, const char *column)
{
	AttrNumber att = column_number(p, column);
	if (att == InvalidAttrNumber)
		elog(ERROR, "synchro_push: synchro.%s has no column %s",
		     RelationGetRelationName(p->rel), column);
	return att;
}

Datum sp_probe_get(sp_probe *p, const char *column, bool *isnull)
{
	return slot_getattr(p->slot, attnum_of(p, column), isnull);
}

char *sp_probe_text(sp_probe *p, const char *column)
{
	bool isnull;
	Datum d = sp_probe_get(p, column, &isnull);
	return isnull ? NULL : TextDatumGetCString(d);
}

int64 sp_probe_int(sp_probe *p, const char *column)
{
	bool isnull;
	AttrNumber att = attnum_of(p, column);
	Datum d = slot_getattr(p->slot, att, &isnull);
	return isnull ? 0
	              : sp_int_datum(d, TupleDescAttr(RelationGetDescr(p->rel), att - 1)->atttypid);
}

char *sp_probe_bytes(sp_probe *p, const char *column, size_t *len)
{
	bool isnull;
	Datum d = sp_probe_get(p, column, &isnull);
	*len = 0;
	return isnull ? NULL : sp_datum_bytes(d, len);
}

void sp_probe_close(sp_probe *p)
{
	ExecDropSingleTupleTableSlot(p->slot);
	index_close(p->idx, NoLock);
	table_close(p->rel, NoLock);
	memset(p, 0, sizeof *p);
}
