/* SPDX-License-Identifier: BSD-2-Clause */
/* The database contract (sql/migrations) against a real PostgreSQL: version fences and their
 * logical messages, the least grants of each role, ledger immutability, irreversible retirement. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgtest.h"
#include "store/migrations.h"
#include "testutil.h"

#define SLOT "synchro_t"

#define TODO1  "11111111-1111-4111-8111-111111111111"
#define TODO2  "22222222-2222-4222-8222-222222222222"
#define TODO3  "33333333-3333-4333-8333-333333333333"
#define MUT1   "a0000000-0000-4000-8000-000000000001"
#define MUT2   "a0000000-0000-4000-8000-000000000002"
#define CLI1   "c0000000-0000-4000-8000-000000000001"
#define HASH64 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define FP32   "'\\x" HASH64 "'::bytea"

static PGconn *db; /* the fixture's superuser */

/* One row fence; NULL columns read as "<null>". */
typedef struct {
	bool found;
	char state[16];
	char version[160];
	char mutation_id[40];
	char client_id[40];
	char user_id[64];
	char source_xid[24];
} fence;

static void copy_value(char *dst, size_t size, const PGresult *r, int row, int col)
{
	snprintf(dst, size, "%s", PQgetisnull(r, row, col) ? "<null>" : PQgetvalue(r, row, col));
}

static fence get_fence(const char *table_id, const char *pk)
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

static bool is_hex32(const char *s)
{
	if (strlen(s) != 32)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

/* The current transaction's xid as the 32-bit text the decoding output shows. */
static void current_xid(char *dst, size_t size)
{
	char *v = pgt_value(db, "SELECT (pg_current_xact_id()::text::bigint % 4294967296)::text", 0,
	                    NULL);
	snprintf(dst, size, "%s", v ? v : "?");
	free(v);
}

/* One decoded logical message of prefix synchro. */
typedef struct {
	char xid[24];
	char table_id[32];
	char pk[64];
	char version[160];
	char state[16];
	char mutation_id[40];
	char client_id[40];
	char user_id[64];
	char owner_before[64];
	char owner_after[64];
	int nkeys;
} message;

#define MAX_MESSAGES 64

/* Consumes everything the test slot holds; returns the number of synchro messages stored
 * in out (in decoding order), or -1 after a failed assertion. Every message must be a
 * transactional one of prefix synchro whose content is a JSON object, except the
 * accepted-epoch messages of migration 5 (prefix synchro-epoch, tested with walsync). */
static int drain(message *out, int max)
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

static message msgs[MAX_MESSAGES];

/* Consumes whatever earlier tests left in the slot. */
static void discard(void)
{
	PQclear(pgt_query(db,
	                  "SELECT count(*) FROM pg_logical_slot_get_changes('" SLOT "', NULL,"
	                  " NULL)",
	                  0, NULL));
}

static void check_message(const message *m, const char *xid, const char *table_id, const char *pk,
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

/* Every transition of a row mints a distinct random version and moves its fence; the
 * transaction-local settings name the push mutation and a later direct write clears them. */
static void test_transitions(void)
{
	char xid[24];
	char seen[16][160];
	int nseen = 0;
	fence f;

	pgt_exec(db, "BEGIN");
	pgt_exec(db, "INSERT INTO todo (id, title, owner) VALUES ('" TODO1 "', 'a', 'alice')");
	current_xid(xid, sizeof xid);
	pgt_exec(db, "COMMIT");
	f = get_fence("todo", TODO1);
	CU_ASSERT_TRUE_FATAL(f.found);
	CU_ASSERT_STRING_EQUAL(f.state, "live");
	CU_ASSERT_TRUE(is_hex32(f.version));
	CU_ASSERT_STRING_EQUAL(f.mutation_id, "<null>");
	CU_ASSERT_STRING_EQUAL(f.client_id, "<null>");
	CU_ASSERT_STRING_EQUAL(f.user_id, "<null>");
	CU_ASSERT_STRING_EQUAL(f.source_xid, xid);
	memcpy(seen[nseen++], f.version, sizeof f.version);

	pgt_exec(db, "UPDATE todo SET title = 'b' WHERE id = '" TODO1 "'");
	f = get_fence("todo", TODO1);
	CU_ASSERT_STRING_EQUAL(f.state, "live");
	memcpy(seen[nseen++], f.version, sizeof f.version);

	/* A push write: the settings of its transaction land in the fence. */
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "SELECT set_config('synchro.mutation_id', '" MUT1 "', true),"
	             "       set_config('synchro.client_id', '" CLI1 "', true),"
	             "       set_config('synchro.user_id', 'alice', true)");
	pgt_exec(db, "UPDATE todo SET done = true WHERE id = '" TODO1 "'");
	pgt_exec(db, "COMMIT");
	f = get_fence("todo", TODO1);
	CU_ASSERT_STRING_EQUAL(f.state, "live");
	CU_ASSERT_STRING_EQUAL(f.mutation_id, MUT1);
	CU_ASSERT_STRING_EQUAL(f.client_id, CLI1);
	CU_ASSERT_STRING_EQUAL(f.user_id, "alice");
	memcpy(seen[nseen++], f.version, sizeof f.version);

	/* The next direct write, in another transaction on the same session, records none. */
	pgt_exec(db, "UPDATE todo SET note = 'n' WHERE id = '" TODO1 "'");
	f = get_fence("todo", TODO1);
	CU_ASSERT_STRING_EQUAL(f.mutation_id, "<null>");
	CU_ASSERT_STRING_EQUAL(f.client_id, "<null>");
	CU_ASSERT_STRING_EQUAL(f.user_id, "<null>");
	memcpy(seen[nseen++], f.version, sizeof f.version);

	/* Hard delete: the fence stays, deleted, with a new version. */
	pgt_exec(db, "DELETE FROM todo WHERE id = '" TODO1 "'");
	f = get_fence("todo", TODO1);
	CU_ASSERT_TRUE(f.found);
	CU_ASSERT_STRING_EQUAL(f.state, "deleted");
	memcpy(seen[nseen++], f.version, sizeof f.version);

	/* A push (synchro.no_resurrection on) never revives a deleted identity (SY006), whatever
	 * its mutation settings; a direct write may. */
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "SELECT set_config('synchro.no_resurrection', 'on', true)");
	pgt_fails(db, "INSERT INTO todo (id, title, owner) VALUES ('" TODO1 "', 'r', 'alice')",
	          "SY006");
	pgt_exec(db, "ROLLBACK");
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "SELECT set_config('synchro.mutation_id', '" MUT2 "', true)");
	pgt_exec(db, "SELECT set_config('synchro.no_resurrection', 'on', true)");
	pgt_fails(db, "INSERT INTO todo (id, title, owner) VALUES ('" TODO1 "', 'r', 'alice')",
	          "SY006");
	pgt_exec(db, "ROLLBACK");
	CU_ASSERT_STRING_EQUAL(get_fence("todo", TODO1).version, f.version);
	pgt_exec(db, "INSERT INTO todo (id, title, owner) VALUES ('" TODO1 "', 'r', 'alice')");
	f = get_fence("todo", TODO1);
	CU_ASSERT_STRING_EQUAL(f.state, "live");
	memcpy(seen[nseen++], f.version, sizeof f.version);
	pgt_exec(db, "DELETE FROM todo WHERE id = '" TODO1 "'");
	f = get_fence("todo", TODO1);
	CU_ASSERT_STRING_EQUAL(f.state, "deleted");
	memcpy(seen[nseen++], f.version, sizeof f.version);

	/* Soft delete and a direct undelete on item. */
	pgt_exec(db, "INSERT INTO item (id, label) VALUES (1, 'one')");
	f = get_fence("item", "1");
	CU_ASSERT_STRING_EQUAL(f.state, "live");
	memcpy(seen[nseen++], f.version, sizeof f.version);
	pgt_exec(db, "UPDATE item SET deleted_at = now() WHERE id = 1");
	f = get_fence("item", "1");
	CU_ASSERT_STRING_EQUAL(f.state, "deleted");
	memcpy(seen[nseen++], f.version, sizeof f.version);
	pgt_exec(db, "UPDATE item SET deleted_at = NULL WHERE id = 1");
	f = get_fence("item", "1");
	CU_ASSERT_STRING_EQUAL(f.state, "live");
	memcpy(seen[nseen++], f.version, sizeof f.version);
	/* A no-op update is still a row operation, hence a transition. */
	pgt_exec(db, "UPDATE item SET label = label WHERE id = 1");
	f = get_fence("item", "1");
	CU_ASSERT_STRING_EQUAL(f.state, "live");
	memcpy(seen[nseen++], f.version, sizeof f.version);
	/* Hard delete of a soft-delete table still deletes. */
	pgt_exec(db, "DELETE FROM item WHERE id = 1");
	f = get_fence("item", "1");
	CU_ASSERT_STRING_EQUAL(f.state, "deleted");
	memcpy(seen[nseen++], f.version, sizeof f.version);

	for (int i = 0; i < nseen; i++) {
		CU_ASSERT_TRUE(is_hex32(seen[i]));
		for (int j = 0; j < i; j++)
			CU_ASSERT_STRING_NOT_EQUAL(seen[i], seen[j]);
	}
	/* The fence pk is the text output of the key, equal to the canonical wire value
	 * (lowercase uuid, decimal integer) whatever the literal that wrote it. */
	pgt_exec(db, "INSERT INTO todo (id, title, owner) VALUES"
	             " ('4444AAAA-4444-4444-8444-44444444BBBB', 'u', 'alice')");
	pgt_exec(db, "INSERT INTO item (id) VALUES ('-0042')");
	CU_ASSERT_STRING_EQUAL(get_fence("todo", "4444aaaa-4444-4444-8444-44444444bbbb").state,
	                       "live");
	CU_ASSERT_STRING_EQUAL(get_fence("item", "-42").state, "live");
	CU_ASSERT_EQUAL(pgt_int(db,
	                        "SELECT count(*) FROM synchro.row_fences WHERE (table_id, pk) IN"
	                        " (('todo', '" TODO1 "'), ('item', '1'))",
	                        0, NULL),
	                2);
}

