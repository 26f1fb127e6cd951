/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * scope_trigger.c: the scope trigger (migrations 22 and 23), synchro.scope_trigger.
 *
 * Layer: top of src/pg (doc/hacking.md).
 * Rules: doc/protocol.md#membership-scopes (the members policy and its mirror),
 * doc/operations.md#forged-messages (which changes walsync believes).
 * Notes: It runs AFTER INSERT OR UPDATE OR DELETE, FOR EACH ROW. It sits on every
 * membership relation and every hop relation of a two-hop path that a published manifest
 * names (synchro.install_scope_trigger). Its arguments come in fours, one group per scope
 * or link the relation serves. A scope gives 'member', the scope (relation(match,user) as
 * the manifest writes it), the match column and the user column. A link gives 'link', the
 * link (relation.key->column), the key column and the column the hop reads.
 *
 * Each group's change is one row of synchro.scope_changes (migration 23), in the order of
 * the row writes. So walsync keeps its mirror of memberships and links in commit order.
 * The table is in the publication and only synchro_owner writes it. So walsync believes a
 * change only when it comes as such a row: a message anyone can emit proves nothing. The
 * row is the change itself, not a voucher for a message, so there is nothing to pair.
 *
 * The row is written through the table access method, with no statement: memberships
 * change rarely, but a statement's start-up would still be most of the cost. It is deleted
 * right after, in the same transaction. The stream keeps the insert and the table keeps
 * nothing (REPLICA IDENTITY NOTHING keeps the delete out of the stream). The row holds six
 * values: kind, scope, key_before, value_before (user or to), key_after, value_after.
 *
 * Before migration 23 (no such table) each change is one transactional logical message,
 * with the fence's prefix 'synchro':
 *   {"kind": "member", "scope": S, "key_before", "user_before", "key_after", "user_after"}
 *   {"kind": "link", "scope": L, "key_before", "to_before", "key_after", "to_after"}
 *
 * The values are text, from their type's output function. A value is null when the column
 * is null, or when there is no old or new row. An update that changes neither column
 * writes nothing. The message is jsonb's text, as the fence's is: shorter keys first, then
 * by octets.
 *
 * The function is SECURITY DEFINER, as the version fence is: it runs as synchro_owner. It
 * reads only the row the trigger hands it, and runs no statement.
 */
#include "postgres.h"

#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "commands/trigger.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "replication/message.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#define SQLSTATE_SY010 MAKE_SQLSTATE('S', 'Y', '0', '1', '0')

/* One column a group reads: its number in the relation and its output function. */
typedef struct {
	AttrNumber att;
	FmgrInfo out;
} scope_col;

/* What a trigger's call keeps across the rows of one statement (fn_extra). */
typedef struct {
	Oid tgoid;
	Oid relid;
	TupleDesc desc;
	int groups;
	scope_col *cols; /* two per group */
	Oid changes;     /* synchro.scope_changes; InvalidOid before migration 23 */
} scope_cache;

static void col_init(scope_col *c, TupleDesc desc, const char *name, Relation rel,
                     MemoryContext cxt)
{
	c->att = 0;
	for (int i = 0; i < desc->natts; i++) {
		Form_pg_attribute a = TupleDescAttr(desc, i);
		if (!a->attisdropped && strcmp(NameStr(a->attname), name) == 0) {
			Oid fn;
			bool varlena;
			c->att = a->attnum;
			getTypeOutputInfo(a->atttypid, &fn, &varlena);
			fmgr_info_cxt(fn, &c->out, cxt);
			return;
		}
	}
	/* A renamed or dropped column would stop the mirror: the write waits for a publish. */
	ereport(ERROR, (errcode(SQLSTATE_SY010),
	                errmsg_internal("synchro: %s.%s has no column %s (a membership scope's)",
	                                get_namespace_name(RelationGetNamespace(rel)),
	                                RelationGetRelationName(rel), name),
	                errhint("%s", "Publish a schema manifest that matches the relation.")));
}

static scope_cache *cache_for(FunctionCallInfo fcinfo, TriggerData *td)
{
	Relation rel = td->tg_relation;
	Trigger *tg = td->tg_trigger;
	scope_cache *sc = fcinfo->flinfo->fn_extra;
	if (sc != NULL && sc->tgoid == tg->tgoid && sc->relid == RelationGetRelid(rel) &&
	    sc->desc == RelationGetDescr(rel))
		return sc;
	MemoryContext cxt = fcinfo->flinfo->fn_mcxt;
	if (sc == NULL)
		sc = MemoryContextAllocZero(cxt, sizeof *sc);
	else if (sc->cols != NULL)
		pfree(sc->cols);
	sc->tgoid = InvalidOid; /* until complete */
	sc->groups = tg->tgnargs / 4;
	sc->cols = MemoryContextAllocZero(cxt, sizeof *sc->cols * (size_t)(2 * sc->groups));
	fcinfo->flinfo->fn_extra = sc;
	for (int g = 0; g < sc->groups; g++) {
		col_init(&sc->cols[2 * g], RelationGetDescr(rel), tg->tgargs[4 * g + 2], rel, cxt);
		col_init(&sc->cols[2 * g + 1], RelationGetDescr(rel), tg->tgargs[4 * g + 3], rel,
		         cxt);
	}
	/* Looked up once per statement: migration 23 locks the relations with a scope trigger
	 * while it creates the table, so no statement straddles it. */
	sc->changes = get_relname_relid("scope_changes", get_namespace_oid("synchro", true));
	sc->relid = RelationGetRelid(rel);
	sc->desc = RelationGetDescr(rel);
	sc->tgoid = tg->tgoid;
	return sc;
}

