/* SPDX-License-Identifier: BSD-2-Clause */
/* The ledger's guards in the server module (migration 17, src/pg/ledger_guards.c) against a
 * real PostgreSQL: the row rules refuse exactly the rows the 25 CHECK constraints they
 * replace refused (the old expressions evaluated beside the new functions over thousands of
 * edge rows), each refusal names its rule, the accepted-epoch message keeps migration 5's
 * bytes, and no search_path of the caller changes what the triggers read. (Their refusals of
 * retired clients, identity changes and orphan mutation rows are in test_sql.) Also the row
 * rules of the fence table (migration 21): synchro.row_fence_rules beside the two CHECKs it
 * replaced, over every character and length, and its refusals by the old names. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgtest.h"
#include "store/migrations.h"
#include "testutil.h"

#define SLOT   "synchro_guards"
#define CLIENT "c0000000-0000-4000-8000-0000000000a1"
#define HASH64 "repeat('a', 64)"
#define FP32   "decode(repeat('00', 32), 'hex')"

static PGconn *db; /* the fixture's superuser */

/* The CHECK constraints of migrations 1 and 8, as pg_get_constraintdef printed them, over
 * the candidate columns: a row passes when none of them is false. */
static const char old_batch_ok[] =
        "(st <> 'complete' OR (hs IS NOT NULL AND rs IS NOT NULL AND ca IS NOT NULL))"
        " IS NOT FALSE AND (cg > 0) IS NOT FALSE AND (length(fp) = 32) IS NOT FALSE"
        " AND (fa = 'sha256') IS NOT FALSE AND (fd <> '') IS NOT FALSE"
        " AND (fv > 0) IS NOT FALSE AND (hs >= 100 AND hs <= 599) IS NOT FALSE"
        " AND (pv > 0) IS NOT FALSE"
        " AND (octet_length(sh) = 64 AND sh ~ '^[0-9a-f]+$') IS NOT FALSE"
        " AND (sv > 0) IS NOT FALSE AND (st = ANY (ARRAY['claimed', 'complete'])) IS NOT FALSE";

static const char old_mutation_ok[] =
        "(st = 'applied' AND co IS NULL OR st = 'conflict' AND (co = ANY (ARRAY["
        "'version_conflict', 'row_already_exists', 'row_deleted', 'row_not_found']))"
        " OR st = 'rejected_terminal' AND (co = ANY (ARRAY['policy_rejected',"
        " 'validation_failed', 'table_not_synced', 'schema_incompatible',"
        " 'atomic_batch_rejected']))) IS NOT FALSE"
        " AND (octet_length(ah) = 64 AND ah ~ '^[0-9a-f]+$') IS NOT FALSE"
        " AND (av > 0) IS NOT FALSE AND (length(fp) = 32) IS NOT FALSE"
        " AND (fa = 'sha256') IS NOT FALSE AND (fd <> '') IS NOT FALSE"
        " AND (fv > 0) IS NOT FALSE AND (op = ANY (ARRAY['insert', 'update', 'delete']))"
        " IS NOT FALSE AND (ord >= 0) IS NOT FALSE"
        " AND (octet_length(oh) = 64 AND oh ~ '^[0-9a-f]+$') IS NOT FALSE"
        " AND (ov > 0) IS NOT FALSE AND (st = ANY (ARRAY['applied', 'conflict',"
        " 'rejected_terminal'])) IS NOT FALSE"
        " AND (octet_length(sh) = 64 AND sh ~ '^[0-9a-f]+$') IS NOT FALSE"
        " AND (svv > 0) IS NOT FALSE";

/* Edge values of the hash columns: right, short, long, upper case, not hex, 64 octets in 63
 * characters, empty, every hex digit. */
#define HASHES                                                                                  \
	"(repeat('a', 64)), (repeat('a', 63)), (repeat('a', 65)), (repeat('a', 63) || 'A'),"        \
	" (repeat('a', 63) || 'g'), (repeat('a', 62) || 'é'), (''),"                                \
	" ('0123456789abcdef' || repeat('f', 48))"

static long long count_where(const char *sql)
{
	return pgt_int(db, sql, 0, NULL);
}

