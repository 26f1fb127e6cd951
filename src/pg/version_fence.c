/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * version_fence.c: the version fence of every synced table, in C (migration 20). It is the
 * trigger function synchro.version_fence(table_id, pk column, soft-delete column, owner
 * column[, scope column]).
 *
 * Layer: top of src/pg (doc/hacking.md).
 * Rules: doc/contract.md#compare-and-swap (versions and fences),
 * doc/contract.md#operation-and-row-state-matrix (no cell resurrects a row).
 * Notes: Migration 2 made the function in plpgsql, and migrations 4 and 16 refined it.
 * This one keeps the same rules. It keeps the same refusals (message, DETAIL, HINT,
 * SQLSTATE), in the same order. It keeps the same effects byte for byte: the same upsert of
 * synchro.row_fences, and the same transactional logical message 'synchro' (the text of the
 * same jsonb). The upsert's row is written through the table and index access methods, as
 * the executor runs INSERT ... ON CONFLICT DO UPDATE: the same locks, waits, WAL and
 * refusals. But it skips a statement's start-up, which was most of a synced write's cost.
 * When the fence table is not as the migrations left it, the statement itself runs
 * (fence_store.c).
 *
 * The plpgsql function turned both whole rows into jsonb and read its columns back with
 * ->>. Here only the columns the fence names are converted. Each goes through PostgreSQL's
 * own to_jsonb and jsonb's own text. So every type, domain and setting gives the text ->>
 * gave, under the search_path the plpgsql function pinned, which a regclass's text shows.
 * Key and owner values of some types skip this: text, varchar, uuid and integers, whose
 * conversion is the type's output function itself. One difference remains by design. A row
 * whose other columns cannot become jsonb is no longer refused for them: a cast to json
 * that fails, or a row over jsonb's size limit.
 *
 * The function is SECURITY DEFINER: it runs as synchro_owner, which alone writes the
 * fences. But it pins no search_path, which would cost a GUC save and restore per row
 * (migration 17 does the same). Its one statement names every schema, function and
 * operator. Only the to_jsonb of a value of another type than those above runs under the
 * pinned path.
 *
 * The fifth argument (migration 22) is the hop column of a table that members read or
 * write. Its values before and after, as text, become two more members of the message,
 * scope_before and scope_after, in the same key order. Without it, the message is as
 * before, byte for byte.
 *
 * The file also holds the fence table's row rules (migration 21). synchro.row_fence_rules,
 * the one CHECK of synchro.row_fences, holds exactly the rules of the two CHECKs it
 * replaced. Its refusal names the broken one (SQLSTATE 23514), as the ledger's do
 * (ledger_guards.c). PostgreSQL reads every CHECK's expression back from its text at each
 * execution of the fence's upsert.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "nodes/makefuncs.h"
#include "replication/message.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/uuid.h"

#include "push_module.h"

#define SQLSTATE_SY001 MAKE_SQLSTATE('S', 'Y', '0', '0', '1')
#define SQLSTATE_SY006 MAKE_SQLSTATE('S', 'Y', '0', '0', '6')
#define SQLSTATE_SY010 MAKE_SQLSTATE('S', 'Y', '0', '1', '0')

/* How one named column's value becomes the text to_jsonb(row) ->> column gave. */
typedef struct {
	AttrNumber att; /* 0: the row has no such column */
	Oid type;
	bool direct;   /* the type's output function is its jsonb text (see col_text) */
	FmgrInfo out;  /* direct: the output function */
	FmgrInfo json; /* otherwise: to_jsonb, its argument typed by fn_expr */
} fence_col;

/* What a trigger's call keeps across the rows of one statement (fn_extra): the columns of
 * its arguments in the relation the statement writes, which no DDL can change meanwhile. */
typedef struct {
	Oid tgoid;
	Oid relid;
	TupleDesc desc;
	fence_col pk, soft, owner, scope;
	sp_fence_store store;
} fence_cache;

/* A members table's scope values for the message (named: the fence has a fifth argument). */
typedef struct {
	bool named;
	const char *before, *after;
} fence_scope;

