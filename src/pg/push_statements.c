/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_statements.c: saved SPI plans, keyed by their SQL text, and the datums the
 * statements take and return.
 *
 * Layer: base of src/pg (doc/hacking.md).
 * Notes: Every statement of the push runs more than once per backend. So each is prepared
 * once (generic, SPI_prepare_cursor and SPI_keepplan). The plan cache revalidates it after
 * DDL. The statements that vary are kept the same way, up to PLANS_MAX: an insert or update
 * names the columns it writes. Beyond that, a statement is prepared for the call only.
 *
 * Every SPI call here leaves the caller's memory context current, as it found it. SPI
 * itself ends each call in its procedure context, which lives until SPI_finish. Whatever
 * the module allocated after its first statement landed there. So a push of n mutations
 * kept every mutation's scratch (datums, copied rows) to the end. For 1000 mutations that
 * was 8.5 MB, faulted in and given back to the kernel at every push. With the caller's
 * context kept, a mutation's scratch lives in its unit's context. It is reset after the
 * unit (push_unit.c).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/uuid.h"

#include "push_module.h"

#define BUCKETS   1024 /* a power of two */
#define PLANS_MAX 4096

typedef struct plan_entry {
	uint32 hash;
	char *sql;
	SPIPlanPtr plan;
	struct plan_entry *next;
} plan_entry;

static plan_entry *buckets[BUCKETS];
static int nplans;

SPIPlanPtr sp_plan(const char *sql, int nargs, const Oid *types)
{
	uint32 h = hash_bytes((const unsigned char *)sql, (int)strlen(sql));
	plan_entry **slot = &buckets[h & (BUCKETS - 1)];
	for (plan_entry *e = *slot; e != NULL; e = e->next)
		if (e->hash == h && strcmp(e->sql, sql) == 0)
			return e->plan;
	/*
	 * Generic plans always: every statement here is an index probe or a one-row write
	 * whatever its parameters, and a custom plan is planned again at every execution
	 * (perf of 1-mutation pushes: the planner was 9% of the backend's CPU before).
	 */
	MemoryContext cxt = CurrentMemoryContext;
	SPIPlanPtr plan = SPI_prepare_cursor(sql, nargs, (Oid *)types, CURSOR_OPT_GENERIC_PLAN);
	MemoryContextSwitchTo(cxt);
	if (plan == NULL)
		elog(ERROR, "synchro_push: cannot prepare a statement: %s",
		     SPI_result_code_string(SPI_result));
	if (nplans >= PLANS_MAX)
		return plan; /* freed with the call's SPI connection */
	int kept = SPI_keepplan(plan);
	MemoryContextSwitchTo(cxt);
	if (kept != 0)
		elog(ERROR, "synchro_push: cannot keep a statement");
	plan_entry *e = MemoryContextAlloc(sp_cache_context(), sizeof *e);
	e->hash = h;
	e->sql = MemoryContextStrdup(sp_cache_context(), sql);
	e->plan = plan;
	e->next = *slot;
	*slot = e;
	nplans++;
	return plan;
}

void sp_run(SPIPlanPtr plan, const Datum *values, const char *nulls, int expect)
{
	MemoryContext cxt = CurrentMemoryContext;
	int rc = SPI_execute_plan(plan, (Datum *)values, nulls, false, 0);
	MemoryContextSwitchTo(cxt);
	if (rc != expect)
		elog(ERROR, "synchro_push: a statement answered %s", SPI_result_code_string(rc));
}

void sp_run_snapshot(SPIPlanPtr plan, const Datum *values, Snapshot snap, int expect)
{
	MemoryContext cxt = CurrentMemoryContext;
	int rc = SPI_execute_snapshot(plan, (Datum *)values, NULL, snap, InvalidSnapshot, true,
	                              false, 0);
	MemoryContextSwitchTo(cxt);
	if (rc != expect)
		elog(ERROR, "synchro_push: a statement answered %s", SPI_result_code_string(rc));
}

bool sp_isnull(uint64 i, int col)
{
	bool isnull;
	(void)SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, col, &isnull);
	return isnull;
}

char *sp_text(uint64 i, int col)
{
	return SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, col);
}

bool sp_bool(uint64 i, int col)
{
	bool isnull;
	Datum d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, col, &isnull);
	return !isnull && DatumGetBool(d);
}

int64 sp_int_datum(Datum d, Oid type)
{
	switch (type) {
	case INT2OID: return DatumGetInt16(d);
	case INT4OID: return DatumGetInt32(d);
	default: return DatumGetInt64(d);
	}
}

int64 sp_int(uint64 i, int col)
{
	bool isnull;
	Datum d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, col, &isnull);
	return isnull ? 0 : sp_int_datum(d, SPI_gettypeid(SPI_tuptable->tupdesc, col));
}

char *sp_datum_bytes(Datum d, size_t *len)
{
	struct varlena *v = pg_detoast_datum_packed((struct varlena *)DatumGetPointer(d));
	size_t n = VARSIZE_ANY_EXHDR(v);
	char *out = palloc(n + 1);
	memcpy(out, VARDATA_ANY(v), n);
	out[n] = '\0';
	*len = n;
	return out;
}

char *sp_bytes(uint64 i, int col, size_t *len)
{
	bool isnull;
	Datum d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, col, &isnull);
	*len = 0;
	return isnull ? NULL : sp_datum_bytes(d, len);
}

Datum sp_text_datum(const char *s, size_t len)
{
	return PointerGetDatum(cstring_to_text_with_len(s, (int)len));
}

Datum sp_uuid_datum(const char *uuid)
{
	pg_uuid_t *u = palloc(sizeof *u);
	/* The request's ids are canonical (the parser checked them). */
	if (!sy_uuid_octets(uuid, strlen(uuid), u->data))
		elog(ERROR, "synchro_push: a request id is not a canonical UUID");
	return UUIDPGetDatum(u);
}

Datum sp_bytea_datum(const void *p, size_t len)
{
	bytea *b = palloc(VARHDRSZ + len);
	SET_VARSIZE(b, VARHDRSZ + len);
	memcpy(VARDATA(b), p, len);
	return PointerGetDatum(b);
}
