/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_terminal.c: the per-mutation rules that the manifests decide without the row, and
 * the text each value is written with.
 *
 * Layer: middle of src/pg (doc/hacking.md).
 * Rules: doc/contract.md#terminal-rules (the rules and their order).
 * Notes: The rules come before the compare-and-swap. The core's sy_matrix_terminal and
 * sy_matrix_evaluate pick the outcome. What needs the row, the owner and members policies,
 * is judged under the row lock (push_scope.c).
 */
#include "postgres.h"

#include "catalog/pg_type.h"

#include "push_module.h"
#include "synchro/alloc.h"
#include "synchro/types.h"

static const char msg_policy[] = "the write policy does not allow this mutation";
static const char msg_table_gone[] = "the table is not in the current schema";
static const char msg_incompatible[] =
        "authored fields cannot be represented by the current schema";
static const char msg_not_synced[] = "the table is not synced";

static const char synced_sql[] =
        "SELECT EXISTS (SELECT 1 FROM synchro.synced_tables t WHERE t.table_id = $1)";

static bool ever_synced(const sy_mutation *m)
{
	static const Oid types[] = {TEXTOID};
	Datum v[] = {sp_text_datum(m->table_id, m->table_len)};
	sp_run(sp_plan(synced_sql, 1, types), v, NULL, SPI_OK_SELECT);
	bool ever = SPI_processed == 1 && sp_bool(0, 1);
	SPI_freetuptable(SPI_tuptable);
	return ever;
}

/* The manifest the mutation was authored under, when it is published with that hash. */
static const sy_manifest *authored_manifest(const sp_push *x, const sy_mutation *m)
{
	const sy_schema_ref *a = &m->authored_schema;
	if (a->version == (uint64_t)x->cur->version)
		return strcmp(a->hash, x->cur->hash) == 0 ? x->cur->m : NULL;
	if (a->version > (uint64_t)PG_INT64_MAX)
		return NULL;
	sp_schema *s = sp_schema_get((int64)a->version);
	return s != NULL && strcmp(s->hash, a->hash) == 0 ? s->m : NULL;
}

static bool table_has_field(const sy_table *t, const char *id, size_t len)
{
	if (t == NULL)
		return false;
	if (strlen(t->pk.field_id) == len && memcmp(t->pk.field_id, id, len) == 0)
		return true;
	return sy_table_field(t, id, len) != NULL;
}

static char *arena_printf(sp_push *x, const char *fmt, ...) SY_PRINTF(2, 3);

static char *arena_printf(sp_push *x, const char *fmt, ...)
{
	char buf[SY_ERROR_MESSAGE_MAX];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return sp_arena_dup(x, buf, n < 0 ? 0 : Min((size_t)n, sizeof buf - 1));
}

/* Schema history: which authored fields the current schema cannot represent. */
static void history(sp_push *x, size_t k, const sy_table *t, const sy_manifest *am,
                    const char **ids, const size_t *lens)
{
	const sy_mutation *m = &x->req->mutations[k];
	sp_pre *pr = &x->pre[k];
	size_t *idx = NULL, nidx = 0, kept = 0;
	sy_error e = {0};
	if (!sy_manifest_incompatible_indexes(am, x->cur->m, m->table_id, m->table_len, ids, lens,
	                                      m->column_count, &idx, &nidx, &e))
		sp_nomem("schema history");
	/* A field neither the current nor the authored table ever had is not retained intent
	 * the schema lost: it is an unknown field (validation_failed). */
	const sy_table *at = am != NULL ? sy_manifest_table(am, m->table_id, m->table_len) : NULL;
	for (size_t i = 0; i < nidx; i++) {
		size_t j = idx[i];
		if (t != NULL && at != NULL && !table_has_field(t, ids[j], lens[j]) &&
		    !table_has_field(at, ids[j], lens[j]))
			continue;
		idx[kept++] = j;
	}
	/* A pk the current table no longer has (push_gates.c let it through because the
	 * authored schema explains it) is an incompatible field too. */
	bool pk_gone = false;
	if (t != NULL) {
		sy_error pe = {0};
		pk_gone = !sy_push_check_pk(x->req, k, t, &pe);
		if (pe.code == SY_ERR_NOMEM)
			sp_nomem("schema history");
	}
	if (t == NULL || kept > 0 || pk_gone) {
		pr->rules |= SY_RULE_SCHEMA_INCOMPATIBLE;
		pr->rule_message = t == NULL ? msg_table_gone : msg_incompatible;
		pr->incompat = sy_json_doc_alloc(x->doc, sizeof *pr->incompat * (kept + 1));
		if (pr->incompat == NULL)
			sp_nomem("schema history");
		for (size_t i = 0; i < kept; i++)
			pr->incompat[i] = ids[idx[i]];
		pr->nincompat = kept;
		if (pk_gone)
			pr->incompat[pr->nincompat++] =
			        sp_arena_dup(x, m->pk_field, m->pk_field_len);
	}
	sy_free(idx);
}