/* A primary-key UPDATE of a synced row is refused (SQLSTATE SY001) and changes nothing. */
static void test_pk_update_refused(void)
{
	pgt_exec(db, "INSERT INTO todo (id, title, owner) VALUES ('" TODO2 "', 't', 'alice')");
	pgt_exec(db, "INSERT INTO item (id) VALUES (2)");
	fence before = get_fence("item", "2");
	pgt_fails(db, "UPDATE todo SET id = '" TODO1 "' WHERE id = '" TODO2 "'", "SY001");
	pgt_fails(db, "UPDATE item SET id = 3 WHERE id = 2", "SY001");
	fence after = get_fence("item", "2");
	CU_ASSERT_STRING_EQUAL(after.version, before.version);
	CU_ASSERT_FALSE(get_fence("item", "3").found);
	CU_ASSERT_EQUAL(pgt_int(db, "SELECT count(*) FROM item WHERE id = 2", 0, NULL), 1);
	CU_ASSERT_EQUAL(pgt_int(db, "SELECT count(*) FROM todo WHERE id = '" TODO2 "'", 0, NULL),
	                1);
	/* The key set to itself is no change. */
	pgt_exec(db, "UPDATE item SET id = 2, qty = 1 WHERE id = 2");
	CU_ASSERT_STRING_NOT_EQUAL(get_fence("item", "2").version, before.version);
}

/* Versions are random: 1000 inserts mint 1000 distinct 32-hex versions that neither follow
 * the insert order nor share prefixes the way time-derived identifiers do. */
