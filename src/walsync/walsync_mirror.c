/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync_mirror.c: membership scopes in commit order (migration 22).
 *
 * Layer: middle of src/walsync (doc/hacking.md).
 * Rules: doc/contract.md#wal-alone-publishes (the WAL drives every change),
 * doc/contract.md#read-scope (who reads a row).
 * Interface:
 *   sy_ws_mirror_start()     loads the mirror when the stream starts
 *   sy_ws_mirror_readers()   the readers of a change, before and after
 *   sy_ws_mirror_scope()     a membership or link message: the mirror and its entries
 *   sy_ws_mirror_to_batch()  the mirror's changed rows, into the batch before its write
 *   sy_ws_mirror_written()   after a changelog write; sy_ws_mirror_pending()
 * Notes: The scope mirror is loaded when the stream starts, under the lease, with the
 * members-scoped tables of the published manifest. Each change of such a table tells its
 * readers before and after. A membership that comes or goes, or a link that moves, is
 * applied to the mirror. It becomes entries for the rows of its scope. The changelog write
 * writes them, in its transaction, with the mirror's rows (src/store/changelog_scopes.c).
 * The users concerned are noted for live notifications.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "store/schema.h"
#include "store/session.h"
#include "synchro/alloc.h"
#include "synchro/manifest.h"
#include "synchro/pgtypes.h"
#include "walsync/walsync.h"

/*
 * A going: users who lost scope key `value` of scope (or, by_hop, the rows of hop 1 value
 * `value`: a project moved to another team) at a scope change. Its entries are the rows the
 * live table holds when walsync writes them; a row that left that key between the change and
 * that read is not among them, and its own change (decoded later) no longer names those users
 * among its readers before. So until the decoded changes pass horizon (the WAL position after
 * the write that read the live table; 0 until then), a change of a row leaving that key or
 * hop value counts the goings' users among its readers before: they get its delete.
 */
struct sy_ws_going {
	char *scope;
	char *value;
	bool by_hop;
	char **users;
	size_t n;
	uint64_t horizon;
};

static void going_free(struct sy_ws_going *g)
{
	for (size_t i = 0; i < g->n; i++)
		sy_free(g->users[i]);
	sy_free(g->users);
	sy_free(g->scope);
	sy_free(g->value);
}

static void goings_clear(walsync *w)
{
	for (size_t i = 0; i < w->ngoings; i++)
		going_free(&w->goings[i]);
	w->ngoings = 0;
}

static bool going_add(walsync *w, const char *scope, const char *value, bool by_hop,
                      const char *const *users, size_t n)
{
	if (n == 0)
		return true;
	if (w->ngoings == w->goings_cap) {
		size_t cap = w->goings_cap ? w->goings_cap * 2 : 8;
		struct sy_ws_going *v = sy_realloc(w->goings, cap * sizeof *v);
		if (!v)
			return false;
		w->goings = v;
		w->goings_cap = cap;
	}
	struct sy_ws_going *g = &w->goings[w->ngoings];
	memset(g, 0, sizeof *g);
	g->by_hop = by_hop;
	bool ok = (g->scope = sy_strndup(scope, strlen(scope))) != NULL &&
	          (g->value = sy_strndup(value, strlen(value))) != NULL &&
	          (g->users = sy_calloc(n, sizeof *g->users)) != NULL;
	for (size_t i = 0; ok && i < n; i++, g->n++)
		ok = (g->users[i] = sy_strndup(users[i], strlen(users[i]))) != NULL;
	if (!ok) {
		going_free(g);
		return false;
	}
	w->ngoings++;
	return true;
}

void sy_ws_mirror_written(walsync *w, uint64_t horizon)
{
	for (size_t i = 0; i < w->ngoings; i++)
		if (w->goings[i].horizon == 0)
			w->goings[i].horizon = horizon;
}

bool sy_ws_mirror_pending(const walsync *w)
{
	for (size_t i = 0; i < w->ngoings; i++)
		if (w->goings[i].horizon == 0)
			return true;
	return false;
}

