/* SPDX-License-Identifier: BSD-2-Clause */
/* The database contract (sql/migrations) against a real PostgreSQL: version fences and their
 * logical messages, the least grants of each role, ledger immutability, irreversible retirement.
 * This file: the fixture, fences and messages as the suite reads them, the migrations and
 * install.sql, and the suite's main (its tests live in test_sql_fences.c and test_sql_roles.c). */
#include "config.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pgtest.h"
#include "store/migrations.h"
#include "testutil.h"
#include "sql_suite.h"

PGconn *db; /* the fixture's superuser */

static void copy_value(char *dst, size_t size, const PGresult *r, int row, int col)
{
	snprintf(dst, size, "%s", PQgetisnull(r, row, col) ? "<null>" : PQgetvalue(r, row, col));
}

fence get_fence(const char *table_id, const char *pk)
{
	fence f;
	memset(&f, 0, sizeof f);
	const char *p[] = {table_id, pk};
	PGresult *r = pgt_query(db,
	                        "SELECT state, version, mutation_id, client_id, user_id, source_xid"
	                        "  FROM synchro.row_fences WHERE table_id = $1 AND pk = $2",
	                        2, p);
	if (r != NULL && PQntuples(r) == 1) {
		f.found = true;
		copy_value(f.state, sizeof f.state, r, 0, 0);
		copy_value(f.version, sizeof f.version, r, 0, 1);
		copy_value(f.mutation_id, sizeof f.mutation_id, r, 0, 2);
		copy_value(f.client_id, sizeof f.client_id, r, 0, 3);
		copy_value(f.user_id, sizeof f.user_id, r, 0, 4);
		copy_value(f.source_xid, sizeof f.source_xid, r, 0, 5);
	}
	PQclear(r);
	return f;
}