static void test_versions_random(void)
{
	pgt_exec(db, "INSERT INTO item (id) SELECT g FROM generate_series(100000, 100999) g");
	PGresult *r = pgt_query(
	        db,
	        "WITH v AS (SELECT pk, version FROM synchro.row_fences WHERE table_id = 'item'"
	        "            AND length(pk) = 6 AND pk BETWEEN '100000' AND '100999'),"
	        "     o AS (SELECT version, lag(version) OVER (ORDER BY pk) AS prev FROM v)"
	        "SELECT (SELECT count(*) FROM v),"
	        "       (SELECT count(DISTINCT version) FROM v),"
	        "       (SELECT count(*) FROM v WHERE version ~ '^[0-9a-f]{32}$'),"
	        "       (SELECT count(DISTINCT left(version, 4)) FROM v),"
	        "       (SELECT count(*) FROM o WHERE version > prev),"
	        "       (SELECT count(*) FROM o WHERE version < prev)",
	        0, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_STRING_EQUAL(PQgetvalue(r, 0, 0), "1000");
	CU_ASSERT_STRING_EQUAL(PQgetvalue(r, 0, 1), "1000");
	CU_ASSERT_STRING_EQUAL(PQgetvalue(r, 0, 2), "1000");
	/* 1000 random 16-bit prefixes: about 993 distinct; fewer than 900 has odds below 1e-30. */
	CU_ASSERT(atoi(PQgetvalue(r, 0, 3)) > 900);
	int up = atoi(PQgetvalue(r, 0, 4)), down = atoi(PQgetvalue(r, 0, 5));
	CU_ASSERT(up > 300 && down > 300);
	PQclear(r);
}

/* One transactional message per row transition, in the transaction that made it, carrying
 * the fence's version; nothing for rolled-back work, savepoints included. */
static void test_messages(void)
{
	char xid[24], v1[160], v2[160], v3[160];
	int n;

	discard();

	/* A push-like transaction: insert, owner change, hard delete of one todo. */
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "SELECT set_config('synchro.mutation_id', '" MUT2 "', true),"
	             "       set_config('synchro.client_id', '" CLI1 "', true),"
	             "       set_config('synchro.user_id', 'alice', true)");
	current_xid(xid, sizeof xid);
	pgt_exec(db, "INSERT INTO todo (id, title, owner) VALUES ('" TODO3 "', 'm', 'alice')");
	snprintf(v1, sizeof v1, "%s", get_fence("todo", TODO3).version);
	pgt_exec(db, "UPDATE todo SET owner = 'bob' WHERE id = '" TODO3 "'");
	snprintf(v2, sizeof v2, "%s", get_fence("todo", TODO3).version);
	pgt_exec(db, "DELETE FROM todo WHERE id = '" TODO3 "'");
	snprintf(v3, sizeof v3, "%s", get_fence("todo", TODO3).version);
	/* Not yet committed: nothing decoded. */
	CU_ASSERT_EQUAL(pgt_int(db,
	                        "SELECT count(*) FROM pg_logical_slot_peek_changes('" SLOT "',"
	                        " NULL, NULL)",
	                        0, NULL),
	                0);
	pgt_exec(db, "COMMIT");
	n = drain(msgs, MAX_MESSAGES);
	CU_ASSERT_EQUAL_FATAL(n, 3);
	check_message(&msgs[0], xid, "todo", TODO3, v1, "live", MUT2, CLI1, "alice", "<null>",
	              "alice");
	check_message(&msgs[1], xid, "todo", TODO3, v2, "live", MUT2, CLI1, "alice", "alice",
	              "bob");
	check_message(&msgs[2], xid, "todo", TODO3, v3, "deleted", MUT2, CLI1, "alice", "bob",
	              "<null>");

	/* Direct writes on item: no owner column, no push identity. */
	pgt_exec(db, "BEGIN");
	current_xid(xid, sizeof xid);
	pgt_exec(db, "INSERT INTO item (id) VALUES (7)");
	snprintf(v1, sizeof v1, "%s", get_fence("item", "7").version);
	pgt_exec(db, "UPDATE item SET deleted_at = now() WHERE id = 7");
	snprintf(v2, sizeof v2, "%s", get_fence("item", "7").version);
	pgt_exec(db, "COMMIT");
	n = drain(msgs, MAX_MESSAGES);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	check_message(&msgs[0], xid, "item", "7", v1, "live", "<null>", "<null>", "<null>",
	              "<null>", "<null>");
	check_message(&msgs[1], xid, "item", "7", v2, "deleted", "<null>", "<null>", "<null>",
	              "<null>", "<null>");

	/* One statement, several rows: one message each. */
	pgt_exec(db, "UPDATE item SET qty = 5 WHERE id IN (2, 7)");
	n = drain(msgs, MAX_MESSAGES);
	CU_ASSERT_EQUAL(n, 2);

	/* Rolled back: neither messages nor fences. */
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "INSERT INTO item (id) VALUES (8)");
	pgt_exec(db, "ROLLBACK");
	CU_ASSERT_EQUAL(drain(msgs, MAX_MESSAGES), 0);
	CU_ASSERT_FALSE(get_fence("item", "8").found);
	/* A failed statement emits nothing either. */
	pgt_fails(db, "UPDATE item SET id = 70 WHERE id = 7", "SY001");
	CU_ASSERT_EQUAL(drain(msgs, MAX_MESSAGES), 0);

	/* A rolled-back savepoint takes its messages along; the rest commits. */
	pgt_exec(db, "BEGIN");
	current_xid(xid, sizeof xid);
	pgt_exec(db, "INSERT INTO item (id) VALUES (9)");
	snprintf(v1, sizeof v1, "%s", get_fence("item", "9").version);
	pgt_exec(db, "SAVEPOINT s");
	pgt_exec(db, "INSERT INTO item (id) VALUES (10)");
	pgt_exec(db, "UPDATE item SET label = 'gone' WHERE id = 9");
	pgt_exec(db, "ROLLBACK TO SAVEPOINT s");
	pgt_exec(db, "INSERT INTO item (id) VALUES (11)");
	snprintf(v2, sizeof v2, "%s", get_fence("item", "11").version);
	pgt_exec(db, "COMMIT");
	n = drain(msgs, MAX_MESSAGES);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	check_message(&msgs[0], xid, "item", "9", v1, "live", "<null>", "<null>", "<null>",
	              "<null>", "<null>");
	check_message(&msgs[1], xid, "item", "11", v2, "live", "<null>", "<null>", "<null>",
	              "<null>", "<null>");
	CU_ASSERT_STRING_EQUAL(get_fence("item", "9").version, v1);
	CU_ASSERT_FALSE(get_fence("item", "10").found);
}

/* walsync's pgoutput stream (publication synchro, messages on) carries the fence messages
 * and no application row image: the publication holds synchro.row_fences alone (migration 15:
 * the fence transitions that vouch for each message). */
