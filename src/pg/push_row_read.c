/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_row_read.c: a synced row read by its primary key index, without a statement.
 *
 * Layer: middle of src/pg (doc/hacking.md).
 * Notes: It returns what read_sql would return (sp_read, push_cas.c). The probe runs under
 * the caller's snapshot. The fields go through their output functions, as the executor
 * would read them and SPI_getvalue print them.
 *
 * Whether a table can be read so, and how, is decided once per table and backend. How means
 * its relation, the pk index and its equality, and each field's column and output
 * function. The table's reader keeps the decision until an invalidation could change it.
 * That may be any relation's (a column, an index, a grant, row-level security, the relation
 * itself), a role's or a role membership's (the SELECT right), or an operator's. Deciding it
 * at every read cost about 11,000 instructions of the 40,000 a read cost (callgrind,
 * 100-mutation pushes, two reads per mutation).
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
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/regproc.h"

#include "push_module.h"

struct sp_row_reader {
	uint64 generation; /* of the invalidations it was decided under; 0: never */
	Oid user;          /* the user whose SELECT right was checked */
	bool direct;       /* false: the table is read by read_sql */
	Oid relid;
	Oid idxid;
	RegProcedure eq;
	Oid collation;
	FmgrInfo input; /* the pk's type input */
	Oid ioparam;
	AttrNumber *atts; /* per field */
	FmgrInfo *output; /* per field */
};

/* Bumped by every invalidation that could change a decision; starts at 1. */
static uint64 generation = 1;

/* Registered by _PG_init (push_entry.c): any relation's invalidation; and the syscache
 * ones of roles, role memberships and operators. */
void sp_row_reader_forget(Datum arg, Oid relid)
{
	(void)arg;
	(void)relid;
	generation++;
}

void sp_row_reader_forget_syscache(Datum arg, int cacheid, uint32 hashvalue)
{
	(void)arg;
	(void)cacheid;
	(void)hashvalue;
	generation++;
}

sp_row_reader *sp_row_reader_new(void)
{
	return MemoryContextAllocZero(sp_cache_context(), sizeof(sp_row_reader));
}

static Oid pk_type_oid(sy_type t)
{
	switch (t) {
	case SY_TYPE_TEXT: return TEXTOID;
	case SY_TYPE_INT32: return INT4OID;
	case SY_TYPE_INT64: return INT8OID;
	case SY_TYPE_UUID: return UUIDOID;
	case SY_TYPE_DATE: return DATEOID;
	case SY_TYPE_TIMESTAMP: return TIMESTAMPTZOID;
	case SY_TYPE_NUMERIC: return NUMERICOID;
	default: return InvalidOid;
	}
}

/* The valid unique btree index on column att alone, with the column's equality and
 * collation; InvalidOid when there is none. */
static Oid pk_index(Relation rel, AttrNumber att, RegProcedure *eq)
{
	Form_pg_attribute a = TupleDescAttr(RelationGetDescr(rel), att - 1);
	Oid found = InvalidOid;
	List *indexes = RelationGetIndexList(rel);
	ListCell *lc;
	foreach (lc, indexes) {
		Relation idx = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index ix = idx->rd_index;
		if (ix->indisunique && ix->indisvalid && ix->indisready && ix->indislive &&
		    ix->indnkeyatts == 1 && ix->indkey.values[0] == att &&
		    idx->rd_rel->relam == BTREE_AM_OID && idx->rd_opcintype[0] == a->atttypid &&
		    idx->rd_indcollation[0] == a->attcollation &&
		    heap_attisnull(idx->rd_indextuple, Anum_pg_index_indexprs, NULL) &&
		    heap_attisnull(idx->rd_indextuple, Anum_pg_index_indpred, NULL)) {
			Oid op = get_opfamily_member(idx->rd_opfamily[0], a->atttypid, a->atttypid,
			                             BTEqualStrategyNumber);
			if (OidIsValid(op) && op == OpernameGetOprid(list_make1(makeString("=")),
			                                             a->atttypid, a->atttypid)) {
				*eq = get_opcode(op);
				found = RelationGetRelid(idx);
			}
		}
		index_close(idx, NoLock);
		if (OidIsValid(found))
			break;
	}
	list_free(indexes);
	return found;
}

/*
 * Decides how ti is read, under the invalidations seen so far (gen), and returns the
 * relation opened (AccessShareLock until the transaction ends), or NULL when it is read by
 * read_sql: not a plain table without children, no SELECT on the whole table, row-level
 * security, no such index, a column of another type than the manifest's.
 */
