/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * migrate.c: synchroctl init and migrate: the contract's roles, and the numbered
 * migrations, each applied once.
 *
 * Layer: middle of src/store (doc/hacking.md).
 * Rules: doc/contract.md#database-roles (the roles).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/conn.h"
#include "store/migrate.h"
#include "synchro/alloc.h"

const char *const sy_store_roles[] = {"synchro_owner", "synchro_app", "synchro_walsync"};
const size_t sy_store_role_count = sizeof sy_store_roles / sizeof sy_store_roles[0];

/* Serializes concurrent runners (two synchroctl migrate, or init beside a migrate). */
static const char lock_sql[] = "SELECT pg_advisory_xact_lock(hashtext('synchro:migrate'))";

static void note_line(sy_store_note_fn note, void *arg, const char *line)
{
	if (note)
		note(arg, line);
}

static sy_store_status finish(PGconn *c, sy_store_status st)
{
	if (st != SY_STORE_OK)
		sy_store_rollback(c);
	return st;
}

sy_store_status sy_store_create_roles(PGconn *c, sy_store_note_fn note, void *arg, sy_error *err)
{
	sy_store_status st = sy_store_command(c, "BEGIN", "begin", err);
	if (st != SY_STORE_OK)
		return st;
	PGresult *r = sy_store_exec(c, lock_sql, 0, NULL, PGRES_TUPLES_OK, "lock", NULL, &st, err);
	PQclear(r);
	if (st != SY_STORE_OK)
		return finish(c, st);
	for (size_t i = 0; i < sy_store_role_count; i++) {
		const char *params[] = {sy_store_roles[i]};
		r = sy_store_exec(c, "SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1", 1,
		                  params, PGRES_TUPLES_OK, "role lookup", NULL, &st, err);
		if (!r)
			return finish(c, st);
		bool exists = PQntuples(r) > 0;
		PQclear(r);
		if (exists)
			continue;
		char *q = sy_store_quote_ident(c, sy_store_roles[i], err);
		if (!q)
			return finish(c, SY_STORE_FAILED);
		char sql[200];
		snprintf(sql, sizeof sql, "CREATE ROLE %s NOLOGIN", q);
		sy_free(q);
		char what[100];
		snprintf(what, sizeof what, "create role %s", sy_store_roles[i]);
		st = sy_store_command(c, sql, what, err);
		if (st != SY_STORE_OK)
			return finish(c, st);
		char line[100];
		snprintf(line, sizeof line, "created role %s", sy_store_roles[i]);
		note_line(note, arg, line);
	}
	return finish(c, sy_store_command(c, "COMMIT", "commit", err));
}

/* Whether synchro.migrations exists (it does not before migration 1). */
static sy_store_status have_table(PGconn *c, bool *have, sy_error *err)
{
	sy_store_status st;
	PGresult *r = sy_store_exec(c, "SELECT to_regclass('synchro.migrations') IS NOT NULL", 0,
	                            NULL, PGRES_TUPLES_OK, "migrations lookup", NULL, &st, err);
	if (!r)
		return st;
	*have = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return SY_STORE_OK;
}

/* Refuses a database that went further than, or elsewhere than, this program's list. */
static sy_store_status check_recorded(PGconn *c, const sy_sql_migration *list, size_t count,
                                      int *max_version, sy_error *err)
{
	bool have = false;
	sy_store_status st = have_table(c, &have, err);
	*max_version = 0;
	if (st != SY_STORE_OK || !have)
		return st;
	PGresult *r =
	        sy_store_exec(c, "SELECT version, name FROM synchro.migrations ORDER BY version", 0,
	                      NULL, PGRES_TUPLES_OK, "migrations lookup", NULL, &st, err);
	if (!r)
		return st;
	for (int i = 0; i < PQntuples(r); i++) {
		int v = atoi(PQgetvalue(r, i, 0));
		const char *name = PQgetvalue(r, i, 1);
		const sy_sql_migration *m = NULL;
		for (size_t j = 0; j < count; j++)
			if (list[j].version == v)
				m = &list[j];
		if (!m) {
			st = sy_store_fail(
			        err, SY_STORE_FAILED,
			        "the database records migration %d (%.60s), which this program "
			        "does not know: it is older than the database",
			        v, name);
			break;
		}
		if (strcmp(m->name, name) != 0) {
			st = sy_store_fail(
			        err, SY_STORE_FAILED,
			        "the database records migration %d as '%.60s', this program "
			        "calls it '%s'",
			        v, name, m->name);
			break;
		}
		if (v > *max_version)
			*max_version = v;
	}
	PQclear(r);
	return st;
}