/* Drops the goings the decoded stream has passed. */
static void goings_prune(walsync *w)
{
	size_t k = 0;
	for (size_t i = 0; i < w->ngoings; i++) {
		struct sy_ws_going *g = &w->goings[i];
		if (g->horizon != 0 && w->txn_lsn >= g->horizon)
			going_free(g);
		else
			w->goings[k++] = *g;
	}
	w->ngoings = k;
}

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The readers before of a change of a row of scope whose hop 1 value was hop and scope key
 * key: the mirror's users, and those of the goings it leaves. */
static bool readers_before(walsync *w, const char *scope, const char *hop, const char *key,
                           sy_buf *out)
{
	size_t n = 0, extra = 0;
	const char *const *u = key ? sy_ws_scopes_users(w->scopes, scope, key, &n) : NULL;
	if (w->ngoings > 0 && hop)
		goings_prune(w);
	for (size_t i = 0; hop && i < w->ngoings; i++) {
		const struct sy_ws_going *g = &w->goings[i];
		if (strcmp(g->scope, scope) == 0 &&
		    strcmp(g->value, g->by_hop ? hop
		                     : key     ? key
		                               : "") == 0 &&
		    (g->by_hop || key))
			extra += g->n;
	}
	if (extra == 0) {
		sy_ws_scopes_set_literal(u, n, out);
		return true;
	}
	const char **all = sy_calloc(n + extra, sizeof *all);
	if (!all)
		return false;
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		all[m++] = u[i];
	for (size_t i = 0; i < w->ngoings; i++) {
		const struct sy_ws_going *g = &w->goings[i];
		if (strcmp(g->scope, scope) == 0 &&
		    strcmp(g->value, g->by_hop ? hop
		                     : key     ? key
		                               : "") == 0 &&
		    (g->by_hop || key))
			for (size_t j = 0; j < g->n; j++)
				all[m++] = g->users[j];
	}
	qsort(all, m, sizeof *all, compare_strings);
	size_t k = 0;
	for (size_t i = 0; i < m; i++)
		if (k == 0 || strcmp(all[k - 1], all[i]) != 0)
			all[k++] = all[i];
	sy_ws_scopes_set_literal(all, k, out);
	sy_free(all);
	return true;
}

static void mtables_free(walsync *w)
{
	for (size_t i = 0; i < w->nmtables; i++) {
		sy_ws_mtable *t = &w->mtables[i];
		sy_free(t->table_id);
		sy_free(t->relation);
		sy_free(t->pk);
		sy_free(t->hop);
		sy_free(t->owner);
		sy_free(t->scope);
		sy_free(t->link);
	}
	sy_free(w->mtables);
	w->mtables = NULL;
	w->nmtables = 0;
}

void sy_ws_mirror_free(walsync *w)
{
	goings_clear(w);
	sy_free(w->goings);
	w->goings = NULL;
	w->goings_cap = 0;
	mtables_free(w);
	sy_ws_scopes_free(w->scopes);
	w->scopes = NULL;
	sy_buf_free(&w->readers_before);
	sy_buf_free(&w->readers_after);
}

/* a, sep1, b, sep2, c concatenated: a new string, NULL when out of memory. */
static char *join5(const char *a, const char *sep1, const char *b, const char *sep2, const char *c,
                   const char *end)
{
	size_t n =
	        strlen(a) + strlen(sep1) + strlen(b) + strlen(sep2) + strlen(c) + strlen(end) + 1;
	char *s = sy_malloc(n);
	if (s)
		snprintf(s, n, "%s%s%s%s%s%s", a, sep1, b, sep2, c, end);
	return s;
}

/* The names the scope trigger's messages use: relation(match,user) and relation.key->column. */
static bool fill_names(sy_ws_mtable *x, const sy_members *m)
{
	x->scope = join5(m->relation, "(", m->match, ",", m->user, ")");
	if (!x->scope)
		return false;
	if (m->hop_count < 2)
		return true;
	x->link = join5(m->hops[0].relation, ".", m->hops[0].key, "->", m->hops[1].column, "");
	return x->link != NULL;
}