static void test_pgoutput(void)
{
	pgt_exec(db, "SELECT pg_create_logical_replication_slot('synchro_p', 'pgoutput')");
	pgt_exec(db, "INSERT INTO item (id, label) VALUES (30, 'p')");
	pgt_exec(db, "UPDATE item SET deleted_at = now() WHERE id = 30");
	char *version = strdup(get_fence("item", "30").version);
	CU_ASSERT_PTR_NOT_NULL_FATAL(version);
	/* Byte1 'M', Int8 flags, Int64 lsn, String prefix, Int32 length, content (protocol 1). */
	PGresult *r = pgt_query(
	        db,
	        "SELECT chr(get_byte(data, 0)), get_byte(data, 1),"
	        "       CASE WHEN get_byte(data, 0) = 77 THEN substring(data FROM 11 FOR 8) END,"
	        "       CASE WHEN get_byte(data, 0) = 77 THEN convert_from("
	        "            substring(data FROM 23), 'UTF8')::jsonb ->> 'version' END,"
	        "       CASE WHEN get_byte(data, 0) = 77 THEN convert_from("
	        "            substring(data FROM 23), 'UTF8')::jsonb ->> 'state' END,"
	        "       position('\\x73796e6368726f00726f775f66656e63657300'::bytea IN data) = 6"
	        "  FROM pg_logical_slot_get_binary_changes('synchro_p', NULL, NULL,"
	        "       'proto_version', '1', 'publication_names', 'synchro', 'messages', 'true')"
	        "  WITH ORDINALITY AS t(lsn, xid, data, n) ORDER BY n",
	        0, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	int messages = 0, rows = 0;
	for (int i = 0; i < PQntuples(r); i++) {
		const char *kind = PQgetvalue(r, i, 0);
		if (strcmp(kind, "M") == 0) {
			messages++;
			CU_ASSERT_STRING_EQUAL(PQgetvalue(r, i, 1), "1"); /* transactional */
			CU_ASSERT_STRING_EQUAL(PQgetvalue(r, i, 2), "\\x73796e6368726f00");
			CU_ASSERT_STRING_EQUAL(PQgetvalue(r, i, 4),
			                       messages == 1 ? "live" : "deleted");
			if (messages == 2)
				CU_ASSERT_STRING_EQUAL(PQgetvalue(r, i, 3), version);
		} else if (strcmp(kind, "R") == 0) {
			/* Every relation streamed is synchro.row_fences. */
			CU_ASSERT_STRING_EQUAL(PQgetvalue(r, i, 5), "t");
		} else if (strcmp(kind, "B") != 0 && strcmp(kind, "C") != 0) {
			rows++;
		}
	}
	CU_ASSERT_EQUAL(messages, 2);
	CU_ASSERT_EQUAL(rows, 2); /* the fence's insert and update */
	PQclear(r);
	free(version);
	pgt_exec(db, "SELECT pg_drop_replication_slot('synchro_p')");
}

static void insert_client(PGconn *c, const char *client_id, const char *user)
{
	const char *p[] = {client_id, user};
	PQclear(pgt_query(c,
	                  "INSERT INTO synchro.clients (client_id, user_id, generation)"
	                  " VALUES ($1, $2, 1)",
	                  2, p));
}

#define BATCH_COLS                                                                                 \
	"(user_id, client_id, batch_id, protocol_version, client_generation, schema_version,"      \
	" schema_hash, fp_algorithm, fp_version, fp_domain, fingerprint, atomic, state,"           \
	" http_status, response, completed_at)"
#define BATCH_VALUES(user, client, batch, state, status, response, completed)                      \
	"('" user "', '" client "', '" batch "', 3, 1, 1, '" HASH64 "', 'sha256', 1,"              \
	" 'synchro:v3:push-batch-fingerprint:v1', " FP32 ", false, '" state "', " status           \
	", " response ", " completed ")"
#define MUTATION_INSERT(user, client, mutation, batch)                                             \
	"INSERT INTO synchro.mutations (user_id, client_id, mutation_id, fp_algorithm,"            \
	" fp_version, fp_domain, fingerprint, batch_id, ordinal, authored_schema_version,"         \
	" authored_schema_hash, submitted_schema_version, submitted_schema_hash, table_id,"        \
	" pk, operation, status, code, outcome, outcome_schema_version, outcome_schema_hash)"      \
	" VALUES ('" user "', '" client "', '" mutation "', 'sha256', 1,"                          \
	" 'synchro:v3:push-mutation-fingerprint:v1', " FP32 ", '" batch "', 0, 1, '" HASH64        \
	"', 1, '" HASH64 "', 'item', '1', 'insert', 'applied', NULL, '{}', 1, '" HASH64 "')"

#define APP_CLIENT "c0000000-0000-4000-8000-0000000000a1"
#define APP_BATCH  "b0000000-0000-4000-8000-0000000000a1"
#define APP_BATCH2 "b0000000-0000-4000-8000-0000000000a2"
#define APP_BATCH3 "b0000000-0000-4000-8000-0000000000a3"
#define APP_MUT    "a0000000-0000-4000-8000-0000000000a1"
#define APP_MUT2   "a0000000-0000-4000-8000-0000000000a2"

/*
 * The responders' role (migration 13): it registers clients and reads, but writes no
 * ledger, no fence and no application table; every push write is synchro_push's, as
 * synchro_owner. The ledger rules hold for the owner too: append-only, a claim
 * completes once.
 */
static void test_app_role(void)
{
	pgt_exec(db, "CREATE ROLE test_app LOGIN IN ROLE synchro_app");
	/* what schema publish grants */
	pgt_exec(db, "GRANT SELECT ON todo, item TO synchro_app");
	pgt_exec(db, "GRANT SELECT, INSERT, UPDATE, DELETE ON todo, item TO synchro_owner");
	PGconn *app = pgt_connect("user=test_app");
	PGconn *own = pgt_connect(NULL);
	pgt_exec(own, "SET ROLE synchro_owner");
	discard();

	insert_client(app, APP_CLIENT, "alice");
	pgt_exec(app, "UPDATE synchro.clients SET generation = 2, last_seen_at = now()"
	              " WHERE client_id = '" APP_CLIENT "'");
	pgt_fails(app,
	          "UPDATE synchro.clients SET accepted_write_epoch = 2"
	          " WHERE client_id = '" APP_CLIENT "'",
	          "42501");
	pgt_exec(own, "UPDATE synchro.clients SET accepted_write_epoch = 2"
	              " WHERE client_id = '" APP_CLIENT "'");
	pgt_fails(app,
	          "UPDATE synchro.clients SET materialized_write_epoch = 2"
	          " WHERE client_id = '" APP_CLIENT "'",
	          "42501");
	pgt_exec(app, "SELECT * FROM synchro.client_progress");
	pgt_fails(app, "INSERT INTO synchro.client_progress VALUES ('" APP_CLIENT "', 2)", "42501");
	pgt_fails(app, "DELETE FROM synchro.clients", "42501");

	/* No ledger write but through synchro_push. */
	pgt_fails(app,
	          "INSERT INTO synchro.batches " BATCH_COLS " VALUES " BATCH_VALUES(
	                  "alice", APP_CLIENT, APP_BATCH, "claimed", "NULL", "NULL", "NULL"),
	          "42501");
	pgt_fails(app, MUTATION_INSERT("alice", APP_CLIENT, APP_MUT, APP_BATCH), "42501");
	pgt_fails(app, "UPDATE synchro.batches SET state = 'complete'", "42501");
	/* Claim, then complete with the canonical response (as the owner). */
	pgt_exec(own, "INSERT INTO synchro.batches " BATCH_COLS " VALUES " BATCH_VALUES(
	                      "alice", APP_CLIENT, APP_BATCH, "claimed", "NULL", "NULL", "NULL"));
	pgt_exec(own, MUTATION_INSERT("alice", APP_CLIENT, APP_MUT, APP_BATCH));
	pgt_exec(own, "UPDATE synchro.batches SET state = 'complete', http_status = 200,"
	              " response = '{\"ok\":1}', completed_at = now()"
	              " WHERE batch_id = '" APP_BATCH "'");
	/* A mutation row names a batch of its own client (migration 11, per statement). */
	pgt_fails(own, MUTATION_INSERT("alice", APP_CLIENT, APP_MUT2, APP_BATCH2), "23503");
	pgt_fails(own, MUTATION_INSERT("bob", APP_CLIENT, APP_MUT2, APP_BATCH), "23503");
	/* Checked for every batch a statement names, not only its first row's (migration 12). */
	pgt_fails(own,
	          MUTATION_INSERT("alice", APP_CLIENT, APP_MUT2,
	                          APP_BATCH) ", ('alice', '" APP_CLIENT "', gen_random_uuid(),"
	                                     " 'sha256', 1,"
	                                     " 'synchro:v3:push-mutation-fingerprint:v1', " FP32
	                                     ", '" APP_BATCH2 "', 1, 1, '" HASH64 "', 1, '" HASH64
	                                     "', 'item', '2', 'insert',"
	                                     " 'applied', NULL, '{}', 1, '" HASH64 "')",
	          "23503");
	/* ... and that batch stays while they do, even for a retired client (rolled back). */
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "INSERT INTO synchro.retirements (client_id, user_id, retirement_id)"
	             " VALUES ('" APP_CLIENT "', 'alice', gen_random_uuid())");
	pgt_fails(db, "DELETE FROM synchro.batches WHERE batch_id = '" APP_BATCH "'", "23503");
	pgt_exec(db, "ROLLBACK");
	/* Complete is final, for any column. */
	pgt_fails(own, "UPDATE synchro.batches SET response = 'x' WHERE batch_id = '" APP_BATCH "'",
	          "SY002");
	pgt_fails(own,
	          "UPDATE synchro.batches SET state = 'claimed', http_status = NULL,"
	          " response = NULL, completed_at = NULL WHERE batch_id = '" APP_BATCH "'",
	          "SY002");
	/* Identity and fingerprint columns are not even granted. */
	pgt_fails(app,
	          "UPDATE synchro.batches SET fingerprint = fingerprint"
	          " WHERE batch_id = '" APP_BATCH "'",
	          "42501");
	/* A complete row without its response cannot exist. */
	pgt_fails(own,
	          "INSERT INTO synchro.batches " BATCH_COLS " VALUES " BATCH_VALUES(
	                  "alice", APP_CLIENT, APP_BATCH2, "complete", "200", "NULL", "now()"),
	          "23514");
	pgt_exec(own, "INSERT INTO synchro.batches " BATCH_COLS " VALUES " BATCH_VALUES(
	                      "alice", APP_CLIENT, APP_BATCH3, "claimed", "NULL", "NULL", "NULL"));
	pgt_fails(own,
	          "UPDATE synchro.batches SET state = 'complete', http_status = 200,"
	          " completed_at = now() WHERE batch_id = '" APP_BATCH3 "'",
	          "23514");
	/* Append-only: no DELETE, TRUNCATE or UPDATE of the mutation ledger. */
	pgt_fails(app, "DELETE FROM synchro.batches", "42501");
	pgt_fails(app, "TRUNCATE synchro.batches", "42501");
	pgt_fails(app, "DELETE FROM synchro.mutations", "42501");
	pgt_fails(app, "TRUNCATE synchro.mutations", "42501");
	pgt_fails(app, "UPDATE synchro.mutations SET code = NULL", "42501");
	pgt_fails(app, "DELETE FROM synchro.retirements", "42501");
	pgt_fails(app, "UPDATE synchro.retirements SET retired_at = now()", "42501");
	/* Fences are the trigger's alone. */
	pgt_fails(app,
	          "INSERT INTO synchro.row_fences (table_id, pk, state, version, source_xid)"
	          " VALUES ('item', '999', 'live', 'v', pg_current_xact_id())",
	          "42501");
	pgt_fails(app, "UPDATE synchro.row_fences SET version = 'v'", "42501");
	pgt_fails(app, "DELETE FROM synchro.row_fences", "42501");
	pgt_fails(app,
	          "INSERT INTO synchro.changelog (commit_lsn, ordinal, table_id, pk, version,"
	          " state) VALUES ('0/1', 0, 'item', '1', 'v', 'live')",
	          "42501");
	pgt_fails(app, "UPDATE synchro.writer_lease SET writer_id = 'x'", "42501");
	pgt_fails(app,
	          "INSERT INTO synchro.schema_versions (version, hash, manifest)"
	          " VALUES (99, '" HASH64 "', '{}')",
	          "42501");
	pgt_fails(app, "CREATE TABLE synchro.mine (x int)", "42501");
	pgt_fails(app, "SELECT synchro.install_fence_trigger('item', 'x', 'id', '', '')", "42501");
	pgt_fails(app, "SELECT synchro.backfill_fences('item', 'x', 'id', '')", "42501");
	/* The compare-and-swap locks fences inside synchro_push now (migration 13). */
	pgt_fails(app, "SELECT * FROM synchro.lock_fence('item', '2')", "42501");
	/* Application tables: read, never written but through synchro_push. */
	pgt_exec(app, "SELECT count(*) FROM item");
	pgt_fails(app, "INSERT INTO item (id, label) VALUES (21, 'app')", "42501");
	pgt_fails(app, "UPDATE item SET qty = 1", "42501");
	pgt_fails(app, "DELETE FROM item", "42501");
	/* The owner's writes to synced tables move fences, naming the push settings. */
	pgt_exec(own, "BEGIN");
	pgt_exec(own, "SELECT set_config('synchro.mutation_id', '" APP_MUT "', true),"
	              "       set_config('synchro.client_id', '" APP_CLIENT "', true),"
	              "       set_config('synchro.user_id', 'alice', true)");
	pgt_exec(own, "INSERT INTO item (id, label) VALUES (20, 'app')");
	pgt_exec(own, "COMMIT");
	fence f = get_fence("item", "20");
	CU_ASSERT_STRING_EQUAL(f.state, "live");
	CU_ASSERT_STRING_EQUAL(f.mutation_id, APP_MUT);
	CU_ASSERT_STRING_EQUAL(f.user_id, "alice");
	CU_ASSERT(drain(msgs, MAX_MESSAGES) == 1);
	PQfinish(own);
	PQfinish(app);

	/* walsync: the changelog and the lease, the materialized epoch, the fence LSN. */
	pgt_exec(db, "CREATE ROLE test_walsync LOGIN REPLICATION IN ROLE synchro_walsync");
	PGconn *ws = pgt_connect("user=test_walsync");
	pgt_exec(ws, "INSERT INTO synchro.changelog (commit_lsn, ordinal, table_id, pk, version,"
	             " state) VALUES ('0/1', 0, 'item', '20', 'v', 'live')");
	pgt_fails(ws, "DELETE FROM synchro.changelog", "42501");
	pgt_fails(ws, "UPDATE synchro.changelog SET version = 'w'", "42501");
	pgt_exec(ws, "INSERT INTO synchro.writer_lease (role, writer_id, writer_epoch,"
	             " fencing_token, lease_until) VALUES ('walsync', 'w1', 1,"
	             " gen_random_uuid(), now() + interval '30 s')");
	pgt_exec(ws, "UPDATE synchro.writer_lease SET heartbeat_at = now()");
	pgt_fails(ws, "DELETE FROM synchro.writer_lease", "42501");
	pgt_fails(ws,
	          "UPDATE synchro.clients SET materialized_write_epoch = 2"
	          " WHERE client_id = '" APP_CLIENT "'",
	          "42501");
	pgt_exec(ws, "INSERT INTO synchro.client_progress VALUES ('" APP_CLIENT "', 2)");
	pgt_exec(ws, "UPDATE synchro.client_progress SET materialized_write_epoch = 3"
	             " WHERE client_id = '" APP_CLIENT "'");
	pgt_fails(ws, "UPDATE synchro.client_progress SET materialized_write_epoch = 2", "SY002");
	pgt_fails(ws, "DELETE FROM synchro.client_progress", "42501");
	pgt_fails(ws, "UPDATE synchro.clients SET generation = 5", "42501");
	pgt_exec(ws, "UPDATE synchro.row_fences SET source_lsn = '0/1'"
	             " WHERE table_id = 'item' AND pk = '20'");
	pgt_fails(ws, "UPDATE synchro.row_fences SET version = 'v'", "42501");
	pgt_fails(ws, "SELECT * FROM synchro.batches", "42501");
	pgt_fails(ws, "SELECT * FROM synchro.mutations", "42501");
	PQfinish(ws);
}

