/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * schema_scopes.c: membership scopes at publish (store/schema_scopes.h).
 *
 * Layer: middle of src/store (doc/hacking.md).
 * Rules: doc/protocol.md#membership-scopes (paths, triggers and the mirror).
 * Interface:
 *   sy_store_scopes_check()    a table's membership path against the catalog
 *   sy_store_scopes_install()  the scope triggers, and the mirror seeded
 *   sy_store_scope_name(), sy_store_link_name()  the names walsync uses too
 * Notes: It checks each membership path against the catalog. It installs the scope
 * triggers of the membership and hop relations. It seeds the mirror. From then on walsync
 * keeps the mirror, in commit order.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "store/conn.h"
#include "store/schema_scopes.h"
#include "synchro/alloc.h"
#include "synchro/buf.h"

char *sy_store_scope_name(const sy_members *ms)
{
	sy_buf b = SY_BUF_INIT;
	sy_buf_printf(&b, "%s(%s,%s)", ms->relation, ms->match, ms->user);
	size_t len;
	return b.failed ? (sy_buf_free(&b), NULL) : sy_buf_steal(&b, &len);
}

char *sy_store_link_name(const sy_members *ms)
{
	if (ms->hop_count < 2)
		return NULL;
	sy_buf b = SY_BUF_INIT;
	sy_buf_printf(&b, "%s.%s->%s", ms->hops[0].relation, ms->hops[0].key, ms->hops[1].column);
	size_t len;
	return b.failed ? (sy_buf_free(&b), NULL) : sy_buf_steal(&b, &len);
}

/* ---- the catalog check ---------------------------------------------------------------- */

static const char relation_sql[] = "SELECT c.oid, c.relkind FROM pg_catalog.pg_class c"
                                   " WHERE c.oid = pg_catalog.to_regclass($1)::oid";

/* A column's type as the comparisons see it: a domain's base type, varchar as text. */
static const char column_sql[] =
        "WITH a AS (SELECT a.attrelid, a.attnum, a.atttypid, a.atttypmod, a.atthasdef,"
        "                  a.attidentity, a.attgenerated,"
        "                  CASE WHEN t.typbasetype = 0 THEN a.atttypid"
        "                  ELSE t.typbasetype END AS base"
        "             FROM pg_catalog.pg_attribute a"
        "             JOIN pg_catalog.pg_type t ON t.oid = a.atttypid"
        "            WHERE a.attrelid = $1::oid AND a.attname = $2 AND a.attnum > 0"
        "              AND NOT a.attisdropped)"
        " SELECT CASE WHEN a.base = 'pg_catalog.varchar'::pg_catalog.regtype"
        "             THEN 'pg_catalog.text'::pg_catalog.regtype ELSE a.base END::oid,"
        "        pg_catalog.format_type(a.atttypid, a.atttypmod),"
        "        EXISTS (SELECT 1 FROM pg_catalog.pg_index i"
        "                 WHERE i.indrelid = a.attrelid AND i.indisunique AND i.indnkeyatts = 1"
        "                   AND i.indkey[0] = a.attnum AND i.indpred IS NULL"
        "                   AND i.indexprs IS NULL),"
        "        a.base IN ('pg_catalog.text'::pg_catalog.regtype,"
        "                   'pg_catalog.varchar'::pg_catalog.regtype),"
        "        CASE WHEN a.attgenerated <> '' THEN 'is a generated column'"
        "             WHEN a.attidentity <> '' THEN 'is an identity column'"
        "             WHEN a.atthasdef THEN 'has a DEFAULT'"
        "             WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_type d"
        "                           WHERE d.oid = a.atttypid AND d.typdefaultbin IS NOT NULL)"
        "             THEN 'has its domain''s DEFAULT' ELSE '' END"
        "   FROM a";

typedef struct {
	bool found;
	char type[16];     /* the compared type's oid */
	char display[128]; /* format_type */
	bool unique, text;
	char filled[32]; /* how an insert that leaves the column out fills it; "" when null */
} column_info;