/* The members-scoped tables of manifest m into w->mtables and the mirror's table map. */
static bool tables_from(walsync *w, const sy_manifest *m, sy_error *err)
{
	size_t n = 0;
	for (size_t i = 0; i < m->table_count; i++)
		n += m->tables[i].members != NULL;
	sy_ws_mtable *v = n ? sy_calloc(n, sizeof *v) : NULL;
	if (n && !v)
		return !sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	w->mtables = v;
	w->nmtables = 0;
	for (size_t i = 0; i < m->table_count; i++) {
		const sy_table *t = &m->tables[i];
		if (!t->members)
			continue;
		sy_ws_mtable *x = &v[w->nmtables++];
		const sy_field *owner =
		        t->owner_field ? sy_table_field(t, t->owner_field, strlen(t->owner_field))
		                       : NULL;
		x->table_id = sy_strndup(t->table_id, strlen(t->table_id));
		if (!x->table_id || !fill_names(x, t->members))
			return !sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
		if (!(x->relation = sy_store_quote_relation(w->db, t->relation, err)) ||
		    !(x->pk = sy_store_quote_ident(w->db, t->pk.column, err)) ||
		    !(x->hop = sy_store_quote_ident(w->db, t->members->hops[0].column, err)) ||
		    (owner && !(x->owner = sy_store_quote_ident(w->db, owner->column, err))))
			return false;
		x->hop_type = t->members->field ? sy_type_pg_name(t->members->field->type) : "text";
		if (!sy_ws_scopes_table(w->scopes, x->table_id, x->scope, x->link))
			return !sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	}
	return true;
}

/* Reads the latest manifest; *version 0 when none is published. */
static sy_store_status read_manifest(walsync *w, long long *version, sy_error *err)
{
	mtables_free(w);
	sy_ws_scopes_forget_tables(w->scopes);
	sy_store_schema s = {0};
	sy_store_status st = sy_store_schema_get(w->db, 0, &s, err);
	*version = 0;
	if (st == SY_STORE_NOT_FOUND)
		return SY_STORE_OK;
	if (st != SY_STORE_OK)
		return st;
	sy_error perr = {0};
	sy_manifest *m = sy_manifest_parse(s.manifest, s.manifest_len, &perr);
	if (!m) {
		/* Published manifests were valid when published: a newer parser refusing one
		 * is this release's bug, not the data's. */
		st = sy_store_fail(err, SY_STORE_FAILED, "the published manifest %lld: %s",
		                   s.version, perr.message);
		sy_store_schema_clear(&s);
		return st;
	}
	*version = s.version;
	sy_store_schema_clear(&s);
	if (!tables_from(w, m, err)) {
		st = err->message[0] ? SY_STORE_FAILED : SY_STORE_NOMEM;
		mtables_free(w);
		sy_ws_scopes_forget_tables(w->scopes);
	}
	sy_manifest_free(m);
	return st;
}

static bool on_mirror_row(void *arg, bool member, const char *name, const char *key,
                          const char *value)
{
	sy_ws_scopes *s = arg;
	return member ? sy_ws_scopes_load_member(s, name, key, value)
	              : sy_ws_scopes_load_link(s, name, key, value);
}

/* The scopes and links of w->mtables as two text[] literals; known (may be NULL) tells
 * which of them the mirror holds already: those are left out. */
static bool names_literals(const walsync *w, const bool *known, sy_buf *scopes, sy_buf *links)
{
	size_t ns = 0, nl = 0;
	sy_buf_putc(scopes, '{');
	sy_buf_putc(links, '{');
	for (size_t i = 0; i < w->nmtables; i++) {
		if (known && known[i])
			continue;
		sy_store_array_elem(scopes, ns++ == 0, w->mtables[i].scope);
		if (w->mtables[i].link)
			sy_store_array_elem(links, nl++ == 0, w->mtables[i].link);
	}
	sy_buf_putc(scopes, '}');
	sy_buf_putc(links, '}');
	return !scopes->failed && !links->failed;
}