static void col_init(fence_col *c, TupleDesc desc, const char *name, MemoryContext cxt)
{
	memset(c, 0, sizeof *c);
	/* to_jsonb(row)'s keys: the names of the columns not dropped. */
	for (int i = 0; i < desc->natts; i++) {
		Form_pg_attribute a = TupleDescAttr(desc, i);
		if (!a->attisdropped && strcmp(NameStr(a->attname), name) == 0) {
			c->att = a->attnum;
			c->type = a->atttypid;
			break;
		}
	}
	if (c->att == 0)
		return;
	Form_pg_attribute a = TupleDescAttr(desc, c->att - 1);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	Const *arg = makeConst(a->atttypid, a->atttypmod, a->attcollation, a->attlen, (Datum)0,
	                       true, a->attbyval);
	FuncExpr *call = makeFuncExpr(F_TO_JSONB, JSONBOID, list_make1(arg), InvalidOid, InvalidOid,
	                              COERCE_EXPLICIT_CALL);
	MemoryContextSwitchTo(old);
	fmgr_info_cxt(F_TO_JSONB, &c->json, cxt);
	c->json.fn_expr = (Node *)call;
	switch (c->type) {
	/* to_jsonb makes a string of the output of these (->> gives it back as is) or a
	 * number of an integer's output (numeric_out prints the same digits again) */
	case TEXTOID:
	case VARCHAROID:
	case UUIDOID:
	case INT2OID:
	case INT4OID:
	case INT8OID: {
		Oid fn;
		bool varlena;
		getTypeOutputInfo(c->type, &fn, &varlena);
		fmgr_info_cxt(fn, &c->out, cxt);
		c->direct = true;
		break;
	}
	default: break;
	}
}

static fence_cache *cache_for(FunctionCallInfo fcinfo, TriggerData *td)
{
	Relation rel = td->tg_relation;
	fence_cache *fc = fcinfo->flinfo->fn_extra;
	if (fc != NULL && fc->tgoid == td->tg_trigger->tgoid &&
	    fc->relid == RelationGetRelid(rel) && fc->desc == RelationGetDescr(rel))
		return fc;
	MemoryContext cxt = fcinfo->flinfo->fn_mcxt;
	if (fc == NULL)
		fc = MemoryContextAlloc(cxt, sizeof *fc);
	char **args = td->tg_trigger->tgargs;
	fc->tgoid = td->tg_trigger->tgoid;
	fc->relid = RelationGetRelid(rel);
	fc->desc = RelationGetDescr(rel);
	col_init(&fc->pk, fc->desc, args[1], cxt);
	col_init(&fc->soft, fc->desc, args[2], cxt);
	col_init(&fc->owner, fc->desc, args[3], cxt);
	col_init(&fc->scope, fc->desc, td->tg_trigger->tgnargs > 4 ? args[4] : "", cxt);
	memset(&fc->store, 0, sizeof fc->store);
	fcinfo->flinfo->fn_extra = fc;
	return fc;
}

/* to_jsonb of the value under the search_path the plpgsql function pinned: an output function
 * may print what that path shows (a regclass names its schema unless the path sees it). */
static Jsonb *col_jsonb(fence_col *c, Datum d)
{
	int level = NewGUCNestLevel();
	(void)set_config_option("search_path", "pg_catalog, synchro, pg_temp", PGC_USERSET,
	                        PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	Jsonb *jb = DatumGetJsonbP(FunctionCall1(&c->json, d));
	AtEOXact_GUC(true, level);
	return jb;
}

/* The text of a jsonb value as ->> gives it from an object: NULL for null, a string's
 * characters, a number's numeric_out, true or false, an array's or object's jsonb text. */
static char *jsonb_text(Jsonb *jb)
{
	if (JB_ROOT_IS_SCALAR(jb)) {
		JsonbValue v;
		if (!JsonbExtractScalar(&jb->root, &v))
			elog(ERROR, "synchro: a scalar jsonb holds no scalar");
		switch (v.type) {
		case jbvNull: return NULL;
		case jbvBool: return pstrdup(v.val.boolean ? "true" : "false");
		case jbvString: return pnstrdup(v.val.string.val, v.val.string.len);
		case jbvNumeric:
			return DatumGetCString(
			        DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric)));
		default: elog(ERROR, "synchro: unexpected jsonb scalar type %d", (int)v.type);
		}
	}
	return JsonbToCString(NULL, &jb->root, VARSIZE(jb));
}

/* to_jsonb(row) ->> column for the column's value in slot (NULL for SQL or JSON null). */
static char *col_text(fence_col *c, TupleTableSlot *slot)
{
	bool isnull;
	Datum d = slot_getattr(slot, c->att, &isnull);
	if (isnull)
		return NULL;
	if (c->direct) {
		char *s = OutputFunctionCall(&c->out, d);
		/* to_jsonb refuses a string jsonb cannot hold: let it say so */
		if (strlen(s) <= JENTRY_OFFLENMASK)
			return s;
		pfree(s);
	}
	return jsonb_text(col_jsonb(c, d));
}