#define RET_CLIENT  "c0000000-0000-4000-8000-0000000000b1"
#define KEEP_CLIENT "c0000000-0000-4000-8000-0000000000b2"
#define RET_BATCH   "b0000000-0000-4000-8000-0000000000b1"
#define RET_BATCH2  "b0000000-0000-4000-8000-0000000000b3"
#define KEEP_BATCH  "b0000000-0000-4000-8000-0000000000b2"
#define RET_MUT     "a0000000-0000-4000-8000-0000000000b1"

/* Retirement is permanent even for the owner; it alone makes ledger rows deletable. */
static void test_retirement(void)
{
	insert_client(db, RET_CLIENT, "carol");
	insert_client(db, KEEP_CLIENT, "carol");
	pgt_exec(db, "INSERT INTO synchro.batches " BATCH_COLS " VALUES " BATCH_VALUES(
	                     "carol", RET_CLIENT, RET_BATCH, "complete", "200", "'r'", "now()"));
	pgt_exec(db, MUTATION_INSERT("carol", RET_CLIENT, RET_MUT, RET_BATCH));
	pgt_exec(db, "INSERT INTO synchro.batches " BATCH_COLS " VALUES " BATCH_VALUES(
	                     "carol", KEEP_CLIENT, KEEP_BATCH, "complete", "200", "'k'", "now()"));

	pgt_exec(db, "SET ROLE synchro_owner");
	/* No marker, no deletion. */
	pgt_fails(db, "DELETE FROM synchro.batches WHERE batch_id = '" KEEP_BATCH "'", "SY005");
	pgt_fails(db, "DELETE FROM synchro.mutations WHERE mutation_id = '" RET_MUT "'", "SY005");
	pgt_fails(db, "TRUNCATE synchro.batches CASCADE", "SY005");

	pgt_exec(db, "INSERT INTO synchro.retirements (client_id, user_id, retirement_id)"
	             " VALUES ('" RET_CLIENT "', 'carol', gen_random_uuid())");
	pgt_fails(db, "UPDATE synchro.retirements SET retired_at = now()", "SY003");
	pgt_fails(db, "DELETE FROM synchro.retirements", "SY003");
	pgt_fails(db, "TRUNCATE synchro.retirements", "SY005");
	/* Never registered again, never reconnected, no new batch. */
	pgt_fails(db,
	          "INSERT INTO synchro.clients (client_id, user_id) VALUES ('" RET_CLIENT "',"
	          " 'carol') ON CONFLICT DO NOTHING",
	          "SY004");
	pgt_fails(db,
	          "UPDATE synchro.clients SET generation = generation + 1"
	          " WHERE client_id = '" RET_CLIENT "'",
	          "SY004");
	pgt_fails(db,
	          "UPDATE synchro.clients SET accepted_write_epoch = accepted_write_epoch + 1"
	          " WHERE client_id = '" RET_CLIENT "'",
	          "SY004");
	pgt_fails(db,
	          "INSERT INTO synchro.batches " BATCH_COLS " VALUES " BATCH_VALUES(
	                  "carol", RET_CLIENT, RET_BATCH2, "claimed", "NULL", "NULL", "NULL"),
	          "SY004");
	/* walsync may still catch up with writes accepted before the retirement. */
	pgt_exec(db, "INSERT INTO synchro.client_progress VALUES ('" RET_CLIENT "', 2)");
	/* Identity never changes; counters never go back. */
	pgt_fails(db,
	          "UPDATE synchro.clients SET user_id = 'dave' WHERE client_id = '" KEEP_CLIENT "'",
	          "SY002");
	pgt_fails(db,
	          "UPDATE synchro.clients SET generation = 0 WHERE client_id = '" KEEP_CLIENT "'",
	          "SY002");
	pgt_exec(db,
	         "UPDATE synchro.clients SET generation = 2 WHERE client_id = '" KEEP_CLIENT "'");
	/* The retired client's ledger may now go (mutations first: they name their batch). */
	CU_ASSERT_EQUAL(
	        pgt_int(db,
	                "WITH d AS (DELETE FROM synchro.mutations WHERE client_id = '" RET_CLIENT
	                "' RETURNING 1) SELECT count(*) FROM d",
	                0, NULL),
	        1);
	CU_ASSERT_EQUAL(
	        pgt_int(db,
	                "WITH d AS (DELETE FROM synchro.batches WHERE client_id = '" RET_CLIENT
	                "' RETURNING 1) SELECT count(*) FROM d",
	                0, NULL),
	        1);
	pgt_fails(db, "DELETE FROM synchro.batches WHERE client_id = '" KEEP_CLIENT "'", "SY005");
	pgt_exec(db, "RESET ROLE");
	CU_ASSERT_EQUAL(
	        pgt_int(db,
	                "SELECT count(*) FROM synchro.retirements WHERE client_id = '" RET_CLIENT
	                "'",
	                0, NULL),
	        1);
}