/* The column's value in slot as text (its type's output function); NULL for SQL null. */
static char *col_text(scope_col *c, TupleTableSlot *slot)
{
	bool isnull;
	if (slot == NULL)
		return NULL;
	Datum d = slot_getattr(slot, c->att, &isnull);
	return isnull ? NULL : OutputFunctionCall(&c->out, d);
}

static bool same(const char *a, const char *b)
{
	return (a == NULL) == (b == NULL) && (a == NULL || strcmp(a, b) == 0);
}

static void put_text(JsonbParseState **st, const char *key, const char *value)
{
	JsonbValue k, v;
	k.type = jbvString;
	k.val.string.len = (int)strlen(key);
	k.val.string.val = (char *)key;
	(void)pushJsonbValue(st, WJB_KEY, &k);
	if (value == NULL) {
		v.type = jbvNull;
	} else {
		v.type = jbvString;
		v.val.string.len = (int)strlen(value);
		v.val.string.val = (char *)value;
	}
	(void)pushJsonbValue(st, WJB_VALUE, &v);
}

/* One change as a row of synchro.scope_changes (kind, scope, key_before, value_before,
 * key_after, value_after), written and deleted again: only its insert's WAL is wanted. */
static void write_change(Oid changes, const char *const vals[6])
{
	Relation rel = table_open(changes, RowExclusiveLock);
	TupleDesc desc = RelationGetDescr(rel);
	if (desc->natts != 6)
		ereport(ERROR,
		        (errcode(SQLSTATE_SY010),
		         errmsg_internal("synchro: synchro.scope_changes is not as migration "
		                         "23 made it")));
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	ExecClearTuple(slot);
	for (int i = 0; i < 6; i++) {
		slot->tts_isnull[i] = vals[i] == NULL;
		slot->tts_values[i] = vals[i] ? CStringGetTextDatum(vals[i]) : (Datum)0;
	}
	ExecStoreVirtualTuple(slot);
	simple_table_tuple_insert(rel, slot);
	ItemPointerData tid = slot->tts_tid;
	/* The delete must see the insert. */
	CommandCounterIncrement();
	simple_table_tuple_delete(rel, &tid,
	                          ActiveSnapshotSet() ? GetActiveSnapshot() : InvalidSnapshot);
	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, NoLock);
}

PG_FUNCTION_INFO_V1(synchro_scope_trigger);

/* AFTER INSERT OR UPDATE OR DELETE ON a membership or hop relation, each row. */
Datum synchro_scope_trigger(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
		                errmsg("trigger functions can only be called as triggers")));
	TriggerData *td = (TriggerData *)fcinfo->context;
	Trigger *tg = td->tg_trigger;
	bool args_ok = tg->tgnargs > 0 && tg->tgnargs % 4 == 0;
	for (int i = 0; args_ok && i < tg->tgnargs; i++)
		args_ok = tg->tgargs[i][0] != '\0' &&
		          (i % 4 != 0 || strcmp(tg->tgargs[i], "member") == 0 ||
		           strcmp(tg->tgargs[i], "link") == 0);
	if (!TRIGGER_FIRED_AFTER(td->tg_event) || !TRIGGER_FIRED_FOR_ROW(td->tg_event) || !args_ok)
		ereport(ERROR, (errcode(SQLSTATE_SY010),
		                errmsg_internal("synchro: scope_trigger must be installed by "
		                                "synchro.install_scope_trigger")));
	bool is_insert = TRIGGER_FIRED_BY_INSERT(td->tg_event);
	bool is_delete = TRIGGER_FIRED_BY_DELETE(td->tg_event);
	TupleTableSlot *old = is_insert ? NULL : td->tg_trigslot;
	TupleTableSlot *new = is_delete ? NULL : (is_insert ? td->tg_trigslot : td->tg_newslot);
	scope_cache *sc = cache_for(fcinfo, td);

	for (int g = 0; g < sc->groups; g++) {
		bool member = strcmp(tg->tgargs[4 * g], "member") == 0;
		const char *scope = tg->tgargs[4 * g + 1];
		char *key_before = col_text(&sc->cols[2 * g], old);
		char *val_before = col_text(&sc->cols[2 * g + 1], old);
		char *key_after = col_text(&sc->cols[2 * g], new);
		char *val_after = col_text(&sc->cols[2 * g + 1], new);
		if (old != NULL && new != NULL && same(key_before, key_after) &&
		    same(val_before, val_after))
			continue;
		if (OidIsValid(sc->changes)) {
			const char *vals[6] = {member ? "member" : "link",
			                       scope,
			                       key_before,
			                       val_before,
			                       key_after,
			                       val_after};
			write_change(sc->changes, vals);
			continue;
		}
		JsonbParseState *st = NULL;
		(void)pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
		put_text(&st, "kind", member ? "member" : "link");
		put_text(&st, "scope", scope);
		put_text(&st, "key_before", key_before);
		put_text(&st, member ? "user_before" : "to_before", val_before);
		put_text(&st, "key_after", key_after);
		put_text(&st, member ? "user_after" : "to_after", val_after);
		Jsonb *msg = JsonbValueToJsonb(pushJsonbValue(&st, WJB_END_OBJECT, NULL));
		char *text = JsonbToCString(NULL, &msg->root, VARSIZE(msg));
		(void)LogLogicalMessage("synchro", text, strlen(text), true);
		pfree(text);
		pfree(msg);
	}
	return PointerGetDatum(NULL);
}
