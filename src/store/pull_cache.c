/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pull_cache.c: the read side's per-process state (store/pull_internal.h).
 *
 * Layer: middle of src/store (doc/hacking.md).
 * Rules: doc/contract.md#pull-changes (every change and row carries the current schema,
 * with its checksum under it).
 * Notes: The state is the current schema manifest, with its quoted names and the
 * statements built for it. It is read again when a publish changed it.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/pull_internal.h"
#include "synchro/alloc.h"
#include "synchro/manifest.h"

static void cache_clear(sy_store_pull *p)
{
	if (p->tabs != NULL && p->m != NULL) {
		for (size_t i = 0; i < p->m->table_count; i++) {
			sy_store_ptab *x = &p->tabs[i];
			sy_free(x->lit);
			sy_free(x->rel);
			sy_free(x->pk);
			sy_free(x->owner);
			sy_free(x->hop_col);
			sy_free(x->m_rel);
			sy_free(x->m_match);
			sy_free(x->m_user);
			sy_free(x->h_rel);
			sy_free(x->h_key);
			sy_free(x->h_col);
			if (x->cols != NULL)
				for (size_t j = 0; j < x->t->field_count; j++)
					sy_free(x->cols[j]);
			sy_free(x->cols);
			sy_free(x->first_sql);
			sy_free(x->after_sql);
			sy_free(x->count_sql);
		}
	}
	sy_free(p->tabs);
	sy_free(p->order);
	sy_free(p->all_tables);
	sy_free(p->owner_tables);
	sy_free(p->members_tables);
	sy_free(p->page_sql);
	sy_free(p->broken_tables);
	sy_manifest_free(p->m);
	memset(p, 0, sizeof *p);
}

sy_store_pull *sy_store_pull_new(void)
{
	return sy_calloc(1, sizeof(sy_store_pull));
}

void sy_store_pull_free(sy_store_pull *p)
{
	if (p == NULL)
		return;
	cache_clear(p);
	sy_free(p);
}

static char *quote_literal(PGconn *c, const char *s, sy_error *err)
{
	char *q = PQescapeLiteral(c, s, strlen(s));
	if (q == NULL) {
		sy_store_fail(err, SY_STORE_INVALID, "cannot quote a table_id");
		return NULL;
	}
	char *out = sy_strndup(q, strlen(q));
	PQfreemem(q);
	if (out == NULL)
		sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	return out;
}

/* The quoted names of x's membership path; false with *err set when one cannot be quoted. */
static bool quote_members(PGconn *c, sy_store_ptab *x, const sy_members *ms, sy_error *err)
{
	x->hop_col = sy_store_quote_ident(c, ms->hops[0].column, err);
	x->m_rel = x->hop_col ? sy_store_quote_relation(c, ms->relation, err) : NULL;
	x->m_match = x->m_rel ? sy_store_quote_ident(c, ms->match, err) : NULL;
	x->m_user = x->m_match ? sy_store_quote_ident(c, ms->user, err) : NULL;
	if (x->m_user == NULL)
		return false;
	if (ms->hop_count < 2)
		return true;
	x->h_rel = sy_store_quote_relation(c, ms->hops[0].relation, err);
	x->h_key = x->h_rel ? sy_store_quote_ident(c, ms->hops[0].key, err) : NULL;
	x->h_col = x->h_key ? sy_store_quote_ident(c, ms->hops[1].column, err) : NULL;
	return x->h_col != NULL;
}

/* Orders p->order by table_id bytes (rebuild pages); a manifest has few tables. */
static void sort_tables(sy_store_pull *p, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		size_t v = p->order[i], j = i;
		while (j > 0 &&
		       strcmp(p->tabs[p->order[j - 1]].t->table_id, p->tabs[v].t->table_id) > 0) {
			p->order[j] = p->order[j - 1];
			j--;
		}
		p->order[j] = v;
	}
}