/* relation's oid into oid; SY_STORE_INVALID naming part when it is missing or no table. */
static sy_store_status find_relation(PGconn *c, const sy_table *t, const char *part,
                                     const char *relation, char oid[16], sy_error *err)
{
	sy_store_status st;
	char *quoted = sy_store_quote_relation(c, relation, err);
	if (!quoted)
		return SY_STORE_INVALID;
	const char *p[] = {quoted};
	PGresult *r = sy_store_exec(c, relation_sql, 1, p, PGRES_TUPLES_OK, "relation lookup", NULL,
	                            &st, err);
	sy_free(quoted);
	if (!r)
		return st;
	if (PQntuples(r) != 1) {
		PQclear(r);
		return sy_store_fail(err, SY_STORE_INVALID,
		                     "table \"%s\": %s.relation: relation %s does not exist",
		                     t->table_id, part, relation);
	}
	char kind = PQgetvalue(r, 0, 1)[0];
	snprintf(oid, 16, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	if (kind != 'r' && kind != 'p')
		return sy_store_fail(err, SY_STORE_INVALID,
		                     "table \"%s\": %s.relation: relation %s is not a table "
		                     "(relkind '%c')",
		                     t->table_id, part, relation, kind);
	return SY_STORE_OK;
}

/* column of the relation oid (named relation in messages); SY_STORE_INVALID naming part
 * when it does not exist. */
static sy_store_status find_column(PGconn *c, const sy_table *t, const char *part, const char *oid,
                                   const char *relation, const char *column, column_info *out,
                                   sy_error *err)
{
	sy_store_status st;
	const char *p[] = {oid, column};
	PGresult *r = sy_store_exec(c, column_sql, 2, p, PGRES_TUPLES_OK, "column lookup", NULL,
	                            &st, err);
	if (!r)
		return st;
	memset(out, 0, sizeof *out);
	out->found = PQntuples(r) == 1;
	if (out->found) {
		snprintf(out->type, sizeof out->type, "%s", PQgetvalue(r, 0, 0));
		snprintf(out->display, sizeof out->display, "%s", PQgetvalue(r, 0, 1));
		out->unique = strcmp(PQgetvalue(r, 0, 2), "t") == 0;
		out->text = strcmp(PQgetvalue(r, 0, 3), "t") == 0;
		snprintf(out->filled, sizeof out->filled, "%s", PQgetvalue(r, 0, 4));
	}
	PQclear(r);
	if (!out->found)
		return sy_store_fail(err, SY_STORE_INVALID,
		                     "table \"%s\": %s: column \"%s\" does not exist in %s",
		                     t->table_id, part, column, relation);
	return SY_STORE_OK;
}

/* A relation reached a second time on the path is a cycle. */
static sy_store_status check_cycle(const sy_table *t, const char *part, const char *relation,
                                   char (*seen)[16], size_t *nseen, sy_error *err)
{
	for (size_t i = 0; i < *nseen; i++)
		if (strcmp(seen[i], seen[*nseen]) == 0)
			return sy_store_fail(err, SY_STORE_INVALID,
			                     "table \"%s\": %s.relation: cycle: relation %s is "
			                     "already on the membership path",
			                     t->table_id, part, relation);
	(*nseen)++;
	return SY_STORE_OK;
}

sy_store_status sy_store_scopes_check(PGconn *c, const sy_table *t, const char *oid, sy_error *err)
{
	const sy_members *ms = t->members;
	if (!ms)
		return SY_STORE_OK;
	char seen[4][16];
	size_t nseen = 1;
	snprintf(seen[0], sizeof seen[0], "%s", oid);
	const char *from_oid = oid, *from_rel = t->relation;
	column_info key = {0};
	char part[64], sub[80];
	sy_store_status st;
	for (size_t h = 0; h < ms->hop_count && h < 2; h++) {
		const sy_scope_hop *hop = &ms->hops[h];
		snprintf(part, sizeof part, "policy.members.hops[%zu]", h);
		if ((st = find_relation(c, t, part, hop->relation, seen[nseen], err)) !=
		            SY_STORE_OK ||
		    (st = check_cycle(t, part, hop->relation, seen, &nseen, err)) != SY_STORE_OK)
			return st;
		column_info col;
		snprintf(sub, sizeof sub, "%s.column", part);
		if ((st = find_column(c, t, sub, from_oid, from_rel, hop->column, &col, err)) !=
		    SY_STORE_OK)
			return st;
		/* A pushed insert that leaves hop 1's column out would put the row into a scope
		 * key the push never saw (doc/protocol.md "Membership scopes in a push"). */
		if (h == 0 && col.filled[0] && t->write != SY_POLICY_NONE)
			return sy_store_fail(err, SY_STORE_INVALID,
			                     "table \"%s\": %s: column \"%s\" of %s %s: an insert "
			                     "that leaves it "
			                     "out would put the row into a scope no push checked; "
			                     "make it a column "
			                     "without a default (ALTER TABLE ... ALTER COLUMN ... "
			                     "DROP DEFAULT) and "
			                     "let clients write it",
			                     t->table_id, sub, hop->column, from_rel, col.filled);
		snprintf(sub, sizeof sub, "%s.key", part);
		if ((st = find_column(c, t, sub, seen[nseen - 1], hop->relation, hop->key, &key,
		                      err)) != SY_STORE_OK)
			return st;
		if (!key.unique)
			return sy_store_fail(err, SY_STORE_INVALID,
			                     "table \"%s\": %s: column \"%s\" of %s is neither its "
			                     "primary key nor a column with a unique index",
			                     t->table_id, sub, hop->key, hop->relation);
		if (strcmp(col.type, key.type) != 0)
			return sy_store_fail(
			        err, SY_STORE_INVALID,
			        "table \"%s\": %s.column: column \"%s\" of %s is %s, but "
			        "its key \"%s\" of %s is %s",
			        t->table_id, part, hop->column, from_rel, col.display, hop->key,
			        hop->relation, key.display);
		from_oid = seen[nseen - 1];
		from_rel = hop->relation;
	}
	const char *last_key = ms->hops[ms->hop_count - 1].key;
	if ((st = find_relation(c, t, "policy.members", ms->relation, seen[nseen], err)) !=
	            SY_STORE_OK ||
	    (st = check_cycle(t, "policy.members", ms->relation, seen, &nseen, err)) != SY_STORE_OK)
		return st;
	column_info match, user;
	if ((st = find_column(c, t, "policy.members.match", seen[nseen - 1], ms->relation,
	                      ms->match, &match, err)) != SY_STORE_OK)
		return st;
	if (strcmp(match.type, key.type) != 0)
		return sy_store_fail(
		        err, SY_STORE_INVALID,
		        "table \"%s\": policy.members.match: column \"%s\" of %s is %s, "
		        "but the scope key (\"%s\" of %s) is %s",
		        t->table_id, ms->match, ms->relation, match.display, last_key, from_rel,
		        key.display);
	if ((st = find_column(c, t, "policy.members.user", seen[nseen - 1], ms->relation, ms->user,
	                      &user, err)) != SY_STORE_OK)
		return st;
	if (!user.text)
		return sy_store_fail(
		        err, SY_STORE_INVALID,
		        "table \"%s\": policy.members.user: column \"%s\" of %s is %s, "
		        "not a text (user ids are text)",
		        t->table_id, ms->user, ms->relation, user.display);
	return SY_STORE_OK;
}

/* ---- the triggers and the mirror ------------------------------------------------------ */

/* One scope or link a relation's trigger mirrors. */
typedef struct {
	char oid[16];
	const char *relation; /* as written */
	bool member;
	char *name;
	const char *c1, *c2; /* match and user, or key and the column it reads */
	bool seeded;         /* the trigger mirrored it before this publish */
} scope_group;

typedef struct {
	scope_group *g;
	size_t n, cap;
} group_list;

static void groups_free(group_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		sy_free(l->g[i].name);
	sy_free(l->g);
}

/* Adds a group (name taken over) unless the same relation has it already. */
static sy_store_status group_add(PGconn *c, const sy_table *t, group_list *l, const char *part,
                                 const char *relation, bool member, char *name, const char *c1,
                                 const char *c2, sy_error *err)
{
	if (!name)
		return sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	char oid[16];
	sy_store_status st = find_relation(c, t, part, relation, oid, err);
	for (size_t i = 0; st == SY_STORE_OK && i < l->n; i++)
		if (strcmp(l->g[i].oid, oid) == 0 && l->g[i].member == member &&
		    strcmp(l->g[i].name, name) == 0) {
			sy_free(name);
			return SY_STORE_OK;
		}
	if (st == SY_STORE_OK && l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		scope_group *g = sy_realloc(l->g, cap * sizeof *g);
		if (!g)
			st = sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
		else {
			l->g = g;
			l->cap = cap;
		}
	}
	if (st != SY_STORE_OK) {
		sy_free(name);
		return st;
	}
	scope_group *g = &l->g[l->n++];
	memset(g, 0, sizeof *g);
	snprintf(g->oid, sizeof g->oid, "%s", oid);
	g->relation = relation;
	g->member = member;
	g->name = name;
	g->c1 = c1;
	g->c2 = c2;
	return SY_STORE_OK;
}

static sy_store_status collect(PGconn *c, const sy_manifest *m, group_list *l, sy_error *err)
{
	sy_store_status st = SY_STORE_OK;
	for (size_t i = 0; i < m->table_count && st == SY_STORE_OK; i++) {
		const sy_table *t = &m->tables[i];
		const sy_members *ms = t->members;
		if (!ms)
			continue;
		st = group_add(c, t, l, "policy.members", ms->relation, true,
		               sy_store_scope_name(ms), ms->match, ms->user, err);
		if (st == SY_STORE_OK && ms->hop_count > 1)
			st = group_add(c, t, l, "policy.members.hops[0]", ms->hops[0].relation,
			               false, sy_store_link_name(ms), ms->hops[0].key,
			               ms->hops[1].column, err);
	}
	return st;
}

/* Marks the groups the relation's current trigger (its arguments, bytea text) mirrors. */
static sy_store_status mark_seeded(group_list *l, const char *oid, const char *tgargs,
                                   sy_error *err)
{
	size_t n = 0;
	unsigned char *args = PQunescapeBytea((const unsigned char *)tgargs, &n);
	if (!args)
		return sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	const char *a[4];
	size_t k = 0, at = 0;
	while (at < n) {
		const char *s = (const char *)args + at;
		size_t len = strnlen(s, n - at);
		a[k++] = s;
		at += len + 1;
		if (k < 4)
			continue;
		k = 0;
		for (size_t i = 0; i < l->n; i++)
			if (strcmp(l->g[i].oid, oid) == 0 &&
			    strcmp(a[0], l->g[i].member ? "member" : "link") == 0 &&
			    strcmp(a[1], l->g[i].name) == 0 && strcmp(a[2], l->g[i].c1) == 0 &&
			    strcmp(a[3], l->g[i].c2) == 0)
				l->g[i].seeded = true;
	}
	PQfreemem(args);
	return SY_STORE_OK;
}

/* Seeds one scope or link's mirror from its live relation (the relation is locked). */
static sy_store_status seed(PGconn *c, const scope_group *g, sy_store_note_fn note, void *arg,
                            sy_error *err)
{
	sy_store_status st;
	char *rel = sy_store_quote_relation(c, g->relation, err);
	char *c1 = rel ? sy_store_quote_ident(c, g->c1, err) : NULL;
	char *c2 = c1 ? sy_store_quote_ident(c, g->c2, err) : NULL;
	if (!c2) {
		sy_free(rel);
		sy_free(c1);
		return SY_STORE_INVALID;
	}
	sy_buf b = SY_BUF_INIT;
	if (g->member)
		sy_buf_printf(&b,
		              "INSERT INTO synchro.scope_members (scope, key, user_id)"
		              " SELECT DISTINCT $1::text, m.%s::text, m.%s::text FROM %s m"
		              " WHERE m.%s IS NOT NULL AND m.%s IS NOT NULL",
		              c1, c2, rel, c1, c2);
	else
		sy_buf_printf(&b,
		              "INSERT INTO synchro.scope_links (link, key, target)"
		              " SELECT $1::text, h.%s::text, h.%s::text FROM %s h"
		              " WHERE h.%s IS NOT NULL",
		              c1, c2, rel, c1);
	sy_free(rel);
	sy_free(c1);
	sy_free(c2);
	if (b.failed) {
		sy_buf_free(&b);
		return sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	}
	const char *p[] = {g->name};
	PGresult *r =
	        sy_store_exec(c,
	                      g->member ? "DELETE FROM synchro.scope_members WHERE scope = $1"
	                                : "DELETE FROM synchro.scope_links WHERE link = $1",
	                      1, p, PGRES_COMMAND_OK, "clearing a scope's mirror", NULL, &st, err);
	PQclear(r);
	if (st == SY_STORE_OK) {
		r = sy_store_exec(c, b.data, 1, p, PGRES_COMMAND_OK, "seeding a scope's mirror",
		                  NULL, &st, err);
		if (r) {
			char line[SY_ERROR_MESSAGE_MAX];
			snprintf(line, sizeof line, "%s %s: %s %s seeded",
			         g->member ? "scope" : "link", g->name, PQcmdTuples(r),
			         g->member ? "memberships" : "links");
			if (note)
				note(arg, line);
		}
		PQclear(r);
	}
	sy_buf_free(&b);
	return st;
}

/* Installs the trigger of the relation oid with the arguments of its groups (none: drops). */
static sy_store_status install_trigger(PGconn *c, const group_list *l, const char *oid,
                                       sy_error *err)
{
	sy_buf a = SY_BUF_INIT;
	sy_buf_putc(&a, '{');
	for (size_t i = 0; i < l->n; i++) {
		const scope_group *g = &l->g[i];
		if (strcmp(g->oid, oid) != 0)
			continue;
		sy_store_array_elem(&a, a.len == 1, g->member ? "member" : "link");
		sy_store_array_elem(&a, false, g->name);
		sy_store_array_elem(&a, false, g->c1);
		sy_store_array_elem(&a, false, g->c2);
	}
	sy_buf_putc(&a, '}');
	if (a.failed) {
		sy_buf_free(&a);
		return sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	}
	sy_store_status st;
	const char *p[] = {oid, a.data};
	PGresult *r =
	        sy_store_exec(c,
	                      "SELECT synchro.install_scope_trigger("
	                      "$1::oid::pg_catalog.regclass, $2::text[])",
	                      2, p, PGRES_TUPLES_OK, "installing a scope trigger", NULL, &st, err);
	PQclear(r);
	sy_buf_free(&a);
	return st;
}

/*
 * Who reads a relation of a membership path: the responders (the live check of pull and
 * rebuild), walsync (the rows of a scope that a membership enters or leaves) and the push.
 */
#define ROLES "synchro_app, synchro_walsync, synchro_owner"

static sy_store_status grant_reads(PGconn *c, const char *relation, sy_error *err)
{
	char *rel = sy_store_quote_relation(c, relation, err);
	if (!rel)
		return SY_STORE_INVALID;
	sy_store_status st;
	const char *p[] = {rel};
	PGresult *r =
	        sy_store_exec(c,
	                      "SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_class c"
	                      "  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
	                      " WHERE c.oid = pg_catalog.to_regclass($1)::oid",
	                      1, p, PGRES_TUPLES_OK, "schema lookup", NULL, &st, err);
	sy_buf b = SY_BUF_INIT, t = SY_BUF_INIT;
	if (r && PQntuples(r) == 1) {
		sy_buf_printf(&b, "GRANT USAGE ON SCHEMA %s TO %s", PQgetvalue(r, 0, 0), ROLES);
		sy_buf_printf(&t, "GRANT SELECT ON TABLE %s TO %s", rel, ROLES);
	}
	PQclear(r);
	sy_free(rel);
	if (st == SY_STORE_OK && (b.failed || t.failed))
		st = sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	if (st == SY_STORE_OK && b.len > 0)
		st = sy_store_command(c, b.data, "grants", err);
	if (st == SY_STORE_OK && t.len > 0)
		st = sy_store_command(c, t.data, "grants", err);
	sy_buf_free(&b);
	sy_buf_free(&t);
	return st;
}

/*
 * The push locks the membership rows it reads FOR KEY SHARE (two hops: the hop-1 row too),
 * as synchro_owner; a row lock needs UPDATE on a column besides SELECT. Publish grants
 * UPDATE on the one column it locks by (the membership's match, the hop-1 key) when
 * synchro_owner lacks it and the publisher may grant it; else it refuses, naming the GRANT
 * to run.
 */
static sy_store_status grant_lock(PGconn *c, const sy_table *t, const char *part,
                                  const char *relation, const char *column, sy_error *err)
{
	char *rel = sy_store_quote_relation(c, relation, err);
	if (!rel)
		return SY_STORE_INVALID;
	char *col = sy_store_quote_ident(c, column, err);
	if (!col) {
		sy_free(rel);
		return SY_STORE_INVALID;
	}
	sy_store_status st;
	const char *p[] = {rel, column};
	PGresult *r = sy_store_exec(
	        c,
	        "SELECT pg_catalog.has_table_privilege('synchro_owner', $1, 'SELECT')"
	        "   AND pg_catalog.has_column_privilege('synchro_owner', $1, $2, 'UPDATE'),"
	        "       pg_catalog.has_column_privilege($1, $2, 'UPDATE WITH GRANT OPTION')",
	        2, p, PGRES_TUPLES_OK, "privilege lookup", NULL, &st, err);
	bool has = r && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	bool may = r && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 1), "t") == 0;
	PQclear(r);
	sy_buf b = SY_BUF_INIT;
	sy_buf_printf(&b, "GRANT UPDATE (%s) ON TABLE %s TO synchro_owner", col, rel);
	if (st == SY_STORE_OK && b.failed)
		st = sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	else if (st == SY_STORE_OK && !has && may)
		st = sy_store_command(c, b.data, "grants", err);
	else if (st == SY_STORE_OK && !has)
		st = sy_store_fail(err, SY_STORE_INVALID,
		                   "table \"%s\": %s: synchro_owner cannot lock the rows of %s FOR "
		                   "KEY SHARE as the push does, and this role may not grant it: run "
		                   "GRANT SELECT, UPDATE (%s) ON TABLE %s TO synchro_owner",
		                   t->table_id, part, relation, col, rel);
	sy_buf_free(&b);
	sy_free(col);
	sy_free(rel);
	return st;
}