/* "migration 2 (fences), line 14: <message>" from an error result of the migration's text. */
static sy_store_status migration_error(PGconn *c, PGresult *r, const sy_sql_migration *m,
                                       sy_error *err)
{
	const char *primary = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *pos = r ? PQresultErrorField(r, PG_DIAG_STATEMENT_POSITION) : NULL;
	char where[40] = "";
	if (pos) {
		/* The position counts characters (not bytes) from 1 in the whole text. */
		long want = atol(pos), chars = 0, line = 1;
		for (const unsigned char *p = (const unsigned char *)m->sql; *p && chars < want - 1;
		     p++) {
			if ((*p & 0xC0) != 0x80)
				chars++;
			if (*p == '\n')
				line++;
		}
		snprintf(where, sizeof where, ", line %ld", line);
	}
	sy_store_status st = PQstatus(c) == CONNECTION_BAD ? SY_STORE_CONNECTION : SY_STORE_FAILED;
	sy_store_fail(err, st, "migration %d (%s)%s: %s", m->version, m->name, where,
	              primary ? primary : PQerrorMessage(c));
	return st;
}

static sy_store_status apply_one(PGconn *c, const sy_sql_migration *m, bool *applied, sy_error *err)
{
	*applied = false;
	sy_store_status st = sy_store_command(c, "BEGIN", "begin", err);
	if (st != SY_STORE_OK)
		return st;
	PGresult *r = sy_store_exec(c, lock_sql, 0, NULL, PGRES_TUPLES_OK, "lock", NULL, &st, err);
	PQclear(r);
	if (st != SY_STORE_OK)
		return finish(c, st);
	bool have = false;
	st = have_table(c, &have, err);
	if (st != SY_STORE_OK)
		return finish(c, st);
	char version[16];
	snprintf(version, sizeof version, "%d", m->version);
	const char *params[] = {version, m->name};
	if (have) {
		r = sy_store_exec(c, "SELECT 1 FROM synchro.migrations WHERE version = $1::int", 1,
		                  params, PGRES_TUPLES_OK, "migrations lookup", NULL, &st, err);
		if (!r)
			return finish(c, st);
		bool done = PQntuples(r) > 0;
		PQclear(r);
		if (done) /* a concurrent runner applied it after our first look */
			return finish(c, sy_store_command(c, "COMMIT", "commit", err));
	}
	/* A migration is several statements: the simple query protocol runs them in our
	 * transaction. */
	r = PQexec(c, m->sql);
	ExecStatusType rs = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
	if (rs != PGRES_COMMAND_OK && rs != PGRES_TUPLES_OK && rs != PGRES_EMPTY_QUERY) {
		st = migration_error(c, r, m, err);
		PQclear(r);
		return finish(c, st);
	}
	PQclear(r);
	r = sy_store_exec(c, "INSERT INTO synchro.migrations (version, name) VALUES ($1::int, $2)",
	                  2, params, PGRES_COMMAND_OK, "recording the migration", NULL, &st, err);
	PQclear(r);
	if (st != SY_STORE_OK)
		return finish(c, st);
	st = finish(c, sy_store_command(c, "COMMIT", "commit", err));
	*applied = st == SY_STORE_OK;
	return st;
}

/* Whether migration m creates functions of the server module (AS 'synchro', 'symbol'). */
static bool needs_module(const sy_sql_migration *m)
{
	return strstr(m->sql, "AS 'synchro',") != NULL;
}

/* Whether migration m refuses a module older than itself (synchro.module_abi() < N), as
 * those that create its functions do and some that only rely on what it writes. */
static bool checks_module_abi(const sy_sql_migration *m)
{
	return needs_module(m) || strstr(m->sql, "synchro.module_abi() <") != NULL;
}

/* The first migration that declares synchro.module_abi(): a module older than it lacks the
 * symbol. */
#define FIRST_ABI_MIGRATION 18