/* jsonb_typeof(to_jsonb(row) -> column) <> 'null' for the column's value in slot. */
static bool col_not_null(fence_col *c, TupleTableSlot *slot)
{
	bool isnull;
	Datum d = slot_getattr(slot, c->att, &isnull);
	if (isnull)
		return false;
	/* the type the publish requires (a string), and text, numbers, uuids: never null */
	if (c->type == TIMESTAMPTZOID || c->direct)
		return true;
	JsonbValue v;
	Jsonb *jb = col_jsonb(c, d);
	return !(JB_ROOT_IS_SCALAR(jb) && JsonbExtractScalar(&jb->root, &v) && v.type == jbvNull);
}

/* current_setting(name, true) */
static const char *setting(const char *name)
{
	return GetConfigOptionByName(name, NULL, true);
}

/* nullif(current_setting(name, true), '')::uuid, and whether it is NULL. */
static Datum setting_uuid(const char *name, bool *isnull)
{
	const char *s = setting(name);
	*isnull = s == NULL || s[0] == '\0';
	return *isnull ? (Datum)0 : DirectFunctionCall1(uuid_in, CStringGetDatum(s));
}

static void put_key(JsonbParseState **st, const char *key)
{
	JsonbValue k;
	k.type = jbvString;
	k.val.string.len = (int)strlen(key);
	k.val.string.val = (char *)key;
	(void)pushJsonbValue(st, WJB_KEY, &k);
}

static void put_text(JsonbParseState **st, const char *key, const char *value)
{
	JsonbValue v;
	put_key(st, key);
	if (value == NULL) {
		v.type = jbvNull;
	} else {
		v.type = jbvString;
		v.val.string.len = (int)strlen(value);
		v.val.string.val = (char *)value;
	}
	(void)pushJsonbValue(st, WJB_VALUE, &v);
}

static void put_uuid(JsonbParseState **st, const char *key, Datum u, bool isnull)
{
	put_text(st, key, isnull ? NULL : DatumGetCString(DirectFunctionCall1(uuid_out, u)));
}

/* TG_TABLE_SCHEMA, for the refusals (TG_TABLE_NAME is RelationGetRelationName) */
static const char *tg_schema(Relation rel)
{
	return get_namespace_name(RelationGetNamespace(rel));
}

static const char upsert_sql[] =
        "INSERT INTO synchro.row_fences AS f"
        " (table_id, pk, state, version, mutation_id, client_id, user_id, source_xid,"
        "  source_lsn, updated_at)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, pg_catalog.pg_current_xact_id(), NULL,"
        "  pg_catalog.now())"
        " ON CONFLICT (table_id, pk) DO UPDATE SET"
        " state = EXCLUDED.state,"
        " version = EXCLUDED.version,"
        " mutation_id = EXCLUDED.mutation_id,"
        " client_id = EXCLUDED.client_id,"
        " user_id = EXCLUDED.user_id,"
        " source_xid = EXCLUDED.source_xid,"
        " source_lsn = NULL,"
        " updated_at = EXCLUDED.updated_at"
        " WHERE NOT ($8 AND f.state OPERATOR(pg_catalog.=) 'deleted'::pg_catalog.text)";

/* Random octets for a version, drawn from pg_strong_random 1 KB at a time (one call per
 * version cost a one-statement write about 3% in OpenSSL's locking); each octet is handed
 * out once. The postmaster never draws, so no two processes hold the same octets. */
static uint8 random_pool[1024];
static size_t random_used = sizeof random_pool;

static void strong_random_octets(uint8 *out)
{
	if (random_used + UUID_LEN > sizeof random_pool) {
		if (!pg_strong_random(random_pool, sizeof random_pool))
			ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
			                errmsg("could not generate random values")));
		random_used = 0;
	}
	memcpy(out, random_pool + random_used, UUID_LEN);
	memset(random_pool + random_used, 0, UUID_LEN);
	random_used += UUID_LEN;
}

static void message_field(StringInfo b, const char *key, const char *value)
{
	if (b->len > 1)
		appendBinaryStringInfo(b, ", ", 2);
	escape_json(b, key);
	appendBinaryStringInfo(b, ": ", 2);
	if (value == NULL)
		appendBinaryStringInfo(b, "null", 4);
	else
		escape_json(b, value);
}

