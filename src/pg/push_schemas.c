/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_schemas.c: published schema manifests, kept per backend once read, and the SQL of
 * each synced table when a manifest serves as the current schema.
 *
 * Layer: middle of src/pg (doc/hacking.md).
 * Rules: doc/contract.md#schema-versions (versions are kept forever and never change).
 * Notes: Identifiers come from the manifest and are quoted. Values are always parameters:
 * text, cast to the column's portable type.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "push_module.h"
#include "synchro/alloc.h"
#include "synchro/pgtypes.h"

static sp_schema *schemas;

static const char manifest_sql[] =
        "SELECT v.hash, v.manifest FROM synchro.schema_versions v WHERE v.version = $1";

sp_schema *sp_schema_get(int64 version)
{
	for (sp_schema *s = schemas; s != NULL; s = s->next)
		if (s->version == version)
			return s;
	static const Oid types[] = {INT8OID};
	Datum v[] = {Int64GetDatum(version)};
	sp_run(sp_plan(manifest_sql, 1, types), v, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		return NULL;
	size_t len;
	char *hash = sp_text(0, 1);
	char *text = sp_bytes(0, 2, &len);
	MemoryContext cache = sp_cache_context(), call = sp_core_context();
	sy_error e = {0};
	/* The manifest outlives the call: parsed into the cache context. */
	sp_core_memory(cache);
	sy_manifest *m = sy_manifest_parse(text, len, &e);
	sp_core_memory(call);
	if (m == NULL) {
		if (e.code == SY_ERR_NOMEM)
			sp_nomem("schema manifest");
		sp_fail("a published schema manifest does not parse");
	}
	sp_schema *s = MemoryContextAllocZero(cache, sizeof *s);
	s->version = version;
	strlcpy(s->hash, hash, sizeof s->hash);
	s->m = m;
	s->next = schemas;
	schemas = s;
	return s;
}

/* "schema.name" or "name" (then in public, as schema publish resolved it), quoted. */
static char *quote_relation(const char *relation)
{
	const char *dot = strchr(relation, '.');
	if (dot == NULL)
		return psprintf("public.%s", quote_identifier(relation));
	char *schema = pnstrdup(relation, (Size)(dot - relation));
	return psprintf("%s.%s", quote_identifier(schema), quote_identifier(dot + 1));
}

/*
 * The live membership rows of the scope key a hop-1 value ($1, cast to its field's type)
 * reaches that name the user ($2), locked FOR KEY SHARE: one hop reads the membership
 * relation by the value itself; two hops go through the hop-1 relation's row, locked too.
 */
static char *member_sql(const sy_members *mp)
{
	StringInfoData b;
	const char *type = sy_type_pg_name(mp->field->type);
	initStringInfo(&b);
	if (mp->hop_count == 1) {
		appendStringInfo(&b, "SELECT 1 FROM %s m WHERE m.%s = $1::%s",
		                 quote_relation(mp->relation), quote_identifier(mp->match), type);
		appendStringInfo(&b, " AND m.%s = $2 FOR KEY SHARE OF m",
		                 quote_identifier(mp->user));
		return b.data;
	}
	appendStringInfo(&b, "SELECT 1 FROM %s h JOIN %s m ON m.%s = h.%s",
	                 quote_relation(mp->hops[0].relation), quote_relation(mp->relation),
	                 quote_identifier(mp->match), quote_identifier(mp->hops[1].column));
	appendStringInfo(&b, " WHERE h.%s = $1::%s AND m.%s = $2 FOR KEY SHARE OF h, m",
	                 quote_identifier(mp->hops[0].key), type, quote_identifier(mp->user));
	return b.data;
}

static void build_table(sp_table *x, const sy_table *t)
{
	StringInfoData b;
	x->t = t;
	x->owner = -1;
	x->scope = -1;
	x->rel = quote_relation(t->relation);
	x->pk = pstrdup(quote_identifier(t->pk.column));
	x->pk_type = sy_type_pg_name(t->pk.type);
	x->cols = palloc0(sizeof *x->cols * (t->field_count + 1));
	for (size_t j = 0; j < t->field_count; j++) {
		x->cols[j] = pstrdup(quote_identifier(t->fields[j].column));
		if (t->owner_field != NULL && strcmp(t->owner_field, t->fields[j].field_id) == 0)
			x->owner = (int)j;
		if (t->members != NULL && t->members->field == &t->fields[j])
			x->scope = (int)j;
	}
	if (t->members != NULL)
		x->member_sql = member_sql(t->members);

	initStringInfo(&b);
	appendStringInfo(&b, "SELECT r.%s", x->pk);
	for (size_t j = 0; j < t->field_count; j++)
		appendStringInfo(&b, ", r.%s", x->cols[j]);
	appendStringInfo(&b, " FROM %s r WHERE r.%s = $1::%s FOR UPDATE OF r", x->rel, x->pk,
	                 x->pk_type);
	x->lock_sql = b.data;

	initStringInfo(&b);
	appendStringInfo(&b, "SELECT r.%s", x->pk);
	for (size_t j = 0; j < t->field_count; j++)
		appendStringInfo(&b, ", r.%s", x->cols[j]);
	appendStringInfo(&b, " FROM %s r WHERE r.%s = $1::%s", x->rel, x->pk, x->pk_type);
	x->read_sql = b.data;

	initStringInfo(&b);
	if (t->delete_mode == SY_DELETE_SOFT)
		/* doc/contract.md#row-states: a soft delete leaves the source tombstone (its
		 * deleted column set). */
		appendStringInfo(&b, "UPDATE %s SET %s = pg_catalog.now() WHERE %s = $1::%s",
		                 x->rel, quote_identifier(t->delete_column), x->pk, x->pk_type);
	else
		appendStringInfo(&b, "DELETE FROM %s WHERE %s = $1::%s", x->rel, x->pk, x->pk_type);
	x->delete_sql = b.data;
	x->reader = sp_row_reader_new();
}

const sp_table *sp_schema_table(sp_schema *s, const sy_table *t)
{
	if (s->tables == NULL) {
		MemoryContext old = MemoryContextSwitchTo(sp_cache_context());
		sp_table *tables = palloc0(sizeof *tables * (s->m->table_count + 1));
		for (size_t i = 0; i < s->m->table_count; i++)
			build_table(&tables[i], &s->m->tables[i]);
		MemoryContextSwitchTo(old);
		s->tables = tables;
	}
	return &s->tables[t - s->m->tables];
}