/* Column values: writable, non-null where required, canonical; their PostgreSQL text. */
static void values(sp_push *x, size_t k, const sy_table *t, const char **ids, const size_t *lens)
{
	const sy_mutation *m = &x->req->mutations[k];
	sp_pre *pr = &x->pre[k];
	sy_buf val = SY_BUF_INIT;
	for (size_t i = 0; i < m->column_count && !(pr->rules & SY_RULE_VALIDATION_FAILED); i++) {
		const sy_json *v = m->columns[i].value;
		const sy_field *f = sy_table_field(t, ids[i], lens[i]);
		const char *msg = NULL;
		pr->fields[i] = f;
		if (f == NULL || !sy_field_writable(t, f)) {
			msg = arena_printf(x,
			                   f == NULL && !table_has_field(t, ids[i], lens[i])
			                           ? "unknown field \"%.64s\""
			                           : "field \"%.64s\" is not writable",
			                   ids[i]);
		} else if (v->type == SY_JSON_NULL) {
			if (!f->nullable)
				msg = arena_printf(x, "field \"%.64s\" cannot be null", ids[i]);
		} else {
			const char *why = NULL;
			sy_wire_status ws = sy_wire_check(f->type, v, &why, NULL);
			if (ws == SY_WIRE_NOMEM)
				goto nomem;
			if (ws != SY_WIRE_OK) {
				msg = arena_printf(x, "field \"%.64s\": %s", ids[i],
				                   why ? why : "invalid value");
			} else {
				sy_buf_reset(&val);
				if (!sy_wire_to_pg_text(f->type, v, &val))
					goto nomem;
				pr->vals[i] = sp_arena_dup(x, val.data, val.len);
			}
		}
		if (msg != NULL) {
			pr->rules |= SY_RULE_VALIDATION_FAILED;
			pr->validation_message = msg;
		}
	}
	sy_buf_free(&val);
	return;
nomem:
	sy_buf_free(&val);
	sp_nomem("values");
}

/* Everything of mutation k that needs no row. */
static void precheck(sp_push *x, size_t k)
{
	const sy_mutation *m = &x->req->mutations[k];
	sp_pre *pr = &x->pre[k];
	size_t nc = m->column_count;
	const sy_table *t = sy_manifest_table(x->cur->m, m->table_id, m->table_len);
	const char **ids = sy_json_doc_alloc(x->doc, sizeof *ids * (nc + 1));
	size_t *lens = sy_json_doc_alloc(x->doc, sizeof *lens * (nc + 1));
	pr->vals = sy_json_doc_alloc(x->doc, sizeof *pr->vals * (nc + 1));
	pr->fields = sy_json_doc_alloc(x->doc, sizeof *pr->fields * (nc + 1));
	if (ids == NULL || lens == NULL || pr->vals == NULL || pr->fields == NULL)
		sp_nomem("precheck");
	for (size_t i = 0; i < nc; i++) {
		ids[i] = m->columns[i].field_id;
		lens[i] = m->columns[i].field_len;
		pr->vals[i] = NULL;
		pr->fields[i] = NULL;
	}
	if (t == NULL && !ever_synced(m)) {
		pr->rules |= SY_RULE_TABLE_NOT_SYNCED;
		pr->rule_message = msg_not_synced;
		return;
	}
	history(x, k, t, authored_manifest(x, m), ids, lens);
	if (pr->rules != 0)
		return;
	pr->ti = sp_schema_table(x->cur, t);
	if (t->write == SY_POLICY_NONE) {
		pr->rules |= SY_RULE_POLICY_REJECTED;
		pr->rule_message = msg_policy;
		return;
	}
	/* The row decides when the caller may not read every row, or writes only its own. */
	pr->row_scoped = t->read != SY_POLICY_ALL ||
	                 (pr->ti->owner >= 0 && t->write == SY_POLICY_OWNER);
	sy_buf val = SY_BUF_INIT;
	if (!sy_wire_to_pg_text(t->pk.type, m->pk_value, &val)) {
		sy_buf_free(&val);
		sp_nomem("precheck");
	}
	pr->pk_text = sp_arena_dup(x, val.data, val.len);
	sy_buf_free(&val);
	values(x, k, t, ids, lens);
}

void sp_prepare(sp_push *x)
{
	size_t n = x->req->mutation_count;
	x->pre = palloc0(sizeof *x->pre * n);
	for (size_t k = 0; k < n; k++)
		if (x->res[k].stored == NULL)
			precheck(x, k);
}

void sp_set_terminal(sp_push *x, size_t k, sy_code code, const char *message)
{
	sp_res *rr = &x->res[k];
	sy_outcome_init(&rr->o, &x->req->mutations[k], &x->req->schema);
	rr->o.status = SY_STATUS_REJECTED_TERMINAL;
	rr->o.code = code;
	rr->o.message = message;
	if (code == SY_CODE_SCHEMA_INCOMPATIBLE) {
		rr->o.current_schema.version = (uint64_t)x->cur->version;
		strlcpy(rr->o.current_schema.hash, x->cur->hash, sizeof rr->o.current_schema.hash);
		rr->o.incompatible_field_ids = x->pre[k].incompat;
		rr->o.incompatible_count = x->pre[k].nincompat;
	}
	rr->decided = true;
}

bool sp_needs_row(const sp_push *x, size_t k)
{
	const sp_pre *pr = &x->pre[k];
	if (x->res[k].stored != NULL)
		return false;
	if (pr->rules &
	    (SY_RULE_SCHEMA_INCOMPATIBLE | SY_RULE_TABLE_NOT_SYNCED | SY_RULE_POLICY_REJECTED))
		return false;
	/* An invalid mutation still needs the row when the policy, which comes first, is
	 * judged on it. */
	return !(pr->rules & SY_RULE_VALIDATION_FAILED) || pr->row_scoped;
}

/* The outcome of a mutation that needs no row (sp_needs_row() false, not stored). */
void sp_settle_without_row(sp_push *x, size_t k)
{
	const sp_pre *pr = &x->pre[k];
	sy_code code = sy_matrix_terminal(pr->rules);
	sp_set_terminal(x, k, code,
	                code == SY_CODE_VALIDATION_FAILED ? pr->validation_message
	                                                  : pr->rule_message);
}