static void test_batch_rules_equal(void)
{
	pgt_exec(db,
	         "CREATE TEMP TABLE cb AS"
	         " SELECT * FROM (VALUES (3), (0), (NULL)) pv(pv)"
	         " CROSS JOIN (VALUES (1::bigint), (0)) cg(cg)"
	         " CROSS JOIN (VALUES (1::bigint), (-1)) sv(sv)"
	         " CROSS JOIN (VALUES " HASHES ", (NULL)) sh(sh)"
	         " CROSS JOIN (VALUES ('sha256'), ('SHA256'), ('sha2566'), (NULL)) fa(fa)"
	         " CROSS JOIN (VALUES (1), (0)) fv(fv)"
	         " CROSS JOIN (VALUES ('d'), (''), (' ')) fd(fd)"
	         " CROSS JOIN (VALUES (" FP32 "), (decode(repeat('00', 31), 'hex')),"
	         "   (decode(repeat('00', 33), 'hex')), (''::bytea), (NULL)) fp(fp)"
	         " CROSS JOIN (VALUES ('complete'::text, 200, 'x'::bytea, now())) s(st, hs, rs, ca)"
	         " UNION ALL"
	         " SELECT pv, 1, 1, sh, 'sha256', 1, 'd', " FP32 ", st, hs, rs, ca"
	         " FROM (VALUES (3), (-2)) pv(pv)"
	         " CROSS JOIN (VALUES (repeat('b', 64)), ('x')) sh(sh)"
	         " CROSS JOIN (VALUES ('claimed'), ('complete'), ('Complete'), (''), (NULL)) st(st)"
	         " CROSS JOIN (VALUES (NULL::int), (200), (99), (100), (599), (600)) hs(hs)"
	         " CROSS JOIN (VALUES (NULL::bytea), ('x'::bytea)) rs(rs)"
	         " CROSS JOIN (VALUES (NULL::timestamptz), (now())) ca(ca);"
	         "CREATE FUNCTION pg_temp.b_new(pv int, cg bigint, sv bigint, sh text, fa text,"
	         "  fv int, fd text, fp bytea, st text, hs int, rs bytea, ca timestamptz)"
	         " RETURNS boolean LANGUAGE plpgsql AS $f$ BEGIN"
	         "  RETURN synchro.batch_row_rules(pv, cg, sv, sh, fa, fv, fd, fp, st, hs, rs, ca);"
	         " EXCEPTION WHEN check_violation THEN RETURN false; END $f$");
	char sql[4096];
	snprintf(sql, sizeof sql,
	         "SELECT count(*) FROM cb WHERE pg_temp.b_new(pv, cg, sv, sh, fa, fv, fd, fp, st,"
	         " hs, rs, ca) IS DISTINCT FROM (%s)",
	         old_batch_ok);
	CU_ASSERT_EQUAL(count_where(sql), 0);
	/* Both answers occur, often: the comparison can fail. */
	snprintf(sql, sizeof sql, "SELECT count(*) FROM cb WHERE %s", old_batch_ok);
	long long ok = count_where(sql);
	long long all = count_where("SELECT count(*) FROM cb");
	CU_ASSERT(ok > 40);
	CU_ASSERT(all - ok > 1000);
}