static bool listed_before(const group_list *l, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (strcmp(l->g[j].oid, l->g[i].oid) == 0)
			return true;
	return false;
}

sy_store_status sy_store_scopes_install(PGconn *c, const sy_manifest *m, sy_store_note_fn note,
                                        void *arg, sy_error *err)
{
	group_list l = {0};
	sy_store_status st = collect(c, m, &l, err);
	/* No write of a membership or hop relation between the seed and the trigger. */
	for (size_t i = 0; i < l.n && st == SY_STORE_OK; i++) {
		if (listed_before(&l, i))
			continue;
		char *rel = sy_store_quote_relation(c, l.g[i].relation, err);
		sy_buf b = SY_BUF_INIT;
		if (!rel) {
			st = SY_STORE_INVALID;
			break;
		}
		sy_buf_printf(&b, "LOCK TABLE %s IN SHARE MODE", rel);
		sy_free(rel);
		st = b.failed ? sy_store_fail(err, SY_STORE_NOMEM, "out of memory")
		              : sy_store_command(c, b.data, "locking a membership relation", err);
		sy_buf_free(&b);
	}
	PGresult *r = NULL;
	if (st == SY_STORE_OK)
		r = sy_store_exec(c,
		                  "SELECT t.tgrelid, t.tgargs FROM pg_catalog.pg_trigger t"
		                  " WHERE t.tgname = 'synchro_scope' AND NOT t.tgisinternal",
		                  0, NULL, PGRES_TUPLES_OK, "scope trigger lookup", NULL, &st, err);
	for (int i = 0; r && i < PQntuples(r) && st == SY_STORE_OK; i++) {
		const char *oid = PQgetvalue(r, i, 0);
		bool named = false;
		for (size_t j = 0; j < l.n; j++)
			named = named || strcmp(l.g[j].oid, oid) == 0;
		if (named)
			st = mark_seeded(&l, oid, PQgetvalue(r, i, 1), err);
		else
			st = install_trigger(c, &l, oid, err); /* no group: dropped */
	}
	PQclear(r);
	for (size_t i = 0; i < l.n && st == SY_STORE_OK; i++)
		if (!listed_before(&l, i))
			st = install_trigger(c, &l, l.g[i].oid, err);
	for (size_t i = 0; i < l.n && st == SY_STORE_OK; i++)
		if (!l.g[i].seeded)
			st = seed(c, &l.g[i], note, arg, err);
	for (size_t i = 0; i < l.n && st == SY_STORE_OK; i++)
		if (!listed_before(&l, i))
			st = grant_reads(c, l.g[i].relation, err);
	/* The one-hop relation of a path has no trigger, and the members table itself. */
	for (size_t i = 0; i < m->table_count && st == SY_STORE_OK; i++)
		if (m->tables[i].members) {
			const sy_members *ms = m->tables[i].members;
			st = grant_reads(c, ms->hops[0].relation, err);
			if (st == SY_STORE_OK)
				st = grant_reads(c, m->tables[i].relation, err);
			if (st == SY_STORE_OK)
				st = grant_lock(c, &m->tables[i], "policy.members", ms->relation,
				                ms->match, err);
			if (st == SY_STORE_OK && ms->hop_count == 2)
				st = grant_lock(c, &m->tables[i], "policy.members.hops[0]",
				                ms->hops[0].relation, ms->hops[0].key, err);
		}
	groups_free(&l);
	return st;
}