/*
 * The text message_jsonb gives, printed without building the jsonb (whose key sort and
 * printing were about a tenth of a one-statement write): its key order (shorter keys
 * first, then by octets), its ", " and ": ", escape_json's strings. NULL when the values
 * are long enough that jsonb's size limits could refuse them: message_jsonb says so.
 */
static char *message_text(const char *table_id, const char *pk, const char *version,
                          const char *state, Datum mutation, bool no_mutation, Datum client,
                          bool no_client, const char *user, const char *owner_before,
                          const char *owner_after, const fence_scope *scope)
{
	const char *vals[] = {table_id,      pk,          user, owner_before, owner_after,
	                      scope->before, scope->after};
	size_t total = 0;
	for (size_t i = 0; i < lengthof(vals); i++)
		total += vals[i] != NULL ? strlen(vals[i]) : 0;
	if (total > 1024 * 1024)
		return NULL;
	StringInfoData b;
	initStringInfo(&b);
	appendStringInfoChar(&b, '{');
	message_field(&b, "pk", pk);
	message_field(&b, "state", state);
	message_field(&b, "user_id", user);
	message_field(&b, "version", version);
	message_field(&b, "table_id", table_id);
	message_field(&b, "client_id",
	              no_client ? NULL : DatumGetCString(DirectFunctionCall1(uuid_out, client)));
	message_field(&b, "mutation_id",
	              no_mutation ? NULL
	                          : DatumGetCString(DirectFunctionCall1(uuid_out, mutation)));
	message_field(&b, "owner_after", owner_after);
	if (scope->named)
		message_field(&b, "scope_after", scope->after);
	message_field(&b, "owner_before", owner_before);
	if (scope->named)
		message_field(&b, "scope_before", scope->before);
	appendStringInfoChar(&b, '}');
	return b.data;
}

static char *message_jsonb(const char *table_id, const char *pk, const char *version,
                           const char *state, Datum mutation, bool no_mutation, Datum client,
                           bool no_client, const char *user, const char *owner_before,
                           const char *owner_after, const fence_scope *scope);

PG_FUNCTION_INFO_V1(synchro_version_fence);