bool is_hex32(const char *s)
{
	if (strlen(s) != 32)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

/* The current transaction's xid as the 32-bit text the decoding output shows. */
void current_xid(char *dst, size_t size)
{
	char *v = pgt_value(db, "SELECT (pg_current_xact_id()::text::bigint % 4294967296)::text", 0,
	                    NULL);
	snprintf(dst, size, "%s", v ? v : "?");
	free(v);
}

/* Consumes everything the test slot holds; returns the number of synchro messages stored
 * in out (in decoding order), or -1 after a failed assertion. Every message must be a
 * transactional one of prefix synchro whose content is a JSON object, except the
 * accepted-epoch messages of migration 5 (prefix synchro-epoch, tested with walsync). */
int drain(message *out, int max)
{
	PGresult *r = pgt_query(
	        db,
	        "SELECT c.xid::text, m->>'table_id', m->>'pk', m->>'version', m->>'state',"
	        "       m->>'mutation_id', m->>'client_id', m->>'user_id', m->>'owner_before',"
	        "       m->>'owner_after', (SELECT count(*) FROM jsonb_object_keys(m)), c.data"
	        "  FROM (SELECT t.n, t.xid, t.data,"
	        "               substring(t.data FROM '^message: transactional: 1 prefix: synchro, "
	        "sz: [0-9]+ content:(.*)$')::jsonb AS m"
	        "          FROM pg_logical_slot_get_changes('" SLOT "', NULL, NULL,"
	        "                 'skip-empty-xacts', '1')"
	        "          WITH ORDINALITY AS t(lsn, xid, data, n)) c"
	        " WHERE c.data LIKE 'message:%'"
	        "   AND c.data NOT LIKE 'message: transactional: 1 prefix: synchro-epoch,%'"
	        " ORDER BY c.n",
	        0, NULL);
	if (r == NULL)
		return -1;
	int n = PQntuples(r);
	if (n > max) {
		CU_FAIL("more logical messages than expected");
		PQclear(r);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (PQgetisnull(r, i, 1)) {
			fprintf(stderr, "unexpected message: %s\n", PQgetvalue(r, i, 11));
			CU_FAIL("a message is not a transactional synchro JSON message");
			PQclear(r);
			return -1;
		}
		message *m = &out[i];
		copy_value(m->xid, sizeof m->xid, r, i, 0);
		copy_value(m->table_id, sizeof m->table_id, r, i, 1);
		copy_value(m->pk, sizeof m->pk, r, i, 2);
		copy_value(m->version, sizeof m->version, r, i, 3);
		copy_value(m->state, sizeof m->state, r, i, 4);
		copy_value(m->mutation_id, sizeof m->mutation_id, r, i, 5);
		copy_value(m->client_id, sizeof m->client_id, r, i, 6);
		copy_value(m->user_id, sizeof m->user_id, r, i, 7);
		copy_value(m->owner_before, sizeof m->owner_before, r, i, 8);
		copy_value(m->owner_after, sizeof m->owner_after, r, i, 9);
		m->nkeys = atoi(PQgetvalue(r, i, 10));
	}
	PQclear(r);
	return n;
}

message msgs[MAX_MESSAGES];

/* Consumes whatever earlier tests left in the slot. */
void discard(void)
{
	PQclear(pgt_query(db,
	                  "SELECT count(*) FROM pg_logical_slot_get_changes('" SLOT "', NULL,"
	                  " NULL)",
	                  0, NULL));
}

void check_message(const message *m, const char *xid, const char *table_id, const char *pk,
                   const char *version, const char *state, const char *mutation_id,
                   const char *client_id, const char *user_id, const char *owner_before,
                   const char *owner_after)
{
	CU_ASSERT_STRING_EQUAL(m->xid, xid);
	CU_ASSERT_STRING_EQUAL(m->table_id, table_id);
	CU_ASSERT_STRING_EQUAL(m->pk, pk);
	CU_ASSERT_STRING_EQUAL(m->version, version);
	CU_ASSERT_STRING_EQUAL(m->state, state);
	CU_ASSERT_STRING_EQUAL(m->mutation_id, mutation_id);
	CU_ASSERT_STRING_EQUAL(m->client_id, client_id);
	CU_ASSERT_STRING_EQUAL(m->user_id, user_id);
	CU_ASSERT_STRING_EQUAL(m->owner_before, owner_before);
	CU_ASSERT_STRING_EQUAL(m->owner_after, owner_after);
	/* table_id pk version state mutation_id client_id user_id owner_before owner_after */
	CU_ASSERT_EQUAL(m->nkeys, 9);
}

/* Migrations: recorded once each, owned by synchro_owner, no PUBLIC execute, nothing
 * deferrable, and a second run of the runner applies nothing. */
static void test_migrations(void)
{
	char expect[4096] = "";
	size_t used = 0;
	for (size_t i = 0; i < sy_sql_migration_count; i++) {
		CU_ASSERT_EQUAL(sy_sql_migrations[i].version, (int)i + 1);
		int w = snprintf(expect + used, sizeof expect - used, "%s%d:%s", i ? "," : "",
		                 sy_sql_migrations[i].version, sy_sql_migrations[i].name);
		CU_ASSERT_FATAL(w > 0 && (size_t)w < sizeof expect - used);
		used += (size_t)w;
	}
	CU_ASSERT(sy_sql_migration_count >= 2);
	char *got = pgt_value(db,
	                      "SELECT string_agg(version || ':' || name, ',' ORDER BY version)"
	                      "  FROM synchro.migrations",
	                      0, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	CU_ASSERT_STRING_EQUAL(got, expect);
	free(got);

	/* Migration 10: batch responses compressed with lz4 when the server has it. */
	char *lz4 = pgt_value(db,
	                      "SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_settings WHERE name ="
	                      " 'default_toast_compression' AND 'lz4' = ANY (enumvals))"
	                      " THEN 'l' ELSE '' END = attcompression::text"
	                      "  FROM pg_attribute WHERE attrelid = 'synchro.batches'::regclass"
	                      "   AND attname = 'response'",
	                      0, NULL);
	CU_ASSERT_STRING_EQUAL(lz4 ? lz4 : "", "t");
	free(lz4);

	CU_ASSERT_EQUAL(pgt_migrate(db, sy_sql_migrations, sy_sql_migration_count), 0);
	CU_ASSERT_EQUAL(pgt_int(db, "SELECT count(*) FROM synchro.migrations", 0, NULL),
	                (long long)sy_sql_migration_count);
	/* Outside the runner a second run of migration 1 stops at the existing schema. */
	pgt_exec(db, "BEGIN");
	pgt_fails(db, sy_sql_migrations[0].sql, "42P06");
	pgt_exec(db, "ROLLBACK");

	CU_ASSERT_EQUAL(pgt_int(db,
	                        "SELECT count(*) FROM pg_roles WHERE rolname IN"
	                        " ('synchro_owner', 'synchro_app', 'synchro_walsync')"
	                        " AND NOT rolcanlogin AND NOT rolsuper",
	                        0, NULL),
	                3);
	CU_ASSERT_EQUAL(pgt_int(db,
	                        "SELECT count(*) FROM pg_namespace WHERE nspname = 'synchro'"
	                        " AND nspowner = 'synchro_owner'::regrole",
	                        0, NULL),
	                1);
	CU_ASSERT_EQUAL(pgt_int(db,
	                        "SELECT count(*) FROM pg_class WHERE relnamespace = "
	                        "'synchro'::regnamespace AND relowner <> 'synchro_owner'::regrole",
	                        0, NULL),
	                0);
	CU_ASSERT_EQUAL(pgt_int(db,
	                        "SELECT count(*) FROM pg_proc WHERE pronamespace = "
	                        "'synchro'::regnamespace AND proowner <> 'synchro_owner'::regrole",
	                        0, NULL),
	                0);
	CU_ASSERT_EQUAL(pgt_int(db,
	                        "SELECT count(*) FROM pg_proc p WHERE pronamespace = "
	                        "'synchro'::regnamespace AND (proacl IS NULL OR EXISTS"
	                        " (SELECT 1 FROM aclexplode(p.proacl) a WHERE a.grantee = 0))",
	                        0, NULL),
	                0);
	/* The push path ends each unit with SET CONSTRAINTS ALL IMMEDIATE: nothing of ours may
	 * be deferred past it. */
	CU_ASSERT_EQUAL(pgt_int(db,
	                        "SELECT (SELECT count(*) FROM pg_constraint WHERE connamespace ="
	                        "        'synchro'::regnamespace AND condeferrable)"
	                        "     + (SELECT count(*) FROM pg_trigger t JOIN pg_class c"
	                        "        ON c.oid = t.tgrelid WHERE c.relnamespace ="
	                        "        'synchro'::regnamespace AND t.tgdeferrable)",
	                        0, NULL),
	                0);
}

/* Everything of schema synchro that a database holds, one line per fact. */
#define CATALOG_SQL                                                                                \
	"SELECT string_agg(x, E'\\n' ORDER BY x) FROM ("                                           \
	" SELECT format('col %s.%s %s %s %s', c.relname, a.attname,"                               \
	"        format_type(a.atttypid, a.atttypmod), a.attnotnull,"                              \
	"        pg_get_expr(d.adbin, d.adrelid))"                                                 \
	"   FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"                             \
	"   LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"               \
	"  WHERE c.relnamespace = 'synchro'::regnamespace AND a.attnum > 0"                        \
	"    AND NOT a.attisdropped"                                                               \
	" UNION ALL SELECT format('rel %s %s %s %s', relname, relkind, relowner::regrole,"         \
	"        relacl) FROM pg_class WHERE relnamespace = 'synchro'::regnamespace"               \
	" UNION ALL SELECT format('con %s %s', conname, pg_get_constraintdef(oid))"                \
	"   FROM pg_constraint WHERE connamespace = 'synchro'::regnamespace"                       \
	" UNION ALL SELECT format('fn %s %s %s %s %s', oid::regprocedure, prosecdef,"              \
	"        proconfig, proacl, md5(prosrc))"                                                  \
	"   FROM pg_proc WHERE pronamespace = 'synchro'::regnamespace"                             \
	" UNION ALL SELECT format('trg %s', pg_get_triggerdef(t.oid)) FROM pg_trigger t"           \
	"   JOIN pg_class c ON c.oid = t.tgrelid"                                                  \
	"  WHERE c.relnamespace = 'synchro'::regnamespace AND NOT t.tgisinternal"                  \
	" UNION ALL SELECT format('mig %s %s', version, name) FROM synchro.migrations"             \
	" UNION ALL SELECT format('nsp %s %s', nspowner::regrole, nspacl) FROM pg_namespace"       \
	"  WHERE nspname = 'synchro'"                                                              \
	" UNION ALL SELECT format('pub %s %s %s', p.pubname, p.puballtables,"                      \
	"        (SELECT count(*) FROM pg_publication_rel r WHERE r.prpubid = p.oid))"             \
	"   FROM pg_publication p) s(x)"

/* sql/install.sql (psql -1 -f) builds exactly what the runner builds, in a second database
 * of the same cluster (so the roles already exist). */
static void test_install_sql(void)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/sql/install.sql", sy_test_src_dir());
	char *sql = sy_test_read_file(path, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sql);
	pgt_exec(db, "DROP DATABASE IF EXISTS synchro_install");
	if (!pgt_exec(db, "CREATE DATABASE synchro_install")) {
		free(sql);
		return;
	}
	PGconn *other = pgt_connect("dbname=synchro_install");
	pgt_exec(other, "SET client_min_messages = warning");
	pgt_exec(other, "BEGIN");
	pgt_exec(other, sql);
	pgt_exec(other, "COMMIT");
	free(sql);
	char *want = pgt_value(db, CATALOG_SQL, 0, NULL);
	char *got = pgt_value(other, CATALOG_SQL, 0, NULL);
	CU_ASSERT_PTR_NOT_NULL(want);
	CU_ASSERT_PTR_NOT_NULL(got);
	if (want && got) {
		CU_ASSERT_STRING_EQUAL(got, want);
		if (strcmp(got, want) != 0)
			fprintf(stderr, "runner:\n%s\ninstall.sql:\n%s\n", want, got);
	}
	free(want);
	free(got);
	PQfinish(other);
	pgt_exec(db, "DROP DATABASE synchro_install");
}

int main(void)
{
	pgt_require_fixture();
	db = pgt_connect(NULL);
	pgt_must(db, "SET client_min_messages = warning");
	if (pgt_migrate(db, sy_sql_migrations, sy_sql_migration_count) !=
	    (int)sy_sql_migration_count) {
		fprintf(stderr, "the migrations did not apply\n");
		return 99;
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/contrib/example/schema.sql", sy_test_src_dir());
	char *schema = sy_test_read_file(path, NULL);
	if (schema == NULL) {
		fprintf(stderr, "cannot read %s\n", path);
		return 99;
	}
	pgt_must(db, schema);
	free(schema);
	pgt_must(db, "SELECT synchro.install_fence_trigger('public.todo', 'todo', 'id', '',"
	             " 'owner');"
	             "SELECT synchro.install_fence_trigger('public.item', 'item', 'id',"
	             " 'deleted_at', '')");
	/* Its own statement: a slot cannot be created in a transaction that wrote. */
	pgt_must(db, "SELECT pg_create_logical_replication_slot('" SLOT "', 'test_decoding')");

	static const CU_TestInfo tests[] = {
	        {"migrations apply once, owned and locked down", test_migrations},
	        {"install.sql builds what the runner builds", test_install_sql},
	        {"every transition mints a version and moves the fence", test_transitions},
	        {"a primary-key update is refused", test_pk_update_refused},
	        {"versions are random", test_versions_random},
	        {"one logical message per transition, committed with it", test_messages},
	        {"pgoutput carries the messages and no rows", test_pgoutput},
	        {"synchro_app and synchro_walsync grants", test_app_role},
	        {"retirement is irreversible and gates ledger deletion", test_retirement},
	        {"ledger rows and manifests are immutable", test_ledger_immutable},
	        {"backfill of rows that predate the trigger", test_backfill},
	        {"fence trigger configuration", test_fence_config},
	        {"contrib/example matches its manifest", test_example},
	        {NULL, NULL},
	};
	sy_test_add_suite("sql", tests);
	int status = sy_test_run();
	pgt_must(db, "SELECT pg_drop_replication_slot('" SLOT "')");
	PQfinish(db);
	return status;
}