/*
 * The module loads: is it new enough for the newest migration still to apply that declares
 * its functions or checks its level? From migration 18 on, the module answers the newest
 * migration it serves (synchro_module_abi) and each such migration refuses an older one, but
 * only when its turn comes, after the earlier ones were applied. This asks first, through a
 * function created in this session's temporary schema inside a transaction that is rolled
 * back.
 */
static sy_store_status check_module_abi(PGconn *c, const sy_sql_migration *list, size_t count,
                                        int max_version, int major, sy_error *err)
{
	const sy_sql_migration *hi = NULL;
	for (size_t i = 0; i < count; i++)
		if (list[i].version > max_version && list[i].version >= FIRST_ABI_MIGRATION &&
		    checks_module_abi(&list[i]) && (!hi || list[i].version > hi->version))
			hi = &list[i];
	if (!hi)
		return SY_STORE_OK;
	sy_store_status st = sy_store_command(c, "BEGIN", "begin", err);
	if (st != SY_STORE_OK)
		return st;
	PGresult *r = PQexec(c, "CREATE FUNCTION pg_temp.synchro_module_abi() RETURNS integer"
	                        " LANGUAGE C STRICT AS 'synchro', 'synchro_module_abi'");
	int abi = -1; /* -1: the module has no such symbol */
	bool created = r && PQresultStatus(r) == PGRES_COMMAND_OK;
	const char *code = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	if (!created && !(code && strcmp(code, "42883") == 0)) { /* undefined_function */
		st = PQstatus(c) == CONNECTION_BAD ? SY_STORE_CONNECTION : SY_STORE_FAILED;
		sy_store_fail(err, st, "asking the server module which migrations it serves: %.200s",
		              r ? PQresultErrorMessage(r) : PQerrorMessage(c));
		PQclear(r);
		return finish(c, st);
	}
	PQclear(r);
	if (created) {
		r = sy_store_exec(c, "SELECT pg_temp.synchro_module_abi()", 0, NULL, PGRES_TUPLES_OK,
		                  "module level", NULL, &st, err);
		if (!r)
			return finish(c, st);
		abi = PQntuples(r) == 1 ? atoi(PQgetvalue(r, 0, 0)) : 0;
		PQclear(r);
	}
	st = sy_store_command(c, "ROLLBACK", "rollback", err);
	if (st != SY_STORE_OK || abi >= hi->version)
		return st;
	char serves[64];
	if (abi < 0)
		snprintf(serves, sizeof serves, "is older than migration %d", FIRST_ABI_MIGRATION);
	else
		snprintf(serves, sizeof serves, "serves migrations up to %d", abi);
	return sy_store_fail(err, SY_STORE_FAILED,
	                     "migration %d (%s) needs a newer server module: the installed synchro "
	                     "module %s; install postgresql-%d-synchro of this release first; "
	                     "nothing was applied",
	                     hi->version, hi->name, serves, major);
}

/*
 * Before the first migration is applied: when one still to apply (version above max_version)
 * creates C functions of the server module, the caller must be a superuser and this server
 * must load synchro.so (present along dynamic_library_path and built for its major). Else
 * the earlier migrations would be applied and the run would stop half way at that one: this
 * refuses first, and nothing is changed. LOAD reads the module into this session only.
 */
static sy_store_status check_module(PGconn *c, const sy_sql_migration *list, size_t count,
                                    int max_version, sy_error *err)
{
	const sy_sql_migration *m = NULL;
	for (size_t i = 0; i < count && !m; i++)
		if (list[i].version > max_version && needs_module(&list[i]))
			m = &list[i];
	if (!m)
		return SY_STORE_OK;
	sy_store_status st;
	PGresult *r = sy_store_exec(
	        c,
	        "SELECT r.rolsuper, current_setting('server_version_num')::int / 10000"
	        " FROM pg_catalog.pg_roles r WHERE r.rolname = current_user",
	        0, NULL, PGRES_TUPLES_OK, "superuser lookup", NULL, &st, err);
	if (!r)
		return st;
	bool super = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	int major = PQntuples(r) == 1 ? atoi(PQgetvalue(r, 0, 1)) : 0;
	PQclear(r);
	if (!super)
		return sy_store_fail(err, SY_STORE_FAILED,
		                     "migration %d (%s) creates C functions of the server module "
		                     "and must run as a superuser; nothing was applied",
		                     m->version, m->name);
	r = PQexec(c, "LOAD 'synchro'");
	if (r && PQresultStatus(r) == PGRES_COMMAND_OK) {
		PQclear(r);
		return check_module_abi(c, list, count, max_version, major, err);
	}
	const char *primary = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *detail = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL) : NULL;
	st = PQstatus(c) == CONNECTION_BAD ? SY_STORE_CONNECTION : SY_STORE_FAILED;
	/* The reason last: a message longer than SY_ERROR_MESSAGE_MAX loses its tail. */
	sy_store_fail(err, st,
	              "migration %d (%s) needs the server module: install postgresql-%d-synchro, "
	              "the module built for this PostgreSQL %d server; nothing was applied "
	              "(%.200s%s%.200s)",
	              m->version, m->name, major, major, primary ? primary : PQerrorMessage(c),
	              detail ? " " : "", detail ? detail : "");
	PQclear(r);
	return st;
}