bool sy_ws_mirror_start(walsync *w)
{
	if (!w->scopes_db)
		return true;
	sy_error err = {0};
	if (!w->scopes && !(w->scopes = sy_ws_scopes_new())) {
		sy_log(SY_LOG_ERR, "out of memory");
		return false;
	}
	sy_ws_scopes_forget_mirror(w->scopes);
	goings_clear(w);
	int64_t t0 = sy_clock_ms();
	sy_store_status st = read_manifest(w, &w->manifest_version, &err);
	if (st == SY_STORE_OK)
		st = sy_store_scope_mirror_load(w->db, NULL, NULL, on_mirror_row, w->scopes, &err);
	w->manifest_checked_ms = sy_clock_ms();
	if (st != SY_STORE_OK) {
		sy_ws_scopes_forget_mirror(w->scopes);
		sy_ws_store_failed(w, st, &err);
		return false;
	}
	if (w->nmtables > 0)
		sy_log(SY_LOG_INFO,
		       "scope mirror: %zu members-scoped tables, %zu memberships, %zu links "
		       "(%lld ms)",
		       w->nmtables, sy_ws_scopes_member_count(w->scopes),
		       sy_ws_scopes_link_count(w->scopes), (long long)(sy_clock_ms() - t0));
	return true;
}

/* Whether name is the scope (or link) of one of the n tables v. */
static bool named_in(const sy_ws_mtable *v, size_t n, bool scope, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		const char *x = scope ? v[i].scope : v[i].link;
		if (x && strcmp(x, name) == 0)
			return true;
	}
	return false;
}

/*
 * A message named a scope, link or members-scoped table walsync does not know: a manifest
 * published since the stream started. Reads the latest one; the mirror rows of the scopes
 * and links it adds (which the publish seeded, and no message changed before it) are loaded;
 * those walsync already mirrors keep their rows in memory, dirty ones included. false when
 * the stream must restart.
 */
static bool reload(walsync *w)
{
	w->manifest_checked_ms = sy_clock_ms();
	sy_error err = {0};
	sy_schema_ref ref = {0};
	sy_store_status st = sy_store_schema_current(w->db, &ref, NULL, NULL, &err);
	if (st == SY_STORE_NOT_FOUND ||
	    (st == SY_STORE_OK && (long long)ref.version == w->manifest_version))
		return true;
	if (st != SY_STORE_OK) {
		sy_ws_store_failed(w, st, &err);
		return false;
	}
	sy_ws_mtable *old = w->mtables;
	size_t nold = w->nmtables;
	w->mtables = NULL;
	w->nmtables = 0;
	long long version = 0;
	st = read_manifest(w, &version, &err);
	bool *known = NULL;
	sy_buf scopes = {0}, links = {0};
	if (st == SY_STORE_OK && version != w->manifest_version && w->nmtables > 0) {
		known = sy_calloc(w->nmtables, sizeof *known);
		if (!known)
			st = sy_store_fail(&err, SY_STORE_NOMEM, "out of memory");
		for (size_t i = 0; known && i < w->nmtables; i++) {
			const sy_ws_mtable *t = &w->mtables[i];
			known[i] = named_in(old, nold, true, t->scope) &&
			           (!t->link || named_in(old, nold, false, t->link));
		}
		if (known && !names_literals(w, known, &scopes, &links))
			st = sy_store_fail(&err, SY_STORE_NOMEM, "out of memory");
		if (st == SY_STORE_OK)
			st = sy_store_scope_mirror_load(w->db, scopes.data, links.data,
			                                on_mirror_row, w->scopes, &err);
	}
	if (st == SY_STORE_OK && version != w->manifest_version) {
		sy_log(SY_LOG_INFO, "scope mirror: manifest %lld (%zu members-scoped tables)",
		       version, w->nmtables);
		w->manifest_version = version;
	}
	sy_free(known);
	sy_buf_free(&scopes);
	sy_buf_free(&links);
	sy_ws_mtable *cur = w->mtables;
	size_t ncur = w->nmtables;
	w->mtables = old;
	w->nmtables = nold;
	mtables_free(w);
	w->mtables = cur;
	w->nmtables = ncur;
	if (st != SY_STORE_OK) {
		sy_ws_store_failed(w, st, &err);
		return false;
	}
	return true;
}