/* The owner cannot rewrite history either: complete batches, mutations, manifests. */
static void test_ledger_immutable(void)
{
	pgt_exec(db, "SET ROLE synchro_owner");
	pgt_fails(db,
	          "UPDATE synchro.batches SET http_status = 500 WHERE batch_id = '" KEEP_BATCH "'",
	          "SY002");
	pgt_fails(db, "UPDATE synchro.mutations SET code = NULL", "SY002");
	pgt_exec(db, "INSERT INTO synchro.schema_versions (version, hash, manifest)"
	             " VALUES (1, '" HASH64 "', '{\"tables\":[]}')");
	pgt_fails(db, "UPDATE synchro.schema_versions SET manifest = '{}'", "SY002");
	pgt_fails(db, "DELETE FROM synchro.schema_versions", "SY002");
	pgt_fails(db, "TRUNCATE synchro.schema_versions", "SY005");
	pgt_fails(db, "TRUNCATE synchro.row_fences", "SY005");
	pgt_fails(db, "TRUNCATE synchro.mutations", "SY005");
	pgt_fails(db,
	          "INSERT INTO synchro.schema_versions (version, hash, manifest)"
	          " VALUES (2, 'ABC', '{}')",
	          "23514");
	pgt_exec(db, "RESET ROLE");
}