/*
 * The search_path synchro.synchro_push runs with (migrations 13 and 18). It keeps public:
 * the application's own triggers on synced tables fire inside the push, as synchro_owner,
 * and may name their objects without a schema. The module itself names every schema.
 */
static const char push_search_path[] = "search_path=pg_catalog, public, pg_temp";

/*
 * Who may create objects in a schema on the search_path of a function of schema synchro
 * that runs as its owner (SECURITY DEFINER): the one above, before migration 13 is applied,
 * and every one installed. A function or operator made there would run as synchro_owner.
 * Refused: PUBLIC, and any role granted CREATE that is not a superuser, not the schema's
 * owner (nor a member of it) and not a member of synchro_owner; and a member of
 * synchro_app or synchro_walsync that may create there by any route (owning the schema).
 * One row per schema: its name, a function, whether PUBLIC may, and the roles.
 */
static const char search_path_sql[] =
        "WITH settings AS ("
        "  SELECT $1::text AS setting, 'synchro.synchro_push'::text AS fn"
        "  UNION"
        "  SELECT c, 'synchro.' || f.proname FROM pg_catalog.pg_proc f"
        "    JOIN pg_catalog.pg_namespace n ON n.oid = f.pronamespace"
        "   CROSS JOIN LATERAL pg_catalog.unnest(f.proconfig) c"
        "   WHERE n.nspname = 'synchro' AND f.prosecdef AND c LIKE 'search_path=%'"
        "), path AS ("
        "  SELECT s.oid, s.nspname, s.nspowner,"
        "         COALESCE(s.nspacl, pg_catalog.acldefault('n', s.nspowner)) AS acl,"
        "         pg_catalog.min(st.fn) AS fn"
        "    FROM settings st"
        "   CROSS JOIN LATERAL pg_catalog.unnest(pg_catalog.string_to_array("
        "           pg_catalog.substr(st.setting, 13), ',')) AS p(name)"
        "    JOIN pg_catalog.pg_namespace s ON s.nspname = pg_catalog.btrim(p.name, ' \"')"
        "   GROUP BY s.oid, s.nspname, s.nspowner, s.nspacl"
        "), bad AS ("
        "  SELECT s.oid, 'PUBLIC'::text AS who FROM path s, pg_catalog.aclexplode(s.acl) a"
        "   WHERE a.grantee = 0 AND a.privilege_type = 'CREATE'"
        "  UNION"
        "  SELECT s.oid, r.rolname::text FROM path s, pg_catalog.aclexplode(s.acl) a"
        "    JOIN pg_catalog.pg_roles r ON r.oid = a.grantee"
        "   WHERE a.privilege_type = 'CREATE' AND NOT r.rolsuper"
        "     AND NOT pg_catalog.pg_has_role(r.oid, s.nspowner, 'MEMBER')"
        "     AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles o"
        "          WHERE o.rolname = 'synchro_owner'"
        "            AND pg_catalog.pg_has_role(r.oid, o.oid, 'MEMBER'))"
        "  UNION"
        "  SELECT s.oid, r.rolname::text FROM path s, pg_catalog.pg_roles r"
        "   WHERE NOT r.rolsuper AND pg_catalog.has_schema_privilege(r.oid, s.oid, 'CREATE')"
        "     AND EXISTS (SELECT 1 FROM pg_catalog.pg_roles t"
        "          WHERE t.rolname IN ('synchro_app', 'synchro_walsync')"
        "            AND pg_catalog.pg_has_role(r.oid, t.oid, 'MEMBER'))"
        ")"
        " SELECT s.nspname, s.fn, pg_catalog.bool_or(b.who = 'PUBLIC'),"
        "        pg_catalog.string_agg(b.who, ', ' ORDER BY b.who)"
        "   FROM bad b JOIN path s ON s.oid = b.oid"
        "  GROUP BY s.nspname, s.fn ORDER BY s.nspname";