static Relation decide(const sp_table *ti, sp_row_reader *r, uint64 gen)
{
	const sy_table *t = ti->t;
	MemoryContext cache = sp_cache_context();
	r->generation = 0;
	r->direct = false;
	if (r->atts == NULL) {
		r->atts = MemoryContextAllocZero(cache, sizeof *r->atts * (t->field_count + 1));
		r->output = MemoryContextAllocZero(cache, sizeof *r->output * (t->field_count + 1));
	}
	r->user = GetUserId();
	RangeVar *rv = makeRangeVarFromNameList(stringToQualifiedNameList(ti->rel));
	Oid relid = RangeVarGetRelid(rv, AccessShareLock, true);
	if (!OidIsValid(relid) || pg_class_aclcheck(relid, r->user, ACL_SELECT) != ACLCHECK_OK) {
		r->generation = gen;
		return NULL;
	}
	Relation rel = table_open(relid, NoLock);
	TupleDesc desc = RelationGetDescr(rel);
	AttrNumber pk = get_attnum(relid, t->pk.column);
	Oid type = pk_type_oid(t->pk.type);
	/* row-level security decided on the relation itself, whoever reads (check_enable_rls
	 * would also let an owner or a BYPASSRLS role through, which no invalidation follows):
	 * enabling it later is a relcache invalidation, which makes the reader decide again */
	bool ok = rel->rd_rel->relkind == RELKIND_RELATION && !rel->rd_rel->relhassubclass &&
	          !rel->rd_rel->relrowsecurity && pk != InvalidAttrNumber && OidIsValid(type) &&
	          TupleDescAttr(desc, pk - 1)->atttypid == type;
	for (size_t j = 0; ok && j < t->field_count; j++) {
		r->atts[j] = get_attnum(relid, t->fields[j].column);
		ok = r->atts[j] != InvalidAttrNumber;
	}
	r->idxid = ok ? pk_index(rel, pk, &r->eq) : InvalidOid;
	r->generation = gen;
	if (!OidIsValid(r->idxid)) {
		table_close(rel, NoLock);
		return NULL;
	}
	Oid typinput;
	getTypeInputInfo(type, &typinput, &r->ioparam);
	fmgr_info_cxt(typinput, &r->input, cache);
	for (size_t j = 0; j < t->field_count; j++) {
		Oid out;
		bool varlena;
		getTypeOutputInfo(TupleDescAttr(desc, r->atts[j] - 1)->atttypid, &out, &varlena);
		fmgr_info_cxt(out, &r->output[j], cache);
	}
	r->relid = relid;
	r->direct = true;
	return rel;
}

/* The relation of a reader decided under the current invalidations, or NULL (read_sql). */
static Relation open_direct(const sp_table *ti)
{
	sp_row_reader *r = ti->reader;
	if (r->generation == generation && r->user == GetUserId()) {
		if (!r->direct)
			return NULL;
		/* The lock takes in the invalidations queued until now: still current after it? */
		Relation rel = try_table_open(r->relid, AccessShareLock);
		if (rel != NULL && r->generation == generation)
			return rel;
		if (rel != NULL)
			table_close(rel, NoLock);
	}
	return decide(ti, r, generation);
}

bool sp_read_row_direct(const sp_table *ti, const char *pk_text, Snapshot snap, sp_row *row)
{
	const sy_table *t = ti->t;
	Relation rel = open_direct(ti);
	if (rel == NULL)
		return false;
	sp_row_reader *r = ti->reader;
	Datum key = InputFunctionCall(&r->input, (char *)pk_text, r->ioparam, -1);
	Relation idx = index_open(r->idxid, AccessShareLock);
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	ScanKeyData sk;
	ScanKeyEntryInitialize(&sk, 0, 1, BTEqualStrategyNumber, InvalidOid,
	                       idx->rd_indcollation[0], r->eq, key);
	IndexScanDesc scan = index_beginscan(rel, idx, snap, 1, 0);
	index_rescan(scan, &sk, 1, NULL, 0);
	row->has_row = index_getnext_slot(scan, ForwardScanDirection, slot);
	if (row->has_row) {
		row->vals = palloc0(sizeof *row->vals * (t->field_count + 1));
		for (size_t j = 0; j < t->field_count; j++) {
			bool isnull;
			Datum d = slot_getattr(slot, r->atts[j], &isnull);
			if (!isnull)
				row->vals[j] = OutputFunctionCall(&r->output[j], d);
		}
		/* A second row (a DEFERRABLE key, mid-unit): the statement's two rows. */
		if (index_getnext_slot(scan, ForwardScanDirection, slot))
			sp_fail("row read");
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(idx, NoLock);
	table_close(rel, NoLock);
	return true;
}