/* Fences for rows that predate the trigger, once each, with one message each. */
static void test_backfill(void)
{
	pgt_exec(db, "CREATE TABLE pre (id text PRIMARY KEY, who text, gone timestamptz)");
	pgt_exec(db, "INSERT INTO pre VALUES ('a', 'alice', NULL), ('b', 'bob', now()),"
	             " ('c', NULL, NULL)");
	discard();
	CU_ASSERT_EQUAL(pgt_int(db,
	                        "SELECT synchro.backfill_fences('pre', 'pre', 'id', 'gone',"
	                        " 'who')",
	                        0, NULL),
	                3);
	CU_ASSERT_STRING_EQUAL(get_fence("pre", "a").state, "live");
	CU_ASSERT_STRING_EQUAL(get_fence("pre", "b").state, "deleted");
	CU_ASSERT_TRUE(is_hex32(get_fence("pre", "c").version));
	int n = drain(msgs, MAX_MESSAGES);
	CU_ASSERT_EQUAL_FATAL(n, 3);
	int owners = 0;
	for (int i = 0; i < n; i++) {
		CU_ASSERT_STRING_EQUAL(msgs[i].table_id, "pre");
		CU_ASSERT_STRING_EQUAL(msgs[i].version, get_fence("pre", msgs[i].pk).version);
		CU_ASSERT_STRING_EQUAL(msgs[i].state, get_fence("pre", msgs[i].pk).state);
		CU_ASSERT_STRING_EQUAL(msgs[i].mutation_id, "<null>");
		CU_ASSERT_STRING_EQUAL(msgs[i].owner_before, "<null>");
		CU_ASSERT_EQUAL(msgs[i].nkeys, 9);
		if (strcmp(msgs[i].pk, "a") == 0 && strcmp(msgs[i].owner_after, "alice") == 0)
			owners++;
	}
	CU_ASSERT_EQUAL(owners, 1);
	/* The contract's four-argument form; nothing left to backfill. */
	CU_ASSERT_EQUAL(
	        pgt_int(db, "SELECT synchro.backfill_fences('pre', 'pre', 'id', 'gone')", 0, NULL),
	        0);
	CU_ASSERT_EQUAL(drain(msgs, MAX_MESSAGES), 0);
	pgt_exec(db, "SELECT synchro.install_fence_trigger('pre', 'pre', 'id', 'gone', 'who')");
	fence before = get_fence("pre", "a");
	pgt_exec(db, "UPDATE pre SET who = 'ann' WHERE id = 'a'");
	CU_ASSERT_STRING_NOT_EQUAL(get_fence("pre", "a").version, before.version);
	n = drain(msgs, MAX_MESSAGES);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_STRING_EQUAL(msgs[0].owner_before, "alice");
	CU_ASSERT_STRING_EQUAL(msgs[0].owner_after, "ann");
}