static bool note_users(walsync *w, const char *scope, const char *key, uint64_t lsn,
                       uint32_t ordinal)
{
	size_t n = 0;
	const char *const *u = key ? sy_ws_scopes_users(w->scopes, scope, key, &n) : NULL;
	for (size_t i = 0; i < n; i++)
		if (!sy_ws_notify_note(w->notify, u[i], lsn, ordinal))
			return false;
	return true;
}

bool sy_ws_mirror_readers(walsync *w, const sy_ws_change *c, int ordinal, const char **before,
                          const char **after)
{
	*before = *after = NULL;
	if (!w->scopes_db || !w->scopes)
		return true;
	const char *scope, *link;
	if (!sy_ws_scopes_table_get(w->scopes, c->table_id, &scope, &link)) {
		/* Scope members from a table not known as members-scoped: a newer manifest (a
		 * table a later manifest dropped keeps its fence: asked once per manifest). */
		if ((!c->scope_before && !c->scope_after) ||
		    sy_ws_scopes_table_known(w->scopes, c->table_id))
			return true;
		if (!reload(w))
			return false;
		if (!sy_ws_scopes_table_get(w->scopes, c->table_id, &scope, &link)) {
			if (!sy_ws_scopes_table_plain(w->scopes, c->table_id)) {
				sy_log(SY_LOG_ERR, "out of memory");
				return false;
			}
			return true;
		}
	}
	const char *kb = sy_ws_scopes_key(w->scopes, link, c->scope_before);
	const char *ka = sy_ws_scopes_key(w->scopes, link, c->scope_after);
	sy_buf_reset(&w->readers_before);
	sy_buf_reset(&w->readers_after);
	bool ok = readers_before(w, scope, c->scope_before, kb, &w->readers_before);
	sy_ws_scopes_literal(w->scopes, scope, ka, &w->readers_after);
	if (!ok || w->readers_before.failed || w->readers_after.failed ||
	    !note_users(w, scope, kb, w->txn_lsn, (uint32_t)ordinal) ||
	    !note_users(w, scope, ka, w->txn_lsn, (uint32_t)ordinal)) {
		sy_log(SY_LOG_ERR, "out of memory");
		return false;
	}
	*before = w->readers_before.data;
	*after = w->readers_after.data;
	return true;
}

/* Entries for the rows of t whose hop 1 value is one of keys (a text[] literal), with these
 * readers. */
static bool add_rows(walsync *w, const sy_ws_mtable *t, const char *keys, const char *rb,
                     const char *ra)
{
	if (strcmp(rb, "{}") == 0 && strcmp(ra, "{}") == 0)
		return true; /* nobody's view changes */
	sy_store_scope_rows x = {
	        .commit_lsn = w->txn_lsn,
	        .xid = w->txn_xid,
	        .commit_time = w->txn_time,
	        .table_id = t->table_id,
	        .relation = t->relation,
	        .pk_column = t->pk,
	        .hop_column = t->hop,
	        .hop_type = t->hop_type,
	        .owner_column = t->owner,
	        .keys = keys,
	        .readers_before = rb,
	        .readers_after = ra,
	};
	return sy_store_changes_add_scope_rows(w->batch, &x);
}

/* The hop 1 values of scope key key for t as a text[] literal into out: the key itself with
 * one hop; with two, the keys the link mirror leads to it from (none: false, nothing to
 * read). */
static bool hop_values(walsync *w, const sy_ws_mtable *t, const char *key, sy_buf *out)
{
	sy_buf_reset(out);
	if (!t->link) {
		sy_ws_scopes_set_literal(&key, 1, out);
		return true;
	}
	size_t n = 0;
	const char *const *keys = sy_ws_scopes_link_keys(w->scopes, t->link, key, &n);
	if (n == 0)
		return false;
	sy_ws_scopes_set_literal(keys, n, out);
	return true;
}