static void test_mutation_rules_equal(void)
{
	pgt_exec(db,
	         "CREATE TEMP TABLE cm AS"
	         " SELECT * FROM (VALUES ('sha256'), ('x')) fa(fa)"
	         " CROSS JOIN (VALUES (1), (0)) fv(fv)"
	         " CROSS JOIN (VALUES ('d'), ('')) fd(fd)"
	         " CROSS JOIN (VALUES (" FP32 "), (decode(repeat('00', 31), 'hex'))) fp(fp)"
	         " CROSS JOIN (VALUES (0), (-1)) ord(ord)"
	         " CROSS JOIN (VALUES (NULL::bigint), (1), (0)) av(av)"
	         " CROSS JOIN (VALUES (NULL), (" HASH64 "), (repeat('A', 64))) ah(ah)"
	         " CROSS JOIN (VALUES (NULL::bigint), (0)) svv(svv)"
	         " CROSS JOIN (VALUES (" HASH64 "), (repeat('g', 64))) sh(sh)"
	         " CROSS JOIN (VALUES ('insert'::text, 'applied'::text, NULL::text)) s(op, st, co)"
	         " CROSS JOIN (VALUES (1::bigint), (0)) ov(ov)"
	         " CROSS JOIN (VALUES (" HASH64 "), (repeat('a', 62) || 'é')) oh(oh)"
	         " UNION ALL"
	         " SELECT 'sha256', 1, 'd', " FP32 ", 0, 1, " HASH64 ", 1, " HASH64 ", op, st, co,"
	         "  1, " HASH64 " FROM (VALUES ('insert'), ('update'), ('delete'), ('Insert'), (''),"
	         "  (NULL)) op(op)"
	         " CROSS JOIN (VALUES ('applied'), ('conflict'), ('rejected_terminal'), ('other'),"
	         "  (NULL)) st(st)"
	         " CROSS JOIN (VALUES (NULL), ('version_conflict'), ('row_already_exists'),"
	         "  ('row_deleted'), ('row_not_found'), ('policy_rejected'), ('validation_failed'),"
	         "  ('table_not_synced'), ('schema_incompatible'), ('atomic_batch_rejected'),"
	         "  ('other'), ('')) co(co);"
	         "CREATE FUNCTION pg_temp.m_new(fa text, fv int, fd text, fp bytea, ord int,"
	         "  av bigint, ah text, svv bigint, sh text, op text, st text, co text, ov bigint,"
	         "  oh text) RETURNS boolean LANGUAGE plpgsql AS $f$ BEGIN"
	         "  RETURN synchro.mutation_row_rules(fa, fv, fd, fp, ord, av, ah, svv, sh, op, st,"
	         "   co, ov, oh);"
	         " EXCEPTION WHEN check_violation THEN RETURN false; END $f$");
	char sql[4096];
	snprintf(sql, sizeof sql,
	         "SELECT count(*) FROM cm WHERE pg_temp.m_new(fa, fv, fd, fp, ord, av, ah, svv, sh,"
	         " op, st, co, ov, oh) IS DISTINCT FROM (%s)",
	         old_mutation_ok);
	CU_ASSERT_EQUAL(count_where(sql), 0);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM cm WHERE %s", old_mutation_ok);
	long long ok = count_where(sql);
	long long all = count_where("SELECT count(*) FROM cm");
	CU_ASSERT(ok > 20);
	CU_ASSERT(all - ok > 1000);
}

/* The statement fails with 23514 and its message names the rule. */
static void refused_as(const char *sql, const char *rule)
{
	PGresult *r = PQexec(db, sql);
	const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
	char quoted[128];
	snprintf(quoted, sizeof quoted, "\"%s\"", rule);
	bool ok = state != NULL && strcmp(state, "23514") == 0 && msg != NULL &&
	          strstr(msg, quoted) != NULL;
	if (!ok)
		fprintf(stderr, "%s\n  wanted 23514 naming %s, got %s: %s\n", sql, rule,
		        state ? state : "success", msg ? msg : "");
	CU_ASSERT_TRUE(ok);
	PQclear(r);
}