/* AFTER INSERT OR UPDATE OR DELETE ON a synced table, each row (install_fence_trigger). */
Datum synchro_version_fence(PG_FUNCTION_ARGS)
{
	static const Oid types[] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID,
	                            UUIDOID, UUIDOID, TEXTOID, BOOLOID};
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
		                errmsg("trigger functions can only be called as triggers")));
	TriggerData *td = (TriggerData *)fcinfo->context;
	Trigger *tg = td->tg_trigger;
	if (!TRIGGER_FIRED_AFTER(td->tg_event) || !TRIGGER_FIRED_FOR_ROW(td->tg_event) ||
	    (tg->tgnargs != 4 && tg->tgnargs != 5) || tg->tgargs[0][0] == '\0' ||
	    tg->tgargs[1][0] == '\0')
		ereport(ERROR, (errcode(SQLSTATE_SY010),
		                errmsg_internal("synchro: version_fence must be installed by "
		                                "synchro.install_fence_trigger")));

	const char *table_id = tg->tgargs[0];
	const char *soft_col = tg->tgargs[2], *owner_col = tg->tgargs[3];
	Relation rel = td->tg_relation;
	bool is_insert = TRIGGER_FIRED_BY_INSERT(td->tg_event);
	bool is_delete = TRIGGER_FIRED_BY_DELETE(td->tg_event);
	/* OLD and NEW as plpgsql names them */
	TupleTableSlot *old = is_insert ? NULL : td->tg_trigslot;
	TupleTableSlot *new = is_delete ? NULL : (is_insert ? td->tg_trigslot : td->tg_newslot);
	fence_cache *fc = cache_for(fcinfo, td);

	if (fc->pk.att == 0)
		ereport(ERROR, (errcode(SQLSTATE_SY010),
		                errmsg_internal("synchro: %s.%s has no column %s", tg_schema(rel),
		                                RelationGetRelationName(rel), tg->tgargs[1])));
	const char *pk;
	const char *state = "live";
	if (is_delete) {
		pk = col_text(&fc->pk, old);
		state = "deleted";
	} else {
		pk = col_text(&fc->pk, new);
		if (!is_insert) {
			const char *old_pk = col_text(&fc->pk, old);
			if ((old_pk == NULL) != (pk == NULL) ||
			    (pk != NULL && strcmp(old_pk, pk) != 0))
				ereport(ERROR,
				        (errcode(SQLSTATE_SY001),
				         errmsg_internal("synchro: the primary key of a row of "
				                         "synced table \"%s\" cannot change",
				                         table_id),
				         errdetail_internal("%s.%s: %s -> %s", tg_schema(rel),
				                            RelationGetRelationName(rel),
				                            old_pk ? old_pk : "", pk ? pk : ""),
				         errhint("%s", "Delete the row and insert a new one.")));
		}
		if (soft_col[0] != '\0') {
			if (fc->soft.att == 0)
				ereport(ERROR,
				        (errcode(SQLSTATE_SY010),
				         errmsg_internal("synchro: %s.%s has no column %s",
				                         tg_schema(rel),
				                         RelationGetRelationName(rel), soft_col)));
			if (col_not_null(&fc->soft, new))
				state = "deleted";
		}
	}
	const char *owner_before = NULL, *owner_after = NULL;
	if (owner_col[0] != '\0') {
		/* A renamed or dropped owner column would give the change no owner, and pull would
		 * never deliver it to anyone: the write waits for the publish that names it. */
		if (fc->owner.att == 0)
			ereport(ERROR,
			        (errcode(SQLSTATE_SY010),
			         errmsg_internal("synchro: %s.%s has no column %s (the "
			                         "owner of synced table \"%s\")",
			                         tg_schema(rel), RelationGetRelationName(rel),
			                         owner_col, table_id),
			         errhint("%s", "Publish the schema manifest that names the "
			                       "owner column.")));
		if (old != NULL)
			owner_before = col_text(&fc->owner, old);
		if (new != NULL)
			owner_after = col_text(&fc->owner, new);
	}

	/* The hop column of a table read by members (migration 22): the row's scope before and
	 * after, which tell walsync whose reads the change leaves and enters. */
	fence_scope scope = {.named = tg->tgnargs > 4 && tg->tgargs[4][0] != '\0'};
	if (scope.named) {
		if (fc->scope.att == 0)
			ereport(ERROR,
			        (errcode(SQLSTATE_SY010),
			         errmsg_internal("synchro: %s.%s has no column %s (the "
			                         "scope of synced table \"%s\")",
			                         tg_schema(rel), RelationGetRelationName(rel),
			                         tg->tgargs[4], table_id),
			         errhint("%s", "Publish the schema manifest that names the "
			                       "scope column.")));
		if (old != NULL)
			scope.before = col_text(&fc->scope, old);
		if (new != NULL)
			scope.after = col_text(&fc->scope, new);
	}

	/* Random, never derived from time or a sequence (doc/contract.md#server-versions): 32
	 * lowercase hex, the digits of a version 4 UUID as replace(gen_random_uuid()::text, '-',
	 * '') gave them. */
	uint8 r[UUID_LEN];
	char version[2 * UUID_LEN + 1];
	strong_random_octets(r);
	r[6] = (uint8)((r[6] & 0x0f) | 0x40);
	r[8] = (uint8)((r[8] & 0x3f) | 0x80);
	for (int i = 0; i < UUID_LEN; i++) {
		version[2 * i] = "0123456789abcdef"[r[i] >> 4];
		version[2 * i + 1] = "0123456789abcdef"[r[i] & 0xf];
	}
	version[2 * UUID_LEN] = '\0';

	bool no_mutation, no_client;
	Datum mutation = setting_uuid("synchro.mutation_id", &no_mutation);
	Datum client = setting_uuid("synchro.client_id", &no_client);
	const char *user = setting("synchro.user_id");
	if (user != NULL && user[0] == '\0')
		user = NULL;
	const char *nr = setting("synchro.no_resurrection");
	bool push_insert = is_insert && nr != NULL && strcmp(nr, "on") == 0;

	/* A refused update still locks the conflicting fence: the refusal holds until the
	 * transaction ends. */
	Datum v[8] = {
	        CStringGetTextDatum(table_id),
	        pk != NULL ? CStringGetTextDatum(pk) : (Datum)0,
	        CStringGetTextDatum(state),
	        CStringGetTextDatum(version),
	        mutation,
	        client,
	        user != NULL ? CStringGetTextDatum(user) : (Datum)0,
	        BoolGetDatum(push_insert),
	};
	char nulls[9] = "        ";
	nulls[1] = pk == NULL ? 'n' : ' ';
	nulls[4] = no_mutation ? 'n' : ' ';
	nulls[5] = no_client ? 'n' : ' ';
	nulls[6] = user == NULL ? 'n' : ' ';
	if (!fc->store.checked)
		sp_fence_store_check(&fc->store, fcinfo->flinfo->fn_mcxt);
	bool found;
	if (fc->store.direct && pk != NULL) {
		found = sp_fence_write_direct(&fc->store, v, nulls, push_insert);
	} else {
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "synchro: SPI_connect failed");
		sp_run(sp_plan(upsert_sql, 8, types), v, nulls, SPI_OK_INSERT);
		found = SPI_processed > 0;
		SPI_finish();
	}
	if (!found)
		ereport(ERROR, (errcode(SQLSTATE_SY006),
		                errmsg_internal("synchro: row \"%s\" of synced table \"%s\" is "
		                                "deleted; a push cannot insert it again",
		                                pk ? pk : "<NULL>", table_id)));

	char *text = message_text(table_id, pk, version, state, mutation, no_mutation, client,
	                          no_client, user, owner_before, owner_after, &scope);
	if (text == NULL)
		text = message_jsonb(table_id, pk, version, state, mutation, no_mutation, client,
		                     no_client, user, owner_before, owner_after, &scope);
	(void)LogLogicalMessage("synchro", text, strlen(text), true);
	return PointerGetDatum(NULL);
}