/*
 * Refuses, before anything is applied, a database where someone besides the owners and
 * superusers may create objects in a schema that a function running as synchro_owner
 * resolves names in: such an object would run with synchro_owner's rights on every push.
 */
static sy_store_status check_search_path(PGconn *c, sy_error *err)
{
	sy_store_status st;
	const char *params[] = {push_search_path};
	PGresult *r = sy_store_exec(c, search_path_sql, 1, params, PGRES_TUPLES_OK,
	                            "search_path check", NULL, &st, err);
	if (!r)
		return st;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return SY_STORE_OK;
	}
	const char *schema = PQgetvalue(r, 0, 0);
	bool public = strcmp(PQgetvalue(r, 0, 2), "t") == 0;
	/* PUBLIC: every role may, and revoking it from PUBLIC is the fix. */
	const char *who = public ? "PUBLIC" : PQgetvalue(r, 0, 3);
	st = sy_store_fail(err, SY_STORE_FAILED,
	                   "%.60s may CREATE in schema %.60s, on the search_path of %.60s (it runs as "
	                   "synchro_owner): REVOKE CREATE ON SCHEMA %.60s FROM %.60s; nothing was "
	                   "applied",
	                   who, schema, PQgetvalue(r, 0, 1), schema, who);
	PQclear(r);
	return st;
}

sy_store_status sy_store_migrate_list(PGconn *c, const sy_sql_migration *list, size_t count,
                                      sy_store_note_fn note, void *arg, size_t *applied,
                                      sy_error *err)
{
	int max_version;
	size_t n = 0;
	sy_store_status st = check_recorded(c, list, count, &max_version, err);
	if (st == SY_STORE_OK)
		st = check_search_path(c, err);
	if (st == SY_STORE_OK)
		st = check_module(c, list, count, max_version, err);
	for (size_t i = 0; st == SY_STORE_OK && i < count; i++) {
		bool done = false;
		st = apply_one(c, &list[i], &done, err);
		if (done) {
			char line[200];
			snprintf(line, sizeof line, "applied migration %d (%s)", list[i].version,
			         list[i].name);
			note_line(note, arg, line);
			n++;
		}
	}
	if (applied)
		*applied = n;
	return st;
}

sy_store_status sy_store_migrate(PGconn *c, sy_store_note_fn note, void *arg, size_t *applied,
                                 sy_error *err)
{
	return sy_store_migrate_list(c, sy_sql_migrations, sy_sql_migration_count, note, arg,
	                             applied, err);
}

sy_store_status sy_store_migrate_preflight(PGconn *c, sy_error *err)
{
	int max_version;
	sy_store_status st =
	        check_recorded(c, sy_sql_migrations, sy_sql_migration_count, &max_version, err);
	if (st == SY_STORE_OK)
		st = check_search_path(c, err);
	if (st == SY_STORE_OK)
		st = check_module(c, sy_sql_migrations, sy_sql_migration_count, max_version, err);
	return st;
}

sy_store_status sy_store_migration_state(PGconn *c, int *version, size_t *pending, sy_error *err)
{
	bool have = false;
	sy_store_status st = have_table(c, &have, err);
	*version = 0;
	if (pending)
		*pending = sy_sql_migration_count;
	if (st != SY_STORE_OK || !have)
		return st;
	PGresult *r = sy_store_exec(c, "SELECT version FROM synchro.migrations", 0, NULL,
	                            PGRES_TUPLES_OK, "migrations lookup", NULL, &st, err);
	if (!r)
		return st;
	size_t known = 0;
	for (int i = 0; i < PQntuples(r); i++) {
		int v = atoi(PQgetvalue(r, i, 0));
		if (v > *version)
			*version = v;
		for (size_t j = 0; j < sy_sql_migration_count; j++)
			if (sy_sql_migrations[j].version == v)
				known++;
	}
	PQclear(r);
	if (pending)
		*pending = sy_sql_migration_count - known;
	return SY_STORE_OK;
}