/* Makes m (taken over) the cached manifest of version and builds its statements. */
static sy_store_status cache_build(sy_store_pull *p, PGconn *c, long long version, sy_manifest *m,
                                   sy_error *err)
{
	cache_clear(p);
	p->version = version;
	p->m = m;
	snprintf(p->hash, sizeof p->hash, "%s", m->hash);
	size_t n = m->table_count;
	unsigned long serial = sy_store_pull_name_serial();
	p->tabs = sy_calloc(n ? n : 1, sizeof *p->tabs);
	p->order = sy_calloc(n ? n : 1, sizeof *p->order);
	if (p->tabs == NULL || p->order == NULL)
		goto nomem;
	sy_buf all = SY_BUF_INIT, own = SY_BUF_INIT, mem = SY_BUF_INIT;
	sy_buf_putc(&all, '{');
	sy_buf_putc(&own, '{');
	sy_buf_putc(&mem, '{');
	for (size_t i = 0; i < n; i++) {
		sy_store_ptab *x = &p->tabs[i];
		const sy_table *t = &m->tables[i];
		x->t = t;
		p->order[i] = i;
		x->owner_scope = t->read == SY_POLICY_OWNER;
		x->members_scope = t->read == SY_POLICY_MEMBERS && t->members != NULL;
		x->user_scope = x->owner_scope || x->members_scope;
		if (t->field_count > p->maxf)
			p->maxf = t->field_count;
		x->lit = quote_literal(c, t->table_id, err);
		x->rel = x->lit ? sy_store_quote_relation(c, t->relation, err) : NULL;
		x->pk = x->rel ? sy_store_quote_ident(c, t->pk.column, err) : NULL;
		x->cols = sy_calloc(t->field_count ? t->field_count : 1, sizeof *x->cols);
		if (x->pk == NULL || x->cols == NULL)
			goto fail_lists;
		for (size_t j = 0; j < t->field_count; j++) {
			x->cols[j] = sy_store_quote_ident(c, t->fields[j].column, err);
			if (x->cols[j] == NULL)
				goto fail_lists;
			if (x->user_scope && t->owner_field != NULL &&
			    strcmp(t->fields[j].field_id, t->owner_field) == 0 &&
			    (x->owner = sy_store_quote_ident(c, t->fields[j].column, err)) == NULL)
				goto fail_lists;
		}
		if (x->owner_scope && x->owner == NULL) {
			sy_store_fail(err, SY_STORE_INVALID, "table %s: owner field not found",
			              t->table_id);
			goto fail_lists;
		}
		if (x->members_scope && !quote_members(c, x, t->members, err))
			goto fail_lists;
		snprintf(x->first_name, sizeof x->first_name, "sy_rebuild_%lld_%lu_%zu_f", version,
		         serial, i);
		snprintf(x->after_name, sizeof x->after_name, "sy_rebuild_%lld_%lu_%zu_a", version,
		         serial, i);
		snprintf(x->count_name, sizeof x->count_name, "sy_rebuild_%lld_%lu_%zu_n", version,
		         serial, i);
		if (!sy_store_rebuild_build_sql(x))
			goto nomem_lists;
		if (x->owner_scope)
			sy_store_array_elem(&own, own.len == 1, t->table_id);
		else if (x->members_scope)
			sy_store_array_elem(&mem, mem.len == 1, t->table_id);
		else
			sy_store_array_elem(&all, all.len == 1, t->table_id);
	}
	sy_buf_putc(&all, '}');
	sy_buf_putc(&own, '}');
	sy_buf_putc(&mem, '}');
	bool members = mem.len > 2;
	p->all_tables = sy_store_pull_steal(&all);
	p->owner_tables = sy_store_pull_steal(&own);
	p->members_tables = sy_store_pull_steal(&mem);
	if (p->all_tables == NULL || p->owner_tables == NULL || p->members_tables == NULL)
		goto nomem;
	if (!members) {
		/* The statement of manifests without members tables, unchanged. */
		sy_free(p->members_tables);
		p->members_tables = NULL;
	}
	sort_tables(p, n);
	if (!sy_store_pull_build_page_sql(p, err))
		goto fail;
	return SY_STORE_OK;
nomem_lists:
	sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
fail_lists:
	sy_buf_free(&all);
	sy_buf_free(&own);
	sy_buf_free(&mem);
	goto fail;
nomem:
	sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
fail:
	cache_clear(p);
	return err->code == SY_ERR_NOMEM ? SY_STORE_NOMEM : SY_STORE_FAILED;
}

/* Reads the current manifest into the cache (when its version is not the cached one). */
sy_store_status sy_store_pull_cache_load(sy_store_pull *p, PGconn *c, sy_error *err)
{
	static sy_store_stmt stmt =
	        SY_STORE_STMT("sy_pull_manifest",
	                      "SELECT version, hash, manifest FROM synchro.schema_versions"
	                      " ORDER BY version DESC LIMIT 1",
	                      0);
	sy_store_status st;
	PGresult *r = sy_store_exec_stmt(c, &stmt, NULL, PGRES_TUPLES_OK, "current schema", NULL,
	                                 &st, err);
	if (r == NULL)
		return st;
	if (PQntuples(r) != 1) {
		PQclear(r);
		cache_clear(p);
		return SY_STORE_NOT_FOUND;
	}
	long long version = atoll(PQgetvalue(r, 0, 0));
	if (version == p->version && strcmp(PQgetvalue(r, 0, 1), p->hash) == 0) {
		PQclear(r);
		return SY_STORE_OK;
	}
	sy_error e = {0};
	sy_manifest *m = sy_manifest_parse(PQgetvalue(r, 0, 2), (size_t)PQgetlength(r, 0, 2), &e);
	bool same = m != NULL && strcmp(m->hash, PQgetvalue(r, 0, 1)) == 0;
	PQclear(r);
	if (m == NULL && e.code == SY_ERR_NOMEM)
		return sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	if (!same) {
		sy_manifest_free(m);
		return sy_store_fail(
		        err, SY_STORE_FAILED,
		        "the current schema manifest (version %lld) does not reproduce "
		        "its hash",
		        version);
	}
	return cache_build(p, c, version, m, err);
}