/* One user's coming (or going) to scope key key of scope: every table of that scope. */
static bool member_rows(walsync *w, const char *scope, const char *key, const char *user,
                        bool comes)
{
	sy_buf one = {0}, keys = {0};
	sy_ws_scopes_set_literal(&user, 1, &one);
	bool ok = !one.failed;
	for (size_t i = 0; ok && i < w->nmtables; i++) {
		const sy_ws_mtable *t = &w->mtables[i];
		if (strcmp(t->scope, scope) != 0 || !hop_values(w, t, key, &keys))
			continue;
		ok = !keys.failed &&
		     add_rows(w, t, keys.data, comes ? "{}" : one.data, comes ? one.data : "{}");
	}
	sy_buf_free(&one);
	sy_buf_free(&keys);
	return ok && (comes || going_add(w, scope, key, false, &user, 1));
}

/* The users of scope key from of scope who are not users of to: those a hop value moving from
 * one to the other loses, as a going. */
static bool link_going(walsync *w, const char *scope, const char *value, const char *from,
                       const char *to)
{
	size_t nf = 0, nt = 0;
	const char *const *f = from ? sy_ws_scopes_users(w->scopes, scope, from, &nf) : NULL;
	const char *const *t = to ? sy_ws_scopes_users(w->scopes, scope, to, &nt) : NULL;
	if (nf == 0)
		return true;
	const char **lost = sy_calloc(nf, sizeof *lost);
	if (!lost)
		return false;
	size_t n = 0, j = 0;
	for (size_t i = 0; i < nf; i++) {
		while (j < nt && strcmp(t[j], f[i]) < 0)
			j++;
		if (j == nt || strcmp(t[j], f[i]) != 0)
			lost[n++] = f[i];
	}
	bool ok = going_add(w, scope, value, true, lost, n);
	sy_free(lost);
	return ok;
}

/* Hop value key moved from scope key from to to (NULL: none) of link: the rows of every table
 * of that link. */
static bool link_rows(walsync *w, const char *link, const char *key, const char *from,
                      const char *to, uint64_t lsn, uint32_t ordinal)
{
	for (size_t i = 0; i < w->nmtables; i++) {
		const sy_ws_mtable *t = &w->mtables[i];
		if (!t->link || strcmp(t->link, link) != 0)
			continue;
		sy_buf one = {0};
		sy_ws_scopes_set_literal(&key, 1, &one);
		sy_buf_reset(&w->readers_before);
		sy_buf_reset(&w->readers_after);
		sy_ws_scopes_literal(w->scopes, t->scope, from, &w->readers_before);
		sy_ws_scopes_literal(w->scopes, t->scope, to, &w->readers_after);
		bool ok = !one.failed && !w->readers_before.failed && !w->readers_after.failed &&
		          add_rows(w, t, one.data, w->readers_before.data, w->readers_after.data) &&
		          link_going(w, t->scope, key, from, to);
		sy_buf_free(&one);
		if (!ok || !note_users(w, t->scope, from, lsn, ordinal) ||
		    !note_users(w, t->scope, to, lsn, ordinal))
			return false;
	}
	return true;
}

static bool known_name(const walsync *w, bool member, const char *name)
{
	for (size_t i = 0; i < w->nmtables; i++) {
		const char *n = member ? w->mtables[i].scope : w->mtables[i].link;
		if (n && strcmp(n, name) == 0)
			return true;
	}
	return false;
}

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