/* The call of fn with its base arguments, argument k replaced by v (k < 0: none). */
static void call_with(char *out, size_t size, const char *fn, const char *const *base, int n,
                      int k, const char *v)
{
	size_t len = (size_t)snprintf(out, size, "SELECT synchro.%s(", fn);
	for (int i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(out + len, size - len, "%s%s", i ? ", " : "",
		                        i == k ? v : base[i]);
	if (len < size)
		snprintf(out + len, size - len, ")");
}

/* The call answers true. */
static void expect_true(const char *sql)
{
	char *v = pgt_value(db, sql, 0, NULL);
	CU_ASSERT_STRING_EQUAL(v ? v : "<null>", "t");
	free(v);
}

static void test_refusals_named(void)
{
	static const char *const b[] = {"3", "1", "1", HASH64, "'sha256'", "1", "'d'", FP32,
	                                "'complete'", "200", "'x'::bytea", "now()"};
	static const struct {
		int arg;
		const char *value, *rule;
	} bc[] = {
	        {0, "0", "batches_protocol_version_check"},
	        {1, "0", "batches_client_generation_check"},
	        {2, "0", "batches_schema_version_check"},
	        {3, "repeat('A', 64)", "batches_schema_hash_check"},
	        {4, "'md5'", "batches_fp_algorithm_check"},
	        {5, "-1", "batches_fp_version_check"},
	        {6, "''", "batches_fp_domain_check"},
	        {7, "'\\x00'::bytea", "batches_fingerprint_check"},
	        {8, "'done'", "batches_state_check"},
	        {9, "700", "batches_http_status_check"},
	        {10, "NULL", "batch_complete_has_response"},
	};
	static const char *const m[] = {"'sha256'",  "1",          "'d'",  FP32, "0",
	                                "1",         HASH64,       "1",    HASH64, "'insert'",
	                                "'applied'", "NULL::text", "1",    HASH64};
	static const struct {
		int arg;
		const char *value, *rule;
	} mc[] = {
	        {0, "'md5'", "mutations_fp_algorithm_check"},
	        {1, "0", "mutations_fp_version_check"},
	        {2, "''", "mutations_fp_domain_check"},
	        {3, "''::bytea", "mutations_fingerprint_check"},
	        {4, "-1", "mutations_ordinal_check"},
	        {5, "0", "mutations_authored_schema_version_check"},
	        {6, "'x'", "mutations_authored_schema_hash_check"},
	        {7, "0", "mutations_submitted_schema_version_check"},
	        {8, "'x'", "mutations_submitted_schema_hash_check"},
	        {9, "'upsert'", "mutations_operation_check"},
	        {10, "'done'", "mutations_status_check"},
	        {11, "'row_deleted'", "mutation_status_code"},
	        {12, "0", "mutations_outcome_schema_version_check"},
	        {13, "repeat('a', 63)", "mutations_outcome_schema_hash_check"},
	};
	char sql[1024];
	call_with(sql, sizeof sql, "batch_row_rules", b, 12, -1, NULL);
	expect_true(sql);
	for (size_t i = 0; i < sizeof bc / sizeof bc[0]; i++) {
		call_with(sql, sizeof sql, "batch_row_rules", b, 12, bc[i].arg, bc[i].value);
		refused_as(sql, bc[i].rule);
	}
	call_with(sql, sizeof sql, "mutation_row_rules", m, 14, -1, NULL);
	expect_true(sql);
	for (size_t i = 0; i < sizeof mc / sizeof mc[0]; i++) {
		call_with(sql, sizeof sql, "mutation_row_rules", m, 14, mc[i].arg, mc[i].value);
		refused_as(sql, mc[i].rule);
	}
	/* On the table itself, as the owner writes it: one CHECK per ledger table. */
	CU_ASSERT_EQUAL(count_where("SELECT count(*) FROM pg_catalog.pg_constraint"
	                            " WHERE contype = 'c' AND conrelid IN"
	                            " ('synchro.batches'::regclass, 'synchro.mutations'::regclass)"),
	                2);
	refused_as("INSERT INTO synchro.batches (user_id, client_id, batch_id, protocol_version,"
	           " client_generation, schema_version, schema_hash, fp_algorithm, fp_version,"
	           " fp_domain, fingerprint, atomic, state) VALUES ('ann', '" CLIENT "',"
	           " gen_random_uuid(), 3, 1, 1, " HASH64 ", 'sha256', 1, 'd', " FP32 ", false,"
	           " 'complete')",
	           "batch_complete_has_response");
}

/* test_decoding's line for the epoch message, and what migration 5 would have written. */
static void test_epoch_message(void)
{
	pgt_exec(db, "UPDATE synchro.clients SET accepted_write_epoch = accepted_write_epoch + 1"
	             " WHERE client_id = '" CLIENT "'");
	char *got = pgt_value(db,
	                      "SELECT string_agg(data, '|') FROM pg_logical_slot_get_changes('" SLOT
	                      "', NULL, NULL) WHERE data LIKE 'message:%'",
	                      0, NULL);
	char *want = pgt_value(db,
	                       "SELECT 'message: transactional: 1 prefix: synchro-epoch, sz: '"
	                       " || octet_length(j) || ' content:' || j FROM (SELECT"
	                       " json_build_object('client_id', client_id, 'epoch',"
	                       " accepted_write_epoch)::text AS j FROM synchro.clients"
	                       " WHERE client_id = '" CLIENT "') s",
	                       0, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	CU_ASSERT_PTR_NOT_NULL_FATAL(want);
	CU_ASSERT_STRING_EQUAL(got, want);
	free(got);
	free(want);
	/* An update that does not advance the epoch announces nothing. */
	pgt_exec(db, "UPDATE synchro.clients SET last_seen_at = now() WHERE client_id = '" CLIENT
	             "'");
	CU_ASSERT_EQUAL(count_where("SELECT count(*) FROM pg_logical_slot_get_changes('" SLOT
	                            "', NULL, NULL) WHERE data LIKE 'message:%'"),
	                0);
}

/* A caller's search_path with its own = for uuid cannot blind the retirement check, nor the
 * batch check of the mutation ledger. */
static void test_search_path_proof(void)
{
	pgt_exec(db, "CREATE SCHEMA blind;"
	             "CREATE FUNCTION blind.never(uuid, uuid) RETURNS boolean"
	             " LANGUAGE sql IMMUTABLE AS 'SELECT false';"
	             "CREATE OPERATOR blind.= (LEFTARG = uuid, RIGHTARG = uuid,"
	             " FUNCTION = blind.never);"
	             "INSERT INTO synchro.clients (client_id, user_id)"
	             " VALUES ('c0000000-0000-4000-8000-0000000000a2', 'ann');"
	             "INSERT INTO synchro.retirements (client_id, user_id, retirement_id)"
	             " VALUES ('c0000000-0000-4000-8000-0000000000a2', 'ann', gen_random_uuid());"
	             "SET search_path = blind, pg_catalog, public");
	pgt_fails(db,
	          "INSERT INTO synchro.batches (user_id, client_id, batch_id, protocol_version,"
	          " client_generation, schema_version, schema_hash, fp_algorithm, fp_version,"
	          " fp_domain, fingerprint, atomic, state) VALUES ('ann',"
	          " 'c0000000-0000-4000-8000-0000000000a2', gen_random_uuid(), 3, 1, 1, " HASH64 ","
	          " 'sha256', 1, 'd', " FP32 ", false, 'claimed')",
	          "SY004");
	pgt_fails(db,
	          "INSERT INTO synchro.mutations (user_id, client_id, mutation_id, fp_algorithm,"
	          " fp_version, fp_domain, fingerprint, batch_id, ordinal, table_id, pk,"
	          " operation, status, outcome, outcome_schema_version, outcome_schema_hash)"
	          " VALUES ('ann', '" CLIENT "', gen_random_uuid(), 'sha256', 1, 'd', " FP32 ","
	          " gen_random_uuid(), 0, 'item', '1', 'insert', 'applied', '{}', 1, " HASH64 ")",
	          "23503");
	pgt_exec(db, "RESET search_path; DROP SCHEMA blind CASCADE");
}

/* The CHECKs of synchro.row_fences of migrations 1 and 8, as pg_get_constraintdef printed
 * them, over the candidate columns (migration 21 replaced them by synchro.row_fence_rules). */
static const char old_fence_ok[] =
        "(st = ANY (ARRAY['live', 'deleted'])) IS NOT FALSE"
        " AND (octet_length(v) >= 1 AND octet_length(v) <= 128 AND v ~ '^[!-~]+$')"
        " IS NOT FALSE";

static void test_fence_rules_equal(void)
{
	/* Every state candidate beside every version candidate: each character from 1 to 400
	 * alone and between others, every length from 0 to 130, and 128 characters of 129
	 * octets. */
	pgt_exec(db,
	         "CREATE TEMP TABLE cf AS"
	         " SELECT * FROM (VALUES ('live'), ('deleted'), ('Live'), ('live '), ('dead'),"
	         "  (''), (NULL)) st(st)"
	         " CROSS JOIN (SELECT chr(c) FROM generate_series(1, 400) c"
	         "  UNION ALL SELECT 'a' || chr(c) || 'b' FROM generate_series(1, 400) c"
	         "  UNION ALL SELECT repeat('x', n) FROM generate_series(0, 130) n"
	         "  UNION ALL SELECT repeat('~', 127) || 'é' UNION ALL SELECT repeat('!', 127) || 'é'"
	         "  UNION ALL SELECT NULL) v(v);"
	         "CREATE FUNCTION pg_temp.f_new(st text, v text) RETURNS boolean LANGUAGE plpgsql"
	         " AS $f$ BEGIN RETURN synchro.row_fence_rules(st, v);"
	         " EXCEPTION WHEN check_violation THEN RETURN false; END $f$");
	char sql[1024];
	snprintf(sql, sizeof sql,
	         "SELECT count(*) FROM cf WHERE pg_temp.f_new(st, v) IS DISTINCT FROM (%s)",
	         old_fence_ok);
	CU_ASSERT_EQUAL(count_where(sql), 0);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM cf WHERE %s", old_fence_ok);
	long long ok = count_where(sql);
	long long all = count_where("SELECT count(*) FROM cf");
	CU_ASSERT(ok > 500);
	CU_ASSERT(all - ok > 2000);
	/* Of the old CHECKs the table keeps none, and the state rule answers first. */
	CU_ASSERT_EQUAL(count_where("SELECT count(*) FROM pg_catalog.pg_constraint"
	                            " WHERE conrelid = 'synchro.row_fences'::regclass"
	                            " AND contype = 'c' AND conname <> 'row_fences_row_rules'"),
	                0);
	refused_as("SELECT synchro.row_fence_rules('dead', 'a b')", "row_fences_state_check");
}

/* A write of the fence table breaking a rule is refused as the old CHECK refused it. */
static void test_fence_refusals(void)
{
	static const char ins[] = "INSERT INTO synchro.row_fences (table_id, pk, state, version,"
	                          " source_xid) VALUES ('guards', '1', %s, %s, pg_current_xact_id())";
	char sql[512];
	snprintf(sql, sizeof sql, ins, "'gone'", "'v1'");
	refused_as(sql, "row_fences_state_check");
	snprintf(sql, sizeof sql, ins, "'live'", "'v 1'");
	refused_as(sql, "row_fences_version_check");
	snprintf(sql, sizeof sql, ins, "'live'", "repeat('v', 129)");
	refused_as(sql, "row_fences_version_check");
	snprintf(sql, sizeof sql, ins, "'deleted'", "repeat('~', 128)");
	pgt_exec(db, sql);
	pgt_fails(db, "UPDATE synchro.row_fences SET version = '' WHERE table_id = 'guards'", "23514");
	pgt_exec(db, "UPDATE synchro.row_fences SET source_lsn = '0/1' WHERE table_id = 'guards'");
	pgt_exec(db, "DELETE FROM synchro.row_fences WHERE table_id = 'guards'");
}

/* A client's identity never changes, whichever identity column a statement touches; an
 * update of anything else passes. */
static void test_client_identity(void)
{
	pgt_fails(db,
	          "UPDATE synchro.clients SET created_at = created_at - interval '1 s'"
	          " WHERE client_id = '" CLIENT "'",
	          "SY002");
	pgt_fails(db,
	          "UPDATE synchro.clients SET materialized_write_epoch = 0"
	          " WHERE client_id = '" CLIENT "'",
	          "SY002");
	pgt_exec(db, "UPDATE synchro.clients SET user_id = user_id, last_seen_at = now()"
	             " WHERE client_id = '" CLIENT "'");
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
	pgt_must(db, "INSERT INTO synchro.clients (client_id, user_id) VALUES ('" CLIENT "', 'ann')");
	/* Its own statement: a slot cannot be created in a transaction that wrote. */
	pgt_must(db, "SELECT pg_create_logical_replication_slot('" SLOT "', 'test_decoding')");

	static const CU_TestInfo tests[] = {
	        {"batch row rules refuse what the 11 CHECKs refused", test_batch_rules_equal},
	        {"mutation row rules refuse what the 14 CHECKs refused", test_mutation_rules_equal},
	        {"each refusal names its rule", test_refusals_named},
	        {"the accepted-epoch message keeps its bytes", test_epoch_message},
	        {"no search_path of the caller blinds a trigger", test_search_path_proof},
	        {"a client's identity never changes", test_client_identity},
	        {"fence row rules refuse what the 2 CHECKs refused", test_fence_rules_equal},
	        {"a fence row breaking a rule is refused by its name", test_fence_refusals},
	        {NULL, NULL},
	};
	sy_test_add_suite("ledger guards", tests);
	int status = sy_test_run();
	pgt_must(db, "SELECT pg_drop_replication_slot('" SLOT "')");
	PQfinish(db);
	return status;
}