/* One scope or link seeded again, under a savepoint: a path broken since the publish (a
 * relation or column gone) keeps its mirror, and its table's pulls fail as before. */
static sy_store_status reseed_one(PGconn *c, const sy_table *t, const char *part,
                                  const char *relation, bool member, char *name, const char *c1,
                                  const char *c2, sy_error *err)
{
	sy_store_status st = sy_store_command(c, "SAVEPOINT sy_reseed", "seed a scope again", err);
	if (st != SY_STORE_OK) {
		sy_free(name);
		return st;
	}
	group_list l = {0};
	sy_error e = {0};
	st = group_add(c, t, &l, part, relation, member, name, c1, c2, &e);
	if (st == SY_STORE_OK)
		st = seed(c, &l.g[0], NULL, NULL, &e);
	groups_free(&l);
	if (st == SY_STORE_NOMEM) {
		*err = e;
		return st;
	}
	return sy_store_command(c, st == SY_STORE_OK ? "RELEASE SAVEPOINT sy_reseed"
	                                             : "ROLLBACK TO SAVEPOINT sy_reseed",
	                        "seed a scope again", err);
}

sy_store_status sy_store_scopes_reseed(PGconn *c, const sy_manifest *m, sy_error *err)
{
	sy_store_status st = SY_STORE_OK;
	for (size_t i = 0; i < m->table_count && st == SY_STORE_OK; i++) {
		const sy_table *t = &m->tables[i];
		const sy_members *ms = t->members;
		if (!ms)
			continue;
		st = reseed_one(c, t, "policy.members", ms->relation, true, sy_store_scope_name(ms),
		                ms->match, ms->user, err);
		if (st == SY_STORE_OK && ms->hop_count > 1)
			st = reseed_one(c, t, "policy.members.hops[0]", ms->hops[0].relation, false,
			                sy_store_link_name(ms), ms->hops[0].key, ms->hops[1].column,
			                err);
	}
	return st;
}