/* install_fence_trigger refuses configurations whose fences could be wrong, reinstalls in
 * place, and synced tables refuse TRUNCATE (it would skip the fences). */
static void test_fence_config(void)
{
	pgt_exec(db, "CREATE TABLE bad (k integer, n numeric PRIMARY KEY, d date, t text UNIQUE)");
	pgt_fails(db, "SELECT synchro.install_fence_trigger('bad', 'bad', 'k', '', '')", "SY010");
	pgt_fails(db, "SELECT synchro.install_fence_trigger('bad', 'bad', 'n', '', '')", "SY010");
	pgt_fails(db, "SELECT synchro.install_fence_trigger('bad', 'bad', 'nope', '', '')",
	          "SY010");
	/* t is unique but nullable. */
	pgt_fails(db, "SELECT synchro.install_fence_trigger('bad', 'bad', 't', '', '')", "SY010");
	pgt_fails(db, "SELECT synchro.install_fence_trigger('item', 'item', 'id', 'due', '')",
	          "SY010");
	pgt_fails(db, "SELECT synchro.install_fence_trigger('item', 'item', 'id', '', 'nope')",
	          "SY010");
	pgt_fails(db, "SELECT synchro.install_fence_trigger('item', '', 'id', '', '')", "SY010");
	pgt_fails(db,
	          "SELECT synchro.install_fence_trigger('synchro.clients', 'c', 'client_id',"
	          " '', '')",
	          "SY010");
	pgt_exec(db, "SELECT synchro.install_fence_trigger('todo', 'todo', 'id', '', 'owner')");
	CU_ASSERT_EQUAL(pgt_int(db,
	                        "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'todo'::regclass"
	                        " AND NOT tgisinternal",
	                        0, NULL),
	                2);
	pgt_fails(db, "TRUNCATE todo", "SY005");
	pgt_fails(db, "TRUNCATE item", "SY005");
	/* The trigger function refuses to run outside its installed shape. */
	pgt_exec(db, "CREATE TABLE loose (id int PRIMARY KEY)");
	pgt_exec(db, "CREATE TRIGGER f AFTER INSERT ON loose FOR EACH ROW"
	             " EXECUTE FUNCTION synchro.version_fence()");
	pgt_fails(db, "INSERT INTO loose VALUES (1)", "SY010");
}

/* contrib/example: the manifest is the test vectors' copy, byte for byte, and every field
 * maps to a column of its portable type and nullability; no other column exists. */
static void test_example(void)
{
	char path[4096];
	size_t len = 0, vlen = 0;
	snprintf(path, sizeof path, "%s/contrib/example/manifest.json", sy_test_src_dir());
	char *manifest = sy_test_read_file(path, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(manifest);
	snprintf(path, sizeof path, "%s/tests/vectors/manifests/example.json", sy_test_src_dir());
	char *vector = sy_test_read_file(path, &vlen);
	if (vector != NULL) {
		CU_ASSERT_EQUAL(len, vlen);
		CU_ASSERT(len == vlen && memcmp(manifest, vector, len) == 0);
	}
	free(vector);
	const char *p[] = {manifest};
	char *bad = pgt_value(
	        db,
	        "WITH t AS (SELECT jsonb_array_elements($1::jsonb -> 'tables') AS t),"
	        " f AS (SELECT t ->> 'relation' AS rel, f ->> 'column' AS col, f ->> 'type' AS typ,"
	        "              (f ->> 'nullable')::boolean AS nul"
	        "         FROM t, jsonb_array_elements(t -> 'fields') f"
	        "       UNION ALL SELECT t ->> 'relation', t -> 'pk' ->> 'column',"
	        "              t -> 'pk' ->> 'type', false FROM t),"
	        " m(typ, pg) AS (VALUES ('text', 'text'), ('int32', 'integer'),"
	        "   ('int64', 'bigint'), ('float64', 'double precision'), ('numeric', 'numeric'),"
	        "   ('bool', 'boolean'),"
	        "   ('timestamp', 'timestamp with time zone'), ('date', 'date'), ('uuid', 'uuid'),"
	        "   ('bytes', 'bytea'), ('json', 'jsonb')),"
	        " a AS (SELECT c.oid::regclass::text AS rel, a.attname::text AS col,"
	        "              format_type(a.atttypid, NULL) AS pg, a.attnotnull"
	        "         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
	        "        WHERE c.oid IN ('public.todo'::regclass, 'public.item'::regclass)"
	        "          AND a.attnum > 0 AND NOT a.attisdropped)"
	        "SELECT string_agg(coalesce(f.rel, 'public.' || a.rel) || '.' ||"
	        "                  coalesce(f.col, a.col), ', ')"
	        "  FROM f FULL JOIN a ON 'public.' || a.rel = f.rel AND a.col = f.col"
	        "  LEFT JOIN m ON m.typ = f.typ"
	        " WHERE f.col IS NULL OR a.col IS NULL OR m.pg IS DISTINCT FROM a.pg"
	        "    OR a.attnotnull = f.nul",
	        1, p);
	CU_ASSERT_PTR_NULL(bad);
	if (bad != NULL)
		fprintf(stderr, "manifest and schema.sql disagree on: %s\n", bad);
	free(bad);
	free(manifest);
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