bool sy_ws_mirror_scope(walsync *w, sy_ws_synchro_kind kind, const sy_ws_scope_msg *m, int ordinal)
{
	if (!w->scopes_db || !w->scopes)
		return true;
	bool member = kind == SY_WS_SYNCHRO_MEMBER;
	if (!known_name(w, member, m->scope)) {
		/* A scope no published manifest names (a trigger a later publish left): its
		 * rows are nobody's to read through it. Asked once per manifest: remembered
		 * beside the tables under a name no table_id has (no control character). */
		size_t len = strlen(m->scope) + 3;
		char *mark = sy_malloc(len);
		if (!mark)
			goto nomem;
		snprintf(mark, len, "\x01%c%s", member ? 'm' : 'l', m->scope);
		bool asked = sy_ws_scopes_table_known(w->scopes, mark);
		bool ok = asked || reload(w);
		if (ok && !asked && !known_name(w, member, m->scope) &&
		    !sy_ws_scopes_table_plain(w->scopes, mark)) {
			sy_free(mark);
			goto nomem;
		}
		sy_free(mark);
		if (!ok)
			return false;
		if (!known_name(w, member, m->scope))
			return true;
	}
	if (same(m->key_before, m->key_after) && same(m->value_before, m->value_after))
		return true;
	uint32_t ord = (uint32_t)ordinal;
	bool changed = false;
	if (member) {
		if (m->key_before) {
			if (!sy_ws_scopes_member_remove(w->scopes, m->scope, m->key_before,
			                                m->value_before, &changed) ||
			    (changed &&
			     (!member_rows(w, m->scope, m->key_before, m->value_before, false) ||
			      !sy_ws_notify_note(w->notify, m->value_before, w->txn_lsn, ord))))
				goto nomem;
		}
		if (m->key_after) {
			if (!sy_ws_scopes_member_add(w->scopes, m->scope, m->key_after,
			                             m->value_after, &changed) ||
			    (changed &&
			     (!member_rows(w, m->scope, m->key_after, m->value_after, true) ||
			      !sy_ws_notify_note(w->notify, m->value_after, w->txn_lsn, ord))))
				goto nomem;
		}
		return true;
	}
	/* A link: the hop key keeps or changes its target. A key that changes is the old
	 * key's going and the new key's coming. */
	if (m->key_before && !same(m->key_before, m->key_after)) {
		char *from = NULL;
		const char *t = sy_ws_scopes_link(w->scopes, m->scope, m->key_before);
		if (t && !(from = sy_strndup(t, strlen(t))))
			goto nomem;
		bool ok =
		        sy_ws_scopes_link_set(w->scopes, m->scope, m->key_before, NULL, &changed) &&
		        (!changed ||
		         link_rows(w, m->scope, m->key_before, from, NULL, w->txn_lsn, ord));
		sy_free(from);
		if (!ok)
			goto nomem;
	}
	if (m->key_after) {
		char *from = NULL;
		const char *t = sy_ws_scopes_link(w->scopes, m->scope, m->key_after);
		if (t && !(from = sy_strndup(t, strlen(t))))
			goto nomem;
		bool ok = sy_ws_scopes_link_set(w->scopes, m->scope, m->key_after, m->value_after,
		                                &changed) &&
		          (!changed || link_rows(w, m->scope, m->key_after, from, m->value_after,
		                                 w->txn_lsn, ord));
		sy_free(from);
		if (!ok)
			goto nomem;
	}
	return true;
nomem:
	sy_log(SY_LOG_ERR, "out of memory");
	return false;
}

static void dirty_member(void *arg, const char *scope, const char *key, const char *const *users,
                         size_t n)
{
	walsync *w = arg;
	if (!sy_store_changes_mirror_member(w->batch, scope, key, users, n))
		w->mirror_failed = true;
}

static void dirty_link(void *arg, const char *link, const char *key, const char *target)
{
	walsync *w = arg;
	if (!sy_store_changes_mirror_link(w->batch, link, key, target))
		w->mirror_failed = true;
}

bool sy_ws_mirror_to_batch(walsync *w)
{
	if (!w->scopes || sy_ws_scopes_dirty_count(w->scopes) == 0)
		return true;
	w->mirror_failed = false;
	sy_ws_scopes_dirty_each(w->scopes, dirty_member, dirty_link, w);
	sy_ws_scopes_dirty_clear(w->scopes);
	if (w->mirror_failed) {
		sy_log(SY_LOG_ERR, "out of memory");
		return false;
	}
	return true;
}