/* jsonb_build_object(...)::text: jsonb orders the keys and prints the text */
static char *message_jsonb(const char *table_id, const char *pk, const char *version,
                           const char *state, Datum mutation, bool no_mutation, Datum client,
                           bool no_client, const char *user, const char *owner_before,
                           const char *owner_after, const fence_scope *scope)
{
	JsonbParseState *st = NULL;
	(void)pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	put_text(&st, "table_id", table_id);
	put_text(&st, "pk", pk);
	put_text(&st, "version", version);
	put_text(&st, "state", state);
	put_uuid(&st, "mutation_id", mutation, no_mutation);
	put_uuid(&st, "client_id", client, no_client);
	put_text(&st, "user_id", user);
	put_text(&st, "owner_before", owner_before);
	put_text(&st, "owner_after", owner_after);
	if (scope->named) {
		put_text(&st, "scope_before", scope->before);
		put_text(&st, "scope_after", scope->after);
	}
	Jsonb *msg = JsonbValueToJsonb(pushJsonbValue(&st, WJB_END_OBJECT, NULL));
	return JsonbToCString(NULL, &msg->root, VARSIZE(msg));
}

/* --- the fence table's row rules (migration 21) ----------------------------------------- */

static void refuse_fence_row(const char *constraint)
{
	ereport(ERROR,
	        (errcode(ERRCODE_CHECK_VIOLATION),
	         errmsg("new row for relation \"row_fences\" violates check constraint \"%s\"",
	                constraint)));
}

PG_FUNCTION_INFO_V1(synchro_row_fence_rules);

/*
 * synchro.row_fence_rules(state, version), the one CHECK of synchro.row_fences: true, or the
 * refusal of the first of the two CHECKs of migrations 1 and 8 the row breaks, in their order
 * (PostgreSQL checks a table's constraints by name): state IN ('live', 'deleted')
 * (row_fences_state_check); octet_length(version) BETWEEN 1 AND 128 AND version ~ '^[!-~]+$'
 * (row_fences_version_check: 1 to 128 printable ASCII octets, no space). A NULL passes, as it
 * passes a CHECK (the columns are NOT NULL).
 */
Datum synchro_row_fence_rules(PG_FUNCTION_ARGS)
{
	if (!PG_ARGISNULL(0)) {
		text *t = PG_GETARG_TEXT_PP(0);
		size_t len = VARSIZE_ANY_EXHDR(t);
		const char *s = VARDATA_ANY(t);
		if (!((len == 4 && memcmp(s, "live", 4) == 0) ||
		      (len == 7 && memcmp(s, "deleted", 7) == 0)))
			refuse_fence_row("row_fences_state_check");
	}
	if (!PG_ARGISNULL(1)) {
		text *t = PG_GETARG_TEXT_PP(1);
		size_t len = VARSIZE_ANY_EXHDR(t);
		const unsigned char *s = (const unsigned char *)VARDATA_ANY(t);
		bool ok = len >= 1 && len <= 128;
		for (size_t k = 0; ok && k < len; k++)
			ok = s[k] >= '!' && s[k] <= '~';
		if (!ok)
			refuse_fence_row("row_fences_version_check");
	}
	PG_RETURN_BOOL(true);
}
